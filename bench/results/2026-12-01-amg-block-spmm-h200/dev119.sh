#!/bin/bash
# nvidia-h200: where block CG's iteration goes with amg (the k-column V-cycle), by kernel
# (CLSOLVE_BCG_PROFILE=1 with the capture's names), poisson3d 256, 8 columns; and Jacobi's.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git status --short | head) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --method bcg -b gen:random:8 --precond amg >/dev/null 2>&1
for pc in amg jacobi; do for k in 8 4; do for r in 1 2; do
  echo "=== $pc k=$k run $r"
  CLSOLVE_BCG_PROFILE=1 /tmp/b1/clsolve solve gen:poisson3d:256 --device gpu --precond $pc --tol 1e-8 --method bcg -b gen:random:$k --json 2>/tmp/r.err > /tmp/r.json
  python3 -c "import json; j=json.load(open('/tmp/r.json')); print('solve %.4f it %d' % (j['times']['solve_s'], j['iterations']))"
  grep "bcg profile by kernel" /tmp/r.err
done; done; done > $R/prof.txt 2>&1
for r in 1 2; do echo "=== amg one column"; /tmp/b1/clsolve solve gen:poisson3d:256 --device gpu --precond amg --tol 1e-8 -b gen:random:1 --profile 2>&1 | tail -40; done > $R/one.txt 2>&1
uptime >> $R/env.txt
pack
cat $R/prof.txt; tail -45 $R/one.txt
