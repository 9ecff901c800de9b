#!/usr/bin/env bash
# Block CG (--method bcg, solver/krylov/bcg.c) through `clsolve solve`:
#  - poisson3d 12 with 8 random right-hand sides and every preconditioner
#    kind the block takes two ways (none and jacobi fused in its kernels;
#    amg and chebyshev through pc_apply_block): exit 0, the columns solved
#    together by the block (one iteration count for all), each column's
#    true residual recomputed here from the written x (tests/cli/mmref.py,
#    plain Python) below the tolerance, and, with none and jacobi, fewer
#    iterations than the most any column takes alone (--method cg one by
#    one): what a shared search space gives and separate ones do not;
#  - 2, 3 and 5 columns (P and Q kw wide, padded) through SELL and CSR, the
#    SpMM's fused G = P'Q against its unfused twin (CLSOLVE_BCG_FUSED=0),
#    and the SpMM with 1, 2 or 4 columns a work-item (CLSOLVE_BCG_SPMM_CW);
#  - a matrix of ../shared/data (1138_bus) with 4 columns;
#  - columns that are dependent (b_2 = 3 b_1: the block loses rank at once)
#    and a zero column: the block hands over to the columns one by one
#    (dbcg.c; the trace says so) and every column is still right;
#  - 2 ranks (several parts: no block kernels there) and one column: the
#    same answers through dbcg.c and cg; float and mixed precision;
#  - dwt_992 (not positive definite): the same exit as --method cg;
#  - CLSOLVE_BCG_PROFILE=1 with amg: the iteration's kernels by name, the
#    V-cycle's among them;
#  - the native passes a CPU device runs with none and jacobi in double
#    (kernels/cpu/cpu_bcg.c; the trace says so) against bcg.cl's kernels
#    (CLSOLVE_BCG_NATIVE=0, its twin: the kernel checks above run with it):
#    2, 3, 5 and 8 columns, fused G and not, the same iterations within one
#    and x within 1e-7 of the kernels' (both at tol 1e-8); on 1 and 2
#    threads the same x to the last bit (sums by fixed blocks of rows);
#    --method auto takes it from 4 columns on a CPU.
. "$(dirname "$0")/lib.sh"
need_data matrices
t=$TEST_TMP
M=$CLSOLVE_DATA/matrices
export POCL_MAX_PTHREAD_COUNT=${POCL_MAX_PTHREAD_COUNT:-2}
TOL=1e-8

"$CLSOLVE" gen poisson3d 12 -o $t/p.mtx >/dev/null 2>&1 || { bad "clsolve gen"; exit 1; }
# B NAME N K [dep|zero]: an N x K array of uniform [-1, 1) columns
mkB() {
    $PY - "$t/$1.mtx" "$2" "$3" "${4:-}" <<'PY'
import random, sys
path, n, k, how = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
random.seed(7 + k)
cols = [[random.uniform(-1, 1) for _ in range(n)] for _ in range(k)]
if how == "dep":
    cols[1] = [3 * v for v in cols[0]]
if how == "zero":
    cols[2] = [0.0] * n
with open(path, "w") as f:
    f.write("%%%%MatrixMarket matrix array real general\n%d %d\n" % (n, k))
    for c in cols:
        f.write("".join("%.17g\n" % v for v in c))
PY
}
# run NAME [mpirun -np N --] clsolve solve args...
run() {
    local name=$1
    shift
    local pre=()
    if [ "$1" = mpirun ]; then
        while [ "$1" != "--" ]; do pre+=("$1"); shift; done
        shift
    fi
    "${pre[@]}" "$CLSOLVE" solve "$@" --json -o "$t/$name.x.mtx" >"$t/$name.json" 2>"$t/$name.err"
    echo $? >"$t/$name.rc"
}
# right NAME MATRIX B LABEL: exit 0 and every column's ||b - A x|| / ||b|| <= tol
# (a zero column: x = 0)
right() {
    if [ "$(cat $t/$1.rc)" != 0 ]; then
        bad "$4: exit $(cat $t/$1.rc): $(grep -v '^[- ]' $t/$1.err | head -3)"
        return
    fi
    if $PY - "$here" "$2" "$t/$1.x.mtx" "$3" "$TOL" <<'PY'; then ok; else bad "$4: a column is wrong"; fi
import sys
sys.path.insert(0, sys.argv[1])
import mmref
A = mmref.read_matrix(sys.argv[2])
_, m, k, xv = mmref.read_matrix(sys.argv[3])
_, _, kb, bv = mmref.read_matrix(sys.argv[4])
worst = 0.0
for c in range(kb):
    x, b = xv[c * m:(c + 1) * m], bv[c * m:(c + 1) * m]
    bb = sum(v * v for v in b)
    if bb == 0:
        worst = max(worst, max(abs(v) for v in x))
        continue
    r = [bi - ai for bi, ai in zip(b, mmref.matvec(A, x))]
    worst = max(worst, (sum(v * v for v in r) / bb) ** 0.5)
if k != kb or worst > float(sys.argv[5]):
    print(f"{k} columns of {kb}, worst residual {worst:.3e}", file=sys.stderr)
    sys.exit(1)
PY
}
its() { json_get "$t/$1.json" "sorted(set(c['iterations'] for c in j['columns']))"; }

