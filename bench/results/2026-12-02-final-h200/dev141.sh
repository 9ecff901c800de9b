#!/bin/bash
# nvidia-h200: the session's final code on the GPU: test_amg_dsetup and test_formats; issue 25's targets
# at 256 (bench/precond.sh: jacobi, amg; eight together by bcg), medians of 3
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline -1) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve test_amg_dsetup test_formats > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
for t in test_amg_dsetup test_formats; do (cd /tmp/b1/tests && timeout 300 ./$t 2>&1 | grep -E "CHECK failed|FAIL|checks" | tail -5) > $R/$t.txt 2>&1; done
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --method bcg -b gen:random:8 --precond amg >/dev/null 2>&1
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --method bcg -b gen:random:8 --precond jacobi >/dev/null 2>&1
uptime >> $R/env.txt
CLSOLVE=/tmp/b1/clsolve SIZES=256 PCS="jacobi amg" REUSE_SIZES= MULTI_PCS="jacobi amg" MULTI_METHODS=bcg REPS=3 PETSC=0 CUPY=0 OUT=$R/precond bash bench/precond.sh > $R/precond.txt 2>&1
uptime >> $R/env.txt
rm -f $R/precond/*.err
tail -22 $R/precond.txt > $R/summary.txt
cat $R/env.txt $R/test_*.txt $R/summary.txt
