#!/usr/bin/env bash
# Every job bounded and cancellable (issue 27, item 1), on PoCL:
#  1. a physics job that would run for ever (nbody, 10^9 steps): POST
#     .../cancel ends it, cancelled, within a second (it ran to its last
#     step whatever was asked); the same for springs;
#  2. SIGTERM with --drain-timeout 1 while one runs: the daemon exits within
#     the drain timeout and a margin, the job queued again;
#  3. a cancel asked for while a job runs survives kill -9 of the daemon: at
#     the next start the job ends cancelled instead of running again;
#  1b. --keep-bytes spares jobs that finished within --keep-min-age;
#  4. a job whose runs the daemon's death cut short --max-job-restarts (2)
#     times fails at the next start ("the daemon stopped 2 times"), never
#     run again in a loop.
#  6. long polls (GET /v1/jobs/ID?wait=S): answered after S seconds while
#     the job runs, at once for a finished job, the moment a cancel ends
#     it (the cancel's time in 1 is measured that way), during the drain
#     with the job as it is then (the daemon not held by it); bad values
#     400, an unknown job 404; /metrics counts the waits.
#  6b. the solution's long poll (GET /v1/jobs/ID/solution?wait=S): a
#     solution asked for the moment a cg job is accepted comes when it ends
#     (the same bytes as asked afterwards, .npy and Matrix Market); a
#     running job without one is 409 after S seconds, a job cancelled
#     while the request waits is 409 at its end; bad S 400, unknown 404.
#  5. physics jobs admitted with estimates (issue 27): an nbody job of
#     500 million bodies refused at POST (413 job-too-large) with its
#     figures and no server path; an nbody csv job whose frames cannot fit
#     the free space less --disk-reserve refused (507); a small one runs.
# errors.md: JOB-RESTARTS JOB-CANCEL-KEPT PHYS-CANCELLED PHYS-TOO-LARGE PHYS-OUTPUT-DISK
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
D=$TEST_TMP/data
rm -rf "$D" "$D".*
jst() { $DCLIENT request "$DURL" GET "/v1/jobs/$1" | tail -n +2 | jget "$2"; }
running() { # ID: until the job runs (60 s)
    for _ in $(seq 600); do [ "$(jst "$1" "j['status']")" = running ] && return 0; sleep 0.1; done
    return 1
}
submit_q() { # QUERY: a job with no body (the options generate the input)
    curl -s -X POST "$DURL/v1/jobs?$1" | jget "j['id']"
}
endless="kind=nbody&plummer=256&steps=1000000000&every=0"
# the target is a cancel within a second (measured by a long poll parked
# before the cancel: answered when the job ended); a loaded 2-core machine
# adds to it, the sanitized build (PoCL under ASan) several times that
cancel_limit=1.5
[ -n "${ASAN_OPTIONS:-}" ] && cancel_limit=5

daemon_start 1 "$D" --drain-timeout 1 --keep-bytes 1 || { bad "daemon start"; finish; }

since() { $PY -c "import sys,time; print('%.2f' % (time.time() - float(sys.argv[1])))" "$1"; }
# lpoll ID S OUT: a long poll; its body to OUT, prints the HTTP status
lpoll() { curl -s -o "$3" -w '%{http_code}' "$DURL/v1/jobs/$1?wait=$2"; }
# parked_cancel ID CODE CMD...: CMD (a long poll; its status to CODE) in the
# background, job ID cancelled 0.3 s later; dt: from the cancel to the answer
parked_cancel() {
    local i=$1 code=$2 lp
    shift 2
    "$@" >"$code" &
    lp=$!
    sleep 0.3
    t0=$(date +%s.%N)
    curl -s -o /dev/null -X POST "$DURL/v1/jobs/$i/cancel"
    wait $lp
    dt=$(since "$t0")
}

