#!/bin/bash
# nvidia-h200: the session's final code on the daemon scenario: p200 POSTed to clsolved, x back
# as .npy (three requests) and by the solution's long poll (one request after the POST), beside
# the CLI (bench/host-path.sh, REPS=5); then p256's phases, the pool off / on (host-phases.sh).
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
uptime >> $R/env.txt
WORK=/tmp/hp BUILD=/tmp/b1 N=200 REPS=5 DEVICE=gpu DAEMONS=plain timeout 300 bash bench/host-path.sh > $R/host-path.log 2>&1
tail -8 $R/host-path.log
uptime >> $R/env.txt
WORK=/tmp/hph B=/tmp/b1/clsolve A_ENV="CLS_POOL=0" N=256 ROUNDS=8 DEVICE=gpu bash bench/host-phases.sh > $R/host-phases.txt 2>&1
tail -21 $R/host-phases.txt
uptime >> $R/env.txt
pack
