#!/usr/bin/env bash
# issue 28 on 2 x H200: alpha, beta as kernel arguments (HEAD) - strong 320 and small 160, cg-single and cg, 1 and 2 GPUs, 3 repeats, profile once
source .devpack/setup.sh >/dev/null 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/dev/null 2>&1 || { echo build failed; exit 1; }
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
uptime
for rep in 1 2 3; do
  OUT=/tmp/rep$rep METHODS="cg-single cg" NO_WEAK=1 NO_ONERANK=1 NO_PROFILE=1 CLSOLVE=/tmp/b1/clsolve timeout 120 bash bench/scaling.sh 2>&1 | grep -E "^\| (strong|small)"
done
OUT=/tmp/prof METHODS="cg-single cg" NO_WEAK=1 NO_ONERANK=1 GPUS=2 CLSOLVE=/tmp/b1/clsolve timeout 120 bash bench/scaling.sh 2>&1 | grep -E "^rank|^###"
uptime
mkdir -p $OUT/r; tar czf $OUT/r/results.tgz -C /tmp rep1 rep2 rep3 prof
