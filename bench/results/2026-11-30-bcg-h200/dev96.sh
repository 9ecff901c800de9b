#!/bin/bash
# nvidia-h200: auto's choice across sizes: cg (lockstep) against bcg, 8 and 4 columns, jacobi
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
C=/tmp/b1/clsolve
$C solve gen:poisson3d:16 --device gpu --precond amg >/dev/null 2>&1
for N in 10 32 64 128 320; do for k in 8 4; do for r in 1 2; do for m in cg bcg; do
  $C solve gen:poisson3d:$N --device gpu --tol 1e-8 --precond jacobi -b gen:random:$k --method $m --rhs-mode together --json > /tmp/r.json 2>/tmp/r.err || tail -2 /tmp/r.err
  python3 -c "
import json; j=json.load(open('/tmp/r.json')); cs=j['columns']
print('N%-4d k%d r%d %-4s it %-12s solve %.4f true %.1e' % ($N, $k, $r, '$m', sorted(set(c['iterations'] for c in cs)), j['times']['solve_s'], max(c['true_relative_residual'] for c in cs)))"
done; done; done; done
