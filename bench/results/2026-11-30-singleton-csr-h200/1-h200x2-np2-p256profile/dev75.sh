#!/bin/bash
# nvidia-h200-x2, carry [".devpack", ".devdata"]: (1) p256 .mtx with clsolve solve on one GPU,
# the parse's own phases (CLSOLVE_MM_PROFILE) and a trace; (2) p200 POSTed to one- and
# two-rank daemons, with and without --parse-while-uploading, two passes in swapped order.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; uname -r) > $R/env.txt
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
for r in 1 2 3 4; do
  s=$(date +%s.%N)
  CLSOLVE_MM_PROFILE=1 /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>$R/p256-prof-$r.txt
  e=$(date +%s.%N)
  python3 - /tmp/r.json $s $e <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); t = j["times"]; wall = float(sys.argv[3]) - float(sys.argv[2])
print("p256 wall %.3f solve %.3f wall-solve %.3f |" % (wall, t["solve_s"], wall - t["solve_s"]),
      " ".join("%s=%.3f" % (k, t[k]) for k in ("startup_s", "parse_s", "setup_s", "partition_s", "init_s", "upload_s", "gather_s", "write_s", "total_s") if k in t))
PY
done > $R/p256-cli.txt 2>&1
CLSOLVE_TRACE=1 /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 > /dev/null 2> $R/p256-trace.txt
rm -f /tmp/p256.mtx
uptime >> $R/env.txt; pack
mpirun -np 2 --bind-to none /tmp/b1/clsolve solve gen:poisson3d:64 --device gpu --maxiter 10 > /dev/null 2>&1
WORK=/tmp/hp BUILD=/tmp/b1 N=200 REPS=5 DEVICE=gpu DAEMONS="plain np2 np2+pre plain+pre" bash bench/host-path.sh > $R/hp-1.log 2>&1
uptime >> $R/env.txt; pack
WORK=/tmp/hp BUILD=/tmp/b1 N=200 REPS=5 DEVICE=gpu DAEMONS="plain+pre np2+pre np2 plain" bash bench/host-path.sh > $R/hp-2.log 2>&1
uptime >> $R/env.txt; pack
