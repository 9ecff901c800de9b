#!/usr/bin/env bash
# bench/amg-parts.sh: AMG across parts (issue 25, item 2): the coupled
# hierarchy (--precond-coupling coupled, the default on several parts)
# against block Jacobi AMG (one hierarchy per part's block) and Jacobi, on
# 1..K ranks, with PETSc GAMG on the same number of ranks as the peer, in
# one command. Builds nothing.
#
#   CLSOLVE     the built clsolve (required)
#   SIZES       poisson3d sizes                          (default "64")
#   MATRICES    Matrix Market files, besides             (default none)
#   NPS         rank counts                              (default "1 2 4")
#   PCS         jacobi | amg-block | amg-coupled         (default all three)
#   DEVICE      clsolve's --device                       (default auto)
#   REPS        runs of each case                        (default 3; min and median)
#   TOL         relative tolerance                       (default 1e-8)
#   PETSC       1: PETSc GAMG on the same ranks (CPUs)   (default 0; needs
#               /usr/bin/python3 with petsc4py: deploy/install-deps.sh --bench)
#   MPI_EXTRA   more mpirun options                      (default none)
#   OUT         folder for the raw JSON                  (default: a temporary one)
#
#   CLSOLVE=build/clsolve SIZES=64 NPS="1 2 4" PETSC=1 bash bench/amg-parts.sh   # 2-core PoCL
#   CLSOLVE=/tmp/b1/clsolve DEVICE=gpu SIZES="256 320" NPS="1 4" bash bench/amg-parts.sh
#
# Per case: iterations, the preconditioner's set-up (precond_setup_s, max
# over ranks), the solve (solve_s), and tts = setup_s + solve_s (what a
# solve pays after the matrix is in host memory: contexts, uploads, the
# preconditioner, the iterations). Several ranks on one GPU share it: their
# times are not a multi-GPU figure, their iterations are.
set -uo pipefail
: "${CLSOLVE:?set CLSOLVE to the built clsolve}"
SIZES=${SIZES-64}
MATRICES=${MATRICES:-}
NPS=${NPS:-1 2 4}
PCS=${PCS:-jacobi amg-block amg-coupled}
DEVICE=${DEVICE:-auto}
REPS=${REPS:-3}
TOL=${TOL:-1e-8}
PETSC=${PETSC:-0}
MPI_EXTRA=${MPI_EXTRA:-}
PY=${PY:-/usr/bin/python3}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name --format=csv,noheader
    echo "commit: $(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/machine.txt"

inputs=()
for n in $SIZES; do inputs+=("gen:poisson3d:$n"); done
for f in $MATRICES; do inputs+=("$f"); done

# one case: run it REPS times, print a row
case_row() { # case_row INPUT NP PC
    local in=$1 np=$2 pcn=$3 tag args=()
    tag="$(basename "$in" .mtx | tr ':' '-')-np$np-$pcn"
    case $pcn in
    jacobi) args=(--precond jacobi) ;;
    amg-block) args=(--precond amg --precond-coupling block) ;;
    amg-coupled) args=(--precond amg --precond-coupling coupled) ;;
    *) echo "unknown PC $pcn" >&2; return ;;
    esac
    local run=("$CLSOLVE" solve "$in" --device "$DEVICE" --tol "$TOL" --maxiter 100000 --json
        --min-rows-per-part 1 "${args[@]}")
    for r in $(seq 1 "$REPS"); do
        if [ "$np" = 1 ]; then
            "${run[@]}" >"$OUT/$tag-$r.json" 2>"$OUT/$tag-$r.err"
        else
            # shellcheck disable=SC2086
            mpirun --oversubscribe $MPI_EXTRA -np "$np" "${run[@]}" >"$OUT/$tag-$r.json" \
                2>"$OUT/$tag-$r.err"
        fi || echo "$tag run $r failed: $(tail -1 "$OUT/$tag-$r.err")" >&2
    done
    "$PY" - "$OUT" "$tag" "$REPS" "$in" "$np" "$pcn" <<'PY'
import json, statistics, sys
out, tag, reps, inp, np_, pc = sys.argv[1:]
rows = []
for r in range(1, int(reps) + 1):
    try:
        j = json.load(open(f"{out}/{tag}-{r}.json"))
    except Exception:
        continue
    t = j["times"]
    rows.append((j["iterations"], j["converged"], t["precond_setup_s"], t["solve_s"],
                 t["setup_s"] + t["solve_s"]))
if not rows:
    print(f"| {inp} | {np_} | {pc} | failed | | | |")
    sys.exit()
def mm(i):
    v = [x[i] for x in rows]
    return f"{min(v):.3f} / {statistics.median(v):.3f}"
its = sorted({x[0] for x in rows})
conv = all(x[1] for x in rows)
print(f"| {inp} | {np_} | {pc} | {'/'.join(map(str, its))}{'' if conv else ' (not converged)'}"
      f" | {mm(2)} | {mm(3)} | {mm(4)} |")
PY
}

echo
echo "| input | ranks | preconditioner | iterations | pc set-up s min / med | solve s min / med | tts s min / med |"
echo "|---|---|---|---|---|---|---|"
for in in "${inputs[@]}"; do
    for np in $NPS; do
        for pcn in $PCS; do
            case_row "$in" "$np" "$pcn"
        done
        if [ "$PETSC" = 1 ] && [[ $in == gen:poisson3d:* ]]; then
            n=${in##*:}
            # shellcheck disable=SC2086
            mpirun --oversubscribe $MPI_EXTRA -np "$np" "$PY" "$HERE/peers/petsc_pc.py" --poisson "$n" \
                --pc gamg --tol "$TOL" --repeat "$REPS" >"$OUT/petsc-$n-np$np.json" \
                2>"$OUT/petsc-$n-np$np.err" # its MPI exit is untidy: the JSON line decides
            "$PY" - "$OUT/petsc-$n-np$np.json" "$in" "$np" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    j = json.loads(line)
    if "iterations" not in j:
        continue
    print(f"| {sys.argv[2]} | {sys.argv[3]} | PETSc {j['pc']} (CPU) | {j['iterations']} "
          f"| {j['setup_s']:.3f} (median) | {j['solve_s']:.3f} (median) "
          f"| {j.get('total_min_s', j['total_s']):.3f} / {j['total_s']:.3f} |")
PY
        fi
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "raw: $OUT"
