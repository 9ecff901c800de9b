#!/bin/bash
# nvidia-h200: b0 = 5890c34 (the session's start) against b1 = HEAD (bcg: X += P alpha in bcg_dir;
# SELL made on the device): block CG at poisson3d 256 (Jacobi, 1 / 4 / 8 columns; amg 8), 3 rounds
# alternated, with CLSOLVE_BCG_PROFILE; then bench/precond.sh at 256 (jacobi, amg; REPS=5) for both.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; nvidia-smi -L) > $R/env.txt 2>&1
mkdir -p /tmp/old0 && tar -C /tmp/old0 -xzf .devdata/old-5890c34.tgz
( cmake -S /tmp/old0 -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j8 --target clsolve >/tmp/build0.log 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j8 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
wait
[ -x /tmp/b0/clsolve ] || { tail -30 /tmp/build0.log; exit 1; }
uptime >> $R/env.txt
for b in b0 b1; do /tmp/$b/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1; /tmp/$b/clsolve solve gen:poisson3d:16 --device gpu -b gen:random:8 --method bcg --precond amg >/dev/null 2>&1; done
show() { python3 -c "
import json,sys; j=json.load(open('/tmp/r.json')); t=j['times']; cs=j.get('columns') or [j]
print('%-22s rc %d it %s solve %.4f true %.2e' % (sys.argv[1], j['exit_code'], sorted(set(c['iterations'] for c in cs)), t['solve_s'], max(c.get('true_relative_residual',0) for c in cs)))" "$1"; }
one() { # label build args...
  local lab=$1 b=$2; shift 2
  CLSOLVE_BCG_PROFILE=1 /tmp/$b/clsolve solve "$@" --device gpu --tol 1e-8 --json > /tmp/r.json 2> /tmp/r.err || tail -3 /tmp/r.err
  show "$b $lab"; grep "bcg profile" /tmp/r.err | cut -c1-220
}
run_b() {
  one "jacobi 1" $1 gen:poisson3d:256 --precond jacobi -b gen:random:1
  one "jacobi bcg8" $1 gen:poisson3d:256 --precond jacobi -b gen:random:8 --method bcg
  one "jacobi bcg4" $1 gen:poisson3d:256 --precond jacobi -b gen:random:4 --method bcg
  one "amg 1" $1 gen:poisson3d:256 --precond amg -b gen:random:1
  one "amg bcg8" $1 gen:poisson3d:256 --precond amg -b gen:random:8 --method bcg
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then run_b b0; run_b b1; else run_b b1; run_b b0; fi
done > $R/bcg.txt 2>&1
uptime >> $R/env.txt
python3 - $R/bcg.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
v = {}
for l in open(sys.argv[1]):
    m = re.match(r"(b[01]) (.+?)\s+rc (\d+) it \[([0-9, ]+)\] solve ([0-9.]+)", l)
    if m: v.setdefault((m.group(2), m.group(1)), []).append((float(m.group(5)), m.group(4), m.group(3)))
for (lab, b) in sorted(v):
    xs = [x[0] for x in v[(lab, b)]]
    print("%-12s %s solve min %.3f median %.3f it %s rc %s" % (lab, b, min(xs), st.median(xs), v[(lab, b)][0][1], v[(lab, b)][0][2]))
PY
for b in b0 b1; do
  CLSOLVE=/tmp/$b/clsolve SIZES="256" PCS="jacobi amg" REUSE_SIZES= MULTI_PCS= PETSC=0 CUPY=0 REPS=5 bash bench/precond.sh > $R/precond-$b.txt 2>&1
done
uptime >> $R/env.txt
pack
cat $R/summary.txt; for b in b0 b1; do echo "== precond $b"; grep -A6 -i "time to solution\|tts" $R/precond-$b.txt | head -14; done
