#!/bin/bash
# nvidia-h200: the final commit (6eb85e7, the team from 6 entries a row): bench/precond.sh at 256
# twice and 320 once, bench_amg's device set-up at 256.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve bench_amg >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --precond amg >/dev/null 2>&1
CLSOLVE_AMG_PROFILE=1 /tmp/b1/bench/bench_amg --device gpu --setup device --reps 5 gen:poisson3d:256 > $R/ba-256.json 2> $R/ba-256.prof
for p in 1 2; do
  CLSOLVE=/tmp/b1/clsolve SIZES="256" PCS="jacobi amg" REUSE_SIZES= MULTI_PCS= PETSC=0 CUPY=0 REPS=5 OUT=$R/precond256-$p bash bench/precond.sh > $R/precond256-$p.txt 2>&1
  uptime >> $R/env.txt
done
CLSOLVE=/tmp/b1/clsolve SIZES="320" PCS="jacobi amg" REUSE_SIZES= MULTI_PCS= PETSC=0 CUPY=0 REPS=3 OUT=$R/precond320 bash bench/precond.sh > $R/precond320.txt 2>&1
rm -f $R/precond*/*.err
uptime >> $R/env.txt; pack
