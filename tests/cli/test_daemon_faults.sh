#!/usr/bin/env bash
# Fault injection (the reliability issue): the daemon under deploy/supervise.sh
# (systemd's Restart=on-failure) on 2 MPI ranks, and faults injected from
# outside, never through hooks in the daemon:
#  - kill -9 of rank 0, then of a worker rank, in the middle of a solve:
#    mpirun ends, the supervisor restarts it, the job is re-queued (its
#    interrupted_runs counts the cut) and re-runs to a correct solution;
#  - SIGTERM to mpirun during a solve: the ranks go, the supervisor
#    restarts, the job re-runs; SIGTERM to the supervisor (systemd's stop)
#    during a solve: rank 0 drains, new jobs get 503, the running job
#    finishes, the supervisor exits 0 without a restart;
#  - disk full during an upload (a 4 MB tmpfs as the data directory where a
#    file system can be mounted, and ENOSPC from tests/fault/clsfault.c in
#    any case): 507, the partial upload removed, the daemon keeps serving;
#  - a client that disconnects in the middle of an upload (Content-Length
#    and chunked): no job, nothing left in incoming/, the daemon serves;
#  - an OpenCL program build failure and a device allocation failure
#    (clsfault.c returns CL_BUILD_PROGRAM_FAILURE and
#    CL_MEM_OBJECT_ALLOCATION_FAILURE): the job fails with the OpenCL error
#    in its message, the daemon keeps serving, the next job succeeds.
# errors.md: HTTP-507-DISK-FULL JOB-OPENCL-BUILD JOB-DEVICE-ALLOC
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
ROOT=$(cd "$here/../.." && pwd)
[ -n "${CLSFAULT_LIB:-}" ] && [ -f "$CLSFAULT_LIB" ] || { echo "SKIP: CLSFAULT_LIB not built" >&2; exit 77; }
D=$TEST_TMP/data
rm -rf "$TEST_TMP"/data* "$TEST_TMP"/fault
BIG=$TEST_TMP/p2d_big.mtx # several seconds of iterations on 2 ranks
"$CLSOLVE" gen poisson2d 560 -o "$BIG" >/dev/null || { bad "gen"; finish; }
SMALL=$TEST_TMP/small.mtx
"$CLSOLVE" gen poisson2d 30 -o "$SMALL" >/dev/null || { bad "gen"; finish; }
status_of() { $DCLIENT request "$1" GET "/v1/jobs/$2" | tail -n +2 | jget "j['status'], j['progress']['iteration'], j['interrupted_runs']"; }

# ---------------------------------------------------------------- supervised
SUP=""
sup_cleanup() {
    local rc=$?
    [ -n "$SUP" ] && kill -KILL "$SUP" 2>/dev/null
    local m
    m=$(cat "$D.mpirun" 2>/dev/null) && [ -n "$m" ] && kill -KILL $(pgrep -P "$m") "$m" 2>/dev/null
    [ -n "${MNT:-}" ] && umount "$MNT" 2>/dev/null
    (exit $rc)
    daemon_cleanup # (checks the recorded responses against docs/openapi.yaml)
    return 0
}
trap sup_cleanup EXIT
record_responses # the supervised daemons too

# sup_ready: waits for a (re)started daemon's port and pid files; sets DURL
# and DRANK0. The caller removes both files before it causes a restart.
sup_ready() {
    for _ in $(seq 1 1200); do
        if [ -s "$D.port" ] && [ -s "$D.pid" ]; then
            DURL="http://127.0.0.1:$(cat "$D.port")"
            DRANK0=$(cat "$D.pid")
            return 0
        fi
        kill -0 "$SUP" 2>/dev/null || break
        sleep 0.1
    done
    echo "supervised daemon did not come up; log:" >&2
    tail -30 "$D.log" >&2
    return 1
}
# restarts: how many restarts the supervisor has logged
restarts() { grep -c "supervise: .* restart [0-9]* in" "$D.log"; }

