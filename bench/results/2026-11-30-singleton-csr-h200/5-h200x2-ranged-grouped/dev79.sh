#!/bin/bash
# nvidia-h200-x2, carry [".devpack", ".devdata"]: the grouped mirror in the ranged read (two ranks)
# against the scatter path (CLSOLVE_CSR_PATH=scatter), same build: (1) mpirun -np 2 clsolve solve
# p200.mtx with the ranged read's trace; (2) p200 POSTed to one- and two-rank daemons.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head; uname -r) > $R/env.txt
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime >> $R/env.txt
mkdir -p /tmp/hp; /tmp/b1/clsolve gen poisson3d 200 -o /tmp/hp/p200.mtx >/dev/null; cat /tmp/hp/p200.mtx > /dev/null
mpirun -np 2 --bind-to none /tmp/b1/clsolve solve gen:poisson3d:64 --device gpu --maxiter 10 > /dev/null 2>&1
for r in 1 2 3 4; do
  for v in grouped scatter; do
    x=(); [ $v = scatter ] && x=(-x CLSOLVE_CSR_PATH=scatter)
    s=$(date +%s.%N)
    mpirun -np 2 --bind-to none -x CLSOLVE_TRACE=1 "${x[@]}" /tmp/b1/clsolve solve /tmp/hp/p200.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
    e=$(date +%s.%N)
    python3 - /tmp/r.json $s $e $v <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); t = j["times"]; wall = float(sys.argv[3]) - float(sys.argv[2])
print("%-8s wall %.3f solve %.3f wall-solve %.3f |" % (sys.argv[4], wall, t["solve_s"], wall - t["solve_s"]),
      " ".join("%s=%.3f" % (k, t[k]) for k in ("startup_s", "parse_s", "setup_s", "gather_s", "total_s") if k in t), "it", j.get("iterations"))
PY
    grep -h "ranged" /tmp/r.err | sed 's/^/    /'
  done
done > $R/np2-cli.txt 2>&1
uptime >> $R/env.txt; pack
for pass in 1 2; do
  for v in grouped scatter; do
    if [ $v = scatter ]; then export CLSOLVE_CSR_PATH=scatter; else unset CLSOLVE_CSR_PATH; fi
    WORK=/tmp/hp BUILD=/tmp/b1 N=200 REPS=5 DEVICE=gpu DAEMONS="plain np2" bash bench/host-path.sh > $R/hp-$pass-$v.log 2>&1
    uptime >> $R/env.txt
  done
  unset CLSOLVE_CSR_PATH
  pack
done
