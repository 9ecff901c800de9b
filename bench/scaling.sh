#!/usr/bin/env bash
# bench/scaling.sh: strong and weak scaling of the distributed solve on a
# machine with several GPUs (../shared/DEVICE.md), for docs/benchmarks.md:
#   source .devpack/setup.sh && bash bench/scaling.sh            # all GPUs
#   GPUS="1 2" bash bench/scaling.sh                              # a subset
#
# Strong scaling: poisson3d 320 (32.8 M rows, 7-point), G = 1, 2, 4 GPUs.
# Weak scaling: 16.8 M rows per GPU, as the grid 256 x 256 x (256 G), so
#   every size is exact (16 777 216 G rows) and every part is the same slab.
# Both with CG and pipelined CG, in two layouts (G = 1 is the one-part solve,
# the best single-device path; `clsolve bench`'s fused figure is printed too):
#   ranks   one rank per GPU:      mpirun -np G clsolve solve ... --device gpu
#   onerank one rank for all GPUs: mpirun -np 1 clsolve solve ... --device gpu
#                                  --devices-per-rank G
# The systems are generated in memory by every rank, only its own rows
# (clsolve solve gen:poisson3d:...), so no multi-GB file is written or parsed.
# Fixed work: --maxiter $ITERS with a tolerance no run reaches (--tol 1e-300;
# each run exits 4, "not converged", by design); ms per iteration is
# times.solve_s / iterations from --json (the start-up SpMV and dots are in
# solve_s, 1/ITERS of it). Speed-up: ms/it on 1 GPU over ms/it on G (same
# method); weak efficiency: ms/it on 1 GPU over ms/it on G.
# Output: a table on stdout, the JSON of every run and the table in $OUT.
# Budget: about 20 runs of 5-15 s each on 4 H200 (generation and upload
# dominate); well under 8 minutes.
# Smoke test on a CPU machine (two PoCL devices, small sizes):
#   POCL_DEVICES="pthread pthread" DEVICE=cpu GPUS="1 2" STRONG=poisson3d:40 \
#   WEAK_N=32 ITERS=10 EXTRA="--min-rows-per-part 1" CLSOLVE=build/clsolve \
#   bash bench/scaling.sh
# EXTRA: more `clsolve solve` options for every run. METHODS (default
# "cg pipecg"), NO_WEAK=1, NO_ONERANK=1, NO_SMALL=1 and NO_PROFILE=1 narrow
# the runs. SMALL (default poisson3d:160): the latency-bound strong case,
# every method on 1..G GPUs. The iteration profile (--profile, issue 28):
# a run of its own per method and G for STRONG and SMALL, tabled per rank
# in $OUT/profiles.txt.
set -uo pipefail
OUT=${OUT:-/tmp/clsolve-out}
mkdir -p "$OUT"
B=${BUILD:-/tmp/b}
ITERS=${ITERS:-300}
DEVICE=${DEVICE:-gpu}
STRONG=${STRONG:-poisson3d:320}
WEAK_N=${WEAK_N:-256}
if [ -z "${CLSOLVE:-}" ]; then
    cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$B" -j16 >/dev/null ||
        { echo "build failed" >&2; exit 1; }
    CLSOLVE=$B/clsolve
fi
"$CLSOLVE" devices | tee "$OUT/devices.txt"
NGPU=$("$CLSOLVE" devices --json | python3 -c "import json,sys; print(sum(1 for d in json.load(sys.stdin) if d['type']=='${DEVICE^^}'))")
if [ -z "${GPUS:-}" ]; then
    GPUS=1
    [ "$NGPU" -ge 2 ] && GPUS="$GPUS 2"
    [ "$NGPU" -ge 4 ] && GPUS="$GPUS 4"
