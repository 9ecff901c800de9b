#!/bin/bash
# 2 x H200: bc127ce (b0) against the tree (b1: CSR arrays with huge-page
# hints, dpart_rows shared): p800 on 2 ranks traced (device order at
# 2.6e8 rows a rank), p200 np2 CLI traced, p200 to 1- and 2-rank daemons
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$OUT/r; mkdir -p $R
(nproc; free -g; nvidia-smi -L; cat /sys/kernel/mm/transparent_hugepage/enabled; uptime) > $R/env.txt
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-bc127ce.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j16 --target clsolve clsolved >/dev/null 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved >/dev/null 2>&1
wait
ls -la /tmp/b0/clsolve /tmp/b1/clsolve >> $R/env.txt 2>&1
uptime >> $R/env.txt
for b in b1 b0; do
  ( /usr/bin/time -v timeout 200 mpirun -np 2 --bind-to none -x CLSOLVE_TRACE=1 /tmp/$b/clsolve solve gen:poisson3d:800 \
      --device gpu --precond jacobi --maxiter 100 --json > $R/p800-$b.json ) 2> $R/p800-$b.err
  echo "rc $?" >> $R/p800-$b.err
  uptime >> $R/env.txt
done
/tmp/b1/clsolve gen poisson3d 200 -o /tmp/p200.mtx >/dev/null; cat /tmp/p200.mtx > /dev/null
for pass in 1 2; do
  for b in b0 b1; do
    echo "=== $b pass $pass" >> $R/cli-np2.txt
    mpirun -np 2 --bind-to none -x CLSOLVE_TRACE=1 /tmp/$b/clsolve solve /tmp/p200.mtx --device gpu --precond jacobi --tol 1e-8 --json > $R/cli-$b-$pass.json 2> $R/cli-$b-$pass.trace
    grep "ranged read\|device order\|matrix up" $R/cli-$b-$pass.trace >> $R/cli-np2.txt
    python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['times']; print('parse %.3f setup %.3f solve %.3f total %.3f' % (t['parse_s'], t['setup_s'], t['solve_s'], t['total_s']))" $R/cli-$b-$pass.json >> $R/cli-np2.txt
  done
done
uptime >> $R/env.txt
echo "##### new" >> $R/hp.log
WORK=/tmp/hp BUILD=/tmp/b1 N=200 REPS=3 DEVICE=gpu DAEMONS="plain np2" timeout 200 bash bench/host-path.sh >> $R/hp.log 2>&1
uptime >> $R/env.txt
echo "##### bc127ce" >> $R/hp.log
WORK=/tmp/hp0 BUILD=/tmp/b0 N=200 REPS=3 DEVICE=gpu DAEMONS="np2" timeout 150 bash bench/host-path.sh >> $R/hp.log 2>&1
uptime >> $R/env.txt
tar -C $OUT -czf $OUT/r.tgz r
