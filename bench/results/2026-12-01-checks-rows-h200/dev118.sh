#!/bin/bash
# nvidia-h200: p256, b0 = c74daa3 against b1 = b3dc5d3 (the checks' diagonal in the values' pass;
# the grouped matrix's row starts in the window pass): the read (clsolve check, MM profile), then
# `clsolve solve` wall - solve and the trace, alternated; the checks alone (chk.c: the old
# two-pass check copied beside the library's, on gen poisson3d 256); x of both compared.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt 2>&1
mkdir -p /tmp/s0 && tar -C /tmp/s0 -xzf .devdata/old-c74daa3.tgz
bld() { cmake -S $1 -B $2 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build $2 -j8 --target clsolve > $2.log 2>&1; }
bld /tmp/s0 /tmp/b0 & bld . /tmp/b1; wait
for b in b0 b1; do [ -x /tmp/$b/clsolve ] || { tail -20 /tmp/$b.log; exit 1; }; done
uptime >> $R/env.txt
gcc -O2 -std=gnu17 -I. -isystem /usr/lib/x86_64-linux-gnu/openmpi/include .devdata/chk.c -o /tmp/chk /tmp/b1/libcls_solver.a /tmp/b1/libcls_kernels.a /tmp/b1/libcls_matrices.a /tmp/b1/libcls_common.a -ljansson -lOpenCL -lm -lpthread -lz -L/usr/lib/x86_64-linux-gnu/openmpi/lib -lmpi > $R/chk-build.txt 2>&1
/tmp/chk 256 > $R/chk.txt 2>&1
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
for b in b0 b1; do /tmp/$b/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1; done
for r in 1 2 3 4 5 6 7 8; do
  case $((r % 2)) in 1) o="b0 b1";; 0) o="b1 b0";; esac
  for b in $o; do CLSOLVE_MM_PROFILE=1 /tmp/$b/clsolve check /tmp/p256.mtx 2>&1 >/dev/null | grep "^mm_read_csr\|^csr_from" | sed "s/^/$b /" | cut -c1-330; done
done > $R/read.txt 2>&1
uptime >> $R/env.txt
one() { # build tag
  b=$1; tag=$2
  s=$(date +%s.%N)
  CLSOLVE_TRACE=1 CLSOLVE_MM_PROFILE=1 /tmp/$b/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
  e=$(date +%s.%N)
  echo "=== $tag" >> $R/err-all.txt; cat /tmp/r.err >> $R/err-all.txt
  python3 - /tmp/r.json $s $e $tag <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); t = j["times"]; s = float(sys.argv[2]); e = float(sys.argv[3])
print("%s wall %.3f solve %.3f wall-solve %.3f it %d true %.3e |" % (sys.argv[4], e - s, t["solve_s"], e - s - t["solve_s"], j["iterations"], j["true_relative_residual"]),
    " ".join("%s=%.3f" % (k, t[k]) for k in ("startup_s", "parse_s", "setup_s", "gather_s", "total_s") if k in t))
PY
}
for r in 1 2 3 4 5 6 7 8 9 10 11 12; do
  if [ $((r % 2)) = 1 ]; then one b0 b0-$r; one b1 b1-$r; else one b1 b1-$r; one b0 b0-$r; fi
done > $R/p256.txt 2>&1
uptime >> $R/env.txt
/tmp/b0/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x0.mtx > $R/o0.txt 2>&1
/tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x1.mtx > $R/o1.txt 2>&1
python3 - $R/read.txt $R/p256.txt $R/err-all.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
def mm(x): return "min %.1f median %.1f" % (min(x), st.median(x))
p = {}
for l in open(sys.argv[1]):
    b = l.split()[0]
    m = re.search(r"mm_read_csr.*?parse ([0-9.]+) ms.*?csr ([0-9.]+) ms, all ([0-9.]+) ms", l)
    if m: p.setdefault((b, "parse"), []).append(float(m.group(1))); p.setdefault((b, "csr"), []).append(float(m.group(2))); p.setdefault((b, "all"), []).append(float(m.group(3)))
    m = re.search(r"csr_from_coo.*?window ([0-9.]+), rows ([0-9.]+).*?total ([0-9.]+) ms", l)
    if m: p.setdefault((b, "window+rows"), []).append(float(m.group(1)) + float(m.group(2))); p.setdefault((b, "assembly total"), []).append(float(m.group(3)))
for k in ("parse", "window+rows", "assembly total", "csr", "all"):
    print("check %-15s" % k, " | ".join("%s %s" % (b, mm(p[(b, k)])) for b in ("b0", "b1") if (b, k) in p))
v = {}
for l in open(sys.argv[2]):
    m = re.match(r"(b\w+)-\d+ wall ([0-9.]+) solve ([0-9.]+) wall-solve ([0-9.]+)", l)
    if m: v.setdefault(m.group(1), []).append(float(m.group(4)))
for k in sorted(v): print("%s p256 wall-solve min %.3f median %.3f (n %d)" % (k, min(v[k]), st.median(v[k]), len(v[k])))
runs = open(sys.argv[3]).read().split('=== ')[1:]
keys = ["dsolve: start", "input: matrix read (the checks follow)", "input: read (or header of the generator)", "dsys_open: matrix up", "dsolve: solved", "dsolve: gathered", "main: command returned"]
d = {}
for r in runs:
    tag = r.split('\n', 1)[0].split('-')[0]
    for k in keys:
        m = re.search(r"\[trace\]\s+([0-9.]+) s \(\+[0-9.]+ s\) " + re.escape(k), r)
        if m: d.setdefault((tag, k), []).append(float(m.group(1)))
    m = re.search(r"mm_read_csr.*?all ([0-9.]+) ms", r)
    if m: d.setdefault((tag, "mm all"), []).append(float(m.group(1)) / 1e3)
for k in keys + ["mm all"]:
    print("trace %-42s" % k, " ".join("%s %.3f/%.3f" % (t, min(d[(t, k)]), st.median(d[(t, k)])) for t in ("b0", "b1") if (t, k) in d))
PY
(cmp /tmp/x0.mtx /tmp/x1.mtx && echo "x: identical bytes") >> $R/summary.txt 2>&1
cat $R/chk.txt >> $R/summary.txt
pack
cat $R/summary.txt