mkB B8 1728 8
for p in none jacobi amg chebyshev; do
    run b_$p $t/p.mtx -b $t/B8.mtx --method bcg --precond $p --tol $TOL
    right b_$p $t/p.mtx $t/B8.mtx "bcg $p"
    [ "$(json_get $t/b_$p.json "j['method'], j['rhs_mode'], len(set(c['iterations'] for c in j['columns']))")" = "bcg together 1" ] &&
        ok || bad "bcg $p: $(json_get $t/b_$p.json "j['method'], j['rhs_mode']") iterations $(its b_$p)"
    run s_$p $t/p.mtx -b $t/B8.mtx --method cg --precond $p --tol $TOL --rhs-mode sequential
    right s_$p $t/p.mtx $t/B8.mtx "cg $p one by one"
    echo "poisson3d 12, 8 columns, $p: bcg $(its b_$p), cg alone $(its s_$p)"
    if [ $p = none ] || [ $p = jacobi ]; then
        $PY -c "import sys; sys.exit(0 if $(its b_$p)[0] < max($(its s_$p)) else 1)" && ok ||
            bad "bcg $p: $(its b_$p) iterations, not fewer than cg's columns alone $(its s_$p)"
    fi
done

# the profile of one block iteration (CLSOLVE_BCG_PROFILE=1) names every
# launch's kernel, the V-cycle's too (its capture once held 8 launches)
CLSOLVE_BCG_PROFILE=1 run prof $t/p.mtx -b $t/B8.mtx --method bcg --precond amg --tol $TOL
right prof $t/p.mtx $t/B8.mtx "bcg amg, profiled"
pl=$(grep "^bcg profile by kernel:" $t/prof.err | head -1)
for kn in "bcg_spmm_" "bcg_update_rr_8 x1 " "bcg_dir_8 x1 " "amg_cheb_first x" "spmm_"; do
    case "$pl" in *"$kn"*) ok ;; *) bad "bcg profile by kernel: no '$kn' in: $pl" ;; esac
done

# P and Q are kw wide (k rounded up to 2, 4 or 8; the columns past k stay
# 0): 2, 3 and 5 columns, each through SELL and CSR (the two SpMMs)
for kk in 2 3 5; do
    mkB Bk$kk 1728 $kk
    for f in sell csr; do
        CLSOLVE_BCG_NATIVE=0 run k${kk}_$f $t/p.mtx -b $t/Bk$kk.mtx --method bcg --precond jacobi \
            --tol $TOL --format $f
        right k${kk}_$f $t/p.mtx $t/Bk$kk.mtx "bcg, $kk columns, $f"
    done
done
# the SpMM's fused G = P'Q (CLSOLVE_BCG_FUSED=1; the default two wide only)
# against its twin (bcg_gram, =0): the same iterations (sums in another
# order: one apart at most) and x
for f in sell csr; do
    CLSOLVE_BCG_NATIVE=0 CLSOLVE_BCG_FUSED=1 run fu_$f $t/p.mtx -b $t/B8.mtx --method bcg --precond jacobi --tol $TOL \
        --format $f
    right fu_$f $t/p.mtx $t/B8.mtx "bcg fused, $f"
    CLSOLVE_BCG_NATIVE=0 CLSOLVE_BCG_FUSED=0 run tw_$f $t/p.mtx -b $t/B8.mtx --method bcg --precond jacobi --tol $TOL \
        --format $f
    right tw_$f $t/p.mtx $t/B8.mtx "bcg unfused, $f"
    $PY -c "import sys; sys.exit(0 if abs($(its fu_$f)[0] - $(its tw_$f)[0]) <= 1 else 1)" && ok ||
        bad "fused G ($f): $(its fu_$f) iterations, its twin $(its tw_$f)"
