#!/bin/bash
# nvidia-h200: --device gpu with the loader narrowed to NVIDIA's ICD (kernels/ocl_icd.c) against
# every ICD (CLSOLVE_ICD_ALL=1), the same build, p256's host phases alternated (host-phases.sh).
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; env | grep -i 'ocl\|opencl') > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
uptime >> $R/env.txt
CLSOLVE_TRACE=1 /tmp/b1/clsolve solve gen:poisson3d:32 --device gpu 2>&1 | grep -i "loader\|picked\|device" | head -5
LD_DEBUG=files /tmp/b1/clsolve solve gen:poisson3d:32 --device gpu 2>&1 | grep -c 'libpocl\|libLLVM'
WORK=/tmp/hph B=/tmp/b1/clsolve A_ENV="CLSOLVE_ICD_ALL=1" N=256 ROUNDS=12 DEVICE=gpu bash bench/host-phases.sh > $R/host-phases.txt 2>&1
cp /tmp/hph/traces.txt $R/
tail -22 $R/host-phases.txt
uptime >> $R/env.txt
pack
