#!/bin/bash
# nvidia-h200-x2, carry [".devpack", ".devdata"]: issue 28's 2-GPU strong scaling at this commit
# (a regression check against 305cad7's 1.92x): cg-single, cg, pipecg; poisson3d 320 and 160.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime >> $R/env.txt
OUT=$R/s1 GPUS="1 2" METHODS="cg-single cg pipecg" NO_WEAK=1 NO_ONERANK=1 NO_PROFILE=1 bash bench/scaling.sh > $R/scaling-1.txt 2>&1
uptime >> $R/env.txt
tar -C $OUT -czf $OUT/r.tgz r
