#!/usr/bin/env bash
# bench/precond-pocl.sh: clsolve's preconditioners on PoCL's CPU device
# beside PETSc (GAMG, hypre BoomerAMG, parallel ICC, Jacobi) on the same
# cores, poisson3d N on NP ranks, tolerance 1e-8, b = A*1, in one command:
# the issue-14 target "time to solution including set-up <= PETSc GAMG's",
# and the iteration counts. Builds nothing.
#
#   CLSOLVE   the built clsolve (required), e.g. build/clsolve
#   N         poisson3d size                   (default 64)
#   NP        PETSc's ranks                    (default 2)
#   CNP       clsolve's ranks                  (default 1: one part runs the native
#             CPU loops, kernels/cpu/; 2 splits the system and runs the kernels)
#   BACKENDS  clsolve's --backend values       (default "auto opencl": the native
#             loops and PoCL's kernels, side by side)
#   PCS       clsolve preconditioners          (default "jacobi chebyshev ic0 amg")
#   PEERS     PETSc preconditioners            (default "gamg,hypre,icc,jacobi")
#   REPS      runs of each                     (default 3; medians)
#   OUT       folder for the raw JSON          (default: a temporary one)
#   PY        a python3 with petsc4py          (default /usr/bin/python3,
#             deploy/install-deps.sh --bench)
#
#   CLSOLVE=build/clsolve bash bench/precond-pocl.sh
#
# Time to solution (tts): clsolve's setup_s + solve_s (halo plans, OpenCL
# contexts and the cached programs, matrix and vector upload, the
# preconditioner's set-up, the iterations: everything after the matrix is
# in host memory), PETSc's KSPSetUp + KSPSolve (its matrix assembly, the
# equivalent of clsolve's parse, is left out of both). Each clsolve run is
# a fresh process (set-up paid every time, no reuse); PETSc builds a new
# KSP per run. Quote the load: on the shared 2-core machine timings move.
set -euo pipefail
: "${CLSOLVE:?set CLSOLVE to the built clsolve}"
N=${N:-64}
NP=${NP:-2}
CNP=${CNP:-1}
BACKENDS=${BACKENDS:-auto opencl}
PCS=${PCS:-jacobi chebyshev ic0 amg}
PEERS=${PEERS:-gamg,hypre,icc,jacobi}
REPS=${REPS:-3}
PY=${PY:-/usr/bin/python3}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "machine: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/machine.txt"
"$CLSOLVE" solve gen:poisson3d:8 --device cpu --precond chebyshev >/dev/null 2>&1 || true # program cache warm
for p in $PCS; do
    for r in $(seq 1 "$REPS"); do
        for be in $BACKENDS; do # in turn, so a drift of the machine hits both
            mpirun --oversubscribe -np "$CNP" "$CLSOLVE" solve gen:poisson3d:"$N" --device cpu \
                --precond "$p" --backend "$be" --tol 1e-8 --json \
                >"$OUT/c-$p-$be-$r.json" 2>"$OUT/c-$p-$be-$r.err" || true
        done
    done
done
timeout 1800 mpirun --oversubscribe -np "$NP" "$PY" "$HERE/peers/petsc_pc.py" --poisson "$N" \
    --pc "$PEERS" --repeat "$REPS" >"$OUT/petsc.jsonl" 2>"$OUT/petsc.err" || true
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"
python3 - "$OUT" "$REPS" "$N" "$NP" "$PCS" "$CNP" "$BACKENDS" <<'PY'
import json, statistics, sys
out, reps, n, np_, pcs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5].split()
cnp, backends = sys.argv[6], sys.argv[7].split()
print(f"poisson3d {n} ({int(n) ** 3} rows), clsolve {cnp} rank(s), PETSc {np_} ranks, tol 1e-8, "
      f"min / median of {reps} runs")
print("| solver | iterations | set-up s (of which preconditioner) | solve s (min / median) | "
      "time to solution s (min / median) |")
print("|---|---|---|---|---|")
rows = []
for p in pcs:
    for be in backends:
        runs = []
        for r in range(1, reps + 1):
            try:
                runs.append(json.load(open(f"{out}/c-{p}-{be}-{r}.json")))
            except Exception:
                pass
        ok = [j for j in runs if j.get("converged")]
        name = f"clsolve {p}, backend {be}"
        if not ok:
            err = runs[0].get("error", "no output") if runs else "no output"
            print(f"| {name} | — | — | — | {err[:80]} |")
            continue
        ran = ok[0].get("backend", "?") + (f", {ok[0]['cpu_threads']} threads" if ok[0].get("cpu_threads") else "")
        med = lambda f: statistics.median(f(j) for j in ok)
        lo = lambda f: min(f(j) for j in ok)
        tts = lambda j: j["times"]["setup_s"] + j["times"]["solve_s"]
        rows.append((name, med(tts)))
        print(f"| {name} ({ran}) | {ok[0]['iterations']} | {med(lambda j: j['times']['setup_s']):.3f} "
              f"({med(lambda j: j['preconditioner']['setup_s']):.3f}) | "
              f"{lo(lambda j: j['times']['solve_s']):.3f} / {med(lambda j: j['times']['solve_s']):.3f} | "
              f"{lo(tts):.3f} / {med(tts):.3f} |")
try:
    for line in open(f"{out}/petsc.jsonl"):
        j = json.loads(line)
        if "error" in j:
            print(f"| PETSc {j['pc']} | — | — | — | {j['error'][:80]} |")
            continue
        rows.append((f"PETSc {j['pc']}", j["total_s"]))
        print(f"| PETSc {j['pc']} ({j['petsc']}) | {j['iterations']} | {j['setup_s']:.3f} | "
              f"{j['solve_s']:.3f} | {j['total_s']:.3f} |")
except FileNotFoundError:
    print("| PETSc | — | — | — | no output (petsc4py missing?) |")
gamg = [t for name, t in rows if name == "PETSc gamg"]
if gamg:
    for name, t in rows:
        if name.startswith("clsolve"):
            print(f"{name}: {t / gamg[0]:.2f}x PETSc GAMG's time to solution")
PY
echo "raw output: $OUT"
