#!/usr/bin/env bash
# bench/amg.sh: the AMG preconditioner on one device: set-up by phase,
# upload, ms per V-cycle, PCG iterations and time to solution at
# poisson3d N, beside Jacobi-PCG (clsolve's engine) and, optionally, PETSc
# GAMG and hypre BoomerAMG (petsc4py) on the host's CPUs, in one command.
# Builds nothing: it runs the binaries named by these variables.
#
#   BENCH_AMG   the built bench_amg (required), e.g. build/bench/bench_amg
#   CLSOLVE     the built clsolve (optional): Jacobi-PCG through the engine,
#               `clsolve solve gen:poisson3d:N --precond jacobi --json`
#   SIZES       poisson3d sizes                 (default "128 256 320"; "" for none)
#   DEVICE      --device for both               (default gpu)
#   REPS        set-ups and solves per size     (default 3; medians)
#   TOL         relative tolerance              (default 1e-8)
#   PEERS       1: PETSc GAMG and BoomerAMG too (default 0; needs
#               /usr/bin/python3 with petsc4py, deploy/install-deps.sh --bench)
#   PEER_NP     ranks for the peers             (default "1")
#   EXTRA       more bench_amg options (e.g. "--smoother l1-jacobi")
#   MATRICES    Matrix Market files solved with jacobi, ic0 and amg through
#               CLSOLVE, and by the peers when PEERS=1: iterations side by
#               side, b = A 1 for all (default bench/data/bcsstk13.mtx.gz, the
#               issue's; "" for none)
#   OUT         folder for the raw JSON and logs (default: a temporary one)
#
# GPU host:   BENCH_AMG=build/bench/bench_amg CLSOLVE=build/clsolve bash bench/amg.sh
# 2-core PoCL, against PETSc on 1 and 2 ranks:
#   BENCH_AMG=build/bench/bench_amg CLSOLVE=build/clsolve DEVICE=cpu SIZES=64 \
#     PEERS=1 PEER_NP="1 2" bash bench/amg.sh
# Time to solution (tts) counts what a solve pays after the matrix is in
# host memory: AMG = matrix upload + AMG set-up + AMG upload + PCG;
# Jacobi = clsolve's upload_s + solve_s. "10 rhs" is derived: one set-up
# and ten solves (reuse) against ten Jacobi solves.
set -euo pipefail
: "${BENCH_AMG:?set BENCH_AMG to the built bench_amg}"
SIZES=${SIZES-128 256 320}
DEVICE=${DEVICE:-gpu}
REPS=${REPS:-3}
TOL=${TOL:-1e-8}
PEERS=${PEERS:-0}
PEER_NP=${PEER_NP:-1}
EXTRA=${EXTRA:-}
OUT=${OUT:-$(mktemp -d)}
MATRICES=${MATRICES-$(cd "$(dirname "$0")" && pwd)/data/bcsstk13.mtx.gz}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PETSC_DIR=${PETSC_DIR:-/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real}
export PYTHONPATH=$PETSC_DIR/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}

