#!/bin/bash
# nvidia-h200: the k-column V-cycle with the SpMMs and the smoother's updates fused (94086f6)
# against the same blocks apart (CLSOLVE_AMG_FUSE=0); unit tests on the GPU; p256 amg 1/2/4/8 columns, jacobi 1/8.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline -1 2>/dev/null; git status --short | head) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve test_amg_dsetup test_formats > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
for t in test_amg_dsetup test_formats; do (cd /tmp/b1/tests && timeout 300 ./$t 2>&1 | tail -3) > $R/$t.txt 2>&1; done
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --method bcg -b gen:random:8 --precond amg >/dev/null 2>&1
one() { # tag k pc [env]
  tag=$1; k=$2; pc=$3; shift 3
  if [ -n "$k" ]; then rhs="--method bcg -b gen:random:$k"; else rhs="-b gen:random:1"; fi
  env "$@" /tmp/b1/clsolve solve gen:poisson3d:256 --device gpu --precond $pc --tol 1e-8 $rhs --json 2>/tmp/r.err > /tmp/r.json
  python3 -c "import json; j=json.load(open('/tmp/r.json')); print('$tag solve %.4f it %d true %.3e tts %.4f' % (j['times']['solve_s'], j['iterations'], j['true_relative_residual'], j['times']['solve_s'] + j['times']['setup_s']))"
  grep "bcg profile" /tmp/r.err
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then A=1; B=0; else A=0; B=1; fi
  for k in 8 4 2; do one amg-f$A-k$k $k amg CLSOLVE_AMG_FUSE=$A; one amg-f$B-k$k $k amg CLSOLVE_AMG_FUSE=$B; done
  one amg-one "" amg
  [ $r -le 2 ] && { one jac-one "" jacobi; one jac-k8 8 jacobi; }
done > $R/amg.txt 2>&1
for f in 1 0; do one prof-f$f-k8 8 amg CLSOLVE_AMG_FUSE=$f CLSOLVE_BCG_PROFILE=1; done >> $R/amg.txt 2>&1
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
cat $R/test_*.txt >> $R/summary.txt
grep "by kernel" $R/amg.txt | tail -2 >> $R/summary.txt
tar -C $OUT -czf $OUT/r.tgz r
cat $R/summary.txt
