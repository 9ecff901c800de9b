#!/usr/bin/env bash
# `mpirun -np K clsolve solve` against the one-rank solve, on PoCL:
#  - the real matrices of ../shared/data/matrices and generated Poisson
#    systems, cg and pipecg, none and jacobi, 1..4 ranks (--oversubscribe),
#    several devices per rank (POCL_DEVICES="pthread pthread" exposes two
#    CPU devices): iterations within +-1 and x within 1e-10 relative of the
#    one-rank result (the solver is built to give the same bits: compensated
#    dots, partition-independent SpMV; the test asks only what the issue asks)
#  - the four input paths (rank 0 scatters, --read everywhere, --read ranged
#    (test_ranged_read.sh has its own cases), gen:)
#  - edge cases: more parts than rows, a part with no ghosts, a rank with no
#    OpenCL device (clear error, same exit code everywhere), exit codes 2/3/4
#  - the halo unit test under mpirun
# The reference is one rank driving two parts (--devices-per-rank 2 on the
# one PoCL device): since 2026-11 there is one engine (solver/krylov/dcg.c); CG on
# K parts must give the SAME BITS whatever K and the ranks (compensated sums,
# one SpMV format for every part), checked with `identical` on the Poisson
# systems. A one-part solve on a CPU device uses plain sums (la_init_flags:
# nothing to split, 30% faster there) and is checked with `same`.
# --min-rows-per-part 1 forces the split: by default these small systems
# would use one part (partition.h).
. "$(dirname "$0")/lib.sh"
t=$TEST_TMP
export POCL_MAX_PTHREAD_COUNT=${POCL_MAX_PTHREAD_COUNT:-1} # 4 ranks on 2 cores
MPIRUN=(mpirun --oversubscribe -x POCL_MAX_PTHREAD_COUNT -x CLSOLVE_CACHE_DIR)
command -v mpirun >/dev/null || { echo "SKIP: no mpirun" >&2; exit 77; }

# same ITS_A ITS_B XA XB LABEL: iterations within 1, x within 1e-10 relative
same() {
    if $PY - "$@" <<'PY'; then ok; else bad "$5: differs from the one-rank solve"; fi
import sys
def vec(p):
    with open(p) as f:
        lines = [l for l in f if not l.startswith('%')]
    return [float(v) for v in lines[1:]]
ia, ib, xa, xb, label = sys.argv[1:]
a, b = vec(xa), vec(xb)
num = sum((u - v) ** 2 for u, v in zip(a, b)) ** 0.5
den = sum(u * u for u in a) ** 0.5 or 1.0
okk = abs(int(ia) - int(ib)) <= 1 and len(a) == len(b) and num / den <= 1e-10
if not okk:
    print(f"{label}: iterations {ia} vs {ib}, |x - x1|/|x1| = {num/den:.3e}", file=sys.stderr)
sys.exit(0 if okk else 1)
PY
}

# run NAME NP [mpirun args --] clsolve args...: JSON to $t/NAME.json, x to $t/NAME.mtx
run() {
    local name=$1 np=$2
    shift 2
    local pre=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do pre+=("$1"); shift; done
    shift
    "${MPIRUN[@]}" -np "$np" "${pre[@]}" "$CLSOLVE" solve "$@" --json -o "$t/$name.mtx" \
        >"$t/$name.json" 2>"$t/$name.err"
    echo $? >"$t/$name.rc"
}
its() { json_get "$t/$1.json" "j['iterations']"; }

# identical XA XB LABEL: the two solution files hold the same numbers
identical() {
    if cmp -s "$1" "$2"; then ok; else bad "$3: not bit-identical to the one-part solve"; fi
}

