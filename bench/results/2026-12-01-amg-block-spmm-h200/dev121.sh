#!/bin/bash
# nvidia-h200: test_formats on the GPU (la_spmm against the host for every format), failures shown
source .devpack/setup.sh >/dev/null 2>&1
R=$OUT/r; mkdir -p $R
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target test_formats > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
(cd /tmp/b1/tests && timeout 300 ./test_formats 2>&1 | grep -v "^  ok\|: ok$" | head -60) > $R/test_formats.txt 2>&1
tar -C $OUT -czf $OUT/r.tgz r
cat $R/test_formats.txt | cut -c1-400
