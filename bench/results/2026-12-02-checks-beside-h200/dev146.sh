#!/bin/bash
# nvidia-h200: the input checks beside the set-up (solver/dinput_checks.c) against in line
# (CLSOLVE_CHECKS_BESIDE=0), the same binary, alternated over 12 rounds: p256 `clsolve solve`
# (wall - solve, read end -> solve start, from the traces); x compared; then p200 through
# the daemon (host-path.sh, REPS=5) with the checks in line and beside.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head -5) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
one() { # 0|1 tag
  s=$(date +%s.%N)
  CLSOLVE_CHECKS_BESIDE=$1 CLSOLVE_TRACE=1 /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
  e=$(date +%s.%N)
  echo "=== $2" >> $R/err-all.txt; cat /tmp/r.err >> $R/err-all.txt
  python3 - /tmp/r.json $s $e $2 /tmp/r.err <<'PY'
import json, sys, re
j = json.load(open(sys.argv[1])); t = j["times"]; s = float(sys.argv[2]); e = float(sys.argv[3])
tr = {}
for l in open(sys.argv[5]):
    m = re.search(r"\[trace\]\s+([0-9.]+) s \(\+[0-9.]+ s\) (.*)$", l)
    if m: tr.setdefault(m.group(2).strip(), float(m.group(1)))
g = lambda k: tr.get(k, float("nan"))
rd = g("input: matrix read (the checks follow)")
print("%s wall=%.3f solve=%.3f wall_minus_solve=%.3f it=%d read=%.4f read_to_open=%.4f read_to_solve=%.4f upload=%.4f after_solve=%.4f" % (
    sys.argv[4], e - s, t["solve_s"], e - s - t["solve_s"], j["iterations"], rd,
    g("dsolve: devices open") - rd, g("ksp: initial residual") - rd,
    g("dsys_open: matrix up") - g("la_csr_upload: begin"), g("main: command returned") - g("dsolve: solved")))
PY
}
for r in 1 2 3 4 5 6 7 8 9 10 11 12; do
  case $((r % 2)) in 1) o="0 1";; 0) o="1 0";; esac
  for v in $o; do one $v p$v-$r; done
done > $R/runs.txt 2>&1
CLSOLVE_CHECKS_BESIDE=0 /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x0.mtx > $R/o0.txt 2>&1
CLSOLVE_CHECKS_BESIDE=1 /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x1.mtx > $R/o1.txt 2>&1
(cmp /tmp/x0.mtx /tmp/x1.mtx && echo "x: identical bytes") > $R/x.txt 2>&1
python3 - $R/runs.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
v = {}
for l in open(sys.argv[1]):
    tag = l.split()[0].rsplit("-", 1)[0]
    for k, x in re.findall(r"(\w+)=([0-9.]+)", l):
        v.setdefault((tag, k), []).append(float(x))
for (tag, k), x in sorted(v.items(), key=lambda a: (a[0][1], a[0][0])):
    print("%-6s %-18s min %.4f median %.4f (n %d)" % (tag, k, min(x), st.median(x), len(x)))
PY
pack
cat $R/summary.txt $R/x.txt
uptime >> $R/env.txt
for sw in 0 1; do
  CLSOLVE_CHECKS_BESIDE=$sw WORK=/tmp/hp$sw BUILD=/tmp/b1 N=200 REPS=5 DEVICE=gpu DAEMONS=plain timeout 200 bash bench/host-path.sh > $R/host-path-$sw.log 2>&1
  tail -25 $R/host-path-$sw.log | grep -iE "median|POST|cli|daemon" | head -12
done
uptime >> $R/env.txt
pack
