#!/bin/bash
# nvidia-h200: the fused V-cycle's ends (ba958f7: pack makes d, the last step writes z's columns)
# against b0 = 751ca48 (fused V-cycle, pack and unpack passes), alternated; unit test; bench/precond.sh multi.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git status --short | head) > $R/env.txt 2>&1
mkdir -p /tmp/s0 && tar -xf .devdata/b0.tar -C /tmp/s0
cmake -S /tmp/s0 -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j16 --target clsolve > /tmp/b0.log 2>&1 || { tail -20 /tmp/b0.log; exit 1; }
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve test_amg_dsetup > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
(cd /tmp/b1/tests && timeout 300 ./test_amg_dsetup 2>&1 | tail -3) > $R/test_amg_dsetup.txt 2>&1
for b in b0 b1; do /tmp/$b/clsolve solve gen:poisson3d:16 --device gpu --method bcg -b gen:random:8 --precond amg >/dev/null 2>&1; done
one() { # tag build k [env]
  tag=$1; b=$2; k=$3; shift 3
  if [ -n "$k" ]; then rhs="--method bcg -b gen:random:$k"; else rhs="-b gen:random:1"; fi
  env "$@" /tmp/$b/clsolve solve gen:poisson3d:256 --device gpu --precond amg --tol 1e-8 $rhs --json 2>/tmp/r.err > /tmp/r.json
  python3 -c "import json; j=json.load(open('/tmp/r.json')); print('$tag solve %.4f it %d true %.3e tts %.4f' % (j['times']['solve_s'], j['iterations'], j['true_relative_residual'], j['times']['solve_s'] + j['times']['setup_s']))"
  grep "bcg profile" /tmp/r.err
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then o="b1 b0"; else o="b0 b1"; fi
  for k in 8 4 2; do for b in $o; do one $b-k$k $b $k; done; done
  for b in $o; do one $b-one $b ""; done
done > $R/amg.txt 2>&1
one prof-b1-k8 b1 8 CLSOLVE_BCG_PROFILE=1 >> $R/amg.txt 2>&1
CLSOLVE=/tmp/b1/clsolve SIZES= PCS="amg" REUSE_SIZES= MULTI_PCS="amg" MULTI_METHODS=bcg REPS=5 PETSC=0 CUPY=0 OUT=$R/precond bash bench/precond.sh > $R/precond.txt 2>&1
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
grep -A2 "^prof" $R/amg.txt | grep -v "bcg profile:" >> $R/summary.txt
tail -12 $R/precond.txt >> $R/summary.txt
rm -rf $R/precond/*.err
tar -C $OUT -czf $OUT/r.tgz r
cat $R/summary.txt