compare_np() { # LABEL NPLIST [mpirun args --] solve args
    local label=$1 nps=$2
    shift 2
    local pre=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do pre+=("$1"); shift; done
    shift
    run base 1 -- "$@" --devices-per-rank 2
    if [ "$(cat $t/base.rc)" != 0 ]; then bad "$label np=1: exit $(cat $t/base.rc): $(tail -3 $t/base.err)"; return; fi
    ok
    # the one-part solve (plain sums on a CPU device) converges too
    run one 1 -- "$@"
    [ "$(json_get $t/one.json "(j['converged'], j['parts']['total'])")" = "(True, 1)" ] && ok ||
        bad "$label one part: $(json_get $t/one.json "(j.get('converged'), j.get('error'))")"
    for np in $nps; do
        run np$np "$np" "${pre[@]}" -- "$@"
        if [ "$(cat $t/np$np.rc)" != 0 ]; then
            bad "$label np=$np: exit $(cat $t/np$np.rc): $(grep -v '^[- ]' $t/np$np.err | head -3)"
            continue
        fi
        ok
        same "$(its base)" "$(its np$np)" $t/base.mtx $t/np$np.mtx "$label np=$np"
        case "$label" in *poisson*" cg"*) identical $t/base.mtx $t/np$np.mtx "$label np=$np" ;; esac
        parts=$(json_get $t/np$np.json "j['parts']['total']")
        [ "$parts" -gt 1 ] && ok || bad "$label np=$np: only $parts part(s)"
    done
    echo "$label: $(its base) iterations on 1 rank; ranks $nps agree"
}

# ---- generated Poisson systems (no shared data needed)
"$CLSOLVE" gen poisson3d 14 -o $t/p3.mtx >/dev/null
"$CLSOLVE" gen poisson2d 40 -o $t/p2.mtx >/dev/null
# The sanitized stage (CLSOLVE_TEST_STAGE=sanitized, tests/CMakeLists.txt)
# runs PoCL under ASan several times slower: there every case below runs on
# the most ranks only (4, where the partition and halo code has the most to
# do), and the real matrices are 494_bus and ani1 with cg (pipecg's own
# code runs on the Poisson systems); every check of a case that runs is
# made. The plain stage runs all of it.
san=0
[ "${CLSOLVE_TEST_STAGE:-}" = sanitized ] && san=1
p3ranks="2 3 4"
[ $san = 1 ] && p3ranks="4"
for m in cg pipecg; do
    compare_np "poisson3d 14 $m" "$p3ranks" -- $t/p3.mtx --method $m --tol 1e-10 --min-rows-per-part 1
    compare_np "poisson2d 40 $m jacobi" "3" -- $t/p2.mtx --method $m --precond jacobi --tol 1e-10 --min-rows-per-part 1
done
# one engine: --engine is accepted with a note and changes nothing
run eng1 1 -- $t/p3.mtx --tol 1e-10
run eng2 2 -- $t/p3.mtx --tol 1e-10 --min-rows-per-part 1 --engine local
[ "$(json_get $t/eng1.json "j['engine']")" = fused ] && ok || bad "engine of a CG solve: $(json_get $t/eng1.json "j['engine']")"
[ "$(json_get $t/eng2.json "(j['engine'], j['parts']['total'], j['converged'])")" = "('fused', 2, True)" ] && ok || bad "--engine local on 2 ranks: $(json_get $t/eng2.json "(j['engine'], j['parts'])")"
grep -q "does nothing" $t/eng2.err && ok || bad "--engine: no note"
same "$(its eng1)" "$(its eng2)" $t/eng1.mtx $t/eng2.mtx "--engine local, 2 parts"
run engp 1 -- $t/p3.mtx --tol 1e-10 --method pipecg --engine local
[ "$(cat $t/engp.rc)" = 0 ] && ok || bad "--engine local --method pipecg: exit $(cat $t/engp.rc)"
# without -o, x stays where each rank's rows are: the error against x = 1
# (b = A*1) is measured there, and is the written x's to the bit
"${MPIRUN[@]}" -np 2 "$CLSOLVE" solve $t/p3.mtx --tol 1e-10 --min-rows-per-part 1 --json \
    >$t/nox.json 2>$t/nox.err
