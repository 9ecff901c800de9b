#!/usr/bin/env bash
# The README's examples on the systems shipped in examples/ (issue 30: the
# README works from a clone alone): each command as the README and
# examples/README.md print it, its exit code and what it says checked, and
# every x checked by tests/cli/mmref.py (a plain reader and residual in
# Python, not clsolve's arithmetic).
. "$(dirname "$0")/lib.sh"
EX=$here/../../examples
cd "$TEST_TMP" || exit 1
ln -sfn "$EX" examples

# b = A*1: x is all ones
expect_exit 0 "$CLSOLVE" solve examples/poisson2d-30.mtx --tol 1e-10 -o x1.mtx
r=$($PY "$here/mmref.py" residual examples/poisson2d-30.mtx x1.mtx)
lt "$r" 1e-9 && ok || bad "poisson2d-30: residual $r"
# the README's --json line
expect_exit 0 "$CLSOLVE" solve examples/poisson2d-30.mtx --precond jacobi --tol 1e-10 -o x.mtx --json
json_get "$TEST_TMP/out" 'j["converged"]' | grep -qx True && ok || bad "--json: not converged"
# the point source
expect_exit 0 "$CLSOLVE" solve examples/poisson2d-30.mtx -b examples/poisson2d-30-source.mtx -o x2.mtx --tol 1e-10
r=$($PY "$here/mmref.py" residual examples/poisson2d-30.mtx x2.mtx examples/poisson2d-30-source.mtx)
lt "$r" 1e-9 && ok || bad "point source: residual $r"
# the 3D one
expect_exit 0 "$CLSOLVE" solve examples/poisson3d-10.mtx --tol 1e-10 -o x3.mtx
r=$($PY "$here/mmref.py" residual examples/poisson3d-10.mtx x3.mtx)
lt "$r" 1e-9 && ok || bad "poisson3d-10: residual $r"
# the non-symmetric one: exit 5 and the README's message, word for word
expect_exit 5 "$CLSOLVE" solve examples/nonsymmetric.mtx
want=$(sed -n '/^\$ clsolve solve examples\/nonsymmetric.mtx/{n;p}' "$here/../../README.md")
got=$(cat "$TEST_TMP/err")
[ -n "$want" ] && [ "$got" = "$want" ] && ok || bad "nonsymmetric: README says '$want', clsolve said '$got'"
# the generated ones are what examples/README.md says made them
for spec in "poisson2d 30 poisson2d-30" "poisson3d 10 poisson3d-10"; do
    set -- $spec
    "$CLSOLVE" gen "$1" "$2" -o "gen-$3.mtx" >/dev/null 2>&1
    cmp -s "gen-$3.mtx" "examples/$3.mtx" && ok || bad "examples/$3.mtx is not what 'clsolve gen $1 $2' writes"
done
# a first run without prebuilt programs says it builds OpenCL programs (on
# a terminal: script(1) gives it one), a second, from the cache, does not;
# with the build's prebuilt programs (build/programs, issue 23 item 5) a
# first run with an empty cache builds nothing
if command -v script >/dev/null; then
    # the suite runs with the program cache off (tests/CMakeLists.txt); a
    # user's run has it on, and this is what it checks
    unset CLSOLVE_PROGRAM_CACHE
    export CLSOLVE_CACHE_DIR=$TEST_TMP/fresh-cache
    rm -rf "$CLSOLVE_CACHE_DIR"
    CLSOLVE_PROGRAMS_DIR=$TEST_TMP/no-programs script -qec "$CLSOLVE solve examples/poisson3d-10.mtx" /dev/null >first.txt 2>&1
    CLSOLVE_PROGRAMS_DIR=$TEST_TMP/no-programs script -qec "$CLSOLVE solve examples/poisson3d-10.mtx" /dev/null >second.txt 2>&1
    grep -q "building OpenCL programs for .* (first use only; cached in $CLSOLVE_CACHE_DIR)" first.txt &&
        grep -q " s\s*$" first.txt && ok || { bad "a first run did not say it builds OpenCL programs"; cat first.txt >&2; }
    ! grep -q "building OpenCL programs" second.txt && ok || bad "a cached run still says it builds"
    progs="$(dirname "$CLSOLVE")/programs"
    if ls "$progs"/*.clbin >/dev/null 2>&1; then
        rm -rf "$CLSOLVE_CACHE_DIR"
        script -qec "$CLSOLVE solve examples/poisson3d-10.mtx" /dev/null >prebuilt.txt 2>&1
        ! grep -q "building OpenCL programs" prebuilt.txt && grep -q "converged" prebuilt.txt && ok ||
            { bad "a first run with the prebuilt programs ($progs) still builds"; cat prebuilt.txt >&2; }
    else
        bad "the build left no prebuilt programs in $progs: $(cat "$progs/build.log" 2>/dev/null | tail -3)"
    fi
fi
echo "test_examples.sh: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
