#!/usr/bin/env bash
# CG and Jacobi-PCG on the real SPD matrices of ../shared/data/matrices: each
# converges to a relative residual <= 1e-8, recomputed here by an independent
# reader (mmref.py), and the JSON summary agrees with it.
. "$(dirname "$0")/lib.sh"
need_data matrices
M=$CLSOLVE_DATA/matrices
for m in 494_bus 1138_bus LFAT5 ani1; do
    for pc in none jacobi; do
        x=$TEST_TMP/x_${m}_$pc.mtx
        j=$TEST_TMP/${m}_$pc.json
        "$CLSOLVE" solve "$M/$m.mtx" --precond $pc --tol 1e-8 -o "$x" --json >"$j" 2>"$TEST_TMP/err"
        rc=$?
        if [ $rc -ne 0 ]; then bad "$m/$pc: exit $rc: $(cat "$TEST_TMP/err")"; continue; fi
        ok
        res=$($PY "$here/mmref.py" residual "$M/$m.mtx" "$x")
        if lt "$res" 1e-8; then ok; else bad "$m/$pc: recomputed residual $res > 1e-8"; fi
        tr=$(json_get "$j" "j['true_relative_residual']")
        # clsolve's own true residual and ours agree to rounding
        if $PY -c "import sys; a,b=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b) <= 1e-3*b + 1e-15 else 1)" "$tr" "$res"; then ok
        else bad "$m/$pc: reported true residual $tr, recomputed $res"; fi
        [ "$(json_get "$j" "j['converged']")" = True ] && ok || bad "$m/$pc: converged not true"
        [ "$(json_get "$j" "j['precond']")" = "$pc" ] && ok || bad "$m/$pc: precond key"
        echo "$m $pc: $(json_get "$j" "j['iterations']") iterations, residual $res"
    done
done

# CG's iterations beside scipy's (issue 26, item 1): the Hestenes-Stiefel
# recurrence takes no more than the textbook's count plus 2% (the fused
# single-reduction loop it replaced took 2276 on 1138_bus and 1201 on 494_bus
# against scipy's 2204 and 1149); fewer is rounding (the compensated dot
# products: 2149 on 1138_bus, as the textbook loop with exact dot products
# takes 2152), bounded at 10% below.
if /usr/bin/python3 -c 'import scipy' 2>/dev/null; then
    for m in 494_bus 1138_bus; do
        for pc in none jacobi; do
            ref=$(/usr/bin/python3 "$here/cg_iters_ref.py" "$M/$m.mtx" --tol 1e-8 \
                $([ $pc = jacobi ] && echo --jacobi))
            its=$(json_get "$TEST_TMP/${m}_$pc.json" "j['iterations']")
            echo "$m $pc: $its iterations, scipy $ref"
            $PY -c "import sys; i,r=map(int,sys.argv[1:]); sys.exit(0 if 0.9*r <= i <= 1.02*r else 1)" \
                "$its" "$ref" && ok || bad "$m/$pc: $its iterations against scipy's $ref (want within +2%/-10%)"
        done
    done
else
    bad "scipy missing (/usr/bin/python3; deploy/install-deps.sh --test installs python3-scipy)"
fi

# The issue's acceptance command: 1138_bus, Jacobi, tol 1e-10
j=$TEST_TMP/acc.json
"$CLSOLVE" solve "$M/1138_bus.mtx" --precond jacobi --tol 1e-10 -o "$TEST_TMP/x.mtx" --json >"$j"
rc=$?
[ $rc -eq 0 ] && ok || bad "1138_bus jacobi 1e-10 exit $rc"
res=$($PY "$here/mmref.py" residual "$M/1138_bus.mtx" "$TEST_TMP/x.mtx")
lt "$res" 1e-10 && ok || bad "1138_bus 1e-10: recomputed residual $res"

# Pipelined CG against CG (issue 11, item 4), tol 1e-10: with Jacobi its
# iteration count is CG's within 5% (494_bus 412 vs 409, 1138_bus 1017 vs
# 996); without a preconditioner the bus matrices' extra rounding in the
# pipelined recurrences costs it 1.4-1.5x (PETSc's KSPPIPECGRR 1.6-1.8x),
# bounded here at 1.6x. Both reach the true residual.
iters() { "$CLSOLVE" solve "$M/$1.mtx" --method "$2" --precond "$3" --tol 1e-10 -o "$TEST_TMP/xp.mtx" --json 2>"$TEST_TMP/err" \
    | $PY -c "import json,sys; j=json.load(sys.stdin); print(j['iterations'] if j['converged'] and j['true_relative_residual'] <= 1e-10 else -1)"; }
