#!/usr/bin/env bash
# Every malformed file gets exit code 3 and a "FILE:LINE: what" message, from
# both `solve` and `check`; never a crash (a signal would give exit >= 128).
. "$(dirname "$0")/lib.sh"
need_data bad-mtx
for f in "$CLSOLVE_DATA"/bad-mtx/*.mtx; do
    for cmd in solve check; do
        "$CLSOLVE" $cmd "$f" >"$TEST_TMP/out" 2>"$TEST_TMP/err"
        rc=$?
        if [ "$(basename "$f")" = 3by0.mtx ]; then
            # a 3 x 0 array is a valid (empty) matrix: check describes it,
            # solve refuses it as not square
            if { [ $cmd = check ] && [ $rc -eq 0 ]; } ||
               { [ $cmd = solve ] && [ $rc -eq 3 ] && grep -q "square" "$TEST_TMP/err"; }; then ok
            else bad "$cmd $f: exit $rc: $(cat "$TEST_TMP/err")"; fi
        elif [ $rc -eq 3 ]; then
            ok
            grep -Eq "^clsolve $cmd: $f:[0-9]+: " "$TEST_TMP/err" && ok ||
                bad "$cmd $f: message not FILE:LINE: $(cat "$TEST_TMP/err")"
        else
            bad "$cmd $f: exit $rc: $(cat "$TEST_TMP/err")"
        fi
    done
done
# handcrafted: each error class through the CLI, with its line
t=$TEST_TMP
printf '%%%%MatrixMarket matrix coordinate real general\n%% c\n3 3 2\n1 1 1.0\n4 1 1.0\n' >$t/range.mtx
expect_exit 3 "$CLSOLVE" check $t/range.mtx
grep -q "range.mtx:5:" $t/err && ok || bad "index out of range line: $(cat $t/err)"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1.0\n2 2 x\n' >$t/nan.mtx
expect_exit 3 "$CLSOLVE" check $t/nan.mtx
grep -q "nan.mtx:4:" $t/err && ok || bad "non-number line: $(cat $t/err)"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1.0\n' >$t/short.mtx
expect_exit 3 "$CLSOLVE" check $t/short.mtx
grep -q "short.mtx:" $t/err && ok || bad "too few entries: $(cat $t/err)"
printf '%%%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1.0 0.0\n' >$t/cplx.mtx
expect_exit 3 "$CLSOLVE" solve $t/cplx.mtx
grep -qi "not supported" $t/err && ok || bad "complex: $(cat $t/err)"
printf '%%%%MatrixMarket matrix coordinate real general\n1000000000000 1000000000000 1000000000000\n1 1 1\n' >$t/huge.mtx
expect_exit 3 "$CLSOLVE" check $t/huge.mtx
expect_exit 1 "$CLSOLVE" solve $t/does-not-exist.mtx   # I/O error, not a parse error
grep -q "does-not-exist.mtx" $t/err && ok || bad "missing file message: $(cat $t/err)"
finish
