#!/bin/bash
# 2 x H200: p800 on 2 ranks, bc127ce (b0) and cf578ce+ (b1: CSR arrays with
# huge-page hints) alternated b0 b1 b0 b1; p200 to 1- and 2-rank daemons
# with the multi-part warm-up, REPS=5
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$OUT/r; mkdir -p $R
(nproc; free -g; nvidia-smi -L; cat /sys/kernel/mm/transparent_hugepage/enabled; uptime) > $R/env.txt
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-bc127ce.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j16 --target clsolve clsolved >/dev/null 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved >/dev/null 2>&1
wait
uptime >> $R/env.txt
# a first small solve starts the devices (the first start costs 2 s)
mpirun -np 2 --bind-to none /tmp/b1/clsolve solve gen:poisson3d:64 --device gpu --maxiter 10 > /dev/null 2>&1
i=0
for b in b0 b1 b0 b1; do
  i=$((i+1))
  ( /usr/bin/time -v timeout 200 mpirun -np 2 --bind-to none -x CLSOLVE_TRACE=1 /tmp/$b/clsolve solve gen:poisson3d:800 \
      --device gpu --precond jacobi --maxiter 100 --json > $R/p800-$i-$b.json ) 2> $R/p800-$i-$b.err
  echo "rc $?" >> $R/p800-$i-$b.err
  uptime >> $R/env.txt
done
WORK=/tmp/hp BUILD=/tmp/b1 N=200 REPS=5 DEVICE=gpu DAEMONS="plain np2" timeout 250 bash bench/host-path.sh >> $R/hp.log 2>&1
uptime >> $R/env.txt
tar -C $OUT -czf $OUT/r.tgz r
