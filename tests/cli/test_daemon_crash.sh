#!/usr/bin/env bash
# Durability and control of running jobs, under mpirun -np 2:
#  - kill -9 of mpirun and every rank in the middle of a solve; on restart
#    the job runs again and its solution is correct; what an interrupted
#    upload leaves (DATA/incoming/*, a job directory without job.json) is
#    removed at start;
#  - POST .../cancel stops a running job within an iteration (status
#    cancelled) and cancels a queued one; DELETE of either is 409 and
#    touches nothing; a cancel after the end is 409 and keeps the results;
#  - SIGTERM to rank 0 drains: new jobs get 503, the running job finishes,
#    a queued job stays queued and runs after the next start.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
D=$TEST_TMP/data
rm -rf "$D" "$D".*
A=$TEST_TMP/p2d.mtx
"$CLSOLVE" gen poisson2d 600 -o "$A" >/dev/null || { bad "gen"; finish; }  # long enough to be caught running
BIG=$TEST_TMP/p2d_big.mtx  # several seconds of iterations: time to cancel it
"$CLSOLVE" gen poisson2d 700 -o "$BIG" >/dev/null || { bad "gen"; finish; }
# the cancel target: ~40 s of iterations on 2 ranks here, so that a loaded
# machine cannot finish it before the test's DELETE reaches it
HUGE=$TEST_TMP/p2d_huge.mtx
"$CLSOLVE" gen poisson2d 1000 -o "$HUGE" >/dev/null || { bad "gen"; finish; }
status_of() { $DCLIENT request "$1" GET "/v1/jobs/$2" | tail -n +2 | jget "j['status'], j['progress']['iteration']"; }
# wait_running URL ID MIN_ITERATION: until the job has run that far
wait_running() { $DCLIENT running "$1" "$2" --iteration "$3" --timeout 300 >/dev/null; }

# --lanes 1 throughout: one job at a time, so a job submitted behind a
# running one stays queued (the queued-job cases below need that)
daemon_start 2 "$D" --lanes 1 || { bad "daemon start"; finish; }
# a job of several seconds, killed as soon as it is seen running (no other
# client call in between: on a loaded machine one can take seconds)
id=$($DCLIENT submit "$DURL" "$BIG" --param tol=1e-10) || bad "submit"
at=$($DCLIENT running "$DURL" "$id" --iteration 20 --timeout 300) && ok || bad "job never ran: $at"
daemon_kill9
echo "killed mpirun and its ranks when the job was: $at"
grep -q '"status":"running"' "$D/jobs/$id/job.json" && ok || bad "job.json not running at the kill"
# leftovers of uploads cut short
mkdir -p "$D/incoming/0123456789abcdef0123456789abcdef" "$D/jobs/fedcba9876543210fedcba9876543210"
echo partial >"$D/incoming/0123456789abcdef0123456789abcdef/matrix.mtx"
echo partial >"$D/jobs/fedcba9876543210fedcba9876543210/matrix.mtx"

daemon_start 2 "$D" --lanes 1 || { bad "restart"; finish; }
j=$($DCLIENT wait "$DURL" "$id" --timeout 300)
[ "$(jget "j['status']" <<<"$j")" = succeeded ] && ok || bad "after restart: $j"
$DCLIENT fetch "$DURL" "$id" "$TEST_TMP/x.mtx" && ok || bad "fetch after restart"
res=$($PY "$here/mmref.py" residual "$BIG" "$TEST_TMP/x.mtx")
lt "$res" 1e-9 && ok || bad "after restart: recomputed residual $res"
echo "re-run after kill -9: $(jget "j['result']['iterations']" <<<"$j") iterations, residual $res"
[ ! -e "$D/incoming/0123456789abcdef0123456789abcdef" ] && ok || bad "incoming leftover kept"
[ ! -e "$D/jobs/fedcba9876543210fedcba9876543210" ] && ok || bad "job dir without job.json kept"

