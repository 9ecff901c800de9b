#!/bin/bash
# nvidia-h200: the floor of a process that used the GPU (bench/ocl_floor.c: driver start,
# 2.3 GB of buffers written, released, the context released, the exit) beside
# `clsolve solve p256.mtx` at HEAD (wall - solve, the trace after the solve), alternated.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head; uname -r; nvidia-smi --query-gpu=name,driver_version --format=csv) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
gcc -O2 -std=gnu17 bench/ocl_floor.c -o /tmp/ocl_floor -lOpenCL > $R/floor-build.txt 2>&1 || { cat $R/floor-build.txt; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1; /tmp/ocl_floor 64 > /dev/null
floor() { # MB tag
  s=$(date +%s.%N); /tmp/ocl_floor $1 > /tmp/f.txt 2>&1; e=$(date +%s.%N)
  python3 - /tmp/f.txt $s $e $2 <<'PY'
import sys, re
d = {}
for l in open(sys.argv[1]):
    m = re.match(r"(\w[\w ]*?) ([0-9.]+)", l)
    if m: d[m.group(1)] = float(m.group(2))
s, e = float(sys.argv[2]), float(sys.argv[3])
print("%s wall=%.3f exec_to_main=%.3f start=%.3f write=%.3f buffers_release=%.3f context_release=%.3f exit=%.3f" % (sys.argv[4], e - s,
      d["main"] - s, d["started"] - d["main"], d["written"] - d["started"], d["buffers released"] - d["read"], d["released"] - d["buffers released"], e - d["released"]))
PY
}
one() { # tag
  s=$(date +%s.%N)
  CLSOLVE_TRACE=1 /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
  e=$(date +%s.%N)
  echo "=== $1" >> $R/err-all.txt; cat /tmp/r.err >> $R/err-all.txt
  python3 - /tmp/r.json $s $e $1 /tmp/r.err <<'PY'
import json, sys, re
j = json.load(open(sys.argv[1])); t = j["times"]; s = float(sys.argv[2]); e = float(sys.argv[3])
tr = {}; ep = None
for l in open(sys.argv[5]):
    m = re.search(r"clock starts at epoch ([0-9.]+)", l)
    if m: ep = float(m.group(1))
    m = re.search(r"\[trace\]\s+([0-9.]+) s \(\+[0-9.]+ s\) (.*)$", l)
    if m: tr.setdefault(m.group(2).strip(), float(m.group(1)))
g = lambda k: tr.get(k, float("nan"))
print("%s wall=%.3f solve=%.3f wall_minus_solve=%.3f it=%d exec_to_main=%.3f main_to_solve_start=%.3f xdown_to_torn_down=%.3f xdown_to_main_returned=%.3f exit=%.3f" % (
    sys.argv[4], e - s, t["solve_s"], e - s - t["solve_s"], j["iterations"], ep - s,
    g("dsolve: solved") - t["solve_s"], g("solve: devices torn down") - g("gather: x down"),
    g("main: command returned") - g("gather: x down"), e - (ep + g("main: command returned"))))
PY
}
for r in 1 2 3 4 5 6 7 8; do
  floor 2300 floor2300-$r; one cli-$r; floor 64 floor64-$r
done > $R/runs.txt 2>&1
uptime >> $R/env.txt
python3 - $R/runs.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
v = {}
for l in open(sys.argv[1]):
    tag = l.split()[0].rsplit("-", 1)[0]
    for k, x in re.findall(r"(\w+)=([0-9.]+)", l):
        v.setdefault((tag, k), []).append(float(x))
for (tag, k), x in v.items():
    print("%-10s %-28s min %.3f median %.3f (n %d)" % (tag, k, min(x), st.median(x), len(x)))
PY
pack
cat $R/env.txt | tail -4; cat $R/summary.txt; head -3 $R/runs.txt
