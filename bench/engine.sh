#!/usr/bin/env bash
# bench/engine.sh: the one-engine measurement (issue 11) on one GPU, in one
# command, for docs/benchmarks.md:
#   source .devpack/setup.sh && bash bench/engine.sh
#
# For poisson3d N = 128, 256, 320 (7-point, generated in memory by every
# rank: gen:poisson3d:N) and ITERS = 300 and 1000 iterations of CG:
#   bench    `clsolve bench`'s fused CG per iteration (the kernels alone,
#            the best single-device figure clsolve has)
#   solve1   `clsolve solve` on one rank: ms per iteration = solve_s / ITERS,
#            and solve_s against ITERS x bench's figure (no fixed costs)
#   solve2   `mpirun -np 2 clsolve solve`, both ranks on the one GPU (two
#            parts, the halo through host memory, one MPI reduction per
#            iteration) against solve1
# Fixed work: --maxiter ITERS --tol 1e-300 (every run ends "not converged",
# exit 4, by design). Each run is repeated REPS times: min and median.
# Beside them in the same command: ViennaCL 1.7.1 (OpenCL) and CuPy
# (cupyx.scipy.sparse.linalg.cg on cuSPARSE), 200 iterations each.
# The floor: the bytes a CG iteration must move (matrix once: 12 bytes per
# nonzero + 4 per row pointer; vectors: 8 n reads/writes of 8 bytes) over the
# copy bandwidth `clsolve bench` measures in-process.
# Budget: about 5 minutes on one H100/H200.
set -uo pipefail
OUT=${OUT:-/tmp/clsolve-out}
mkdir -p "$OUT"
B=${BUILD:-/tmp/b}
SIZES=${SIZES:-128 256 320}
ITERS_LIST=${ITERS_LIST:-300 1000}
REPS=${REPS:-3}
DEVICE=${DEVICE:-gpu}
if [ -z "${CLSOLVE:-}" ]; then
    cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$B" -j16 >/dev/null ||
        { echo "build failed" >&2; exit 1; }
    CLSOLVE=$B/clsolve
fi
( g++ -O3 -std=c++11 -DCL_TARGET_OPENCL_VERSION=120 bench/peers/viennacl_cg.cpp -lOpenCL \
      -o /tmp/vcl >"$OUT/vcl-build.log" 2>&1 && echo ok >"$OUT/vcl-built" ) &
VCL_PID=$!
"$CLSOLVE" devices | tee "$OUT/devices.txt"
MPI=(mpirun --oversubscribe --bind-to none)
RUNS=$OUT/engine-runs.jsonl
: >"$RUNS"
sizes_csv=$(echo $SIZES | tr ' ' ',')
echo "== clsolve bench --sizes $sizes_csv"
"$CLSOLVE" bench --device "$DEVICE" --sizes "$sizes_csv" --no-classic --json >"$OUT/bench.json" 2>"$OUT/bench.err"
python3 - "$OUT/bench.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(json.dumps(j)[:1500])
PY
for n in $SIZES; do
    for it in $ITERS_LIST; do
        for np in 1 2; do
            for rep in $(seq 1 "$REPS"); do
                f=$OUT/solve-n$n-it$it-np$np-r$rep.json
                "${MPI[@]}" -np $np "$CLSOLVE" solve gen:poisson3d:$n --device "$DEVICE" \
                    --maxiter $it --tol 1e-300 --json >"$f" 2>"$f.err"
                python3 - "$f" $n $it $np >>"$RUNS" <<'PY'
import json, sys
f, n, it, np_ = sys.argv[1:]
try:
    j = json.load(open(f))
except Exception as e:
    print(json.dumps({"n": int(n), "iters": int(it), "np": int(np_), "error": str(e)}))
    sys.exit(0)
t = j.get("times", {})
print(json.dumps({"n": int(n), "iters": int(it), "np": int(np_), "iterations": j.get("iterations"),
                  "solve_s": t.get("solve_s"), "setup_s": t.get("setup_s"),
                  "parse_s": t.get("parse_s"), "total_s": t.get("total_s"),
                  "start_s": t.get("solve_start_s"), "confirm_s": t.get("solve_confirm_s"),
                  "loop_ms": t.get("loop_ms_per_iteration"),
                  "parts": j.get("parts"), "engine": j.get("engine"),
                  "format": [d.get("format") for d in j.get("devices", [])],
                  "error": j.get("error")}))
PY
            done
        done
    done
