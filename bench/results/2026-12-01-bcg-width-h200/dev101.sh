#!/bin/bash
# nvidia-h200: the block SpMM with 1, 2 or 4 columns a work-item (CLSOLVE_BCG_SPMM_CW), poisson3d 256 and 128, Jacobi.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; nvidia-smi -L) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
C=/tmp/b1/clsolve
$C solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
show() { python3 -c "
import json,sys; j=json.load(open('/tmp/r.json')); t=j['times']; cs=j.get('columns') or [j]
print('%-30s rc %d it %s solve %.4f ms/it %.3f true %.2e' % (sys.argv[1], j['exit_code'], sorted(set(c['iterations'] for c in cs)), t['solve_s'], t.get('loop_ms_per_iteration',0), max(c.get('true_relative_residual',0) for c in cs)))" "$1"; }
one() { local lab=$1 envs=$2; shift 2
  env $envs CLSOLVE_BCG_PROFILE=1 $C solve "$@" --device gpu --tol 1e-8 --json > /tmp/r.json 2> /tmp/r.err || tail -3 /tmp/r.err
  show "$lab"; grep "bcg profile" /tmp/r.err | cut -c1-200; }
{
for N in 256 128; do for r in 1 2; do for k in 8 4 2; do for cw in 1 2 4; do
  one "$N bcg$k cw$cw" "CLSOLVE_BCG_FUSED=0 CLSOLVE_BCG_SPMM_CW=$cw" gen:poisson3d:$N --precond jacobi -b gen:random:$k --method bcg
done; done
  one "$N bcg2 fused" "X=1" gen:poisson3d:$N --precond jacobi -b gen:random:2 --method bcg
done; done
for cw in 1 2 4; do
  one "256 amg bcg8 cw$cw" "CLSOLVE_BCG_FUSED=0 CLSOLVE_BCG_SPMM_CW=$cw" gen:poisson3d:256 --precond amg -b gen:random:8 --method bcg
done
} 2>&1 | tee $R/bcg.txt
uptime >> $R/env.txt
