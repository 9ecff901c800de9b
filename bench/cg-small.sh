#!/usr/bin/env bash
# bench/cg-small.sh: does --method cg-small (the whole CG loop in one kernel
# launch and one work-group, solver/krylov/cg_small.c) pay on small systems?
# Issue 24, item 1. On a GPU machine:
#   bash bench/cg-small.sh [1138_bus.mtx]
#
# Builds clsolve (Release) unless CLSOLVE names a built one, then, with
# --precond jacobi at TOL, for 1138_bus (the argument, default
# ../shared/data/matrices/1138_bus.mtx) and the generated poisson2d 30, 100
# and 300 systems (gen:poisson2d:N, 900 to 90,000 rows), runs --method cg,
# cg-single and cg-small REPS times each (after one unrecorded warm-up run
# per system, which builds and caches the kernels) and prints, per system
# and method, the iterations and `clsolve solve --json`'s times.solve_s
# (min and median), the loop's own time (solve_s less the start and the
# true-residual confirmation: min and median), ms per iteration (min
# solve_s / iterations), the worst true relative residual, and which
# one-launch kernel ran (--json's loop_kernel). Runs
# alternate between the methods, so a drift of the machine hits all three.
# Every run's JSON line goes to $OUT/runs.jsonl. --method auto (the
# default, item 3) runs beside them: its row says which method it ran
# (cg or cg-small, from the device's figures, measured first by `clsolve
# tune --figures` into $OUT/tuning), so the choice can be checked against
# the measured times of the two.
#
#   CLSOLVE   a built clsolve (skips the build)
#   BUILD     build directory                       (default /tmp/b-cg-small)
#   REPS      repetitions per system and method     (default 5)
#   SIZES     poisson2d grid sizes                  (default "30 60 100 150 300")
#   METHODS   the methods run                       (default "cg cg-single cg-small auto")
#   DEVICE    --device                              (default gpu)
#   TOL       --tol                                 (default 1e-8)
#   OUT       output directory                      (default /tmp/cg-small-out)
# Budget: a few minutes on one H100/H200.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
BUS=${1:-${CLSOLVE_DATA:-$src/../shared/data}/matrices/1138_bus.mtx}
B=${BUILD:-/tmp/b-cg-small}
REPS=${REPS:-5}
SIZES=${SIZES:-30 60 100 150 300}
DEVICE=${DEVICE:-gpu}
TOL=${TOL:-1e-8}
OUT=${OUT:-/tmp/cg-small-out}
PY=${PY:-python3}
METHODS=${METHODS:-cg cg-single cg-small auto}
mkdir -p "$OUT"
: >"$OUT/runs.jsonl"
if [ -z "${CLSOLVE:-}" ]; then
    cmake -S "$src" -B "$B" -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
        cmake --build "$B" -j"$(nproc)" --target clsolve >>"$OUT/build.log" 2>&1 ||
        { echo "build failed: $OUT/build.log" >&2; exit 1; }
    CLSOLVE=$B/clsolve
fi
[ -f "$BUS" ] || { echo "no $BUS (give the 1138_bus.mtx path as the argument)" >&2; exit 1; }
echo "clsolve: $CLSOLVE ($("$CLSOLVE" --version 2>/dev/null | head -1))"
echo "device: $DEVICE; precond jacobi; tol $TOL; $REPS runs per method; load $(cut -d' ' -f1-3 /proc/loadavg)"
# the device's figures, which --method auto compares (solver/devfig.h)
export CLSOLVE_TUNE_DIR=$OUT/tuning
rm -rf "$CLSOLVE_TUNE_DIR"
"$CLSOLVE" tune --figures --device "$DEVICE" || echo "clsolve tune --figures failed: auto runs cg"

systems=("$BUS")
for n in $SIZES; do systems+=("gen:poisson2d:$n"); done

# run SYSTEM METHOD REP: one solve, its JSON summary appended to runs.jsonl
run() {
    "$CLSOLVE" solve "$1" --method "$2" --precond jacobi --tol "$TOL" --device "$DEVICE" --json \
        2>"$OUT/err" | $PY -c "
import json, sys
j = json.load(sys.stdin)
print(json.dumps({'system': sys.argv[1], 'method': sys.argv[2], 'rep': int(sys.argv[3]),
                  'rows': j.get('rows'), 'converged': j.get('converged'),
                  'iterations': j.get('iterations'), 'solve_s': j['times']['solve_s'],
                  'loop_s': j['times']['solve_s'] - j['times']['solve_start_s'] - j['times']['solve_confirm_s'],
                  'true_rel': j.get('true_relative_residual'), 'kernel': j.get('loop_kernel'),
                  'ran': j.get('method'), 'method_choice': j.get('method_choice'),
                  'device': (j.get('devices') or [{}])[0].get('name'),
                  'error': j.get('error')}))" "$1" "$2" "$3" >>"$OUT/runs.jsonl" ||
        echo "{\"system\": \"$1\", \"method\": \"$2\", \"rep\": $3, \"error\": \"$(tr -d '"\n' <"$OUT/err")\"}" >>"$OUT/runs.jsonl"
}

for s in "${systems[@]}"; do
    for m in $METHODS; do run "$s" "$m" 0; done # warm-up: kernels built and cached
    for r in $(seq 1 "$REPS"); do
        for m in $METHODS; do run "$s" "$m" "$r"; done
    done
done

$PY - "$OUT/runs.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
print("| system | rows | method (ran) | iterations | solve_s min | solve_s median | loop ms min / median | ms/iteration (min) | worst true residual | device |")
print("|---|---|---|---|---|---|---|---|---|---|")
seen = []
for r in runs:
    if (r["system"], r["method"]) not in seen:
        seen.append((r["system"], r["method"]))
for system, method in seen:
    rs = [r for r in runs if r["system"] == system and r["method"] == method and r["rep"] > 0]
    bad = [r for r in rs if r.get("error") or not r.get("converged")]
    name = system.rsplit("/", 1)[-1]
    if bad or not rs:
        print(f"| {name} | | {method} | failed: {(bad or [{}])[0].get('error')} | | | | | | |")
        continue
    t = [r["solve_s"] for r in rs]
    its = sorted({r["iterations"] for r in rs})
    ran = sorted({r.get("ran") or "?" for r in rs})
    label = method if ran == [method] else f"{method} ({'/'.join(ran)})"
    lp = [1e3 * r["loop_s"] for r in rs]
    tr = max(r.get("true_rel") or 0.0 for r in rs)
    print(f"| {name} | {rs[0]['rows']} | {label} | {'/'.join(map(str, its))} | {min(t):.4f} | "
          f"{statistics.median(t):.4f} | {min(lp):.2f} / {statistics.median(lp):.2f} | "
          f"{1e3 * min(t) / max(1, its[0]):.4f} | {tr:.1e} | {rs[0]['device']} |")
kernels = {}
for r in runs:
    if r.get("kernel") and r["rep"] > 0:
        kernels.setdefault((r["system"].rsplit("/", 1)[-1], r["method"]), r["kernel"])
for (name, method), k in kernels.items():
    print(f"{name}, {method}: {k}")
for r in runs:
    if r["method"] == "auto" and r["rep"] == 1 and r.get("method_choice"):
        print(f"auto on {r['system'].rsplit('/', 1)[-1]}: {r['method_choice']}")
PY