# check_job ID WHAT N MATRIX: the job succeeded after N interrupted runs (N
# may be a pattern such as [01]), with a solution whose residual is
# recomputed here
check_job() {
    local j res n
    j=$($DCLIENT wait "$DURL" "$1" --timeout 300)
    [ "$(jget "j['status']" <<<"$j")" = succeeded ] && ok || { bad "$2: job ended $j"; return; }
    n=$(jget "j['interrupted_runs']" <<<"$j")
    # shellcheck disable=SC2053
    [[ "$n" == $3 ]] && ok || bad "$2: interrupted_runs $n, expected $3"
    $DCLIENT fetch "$DURL" "$1" "$TEST_TMP/x.mtx" && ok || bad "$2: fetch"
    res=$($PY "$here/mmref.py" residual "$4" "$TEST_TMP/x.mtx")
    lt "$res" 1e-9 && ok || bad "$2: recomputed residual $res"
    echo "$2: $(jget "j['result']['iterations']" <<<"$j") iterations, residual $res, interrupted_runs $n"
}

# --shared-max-entries: BIG (1.6 M entries) is partitioned over both ranks,
# so that killing the worker cuts its solve. As a small job it ran in a lane
# on rank 0 alone: the worker's death then cut nothing, and mpirun's SIGTERM
# let rank 0 drain, so the job was re-run or finished inside the drain
# depending on how soon mpirun killed rank 0 (CI at 1cb013a: it finished,
# interrupted_runs 0)
setsid bash "$ROOT/deploy/supervise.sh" --drain-pid-file "$D.pid" --child-pid-file "$D.mpirun" \
    --restart-sec 1 --stop-timeout 300 -- \
    "$MPIRUN" -np 2 --oversubscribe --bind-to none "$CLSOLVED" --listen 127.0.0.1:0 \
    --shared-max-entries 100000 \
    --data-dir "$D" --port-file "$D.port" --pid-file "$D.pid" </dev/null >>"$D.log" 2>&1 &
SUP=$!
sup_ready || { bad "supervised start"; finish; }

# crash_case N WHAT MATRIX TOL SIGNAL TARGET INTERRUPTED: submits a solve,
# waits until it runs, sends SIGNAL to the pid that the function TARGET
# prints, waits for the supervisor's restart number N, checks the job
crash_case() {
    local n=$1 what=$2 m=$3 tol=$4 sig=$5 target=$6 want=$7 id pid at
    id=$($DCLIENT submit "$DURL" "$m" --param tol="$tol") || bad "$what: submit"
    # signalled as soon as it is seen running: no other client call in
    # between (on a loaded machine one can take seconds)
    at=$($DCLIENT running "$DURL" "$id" --iteration 20 --timeout 300) && ok || bad "$what: job never ran: $at"
    pid=$($target)
    [ -n "$pid" ] && ok || { bad "$what: no process to signal"; return; }
    rm -f "$D.port" "$D.pid"
    kill -"$sig" "$pid"
    echo "$what ($pid) when the job was: $at"
    sup_ready && ok || { bad "no restart after $what"; finish; }
    [ "$(restarts)" = "$n" ] && ok || bad "restarts after $what: $(restarts)"
    check_job "$id" "$what" "$want" "$m"
}
rank0_pid() { echo "$DRANK0"; }
worker_pid() { pgrep -P "$(cat "$D.mpirun")" | grep -vx "$DRANK0" | head -1; }
mpirun_pid() { cat "$D.mpirun"; }

# 1, 2. kill -9 of rank 0, then of the worker rank, during a solve
crash_case 1 "kill -9 rank 0" "$BIG" 1e-10 KILL rank0_pid 1
crash_case 2 "kill -9 worker rank" "$BIG" 1e-10 KILL worker_pid 1
# 3. SIGTERM to mpirun itself during a solve: mpirun forwards it (rank 0
#    starts to drain) and kills the ranks after its second; the job is
#    re-run after the restart, or, if it finished inside that second, is
#    recorded as finished: either way it is never lost
crash_case 3 "SIGTERM to mpirun" "$BIG" 1e-12 TERM mpirun_pid "[01]"

