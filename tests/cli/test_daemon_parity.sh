#!/usr/bin/env bash
# API parity: every solve option of `clsolve solve` works over HTTP and
# means the same there. For each option set (method=pipecg,
# precision=mixed, atol with an initial guess, jacobi), the same system is
# solved locally (`clsolve solve --json --monitor`) and through a daemon
# (`clsolve submit --wait --json --monitor`), and the two must agree: the
# iteration count, the residual history (--json's "residuals" and the job's
# /residuals), the monitor's lines (-ksp_monitor style, iteration 0 on),
# the parameters echoed in the result; x is checked against the system here
# (mmref.py), atol by scipy's rule ||b - Ax|| <= max(tol ||b||, atol).
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data matrices
M=$CLSOLVE_DATA/matrices
D=$TEST_TMP/data
t=$TEST_TMP
rm -rf "$D" "$D".*
daemon_start 1 "$D" || { bad "daemon start"; finish; }
export CLSOLVE_SERVER=$DURL
"$CLSOLVE" gen poisson2d 40 -o "$t/p2.mtx" >/dev/null
$PY - "$t" <<'PY'
import sys
t = sys.argv[1]
n = 1600
open(t + "/x0.mtx", "w").write("%%%%MatrixMarket matrix array real general\n%d 1\n" % n +
                               "".join("%.17g\n" % (0.5 + (i % 7) / 10) for i in range(n)))
PY

# compare LOCAL.json LOCAL.mon REMOTE.json REMOTE.mon: iterations, history, monitor lines, echo
compare() {
    $PY - "$@" <<'PY'
import json, math, sys
lj, lm, rj, rm = sys.argv[1:5]
loc, rem = json.load(open(lj)), json.load(open(rj))
res = rem["result"]
fails = []
def close(a, b):
    return a == b or (a is not None and b is not None and abs(a - b) <= 1e-12 * max(abs(a), abs(b)))
if rem["status"] != "succeeded" or not loc["converged"]:
    fails.append("local converged %s, job %s" % (loc["converged"], rem["status"]))
if loc["iterations"] != res["iterations"]:
    fails.append("iterations: local %d, daemon %d" % (loc["iterations"], res["iterations"]))
for k in ("method", "precond", "precision", "tol", "atol"):
    if loc[k] != res[k]:
        fails.append("%s: local %r, daemon %r" % (k, loc[k], res[k]))
lh, rh = loc["residuals"], rem.get("residuals")
if rh is None or len(lh) != len(rh) or not all(close(a, b) for a, b in zip(lh, rh)):
    fails.append("residual histories differ: %d vs %s values" % (len(lh), None if rh is None else len(rh)))
if len(lh) != loc["iterations"] + 1:
    fails.append("history of %d values for %d iterations" % (len(lh), loc["iterations"]))
def mon(path):
    out = {}
    for line in open(path):
        w = line.split()
        if len(w) == 6 and w[1:5] == ["KSP", "relative", "residual", "norm"]:
            out[int(w[0])] = float(w[5])
    return out
ml, mr = mon(lm), mon(rm)
if sorted(ml) != list(range(loc["iterations"] + 1)):
    fails.append("local monitor iterations %s..." % sorted(ml)[:5])
if sorted(mr) != sorted(ml) or not all(close(ml[k], mr[k]) for k in ml):
    fails.append("monitor lines differ: local %d lines, daemon %d" % (len(ml), len(mr)))
if not all(abs(ml[k] - lh[k]) <= 1e-12 * lh[k] for k in ml):
    fails.append("the monitor's values are not the history's")
for f in fails:
    print(f)
print("iterations %d, %d monitor lines" % (loc["iterations"], len(ml)))
sys.exit(1 if fails else 0)
PY
}

n=0
while read -r mat opts; do
    n=$((n + 1))
    A=$mat
    [ "$mat" = P2 ] && A=$t/p2.mtx
    [ "$mat" != P2 ] && A=$M/$mat.mtx
    # shellcheck disable=SC2086
    "$CLSOLVE" solve "$A" $opts --json --monitor -o "$t/xl$n.mtx" >"$t/l$n.json" 2>"$t/l$n.mon"
    lrc=$?
    # shellcheck disable=SC2086
    "$CLSOLVE" submit "$A" $opts --wait --json --monitor -o "$t/xr$n.mtx" >"$t/r$n.json" 2>"$t/r$n.mon"
    rrc=$?
    [ $lrc = 0 ] && [ $rrc = 0 ] && ok || bad "$mat $opts: solve exit $lrc, submit exit $rrc: $(tail -2 "$t/r$n.mon")"
    if out=$(compare "$t/l$n.json" "$t/l$n.mon" "$t/r$n.json" "$t/r$n.mon"); then ok; else bad "$mat $opts: $out"; fi
    echo "$mat $opts: $out"
    # x from the daemon solves the system as asked
    bfile=""
    rel=$($PY "$here/mmref.py" residual "$A" "$t/xr$n.mtx")
    tol=$(jget "j['tol']" <"$t/l$n.json")
    atol=$(jget "j['atol']" <"$t/l$n.json")
    bn=$($PY "$here/mmref.py" bnorm "$A" 2>/dev/null || echo "")
    $PY - "$rel" "$tol" "$atol" "$bn" "$(jget "j['precision']" <"$t/l$n.json")" <<'PY' && ok || bad "$mat $opts: x misses the tolerance: relative residual $rel"
import sys
rel, tol, atol = map(float, sys.argv[1:4])
bn = float(sys.argv[4]) if sys.argv[4] else None
slack = 1.5 if sys.argv[5] == "double" else 50   # mixed: the matrix values were rounded to float
limit = max(tol, atol / bn) if bn else tol
sys.exit(0 if rel <= slack * limit else 1)
PY
done <<LIST
1138_bus --precond jacobi --tol 1e-10
494_bus --method pipecg --tol 1e-10
494_bus --method cg-single --tol 1e-10
P2 --precision mixed --tol 1e-7
P2 --atol 1e-4 --tol 1e-14 --x0 $t/x0.mtx
LFAT5 --method pipecg --precond jacobi --precision double --tol 1e-12
LIST

# the parameters reach the job as given; an absolute tolerance stops earlier
id=$("$CLSOLVE" submit "$t/p2.mtx" --tol 1e-14 --atol 1e-4 --method pipecg --precision mixed --precond jacobi)
j=$(wait_job "$DURL" "$id")
[ "$(jget "[j['parameters'][k] for k in ('method','precision','precond','atol')]" <<<"$j")" = "['pipecg', 'mixed', 'jacobi', 0.0001]" ] \
    && ok || bad "parameters echoed: $(jget "j['parameters']" <<<"$j")"
# the job's residuals from iteration 0, live and final alike
c=$(curl -s "$DURL/v1/jobs/$id/residuals" | jget "(j['first_iteration'], j['count'] == j['residuals'].__len__(), j['residuals'][0])")
[ "$c" = "(0, True, 1.0)" ] && ok || bad "final residuals: $c"

daemon_stop 60 && ok || bad "daemon stop"
finish