# 1. cancel a running physics job, and 6. the long polls on it
for q in "$endless" "kind=springs&grid=20&steps=1000000000"; do
    id=$(submit_q "$q")
    [ -n "$id" ] && running "$id" && ok || { bad "$q: never ran"; continue; }
    t0=$(date +%s.%N)
    c=$(lpoll "$id" 0.5 $TEST_TMP/lp.json)
    dt=$(since "$t0")
    echo "wait=0.5 on a running job: $c $(jget "j['status']" <$TEST_TMP/lp.json) after $dt s"
    [ "$c" = 200 ] && [ "$(jget "j['status']" <$TEST_TMP/lp.json)" = running ] && ok ||
        bad "wait=0.5 on a running job: $c $(head -c 200 $TEST_TMP/lp.json)"
    lt 0.45 "$dt" && lt "$dt" 3 && ok || bad "wait=0.5 on a running job answered after $dt s"
    # a long poll parked before the cancel answers when the job ends
    parked_cancel "$id" $TEST_TMP/lp2.code lpoll "$id" 30 $TEST_TMP/lp2.json
    [ "$(cat $TEST_TMP/lp2.code)" = 200 ] && ok || bad "the parked long poll: HTTP $(cat $TEST_TMP/lp2.code)"
    st=$(jget "j['status'], j['error']['code']" <$TEST_TMP/lp2.json)
    echo "cancel ${q%%&*}: $st after $dt s"
    [ "$st" = "cancelled cancelled" ] && lt "$dt" "$cancel_limit" && ok ||
        bad "$q: after the cancel: $st after $dt s (limit $cancel_limit s)"
done

# 6. the long poll's edges: a finished job at once, bad values, unknown job
t0=$(date +%s.%N)
c=$(lpoll "$id" 30 $TEST_TMP/lp.json)
dt=$(since "$t0")
[ "$c" = 200 ] && [ "$(jget "j['status']" <$TEST_TMP/lp.json)" = cancelled ] && lt "$dt" 1 && ok ||
    bad "wait=30 on a finished job: $c after $dt s"
for v in abc -1 61 1e400 nan; do
    c=$(lpoll "$id" "$v" $TEST_TMP/lp.json)
    [ "$c" = 400 ] && [[ $(jget "j['detail']" <$TEST_TMP/lp.json) == "wait: "* ]] && ok ||
        bad "wait=$v: HTTP $c $(head -c 200 $TEST_TMP/lp.json)"
done
c=$(lpoll 0123456789abcdef0123456789abcdef 5 $TEST_TMP/lp.json)
[ "$c" = 404 ] && ok || bad "wait on an unknown job: HTTP $c"
curl -s "$DURL/metrics" >$TEST_TMP/metrics.txt
grep -q '^clsolve_http_waiting_requests 0$' $TEST_TMP/metrics.txt && ok || bad "metrics: waiting requests"
for e in job deadline; do
    grep -q "^clsolve_http_waits_total{ended=\"$e\"} [1-9]" $TEST_TMP/metrics.txt && ok ||
        bad "metrics: waits ended by $e: $(grep waits_total $TEST_TMP/metrics.txt)"
done

# 6b. the solution's long poll
"$CLSOLVE" gen poisson3d 24 -o $TEST_TMP/p24.mtx >/dev/null
sol() { # ID QUERY OUT [curl options]: prints the HTTP status
    local i=$1 q=$2 o=$3
    shift 3
    curl -s "$@" -o "$o" -w '%{http_code}' "$DURL/v1/jobs/$i/solution?$q"
}
for fmt in npy mtx; do
    id=$(curl -s --data-binary @$TEST_TMP/p24.mtx "$DURL/v1/jobs?tol=1e-10" | jget "j['id']")
    c=$(sol "$id" "format=$fmt&wait=30" $TEST_TMP/sw.$fmt)
    c2=$(sol "$id" "format=$fmt" $TEST_TMP/s.$fmt)
    [ "$c" = 200 ] && [ "$c2" = 200 ] && cmp -s $TEST_TMP/sw.$fmt $TEST_TMP/s.$fmt && ok ||
        bad "solution?wait=30 ($fmt) asked at once: HTTP $c, afterwards $c2 (or other bytes)"
