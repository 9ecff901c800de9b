#!/bin/bash
# nvidia-h200-x2: is 982bb65 (a part uploaded in device order through a view) the 1% of 2-GPU
# cg-single at poisson3d 320? bB = its parent, bC = it, b1 = HEAD, alternated.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for v in B C; do mkdir -p /tmp/src$v && tar -C /tmp/src$v -xzf .devdata/old-$v.tgz; done
( cmake -S /tmp/srcB -B /tmp/bB -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/bB -j6 --target clsolve >/tmp/buildB.log 2>&1 ) &
( cmake -S /tmp/srcC -B /tmp/bC -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/bC -j6 --target clsolve >/tmp/buildC.log 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j6 --target clsolve >/tmp/build.log 2>&1
wait
uptime
for b in bB bC b1 bB bC b1 bB bC b1; do
  [ -x /tmp/$b/clsolve ] || { echo "$b not built"; continue; }
  CLSOLVE=/tmp/$b/clsolve OUT=/tmp/s-$b GPUS="2" METHODS="cg-single" NO_WEAK=1 NO_ONERANK=1 NO_PROFILE=1 NO_SMALL=1 bash bench/scaling.sh 2>&1 | grep "^strong" | sed "s/^/$b /"
done
uptime
