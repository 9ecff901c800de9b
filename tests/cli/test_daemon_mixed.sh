#!/usr/bin/env bash
# Mixed load (net/scheduler.c, the exclusive lane): a large job over
# --shared-max-entries runs in a thread of its own with every rank and
# device, and small jobs submitted while it runs go on in the lanes beside
# it, finishing before it does, each with its own record (placement
# shared), its answer checked; the large one's placement says exclusive and
# it succeeds too. With --lanes 1 every job still runs alone, in order: the
# small ones finish after the large one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"
need_data matrices
M=$CLSOLVE_DATA/matrices
t=$TEST_TMP
# the large job: poisson2d 1000 at 1e-12, about 3x the work of poisson2d
# 700, which in the CI at 7c02351 (beside test_daemon_faults, on the loaded
# 2-core machine) ended when only 1 of the 6 small jobs had
"$CLSOLVE" gen poisson2d 1000 -o "$t/big.mtx" >/dev/null || { bad "gen"; finish; }

mixed() { # mixed NAME LANES: the large job, then 6 small ones while it runs
    local name=$1 lanes=$2
    rm -rf "$t/$name"
    daemon_start 1 "$t/$name" --lanes "$lanes" --shared-max-entries 5000 || { bad "$name: daemon start"; return 1; }
    big=$(submit_job "$DURL" "$t/big.mtx" "tol=1e-12") || { bad "$name: submit big"; return 1; }
    # the large job is running (past its set-up) before the small ones come
    $DCLIENT running "$DURL" "$big" --iteration 5 --timeout 300 >/dev/null && ok || bad "$name: the large job never ran"
    small=""
    for i in 1 2 3 4 5 6; do
        small="$small $(submit_job "$DURL" "$M/494_bus.mtx" "tol=1e-10&precond=jacobi")"
    done
    for id in $big $small; do
        wait_job "$DURL" "$id" 600 >"$t/$name.$id.json" || bad "$name: $id did not end"
    done
    $PY - "$t" "$name" "$big" $small <<'PYEOF'
import json, sys
tmp, name, big, small = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def load(i):
    return json.load(open("%s/%s.%s.json" % (tmp, name, i)))
B = load(big)
fails = []
if B["status"] != "succeeded" or (B.get("placement") or {}).get("mode") != "exclusive":
    fails.append("big: %s, placement %s, error %s" % (B["status"], B.get("placement"), B.get("error")))
before = 0
for i in small:
    j = load(i)
    r = j.get("result") or {}
    if j["status"] != "succeeded" or not (r.get("true_relative_residual", 1) <= 1e-10):
        fails.append("small %s: %s %s" % (i, j["status"], j.get("error")))
    before += j["finished_at"] < B["finished_at"]
    mode = (j.get("placement") or {}).get("mode")
    if name == "lanes" and mode != "shared":
        fails.append("small %s placement %s" % (i, j.get("placement")))
if name == "lanes" and before != len(small):
    fails.append("only %d of %d small jobs finished while the large one ran" % (before, len(small)))
if name == "serial" and before != 0:
    fails.append("lanes 1: %d small jobs finished before the large one" % before)
for f in fails:
    print("FAIL: %s: %s" % (name, f), file=sys.stderr)
print("%s: %d of %d small jobs ended while the large one ran" % (name, before, len(small)))
sys.exit(1 if fails else 0)
PYEOF
    [ $? -eq 0 ] && ok || bad "$name: see above"
    daemon_stop 60 && ok || bad "$name: daemon did not drain"
}
mixed lanes 2
mixed serial 1
finish
