#!/usr/bin/env bash
# bench/cg-batch.sh: many small systems in one launch (`clsolve solve A1 A2
# ...`, solver/krylov/cg_batch.c). Issue 24, item 2: "1,000 such systems
# (1138_bus) in one batch <= 50 ms on the device".
#   bash bench/cg-batch.sh [1138_bus.mtx]
#
# For K in COUNTS, a batch of K copies of 1138_bus (Jacobi, tol 1e-8), REPS
# runs each, for each work-group size in LOCALS ($CLSOLVE_CGB_LOCAL); prints
# the batch's device time (`--json` times.device_s: the launches and their
# reads, min and median) and the parse and total times. The peer in the same
# run: the best one-system path, --method cg-small (REPS runs, its solve_s),
# times K: what K jobs one after another would take on the device. Then a
# mixed batch (1138_bus, 494_bus and poisson2d 10..60) of MIXED systems.
#
#   CLSOLVE   a built clsolve (else built here, Release)
#   COUNTS    batch sizes, 2 or more          (default "10 100 1000")
#   LOCALS    work-group sizes                (default "128 256 512")
#   REPS      runs per point                  (default 3)
#   DEVICE    --device                        (default gpu)
#   OUT       output directory                (default /tmp/cg-batch-out)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
BUS=${1:-${CLSOLVE_DATA:-$src/../shared/data}/matrices/1138_bus.mtx}
COUNTS=${COUNTS:-10 100 1000}
LOCALS=${LOCALS:-128 256 512}
REPS=${REPS:-3}
DEVICE=${DEVICE:-gpu}
MIXED=${MIXED:-1000}
OUT=${OUT:-/tmp/cg-batch-out}
PY=${PY:-python3}
mkdir -p "$OUT"
if [ -z "${CLSOLVE:-}" ]; then
    cmake -S "$src" -B /tmp/b-cg-batch -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
        cmake --build /tmp/b-cg-batch -j"$(nproc)" --target clsolve >>"$OUT/build.log" 2>&1 ||
        { echo "build failed: $OUT/build.log" >&2; exit 1; }
    CLSOLVE=/tmp/b-cg-batch/clsolve
fi
echo "clsolve: $CLSOLVE; device $DEVICE; load $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$OUT/runs.jsonl"
# one: the peer, cg-small alone (after a warm-up)
"$CLSOLVE" solve "$BUS" --method cg-small --precond jacobi --device "$DEVICE" >/dev/null 2>&1
for r in $(seq 1 "$REPS"); do
    "$CLSOLVE" solve "$BUS" --method cg-small --precond jacobi --device "$DEVICE" --json 2>/dev/null |
        $PY -c "import json,sys; j=json.load(sys.stdin); print(json.dumps({'what': 'cg-small', 'k': 1, 'device_s': j['times']['solve_s'], 'iterations': j['iterations']}))" >>"$OUT/runs.jsonl"
done
# batch RUNS: K copies (or the mixed list) at each local size
batch() { # label local files...
    local label=$1 ls=$2
    shift 2
    CLSOLVE_CGB_LOCAL=$ls "$CLSOLVE" solve "$@" --precond jacobi --device "$DEVICE" --json 2>"$OUT/err" |
        $PY -c "
import json, sys
j = json.load(sys.stdin)
ok = sum(1 for s in j['systems'] if s['converged'])
print(json.dumps({'what': sys.argv[1], 'local': int(sys.argv[2]), 'k': j['systems_total'], 'ok': ok,
                  'device_s': j['times']['device_s'], 'parse_s': j['times']['parse_s'],
                  'total_s': j['times']['total_s'], 'rows': j['rows'],
                  'iterations_max': max(s.get('iterations', 0) for s in j['systems'])}))" "$label" "$ls" >>"$OUT/runs.jsonl"
}
for ls in $LOCALS; do
    batch warmup "$ls" "$BUS" "$BUS" # kernels built for this size
    for k in $COUNTS; do
        files=()
        for i in $(seq 1 "$k"); do files+=("$BUS"); done
        for r in $(seq 1 "$REPS"); do batch "1138_bus x$k" "$ls" "${files[@]}"; done
    done
done
mixed=()
for i in $(seq 1 "$MIXED"); do
    case $((i % 4)) in
    0) mixed+=("$BUS") ;;
    1) mixed+=("$(dirname "$BUS")/494_bus.mtx") ;;
    *) mixed+=("gen:poisson2d:$((10 + (i * 7) % 51))") ;;
    esac
done
for r in $(seq 1 "$REPS"); do batch "mixed x$MIXED" 256 "${mixed[@]}"; done
$PY - "$OUT/runs.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
one = [r["device_s"] for r in runs if r["what"] == "cg-small"]
t1 = min(one) if one else float("nan")
print(f"peer: cg-small alone, 1138_bus: solve_s min {1e3*t1:.2f} ms, median {1e3*statistics.median(one):.2f} ms")
print("| batch | local | systems converged | device ms min | median | K x cg-small alone | speed-up | parse s | total s |")
print("|---|---|---|---|---|---|---|---|---|")
keys = []
for r in runs:
    if r["what"] not in ("cg-small", "warmup") and (r["what"], r["local"]) not in keys:
        keys.append((r["what"], r["local"]))
for what, ls in keys:
    rs = [r for r in runs if r["what"] == what and r["local"] == ls]
    d = [r["device_s"] for r in rs]
    k = rs[0]["k"]
    peer = f"{1e3*k*t1:.1f} | {k*t1/min(d):.1f}x" if what.startswith("1138_bus") else "- | -"
    print(f"| {what} | {ls} | {min(r['ok'] for r in rs)}/{k} | {1e3*min(d):.2f} | {1e3*statistics.median(d):.2f} | "
          f"{peer} | {min(r['parse_s'] for r in rs):.3f} | {min(r['total_s'] for r in rs):.3f} |")
PY
