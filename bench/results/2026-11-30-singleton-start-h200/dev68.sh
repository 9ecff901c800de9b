#!/bin/bash
# one H200: clsolve solve p256.mtx (no mpirun), d217d27 (b0) against the
# tree (b1: a singleton's MPI topology without I/O devices), alternated, 4 passes
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; nvidia-smi -L; uptime) > $R/env.txt
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-d217d27.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j8 --target clsolve >/dev/null 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j8 --target clsolve >/dev/null 2>&1
wait
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:20 --device gpu > /dev/null 2>&1
uptime >> $R/env.txt
for pass in 1 2 3 4; do
  for b in b0 b1; do
    s=$(date +%s.%N)
    /tmp/$b/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > $R/$b-$pass.json 2>/dev/null
    e=$(date +%s.%N)
    python3 - $R/$b-$pass.json $s $e $b <<'PY' >> $R/p256.txt
import json, sys
t = json.load(open(sys.argv[1]))["times"]; w = float(sys.argv[3]) - float(sys.argv[2])
print("%s wall %.3f wall-solve %.3f startup %.3f parse %.3f setup %.3f (init %.3f upload %.3f) solve %.3f gather %.3f" % (sys.argv[4], w, w - t["solve_s"], t["startup_s"], t["parse_s"], t["setup_s"], t["init_s"], t["upload_s"], t["solve_s"], t["gather_s"]))
PY
  done
done
uptime >> $R/env.txt
tar -C $OUT -czf $OUT/r.tgz r
