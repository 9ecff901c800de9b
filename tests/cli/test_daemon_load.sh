#!/usr/bin/env bash
# A bounded load test of the daemon (tests/load/loadgen.py): 16 clients for
# 30 s against clsolved on 2 MPI ranks, each client submitting small systems
# (LFAT5, 494_bus, poisson2d 20/30/40), polling them to the end and checking
# every solution's residual. --max-queued 8 makes the queue fill, so the 503
# path (retried with backoff, counted apart) is exercised too. Checked: no
# error of any kind, every accepted job listed once by GET /v1/jobs as
# succeeded, /metrics moved by exactly what the clients saw, nothing left in
# incoming/, the daemon still answers afterwards, its RSS after the load is
# within a generous bound of before (64 MB plus 16 kB per job: the daemon
# keeps every finished job's record in memory, about 5-10 kB each, unless
# --keep says otherwise) and its descriptors are back to where they were,
# and it drains cleanly. Latencies and throughput are printed, never
# asserted. Budget: about 40 s on a 2-core machine.
# LOAD_CLIENTS and LOAD_SECONDS override the 16 clients and 30 s.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data matrices
M=$CLSOLVE_DATA/matrices
D=$TEST_TMP/data
LOADGEN=$here/../load/loadgen.py
CLIENTS=${LOAD_CLIENTS:-16}
SECONDS_=${LOAD_SECONDS:-30}
rm -rf "$D" "$D".* "$TEST_TMP/load.json"
for n in 20 30 40; do
    "$CLSOLVE" gen poisson2d $n -o "$TEST_TMP/poisson2d_$n.mtx" >/dev/null || bad "gen poisson2d $n"
done
daemon_start 2 "$D" --max-queued 8 || { bad "daemon start"; finish; }
U=$DURL

$PY "$LOADGEN" --url "$U" --clients "$CLIENTS" --duration "$SECONDS_" --poll-ms 20 \
    --drain-timeout 60 --pid-file "$D.pid" --data-dir "$D" --json "$TEST_TMP/load.json" \
    --label "test 2 ranks" \
    "$M/LFAT5.mtx" "$M/494_bus.mtx" "$TEST_TMP"/poisson2d_{20,30,40}.mtx
rc=$?
[ $rc = 0 ] && ok || bad "loadgen exited $rc"
S=$TEST_TMP/load.json
if [ -s "$S" ]; then
    j() { json_get "$S" "$1"; }
    [ "$(j "j['errors']")" = 0 ] && ok || bad "errors: $(j "j['accounting_errors'] + j['error_samples'][:5]")"
    acc=$(j "j['jobs']['accepted']")
    [ "$acc" -gt 0 ] && ok || bad "no job accepted"
    [ "$(j "j['jobs']['verified']")" = "$acc" ] && ok || bad "verified $(j "j['jobs']['verified']") of $acc"
    [ "$(j "j['listing']['missing'] + j['listing']['foreign'] + j['listing']['duplicates'] + j['listing']['not_succeeded']")" = 0 ] \
        && ok || bad "listing: $(j "j['listing']")"
    [ "$(j "j['listing']['new']")" = "$acc" ] && ok || bad "listed $(j "j['listing']['new']") new jobs for $acc accepted"
    [ "$(j "j['metrics']['submitted_delta']")" = "$acc.0" ] && ok || bad "metrics: $(j "j['metrics']")"
    [ "$(j "len(j['processes'])")" = 2 ] && ok || bad "sampled $(j "len(j['processes'])") daemon processes, expected 2"
    # memory and descriptors: reported, with generous bounds only
    while read -r rank pid before peak after fb fa; do
        echo "rank $rank (pid $pid): RSS before $before kB, peak $peak kB, after $after kB; fds before $fb, after $fa"
        # (not in the sanitizer build: ASan's quarantine holds up to 256 MB
        # of freed memory, and its shadow memory counts in RSS)
        if [ -z "${ASAN_OPTIONS:-}" ]; then
            [ "$after" -lt $((before + 65536 + 16 * acc)) ] && ok ||
                bad "rank $rank: RSS after $after kB, before $before kB ($acc jobs)"
        fi
        [ "$fa" -le $((fb + 8)) ] && ok || bad "rank $rank: $fa fds after the load, $fb before"
    done < <($PY -c "
import json, sys
for p in json.load(open(sys.argv[1]))['processes']:
    print(p['rank'], p['pid'], p['rss_before_kb'], p['rss_peak_kb'], p['rss_after_kb'], p['fds_before'], p['fds_after'])" "$S")
else
    bad "no summary $S"
fi

# the daemon still answers, lists and takes a job
c=$(curl -s -o "$TEST_TMP/body" -w '%{http_code}' "$U/healthz")
[ "$c" = 200 ] && ok || bad "healthz after the load: HTTP $c"
id=$($DCLIENT submit "$U" "$M/LFAT5.mtx") && ok || bad "submit after the load"
[ "$(wait_job "$U" "$id" 120 | jget "j['status']")" = succeeded ] && ok || bad "job after the load"

daemon_stop 60
rc=$?
[ $rc = 0 ] && ok || bad "daemon exit $rc"
finish