# 4. SIGTERM to the supervisor (systemd's stop) during a solve: drain.
#    The worker rank is stopped (SIGSTOP) while the stop is requested, so the
#    job cannot end before the health probe: rank 0 waits for the worker at
#    the next reduction. Without it the case raced the solve (CI at 2ea0b64:
#    the client saw iteration 21 of 1097, but on the loaded machine the
#    supervisor took the signal only as the job ended, and the daemon was
#    gone before the probe). A job seen ended after the worker stopped (the
#    test process starved between the two) is replaced by a fresh one.
frozen=""
for try in 1 2 3; do
    id=$($DCLIENT submit "$DURL" "$BIG" --param tol=1e-10) || bad "submit 4"
    at=$($DCLIENT running "$DURL" "$id" --iteration 20 --timeout 300) || { bad "job 4 never ran: $at"; break; }
    frozen=$(worker_pid)
    [ -n "$frozen" ] && kill -STOP "$frozen"
    now=$(status_of "$DURL" "$id")
    read -r st4 it4 _ <<<"$now"
    [ "$st4" = running ] && [ "$it4" -lt 900 ] && break
    echo "job 4 try $try was $now once the worker stopped: a fresh job"
    [ -n "$frozen" ] && kill -CONT "$frozen"
    frozen=""
    $DCLIENT wait "$DURL" "$id" --timeout 300 >/dev/null
done
[ -n "$frozen" ] && ok || bad "job 4: no running job with its worker stopped"
kill -TERM "$SUP"
echo "SIGTERM to the supervisor when the job was: $at, then $now with the worker stopped"
st=""
for _ in $(seq 1 100); do
    st=$($DCLIENT request "$DURL" GET /healthz | tail -n +2 | jget "j['status']" 2>/dev/null)
    [ "$st" = draining ] && break
    sleep 0.1
done
[ "$st" = draining ] && ok || bad "health during the drain: $st"
code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$SMALL" "$DURL/v1/jobs")
[ "$code" = 503 ] && ok || bad "submit while draining: HTTP $code, expected 503"
# the running job is what the drain waits for: let it go on
[ -n "$frozen" ] && kill -CONT "$frozen"
wait "$SUP"
src=$?
SUP=""
[ "$src" = 0 ] && ok || bad "supervisor exit status after the drain: $src"
grep -q '"status":"succeeded"' "$D/jobs/$id/job.json" && ok ||
    bad "drained job not finished: $(head -c 300 "$D/jobs/$id/job.json")"
grep -q "clsolved: drained, exiting" "$D.log" && ok || bad "no drain in the log"
[ "$(restarts)" = 3 ] && ok || bad "the supervisor restarted after a stop: $(restarts) restarts"
echo "supervisor stop: drained, job finished ($(grep -o '"iterations":[0-9]*' "$D/jobs/$id/job.json"))"

# ------------------------------------------------------- disk, client, device
F=$TEST_TMP/fault
mkdir -p "$F"
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

# upload_code URL FILE: POSTs the file, prints the HTTP status
upload_code() { curl -s -o "$TEST_TMP/body" -w '%{http_code}' -H 'Expect:' --data-binary @"$2" "$1/v1/jobs"; }
incoming_empty() {
    for _ in $(seq 1 50); do
        [ -z "$(ls -A "$1/incoming" 2>/dev/null)" ] && return 0
        sleep 0.1
    done
    return 1
}
# small_job_ok URL WHAT: a small job succeeds (the daemon still serves)
small_job_ok() {
    local id j
    id=$($DCLIENT submit "$1" "$SMALL" --param tol=1e-10) || { bad "$2: submit"; return; }
    j=$($DCLIENT wait "$1" "$id" --timeout 120)
    [ "$(jget "j['status']" <<<"$j")" = succeeded ] && ok || bad "$2: small job: $j"
}
BIGUP=$TEST_TMP/p2d_upload.mtx # ~14 MB
"$CLSOLVE" gen poisson2d 350 -o "$BIGUP" >/dev/null || bad "gen"

# 5a. a real full disk: the data directory on a 4 MB tmpfs
MNT=$TEST_TMP/data-tmpfs
mkdir -p "$MNT"
if mount -t tmpfs -o size=4m tmpfs "$MNT" 2>/dev/null; then
    daemon_start 1 "$MNT/d" || { bad "daemon on tmpfs"; finish; }
    code=$(upload_code "$DURL" "$BIGUP")
    # the daemon answers 507 while the body still arrives and closes; a
    # client still sending can meet the reset before it reads the answer
    # (HTTP 000, once in the sanitized stage, 2026-11-30): once more, then
    # it must be 507
    if [ "$code" = 000 ]; then
        echo "upload onto a full disk: no answer read (000); once more" >&2
        code=$(upload_code "$DURL" "$BIGUP")
    fi
    [ "$code" = 507 ] && ok || bad "upload onto a full disk: HTTP $code, expected 507: $(head -c 300 "$TEST_TMP/body")"
    grep -q "insufficient-storage" "$TEST_TMP/body" && ok || bad "507 body: $(head -c 300 "$TEST_TMP/body")"
    incoming_empty "$MNT/d" && ok || bad "partial upload left: $(ls -la "$MNT/d/incoming")"
    used=$(df -k --output=used "$MNT" | tail -1)
    echo "tmpfs: 507 for a $(($(stat -c %s "$BIGUP") / 1048576)) MB upload onto 4 MB; ${used} KB used after"
    small_job_ok "$DURL" "after 507 (tmpfs)"
    daemon_stop 60 && ok || bad "stop after 507 (tmpfs)"
    umount "$MNT" && MNT=""