fi
echo "GPUs found: $NGPU; measuring G = $GPUS; $ITERS iterations per run"
MPI=(mpirun --oversubscribe --bind-to none)
[ -n "${POCL_DEVICES:-}" ] && MPI+=(-x POCL_DEVICES)
# the A/B switches of the halo's queue and the host's waits (ocl.h, la_dist.h)
for v in CLSOLVE_HALO_QUEUE CLSOLVE_EVENT_WAIT; do [ -n "${!v:-}" ] && MPI+=(-x "$v"); done
RESULTS=$OUT/scaling-runs.txt
: >"$RESULTS"

# run KIND G LAYOUT METHOD SPEC
run() {
    local kind=$1 g=$2 layout=$3 method=$4 spec=$5
    local tag=$kind-g$g-$layout-$method
    local np=$g extra=()
    # shellcheck disable=SC2206
    [ -n "${EXTRA:-}" ] && extra=($EXTRA)
    if [ "$layout" = onerank ]; then np=1; extra+=(--devices-per-rank "$g"); fi
    # one engine (2026-11): G = 1 is the one-part solve, the best single-device
    # time clsolve has, and every speed-up below is against it
    local t0=$SECONDS
    "${MPI[@]}" -np "$np" "$CLSOLVE" solve "$spec" --device "$DEVICE" "${extra[@]}" --method "$method" \
        --maxiter "$ITERS" --tol 1e-300 --json >"$OUT/$tag.json" 2>"$OUT/$tag.err"
    local rc=$?
    if [ $rc -ne 4 ] && [ $rc -ne 0 ]; then
        echo "$tag: exit $rc: $(grep -v '^[- ]' "$OUT/$tag.err" | head -3)" >&2
        return
    fi
    python3 - "$OUT/$tag.json" "$kind" "$g" "$layout" "$method" "$((SECONDS - t0))" >>"$RESULTS" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
kind, g, layout, method, wall = sys.argv[2:]
devs = sorted({d["name"] for d in j["devices"]})
print(kind, g, layout, method, j["rows"], j["iterations"],
      "%.4f" % (1e3 * j["times"]["solve_s"] / max(1, j["iterations"])),
      j["parts"]["total"], j["parts"]["ranks"], j["parts"]["devices_per_rank"],
      "%.1f" % j["times"]["setup_s"], wall, "|".join(devs).replace(" ", "_"))
PY
    tail -1 "$RESULTS"
}

# the fused kernels alone on one device, for reference (clsolve bench)
N_STRONG=${STRONG##*:}
case "$N_STRONG" in *x*) ;; *)
    "$CLSOLVE" bench --device "$DEVICE" --sizes "$N_STRONG" --no-classic --json >"$OUT/bench.json" 2>/dev/null &&
        python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print('clsolve bench, one device, N=%d: %.4f ms/iteration (%s)' % (r['n'], r['ms_per_iteration'], r['format_detail']))" "$OUT/bench.json" ;;
esac
for method in ${METHODS:-cg pipecg}; do
    for g in $GPUS; do
        run strong "$g" ranks "$method" "gen:$STRONG"
        [ "$g" -gt 1 ] && [ -z "${NO_ONERANK:-}" ] && run strong "$g" onerank "$method" "gen:$STRONG"
        [ -n "${NO_WEAK:-}" ] && continue
        weak="gen:poisson3d:${WEAK_N}x${WEAK_N}x$((WEAK_N * g))"
        run weak "$g" ranks "$method" "$weak"
        [ "$g" -gt 1 ] && run weak "$g" onerank "$method" "$weak"
    done
done

# the latency-bound strong case (small parts): every method, one rank per GPU
if [ -n "${SMALL:-poisson3d:160}" ] && [ -z "${NO_SMALL:-}" ]; then
    for method in ${METHODS:-cg pipecg}; do
        for g in $GPUS; do run small "$g" ranks "$method" "gen:${SMALL:-poisson3d:160}"; done
    done
fi

