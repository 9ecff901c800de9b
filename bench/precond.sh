#!/usr/bin/env bash
# bench/precond.sh: the preconditioners on one GPU (issue 14's targets) in
# one command, beside PETSc GAMG / hypre BoomerAMG on the host's CPUs and
# CuPy's Jacobi CG on the same GPU. Builds nothing: it runs the binaries and
# scripts named by these variables, prints a table, keeps the raw JSON.
#
#   CLSOLVE       the built clsolve (required), e.g. build/clsolve (Release)
#   SIZES         poisson3d sizes                      (default "128 256 320"; "" none)
#   PCS           clsolve preconditioners              (default "jacobi chebyshev ic0 amg amg-host";
#                 amg-host: AMG set up on the host, amg-device: on the device)
#   REUSE_SIZES   sizes of the ten-right-hand-side runs (default "256 320"; "" none)
#   MULTI_SIZE    size of the eight-together run        (default 256)
#   MULTI_PCS     preconditioners of that run           (default "jacobi amg"; "" none)
#   MULTI_METHODS how the eight go together               (default "cg bcg": cg's columns in
#                 lockstep, dbcg.c; block CG, one search space, bcg.c)
#   DEVICE        clsolve's --device                    (default gpu)
#   REPS          runs of each clsolve case             (default 3; medians)
#   PETSC         1: PETSc GAMG and BoomerAMG on the host CPUs (default 1; needs
#                 /usr/bin/python3 with petsc4py: deploy/install-deps.sh --bench)
#   PETSC_NP      ranks for PETSc                       (default: the cores, at most 16)
#   PETSC_SIZES   sizes for PETSc                       (default: SIZES)
#   CUPY          1: CuPy's Jacobi CG (needs cupy in PY or python3) (default 1)
#   PY            python3 for the peers                  (default /usr/bin/python3)
#   OUT           folder for the raw output              (default: a temporary one)
#
#   CLSOLVE=build/clsolve bash bench/precond.sh
#
# Measured, all at tolerance 1e-8 with b = A*1 unless said:
#  - iterations, set-up (of which the preconditioner's), solve, and time to
#    solution tts = setup_s + solve_s: everything after the matrix is in
#    host memory (halo plans, device contexts and the cached programs, the
#    matrix, vectors and preconditioner to the device, the host set-up of
#    IC(0) or AMG, the iterations);
#  - reuse: `-b gen:random:10 --rhs-mode sequential`: ten right-hand sides
#    solved one after the other on one set-up (the preconditioner built
#    once) -- tts of the ten, per preconditioner;
#  - eight together: `-b gen:random:8` (the matrix read once per iteration
#    for the eight) with each of MULTI_METHODS (cg: eight recurrences in
#    lockstep, solver/krylov/dbcg.c; bcg: block CG, solver/krylov/bcg.c)
#    against `-b gen:random:1`;
#  - PETSc: KSPSetUp + KSPSolve per run (bench/peers/petsc_pc.py, its own
#    vectorized assembly left out); CuPy: the matrix to the GPU + cg
#    (bench/peers/cupy_pcg.py, the scipy assembly left out).
# The targets checked at the end: amg tts <= 1/3 of jacobi's at 256 and
# 320; with reuse over ten right-hand sides <= 1/8; eight together <= 3x
# one.
set -uo pipefail
: "${CLSOLVE:?set CLSOLVE to the built clsolve}"
SIZES=${SIZES-128 256 320}
PCS=${PCS:-jacobi chebyshev ic0 amg amg-host}
REUSE_SIZES=${REUSE_SIZES-256 320}
MULTI_SIZE=${MULTI_SIZE:-256}
MULTI_PCS=${MULTI_PCS-jacobi amg}
MULTI_METHODS=${MULTI_METHODS:-cg bcg}
DEVICE=${DEVICE:-gpu}
REPS=${REPS:-3}
PETSC=${PETSC:-1}
cores=$(nproc)
PETSC_NP=${PETSC_NP:-$((cores < 16 ? cores : 16))}
PETSC_SIZES=${PETSC_SIZES:-$SIZES}
CUPY=${CUPY:-1}
PY=${PY:-/usr/bin/python3}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{
    echo "host: $(hostname), $cores cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
    echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
    "$CLSOLVE" devices 2>/dev/null | head -5
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
} | tee "$OUT/machine.txt"

