#!/usr/bin/env bash
# bench/bcg-cpu.sh: k right-hand sides on a CPU device (PoCL's, the 2-core
# machine's), issue 25's PoCL target "eight together <= 3x one", in one
# command: one column (cg on the native loops, the best single-column
# path), and K columns each way clsolve has -- block CG on its native passes
# (kernels/cpu/cpu_bcg.c), block CG on bcg.cl's kernels
# (CLSOLVE_BCG_NATIVE=0, what ran before), cg's columns in lockstep
# (--method cg --rhs-mode together), the columns in turn (--rhs-mode
# sequential) -- beside PETSc's KSPCG with PCJACOBI on the same cores (one
# column per KSPSolve: its K columns are K solves). Builds nothing.
#
#   CLSOLVE   the built clsolve (required)
#   N         poisson3d size                (default 64)
#   KS        column counts                 (default "4 8")
#   PC        preconditioner                (default jacobi)
#   REPS      runs of each                  (default 3; min / median)
#   KERNELS   1: also bcg on the kernels     (default 1; about 20 s a run at 64)
#   PETSC     1: PETSc's KSPCG, NP ranks     (default 1; deploy/install-deps.sh --bench)
#   NP        PETSc's ranks                 (default 2)
#   OUT       folder for the raw JSON       (default: a temporary one)
#
#   CLSOLVE=build/clsolve bash bench/bcg-cpu.sh
#
# solve_s is clsolve's iterations (the matrix and vectors on the device,
# nothing of the parse or set-up); PETSc's is KSPSolve's. Quote the load.
set -uo pipefail
: "${CLSOLVE:?set CLSOLVE to the built clsolve}"
N=${N:-64}
KS=${KS:-4 8}
PC=${PC:-jacobi}
REPS=${REPS:-3}
KERNELS=${KERNELS:-1}
PETSC=${PETSC:-1}
NP=${NP:-2}
PY=${PY:-/usr/bin/python3}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
echo "bcg-cpu: poisson3d $N, $PC, columns $KS, $REPS runs each; load $(cut -d' ' -f1-3 /proc/loadavg); raw in $OUT" >&2

# c NAME ENV... -- ARGS...: REPS runs of clsolve solve, raw JSON kept
c() {
    local name=$1
    shift
    local env=()
    while [ "$1" != "--" ]; do env+=("$1"); shift; done
    shift
    for r in $(seq 1 "$REPS"); do
        env "${env[@]}" "$CLSOLVE" solve gen:poisson3d:"$N" --device cpu --tol 1e-8 --precond "$PC" \
            "$@" --json >"$OUT/$name-$r.json" 2>"$OUT/$name-$r.err" || echo "$name run $r: exit $?" >&2
    done
}
c one X=1 -- -b gen:random:1
for k in $KS; do
    c "bcg-native-$k" X=1 -- -b gen:random:"$k" --method bcg
    [ "$KERNELS" = 1 ] && c "bcg-kernels-$k" CLSOLVE_BCG_NATIVE=0 -- -b gen:random:"$k" --method bcg
    c "cg-together-$k" X=1 -- -b gen:random:"$k" --method cg --rhs-mode together
    c "cg-turn-$k" X=1 -- -b gen:random:"$k" --method cg --rhs-mode sequential
done
if [ "$PETSC" = 1 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np "$NP" \
        "$PY" "$here/peers/petsc_pc.py" --poisson "$N" --pc "$PC" --repeat "$REPS" \
        >"$OUT/petsc.json" 2>"$OUT/petsc.err" || true # its ranks leave by os._exit: mpirun says so
    [ -s "$OUT/petsc.json" ] || echo "petsc: no result ($OUT/petsc.err)" >&2
fi

"$PY" - "$OUT" "$N" "$PC" "$KS" "$REPS" <<'PY'
import glob, json, os, statistics, sys
out, n, pc, ks, reps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(), int(sys.argv[5])
def runs(name):
    v = []
    for r in range(1, reps + 1):
        try:
            j = json.load(open(os.path.join(out, "%s-%d.json" % (name, r))))
        except (OSError, ValueError):
            continue
        its = j.get("iterations") if "columns" not in j else max(c["iterations"] for c in j["columns"])
        v.append((j["times"]["solve_s"], its, j.get("method")))
    return v
one = runs("one")
if not one:
    sys.exit("bcg-cpu: the one-column runs failed")
one_med = statistics.median(t for t, _, _ in one)
print(f"poisson3d {n}, {pc}, tol 1e-8, solve s (min / median of {reps})")
print("| columns | how | iterations | solve s | over one column (median) |")
print("|---|---|---|---|---|")
print(f"| 1 | cg ({one[0][2]}) | {one[0][1]} | {min(t for t,_,_ in one):.3f} / {one_med:.3f} | 1 |")
for k in ks:
    for how, label in (("bcg-native", "bcg, native passes"), ("bcg-kernels", "bcg, bcg.cl on PoCL"),
                       ("cg-together", "cg, columns together"), ("cg-turn", "cg, columns in turn")):
        v = runs("%s-%s" % (how, k))
        if not v:
            continue
        med = statistics.median(t for t, _, _ in v)
        print(f"| {k} | {label} | {v[0][1]} | {min(t for t,_,_ in v):.3f} / {med:.3f} | {med / one_med:.2f}x |")
try:
    p = json.loads(open(os.path.join(out, "petsc.json")).read().strip().splitlines()[-1])
    print(f"| 1 | PETSc {p['petsc']} KSPCG {pc}, {p['ranks']} ranks | {p['iterations']} | - / {p['solve_s']:.3f} | "
          f"{p['solve_s'] / one_med:.2f}x (K columns: K solves) |")
except (OSError, ValueError, IndexError, KeyError) as e:
    print(f"(no PETSc figure: {e})")
best = {}
for k in ks:
    v = runs("bcg-native-%s" % k)
    if v:
        best[k] = statistics.median(t for t, _, _ in v) / one_med
if "8" in best:
    print(f"- target eight together <= 3x one: {'met' if best['8'] <= 3 else 'missed'} ({best['8']:.2f}x, bcg native)")
PY
