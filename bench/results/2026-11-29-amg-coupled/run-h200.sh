#!/usr/bin/env bash
# issue 25 item 2: coupled AMG set-up on the device; profile + tables
source .devpack/setup.sh >/dev/null 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/dev/null 2>&1 || { echo build failed; exit 1; }
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "load: $(cat /proc/loadavg)"
for np in 1 4 1 4; do
  CLSOLVE_AMG_PROFILE=1 timeout 200 mpirun --oversubscribe -x CLSOLVE_AMG_PROFILE -np $np /tmp/b1/clsolve solve gen:poisson3d:256 --device gpu --precond amg --precond-coupling coupled --json > $OUT/prof256-np$np.json 2> $OUT/prof256-np$np.err
  echo "== np $np rc=$?"; grep "amg coupled, rank [03]" $OUT/prof256-np$np.err
  python3 -c "import json; j=json.load(open('$OUT/prof256-np$np.json')); t=j['times']; print(j['iterations'], 'pc setup', t['precond_setup_s'], 'setup', t['setup_s'], 'solve', t['solve_s'])"
done
CLSOLVE=/tmp/b1/clsolve DEVICE=gpu SIZES="256" NPS="1 2 4" REPS=3 OUT=$OUT/r256 PY=python3 timeout 330 bash bench/amg-parts.sh > $OUT/amg-parts-256.txt 2>&1
cat $OUT/amg-parts-256.txt
CLSOLVE=/tmp/b1/clsolve DEVICE=gpu SIZES="320" NPS="1 4" REPS=1 OUT=$OUT/r320 PY=python3 timeout 150 bash bench/amg-parts.sh > $OUT/amg-parts-320.txt 2>&1
cat $OUT/amg-parts-320.txt
