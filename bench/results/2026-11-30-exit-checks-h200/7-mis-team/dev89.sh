#!/bin/bash
# nvidia-h200: the MIS rounds with a team per row on dense levels (working tree b1), against one
# work-item a row (CLSOLVE_AMGS_TEAM=0, same build), alternated; then bench/precond.sh at 256/320.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve bench_amg >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --precond amg >/dev/null 2>&1
for n in 256 320; do
  for r in 1 2 3; do
    for team in 0 1; do
      CLSOLVE_AMGS_TEAM=$team /tmp/b1/bench/bench_amg --device gpu --setup device --reps 3 gen:poisson3d:$n > $R/ba-$n-t$team-$r.json 2>$R/ba-$n-t$team-$r.err
      python3 -c "
import json; j=json.load(open('$R/ba-$n-t$team-$r.json')); print('$n team $team run $r', 'setup min %.4f med %.4f agg %.4f rounds %s its %d vcycle %.3f' % (j['setup_min_s'], j['setup_s'], j['aggregate_s'], j.get('mis_rounds'), j['iterations'], j['vcycle_ms']))" 2>&1
    done
  done
done > $R/bench_amg.txt
pack
for team in 0 1; do
  CLSOLVE_AMGS_TEAM=$team CLSOLVE_AMG_PROFILE=1 /tmp/b1/clsolve solve gen:poisson3d:256 --device gpu --precond amg --tol 1e-8 --json > $R/amg256-t$team.json 2> $R/amg256-prof-t$team.txt
done
CLSOLVE=/tmp/b1/clsolve SIZES="256 320" PCS="jacobi amg" REUSE_SIZES= MULTI_PCS= PETSC=0 CUPY=0 REPS=5 OUT=$R/precond bash bench/precond.sh > $R/precond.txt 2>&1
rm -f $R/precond/*.err
uptime >> $R/env.txt; pack
