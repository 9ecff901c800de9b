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

# The issue's acceptance command: 1138_bus, Jacobi, tol 1e-10
j=$TEST_TMP/acc.json
"$CLSOLVE" solve "$M/1138_bus.mtx" --precond jacobi --tol 1e-10 -o "$TEST_TMP/x.mtx" --json >"$j"
rc=$?
[ $rc -eq 0 ] && ok || bad "1138_bus jacobi 1e-10 exit $rc"
res=$($PY "$here/mmref.py" residual "$M/1138_bus.mtx" "$TEST_TMP/x.mtx")
lt "$res" 1e-10 && ok || bad "1138_bus 1e-10: recomputed residual $res"
finish
