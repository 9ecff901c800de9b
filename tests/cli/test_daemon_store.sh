#!/usr/bin/env bash
# The job store's failure paths (issue 18): no fault of the store's own
# disk loses an accepted job, and memory (the API) and disk (job.json)
# agree after every transition. The daemon runs with tests/fault/clsfault.c
# preloaded; "io" rules fail its file system calls (store_faults.py):
#  1. each write, fsync and rename of a job's life under DATA/jobs/ fails in
#     turn (the 1st, the 2nd, ... until a job meets none): every job ends
#     succeeded (a failed claim or final record is retried) or failed with
#     the fault in its message (a solution file), memory and disk agree;
#  2. every write fails: the job stays queued with store_error, /readyz
#     says store-unhealthy (503), the metric 0; the fault gone, it runs;
#     a final record that cannot be written: the job shows running, phase
#     saving, and is written by the retry; a cancel that cannot be written
#     is a 500 and the job stays queued; DELETE whose record cannot be
#     removed is a 500 and the job is kept; whose files cannot all be
#     removed is a 500 saying so, and the next start removes the rest; a
#     disk that fills as a job writes its solution: the job waits (note,
#     /readyz) and succeeds once space returns;
#  3. a restart (drain, start) keeps every job with its status;
#  4. records that fail to load are quarantined, never deleted: a corrupt
#     job.json, stored parameters that are not valid ("precond": "ilu"), a
#     job.json that cannot be opened (EMFILE every time); one that fails
#     twice (EMFILE) loads at the third try; a job directory without
#     job.json (a removal cut short) is removed; log lines, a metric.
# errors.md: STORE-CANCEL-UNWRITTEN STORE-DELETE-RECORD STORE-DELETE-FILES
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
[ -n "${CLSFAULT_LIB:-}" ] && [ -f "$CLSFAULT_LIB" ] || { echo "SKIP: CLSFAULT_LIB not built" >&2; exit 77; }
# the preloaded library comes before the sanitizer's runtime in a sanitized
# build (as in test_daemon_faults.sh)
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
D=$TEST_TMP/data
F=$TEST_TMP/fault
rm -rf "$D" "$D".* "$F"
mkdir -p "$F"
SMALL=$TEST_TMP/small.mtx
BIG=$TEST_TMP/big.mtx # a few seconds of iterations at tol 1e-12
"$CLSOLVE" gen poisson2d 30 -o "$SMALL" >/dev/null || { bad "gen"; finish; }
"$CLSOLVE" gen poisson2d 400 -o "$BIG" >/dev/null || { bad "gen"; finish; }
SF="$PY $here/store_faults.py"
start() { LD_PRELOAD=$CLSFAULT_LIB CLSFAULT_DIR=$F daemon_start 1 "$D" --lanes 1 "$@"; }  # one job at a time: a queued job behind a running one
start || { bad "daemon start"; finish; }
DATA=$(realpath "$D")

# 1, 2
$SF life "$DURL" "$DATA" "$F" "$SMALL" >"$TEST_TMP/life.out" 2>&1
rc=$?
grep -E "^(FAIL|  )" "$TEST_TMP/life.out"
[ $rc = 0 ] && ok || bad "a job's life with faults: $rc failures"
$SF paths "$DURL" "$DATA" "$F" "$SMALL" "$BIG" >"$TEST_TMP/paths.out" 2>&1
rc=$?
grep -E "^FAIL" "$TEST_TMP/paths.out"
[ $rc = 0 ] && ok || bad "store failure paths: $rc failures"
leftover=$(sed -n 's/^LEFTOVER //p' "$TEST_TMP/paths.out")

# 3. a restart keeps every job, with its status
$SF snapshot "$DURL" "$TEST_TMP/snap.json" >/dev/null || bad "snapshot"
daemon_stop 120 && ok || bad "drain"
start || { bad "restart"; finish; }
$SF compare "$DURL" "$TEST_TMP/snap.json" | grep -E "^FAIL" && bad "jobs changed across a restart" || ok
[ -n "$leftover" ] && [ ! -e "$DATA/jobs/$leftover" ] && ok ||
    bad "the files DELETE could not remove are still there after the restart"
daemon_stop 120 || bad "drain 2"

# 4. quarantine
ids=($($PY -c 'import json,sys; print(" ".join(k for k, v in json.load(open(sys.argv[1])).items() if v == "succeeded"))' "$TEST_TMP/snap.json"))
[ ${#ids[@]} -ge 5 ] || { bad "need 5 finished jobs, have ${#ids[@]}"; finish; }
A=${ids[0]} B=${ids[1]} C=${ids[2]} E1=${ids[3]} E2=${ids[4]}
head -c 40 "$DATA/jobs/$A/job.json" >"$DATA/jobs/$A/job.json.cut" && mv "$DATA/jobs/$A/job.json.cut" "$DATA/jobs/$A/job.json"
$PY - "$DATA/jobs/$B/job.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1])); j["parameters"]["precond"] = "ilu"
json.dump(j, open(sys.argv[1], "w"))
PYEOF
rm -f "$DATA/jobs/$C/job.json"
printf 'open %s/jobs/%s/job.json EMFILE 1 0\nopen %s/jobs/%s/job.json EMFILE 1 2\n' \
    "$DATA" "$E1" "$DATA" "$E2" >"$F/io"
start || { bad "start with damaged records"; finish; }
rm -f "$F/io"
for q in "$A" "$B" "$E1"; do
    [ -f "$DATA/quarantine/$q/QUARANTINE.txt" ] && [ -f "$DATA/quarantine/$q/matrix.mtx" ] && ok ||
        bad "job $q not quarantined whole: $(ls "$DATA/quarantine/$q" 2>&1)"
    grep -q "job $q quarantined" "$D.log" && ok || bad "no log line for $q"
    code=$($DCLIENT request "$DURL" GET "/v1/jobs/$q" | sed -n 1p)
    [ "$code" = 404 ] && ok || bad "quarantined job $q answers $code"
done
grep -q "precond: 'ilu' is not one of" "$DATA/quarantine/$B/QUARANTINE.txt" && ok ||
    bad "the reason for $B: $(cat "$DATA/quarantine/$B/QUARANTINE.txt")"
[ ! -e "$DATA/jobs/$C" ] && grep -q "finishing the removal of job $C" "$D.log" && ok ||
    bad "a job directory without job.json was not removed"
code=$($DCLIENT request "$DURL" GET "/v1/jobs/$E2" | sed -n 1p)
[ "$code" = 200 ] && ok || bad "job $E2 (EMFILE twice) did not load: $code"
$DCLIENT request "$DURL" GET /metrics | grep -q "^clsolve_store_quarantined_total 3$" && ok ||
    bad "metric: $($DCLIENT request "$DURL" GET /metrics | grep quarantined)"
code=$($DCLIENT request "$DURL" GET /readyz | sed -n 1p)
[ "$code" = 200 ] && ok || bad "readyz after the quarantine: $code"
daemon_stop 120 || bad "final drain"
finish
