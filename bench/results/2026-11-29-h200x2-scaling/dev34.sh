#!/usr/bin/env bash
# issue 28 on 2 x H200: the scaling benchmark with the iteration profile (baseline, HEAD)
source .devpack/setup.sh >/dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvidia-smi topo -m | head -5; uptime
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/dev/null 2>&1 || { echo build failed; exit 1; }
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
uptime
OUT=$OUT/scal METHODS="cg cg-single pipecg" CLSOLVE=/tmp/b1/clsolve timeout 560 bash bench/scaling.sh 2>&1 | tail -80
