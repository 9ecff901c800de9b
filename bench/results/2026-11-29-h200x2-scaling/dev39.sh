#!/usr/bin/env bash
# issue 28 on 2 x H200: pipecg with its sums waited after the next SpMV, ld's sums pinned (HEAD)
source .devpack/setup.sh >/dev/null 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/dev/null 2>&1 || { echo build failed; exit 1; }
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
uptime
OUT=/tmp/pipe METHODS="pipecg cg-single" NO_WEAK=1 NO_ONERANK=1 NO_PROFILE=1 CLSOLVE=/tmp/b1/clsolve timeout 100 bash bench/scaling.sh 2>&1 | grep -E "^\| (strong|small)"
/tmp/b1/clsolve solve gen:poisson3d:320 --device gpu --method pipecg --maxiter 300 --tol 1e-300 --profile 2>&1 | grep -E "profile|rank|device [0-9]"
uptime