# pcargs NAME: clsolve's preconditioner options for a PCS entry (amg-host:
# AMG set up on the host, the peer of the device set-up amg gets on a GPU)
pcargs() {
    case $1 in
    amg-host) echo "--precond amg --precond-setup host" ;;
    amg-device) echo "--precond amg --precond-setup device" ;;
    *) echo "--precond $1" ;;
    esac
}
# c NAME ARGS...: one clsolve run, JSON kept as $OUT/NAME.json
c() {
    local name=$1
    shift
    "$CLSOLVE" solve "$@" --device "$DEVICE" --tol 1e-8 --json >"$OUT/$name.json" 2>"$OUT/$name.err"
}
"$CLSOLVE" solve gen:poisson3d:16 --device "$DEVICE" --precond chebyshev >/dev/null 2>&1 # warm caches
"$CLSOLVE" solve gen:poisson3d:16 --device "$DEVICE" --precond amg >/dev/null 2>&1
for n in $SIZES; do
    for p in $PCS; do
        for r in $(seq 1 "$REPS"); do
            echo "poisson3d $n $p run $r" >&2
            c "p$n-$p-$r" gen:poisson3d:"$n" $(pcargs "$p")
        done
    done
done
for n in $REUSE_SIZES; do
    for p in $PCS; do
        echo "poisson3d $n $p ten right-hand sides" >&2
        c "reuse$n-$p" gen:poisson3d:"$n" $(pcargs "$p") -b gen:random:10 --rhs-mode sequential
    done
done
for p in $MULTI_PCS; do
    for r in $(seq 1 "$REPS"); do # alternated: one, then the eight each way
        echo "poisson3d $MULTI_SIZE $p one right-hand side, run $r" >&2
        c "multi1-$p-$r" gen:poisson3d:"$MULTI_SIZE" $(pcargs "$p") -b gen:random:1
        for m in $MULTI_METHODS; do
            echo "poisson3d $MULTI_SIZE $p 8 right-hand sides together ($m), run $r" >&2
            c "multi8-$p-$m-$r" gen:poisson3d:"$MULTI_SIZE" $(pcargs "$p") -b gen:random:8 \
                --method "$m" --rhs-mode together
        done
    done
done
if [ "$PETSC" = 1 ]; then
    for n in $PETSC_SIZES; do
        echo "PETSc $n on $PETSC_NP ranks" >&2
        timeout 3600 mpirun --oversubscribe --bind-to core -np "$PETSC_NP" "$PY" "$HERE/peers/petsc_pc.py" \
            --poisson "$n" --pc gamg,hypre --repeat 2 >"$OUT/petsc$n.jsonl" 2>"$OUT/petsc$n.err"
    done
fi
if [ "$CUPY" = 1 ]; then
    # CuPy often lives in another interpreter than Debian's (the GPU hosts:
    # pip's python3 has it, /usr/bin/python3 not): take the first of $PY and
    # python3 that imports it, and say so when none does, rather than leave
    # the peer's row out without a word.
    CUPY_PY=
    for p in "$PY" python3; do
        if "$p" -c 'import cupy' 2>/dev/null; then CUPY_PY=$p; break; fi
    done
    [ -n "$CUPY_PY" ] || echo "CuPy: not run (neither $PY nor python3 imports cupy; CUPY=0 to skip)" >&2
    for n in ${CUPY_PY:+$SIZES}; do
        echo "CuPy $n ($CUPY_PY)" >&2
        timeout 3600 "$CUPY_PY" "$HERE/peers/cupy_pcg.py" --n "$n" --tol 1e-8 --repeat 2 \
            >"$OUT/cupy$n.json" 2>"$OUT/cupy$n.err" ||
            echo "CuPy $n failed: $(tail -1 "$OUT/cupy$n.err")" >&2
    done
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"

python3 - "$OUT" "$REPS" "$SIZES" "$PCS" "$REUSE_SIZES" "$MULTI_SIZE" "$MULTI_PCS" "$PETSC_NP" \
    "$MULTI_METHODS" <<'PY' | tee "$OUT/table.md"
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
sizes, pcs, reuse, msize, mpcs, pnp = (sys.argv[3].split(), sys.argv[4].split(), sys.argv[5].split(),
                                       sys.argv[6], sys.argv[7].split(), sys.argv[8])
mmeth = sys.argv[9].split()

def load(path):
    try:
        return json.load(open(path))
    except Exception:
        return None

def runs(prefix):
    return [j for j in (load(f"{out}/{prefix}-{r}.json") for r in range(1, reps + 1)) if j]

def med(js, f):
    v = [f(j) for j in js]
    return statistics.median(v) if v else float("nan")

