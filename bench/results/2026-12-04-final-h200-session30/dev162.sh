#!/bin/bash
# nvidia-h200 (session 30): HEAD's code on one more host, the single-GPU targets of issues 23 and 25
# in one call: test_amg_dsetup; p256 `clsolve solve` wall - solve (host-phases.sh, one build);
# p200 POSTed to clsolved --device gpu (host-path.sh, plain daemon); issue 25 at 256
# (precond.sh: jacobi, amg; eight together by bcg; CuPy's Jacobi CG beside).
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; free -g; git log --oneline -1; nvidia-smi -L) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved test_amg_dsetup > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; cp /tmp/b1.log $R/; pack; exit 1; }
echo "built $(date +%T)"; uptime >> $R/env.txt
(cd /tmp/b1/tests && timeout 120 ./test_amg_dsetup 2>&1 | grep -E "CHECK failed|FAIL|checks|device:" | tail -10) > $R/test_amg_dsetup.txt 2>&1
tail -2 $R/test_amg_dsetup.txt; pack
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --method bcg -b gen:random:8 --precond amg >/dev/null 2>&1
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu --method bcg -b gen:random:8 --precond jacobi >/dev/null 2>&1
echo "precond $(date +%T)"; uptime >> $R/env.txt
CLSOLVE=/tmp/b1/clsolve SIZES=256 PCS="jacobi amg" REUSE_SIZES= MULTI_PCS="jacobi amg" MULTI_METHODS=bcg REPS=3 PETSC=0 CUPY=1 OUT=$R/precond timeout 200 bash bench/precond.sh > $R/precond.txt 2>&1
rm -f $R/precond/*.err; tail -24 $R/precond.txt; pack
echo "host-phases $(date +%T)"; uptime >> $R/env.txt
WORK=/tmp/hph B=/tmp/b1/clsolve N=256 ROUNDS=5 DEVICE=gpu timeout 150 bash bench/host-phases.sh > $R/host-phases.txt 2>&1
tail -12 $R/host-phases.txt; rm -rf /tmp/hph; pack
echo "host-path $(date +%T)"; uptime >> $R/env.txt
WORK=/tmp/hp BUILD=/tmp/b1 N=200 REPS=5 DEVICE=gpu DAEMONS=plain timeout 150 bash bench/host-path.sh > $R/host-path.log 2>&1
tail -8 $R/host-path.log
uptime >> $R/env.txt; echo "end $(date +%T)"
pack
