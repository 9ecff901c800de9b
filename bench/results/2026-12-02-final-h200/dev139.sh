#!/bin/bash
# nvidia-h200: sanity at HEAD after the review's mends: p256 read threads (max_threads cap: 15 of 16
# beside the prewarm), chebyshev / amg / jacobi at poisson3d 128 on the GPU (device Lanczos, the stack
# coefficients), bcg auto on the GPU with 4 columns.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline -1) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
for r in 1 2 3 4; do
  s=$(date +%s.%N); CLSOLVE_MM_PROFILE=1 /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err; e=$(date +%s.%N)
  python3 -c "import json,sys; j=json.load(open('/tmp/r.json')); t=j['times']; print('p256 wall-solve %.3f it %d true %.3e' % ($e-$s-t['solve_s'], j['iterations'], j['true_relative_residual']))"
  grep -o "mm_read_csr: [^,]*, [0-9]* threads" /tmp/r.err
done > $R/p256.txt 2>&1
for pc in jacobi chebyshev amg ic0; do
  /tmp/b1/clsolve solve gen:poisson3d:128 --device gpu --precond $pc --tol 1e-8 --json 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); p=j.get('preconditioner') or {}; print('$pc', j['iterations'], '%.3e'%j['true_relative_residual'], 'solve %.3f'%j['times']['solve_s'], p.get('lambda_min',''), p.get('lambda_max',''))"
done > $R/pcs.txt 2>&1
/tmp/b1/clsolve solve gen:poisson3d:64 --device gpu -b gen:random:4 --precond jacobi --tol 1e-8 --json 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); print(j['method'], j['iterations'], j.get('method_choice'))" > $R/bcg.txt 2>&1
uptime >> $R/env.txt
cat $R/env.txt $R/p256.txt $R/pcs.txt $R/bcg.txt
