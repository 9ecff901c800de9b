#!/bin/bash
# nvidia-h200: the parse of p256 (16.7 M rows: 8-digit indices) with the SWAR index path
# for 8..15 digits (bi) and also the values' integer fast path (b1), against b0 = 2c91351;
# then p256 `clsolve solve` wall - solve, b0 against b1, rotated; x of both compared.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt 2>&1
mkdir -p /tmp/s0 /tmp/si && tar -C /tmp/s0 -xzf .devdata/old-2c91351.tgz && tar -C /tmp/si -xzf .devdata/bi.tgz
bld() { cmake -S $1 -B $2 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build $2 -j6 --target clsolve > $2.log 2>&1; }
bld /tmp/s0 /tmp/b0 & bld /tmp/si /tmp/bi & bld . /tmp/b1; wait
for b in b0 bi b1; do [ -x /tmp/$b/clsolve ] || { tail -20 /tmp/$b.log; exit 1; }; done
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
for b in b0 b1; do /tmp/$b/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1; done
chk() { # build
  CLSOLVE_MM_PROFILE=1 /tmp/$1/clsolve check /tmp/p256.mtx 2>&1 >/dev/null | grep "^mm_read_csr" | sed "s/^/$1 /" | cut -c1-260
}
for r in 1 2 3 4 5 6 7; do
  case $((r % 3)) in 1) o="b0 bi b1";; 2) o="bi b1 b0";; 0) o="b1 b0 bi";; esac
  for b in $o; do chk $b; done
done > $R/parse.txt 2>&1
uptime >> $R/env.txt
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
  grep -h "^mm_read_csr" /tmp/r.err | sed 's/^/    /' | cut -c1-220
}
for r in 1 2 3 4 5 6 7 8; do
  if [ $((r % 2)) = 1 ]; then one b0 b0-$r; one b1 b1-$r; else one b1 b1-$r; one b0 b0-$r; fi
done > $R/p256.txt 2>&1
uptime >> $R/env.txt
/tmp/b0/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x0.mtx > $R/o0.txt 2>&1
/tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x1.mtx > $R/o1.txt 2>&1
python3 - $R/parse.txt $R/p256.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
p = {}
for l in open(sys.argv[1]):
    m = re.match(r"(b\w+) mm_read_csr.*?count ([0-9.]+) ms.*?parse ([0-9.]+) ms.*?all ([0-9.]+) ms", l)
    if m: p.setdefault(m.group(1), []).append((float(m.group(3)), float(m.group(4))))
for k in sorted(p):
    a = [x for x, _ in p[k]]; b = [y for _, y in p[k]]
    print("%s parse ms min %.1f median %.1f | read all min %.1f median %.1f (n %d)" % (k, min(a), st.median(a), min(b), st.median(b), len(a)))
v = {}; pr = {}
for l in open(sys.argv[2]):
    m = re.match(r"(b\w+)-\d+ wall ([0-9.]+) solve ([0-9.]+) wall-solve ([0-9.]+)", l)
    if m: cur = m.group(1); v.setdefault(cur, []).append(float(m.group(4))); continue
    m = re.search(r"mm_read_csr.*?parse ([0-9.]+) ms.*?all ([0-9.]+) ms", l)
    if m: pr.setdefault(cur, []).append(float(m.group(1)))
for k in sorted(v):
    print("%s p256 wall-solve min %.3f median %.3f (n %d); parse in the solve min %.1f median %.1f" % (k, min(v[k]), st.median(v[k]), len(v[k]), min(pr[k]), st.median(pr[k])))
PY
(cmp /tmp/x0.mtx /tmp/x1.mtx && echo "x: identical bytes") >> $R/summary.txt 2>&1
pack
cat $R/summary.txt
