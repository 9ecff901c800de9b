#!/bin/bash
# nvidia-h200: block CG's kernel variants at poisson3d 256, 8 columns, Jacobi (issue 25):
# the Gram sums a lane a column (CLSOLVE_BCG_GRAM=lanes), the SpMM's gathers four at a time
# (CLSOLVE_BCG_SPMM_UNROLL=1), the vector kernels' groups per CU / group size.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --method bcg -b gen:random:8 >/dev/null 2>&1
one() { # tag [env...]
  tag=$1; shift
  env "$@" CLSOLVE_BCG_PROFILE=1 /tmp/b1/clsolve solve gen:poisson3d:256 --device gpu --precond ${PC:-jacobi} --tol 1e-8 --method bcg -b gen:random:${K:-8} --json > /tmp/r.json 2>/tmp/r.err
  python3 - /tmp/r.json $tag <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); t = j["times"]
print("%s solve %.4f it %d true %.3e" % (sys.argv[2], t["solve_s"], j["iterations"], j["true_relative_residual"]))
PY
  grep -h "bcg profile" /tmp/r.err | sed 's/^/    /'
}
V=("v0" "v1 CLSOLVE_BCG_GRAM=lanes" "v2 CLSOLVE_BCG_SPMM_UNROLL=1" "v3 CLSOLVE_BCG_GROUPS=16" "v4 CLSOLVE_BCG_GROUPS=32" "v5 CLSOLVE_BCG_LS=256" "v6 CLSOLVE_BCG_GROUPS=16 CLSOLVE_BCG_LS=256" "v7 CLSOLVE_BCG_GRAM=lanes CLSOLVE_BCG_SPMM_UNROLL=1 CLSOLVE_BCG_GROUPS=16" "v8 CLSOLVE_BCG_SPMM_CW=4 CLSOLVE_BCG_SPMM_UNROLL=1" "v9 CLSOLVE_BCG_GRAM=lanes CLSOLVE_BCG_GROUPS=32")
{
for r in 1 2; do
  if [ $r = 1 ]; then ord="0 1 2 3 4 5 6 7 8 9"; else ord="9 8 7 6 5 4 3 2 1 0"; fi
  for i in $ord; do one ${V[$i]}; done
  K=1 one one-col
done
PC=amg one amg-v0
PC=amg one amg-v1 CLSOLVE_BCG_GRAM=lanes
} > $R/variants.txt 2>&1
uptime >> $R/env.txt
python3 - $R/variants.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
v = {}; prof = {}
cur = None
for l in open(sys.argv[1]):
    m = re.match(r"(\S+) solve ([0-9.]+) it (\d+)", l)
    if m: cur = m.group(1); v.setdefault(cur, []).append((float(m.group(2)), int(m.group(3)))); continue
    m = re.search(r"bcg profile: (\d+) launches, ([0-9.]+) ms: (.*)", l)
    if m and cur: prof.setdefault(cur, []).append(m.group(2) + " ms: " + m.group(3))
for k in v:
    s = [a for a, _ in v[k]]
    print("%-8s solve min %.4f median %.4f it %s | %s" % (k, min(s), st.median(s), sorted(set(b for _, b in v[k])), " || ".join(prof.get(k, []))))
PY
pack
cat $R/summary.txt
