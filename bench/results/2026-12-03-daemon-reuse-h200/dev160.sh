#!/bin/bash
# nvidia-h200 (session 28): the daemon keeps a hierarchy built on the device for the next job on the
# same matrix (4507cdf) against CLSOLVE_PC_DEVICE_CACHE=0 (built each job), bench/daemon-reuse.sh,
# poisson3d 256 and 128, amg (the GPU default: set up on the device), alternated daemons.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; free -g; git log --oneline -1; nvidia-smi -L) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; cp /tmp/b1.log $R/; pack; exit 1; }
uptime >> $R/env.txt
BUILD=/tmp/b1 N=128 REPS=5 ROUNDS=3 DEVICE=gpu WORK=/tmp/dr128 PORT=18800 bash bench/daemon-reuse.sh > $R/p128.txt 2>&1
tail -5 $R/p128.txt
BUILD=/tmp/b1 N=256 REPS=5 ROUNDS=3 DEVICE=gpu WORK=/tmp/dr256 PORT=18900 bash bench/daemon-reuse.sh > $R/p256.txt 2>&1
tail -5 $R/p256.txt
uptime >> $R/env.txt
pack
