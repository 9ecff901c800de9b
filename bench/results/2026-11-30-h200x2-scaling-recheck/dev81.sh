#!/bin/bash
# nvidia-h200-x2: 2-GPU cg-single at poisson3d 320, 305cad7 (b0, the 1.92x of 2026-11-29) against
# this commit (b1), alternated, to tell a regression from the machine.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-305cad7.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j16 --target clsolve >/tmp/build0.log 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1
wait
uptime
for b in b1 b0 b1 b0 b1 b0; do
  CLSOLVE=/tmp/$b/clsolve OUT=/tmp/s-$b GPUS="1 2" METHODS="cg-single" NO_WEAK=1 NO_ONERANK=1 NO_PROFILE=1 NO_SMALL=1 bash bench/scaling.sh 2>&1 | grep "^strong" | sed "s/^/$b /"
done
uptime
