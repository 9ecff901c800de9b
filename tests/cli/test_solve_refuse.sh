#!/usr/bin/env bash
# Matrices CG must not pretend to solve: dwt_992 (pattern, indefinite as
# 1.0-valued) and west0067 (nonsymmetric) are refused with exit 5 and a
# message a person understands; a non-square matrix with exit 3.
. "$(dirname "$0")/lib.sh"
need_data matrices
M=$CLSOLVE_DATA/matrices
expect_exit 5 "$CLSOLVE" solve "$M/dwt_992.mtx"
grep -q "not positive definite" "$TEST_TMP/err" && ok || bad "dwt_992 message: $(cat "$TEST_TMP/err")"
expect_exit 5 "$CLSOLVE" solve "$M/west0067.mtx"
grep -Eq "not symmetric|not positive definite" "$TEST_TMP/err" && ok || bad "west0067 message: $(cat "$TEST_TMP/err")"
grep -q "west0067.mtx" "$TEST_TMP/err" && ok || bad "west0067 message names no file"

# JSON still comes out, with the error, for scripts
"$CLSOLVE" solve "$M/west0067.mtx" --json >"$TEST_TMP/w.json" 2>/dev/null
[ "$(json_get "$TEST_TMP/w.json" "j['exit_code']")" = 5 ] && ok || bad "west0067 json exit_code"
[ "$(json_get "$TEST_TMP/w.json" "j['converged']")" = False ] && ok || bad "west0067 json converged"

# non-square
printf '%%%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 1.0\n2 2 1.0\n' >"$TEST_TMP/rect.mtx"
expect_exit 3 "$CLSOLVE" solve "$TEST_TMP/rect.mtx"
grep -q "square" "$TEST_TMP/err" && ok || bad "rect message: $(cat "$TEST_TMP/err")"
# zero diagonal
printf '%%%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 1.0\n2 1 0.5\n' >"$TEST_TMP/zd.mtx"
expect_exit 5 "$CLSOLVE" solve "$TEST_TMP/zd.mtx" --precond jacobi
grep -q "(2,2)" "$TEST_TMP/err" && ok || bad "zero diagonal message: $(cat "$TEST_TMP/err")"
finish
