#!/bin/bash
# nvidia-h200 (session 30): issue 25's 256 row beside its peer: clsolve jacobi and amg with CuPy's
# Jacobi CG (cuSPARSE) in the same command (PY=python3: the device's /usr/bin/python3 has no cupy).
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline -1; python3 -c 'import cupy; print("cupy", cupy.__version__)') > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
uptime >> $R/env.txt
CLSOLVE=/tmp/b1/clsolve SIZES=256 PCS="jacobi amg" REUSE_SIZES= MULTI_PCS= REPS=3 PETSC=0 CUPY=1 PY=python3 OUT=$R/precond timeout 300 bash bench/precond.sh > $R/precond.txt 2>&1
cat $R/precond/cupy256.err | tail -5; rm -f $R/precond/*.err $R/precond/p256-*.json
uptime >> $R/env.txt
cat $R/env.txt; grep -v "run [0-9]" $R/precond.txt | head -20
tar -C $OUT -czf $OUT/r.tgz r
