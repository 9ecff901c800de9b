#!/bin/bash
# nvidia-h200: the grouped mirror's steps on 16 cores (CLSOLVE_MM_PROFILE's split), p256 and p200
source .devpack/setup.sh >/dev/null 2>&1
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline -1) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime >> $R/env.txt
for n in 256 200; do
  /tmp/b1/clsolve gen poisson3d $n -o /tmp/p$n.mtx >/dev/null; cat /tmp/p$n.mtx > /dev/null
  for r in 1 2 3 4; do CLSOLVE_MM_PROFILE=1 /tmp/b1/clsolve check /tmp/p$n.mtx 2>&1 >/dev/null | grep -E "^csr_from|^mm_read" ; done > $R/split-$n.txt
  rm -f /tmp/p$n.mtx
done
uptime >> $R/env.txt
tar -C $OUT -czf $OUT/r.tgz r
cat $R/split-256.txt | cut -c1-330
