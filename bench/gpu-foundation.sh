#!/usr/bin/env bash
# bench/gpu-foundation.sh: the Foundation issue's GPU measurements in one call
# on the device machine (../shared/DEVICE.md):
#   source .devpack/setup.sh && bash bench/gpu-foundation.sh
# 1. clsolve bench: ms per CG iteration for poisson3d N = 64, 128, 256, against
#    the bandwidth floor measured in the same process;
# 2. Matrix Market parse throughput: clsolve's reader at 1, 4, 16 threads
#    beside scipy's mmread on the same file, in the same command.
# Results go to stdout and, when $OUT is set, to $OUT/*.json.
set -uo pipefail
OUT=${OUT:-/tmp/clsolve-out}
mkdir -p "$OUT"
B=${BUILD:-/tmp/b}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$B" -j16 >/dev/null || {
    echo "build failed"; exit 1; }
C=$B/clsolve
$C devices
echo "== CG per iteration (double, poisson3d)"
$C bench --sizes 64,128,256 --iters 200 | tee "$OUT/bench-cg.txt"
$C bench --sizes 64,128,256 --iters 200 --json >"$OUT/bench-cg.json"
echo "== Jacobi-PCG and float, N = 128"
$C gen poisson3d 128 -o /tmp/p128.mtx >/dev/null
$C solve /tmp/p128.mtx --precond jacobi --tol 1e-8 --json >"$OUT/solve-p128.json"
python3 -c "import json;j=json.load(open('$OUT/solve-p128.json'));print('p128 jacobi:',j['iterations'],'its',j['times'],j['true_relative_residual'],j['devices'][0]['name'])"
echo "== parse throughput: poisson3d 150, general storage"
$C gen poisson3d 150 --general -o /tmp/p150.mtx >/dev/null
ls -l /tmp/p150.mtx
cat /tmp/p150.mtx >/dev/null # page cache warm for both readers
for t in 1 4 16; do
    $C check /tmp/p150.mtx --threads $t --json >"$OUT/parse-$t.json"
    python3 -c "import json;j=json.load(open('$OUT/parse-$t.json'));p=j['parse'];print('clsolve threads=%d: %.3f s, %.0f MB/s'%(p['threads'],p['seconds'],p['mb_per_s']))"
done
python3 - <<'PY'
import os, time, scipy, scipy.io
f = "/tmp/p150.mtx"
size = os.path.getsize(f)
best = None
for _ in range(2):
    t = time.perf_counter()
    A = scipy.io.mmread(f)
    dt = time.perf_counter() - t
    best = dt if best is None else min(best, dt)
print("scipy %s mmread: %.3f s, %.0f MB/s (nnz %d)" % (scipy.__version__, best, size / best / 1e6, A.nnz))
PY
