#!/usr/bin/env bash
# bench/pipecg-iters.sh: iterations of clsolve's pipelined CG (PIPECGRR,
# solver/krylov/pipecg.c) beside its CG and beside PETSc's KSPCG, KSPPIPECG,
# KSPPIPECGRR, KSPPIPEPRCG and KSPGROPPCG on the same files, b = A*1,
# x0 = 0, the unpreconditioned residual, one tolerance (issue 11, item 4:
# "pipecg's iteration count on ill-conditioned systems matches CG's").
# Iteration counts, not time: any load is fine. Builds nothing.
#
#   CLSOLVE   the built clsolve (required), e.g. build/clsolve
#   TOL       relative tolerance               (default 1e-10)
#   PCS       preconditioners                  (default "none jacobi")
#   FILES     Matrix Market files              (default the bus matrices and
#             LFAT5 of ../shared/data/matrices)
#   PY        a python3 with petsc4py          (default /usr/bin/python3,
#             deploy/install-deps.sh --bench)
#
#   CLSOLVE=build/clsolve bash bench/pipecg-iters.sh
set -euo pipefail
: "${CLSOLVE:?set CLSOLVE to the built clsolve}"
here=$(cd "$(dirname "$0")" && pwd)
TOL=${TOL:-1e-10}
PCS=${PCS:-none jacobi}
PY=${PY:-/usr/bin/python3}
D=${CLSOLVE_DATA:-$here/../../shared/data}/matrices
FILES=${FILES:-$D/494_bus.mtx $D/1138_bus.mtx $D/LFAT5.mtx}
printf '| matrix | precond | clsolve cg | clsolve pipecg | PETSc cg | PETSc pipecg | PETSc pipecgrr | PETSc pipeprcg | PETSc groppcg |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for f in $FILES; do
    for pc in $PCS; do
        row="| $(basename "$f" .mtx) | $pc"
        for m in cg pipecg; do
            # iterations, with a mark when the true residual misses the tolerance
            v=$("$CLSOLVE" solve "$f" --method $m --precond $pc --tol "$TOL" --json 2>/dev/null \
                | $PY -c "import json,sys; j=json.load(sys.stdin); print(j['iterations'], '' if j['converged'] else '(not converged)')" || echo "failed")
            row="$row | $v"
        done
        while read -r line; do
            row="$row | $line"
        done < <($PY "$here/peers/petsc_iters.py" --tol "$TOL" --pc $pc --maxit 20000 \
                     --methods cg,pipecg,pipecgrr,pipeprcg,groppcg "$f" \
                 | $PY -c "
import json, sys
for l in sys.stdin:
    j = json.loads(l)
    ok = j['reason'] > 0 and j['true_relative_residual'] <= 1.5 * j['tol']
    print(j['iterations'], '' if ok else '(true residual %.1e)' % j['true_relative_residual'])")
        echo "$row |"
    done
done
