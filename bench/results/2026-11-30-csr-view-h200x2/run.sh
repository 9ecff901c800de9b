#!/bin/bash
# 2 x H200: a part's device order read through la_csr_view (no device-order
# copy). 67dacb1 (b0) against the working tree (b1), alternated:
# p800 on 2 ranks (peak RSS, set-up), p200 .mtx on 2 ranks and on 1.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$OUT/r; mkdir -p $R
(nproc; free -g; nvidia-smi -L; uptime) > $R/env.txt
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-67dacb1.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j16 --target clsolve clsolved >/dev/null 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved >/dev/null 2>&1
wait
ls -la /tmp/b0/clsolve /tmp/b1/clsolve >> $R/env.txt
uptime >> $R/env.txt
mpirun -np 2 --bind-to none /tmp/b1/clsolve solve gen:poisson3d:64 --device gpu --maxiter 10 > /dev/null 2>&1
i=0
for b in b0 b1 b0 b1; do
  i=$((i+1))
  ( /usr/bin/time -v timeout 200 mpirun -np 2 --bind-to none -x CLSOLVE_TRACE=1 /tmp/$b/clsolve solve gen:poisson3d:800 \
      --device gpu --precond jacobi --maxiter 100 --json > $R/p800-$i-$b.json ) 2> $R/p800-$i-$b.err
  echo "rc $?" >> $R/p800-$i-$b.err
  uptime >> $R/env.txt
done
/tmp/b1/clsolve gen poisson3d 200 -o /tmp/p200.mtx >/dev/null; cat /tmp/p200.mtx > /dev/null
for np in 2 1; do
  for b in b0 b1 b0 b1 b0 b1; do
    i=$((i+1))
    ( /usr/bin/time -v mpirun -np $np --bind-to none /tmp/$b/clsolve solve /tmp/p200.mtx --device gpu \
        --precond jacobi --tol 1e-8 --json > $R/p200-np$np-$i-$b.json ) 2> $R/p200-np$np-$i-$b.err
  done
done
uptime >> $R/env.txt
tar -C $OUT -czf $OUT/r.tgz r