done
c=$(sol "$id" "wait=5" $TEST_TMP/sw.mtx -H 'Accept: application/x-npy')
cmp -s $TEST_TMP/sw.mtx $TEST_TMP/s.npy && [ "$c" = 200 ] && ok || bad "solution?wait=5 with Accept npy: $c"
id=$(submit_q "$endless")
running "$id" || bad "the solution's long poll: the job never ran"
t0=$(date +%s.%N)
c=$(sol "$id" "wait=0.5" $TEST_TMP/sw.json)
dt=$(since "$t0")
[ "$c" = 409 ] && [ "$(jget "j['type']" <$TEST_TMP/sw.json | sed 's|.*:||')" = no-solution ] &&
    lt 0.45 "$dt" && lt "$dt" 3 && ok || bad "solution?wait=0.5 on a running job: $c after $dt s"
parked_cancel "$id" $TEST_TMP/sw2.code sol "$id" "wait=30" $TEST_TMP/sw2.json
[ "$(cat $TEST_TMP/sw2.code)" = 409 ] && [[ $(jget "j['detail']" <$TEST_TMP/sw2.json) == *cancelled* ]] &&
    lt "$dt" "$cancel_limit" && ok ||
    bad "solution?wait=30 across a cancel: HTTP $(cat $TEST_TMP/sw2.code) after $dt s: $(head -c 200 $TEST_TMP/sw2.json)"
for v in abc -1 61; do
    c=$(sol "$id" "wait=$v" $TEST_TMP/sw.json)
    [ "$c" = 400 ] && [[ $(jget "j['detail']" <$TEST_TMP/sw.json) == "wait: "* ]] && ok ||
        bad "solution?wait=$v: HTTP $c $(head -c 200 $TEST_TMP/sw.json)"
done
c=$(sol 0123456789abcdef0123456789abcdef "wait=5" $TEST_TMP/sw.json)
[ "$c" = 404 ] && ok || bad "solution?wait on an unknown job: HTTP $c"
c=$(sol "$id" "wait=1&format=xml" $TEST_TMP/sw.json)
[ "$c" = 400 ] && ok || bad "solution?wait with a bad format: HTTP $c"

# retention by size (--keep-bytes 1) spares jobs younger than --keep-min-age
# (default 10 minutes): their owners may not have fetched them yet
n=$(ls "$D/jobs" | wc -l)
[ "$n" -ge 2 ] && ok || bad "--keep-bytes removed jobs that finished seconds ago: $n left"

# 2. the drain ends within --drain-timeout while a physics job runs, and a
# long poll parked on it is answered (6.) rather than holding the daemon
id=$(submit_q "$endless")
running "$id" || bad "drain: the job never ran"
lpoll "$id" 60 $TEST_TMP/lp3.json >$TEST_TMP/lp3.code &
lp=$!
sleep 0.3
t0=$(date +%s.%N)
daemon_stop 30
dt=$(since "$t0")
echo "drain with a running physics job: exited after $dt s (--drain-timeout 1)"
lt "$dt" 8 && ok || bad "the drain took $dt s with --drain-timeout 1"
wait $lp
st=$(jget "j['status']" <$TEST_TMP/lp3.json 2>/dev/null)
echo "the long poll parked across the drain: HTTP $(cat $TEST_TMP/lp3.code), $st"
[ "$(cat $TEST_TMP/lp3.code)" = 200 ] && [[ $st == queued || $st == running ]] && ok ||
    bad "the long poll across the drain: HTTP $(cat $TEST_TMP/lp3.code) $(head -c 200 $TEST_TMP/lp3.json)"

