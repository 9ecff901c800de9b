#!/bin/bash
# nvidia-h200: p256 `clsolve solve`, b0 = 63f7cb5 (the read on 16 threads) against b1 = the
# read on cpus - 1 threads while the prewarm runs (dinput_read_threads), alternated; x compared.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1) > $R/env.txt 2>&1
mkdir -p /tmp/s0 && tar -C /tmp/s0 -xzf .devdata/old-63f7cb5.tgz
bld() { cmake -S $1 -B $2 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build $2 -j8 --target clsolve > $2.log 2>&1; }
bld /tmp/s0 /tmp/b0 & bld . /tmp/b1; wait
for b in b0 b1; do [ -x /tmp/$b/clsolve ] || { tail -20 /tmp/$b.log; exit 1; }; done
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
for b in b0 b1; do /tmp/$b/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1; done
one() { # threads tag
  s=$(date +%s.%N)
  CLSOLVE_TRACE=1 CLSOLVE_MM_PROFILE=1 /tmp/$1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
  e=$(date +%s.%N)
  echo "=== $2" >> $R/err-all.txt; cat /tmp/r.err >> $R/err-all.txt
  python3 - /tmp/r.json $s $e $2 /tmp/r.err <<'PY'
import json, sys, re
j = json.load(open(sys.argv[1])); t = j["times"]; s = float(sys.argv[2]); e = float(sys.argv[3])
tr = {}; mm = {}
for l in open(sys.argv[5]):
    m = re.search(r"\[trace\]\s+([0-9.]+) s \(\+[0-9.]+ s\) (.*)$", l)
    if m: tr.setdefault(m.group(2).strip(), float(m.group(1)))
    if l.startswith("mm_read_csr"):
        for k in ("count", "parse", "csr"):
            m = re.search(r"\b%s ([0-9.]+) ms" % k, l)
            if m: mm[k] = float(m.group(1)) / 1e3
g = lambda k: tr.get(k, float("nan"))
print("%s wall=%.3f solve=%.3f wall_minus_solve=%.3f it=%d read=%.3f to_solve_start=%.3f count=%.3f text=%.3f csr=%.3f" % (
    sys.argv[4], e - s, t["solve_s"], e - s - t["solve_s"], j["iterations"], g("input: matrix read (the checks follow)") - g("dsolve: start"),
    g("dsolve: solved") - t["solve_s"], mm.get("count", -1), mm.get("parse", -1), mm.get("csr", -1)))
PY
}
for r in 1 2 3 4 5 6 7 8 9 10 11 12; do
  case $((r % 2)) in 1) o="b0 b1";; 0) o="b1 b0";; esac
  for b in $o; do one $b $b-$r; done
done > $R/runs.txt 2>&1
grep -h "^mm_read_csr" $R/err-all.txt | sed 's/,.*threads.*//' | sort | uniq -c > $R/threads.txt; grep -o "[0-9]* threads" $R/err-all.txt | sort | uniq -c >> $R/threads.txt
/tmp/b0/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x0.mtx > $R/o0.txt 2>&1
/tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x1.mtx > $R/o1.txt 2>&1
(cmp /tmp/x0.mtx /tmp/x1.mtx && echo "x: identical bytes") >> $R/threads.txt 2>&1
uptime >> $R/env.txt
python3 - $R/runs.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
v = {}
for l in open(sys.argv[1]):
    tag = l.split()[0].rsplit("-", 1)[0]
    for k, x in re.findall(r"(\w+)=([0-9.]+)", l):
        v.setdefault((tag, k), []).append(float(x))
for (tag, k), x in sorted(v.items(), key=lambda a: (a[0][1], a[0][0])):
    print("%-6s %-18s min %.3f median %.3f (n %d)" % (tag, k, min(x), st.median(x), len(x)))
PY
pack
tail -3 $R/env.txt; cat $R/summary.txt $R/threads.txt