done

# the unfused SpMM with 1, 2 or 4 columns a work-item (CLSOLVE_BCG_SPMM_CW;
# the defaults are 2 eight wide and 4 four wide): eight and three columns,
# SELL and CSR, each right and in the twin's iterations
for cw in 1 2 4; do
    for f in sell csr; do
        for B in B8 Bk3; do
            CLSOLVE_BCG_NATIVE=0 CLSOLVE_BCG_FUSED=0 CLSOLVE_BCG_SPMM_CW=$cw run cw${cw}_${f}_$B $t/p.mtx -b $t/$B.mtx \
                --method bcg --precond jacobi --tol $TOL --format $f
            right cw${cw}_${f}_$B $t/p.mtx $t/$B.mtx "bcg SpMM $cw columns a work-item, $f, $B"
        done
        $PY -c "import sys; sys.exit(0 if abs($(its cw${cw}_${f}_B8)[0] - $(its tw_$f)[0]) <= 1 else 1)" &&
            ok || bad "SpMM $cw columns a work-item ($f): $(its cw${cw}_${f}_B8) iterations, the twin $(its tw_$f)"
    done
done

# float vectors (the block's kernels in float, sums in double): to 1e-5
for pr in float mixed; do
    run pr_$pr $t/p.mtx -b $t/B8.mtx --method bcg --precond jacobi --tol 1e-5 --precision $pr
    TOL=1e-5 right pr_$pr $t/p.mtx $t/B8.mtx "bcg --precision $pr"
done

# the native passes (a CPU device, double, CSR) against the kernels, their
# twin: every width, fused G and not; the trace names the path taken
xclose() { # A B: x of two runs within 1e-7 of the largest entry
    $PY - "$t/$1.x.mtx" "$t/$2.x.mtx" <<'PY'
import sys
def rd(p):
    rows = [l for l in open(p) if not l.startswith('%')]
    return [float(x) for l in rows[1:] for x in l.split()]
a, b = rd(sys.argv[1]), rd(sys.argv[2])
m = max(abs(v) for v in b)
d = max(abs(u - v) for u, v in zip(a, b)) if len(a) == len(b) else float("inf")
sys.exit(0 if d <= 1e-7 * m else 1)
PY
}
for B in Bk2 Bk3 Bk5 B8; do
    for p in none jacobi; do
        for fz in 1 0; do
            n=nat_${B}_${p}_$fz
            CLSOLVE_TRACE=1 CLSOLVE_BCG_FUSED=$fz run $n $t/p.mtx -b $t/$B.mtx --method bcg --precond $p \
                --tol $TOL --format csr
            right $n $t/p.mtx $t/$B.mtx "native bcg, $B, $p, fused $fz"
            grep -q "bcg: native loops on the CPU" $t/$n.err && ok || bad "$n: the native passes did not run"
            CLSOLVE_TRACE=1 CLSOLVE_BCG_NATIVE=0 CLSOLVE_BCG_FUSED=$fz run ker_$n $t/p.mtx -b $t/$B.mtx \
                --method bcg --precond $p --tol $TOL --format csr
            ! grep -q "bcg: native loops" $t/ker_$n.err && ok || bad "ker_$n: CLSOLVE_BCG_NATIVE=0 ran native"
            $PY -c "import sys; sys.exit(0 if abs($(its $n)[0] - $(its ker_$n)[0]) <= 1 else 1)" &&
                xclose $n ker_$n && ok || bad "native bcg $B $p fused $fz: $(its $n) iterations, the kernels $(its ker_$n), or x apart"
        done
        # the fused sums (G in the SpMM, rho in the update) are the separate
        # passes' in the same order: the same bits
        cmp -s $t/nat_${B}_${p}_1.x.mtx $t/nat_${B}_${p}_0.x.mtx && ok ||
            bad "native bcg $B $p: x with the sums fused differs from x without"
    done
done
echo "native bcg against its kernels: 2, 3, 5, 8 columns, none and jacobi; fused sums = separate ones, bit for bit"
# one thread or two: the same bits (poisson3d 24, 13824 rows: two members)
"$CLSOLVE" gen poisson3d 24 -o $t/p24.mtx >/dev/null 2>&1
mkB B5b 13824 5
for th in 1 2; do
    CLSOLVE_TRACE=1 CLSOLVE_CPU_THREADS=$th run thr$th $t/p24.mtx -b $t/B5b.mtx --method bcg \
        --precond jacobi --tol $TOL
    right thr$th $t/p24.mtx $t/B5b.mtx "native bcg on $th threads"
    grep -q "bcg: native loops on the CPU ($th threads" $t/thr$th.err && ok ||
        bad "native bcg: not on $th threads: $(grep 'bcg:' $t/thr$th.err | head -2)"
