#!/bin/bash
# nvidia-h200: the session's code (26bf49e) on a fresh host: the new unit tests under the GPU
# host's Khronos loader; p256's phases, every driver (CLSOLVE_ICD_ALL=1) against --device gpu's
# narrowed loader; p200 POSTed to clsolved --device gpu (host-path.sh); one rank's share of
# 10^9 rows on 4 GPUs (gen:poisson3d:640, 2.6e8 rows, billion.sh NP=1).
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; free -g) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved test_ocl_icd test_common > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
uptime >> $R/env.txt
(/tmp/b1/tests/test_ocl_icd; /tmp/b1/tests/test_common) > $R/unit.txt 2>&1; cat $R/unit.txt
WORK=/tmp/hph B=/tmp/b1/clsolve A_ENV="CLSOLVE_ICD_ALL=1" N=256 ROUNDS=10 DEVICE=gpu bash bench/host-phases.sh > $R/host-phases.txt 2>&1
tail -20 $R/host-phases.txt
uptime >> $R/env.txt
rm -rf /tmp/hph
WORK=/tmp/hp BUILD=/tmp/b1 N=200 REPS=5 DEVICE=gpu DAEMONS=plain timeout 240 bash bench/host-path.sh > $R/host-path.log 2>&1
tail -6 $R/host-path.log
rm -rf /tmp/hp
uptime >> $R/env.txt
WORK=/tmp/bil BUILD=/tmp/b1 N=640 NP=1 REPS=2 timeout 200 bash bench/billion.sh > $R/billion-640-np1.txt 2>&1
tail -8 $R/billion-640-np1.txt
uptime >> $R/env.txt
pack
