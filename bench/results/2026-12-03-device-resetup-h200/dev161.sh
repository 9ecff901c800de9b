#!/bin/bash
# nvidia-h200 (session 29): the numeric re-set-up on the device (37fb882): jobs alternating between
# poisson3d N and the same with its diagonal 1.5x through one daemon, each job after the first a
# re-set-up from the kept hierarchy's aggregates ("resetup"), against a fresh device set-up each job
# ("fresh": CLSOLVE_AMG_RESETUP=0), bench/daemon-reuse.sh ALT=1, alternated daemons; test_amg_dsetup
# on the GPU.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; free -g; git log --oneline -1; nvidia-smi -L) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved test_amg_dsetup > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; cp /tmp/b1.log $R/; pack; exit 1; }
uptime >> $R/env.txt
(cd /tmp/b1/tests && timeout 200 ./test_amg_dsetup 2>&1 | grep -E "re-set-up|CHECK failed|FAIL|checks|device:" | tail -30) > $R/test_amg_dsetup.txt 2>&1
tail -3 $R/test_amg_dsetup.txt
ALT=1 MODES="resetup fresh" BUILD=/tmp/b1 N=256 REPS=6 ROUNDS=3 DEVICE=gpu WORK=/tmp/dr256 PORT=18900 bash bench/daemon-reuse.sh > $R/p256.txt 2>&1
tail -5 $R/p256.txt
ALT=1 MODES="resetup fresh" BUILD=/tmp/b1 N=128 REPS=6 ROUNDS=3 DEVICE=gpu WORK=/tmp/dr128 PORT=18800 bash bench/daemon-reuse.sh > $R/p128.txt 2>&1
tail -5 $R/p128.txt
uptime >> $R/env.txt
pack
