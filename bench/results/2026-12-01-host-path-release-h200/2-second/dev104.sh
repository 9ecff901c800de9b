#!/bin/bash
# nvidia-h200 (second run: + the SELL fill in order, the check's b = A*1 and D^-1, frees before the join; + the daemon): p256 `clsolve solve` wall - solve, b0 = 33ed356 (the session's start) against
# b1 = the working tree (staging made by the prewarm; devices released beside the host's
# checks; max|a| from the input check; no upload of x0 = 0), alternated, the order swapped
# each round; then -o x.mtx; then the staged upload's fill/wait split by piece size.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head; uname -r) > $R/env.txt 2>&1
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-33ed356.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j8 --target clsolve clsolved >/tmp/build0.log 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j8 --target clsolve clsolved >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
wait
[ -x /tmp/b0/clsolve ] || { tail -30 /tmp/build0.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
/tmp/b0/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
one() { # build tag extra-args...
  b=$1; tag=$2; shift 2
  s=$(date +%s.%N)
  CLSOLVE_TRACE=1 CLSOLVE_MM_PROFILE=1 /tmp/$b/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json "$@" > /tmp/r.json 2>/tmp/r.err
  e=$(date +%s.%N)
  cp /tmp/r.err $R/err-$tag.txt
  python3 - /tmp/r.json $s $e $tag /tmp/r.err <<'PY'
import json, sys, re
j = json.load(open(sys.argv[1])); t = j["times"]; s = float(sys.argv[2]); e = float(sys.argv[3])
wall = e - s
err = open(sys.argv[5]).read()
m = re.search(r"epoch ([0-9.]+)", err)
ep = float(m.group(1)) if m else float("nan")
last = [float(l.split()[1]) for l in err.splitlines() if l.startswith("[trace]") and "s (+" in l]
tl = max(last) if last else float("nan")
print("%s wall %.3f solve %.3f wall-solve %.3f it %d | after-main %.3f |" % (
    sys.argv[4], wall, t["solve_s"], wall - t["solve_s"], j["iterations"], e - ep - tl),
    " ".join("%s=%.3f" % (k, t[k]) for k in ("startup_s", "parse_s", "setup_s", "upload_s", "gather_s", "total_s", "write_s") if k in t))
PY
  grep -h "staged write done" /tmp/r.err | sed 's/^/    /'
}
for r in 1 2 3 4 5 6 7 8; do
  if [ $((r % 2)) = 1 ]; then one b0 b0-$r; one b1 b1-$r; else one b1 b1-$r; one b0 b0-$r; fi
done > $R/p256.txt 2>&1
uptime >> $R/env.txt; pack
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then one b0 o-b0-$r -o /tmp/x.mtx; one b1 o-b1-$r -o /tmp/x.mtx; else one b1 o-b1-$r -o /tmp/x.mtx; one b0 o-b0-$r -o /tmp/x.mtx; fi
done > $R/p256-o.txt 2>&1
uptime >> $R/env.txt; pack
rm -f /tmp/p256.mtx /tmp/x.mtx
for b in b1 b0; do
  WORK=/tmp/hp BUILD=/tmp/$b N=200 REPS=5 DEVICE=gpu DAEMONS=plain bash bench/host-path.sh > $R/hp-$b.log 2>&1
  uptime >> $R/env.txt; pack
done
python3 - $R/p256.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
v = {}
for l in open(sys.argv[1]):
    m = re.match(r"(b[01])-\d+ wall ([0-9.]+) solve ([0-9.]+) wall-solve ([0-9.]+)", l)
    if m: v.setdefault(m.group(1), []).append(float(m.group(4)))
for k in sorted(v): print(k, "wall-solve min %.3f median %.3f n %d" % (min(v[k]), st.median(v[k]), len(v[k])))
PY
uptime >> $R/env.txt; pack
cat $R/summary.txt; grep -h "wall" $R/p256-o.txt | cut -c1-60; for b in b1 b0; do echo == $b; tail -25 $R/hp-$b.log; done
