#!/bin/bash
# one H200 (nvidia-h200), carry [".devpack", ".devdata"]: the grouped mirror (no atomics)
# against the scatter path (CLSOLVE_CSR_PATH=scatter), same build, alternated:
# (1) clsolve solve p256.mtx, (2) p200 POSTed to a one-rank daemon, plain and +pre.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head; uname -r) > $R/env.txt
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
for r in 1 2 3 4; do
  for v in scatter grouped notouch; do
    env=(CLSOLVE_MM_PROFILE=1)
    [ $v = scatter ] && env+=(CLSOLVE_CSR_PATH=scatter)
    [ $v = notouch ] && env+=(CLSOLVE_CSR_NOTOUCH=1)
    s=$(date +%s.%N)
    env "${env[@]}" /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
    e=$(date +%s.%N)
    python3 - /tmp/r.json $s $e $v <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); t = j["times"]; wall = float(sys.argv[3]) - float(sys.argv[2])
print("%-8s wall %.3f solve %.3f wall-solve %.3f |" % (sys.argv[4], wall, t["solve_s"], wall - t["solve_s"]),
      " ".join("%s=%.3f" % (k, t[k]) for k in ("startup_s", "parse_s", "setup_s", "gather_s", "total_s") if k in t), "it", j.get("iterations"))
PY
    grep -h "^csr_from_coo" /tmp/r.err | sed 's/^/    /'
  done
done > $R/p256-ab.txt 2>&1
rm -f /tmp/p256.mtx
uptime >> $R/env.txt; pack
for pass in 1 2; do
  for v in grouped scatter; do
    if [ $v = scatter ]; then export CLSOLVE_CSR_PATH=scatter; else unset CLSOLVE_CSR_PATH; fi
    WORK=/tmp/hp BUILD=/tmp/b1 N=200 REPS=5 DEVICE=gpu DAEMONS="plain plain+pre" bash bench/host-path.sh > $R/hp-$pass-$v.log 2>&1
    uptime >> $R/env.txt
  done
  unset CLSOLVE_CSR_PATH
  pack
done