done
# time to solution (issue 13's cases), per phase, wall clock around the command
echo "== time to solution"
TTS=$OUT/tts.txt
: >"$TTS"
tts() { # LABEL clsolve-solve-args...
    local label=$1
    shift
    local t0 t1
    t0=$(date +%s.%N)
    "$CLSOLVE" solve "$@" --json >"$OUT/tts-$label.json" 2>"$OUT/tts-$label.err"
    t1=$(date +%s.%N)
    python3 - "$OUT/tts-$label.json" "$label" "$t0" "$t1" >>"$TTS" <<'PY'
import json, sys
f, label, t0, t1 = sys.argv[1:]
j = json.load(open(f))
t = j["times"]
print(f"| {label} | {float(t1) - float(t0):.3f} | {t['parse_s']:.3f} | {t['setup_s']:.3f} | {t['solve_s']:.3f} | {t['total_s']:.3f} | {j['iterations']} | {j.get('converged')} |")
PY
}
tts gen256-jacobi gen:poisson3d:256 --device "$DEVICE" --precond jacobi --tol 1e-8
tts gen256-300 gen:poisson3d:256 --device "$DEVICE" --maxiter 300 --tol 1e-300
if [ -n "${TTS_FILE:-1}" ]; then
    "$CLSOLVE" gen poisson3d 256 -o /tmp/p256.mtx >/dev/null
    cat /tmp/p256.mtx >/dev/null # in the page cache, as the issue measured
    tts mtx256-jacobi /tmp/p256.mtx --device "$DEVICE" --precond jacobi --tol 1e-8
    rm -f /tmp/p256.mtx
fi
BUS=${BUS:-../shared/data/matrices/1138_bus.mtx}
[ -f "$BUS" ] && tts 1138bus-jacobi "$BUS" --device "$DEVICE" --precond jacobi
echo "| case | wall s | parse s | setup s | solve s | total s | iterations | converged |"
echo "|---|---|---|---|---|---|---|---|"
cat "$TTS"
wait $VCL_PID
PEERS=$OUT/peers.jsonl
: >"$PEERS"
for n in $SIZES; do
    [ -f "$OUT/vcl-built" ] && timeout 60 /tmp/vcl $n 200 3 >>"$PEERS"
    timeout 90 python3 bench/peers/cupy_cg.py --n $n --iters 200 >>"$PEERS"
done
python3 - "$OUT" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]
bench = json.load(open(os.path.join(out, "bench.json")))
rows = bench if isinstance(bench, list) else bench.get("rows", bench.get("results", []))
bms, floor = {}, {}
for r in rows:
    n = r.get("n") or r.get("size")
    ms = r.get("fused_ms") or r.get("ms_per_iteration") or r.get("fused", {}).get("ms")
    if n and ms:
        bms[int(n)] = float(ms)
    fl = r.get("floor_ms")
    if n and fl:
        floor[int(n)] = float(fl)
runs = [json.loads(l) for l in open(os.path.join(out, "engine-runs.jsonl"))]
peers = {}
for l in open(os.path.join(out, "peers.jsonl")):
    try:
        j = json.loads(l)
    except Exception:
        continue
    peers[("viennacl" if "viennacl" in j.get("peer", "") else "cupy", j["n"])] = j["ms_per_iteration"]
print("\n| N | iters | bench ms/it | floor ms/it | solve 1 rank ms/it (min / median) | solve_s vs iters x bench | 2 ranks on 1 GPU ms/it (min / median) | 2 ranks / 1 rank | ViennaCL | CuPy |")
print("|---|---|---|---|---|---|---|---|---|---|")
for n in sorted({r["n"] for r in runs}):
    for it in sorted({r["iters"] for r in runs if r["n"] == n}):
        def ms(np_):
            v = [r["solve_s"] * 1e3 / it for r in runs
                 if r["n"] == n and r["iters"] == it and r["np"] == np_ and r.get("solve_s")]
            return (min(v), statistics.median(v)) if v else (None, None)
        m1, m2 = ms(1), ms(2)
        b = bms.get(n)
        f = lambda v: "%.3f" % v if v is not None else "-"
        ratio = "%.2fx" % (m1[0] / b) if b and m1[0] else "-"
        r2 = "%.2fx" % (m2[0] / m1[0]) if m1[0] and m2[0] else "-"
        print(f"| {n} | {it} | {f(b)} | {f(floor.get(n))} | {f(m1[0])} / {f(m1[1])} | {ratio} | {f(m2[0])} / {f(m2[1])} | {r2} | {f(peers.get(('viennacl', n)))} | {f(peers.get(('cupy', n)))} |")
print("\nWhere solve_s goes (1 rank, medians): start = workspace + initial residual; confirm = true-residual checks; loop = the iterations alone")
print("| N | iters | solve_s | start_s | confirm_s | loop ms/it | setup_s | parse (generation) s |")
print("|---|---|---|---|---|---|---|---|")
for n in sorted({r["n"] for r in runs}):
    for it in sorted({r["iters"] for r in runs if r["n"] == n}):
        sel = [r for r in runs if r["n"] == n and r["iters"] == it and r["np"] == 1 and r.get("solve_s")]
        if not sel:
            continue
        med = lambda k: statistics.median([r[k] for r in sel if r.get(k) is not None] or [float("nan")])
        print(f"| {n} | {it} | {med('solve_s'):.3f} | {med('start_s'):.3f} | {med('confirm_s'):.3f} | {med('loop_ms'):.3f} | {med('setup_s'):.3f} | {med('parse_s'):.3f} |")
errs = [r for r in runs if r.get("error") and "not converged" not in str(r.get("error"))]
for r in errs:
    print("run error:", r)
PY