else
    echo "note: cannot mount a tmpfs here (not privileged); the disk-full case runs through clsfault.c only"
    MNT=""
fi

# 5b-7: one daemon with the fault library preloaded; faults switched by files
D2=$TEST_TMP/data2
# CLSOLVE_WARM=0: every job sets its devices up afresh, so the faults below
# meet the OpenCL calls they target (a warm device makes no clBuildProgram);
# warm devices meet their own fault in 7c
LD_PRELOAD=$CLSFAULT_LIB${LD_PRELOAD:+:$LD_PRELOAD} CLSFAULT_DIR=$F CLSOLVE_WARM=0 daemon_start 2 "$D2" ||
    { bad "daemon with clsfault"; finish; }
small_job_ok "$DURL" "clsfault loaded, no fault"

# 5b. ENOSPC on every write under the data directory during the upload
realpath "$D2" >"$F/enospc"
code=$(upload_code "$DURL" "$BIGUP")
rm -f "$F/enospc"
[ "$code" = 507 ] && ok || bad "upload with ENOSPC: HTTP $code, expected 507: $(head -c 300 "$TEST_TMP/body")"
grep -q "ENOSPC" "$F/log" && ok || bad "the ENOSPC fault was not met: $(cat "$F/log" 2>/dev/null)"
incoming_empty "$D2" && ok || bad "partial upload left after ENOSPC: $(ls -la "$D2/incoming")"
small_job_ok "$DURL" "after 507 (ENOSPC)"

