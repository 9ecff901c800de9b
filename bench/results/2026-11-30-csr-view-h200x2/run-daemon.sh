#!/bin/bash
# 2 x H200: p200 POSTed to a 1-rank and a 2-rank daemon (host-path.sh, REPS=5),
# code of 57809a1 (a part's device order through la_csr_view)
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$OUT/r; mkdir -p $R
(nproc; uptime) > $R/env.txt
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j32 --target clsolve clsolved >/dev/null 2>&1
uptime >> $R/env.txt
WORK=/tmp/hp BUILD=/tmp/b1 N=200 REPS=5 DEVICE=gpu DAEMONS="plain np2" timeout 300 bash bench/host-path.sh > $R/hp.log 2>&1
echo "rc $?" >> $R/hp.log
uptime >> $R/env.txt
tar -C $OUT -czf $OUT/r.tgz r