if $PY - $t/nox.json $t/eng2.mtx $t/eng2.json <<'PY'; then ok; else bad "max |x - 1| without -o: $(cat $t/nox.err)"; fi
import json, sys
j, x, w = json.load(open(sys.argv[1])), sys.argv[2], json.load(open(sys.argv[3]))
with open(x) as f:
    v = [float(l) for l in [l for l in f if not l.startswith('%')][1:]]
m = max(abs(u - 1.0) for u in v)
ok = j['max_error_vs_exact'] == m == w['max_error_vs_exact'] and j['iterations'] == w['iterations']
print('without -o %r, from the written x %r, with -o %r' % (j['max_error_vs_exact'], m, w['max_error_vs_exact']))
sys.exit(0 if ok else 1)
PY
# the same on a system scaled by 2^-600 (x scaled back by each rank: x_exp != 0)
$PY - $t/p3.mtx $t/p3s.mtx <<'PY'
import math, sys
with open(sys.argv[1]) as f, open(sys.argv[2], 'w') as g:
    head = True
    for l in f:
        if l.startswith('%') or head:
            g.write(l)
            head = head and l.startswith('%')
            continue
        i, j, v = l.split()
        g.write('%s %s %r\n' % (i, j, math.ldexp(float(v), -600)))
PY
run scaled 2 -- $t/p3s.mtx --tol 1e-10 --min-rows-per-part 1
"${MPIRUN[@]}" -np 2 "$CLSOLVE" solve $t/p3s.mtx --tol 1e-10 --min-rows-per-part 1 --json \
    >$t/scaledx.json 2>$t/scaledx.err
if $PY - $t/scaledx.json $t/scaled.mtx $t/scaled.json $t/eng2.json <<'PY'; then ok; else bad "scaled, max |x - 1| without -o: $(cat $t/scaledx.err)"; fi
import json, sys
j, x, w, u = json.load(open(sys.argv[1])), sys.argv[2], json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
with open(x) as f:
    v = [float(l) for l in [l for l in f if not l.startswith('%')][1:]]
m = max(abs(e - 1.0) for e in v)
print('scaled: without -o %r, from the written x %r, with -o %r; iterations %s, unscaled %s' % (
    j['max_error_vs_exact'], m, w['max_error_vs_exact'], j['iterations'], u['iterations']))
sys.exit(0 if j['max_error_vs_exact'] == m == w['max_error_vs_exact'] and
         j['iterations'] == w['iterations'] == u['iterations'] else 1)
PY
# an x beyond double's range is refused with or without -o, named at its row:
# A = 1e-300 I, b = (1, 1e300) gives x = (1e300, 1e600); row 2 is rank 1's
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1e-300\n2 2 1e-300\n' >$t/d300.mtx
printf '%%%%MatrixMarket matrix array real general\n2 1\n1\n1e300\n' >$t/b300.mtx
for o in "" "-o $t/r300.mtx"; do
    "${MPIRUN[@]}" -np 2 "$CLSOLVE" solve $t/d300.mtx -b $t/b300.mtx --min-rows-per-part 1 $o \
        >$t/r300.out 2>$t/r300.err
    rc=$?
    [ $rc = 5 ] && grep -q "solution entry 2 is beyond the range of double precision" $t/r300.err && ok ||
        bad "x out of range on 2 ranks (${o:-no -o}): exit $rc: $(head -c 300 $t/r300.err)"
done

