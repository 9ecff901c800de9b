#!/usr/bin/env bash
# bench/physics-curvature-deform.sh: the GPU measurements of the `deform`
# and `curvature` physics kinds (issue 6, sections 2 and 3), one call on the
# device machine:
#   source .devpack/setup.sh && bash bench/physics-curvature-deform.sh
# 1. correctness on the device: test_deform and test_curvature (they pick
#    the first device in discovery order: the GPU);
# 2. deform: u = U q for n = 2^14 .. 2^22, r = 10, 20, 30 (Wang 2015,
#    Table 4.4): kernel ms (profiling events, median of 50) beside an
#    OpenMP CPU run on the same machine, CPU/GPU beside the thesis's ratio,
#    and % of the floor (U read once + q + u written, over the measured copy
#    bandwidth). Target: >= 85% of the floor at n = 2^22.
# 3. curvature: saddle meshes of 200 k .. 1 M faces, ms per full estimate
#    (both launches, events, median of 20) for both estimators beside the
#    CPU double reference on 1 and all threads. Thesis: 8.3 ms at 1 M
#    polygons (GTX Titan X); target <= 1 ms at 1 M faces.
# Tables go to stdout and to $OUT/*.txt.
set -uo pipefail
OUT=${OUT:-/tmp/clsolve-out}
mkdir -p "$OUT"
B=${BUILD:-/tmp/b}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build "$B" --target bench_physics_cd test_deform test_curvature -j16 >/dev/null || {
    echo "build failed"; exit 1; }
export CLSOLVE_CACHE_DIR=${CLSOLVE_CACHE_DIR:-$B/bench-cache}
DATA=${CLSOLVE_DATA:-$(cd .. && pwd)/shared/data}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>/dev/null || true
nproc
echo "== correctness on the device"
"$B/tests/test_deform" "$DATA" | tee "$OUT/test_deform.txt" | tail -14
"$B/tests/test_curvature" "$DATA" | tee "$OUT/test_curvature.txt" | grep -E "device|checks"
echo "== deform: u = U q"
"$B/bench/bench_physics_cd" deform --device gpu --logn 14,16,18,20,22 --ranks 10,20,30 --reps 50 |
    tee "$OUT/bench-deform.txt"
echo "== curvature"
"$B/bench/bench_physics_cd" curvature --device gpu --faces 200000,400000,600000,800000,1000000 \
    --reps 20 | tee "$OUT/bench-curvature.txt"
