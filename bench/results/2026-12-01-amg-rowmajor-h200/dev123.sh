#!/bin/bash
# nvidia-h200: amg_apply_block on row-major blocks, the coarse CSR SpMM two columns a work-item
# at every width (b1) against the column-major twin (CLSOLVE_AMG_BLOCK=columns); 2, 4, 8 columns.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git status --short | head) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --method bcg -b gen:random:8 --precond amg >/dev/null 2>&1
one() { # tag k [env]
  tag=$1; k=$2; shift 2
  env "$@" /tmp/b1/clsolve solve gen:poisson3d:256 --device gpu --precond amg --tol 1e-8 ${k:+--method bcg -b gen:random:$k} --json 2>/tmp/r.err > /tmp/r.json
  python3 -c "import json; j=json.load(open('/tmp/r.json')); print('$tag solve %.4f it %d true %.3e' % (j['times']['solve_s'], j['iterations'], j['true_relative_residual']))"
  grep "bcg profile by kernel" /tmp/r.err
}
for r in 1 2 3; do
  for k in 8 4 2; do one rm-k$k $k; one col-k$k $k CLSOLVE_AMG_BLOCK=columns; done
  one one-col ""
done > $R/amg.txt 2>&1
for k in 8 4 2; do one prof-k$k $k CLSOLVE_BCG_PROFILE=1; done >> $R/amg.txt 2>&1
uptime >> $R/env.txt
python3 - $R/amg.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
v = {}
for l in open(sys.argv[1]):
    m = re.match(r"(\S+) solve ([0-9.]+) it (\d+)", l)
    if m and not m.group(1).startswith("prof"): v.setdefault(m.group(1), []).append((float(m.group(2)), int(m.group(3))))
for k in sorted(v):
    s = [a for a, _ in v[k]]
    print("%-8s solve min %.4f median %.4f it %s" % (k, min(s), st.median(s), sorted(set(b for _, b in v[k]))))
PY
tar -C $OUT -czf $OUT/r.tgz r
cat $R/summary.txt; grep "by kernel" $R/amg.txt | tail -3
