#!/bin/bash
# nvidia-h200: --method auto with 8 columns (jacobi: bcg expected; amg: cg), and 1138_bus, dependent columns
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
C=/tmp/b1/clsolve
for a in "--precond jacobi -b gen:random:8" "--precond amg -b gen:random:8" "--precond none -b gen:random:3" "--precond jacobi -b gen:random:8 --method cg"; do
  $C solve gen:poisson3d:128 --device gpu --tol 1e-8 $a --json > /tmp/r.json 2>/tmp/r.err; echo "rc $? $a"
  python3 -c "
import json; j=json.load(open('/tmp/r.json')); print(' ', j['method'], '|', j.get('method_choice'), '|', j['rhs_mode'], [c['iterations'] for c in j['columns']], max(c['true_relative_residual'] for c in j['columns']), 'solve %.3f' % j['times']['solve_s'])"
done
python3 - <<'PY'
import random
n=32768; random.seed(3); c=[random.uniform(-1,1) for _ in range(n)]
with open('/tmp/Bdep.mtx','w') as f:
    f.write('%%%%MatrixMarket matrix array real general\n%d 4\n' % n)
    for col in (c, [3*v for v in c], [random.uniform(-1,1) for _ in range(n)], [random.uniform(-1,1) for _ in range(n)]):
        f.write(''.join('%.17g\n' % v for v in col))
PY
CLSOLVE_TRACE=1 $C solve gen:poisson3d:32 -b /tmp/Bdep.mtx --device gpu --method bcg --precond jacobi --json > /tmp/r.json 2>/tmp/r.err; echo "dep rc $?"; grep "lost rank" /tmp/r.err
python3 -c "
import json; j=json.load(open('/tmp/r.json')); print(' ', j['method'], [c['iterations'] for c in j['columns']], max(c['true_relative_residual'] for c in j['columns']))"