tts = lambda j: j["times"]["setup_s"] + j["times"]["solve_s"]
best = {}
print("| poisson3d | solver | iterations | set-up s (preconditioner) | solve s | time to solution s |")
print("|---|---|---|---|---|---|")
for n in sizes:
    for p in pcs:
        js = runs(f"p{n}-{p}")
        ok = [j for j in js if j.get("converged")]
        if not ok:
            e = (js[0].get("error") if js else None) or open(f"{out}/p{n}-{p}-1.err").read()[-120:]
            print(f"| {n} | clsolve {p} | — | — | — | failed: {e.strip()[:100]} |")
            continue
        t = med(ok, tts)
        best[(n, p)] = t
        print(f"| {n} | clsolve {p} | {ok[0]['iterations']} | {med(ok, lambda j: j['times']['setup_s']):.3f} "
              f"({med(ok, lambda j: j['preconditioner']['setup_s']):.3f}) | "
              f"{med(ok, lambda j: j['times']['solve_s']):.3f} | {t:.3f} |")
    try:
        for line in open(f"{out}/petsc{n}.jsonl"):
            j = json.loads(line)
            if "error" in j:
                print(f"| {n} | PETSc {j['pc']} | — | — | — | {j['error'][:80]} |")
            else:
                print(f"| {n} | PETSc {j['pc']} ({pnp} CPU ranks) | {j['iterations']} | {j['setup_s']:.3f} | "
                      f"{j['solve_s']:.3f} | {j['total_s']:.3f} |")
    except FileNotFoundError:
        pass
    j = load(f"{out}/cupy{n}.json")
    if j:
        print(f"| {n} | CuPy Jacobi CG | {j['iterations']} | {j['setup_s']:.3f} | {j['solve_s']:.3f} | {j['total_s']:.3f} |")
print()
print("Ten right-hand sides one after the other (one set-up): time to solution of the ten")
print("| poisson3d | solver | iterations (max) | set-up s | solve s (ten) | tts s |")
print("|---|---|---|---|---|---|")
r10 = {}
for n in reuse:
    for p in pcs:
        j = load(f"{out}/reuse{n}-{p}.json")
        if not j or not j.get("converged"):
            print(f"| {n} | clsolve {p} | — | — | — | failed: {(j or {}).get('error', 'no output')[:80]} |")
            continue
        r10[(n, p)] = tts(j)
        print(f"| {n} | clsolve {p} | {j['iterations']} | {j['times']['setup_s']:.3f} | {j['times']['solve_s']:.3f} | {tts(j):.3f} |")
print()
print(f"Eight right-hand sides together against one, poisson3d {msize}")
print("| solver | iterations, 1 / 8 | solve s, 1 | solve s, 8 together | ratio | tts, 1 | tts, 8 | ratio |")
print("|---|---|---|---|---|---|---|---|")
m8 = {}
for p in mpcs:
    one = [j for j in runs(f"multi1-{p}") if j.get("converged")]
    for m in mmeth:
        eight = [j for j in runs(f"multi8-{p}-{m}") if j.get("converged")]
        if not one or not eight:
            print(f"| {p}, {m} | — | — | — | — | — | — | failed |")
            continue
        s1, s8 = med(one, lambda j: j["times"]["solve_s"]), med(eight, lambda j: j["times"]["solve_s"])
        t1, t8 = med(one, tts), med(eight, tts)
        i8 = max(c["iterations"] for c in eight[0]["columns"])
        m8[(p, m)] = (s8 / s1, t8 / t1)
        print(f"| {p}, {m} | {one[0]['iterations']} / {i8} | {s1:.3f} | {s8:.3f} | {s8 / s1:.2f}x | "
              f"{t1:.3f} | {t8:.3f} | {t8 / t1:.2f}x |")
print()
print("Targets")
for n in sizes:
    if (n, "amg") in best and (n, "jacobi") in best:
        r = best[(n, "amg")] / best[(n, "jacobi")]
        print(f"- poisson3d {n}: amg / jacobi time to solution = {r:.3f} (issue 25: <= 0.7): "
              f"{'met' if r <= 0.7 else 'missed'}")
    js = [j for j in runs(f"p{n}-amg") if j.get("converged")]
    if js:
        su = med(js, lambda j: j["preconditioner"]["setup_s"])
        where = js[0].get("preconditioner", {}).get("amg", {}).get("setup", "?")
        print(f"- poisson3d {n}: amg preconditioner set-up {su:.3f} s on the {where} "
              f"(issue 25: <= 0.6 s at 256): {'met' if su <= 0.6 else 'missed'}")
for n in reuse:
    if (n, "amg") in r10 and (n, "jacobi") in r10:
        r = r10[(n, "amg")] / r10[(n, "jacobi")]
        print(f"- poisson3d {n}, ten right-hand sides: amg / jacobi = {r:.3f} (target <= 0.125): "
              f"{'met' if r <= 1 / 8 else 'missed'}")
for (p, m), (rs, rt) in m8.items():
    print(f"- eight together / one ({p}, {m}): solve {rs:.2f}x, time to solution {rt:.2f}x "
          f"(target: solve <= 3x): {'met' if rs <= 3 else 'missed'}")
PY
echo "raw output: $OUT"
