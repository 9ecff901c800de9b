#!/usr/bin/env bash
# Small jobs several at once (net/scheduler.c, lanes): six systems submitted
# twice each, all at once, to a daemon with three lanes whose every device
# vector starts as NaN (CLSOLVE_POISON=1: a job that read memory it had not
# written, e.g. a buffer the last job left, would give NaN), and again to a
# daemon running one job at a time. Every job succeeds; the concurrent,
# poisoned answers are bit for bit the serial ones; the placement in each
# record says shared (a lane) or exclusive, and jobs did overlap. Under two
# ranks, a job over --shared-max-entries has both ranks to itself while
# small ones share rank 0's device.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon_lib.sh"
need_data matrices
M=$CLSOLVE_DATA/matrices
"$CLSOLVE" gen poisson2d 120 -o "$TEST_TMP/p120.mtx" >/dev/null 2>&1 &&
    "$CLSOLVE" gen poisson2d 90 -o "$TEST_TMP/p90.mtx" >/dev/null 2>&1 && ok || bad "gen"
FILES="$M/494_bus.mtx $M/1138_bus.mtx $M/LFAT5.mtx $M/ani1.mtx $TEST_TMP/p120.mtx $TEST_TMP/p90.mtx"

run_set() { # run_set NAME NP [clsolved options]: the jobs' JSON in $TEST_TMP/NAME.json
    local name=$1 np=$2
    shift 2
    rm -rf "$TEST_TMP/$name"
    daemon_start "$np" "$TEST_TMP/$name" "$@" || { bad "$name: daemon did not start"; return 1; }
    # shellcheck disable=SC2086
    $PY "$here/lanes_check.py" "$DURL" "$TEST_TMP/$name.json" $FILES && ok ||
        bad "$name: submissions failed: $(cat "$TEST_TMP/$name.json")"
    daemon_stop 60 && ok || bad "$name: daemon did not drain"
}

export CLSOLVE_POISON=1
run_set lanes 1 --lanes 3
unset CLSOLVE_POISON
run_set serial 1 --lanes 1
run_set mixed 2 --lanes 2 --shared-max-entries 2000

$PY - "$TEST_TMP" <<'EOF' && ok || bad "lanes: see above"
import json, sys
tmp = sys.argv[1]
fails = []
def load(name):
    return json.load(open("%s/%s.json" % (tmp, name)))["jobs"]
sets = {n: load(n) for n in ("lanes", "serial", "mixed")}
for name, jobs in sets.items():
    if len(jobs) != 12:
        fails.append("%s: %d jobs finished, not 12" % (name, len(jobs)))
    for j in jobs:
        if j["status"] != "succeeded" or not j["solution"]:
            fails.append("%s: %s %s: %s" % (name, j["file"], j["status"], j["error"]))
        elif not j["result"]["true_relative_residual"] <= 1e-10:
            fails.append("%s: %s residual %s" % (name, j["file"], j["result"]["true_relative_residual"]))
        if not j["placement"]:
            fails.append("%s: %s has no placement" % (name, j["file"]))
# lanes: every job in a lane, three at most, and some ran beside another
lanes = sets["lanes"]
for j in lanes:
    p = j["placement"] or {}
    if p.get("mode") != "shared" or p.get("lanes") != 3 or not 0 <= p.get("lane", -1) < 3:
        fails.append("lanes: %s placement %s" % (j["file"], p))
if max((j["placement"] or {}).get("running", 0) for j in lanes) < 2:
    fails.append("lanes: no job ran beside another")
for j in sets["serial"]:
    if (j["placement"] or {}).get("mode") != "exclusive":
        fails.append("serial: %s placement %s" % (j["file"], j["placement"]))
# the same bits whether jobs ran at once on poisoned buffers or one by one
ref = {}
for j in sets["serial"]:
    ref.setdefault(j["file"], set()).add(j["solution"])
for name in ("lanes", "mixed"):
    for j in sets[name]:
        if j["solution"] and ref.get(j["file"]) != {j["solution"]}:
            fails.append("%s: %s differs from the serial solution" % (name, j["file"]))
# mixed (2 ranks): 1138_bus (2,596 entries) and the generated systems are
# over --shared-max-entries 2000 and have both ranks; the small ones rank 0
for j in sets["mixed"]:
    big = j["file"] in ("1138_bus.mtx", "p120.mtx", "p90.mtx")
    want = ("exclusive", 2) if big else ("shared", 1)
    p = j["placement"] or {}
    got = (p.get("mode"), p.get("ranks"), ((j["result"] or {}).get("parts") or {}).get("ranks"))
    if got != want + (want[1],):
        fails.append("mixed: %s placement %s and parts %s, want %s" % (j["file"], p, got[2], want))
for f in fails:
    print("FAIL:", f, file=sys.stderr)
print("lanes: %d jobs checked" % sum(len(v) for v in sets.values()))
sys.exit(1 if fails else 0)
EOF
finish
