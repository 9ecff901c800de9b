#!/bin/bash
# nvidia-h200: issue 25's AMG tts against Jacobi's at 256 and 320 with the current host path (1ebce55),
# and the AMG set-up's phases (CLSOLVE_AMG_PROFILE).
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
CLSOLVE=/tmp/b1/clsolve SIZES="256 320" PCS="jacobi amg" REUSE_SIZES= MULTI_PCS= PETSC=0 CUPY=0 REPS=5 OUT=$R/precond bash bench/precond.sh > $R/precond.txt 2>&1
uptime >> $R/env.txt; pack
for i in 1 2; do
  CLSOLVE_AMG_PROFILE=1 /tmp/b1/clsolve solve gen:poisson3d:256 --device gpu --precond amg --tol 1e-8 --json > $R/amg256-$i.json 2> $R/amg256-prof-$i.txt
done
uptime >> $R/env.txt; pack
