#!/bin/bash
# nvidia-h200: the singleton's hwloc without linuxio (common/mpi_env.c) against the same binary
# with the old value set by hand (HWLOC_COMPONENTS=-pci,-opencl,-cuda,-nvml,-gl; a value the user
# sets is kept), alternated: p256 `clsolve solve` (wall - solve, main -> dsolve start) and a small
# GPU solve's whole wall.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head -5; lspci 2>/dev/null | wc -l; ls /sys/bus/pci/devices | wc -l) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
OLD="-pci,-opencl,-cuda,-nvml,-gl"
one() { # A|B tag
  local env=(); [ $1 = A ] && env=(HWLOC_COMPONENTS=$OLD)
  s=$(date +%s.%N)
  env "${env[@]}" CLSOLVE_TRACE=1 /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
  e=$(date +%s.%N)
  echo "=== $2" >> $R/err-all.txt; cat /tmp/r.err >> $R/err-all.txt
  python3 - /tmp/r.json $s $e $2 /tmp/r.err <<'PY'
import json, sys, re
j = json.load(open(sys.argv[1])); t = j["times"]; s = float(sys.argv[2]); e = float(sys.argv[3])
tr = {}; ep = None
for l in open(sys.argv[5]):
    m = re.search(r"clock starts at epoch ([0-9.]+)", l)
    if m: ep = float(m.group(1))
    m = re.search(r"\[trace\]\s+([0-9.]+) s \(\+[0-9.]+ s\) (.*)$", l)
    if m: tr.setdefault(m.group(2).strip(), float(m.group(1)))
g = lambda k: tr.get(k, float("nan"))
print("%s wall=%.3f solve=%.3f wall_minus_solve=%.3f it=%d exec_to_main=%.4f main_to_dsolve=%.4f read=%.3f prewarm_done=%.3f" % (
    sys.argv[4], e - s, t["solve_s"], e - s - t["solve_s"], j["iterations"], ep - s, g("dsolve: start"),
    g("input: matrix read (the checks follow)") - g("dsolve: start"), g("prewarm: la_init done")))
PY
}
small() { # A|B tag
  local env=(); [ $1 = A ] && env=(HWLOC_COMPONENTS=$OLD)
  s=$(date +%s.%N)
  env "${env[@]}" /tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --json > /tmp/s.json 2>/dev/null
  e=$(date +%s.%N)
  python3 -c "import json,sys; j=json.load(open('/tmp/s.json')); print('%s smallwall=%.4f it=%d' % (sys.argv[1], float(sys.argv[3])-float(sys.argv[2]), j['iterations']))" $2 $s $e
}
for r in 1 2 3 4 5 6 7 8 9 10 11 12; do
  case $((r % 2)) in 1) o="A B";; 0) o="B A";; esac
  for v in $o; do one $v $v-$r; done
  for v in $o; do small $v s$v-$r; done
done > $R/runs.txt 2>&1
uptime >> $R/env.txt
python3 - $R/runs.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
v = {}
for l in open(sys.argv[1]):
    tag = l.split()[0].rsplit("-", 1)[0]
    for k, x in re.findall(r"(\w+)=([0-9.]+)", l):
        v.setdefault((tag, k), []).append(float(x))
for (tag, k), x in sorted(v.items(), key=lambda a: (a[0][1], a[0][0])):
    print("%-6s %-18s min %.4f median %.4f (n %d)" % (tag, k, min(x), st.median(x), len(x)))
PY
pack
tail -3 $R/env.txt; cat $R/summary.txt
