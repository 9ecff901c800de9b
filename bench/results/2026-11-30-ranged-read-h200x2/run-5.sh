#!/bin/bash
# 2 x H200: clsolve solve p200 under mpirun -np 2, c4f720b (b0) against the
# tree (b1: each rank starts its device during the ranged read), and b1 on
# one rank; alternated, 4 passes; wall from the shell
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$OUT/r; mkdir -p $R
(nproc; nvidia-smi -L; uptime) > $R/env.txt
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-c4f720b.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j16 --target clsolve >/dev/null 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/dev/null 2>&1
wait
/tmp/b1/clsolve gen poisson3d 200 -o /tmp/p200.mtx >/dev/null; cat /tmp/p200.mtx > /dev/null
mpirun -np 2 --bind-to none /tmp/b1/clsolve solve gen:poisson3d:64 --device gpu --maxiter 10 > /dev/null 2>&1
uptime >> $R/env.txt
for pass in 1 2 3 4; do
  for v in b0-np2 b1-np2 b1-np1; do
    b=${v%-*}; np=${v#*-np}
    s=$(date +%s.%N)
    mpirun -np $np --bind-to none /tmp/$b/clsolve solve /tmp/p200.mtx --device gpu --precond jacobi --tol 1e-8 --json > $R/$v-$pass.json 2>/dev/null
    e=$(date +%s.%N)
    python3 - $R/$v-$pass.json $s $e $v <<'PY' >> $R/cli.txt
import json, sys
t = json.load(open(sys.argv[1]))["times"]; w = float(sys.argv[3]) - float(sys.argv[2])
print("%s wall %.3f startup %.3f parse %.3f setup %.3f (init %.3f upload %.3f) solve %.3f gather %.3f total %.3f" % (sys.argv[4], w, t["startup_s"], t["parse_s"], t["setup_s"], t["init_s"], t["upload_s"], t["solve_s"], t["gather_s"], t["total_s"]))
PY
  done
done
uptime >> $R/env.txt
tar -C $OUT -czf $OUT/r.tgz r
