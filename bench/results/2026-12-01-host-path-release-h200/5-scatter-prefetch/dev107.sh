#!/bin/bash
# nvidia-h200 host (no GPU used): the grouped mirror's scatter with software prefetch of the
# mirror's destination (XPF = distance in entries, 0 = none), p256, `clsolve check`, interleaved
source .devpack/setup.sh >/dev/null 2>&1
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
uptime >> $R/env.txt
for r in 1 2 3 4 5; do
  for pf in 0 8 16 32 64; do
    echo -n "pf=$pf "; XPF=$pf CLSOLVE_MM_PROFILE=1 /tmp/b1/clsolve check /tmp/p256.mtx 2>&1 >/dev/null | grep "^csr_from" | grep -o "scatter [0-9.]* ms"
  done
done > $R/pf.txt
uptime >> $R/env.txt
python3 - $R/pf.txt <<'PY'
import sys, re, statistics as st
v = {}
for l in open(sys.argv[1]):
    m = re.match(r"pf=(\d+) scatter ([0-9.]+)", l)
    if m: v.setdefault(int(m.group(1)), []).append(float(m.group(2)))
for k in sorted(v): print("pf", k, "scatter min %.1f median %.1f" % (min(v[k]), st.median(v[k])), v[k])
PY
tar -C $OUT -czf $OUT/r.tgz r
