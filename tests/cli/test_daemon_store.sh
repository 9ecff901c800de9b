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
#  4. records that fail to load are quarantined, never deleted (issue 27):
#     a corrupt job.json, stored parameters that are not valid ("precond":
#     "ilu"), a job.json that cannot be opened (EMFILE every time), a job
#     directory without job.json and no removal under way, a solution file
#     cut short; one that fails twice (EMFILE) loads at the third try; a
#     removal cut short (DELETE's leftover of 2, marked in DATA/removing/)
#     is finished; log lines, metrics by reason and of what is in
#     quarantine/ now; a byte changed in a solution.bin is a 500
#     store-damaged while the daemon runs (counted) and quarantined at the
#     next start; retention (--keep 1) never touches quarantine/;
#  5. keep=until-fetched (issue 27) under --keep 1: a plain job goes as
#     before, two unfetched keep jobs stay (log line, metric); the first
#     fetch of one records fetched_at and lets retention remove it; the
#     other's fetched_at survives a restart; DELETE still removes it.
# errors.md: STORE-CANCEL-UNWRITTEN STORE-DELETE-RECORD STORE-DELETE-FILES STORE-DAMAGED
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
start() { LD_PRELOAD=$CLSFAULT_LIB${LD_PRELOAD:+:$LD_PRELOAD} CLSFAULT_DIR=$F daemon_start 1 "$D" --lanes 1 "$@"; }  # one job at a time: a queued job behind a running one
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
[ -n "$leftover" ] && [ ! -e "$DATA/jobs/$leftover" ] && grep -q "finishing the removal of job $leftover" "$D.log" && ok ||
    bad "the files DELETE could not remove are still there after the restart"
[ ! -e "$DATA/quarantine/$leftover" ] && [ -z "$(ls -A "$DATA/removing" 2>/dev/null)" ] && ok ||
    bad "a removal cut short was quarantined, or its marker stayed: $(ls "$DATA/removing" "$DATA/quarantine" 2>&1)"
daemon_stop 120 || bad "drain 2"