# several devices per rank: 1 rank x 2 devices, 2 ranks x 2 devices
export POCL_DEVICES="pthread pthread"
if [ "$("$CLSOLVE" devices --json | json_get /dev/stdin 'len(j)')" -ge 2 ] 2>/dev/null; then
    for m in cg pipecg; do
        run base 1 -- $t/p3.mtx --method $m --tol 1e-10 --min-rows-per-part 1
        run d2 1 -x POCL_DEVICES -- $t/p3.mtx --method $m --tol 1e-10 --min-rows-per-part 1 --devices-per-rank 2
        run d22 2 -x POCL_DEVICES -- $t/p3.mtx --method $m --tol 1e-10 --min-rows-per-part 1 --device 0,1
        for r in d2 d22; do
            [ "$(cat $t/$r.rc)" = 0 ] && ok || bad "$m $r: exit $(cat $t/$r.rc): $(grep -v '^[- ]' $t/$r.err | head -3)"
            same "$(its base)" "$(its $r)" $t/base.mtx $t/$r.mtx "$m $r"
        done
        [ "$(json_get $t/d2.json "j['parts']")" = "{'ranks': 1, 'devices_per_rank': 2, 'total': 2}" ] && ok || bad "d2 parts: $(json_get $t/d2.json "j['parts']")"
        [ "$(json_get $t/d22.json "j['parts']['total']")" = 4 ] && ok || bad "d22 parts"
        [ "$(json_get $t/d22.json "sorted(d['index'] for d in j['devices'])")" = "[0, 0, 1, 1]" ] && ok || bad "d22 device indices"
    done
    echo "several devices per rank: 1x2 and 2x2 agree with one device"
else
    echo "note: PoCL exposes one device here; several-devices-per-rank cases not run" >&2
fi
unset POCL_DEVICES

# the three input paths give the same system
run file 3 -- $t/p3.mtx --tol 1e-10 --min-rows-per-part 1 --read rank0
run every 3 -- $t/p3.mtx --tol 1e-10 --min-rows-per-part 1 --read-everywhere
run ranged 3 -- $t/p3.mtx --tol 1e-10 --min-rows-per-part 1 --read ranged
run gen 3 -- gen:poisson3d:14 --tol 1e-10 --min-rows-per-part 1
for r in every ranged gen; do
    [ "$(cat $t/$r.rc)" = 0 ] && ok || bad "input $r: exit $(cat $t/$r.rc)"
    same "$(its file)" "$(its $r)" $t/file.mtx $t/$r.mtx "input path $r"
done
# an anisotropic generated grid
run aniso 2 -- gen:poisson3d:10x12x7 --min-rows-per-part 1
[ "$(json_get $t/aniso.json "(j['rows'], j['nnz'], j['converged'])")" = "(840, $((7*840 - 2*(12*7 + 10*7 + 10*12))), True)" ] && ok || bad "gen:poisson3d:10x12x7: $(json_get $t/aniso.json "(j['rows'], j['nnz'], j['converged'])")"

# explicit b and x0 are scattered with the rows
$PY - "$t" <<'PY'
import sys
t = sys.argv[1]
n = 14 ** 3
open(t + "/b.mtx", "w").write("%%%%MatrixMarket matrix array real general\n%d 1\n" % n +
                              "".join("%d\n" % (i % 7 - 3) for i in range(n)))
open(t + "/ones.mtx", "w").write("%%%%MatrixMarket matrix array real general\n%d 1\n" % n + "1\n" * n)
PY
run b1 1 -- $t/p3.mtx -b $t/b.mtx --tol 1e-10 --min-rows-per-part 1
run b3 3 -- $t/p3.mtx -b $t/b.mtx --tol 1e-10 --min-rows-per-part 1
same "$(its b1)" "$(its b3)" $t/b1.mtx $t/b3.mtx "explicit b"
r=$($PY "$here/mmref.py" residual $t/p3.mtx $t/b3.mtx $t/b.mtx)
lt "$r" 1e-10 && ok || bad "explicit b, 3 ranks: recomputed residual $r"
run x0 3 -- $t/p3.mtx --x0 $t/ones.mtx --min-rows-per-part 1
[ "$(its x0)" = 0 ] && ok || bad "x0 = exact on 3 ranks: $(its x0) iterations"