# 6. clients that disconnect mid-upload: Content-Length, then chunked
njobs() { $DCLIENT request "$DURL" GET "/v1/jobs?limit=1" | tail -n +2 | jget "j['total']"; }
before=$(njobs)
$PY - "$DURL" "$BIGUP" <<'EOF' && ok || bad "disconnecting client"
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); data = open(sys.argv[2], "rb").read()
for chunked in (False, True):
    s = socket.create_connection((u.hostname, u.port))
    head = "POST /v1/jobs?tol=1e-8 HTTP/1.1\r\nHost: x\r\n"
    head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else "Content-Length: %d\r\n\r\n" % len(data)
    s.sendall(head.encode())
    part = data[: len(data) // 3]
    s.sendall(b"%x\r\n" % len(part) + part + b"\r\n" if chunked else part)
    time.sleep(0.5)  # the daemon is mid-upload: a partial file exists
    s.close()
EOF
incoming_empty "$D2" && ok || bad "disconnected uploads left: $(ls -la "$D2/incoming")"
after=$(njobs)
[ "$before" = "$after" ] && ok || bad "a disconnected upload became a job: $before -> $after jobs"
small_job_ok "$DURL" "after disconnects"

# 7a. OpenCL program build failure
: >"$F/cl_build"
id=$($DCLIENT submit "$DURL" "$SMALL" --param tol=1e-10) || bad "submit (build fault)"
j=$($DCLIENT wait "$DURL" "$id" --timeout 120)
rm -f "$F/cl_build"
[ "$(jget "j['status']" <<<"$j")" = failed ] && ok || bad "build fault: job $j"
msg=$(jget "j['error']['message']" <<<"$j")
grep -q "OpenCL program build failed.*CL_BUILD_PROGRAM_FAILURE" <<<"$msg" && ok || bad "build fault message: $msg"
[ "$(jget "j['error']['code']" <<<"$j")" = internal ] && ok || bad "build fault code: $j"
grep -q "clBuildProgram" "$F/log" && ok || bad "the build fault was not met"
echo "build failure: job failed: $msg" | cut -c1-200
small_job_ok "$DURL" "after the build failure"

# 7b. device allocation failure (buffers of 64 KB and more)
echo 65536 >"$F/cl_alloc"
id=$($DCLIENT submit "$DURL" "$SMALL" --param tol=1e-10) || bad "submit (alloc fault)"
j=$($DCLIENT wait "$DURL" "$id" --timeout 120)
rm -f "$F/cl_alloc"
[ "$(jget "j['status']" <<<"$j")" = failed ] && ok || bad "alloc fault: job $j"
msg=$(jget "j['error']['message']" <<<"$j")
grep -q "clCreateBuffer.*CL_MEM_OBJECT_ALLOCATION_FAILURE" <<<"$msg" && ok || bad "alloc fault message: $msg"
grep -q "clCreateBuffer" "$F/log" && ok || bad "the allocation fault was not met"
echo "allocation failure: job failed: $msg" | cut -c1-200
small_job_ok "$DURL" "after the allocation failure"

# a physics job meets the build failure too, and fails the same way
if [ -d "$CLSOLVE_DATA/meshes" ] || ls "$CLSOLVE_DATA"/*.obj >/dev/null 2>&1; then
    mesh=$(find "$CLSOLVE_DATA" -name '*.obj' -size -200k | head -1)
    if [ -n "$mesh" ]; then
        : >"$F/cl_build"
        code=$(curl -s -o "$TEST_TMP/body" -w '%{http_code}' -F "input=@$mesh" "$DURL/v1/jobs?kind=curvature")
        pid=$(jget "j['id']" <"$TEST_TMP/body")
        j=$($DCLIENT wait "$DURL" "$pid" --timeout 120)
        rm -f "$F/cl_build"
        [ "$code" = 202 ] && [ "$(jget "j['status']" <<<"$j")" = failed ] && ok || bad "physics build fault: $code $j"
        grep -q "CL_BUILD_PROGRAM_FAILURE" <<<"$(jget "j['error']['message']" <<<"$j")" && ok ||
            bad "physics build fault message: $j"
    fi
fi
$DCLIENT request "$DURL" GET /healthz | head -1 | grep -q 200 && ok || bad "health after the faults"
daemon_stop 60 && ok || bad "clean stop after the faults"

# 7c. warm devices (issue 13): the second job finds its device set up by the
#     first; a device that fails in a job is dropped from the warm set and set
#     up again for the next job, which succeeds
D3=$TEST_TMP/data3
LD_PRELOAD=$CLSFAULT_LIB${LD_PRELOAD:+:$LD_PRELOAD} CLSFAULT_DIR=$F daemon_start 1 "$D3" || { bad "daemon (warm devices)"; finish; }
small_job_warm() { # prints the warm_devices of a small job that succeeded
    local id j
    id=$($DCLIENT submit "$DURL" "$SMALL" --param tol=1e-10) || { echo "submit-failed"; return; }
    j=$($DCLIENT wait "$DURL" "$id" --timeout 120)
    [ "$(jget "j['status']" <<<"$j")" = succeeded ] || { echo "status-$(jget "j['status']" <<<"$j")"; return; }
    jget "j['timings']['warm_devices']" <<<"$j"
}
w1=$(small_job_warm)
w2=$(small_job_warm)
[ "$w1" = 0 ] && [ "$w2" = 1 ] && ok || bad "warm devices: first job $w1, second $w2 (expected 0 then 1)"
echo 1 >"$F/cl_alloc" # every buffer allocation fails
id=$($DCLIENT submit "$DURL" "$SMALL" --param tol=1e-10) || bad "submit (alloc fault, warm device)"
j=$($DCLIENT wait "$DURL" "$id" --timeout 120)
rm -f "$F/cl_alloc"
[ "$(jget "j['status']" <<<"$j")" = failed ] && ok || bad "alloc fault on a warm device: job $j"
w3=$(small_job_warm)
w4=$(small_job_warm)
[ "$w3" = 0 ] && [ "$w4" = 1 ] && ok ||
    bad "after the fault: warm devices $w3 then $w4 (expected 0, set up again, then 1)"
echo "warm devices: $w1, $w2; fault; $w3, $w4"
daemon_stop 60 && ok || bad "clean stop (warm devices)"
echo "faults met: $(cut -d' ' -f2- "$F/log" | sed 's/, bytes.*//; s/ 0$//' | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
finish
