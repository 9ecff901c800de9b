#!/bin/bash
# nvidia-h200: variants of the fused 8-wide V-cycle (measuring switches): CLSOLVE_AMG_CW8=s|c|sc
# (4 columns a work-item for SELL / CSR), CLSOLVE_AMG_LW8=1|2 (sub-lanes for rows of 24-47 entries)
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git status --short | head) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --method bcg -b gen:random:8 --precond amg >/dev/null 2>&1
one() { # tag k [env]
  tag=$1; k=$2; shift 2
  if [ -n "$k" ]; then rhs="--method bcg -b gen:random:$k"; else rhs="-b gen:random:1"; fi
  env "$@" /tmp/b1/clsolve solve gen:poisson3d:256 --device gpu --precond amg --tol 1e-8 $rhs --json 2>/tmp/r.err > /tmp/r.json
  python3 -c "import json; j=json.load(open('/tmp/r.json')); print('$tag solve %.4f it %d true %.3e tts %.4f' % (j['times']['solve_s'], j['iterations'], j['true_relative_residual'], j['times']['solve_s'] + j['times']['setup_s']))"
  grep "bcg profile" /tmp/r.err
}
for r in 1 2 3; do
  one base 8; one cw-s 8 CLSOLVE_AMG_CW8=s; one cw-c 8 CLSOLVE_AMG_CW8=c; one cw-sc 8 CLSOLVE_AMG_CW8=sc
  one lw1 8 CLSOLVE_AMG_LW8=1; one lw2 8 CLSOLVE_AMG_LW8=2; one one ""
done > $R/amg.txt 2>&1
for v in base "cw-sc CLSOLVE_AMG_CW8=sc" "lw1 CLSOLVE_AMG_LW8=1"; do set -- $v; t=$1; shift; one prof-$t 8 "$@" CLSOLVE_BCG_PROFILE=1; done >> $R/amg.txt 2>&1
uptime >> $R/env.txt
python3 - $R/amg.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
v = {}
for l in open(sys.argv[1]):
    m = re.match(r"(\S+) solve ([0-9.]+) it (\d+) true (\S+)", l)
    if m and not m.group(1).startswith("prof"): v.setdefault(m.group(1), []).append((float(m.group(2)), int(m.group(3)), m.group(4)))
for k in sorted(v):
    s = [a for a, _, _ in v[k]]
    print("%-12s solve min %.4f median %.4f it %s true %s" % (k, min(s), st.median(s), sorted(set(b for _, b, _ in v[k])), sorted(set(c for _, _, c in v[k]))))
PY
grep -A2 "^prof" $R/amg.txt >> $R/summary.txt
tar -C $OUT -czf $OUT/r.tgz r
cat $R/summary.txt
