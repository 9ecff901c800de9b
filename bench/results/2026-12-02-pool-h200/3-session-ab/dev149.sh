#!/bin/bash
# nvidia-h200: the session's code (the pool, the solution's long poll) against the session's
# start (3491a2b): bench/host-phases.sh on p256, 10 rounds alternated (two builds); the GPU
# host's unit tests for what the pool touches (16 members): test_parallel, test_formats,
# test_amg_dsetup, test_la, test_sparse, test_halo.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1) > $R/env.txt 2>&1
mkdir -p /tmp/s0 && tar -C /tmp/s0 -xzf .devdata/old-3491a2b.tgz
T="clsolve test_parallel test_formats test_amg_dsetup test_la test_sparse test_halo"
cmake -S /tmp/s0 -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j8 --target clsolve > /tmp/b0.log 2>&1 &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target $T > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
wait
[ -x /tmp/b0/clsolve ] || { tail -20 /tmp/b0.log; exit 1; }
uptime >> $R/env.txt
for t in test_parallel test_formats test_amg_dsetup test_la test_sparse test_halo; do
  (cd /tmp/b1/tests && timeout 300 ./$t > /tmp/$t.out 2>&1; echo "$t exit $?"; grep -E "CHECK failed|FAIL" /tmp/$t.out | head -5; tail -1 /tmp/$t.out) >> $R/tests.txt 2>&1
done
cat $R/tests.txt
uptime >> $R/env.txt
WORK=/tmp/hph A=/tmp/b0/clsolve B=/tmp/b1/clsolve N=256 ROUNDS=10 DEVICE=gpu bash bench/host-phases.sh > $R/host-phases.txt 2>&1
cp /tmp/hph/traces.txt $R/ && gzip $R/traces.txt
uptime >> $R/env.txt
tail -24 $R/host-phases.txt
pack
