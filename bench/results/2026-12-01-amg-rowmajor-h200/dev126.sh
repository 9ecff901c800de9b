#!/bin/bash
# nvidia-h200: the committed code (one V-cycle for both widths): test_amg_dsetup on the GPU and
# poisson3d 256 amg, 8 columns by bcg, once each way.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve test_amg_dsetup > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
(cd /tmp/b1/tests && timeout 120 ./test_amg_dsetup 2>&1 | tail -1) > $R/t.txt
for e in rows columns rows; do CLSOLVE_AMG_BLOCK=$e /tmp/b1/clsolve solve gen:poisson3d:256 --device gpu --precond amg --tol 1e-8 --method bcg -b gen:random:8 --json 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); print('$e solve %.4f it %d true %.3e' % (j['times']['solve_s'], j['iterations'], j['true_relative_residual']))"; done >> $R/t.txt
tar -C $OUT -czf $OUT/r.tgz r
cat $R/t.txt