# cancel: a running job stops, a queued one is cancelled; DELETE refuses both
run=$($DCLIENT submit "$DURL" "$HUGE" --param tol=1e-13)
queued=$($DCLIENT submit "$DURL" "$A" --param tol=1e-12)
wait_running "$DURL" "$run" 10 && ok || bad "cancel target never ran"
[ "$($DCLIENT request "$DURL" DELETE "/v1/jobs/$queued" | sed -n 1p)" = 409 ] && ok || bad "DELETE of a queued job is not 409"
[ "$($DCLIENT request "$DURL" DELETE "/v1/jobs/$run" | sed -n 1p)" = 409 ] && ok || bad "DELETE of a running job is not 409"
[ "$(status_of "$DURL" "$run" | cut -d" " -f1)" = running ] && ok || bad "DELETE touched the running job: $(status_of "$DURL" "$run")"
[ "$($DCLIENT request "$DURL" POST "/v1/jobs/$queued/cancel" | sed -n 1p)" = 202 ] && ok || bad "cancel queued"
[ "$(status_of "$DURL" "$queued")" = "cancelled 0" ] && ok || bad "queued job not cancelled: $(status_of "$DURL" "$queued")"
at=$($DCLIENT request "$DURL" POST "/v1/jobs/$run/cancel" | tail -n +2 | jget "j['progress']['iteration']")
[ -n "$at" ] && ok || bad "cancel of the running job did not answer the job"
j=$($DCLIENT wait "$DURL" "$run" --timeout 60)
[ "$(jget "j['status']" <<<"$j")" = cancelled ] && ok || bad "running job not cancelled: $j"
[ "$(jget "j['error']['code']" <<<"$j")" = cancelled ] && ok || bad "cancel error code"
stopped=$(jget "j['progress']['iteration']" <<<"$j")
echo "cancel at iteration $at, stopped at $stopped"
[ "$stopped" -lt $((at + 200)) ] && ok || bad "cancelled job ran on from $at to $stopped"
# a cancel that arrives after the end: 409 naming the state; nothing is removed
r=$($DCLIENT request "$DURL" POST "/v1/jobs/$id/cancel")
[ "$(sed -n 1p <<<"$r")" = 409 ] && ok || bad "cancel of a finished job: $r"
[ "$(tail -n +2 <<<"$r" | jget "j['job_status']")" = succeeded ] && ok || bad "409 without job_status: $r"
[ -e "$D/jobs/$id/solution.bin" ] && [ "$(status_of "$DURL" "$id" | cut -d' ' -f1)" = succeeded ] && ok || bad "a late cancel removed the results"

# SIGTERM drains
long=$($DCLIENT submit "$DURL" "$BIG" --param tol=1e-10)
next=$($DCLIENT submit "$DURL" "$TEST_TMP/x.mtx" --param tol=1e-10 2>/dev/null || $DCLIENT submit "$DURL" "$A" --param tol=1e-10)
wait_running "$DURL" "$long" 10 && ok || bad "drain target never ran"
kill -TERM "$DRANK0"
sleep 0.3
# a small upload: a refusal of a 6 MB one can reach curl as a reset while it
# is still sending, which says nothing about the daemon
printf '%%%%MatrixMarket matrix coordinate real symmetric\n1 1 1\n1 1 2\n' >"$TEST_TMP/one.mtx"
c=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$TEST_TMP/one.mtx" "$DURL/v1/jobs")
[ "$c" = 503 ] && ok || bad "no 503 while draining: HTTP $c"
for _ in $(seq 1 1200); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
wait "$DPID"
rc=$?
[ $rc = 0 ] && ok || bad "mpirun exit $rc after the drain"
grep -q '"status":"succeeded"' "$D/jobs/$long/job.json" && ok || bad "running job did not finish in the drain"
grep -q '"status":"queued"' "$D/jobs/$next/job.json" && ok || bad "queued job not left queued"
daemon_start 1 "$D" --lanes 1 || { bad "restart after drain"; finish; }
j=$($DCLIENT wait "$DURL" "$next" --timeout 300)
[ "$(jget "j['status']" <<<"$j")" != queued ] && ok || bad "queued job did not run after restart"
daemon_stop 120 && ok || bad "final stop"
finish
