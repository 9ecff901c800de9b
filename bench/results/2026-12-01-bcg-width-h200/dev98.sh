#!/bin/bash
# nvidia-h200: block CG with kernels per width (new) against 1546e7e's 8-wide block CG (old) and cg's lockstep.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline | head -1; git status --short | head; nvidia-smi -L) > $R/env.txt 2>&1
mkdir -p /tmp/old && tar xzf .devdata/old.tgz -C /tmp/old
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j16 --target clsolve >/tmp/build0.log 2>&1 || { tail -30 /tmp/build0.log; exit 1; }
C=/tmp/b1/clsolve; C0=/tmp/b0/clsolve
$C solve gen:poisson3d:16 --device gpu >/dev/null 2>&1; $C0 solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
show() { python3 -c "
import json,sys; j=json.load(open('/tmp/r.json')); t=j['times']; cs=j.get('columns') or [j]
print('%-30s rc %d it %s solve %.4f ms/it %.3f true %.2e' % (sys.argv[1], j['exit_code'], sorted(set(c['iterations'] for c in cs)), t['solve_s'], t.get('loop_ms_per_iteration',0), max(c.get('true_relative_residual',0) for c in cs)))" "$1"; }
one() { # label binary env args...
  local lab=$1 bin=$2 envs=$3; shift 3
  env $envs CLSOLVE_BCG_PROFILE=1 $bin solve "$@" --device gpu --tol 1e-8 --json > /tmp/r.json 2> /tmp/r.err || tail -3 /tmp/r.err
  show "$lab"; grep "bcg profile" /tmp/r.err | cut -c1-200
}
{
for r in ${REPS:-1 2 3}; do for pc in jacobi amg; do
  one "256 $pc one" $C "X=1" gen:poisson3d:256 --precond $pc -b gen:random:1
  one "256 $pc cg8" $C "X=1" gen:poisson3d:256 --precond $pc -b gen:random:8 --method cg --rhs-mode together
  one "256 $pc bcg8 old" $C0 "X=1" gen:poisson3d:256 --precond $pc -b gen:random:8 --method bcg
  one "256 $pc bcg8 new" $C "X=1" gen:poisson3d:256 --precond $pc -b gen:random:8 --method bcg
  one "256 $pc bcg8 unfused" $C "CLSOLVE_BCG_FUSED=0" gen:poisson3d:256 --precond $pc -b gen:random:8 --method bcg
done; done
for N in ${KSIZES:-128 256}; do for k in 2 4 6; do for r in 1 2; do
  one "$N jacobi cg$k" $C "X=1" gen:poisson3d:$N --precond jacobi -b gen:random:$k --method cg --rhs-mode together
  one "$N jacobi bcg$k new" $C "X=1" gen:poisson3d:$N --precond jacobi -b gen:random:$k --method bcg
done; done; done
for r in 1 2; do
  one "320 jacobi cg4" $C "X=1" gen:poisson3d:320 --precond jacobi -b gen:random:4 --method cg --rhs-mode together
  one "320 jacobi bcg4 new" $C "X=1" gen:poisson3d:320 --precond jacobi -b gen:random:4 --method bcg
  one "320 jacobi bcg8 new" $C "X=1" gen:poisson3d:320 --precond jacobi -b gen:random:8 --method bcg
done
} 2>&1 | tee $R/bcg.txt
uptime >> $R/env.txt
