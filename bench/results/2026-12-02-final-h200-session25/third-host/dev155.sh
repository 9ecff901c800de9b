#!/bin/bash
# nvidia-h200: the final code on a third host: the unit tests of the session's code under the
# Khronos loader; p256's phases, every driver (CLSOLVE_ICD_ALL=1) against --device gpu's narrowed
# loader (host-phases.sh, 12 rounds), and the same with -o (x written) for the writer's share.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; lscpu | grep -i "model name\|mhz\|numa") > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve test_ocl_icd test_common > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
uptime >> $R/env.txt
(/tmp/b1/tests/test_ocl_icd; /tmp/b1/tests/test_common) > $R/unit.txt 2>&1; cat $R/unit.txt
sleep 20; uptime >> $R/env.txt
WORK=/tmp/hph B=/tmp/b1/clsolve A_ENV="CLSOLVE_ICD_ALL=1" N=256 ROUNDS=12 DEVICE=gpu bash bench/host-phases.sh > $R/host-phases.txt 2>&1
tail -20 $R/host-phases.txt
uptime >> $R/env.txt
pack
