#!/bin/bash
# nvidia-h200: block CG (per-width kernels, G fused two wide) against cg's lockstep, final defaults (SpMM columns a work-item), 256 and 128.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline | head -1; git status --short | head; nvidia-smi -L) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
C=/tmp/b1/clsolve; 
$C solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
show() { python3 -c "
import json,sys; j=json.load(open('/tmp/r.json')); t=j['times']; cs=j.get('columns') or [j]
print('%-30s rc %d it %s solve %.4f ms/it %.3f true %.2e' % (sys.argv[1], j['exit_code'], sorted(set(c['iterations'] for c in cs)), t['solve_s'], t.get('loop_ms_per_iteration',0), max(c.get('true_relative_residual',0) for c in cs)))" "$1"; }
one() { # label binary env args...
  local lab=$1 bin=$2 envs=$3; shift 3
  env $envs CLSOLVE_BCG_PROFILE=1 $bin solve "$@" --device gpu --tol 1e-8 --json > /tmp/r.json 2> /tmp/r.err || tail -3 /tmp/r.err
  show "$lab"; grep "bcg profile" /tmp/r.err | cut -c1-200
}

{
for r in 1 2; do
  one "256 jacobi one" $C "X=1" gen:poisson3d:256 --precond jacobi -b gen:random:1
  for k in 2 3 4 5 8; do
    one "256 jacobi cg$k" $C "X=1" gen:poisson3d:256 --precond jacobi -b gen:random:$k --method cg --rhs-mode together
    one "256 jacobi bcg$k" $C "X=1" gen:poisson3d:256 --precond jacobi -b gen:random:$k --method bcg
  done
  for k in 3 5; do
    one "128 jacobi cg$k" $C "X=1" gen:poisson3d:128 --precond jacobi -b gen:random:$k --method cg --rhs-mode together
    one "128 jacobi bcg$k" $C "X=1" gen:poisson3d:128 --precond jacobi -b gen:random:$k --method bcg
  done
done
} 2>&1 | tee $R/bcg.txt
uptime >> $R/env.txt