# 3. a cancel asked while a job runs is written to its record, so that it
# survives the daemon's death. The job from 2 runs again: cancel it and kill
# the daemon at once; whichever came first, the job ends cancelled and never
# runs again. Then the record alone: a job recorded as running with its
# cancel asked ends cancelled at the start, "the daemon stopped before the
# job did" (the cancel was in memory only and the job ran again).
daemon_start 1 "$D" --drain-timeout 1 || { bad "restart"; finish; }
running "$id" || bad "the drained job did not run again"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$DURL/v1/jobs/$id/cancel")
daemon_kill9
daemon_start 1 "$D" --drain-timeout 1 || { bad "restart after kill -9"; finish; }
st=$(jst "$id" "j['status'], j['error']['message']")
echo "cancel ($code), kill -9, start: $st"
[[ $st == "cancelled "* ]] && ok || bad "a cancel asked before kill -9: $st"
daemon_stop 30
$PY - "$D/jobs/$id/job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["status"], j["error"], j["result"] = "running", None, None
json.dump(j, open(sys.argv[1], "w"))
PY
daemon_start 1 "$D" --drain-timeout 1 || { bad "start with a running, cancelled record"; finish; }
st=$(jst "$id" "j['status'], j['error']['message']")
echo "a record 'running' with its cancel asked, at the start: $st"
[ "$st" = "cancelled cancelled; the daemon stopped before the job did" ] && ok ||
    bad "a running record with its cancel asked: $st"

# 4. a job that the daemon's death interrupts twice fails at the next start
id=$(submit_q "$endless")
for n in 1 2; do
    running "$id" || bad "restart $n: the job did not run"
    daemon_kill9
    daemon_start 1 "$D" --drain-timeout 1 || { bad "start $n"; finish; }
done
st=$(jst "$id" "j['status'], j['interrupted_runs'], j['error']['message']")
echo "two kills while running: $st"
[[ $st == "failed 2 the daemon stopped 2 times while this job ran"* ]] && ok ||
    bad "a job interrupted twice: $st"
# a healthy job still runs on the restarted daemon
ok_id=$(submit_q "kind=nbody&plummer=64&steps=10")
[ "$(wait_job "$DURL" "$ok_id" 60 | jget "j['status']")" = succeeded ] && ok || bad "a small job after the restarts"
daemon_stop 60 || true

# 5. admission of physics jobs: a reserve that leaves about 50 MB above it
D5=$TEST_TMP/data5
rm -rf "$D5" "$D5".*
mkdir -p "$D5"
avail=$(df -B1 --output=avail "$D5" | tail -1 | tr -d ' ')
reserve=$((avail - 50 * 1024 * 1024))
daemon_start 1 "$D5" --disk-reserve "$reserve" || { bad "start with --disk-reserve"; finish; }
post_q() { # QUERY: prints the status line, then the body
    curl -s -w '\n%{http_code}' -X POST "$DURL/v1/jobs?$1"
}
r=$(post_q "kind=nbody&plummer=500000000&steps=1")
code=${r##*$'\n'}
body=${r%$'\n'*}
echo "huge nbody: $code $body"
[ "$code" = 413 ] && ok || bad "a 500-million-body nbody job: $code"
t=$(jget "j['type'].rsplit(':', 1)[1]" <<<"$body")
det=$(jget "j['detail']" <<<"$body")
[ "$t" = job-too-large ] && ok || bad "huge nbody: type $t"
[[ $det =~ [0-9]+\ MB && $det == *"500000000 bodies"* ]] && ok || bad "huge nbody: no figures: $det"
[[ $det != *"$D5"* && $det != *" /"* ]] && ok || bad "huge nbody: a server path in: $det"
# 20000 bodies as csv every step for 1000 steps: about 2 GB of frames
r=$(post_q "kind=nbody&plummer=20000&steps=1000&every=1&format=csv")
code=${r##*$'\n'}
body=${r%$'\n'*}
echo "frames beyond the disk: $code $body"
det=$(jget "j['detail']" <<<"$body")
[ "$code" = 507 ] && [ "$(jget "j['type'].rsplit(':', 1)[1]" <<<"$body")" = insufficient-storage ] &&
    ok || bad "frames beyond the disk: $code"
[[ $det =~ [0-9.]+\ MB\ of\ output && $det == *"--disk-reserve"* && $det != *"$D5"* ]] && ok ||
    bad "frames beyond the disk: $det"
# a small one fits and runs
ok_id=$(submit_q "kind=nbody&plummer=64&steps=10&every=5&format=csv")
[ "$(wait_job "$DURL" "$ok_id" 60 | jget "j['status']")" = succeeded ] && ok ||
    bad "a small nbody job under the reserve"
daemon_stop 60 || true
finish
