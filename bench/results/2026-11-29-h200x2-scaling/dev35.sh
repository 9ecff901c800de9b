#!/usr/bin/env bash
# issue 28 on 2 x H200: the halo's copy queue + polled waits + flushed update (HEAD)
# against the old main-queue, blocking-wait behaviour (env switches), same call
source .devpack/setup.sh >/dev/null 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/dev/null 2>&1 || { echo build failed; exit 1; }
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
uptime
R=$OUT/r; mkdir -p $R
echo "== old: main queue, blocking waits"
CLSOLVE_HALO_QUEUE=main CLSOLVE_EVENT_WAIT=block OUT=/tmp/old METHODS="cg cg-single" NO_WEAK=1 NO_ONERANK=1 GPUS="1 2" CLSOLVE=/tmp/b1/clsolve \
  timeout 200 bash bench/scaling.sh 2>&1 | grep -v "^$" | grep -E "^\| (strong|small)|^###|^\| [01] " | head -40
echo "== poll only (main queue)"
CLSOLVE_HALO_QUEUE=main OUT=/tmp/poll METHODS="cg cg-single" NO_WEAK=1 NO_ONERANK=1 NO_SMALL=1 NO_PROFILE=1 GPUS="2" CLSOLVE=/tmp/b1/clsolve \
  timeout 100 bash bench/scaling.sh 2>&1 | grep -E "^\| strong" 
echo "== new: HEAD defaults"
OUT=/tmp/new METHODS="cg cg-single pipecg" CLSOLVE=/tmp/b1/clsolve timeout 330 bash bench/scaling.sh 2>&1 | grep -v "^$" | tail -60
uptime
tar czf $R/results.tgz -C /tmp old poll new 2>/dev/null; ls -la $R
