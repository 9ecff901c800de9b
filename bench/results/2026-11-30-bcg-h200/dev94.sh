#!/bin/bash
# nvidia-h200: bench/precond.sh's eight-together part, cg (lockstep) and bcg (block CG), jacobi and amg
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/precond-multi; mkdir -p $R
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
git log --oneline | head -1 > $R/commit.txt
SIZES= REUSE_SIZES= REPS=${REPS:-3} PETSC=0 CUPY=0 CLSOLVE=/tmp/b1/clsolve OUT=$R bash bench/precond.sh 2>$R/progress.txt | tail -20
(cd $OUT && tar czf precond-multi.tgz precond-multi && rm -rf precond-multi/*.json precond-multi/*.err)
