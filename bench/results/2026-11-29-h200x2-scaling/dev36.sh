#!/usr/bin/env bash
# issue 28: where the device waits (idle_before), 2 x H200, cg-single and cg, 320 and 160
source .devpack/setup.sh >/dev/null 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/dev/null 2>&1 || { echo build failed; exit 1; }
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for m in cg-single cg; do for n in 320 160; do
  mpirun --oversubscribe --bind-to none -np 2 /tmp/b1/clsolve solve gen:poisson3d:$n --device gpu --method $m --maxiter 300 --tol 1e-300 --profile 2>&1 | grep -E "profile|rank|device" | sed "s/^/$m $n: /"
done; done
for m in cg-single; do for n in 320; do
  mpirun --oversubscribe --bind-to none -np 1 /tmp/b1/clsolve solve gen:poisson3d:$n --device gpu --devices-per-rank 2 --method $m --maxiter 300 --tol 1e-300 --profile --json > $OUT/onerank.json 2>&1
  python3 -c "import json; j=json.load(open('$OUT/onerank.json')); [print('onerank', d['device_idle'], d['idle_before']) for r in j['profile']['ranks'] for d in r['parts']]"
done; done
