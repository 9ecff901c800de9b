#!/bin/bash
# 2 x H200: gen_rows with huge-page hints. the tree before the huge-page hints of gen_rows (b0)
# against the working tree (b1), alternated: p800 on 2 ranks, p200 .mtx on 2.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$OUT/r; mkdir -p $R
(nproc; uptime) > $R/env.txt
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-A.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j16 --target clsolve >/dev/null 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/dev/null 2>&1
wait
uptime >> $R/env.txt
mpirun -np 2 --bind-to none /tmp/b1/clsolve solve gen:poisson3d:64 --device gpu --maxiter 10 > /dev/null 2>&1
i=0
for b in b1 b0 b1 b0 b1; do
  i=$((i+1))
  ( /usr/bin/time -v timeout 200 mpirun -np 2 --bind-to none -x CLSOLVE_TRACE=1 /tmp/$b/clsolve solve gen:poisson3d:800 \
      --device gpu --precond jacobi --maxiter 100 --json > $R/p800-$i-$b.json ) 2> $R/p800-$i-$b.err
  uptime >> $R/env.txt
done
uptime >> $R/env.txt
tar -C $OUT -czf $OUT/r.tgz r
