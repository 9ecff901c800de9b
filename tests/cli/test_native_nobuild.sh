#!/usr/bin/env bash
# A solve on the native CPU loops builds and launches only what it uses
# (issue 23, item 5). On PoCL a program's first build took 15-25 s and each
# kernel's first launch at a work-group size 0.1-0.5 s with empty caches,
# so a first solve with amg, ic0, chebyshev or block CG used to wait 22-31 s
# for programs and kernels it never ran (docs/benchmarks.md, "A first solve
# builds only what it runs"). Each solve here runs with CLSOLVE_TRACE=1,
# whose last lines count the programs and kernel launches of the process
# (ocl_trace_stats) and name every program obtained ("ocl: program ...").
# Checked, for none, jacobi, chebyshev, ic0 (sweeps and exact), amg,
# cg-single and block CG (bcg, 4 columns), on PoCL's CPU device with the
# native loops: 0 kernel launches, no preconditioner program (pc.cl) and no
# AMG program (amg.cl), converged with a true residual under tol; and the
# same solve with --backend opencl launches kernels (so the count can fail)
# and takes the same iterations within one.
. "$(dirname "$0")/lib.sh"
t=$TEST_TMP
"$CLSOLVE" gen poisson3d 24 -o "$t/p24.mtx" >/dev/null || { bad "gen"; finish; }
tol=1e-8
solve() { # solve NAME BACKEND ARGS...: trace in $t/NAME.err, report in $t/NAME.json
    local name=$1 be=$2
    shift 2
    CLSOLVE_TRACE=1 "$CLSOLVE" solve "$t/p24.mtx" --device cpu --backend "$be" --tol $tol \
        --json "$@" >"$t/$name.json" 2>"$t/$name.err" || bad "$name: exit $? $(tail -3 "$t/$name.err")"
}
launches() { # the process's kernel launches, from its trace's last count
    sed -n 's/.*OpenCL programs .* \([0-9][0-9]*\) kernel launches.*/\1/p' "$1" | tail -1
}
for cfg in "none" "jacobi" "chebyshev" "ic0" "ic0 --precond-sweeps 0" "amg" \
    "jacobi --method cg-single" "jacobi --method bcg -b gen:random:4" \
    "none --method bcg -b gen:random:3"; do
    name=${cfg// /_}
    name=${name//:/_}
    solve "$name-n" auto --precond $cfg
    solve "$name-o" opencl --precond $cfg
    ln=$(launches "$t/$name-n.err")
    lo=$(launches "$t/$name-o.err")
    [ "$ln" = 0 ] && ok || bad "$cfg: the native solve launched '$ln' kernels"
    [ -n "$lo" ] && [ "$lo" -gt 0 ] && ok || bad "$cfg: the kernels' solve counted '$lo' launches"
    if grep -E "ocl: program .*(pc\.cl|amg\.cl)" "$t/$name-n.err" >&2; then
        bad "$cfg: the native solve built a program it does not run (above)"
    else
        ok
    fi
    got=$(json_get "$t/$name-n.json" "'%s %s' % (j['converged'], j['true_relative_residual'] < $tol)")
    [ "$got" = "True True" ] && ok || bad "$cfg: native converged, true residual under tol: $got"
    kn=$(json_get "$t/$name-n.json" "j['iterations']")
    ko=$(json_get "$t/$name-o.json" "j['iterations']")
    $PY -c "import sys; a,b=int(sys.argv[1]),int(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1 else 1)" \
        "$kn" "$ko" && ok || bad "$cfg: $kn iterations native, $ko with the kernels"
    echo "$cfg: native $kn iterations, 0 launches; kernels $ko iterations, $lo launches"
done
finish