# 4. quarantine
ids=($($PY -c 'import json,sys; print(" ".join(k for k, v in json.load(open(sys.argv[1])).items() if v == "succeeded"))' "$TEST_TMP/snap.json"))
[ ${#ids[@]} -ge 7 ] || { bad "need 7 finished jobs, have ${#ids[@]}"; finish; }
A=${ids[0]} B=${ids[1]} C=${ids[2]} E1=${ids[3]} E2=${ids[4]} T=${ids[5]} X=${ids[6]}
# T: its solution.bin cut short (the record's size says otherwise)
head -c 10 "$DATA/jobs/$T/solution.bin" >"$DATA/jobs/$T/sol.cut" && mv "$DATA/jobs/$T/sol.cut" "$DATA/jobs/$T/solution.bin"
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
for q in "$A" "$B" "$E1" "$C" "$T"; do
    [ -f "$DATA/quarantine/$q/QUARANTINE.txt" ] && [ -f "$DATA/quarantine/$q/matrix.mtx" ] && ok ||
        bad "job $q not quarantined whole: $(ls "$DATA/quarantine/$q" 2>&1)"
    grep -q "job $q quarantined" "$D.log" && ok || bad "no log line for $q"
    code=$($DCLIENT request "$DURL" GET "/v1/jobs/$q" | sed -n 1p)
    [ "$code" = 404 ] && ok || bad "quarantined job $q answers $code"
done
grep -q "precond: 'ilu' is not one of" "$DATA/quarantine/$B/QUARANTINE.txt" && ok ||
    bad "the reason for $B: $(cat "$DATA/quarantine/$B/QUARANTINE.txt")"
[ ! -e "$DATA/jobs/$C" ] && grep -q "job $C quarantined in quarantine/$C (no-record)" "$D.log" && ok ||
    bad "a job directory without job.json (no removal under way) was not quarantined"
grep -q "reason: damaged" "$DATA/quarantine/$T/QUARANTINE.txt" && grep -q "solution.bin is 10 bytes" "$DATA/quarantine/$T/QUARANTINE.txt" && ok ||
    bad "the reason for $T: $(cat "$DATA/quarantine/$T/QUARANTINE.txt")"
grep "quarantined in" "$D.log" | grep -q "$DATA" && bad "a quarantine log line names the data directory's path" || ok
code=$($DCLIENT request "$DURL" GET "/v1/jobs/$E2" | sed -n 1p)
[ "$code" = 200 ] && ok || bad "job $E2 (EMFILE twice) did not load: $code"
metrics() { $DCLIENT request "$DURL" GET /metrics >"$TEST_TMP/metrics"; }
metric() { # metric 'NAME{LABELS}' VALUE
    grep -qxF "$1 $2" "$TEST_TMP/metrics" && ok || bad "metric $1: $(grep -F "${1%%\{*}" "$TEST_TMP/metrics" | grep -v '^#')"
}
metrics
metric 'clsolve_store_quarantined_total{reason="record"}' 3
metric 'clsolve_store_quarantined_total{reason="no-record"}' 1
metric 'clsolve_store_quarantined_total{reason="damaged"}' 1
metric clsolve_store_quarantine_jobs 5
# a byte of X's solution.bin changed (same size): the download is refused,
# counted and recorded; the next start quarantines X
$PY - "$DATA/jobs/$X/solution.bin" <<'PYEOF'
import sys
with open(sys.argv[1], "r+b") as f:
    b = f.read(1); f.seek(0); f.write(bytes([b[0] ^ 0xFF]))
PYEOF
code=$($DCLIENT request "$DURL" GET "/v1/jobs/$X/solution?format=binary" | sed -n 1p)
[ "$code" = 500 ] && ok || bad "a damaged solution.bin answers $code"
code=$($DCLIENT request "$DURL" GET "/v1/jobs/$X/solution?format=binary" | sed -n 1p)
[ "$code" = 500 ] && ok || bad "a damaged solution.bin answers $code the second time"
metrics
metric clsolve_store_damaged_jobs 1
metric clsolve_store_damaged_total 2
code=$($DCLIENT request "$DURL" GET /readyz | sed -n 1p)
[ "$code" = 200 ] && ok || bad "readyz after the quarantine: $code"
daemon_stop 120 || bad "drain after the quarantine"
# the next start: X quarantined (damaged), retention (--keep 1) removes
# finished jobs but nothing under quarantine/
start --keep 1 || { bad "start with --keep 1"; finish; }
grep -q "job $X quarantined in quarantine/$X (damaged): its result was found damaged: solution.bin has CRC-32" "$D.log" && ok ||
    bad "the damaged download of $X did not quarantine it: $(grep "$X" "$D.log" | tail -3)"
[ "$($DCLIENT request "$DURL" GET "/v1/jobs?limit=1000" | sed 1d | jget "j['total']")" = 1 ] && ok || bad "--keep 1 did not apply"
for q in "$A" "$B" "$E1" "$C" "$T" "$X"; do
    [ -f "$DATA/quarantine/$q/matrix.mtx" ] && ok || bad "retention touched quarantine/$q"
done
metrics
metric clsolve_store_quarantine_jobs 6
daemon_stop 120 || bad "drain with --keep 1"

# 5. keep=until-fetched under --keep 1
D=$TEST_TMP/keep
rm -rf "$D" "$D".*
start --keep 1 || { bad "start for keep=until-fetched"; finish; }
submit() { $DCLIENT submit "$DURL" "$SMALL" "$@"; }
final() { $DCLIENT wait "$DURL" "$1" --timeout 120 | jget "j['status']"; }
job() { $DCLIENT request "$DURL" GET "/v1/jobs/$1" | sed 1d | jget "$2"; }
status_of() { $DCLIENT request "$DURL" GET "/v1/jobs/$1" | sed -n 1p; }
P=$(submit) && [ "$(final "$P")" = succeeded ] || bad "plain job $P"
K1=$(submit --param keep=until-fetched) && [ "$(final "$K1")" = succeeded ] || bad "keep job $K1"
K2=$(submit --param keep=until-fetched) && [ "$(final "$K2")" = succeeded ] || bad "keep job $K2"
# retention runs just after a job's final record: wait for it (10 s at most)
for _ in $(seq 1 100); do [ "$(status_of "$P")" = 404 ] && break; sleep 0.1; done
[ "$(status_of "$P")" = 404 ] && [ ! -e "$D/jobs/$P" ] && ok || bad "the plain job was not removed by --keep 1"
for k in "$K1" "$K2"; do
    [ "$(status_of "$k")" = 200 ] && [ -f "$D/jobs/$k/solution.bin" ] && ok || bad "unfetched keep job $k removed"
    [ "$(job "$k" "j['keep'], j['fetched_at']")" = "until-fetched None" ] && ok ||
        bad "keep job $k: $(job "$k" "j['keep'], j['fetched_at']")"
done
grep -q "retention: --keep over its limit; 2 finished jobs kept until their results are fetched" "$D.log" && ok ||
    bad "no log line for the jobs retention keeps"
metrics
metric clsolve_retention_waiting_fetch 2
$DCLIENT fetch "$DURL" "$K1" "$TEST_TMP/k1.mtx" && [ -s "$TEST_TMP/k1.mtx" ] && ok || bad "fetch $K1"
[ "$(status_of "$K1")" = 404 ] && [ ! -e "$D/jobs/$K1" ] && ok || bad "the fetched keep job was not removed by --keep 1"
[ "$(status_of "$K2")" = 200 ] && ok || bad "the unfetched keep job went with the fetched one"
$DCLIENT fetch "$DURL" "$K2" "$TEST_TMP/k2.mtx" --format json && ok || bad "fetch $K2"
fetched=$(job "$K2" "j['fetched_at']")
[ "$fetched" != None ] && ok || bad "fetched_at not set for $K2"
metrics
metric clsolve_retention_waiting_fetch 0
daemon_stop 120 || bad "drain (keep)"
start --keep 1 || { bad "restart (keep)"; finish; }
[ "$(job "$K2" "j['fetched_at']")" = "$fetched" ] && ok || bad "fetched_at of $K2 across a restart: $(job "$K2" "j['fetched_at']")"
code=$($DCLIENT request "$DURL" DELETE "/v1/jobs/$K2" | sed -n 1p)
[ "$code" = 204 ] && [ ! -e "$D/jobs/$K2" ] && ok || bad "DELETE of a keep job: $code"
daemon_stop 120 || bad "final drain"
finish
