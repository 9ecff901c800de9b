#!/bin/bash
# nvidia-h200: b0 = 5890c34 (the session's start) against b1 = HEAD (SELL made on the device
# from CSR; the assembly's sort skipped for rows in order): p256 `clsolve solve` wall - solve,
# 10 rounds alternating the order; then bench/host-path.sh (p200, CLI and the plain daemon,
# REPS=3) for each build.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt 2>&1
mkdir -p /tmp/old0 && tar -C /tmp/old0 -xzf .devdata/old-5890c34.tgz
( cmake -S /tmp/old0 -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j8 --target clsolve clsolved >/tmp/build0.log 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j8 --target clsolve clsolved >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
wait
[ -x /tmp/b0/clsolved ] || { tail -30 /tmp/build0.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
for b in b0 b1; do /tmp/$b/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1; done
one() { # build tag
  b=$1; tag=$2
  s=$(date +%s.%N)
  CLSOLVE_TRACE=1 CLSOLVE_MM_PROFILE=1 /tmp/$b/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
  e=$(date +%s.%N)
  cp /tmp/r.err $R/err-$tag.txt
  python3 - /tmp/r.json $s $e $tag <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); t = j["times"]; s = float(sys.argv[2]); e = float(sys.argv[3])
print("%s wall %.3f solve %.3f wall-solve %.3f it %d true %.3e |" % (sys.argv[4], e - s, t["solve_s"], e - s - t["solve_s"], j["iterations"], j["true_relative_residual"]),
    " ".join("%s=%.3f" % (k, t[k]) for k in ("startup_s", "parse_s", "setup_s", "gather_s", "total_s") if k in t))
PY
  grep -h "staged write done\|SELL made on\|SELL planned\|matrix up" /tmp/r.err | sed 's/^/    /' | cut -c1-200
}
for r in 1 2 3 4 5 6 7 8 9 10; do
  if [ $((r % 2)) = 1 ]; then one b0 b0-$r; one b1 b1-$r; else one b1 b1-$r; one b0 b0-$r; fi
done > $R/p256.txt 2>&1
uptime >> $R/env.txt
python3 - $R/p256.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
v = {}; su = {}
for l in open(sys.argv[1]):
    m = re.match(r"(b0|b1)-\d+ wall ([0-9.]+) solve ([0-9.]+) wall-solve ([0-9.]+).*setup_s=([0-9.]+)", l)
    if m: v.setdefault(m.group(1), []).append(float(m.group(4))); su.setdefault(m.group(1), []).append(float(m.group(5)))
for k in sorted(v): print(k, "p256 wall-solve min %.3f median %.3f n %d; setup_s min %.3f median %.3f" % (min(v[k]), st.median(v[k]), len(v[k]), min(su[k]), st.median(su[k])))
PY
rm -f /tmp/p256.mtx
for b in b0 b1; do
  BUILD=/tmp/$b N=200 REPS=3 DEVICE=gpu DAEMONS=plain PORT=$((18700 + ${b#b} * 10)) bash bench/host-path.sh > $R/hp-$b.log 2>&1
  echo "== $b" >> $R/summary.txt; grep -A8 "^--- summary" $R/hp-$b.log >> $R/summary.txt
done
uptime >> $R/env.txt
pack
cat $R/summary.txt