# the iteration profile (--profile, a run of its own so that the timed runs
# create no events): every step of an iteration per rank, G > 1, strong
PROFILES=$OUT/profiles.txt
: >"$PROFILES"
if [ -z "${NO_PROFILE:-}" ]; then
    for method in ${METHODS:-cg pipecg}; do
        for g in $GPUS; do
            for spec in "$STRONG" ${SMALL:-poisson3d:160}; do
                tag=profile-${spec//[:x]/-}-g$g-$method
                "${MPI[@]}" -np "$g" "$CLSOLVE" solve "gen:$spec" --device "$DEVICE" ${EXTRA:-} \
                    --method "$method" --maxiter "$ITERS" --tol 1e-300 --json --profile \
                    >"$OUT/$tag.json" 2>"$OUT/$tag.err"
                python3 - "$OUT/$tag.json" "$spec" "$g" "$method" >>"$PROFILES" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
spec, g, method = sys.argv[2:]
p = j["profile"]
print("### %s, %s GPU(s), %s: %.4f ms/iteration (loop), profile in us per iteration" %
      (spec, g, method, j["times"]["loop_ms_per_iteration"]))
steps = list(p["ranks"][0]["parts"][0]["steps"]) if p["ranks"][0]["parts"] else []
waits = list(p["ranks"][0]["host_waits"])
print("| rank | wall | " + " | ".join("host: " + w for w in waits) + " | host other | device busy | device idle | " + " | ".join(steps) + " | commands |")
print("|" + "---|" * (6 + len(waits) + len(steps)))
for r in p["ranks"]:
    for d in r["parts"] or [None]:
        cells = ["%d" % r["rank"], "%.1f" % r["wall"]] + ["%.1f" % r["host_waits"][w] for w in waits] + ["%.1f" % r["host_other"]]
        if d:
            cells += ["%.1f" % d["device_busy"], "%.1f" % d["device_idle"]] + ["%.1f" % d["steps"][s] for s in steps] + ["%.2f" % d["commands"]]
        else:
            cells += ["-"] * (3 + len(steps))
        print("| " + " | ".join(cells) + " |")
for r in p["ranks"]:
    for d in r["parts"]:
        print("rank %d: device idle %.1f us/it, before: %s; copy queue %.1f" % (r["rank"], d["device_idle"],
              ", ".join("%s %.1f" % (k, v) for k, v in d["idle_before"].items() if v >= 0.05), d["copy_queue_busy"]))
print()
PY
            done
        done
    done
    cat "$PROFILES"
fi

python3 - "$RESULTS" <<'PY' | tee "$OUT/scaling.md"
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
base = {}
best = {}
for r in rows:
    kind, g, layout, method = r[0], int(r[1]), r[2], r[3]
    if g == 1 and layout == "ranks":
        base[(kind, method)] = float(r[6])
        best[kind] = min(best.get(kind, 1e30), float(r[6]))
print("| scaling | GPUs | layout | method | rows | ms/iteration | %s | vs the best single GPU | parts | setup s | devices |"
      % "speed-up (strong) / efficiency (weak)")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in sorted(rows, key=lambda r: (r[0], r[3], int(r[1]), r[2])):
    kind, g, layout, method, n, its, ms, parts, ranks, dpr, setup, wall, devs = r
    b = base.get((kind, method))
    if b is None:
        rel = "-"
    elif kind == "strong":
        rel = "%.2fx" % (b / float(ms))
    else:
        rel = "%.0f%%" % (100 * b / float(ms))
    lay = ("1 rank/GPU" if layout == "ranks" else "local engine (reference)"
           if layout == "local" else "1 rank, %s GPUs" % dpr)
    vb = ("%.2fx" % (best[kind] / float(ms))) if kind in best else "-"
    print("| %s | %s | %s | %s | %.1f M | %s | %s | %s | %s | %s | %s |"
          % (kind, g, lay, method, int(n) / 1e6, ms, rel, vb, parts, setup, devs.replace("_", " ")))
print()
print("Targets (issue 28): strong >= 1.9x on 2 GPUs, >= 3.6x on 4 against the best single GPU; weak efficiency >= 90%.")
print("Bueno (2013): 2.70x on three Tesla C1060, single precision, order 10^7.")
PY