{
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/machine.txt"

# peer NP PC OUTNAME amg_petsc.py-args...: a PETSc peer on NP ranks, its JSON
# line in $OUT/OUTNAME.json (petsc4py 3.18 can hang in MPI_Finalize after
# printing: bounded)
peer() {
    local np=$1 pc=$2 name=$3
    shift 3
    local bind=()
    [ "$np" = 1 ] && bind=(--bind-to none)
    timeout 600 mpirun --oversubscribe -np "$np" "${bind[@]}" -x PETSC_DIR -x PYTHONPATH \
        /usr/bin/python3 "$HERE/amg_petsc.py" "$@" --pc "$pc" --tol "$TOL" --repeat "$REPS" \
        >"$OUT/$name.json" 2>"$OUT/$name.log" || true
}

for n in $SIZES; do
    # shellcheck disable=SC2086
    "$BENCH_AMG" --device "$DEVICE" --reps "$REPS" --tol "$TOL" -v $EXTRA "gen:poisson3d:$n" \
        >"$OUT/amg-$n.json" 2>"$OUT/amg-$n.log" || echo "bench_amg $n failed: $(tail -1 "$OUT/amg-$n.log")"
    if [ -n "${CLSOLVE:-}" ]; then
        for r in $(seq 1 "$REPS"); do
            "$CLSOLVE" solve "gen:poisson3d:$n" --device "$DEVICE" --precond jacobi --tol "$TOL" \
                --maxiter 100000 --json >"$OUT/jacobi-$n-$r.json" 2>>"$OUT/jacobi-$n.log" || true
        done
    fi
    if [ "$PEERS" = 1 ]; then
        for np in $PEER_NP; do
            for pc in gamg hypre; do
                peer "$np" "$pc" "petsc-$pc-$np-$n" --n "$n"
            done
        done
    fi
done
# real matrices: iterations of each preconditioner beside the peers' (one rank)
for m in $MATRICES; do
    [ -n "${CLSOLVE:-}" ] || break
    base=$(basename "$m"); base=${base%%.*}
    for pc in jacobi ic0 amg; do
        "$CLSOLVE" solve "$m" --device "$DEVICE" --precond "$pc" --tol "$TOL" --maxiter 100000 --json \
            >"$OUT/mat-$base-$pc.json" 2>"$OUT/mat-$base-$pc.log" || true
    done
    if [ "$PEERS" = 1 ]; then
        for pc in gamg hypre; do
            peer 1 "$pc" "mat-$base-petsc-$pc" --matrix "$m"
        done
    fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"

/usr/bin/python3 - "$OUT" "$SIZES" "$PEER_NP" "$MATRICES" <<'PY'
import glob, json, os, statistics, sys
out, sizes, nps, mats = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split()
def load(p):
    try:
        with open(p) as f:
            text = f.read()
    except OSError:
        return None
    try:
        return json.loads(text)  # one object, maybe pretty-printed
    except ValueError:
        lines = [l for l in text.splitlines() if l.strip().startswith("{")]
        try:
            return json.loads(lines[-1]) if lines else None
        except ValueError:
            return None
print("\nAMG (bench_amg, medians; seconds unless marked)")
print("| N | rows | levels | op. cx | set-up | strength / aggr. / prolong. / RAP | AMG upload | V-cycle ms | its | solve | tts |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
amg = {}
for n in sizes:
    j = load(f"{out}/amg-{n}.json")
    if not j:
        print(f"| {n} | failed | | | | | | | | | |")
        continue
    tts = j["matrix_upload_s"] + j["time_to_solution_s"]
    amg[n] = (j, tts)
    print(f"| {n} | {j['rows']} | {j['levels']} | {j['operator_complexity']:.2f} | {j['setup_s']:.3f} "
          f"| {j['strength_s']:.3f} / {j['aggregate_s']:.3f} / {j['prolong_s']:.3f} / {j['rap_s']:.3f} "
          f"| {j['upload_s']:.3f} | {j['vcycle_ms']:.2f} | {j['iterations']} | {j['solve_s']:.3f} | {tts:.3f} |")
print(f"(threads for the set-up: {next(iter(amg.values()))[0]['threads'] if amg else '?'}; true residuals: "
      + ", ".join(f"{n}: {amg[n][0]['true_relative_residual']:.1e}" for n in amg) + ")")
rows = []
for n in sizes:
    js = [load(p) for p in sorted(glob.glob(f"{out}/jacobi-{n}-*.json"))]
    js = [j for j in js if j and "times" in j]
    if not js or n not in amg:
        continue
    up = statistics.median(j["times"]["upload_s"] for j in js)
    sv = statistics.median(j["times"]["solve_s"] for j in js)
    it = js[0]["iterations"]
    a, atts = amg[n]
    one = atts / (up + sv)
    ten = (a["matrix_upload_s"] + a["setup_s"] + a["upload_s"] + 10 * a["solve_s"]) / (up + 10 * sv)
    rows.append(f"| {n} | {it} | {up:.3f} | {sv:.3f} | {up + sv:.3f} | {a['iterations']} | {atts:.3f} | {one:.2f} | {ten:.2f} |")
if rows:
    print("\nAMG against Jacobi-PCG (clsolve solve --precond jacobi, medians)")
    print("| N | Jacobi its | Jacobi upload | Jacobi solve | Jacobi tts | AMG its | AMG tts | AMG / Jacobi (1 rhs) | (10 rhs, reuse) |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
prow = []
for n in sizes:
    for np_ in nps:
        for pc in ("gamg", "hypre"):
            p = load(f"{out}/petsc-{pc}-{np_}-{n}.json")
            if p:
                prow.append(f"| {n} | {pc} | {np_} | {p['iterations']} | {p['setup_s']:.3f} | {p['solve_s']:.3f} "
                            f"| {p['time_to_solution_s']:.3f} (median {p['time_to_solution_median_s']:.3f}) |")
if prow:
    print("\nPETSc peers on the host CPUs (min over repeats)")
    print("| N | pc | ranks | its | set-up | solve | tts |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(prow))
mrow = []
for m in mats:
    base = os.path.basename(m).split(".")[0]
    cells = []
    for pc in ("jacobi", "ic0", "amg"):
        j = load(f"{out}/mat-{base}-{pc}.json")
        ok = j and j.get("converged")
        cells.append(f"{j['iterations']} ({j['true_relative_residual']:.1e})" if ok else "failed")
    for pc in ("gamg", "hypre"):
        p = load(f"{out}/mat-{base}-petsc-{pc}.json")
        cells.append(str(p["iterations"]) if p else "-")
    mrow.append(f"| {base} | " + " | ".join(cells) + " |")
if mrow:
    print("\nReal matrices: CG iterations to the tolerance (b = A 1, x0 = 0; clsolve: true relative residual)")
    print("| matrix | jacobi | ic0 | amg | PETSc GAMG | BoomerAMG |")
    print("|---|---|---|---|---|---|")
    print("\n".join(mrow))
print(f"\nraw output: {out}")
PY
