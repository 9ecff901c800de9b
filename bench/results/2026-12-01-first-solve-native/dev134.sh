#!/bin/bash
# nvidia-h200: the lazy kernels (aef6815+) against 8d4ca26 on the GPU: every preconditioner, cg and bcg,
# iterations and true residuals side by side; test_amg_dsetup and test_formats on the GPU
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline -1) > $R/env.txt 2>&1
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-8d4ca26.tgz
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve test_amg_dsetup test_formats test_pc > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j16 --target clsolve > /tmp/b0.log 2>&1 || { tail -20 /tmp/b0.log; exit 1; }
for t in test_amg_dsetup test_formats test_pc; do (cd /tmp/b1/tests && timeout 300 ./$t 2>&1 | grep -E "CHECK failed|FAIL|checks" | tail -5) > $R/$t.txt 2>&1; done
/tmp/b1/clsolve gen poisson3d 96 -o /tmp/p96.mtx > /dev/null
for b in b0 b1; do /tmp/$b/clsolve solve gen:poisson3d:16 --device gpu --precond amg >/dev/null 2>&1; done
while read -r cfg; do
  for b in b0 b1; do
    CLSOLVE_TRACE=1 /tmp/$b/clsolve solve /tmp/p96.mtx --device gpu --tol 1e-8 --json $cfg > $R/out.json 2> $R/err.txt
    python3 - "$b" "$cfg" $R/out.json $R/err.txt <<'PY'
import json, sys, re
b, cfg, f, e = sys.argv[1:5]
try:
    j = json.load(open(f)); t = j["times"]
    cnt = [l.split("OpenCL programs")[1].strip() for l in open(e) if "OpenCL programs" in l]
    print("%-46s %s it %4d true %.4e setup %.3f solve %.3f %s" % (cfg, b, j["iterations"], j["true_relative_residual"], t["setup_s"], t["solve_s"], cnt[-1] if cnt else ""))
except Exception as x:
    print("%-46s %s FAILED %s %s" % (cfg, b, x, open(e).read()[-300:].replace("\n", " | ")))
PY
  done
done > $R/ab.txt <<'CFG'
--precond none
--precond jacobi
--precond chebyshev
--precond ic0
--precond ic0 --precond-sweeps 0
--precond amg
--precond amg --precond-setup host
--precond chebyshev --method pipecg
--precond jacobi --method bcg -b gen:random:8
--precond amg --method bcg -b gen:random:8
--precond chebyshev -b gen:random:4
--precond jacobi --precision float
--precond amg --precision mixed
CFG
uptime >> $R/env.txt
cat $R/test_*.txt $R/ab.txt > $R/summary.txt
tar -C $OUT -czf $OUT/r.tgz r
cat $R/summary.txt
