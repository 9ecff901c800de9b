#!/bin/bash
# nvidia-h200: 9bec41a. (a) the team kernels on every level (CLSOLVE_AMGS_TEAM=1) against the
# default (a team from 12 entries a row), bench_amg at 256, alternated, with the level profile;
# (b) bench/precond.sh at 256 twice and at 320 once (the issue-25 ratio, confirmation).
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve bench_amg >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --precond amg >/dev/null 2>&1
for r in 1 2 3; do
  for team in auto 1; do
    if [ $team = auto ]; then unset CLSOLVE_AMGS_TEAM; else export CLSOLVE_AMGS_TEAM=1; fi
    CLSOLVE_AMG_PROFILE=1 /tmp/b1/bench/bench_amg --device gpu --setup device --reps 3 gen:poisson3d:256 > $R/ba-t$team-$r.json 2>$R/ba-t$team-$r.err
    python3 -c "
import json; j=json.load(open('$R/ba-t$team-$r.json')); print('256 team $team run $r', 'setup min %.4f med %.4f agg %.4f its %d' % (j['setup_min_s'], j['setup_s'], j['aggregate_s'], j['iterations']))"
    grep "level 0 aggregate\|level 1 aggregate" $R/ba-t$team-$r.err | tail -2 | sed 's/^/    /'
  done
done > $R/bench_amg.txt 2>&1
unset CLSOLVE_AMGS_TEAM
pack
for p in 1 2; do
  CLSOLVE=/tmp/b1/clsolve SIZES="256" PCS="jacobi amg" REUSE_SIZES= MULTI_PCS= PETSC=0 CUPY=0 REPS=5 OUT=$R/precond256-$p bash bench/precond.sh > $R/precond256-$p.txt 2>&1
  uptime >> $R/env.txt
done
CLSOLVE=/tmp/b1/clsolve SIZES="320" PCS="jacobi amg" REUSE_SIZES= MULTI_PCS= PETSC=0 CUPY=0 REPS=3 OUT=$R/precond320 bash bench/precond.sh > $R/precond320.txt 2>&1
rm -f $R/precond*/*.err $R/*.err.x
uptime >> $R/env.txt; pack
