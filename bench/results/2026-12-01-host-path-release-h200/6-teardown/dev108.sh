#!/bin/bash
# nvidia-h200: where the driver's teardown goes (XT trace lines, not committed), p256 CLI, 3 runs
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
for r in 1 2 3; do
  s=$(date +%s.%N)
  CLSOLVE_TRACE=1 /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 > /dev/null 2>$R/err-$r.txt
  e=$(date +%s.%N)
  python3 - $R/err-$r.txt $s $e <<'PY'
import sys, re
err = open(sys.argv[1]).read(); s = float(sys.argv[2]); e = float(sys.argv[3])
ep = float(re.search(r"epoch ([0-9.]+)", err).group(1))
last = max(float(l.split()[1]) for l in err.splitlines() if l.startswith("[trace]") and "s (+" in l)
print("wall %.3f after-main %.3f" % (e - s, e - ep - last))
PY
  sed -n '/dsolve: solved/,$p' $R/err-$r.txt
done > $R/teardown.txt 2>&1
uptime >> $R/env.txt
tar -C $OUT -czf $OUT/r.tgz r
cat $R/teardown.txt | cut -c1-100