for m in 494_bus 1138_bus; do
    for pc in jacobi none; do
        c=$(iters $m cg $pc); p=$(iters $m pipecg $pc)
        lim=$([ $pc = jacobi ] && echo 1.05 || echo 1.6)
        if [ "${c:--1}" -gt 0 ] && [ "${p:--1}" -gt 0 ] && $PY -c "import sys; sys.exit(0 if $p <= $lim * $c else 1)"; then ok
        else bad "$m/$pc: pipecg $p iterations against CG's $c (bound ${lim}x; -1: not converged to the true residual)"; fi
        echo "$m $pc: cg $c, pipecg $p iterations"
    done
done

# A breakdown is caught at the iteration it happens, in every loop (issue
# 26, item 2): dwt_992 (pattern, indefinite: eigenvalues down to -5.9) with
# four columns together stopped at iteration 52 with p'Ap = -2e37 after 50
# restarts of a "lost recurrence"; now each loop stops within its first few
# iterations, exit 5, with the same message.
for args in "-b gen:random:4" "-b gen:random:4 --rhs-mode sequential" "" "--method pipecg" \
    "--method cg-single" "--precond jacobi -b gen:random:3"; do
    "$CLSOLVE" solve "$M/dwt_992.mtx" $args >/dev/null 2>"$TEST_TMP/bd.err"
    rc=$?
    msg=$(cat "$TEST_TMP/bd.err")
    it=$(sed -n 's/.*at iteration \([0-9]*\)).*/\1/p' "$TEST_TMP/bd.err" | head -1)
    echo "dwt_992 $args: exit $rc, $msg"
    if [ $rc -eq 5 ] && [[ $msg == *"not positive definite"* ]] && [ -n "$it" ] && [ "$it" -le 5 ]; then ok
    else bad "dwt_992 $args: exit $rc, '$msg' (want exit 5, not positive definite, within 5 iterations)"; fi
done
# The staged copies (kernels/la_vec.c: page-locked buffers, a GPU's path
# for large vectors and matrices) forced on PoCL in 4 KiB pieces, one rank
# and two, in the default format and in SELL (whose columns and values are
# then built straight into the staging buffers, la_format.c's sell_stream,
# or made on the device from CSR, sell_device_build): x bit for bit the
# direct copies', and the trace shows the staged path ran (a switch that did
# nothing cannot pass)
m=1138_bus
for fmt in auto sell; do
    for np in 1 2; do
        run() { # run MODE OUT
            if [ $np = 1 ]; then
                env CLSOLVE_STAGE=$1 CLSOLVE_SELL_BUILD=${3:-host} CLSOLVE_STAGE_PIECE=4096 CLSOLVE_TRACE=1 \
                    "$CLSOLVE" solve "$M/$m.mtx" --backend opencl --format $fmt --precond jacobi --tol 1e-10 -o "$2"
            else
                mpirun --oversubscribe -x POCL_MAX_PTHREAD_COUNT -x CLSOLVE_CACHE_DIR -np 2 -x CLSOLVE_STAGE=$1 \
                    -x CLSOLVE_SELL_BUILD=${3:-host} -x CLSOLVE_STAGE_PIECE=4096 -x CLSOLVE_TRACE=1 "$CLSOLVE" solve \
                    "$M/$m.mtx" --backend opencl --format $fmt --precond jacobi --tol 1e-10 -o "$2"
            fi
        }
        w="$fmt np $np"
        run never "$TEST_TMP/x_never.mtx" >/dev/null 2>"$TEST_TMP/never.err" || bad "$w: direct copies failed"
        run always "$TEST_TMP/x_staged.mtx" >/dev/null 2>"$TEST_TMP/staged.err" || bad "$w: staged copies failed"
        grep -q "la: staged read" "$TEST_TMP/staged.err" && grep -q "la: staged write" "$TEST_TMP/staged.err" &&
            ! grep -q "la: staged" "$TEST_TMP/never.err" && ok || bad "$w: the staged path did not run as asked"
        if [ $fmt = sell ]; then
            grep -q "SELL planned, streamed" "$TEST_TMP/staged.err" && grep -q "SELL planned$" "$TEST_TMP/never.err" &&
                ok || bad "$w: SELL was not streamed when staged, or streamed when not"
            # made on the device from CSR (one rank: the whole matrix, a plain source)
            run always "$TEST_TMP/x_dev.mtx" device >/dev/null 2>"$TEST_TMP/dev.err" || bad "$w: SELL on the device failed"
            if [ $np = 1 ]; then
                grep -q "SELL made on the device" "$TEST_TMP/dev.err" && ok || bad "$w: SELL was not made on the device"
            fi
            cmp -s "$TEST_TMP/x_never.mtx" "$TEST_TMP/x_dev.mtx" && ok || bad "$w: x differs with SELL made on the device"
        fi
        cmp -s "$TEST_TMP/x_never.mtx" "$TEST_TMP/x_staged.mtx" && ok || bad "$w: x differs between staged and direct copies"
    done
done
finish
