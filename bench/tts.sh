#!/usr/bin/env bash
# bench/tts.sh: time to solution on one GPU host, from the bytes to x (issue
# 13), in one command beside the peer a Python user would take:
#   1. poisson3d N (default 256) from a .mtx in the page cache, Jacobi, tol
#      1e-8: wall clock around `clsolve solve` and every phase of its
#      --json `times` (REPS runs), then the same file through scipy.io.mmread
#      + CuPy's Jacobi CG (bench/peers/cupy_tts.py);
#   2. gen:poisson3d:N, 300 iterations: generation (parse_s) and the rest;
#   3. one trace of each (CLSOLVE_TRACE=1, CLSOLVE_MM_PROFILE=1);
#   4. a small system (1138_bus) on the GPU, on the CPU device and with
#      --device auto once both devices' figures are measured (`clsolve tune
#      --figures`), where the host's CPU OpenCL device works.
#   CLSOLVE=/tmp/b/clsolve DATA=.devpack/data N=256 REPS=3 bash bench/tts.sh
# Builds nothing. Prints one line per run and a summary table last.
set -uo pipefail
C=${CLSOLVE:-/tmp/b/clsolve}
DATA=${DATA:-.devpack/data}
N=${N:-256}
REPS=${REPS:-3}
PY=${PY:-python3}
OUTDIR=${OUT:-/tmp}
export CLSOLVE_TUNE_DIR=${CLSOLVE_TUNE_DIR:-/tmp/tts-tuning}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
M=/tmp/p$N.mtx
[ -s "$M" ] || "$C" gen poisson3d "$N" -o "$M" >/dev/null
cat "$M" >/dev/null # in the page cache, as the issue's figure
ls -l "$M"
phases() { # phases LABEL: reads clsolve --json on stdin
    $PY -c "
import json, sys
j = json.load(sys.stdin)
t = j['times']
keys = ['startup_s', 'parse_s', 'partition_s', 'init_s', 'upload_s', 'solve_s', 'gather_s', 'write_s', 'total_s']
print('$1', j.get('iterations'), j.get('converged'), ' '.join('%s=%.3f' % (k[:-2], t[k]) for k in keys if k in t),
      'device=%s' % j['devices'][0]['name'] if j.get('devices') else '', j.get('device_choice', ''))"
}
for r in $(seq 1 "$REPS"); do
    s=$(date +%s.%N)
    "$C" solve "$M" --device gpu --precond jacobi --tol 1e-8 --json 2>/dev/null >/tmp/tts.json
    e=$(date +%s.%N)
    echo "mtx$N run $r: wall $($PY -c "print(round($e - $s, 3))") s"
    phases "mtx$N" </tmp/tts.json
done
for r in 1 2; do
    $PY bench/peers/cupy_tts.py "$M" --tol 1e-8 2>&1 | tail -1
done
for r in $(seq 1 "$REPS"); do
    s=$(date +%s.%N)
    "$C" solve gen:poisson3d:$N --device gpu --maxiter 300 --tol 1e-300 --json 2>/dev/null >/tmp/tts.json
    e=$(date +%s.%N)
    echo "gen$N run $r: wall $($PY -c "print(round($e - $s, 3))") s"
    phases "gen$N" </tmp/tts.json
done
echo "--- traces"
CLSOLVE_TRACE=1 CLSOLVE_MM_PROFILE=1 "$C" solve "$M" --device gpu --precond jacobi --tol 1e-8 2>&1 |
    grep -E "trace|mm_read|times"
CLSOLVE_TRACE=1 "$C" solve gen:poisson3d:$N --device gpu --maxiter 300 --tol 1e-300 2>&1 |
    grep -E "trace|times"
echo "--- small systems: GPU, CPU device, auto"
BUS=$DATA/1138_bus.mtx
"$C" devices 2>&1 | head -8
for dev in gpu cpu; do
    timeout 300 "$C" tune --figures --device $dev 2>&1 | tail -3
done
for m in "$BUS" gen:poisson3d:16 gen:poisson3d:32 gen:poisson3d:48 gen:poisson3d:64 gen:poisson3d:96; do
    for dev in gpu cpu auto; do
        for r in 1 2; do
            timeout 300 "$C" solve "$m" --device $dev --precond jacobi --tol 1e-8 --json 2>/tmp/tts.err >/tmp/tts.json &&
                phases "small $(basename "$m") $dev" </tmp/tts.json || echo "small $(basename "$m") $dev: failed: $(tail -2 /tmp/tts.err)"
        done
    done
done