# ---- edge cases
# more parts than rows: 3 rows over 4 ranks x 2 devices -> 3 parts, one rank idle
printf '%%%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n1 1 4\n2 2 4\n3 3 4\n2 1 -1\n' >$t/t3.mtx
run tiny 4 -- $t/t3.mtx --devices-per-rank 2 --min-rows-per-part 1
[ "$(cat $t/tiny.rc)" = 0 ] && ok || bad "3 rows on 4 ranks x 2: exit $(cat $t/tiny.rc)"
[ "$(json_get $t/tiny.json "(j['parts']['total'], j['max_error_vs_exact'] < 1e-12)")" = "(3, True)" ] && ok || bad "3 rows: $(json_get $t/tiny.json "j['parts']")"
# row 3 is decoupled from rows 1-2: its part has no ghosts
[ "$(json_get $t/tiny.json "[d['ghosts'] for d in j['devices']]")" = "[1, 1, 0]" ] && ok || bad "ghost counts $(json_get $t/tiny.json "[d['ghosts'] for d in j['devices']]")"
# the small-system rule: by default 494 rows stay in one part on 4 ranks
run small 4 -- $CLSOLVE_DATA/matrices/494_bus.mtx
[ "$(json_get $t/small.json "j['parts']")" = "{'ranks': 4, 'devices_per_rank': 1, 'total': 1}" ] 2>/dev/null && ok || \
    { [ -d "$CLSOLVE_DATA/matrices" ] && bad "494_bus default layout: $(json_get $t/small.json "j['parts']")" || ok; }
# a rank with no OpenCL device: a clear error, the same exit code on every rank
mkdir -p $t/novendors
"${MPIRUN[@]}" -np 1 "$CLSOLVE" solve $t/p3.mtx --min-rows-per-part 1 --json : \
    -np 1 -x OCL_ICD_VENDORS=$t/novendors "$CLSOLVE" solve $t/p3.mtx --min-rows-per-part 1 --json \
    >$t/nodev.json 2>$t/nodev.err
rc=$?
[ $rc = 1 ] && ok || bad "rank without devices: exit $rc"
grep -q "rank 1: no OpenCL platform" $t/nodev.err && ok || bad "rank without devices: message: $(head -2 $t/nodev.err)"
# exit codes under mpirun: 2 usage, 3 bad input, 4 not converged (x still written)
expect_exit 2 "${MPIRUN[@]}" -np 2 "$CLSOLVE" solve $t/p3.mtx --method bicg
printf '%%%%MatrixMarket matrix array real general\n5 1\n1\n1\n1\n1\n1\n' >$t/short.mtx
expect_exit 3 "${MPIRUN[@]}" -np 2 "$CLSOLVE" solve $t/p3.mtx -b $t/short.mtx
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 x 1\n' >$t/bad.mtx
expect_exit 3 "${MPIRUN[@]}" -np 2 "$CLSOLVE" solve $t/bad.mtx
grep -q "bad.mtx:4:" $t/err && ok || bad "parse error location: $(head -1 $t/err)"
expect_exit 4 "${MPIRUN[@]}" -np 3 "$CLSOLVE" solve $t/p3.mtx --maxiter 3 --min-rows-per-part 1 -o $t/x4.mtx
[ -s $t/x4.mtx ] && ok || bad "exit 4 wrote no solution"

# the halo unit test on 3 ranks
ut=$(dirname "$CLSOLVE")/tests/test_halo
if [ -x "$ut" ]; then
    "${MPIRUN[@]}" -np 3 "$ut" >$t/ut.out 2>&1 && ok || bad "test_halo on 3 ranks: $(grep -v '^[- ]' $t/ut.out | tail -5)"
fi

# ---- the real matrices
if [ -d "$CLSOLVE_DATA/matrices" ]; then
    M=$CLSOLVE_DATA/matrices
    # the sanitized stage: 494_bus and ani1, cg, 4 ranks (above)
    mats="494_bus 1138_bus LFAT5 ani1" ranks="2 3 4" methods="cg pipecg"
    if [ $san = 1 ]; then mats="494_bus ani1" ranks="4" methods="cg"; fi
    for mat in $mats; do
        for m in $methods; do
            compare_np "$mat $m" "$ranks" -- $M/$mat.mtx --method $m --tol 1e-10 --min-rows-per-part 1
        done
        compare_np "$mat cg jacobi" "3" -- $M/$mat.mtx --precond jacobi --tol 1e-10 --min-rows-per-part 1
    done
else
    echo "note: $CLSOLVE_DATA/matrices not found: real matrices not run" >&2
fi
finish
