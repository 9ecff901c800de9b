#!/bin/bash
# nvidia-h200: block CG (--method bcg) against cg's columns in lockstep (dbcg) and one column,
# poisson3d 256 (and 128), jacobi and amg, 8 random right-hand sides, tol 1e-8, alternated.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline | head -1; git status --short | head) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
C=/tmp/b1/clsolve
$C solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
show() { python3 -c "
import json,sys; j=json.load(open('/tmp/r.json')); t=j['times']; cs=j.get('columns') or [j]
print('%-28s rc %d it %s solve %.4f loop %.3f ms/it confirm %.4f start %.4f pc_setup %.3f true %.2e' % (sys.argv[1], j['exit_code'], sorted(set(c['iterations'] for c in cs)), t['solve_s'], t.get('loop_ms_per_iteration',0), t.get('solve_confirm_s',0), t.get('solve_start_s',0), t.get('precond_setup_s',0), max(c.get('true_relative_residual',0) for c in cs)))" "$1"; }
for N in ${SIZES:-256 128}; do
for r in ${REPS:-1 2}; do for pc in jacobi amg; do
  for mode in one cg bcg; do
    case $mode in one) a="-b gen:random:1";; cg) a="-b gen:random:8 --method cg --rhs-mode together";; bcg) a="-b gen:random:8 --method bcg --rhs-mode together";; esac
    CLSOLVE_BCG_PROFILE=1 CLSOLVE_TRACE=${TRACE:-0} $C solve gen:poisson3d:$N --device gpu --tol 1e-8 --precond $pc $a --json > /tmp/r.json 2> /tmp/r.err || tail -3 /tmp/r.err
    show "N$N r$r $pc $mode"
    grep -i "bcg" /tmp/r.err | head -2 | cut -c1-300
  done
done; done; done | tee $R/bcg.txt
uptime >> $R/env.txt