done
cmp -s $t/thr1.x.mtx $t/thr2.x.mtx && ok || bad "native bcg: x on 1 and 2 threads differ"
# --method auto on a CPU: bcg from 4 columns (none, jacobi), cg's below
run auto4 $t/p24.mtx -b $t/B5b.mtx --precond jacobi --tol $TOL
mkB B2b 13824 2
run auto2 $t/p24.mtx -b $t/B2b.mtx --precond jacobi --tol $TOL
[ "$(json_get $t/auto4.json "j['method']") $(json_get $t/auto2.json "j['method']")" = "bcg cg" ] && ok ||
    bad "--method auto on a CPU: $(json_get $t/auto4.json "j['method_choice']") / $(json_get $t/auto2.json "j['method_choice']")"
# ... where its native passes run: --backend opencl holds bcg to the kernels
# (5-7x slower on PoCL than the native loops), so auto keeps cg's columns
run auto4k $t/p24.mtx -b $t/B5b.mtx --precond jacobi --tol $TOL --backend opencl
[ "$(json_get $t/auto4k.json "j['method']")" = cg ] && ok ||
    bad "--method auto --backend opencl on a CPU: $(json_get $t/auto4k.json "j['method_choice']")"
echo "native bcg: the same x on 1 and 2 threads; auto takes it from 4 columns, not with --backend opencl"

mkB B4 1138 4
run bus $M/1138_bus.mtx -b $t/B4.mtx --method bcg --precond jacobi --tol $TOL
right bus $M/1138_bus.mtx $t/B4.mtx "bcg 1138_bus"

mkB Bdep 1728 4 dep
CLSOLVE_TRACE=1 run dep $t/p.mtx -b $t/Bdep.mtx --method bcg --precond jacobi --tol $TOL
right dep $t/p.mtx $t/Bdep.mtx "bcg, dependent columns"
grep -q "bcg: the block lost rank" $t/dep.err && ok || bad "dependent columns: no hand-over in the trace"
mkB Bzero 1728 4 zero
run zero $t/p.mtx -b $t/Bzero.mtx --method bcg --tol $TOL
right zero $t/p.mtx $t/Bzero.mtx "bcg, a zero column"
[ "$(json_get $t/zero.json "j['columns'][2]['reason']")" = converged_zero_rhs ] && ok ||
    bad "a zero column: $(json_get $t/zero.json "j['columns'][2]")"

if command -v mpirun >/dev/null; then
    run np2 mpirun --oversubscribe -np 2 -x POCL_MAX_PTHREAD_COUNT=1 -- $t/p.mtx -b $t/B8.mtx \
        --method bcg --precond jacobi --tol $TOL --min-rows-per-part 1
    right np2 $t/p.mtx $t/B8.mtx "bcg on 2 ranks"
fi
mkB B1 1728 1
run one $t/p.mtx -b $t/B1.mtx --method bcg --tol $TOL
run onecg $t/p.mtx -b $t/B1.mtx --method cg --tol $TOL
right one $t/p.mtx $t/B1.mtx "bcg, one column"
[ "$(json_get $t/one.json "j['iterations']")" = "$(json_get $t/onecg.json "j['iterations']")" ] && ok ||
    bad "one column: bcg $(json_get $t/one.json "j['iterations']") iterations, cg $(json_get $t/onecg.json "j['iterations']")"

mkB B4d 992 4
run dwt $M/dwt_992.mtx -b $t/B4d.mtx --method bcg --tol $TOL
run dwtcg $M/dwt_992.mtx -b $t/B4d.mtx --method cg --rhs-mode together --tol $TOL
[ "$(cat $t/dwt.rc)" = "$(cat $t/dwtcg.rc)" ] && [ "$(cat $t/dwt.rc)" != 0 ] && ok ||
    bad "dwt_992: bcg exit $(cat $t/dwt.rc), cg exit $(cat $t/dwtcg.rc): $(tail -2 $t/dwt.err)"
echo "dwt_992: exit $(cat $t/dwt.rc): $(grep -i error $t/dwt.err | head -1)"

echo "test_bcg: $checks checks, $fails failed"
[ $fails -eq 0 ]
