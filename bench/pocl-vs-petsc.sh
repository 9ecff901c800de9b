#!/usr/bin/env bash
# bench/pocl-vs-petsc.sh: CG ms per iteration for poisson3d N on PoCL's CPU
# device beside PETSc's KSPCG (petsc4py), same matrix, same iteration count,
# same command, 1 and 2 ranks each. Needs `deploy/install-deps.sh --bench`.
#   bash bench/pocl-vs-petsc.sh [N] [ITERS] [REPS]      (defaults 64 200 5)
# clsolve: `clsolve solve gen:poisson3d:N --maxiter ITERS --tol 1e-300` (the
# engine users run, one part on 1 rank, two parts on 2), ms/it = solve_s /
# ITERS, REPS runs; and `clsolve bench`'s fused kernels for reference. PETSc:
# KSPCG, no preconditioner, REPS solves in one process (min and median).
# Quote the load: a timing counts only on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-64}
IT=${2:-200}
REPS=${3:-5}
B=${BUILD:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Debian's petsc4py lives under its PETSc's tree
export PETSC_DIR=${PETSC_DIR:-/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real}
export PYTHONPATH=$PETSC_DIR/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$B" -j >/dev/null
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$B/clsolve" solve gen:poisson3d:8 --device cpu >/dev/null 2>&1 || true # program cache warm
OUT=$(mktemp -d)
# np 1 unbound (all cores for PoCL's threads or PETSc's one), np 2 with
# mpirun's default binding (a core each): each program's usual layouts
for np in 1 2; do
    BIND=()
    [ $np = 1 ] && BIND=(--bind-to none)
    for r in $(seq 1 "$REPS"); do
        mpirun --oversubscribe -np $np "${BIND[@]}" "$B/clsolve" solve gen:poisson3d:$N --device cpu \
            --maxiter "$IT" --tol 1e-300 --json >"$OUT/c$np-$r.json" 2>/dev/null || true
    done
    # (petsc4py 3.18 can hang in MPI_Finalize after printing: bounded)
    timeout 300 mpirun --oversubscribe -np $np "${BIND[@]}" -x PETSC_DIR -x PYTHONPATH \
        /usr/bin/python3 bench/peers/petsc_cg.py --n "$N" --iters "$IT" --repeat "$REPS" \
        >"$OUT/p$np.json" 2>"$OUT/p$np.err" || true
done
"$B/clsolve" bench --sizes "$N" --iters "$IT" --device cpu --json >"$OUT/bench.json" 2>/dev/null
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT" "$REPS" "$IT" <<'PY'
import json, statistics, sys
out, reps, it = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b = json.load(open(f"{out}/bench.json"))["results"][0]
print(f"clsolve bench (fused kernels, 1 process): {b['ms_per_iteration']:.3f} ms/it, format {b['format_detail']}")
print("| ranks | clsolve solve ms/it (min / median) | PETSc KSPCG ms/it (min / median) | clsolve / PETSc (min) |")
print("|---|---|---|---|")
for np_ in (1, 2):
    v = []
    for r in range(1, reps + 1):
        try:
            j = json.load(open(f"{out}/c{np_}-{r}.json"))
            v.append(j["times"]["solve_s"] * 1e3 / j["iterations"])
        except Exception:
            pass
    p = json.load(open(f"{out}/p{np_}.json"))
    print(f"| {np_} | {min(v):.3f} / {statistics.median(v):.3f} | {p['ms_per_iteration']:.3f} / {p['ms_per_iteration_median']:.3f} | {min(v) / p['ms_per_iteration']:.2f}x |")
PY
