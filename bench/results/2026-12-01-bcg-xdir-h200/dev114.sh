#!/bin/bash
# nvidia-h200: bcg with rho summed in the update's pass (CLSOLVE_BCG_RHO_FUSED=1) against its own
# pass (=0), one build (HEAD), poisson3d 256, Jacobi, 8 / 4 / 2 columns, 2 rounds, with the profile.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; nvidia-smi -L) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu -b gen:random:8 --method bcg --precond jacobi >/dev/null 2>&1
show() { python3 -c "
import json,sys; j=json.load(open('/tmp/r.json')); t=j['times']; cs=j.get('columns') or [j]
print('%-22s rc %d it %s solve %.4f true %.2e' % (sys.argv[1], j['exit_code'], sorted(set(c['iterations'] for c in cs)), t['solve_s'], max(c.get('true_relative_residual',0) for c in cs)))" "$1"; }
one() { # label fused k
  CLSOLVE_BCG_RHO_FUSED=$2 CLSOLVE_BCG_PROFILE=1 /tmp/b1/clsolve solve gen:poisson3d:256 --precond jacobi -b gen:random:$3 --method bcg --device gpu --tol 1e-8 --json > /tmp/r.json 2> /tmp/r.err || tail -3 /tmp/r.err
  show "$1"; grep "bcg profile" /tmp/r.err | cut -c1-220
}
for r in 1 2; do
  for k in 8 4 2; do
    if [ $r = 1 ]; then one "rho0 k$k" 0 $k; one "rho1 k$k" 1 $k; else one "rho1 k$k" 1 $k; one "rho0 k$k" 0 $k; fi
  done
done > $R/rho.txt 2>&1
uptime >> $R/env.txt
pack
cat $R/rho.txt
