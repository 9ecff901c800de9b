#!/usr/bin/env bash
# clsolve solve A1.mtx A2.mtx ...: several systems as one batch, one launch
# (cli/solve_batch.c, solver/krylov/cg_batch.c), on PoCL:
#  - the real SPD matrices and generated systems (files and gen: names):
#    exit 0, every system converged, its true residual recomputed by an
#    independent reader (mmref.py) from the x file -o wrote under tol, and
#    its iterations within 2% (at least 1) of the same system solved alone
#    with --method cg-small (the same recurrence); --json one object with a
#    row per system; float and Jacobi too
#  - systems that fail alone: a malformed file (its file and line, exit 3,
#    the first failure in the order given), an indefinite matrix (exit 5
#    when it is the first failure), maxiter (exit 4); the others are still
#    solved and written; a failed system writes no x
#  - refusals, exit 2: -b, --precond ic0, --method pipecg, --backend
#    native, and under mpirun -np 2
. "$(dirname "$0")/lib.sh"
need_data matrices
t=$TEST_TMP
M=$CLSOLVE_DATA/matrices
BAD=$CLSOLVE_DATA/bad-mtx
set -- "$M/1138_bus.mtx" "$M/494_bus.mtx" "$M/LFAT5.mtx" gen:poisson2d:30 gen:poisson3d:8
tol=1e-10

for pc in none jacobi; do
    rm -rf "$t/x_$pc"
    expect_exit 0 "$CLSOLVE" solve "$@" --precond $pc --tol $tol -o "$t/x_$pc" --json
    cp "$t/out" "$t/batch_$pc.json"
    n=$(json_get "$t/batch_$pc.json" "sum(1 for s in j['systems'] if s['converged'])")
    [ "$n" = 5 ] && ok || bad "$pc: $n of 5 converged: $(head -c 600 "$t/batch_$pc.json")"
    for f in "$M/1138_bus.mtx" "$M/494_bus.mtx" "$M/LFAT5.mtx"; do
        name=$(basename "$f" .mtx)
        res=$($PY "$here/mmref.py" residual "$f" "$t/x_$pc/$name.x.mtx" 2>&1)
        lt "$res" $tol && ok || bad "$pc $name: the true residual of the written x is $res"
    done
    # each against the same system alone (cg-small: the same recurrence)
    for s in 0 1 2 3 4; do
        m=$(json_get "$t/batch_$pc.json" "j['systems'][$s]['matrix']")
        kb=$(json_get "$t/batch_$pc.json" "j['systems'][$s]['iterations']")
        "$CLSOLVE" solve "$m" --precond $pc --tol $tol --method cg-small --json >"$t/one.json" 2>/dev/null
        k1=$(json_get "$t/one.json" "j['iterations']")
        # LFAT5 (14 rows, condition 1e8): its count is rounding (test_cg_small.sh)
        if [ "$(basename "$m")" = LFAT5.mtx ] || $PY -c "import sys; a,b=int(sys.argv[1]),int(sys.argv[2]); sys.exit(0 if abs(a-b) <= max(1, 0.02*b) else 1)" "$kb" "$k1"; then ok
        else bad "$pc $m: $kb iterations in the batch, $k1 alone"; fi
    done
done
# float with Jacobi: the well-conditioned ones to 1e-5
expect_exit 0 "$CLSOLVE" solve gen:poisson2d:40 gen:poisson3d:10 "$M/494_bus.mtx" --precision float --precond jacobi --tol 1e-4 --json
n=$(json_get "$t/out" "sum(1 for s in j['systems'] if s['converged'] and s['true_relative_residual'] <= 1e-4)")
[ "$n" = 3 ] && ok || bad "float: $n of 3 under tol: $(head -c 600 "$t/out")"

# one bad system fails alone; the exit code is the first failure's
rm -rf "$t/xb"
expect_exit 3 "$CLSOLVE" solve "$M/494_bus.mtx" "$BAD/mangle2.mtx" "$M/dwt_992.mtx" gen:poisson2d:20 --precond jacobi -o "$t/xb"
grep -q "mangle2.mtx:1: " "$t/err" && ok || bad "the malformed file's line: $(cat "$t/err")"
grep -q "dwt_992.mtx: matrix is not positive definite" "$t/err" && ok || bad "the indefinite system's message: $(cat "$t/err")"
if [ -f "$t/xb/494_bus.x.mtx" ] && [ -f "$t/xb/gen_poisson2d_20.x.mtx" ]; then ok; else bad "the good systems' x files: $(ls "$t/xb")"; fi
[ ! -e "$t/xb/dwt_992.x.mtx" ] && [ ! -e "$t/xb/mangle2.x.mtx" ] && ok || bad "a failed system wrote x: $(ls "$t/xb")"
grep -c "converged after" "$t/out" | grep -qx 2 && ok || bad "two systems solved: $(cat "$t/out")"
expect_exit 5 "$CLSOLVE" solve "$M/494_bus.mtx" "$M/dwt_992.mtx" --precond jacobi
expect_exit 4 "$CLSOLVE" solve "$M/494_bus.mtx" gen:poisson2d:30 --maxiter 20
grep -q "not converged after 20 iterations" "$t/err" && ok || bad "maxiter: $(cat "$t/err")"

# refusals
expect_exit 2 "$CLSOLVE" solve "$M/494_bus.mtx" "$M/LFAT5.mtx" -b "$M/LFAT5.mtx"
expect_exit 2 "$CLSOLVE" solve "$M/494_bus.mtx" "$M/LFAT5.mtx" --precond ic0
grep -q "none or jacobi" "$t/err" && ok || bad "ic0: $(cat "$t/err")"
expect_exit 2 "$CLSOLVE" solve "$M/494_bus.mtx" "$M/LFAT5.mtx" --method pipecg
expect_exit 2 "$CLSOLVE" solve "$M/494_bus.mtx" "$M/LFAT5.mtx" --backend native
if command -v mpirun >/dev/null; then
    mpirun --oversubscribe -np 2 "$CLSOLVE" solve "$M/494_bus.mtx" "$M/LFAT5.mtx" >/dev/null 2>"$t/mpi.err"
    rc=$?
    [ "$rc" -eq 2 ] && grep -q "one device of one rank" "$t/mpi.err" && ok || bad "mpirun -np 2: exit $rc $(head -3 "$t/mpi.err")"
fi
finish
