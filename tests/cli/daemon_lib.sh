# daemon_lib.sh: starting and stopping clsolved under mpirun for the daemon
# tests. Sourced after lib.sh. The daemon listens on 127.0.0.1 port 0 (the
# kernel picks a free port; clsolved writes it to --port-file), so tests
# never collide on a port. Every daemon started here is killed by the EXIT
# trap, by process id (mpirun and its children), never by name.
CLSOLVED="$(dirname "$CLSOLVE")/clsolved"
DCLIENT="$PY $here/daemon_client.py"
MPIRUN=${MPIRUN:-mpirun}
DPIDS=""

[ -x "$CLSOLVED" ] || { echo "SKIP: $CLSOLVED not built" >&2; exit 77; }
command -v "$MPIRUN" >/dev/null || { echo "SKIP: no mpirun" >&2; exit 77; }

# daemon_start NP DATA_DIR [clsolved options...]: sets DPID (mpirun), DURL,
# DRANK0 (rank 0's pid); waits until the port file appears (60 s at most;
# DAEMON_START_TIMEOUT seconds). DAEMON_WRAP, when set, is a command put
# before clsolved on every rank (tests/valgrind/daemon-e2e.sh sets it to
# valgrind).
daemon_start() {
    local np=$1 data=$2
    shift 2
    record_responses
    rm -f "$data.port" "$data.pid"
    DLOG=$data.log
    DLOG_OFF=$(stat -c %s "$DLOG" 2>/dev/null || echo 0) # this daemon's part of the log
    # shellcheck disable=SC2086
    setsid "$MPIRUN" -np "$np" --oversubscribe --bind-to none ${DAEMON_WRAP:-} "$CLSOLVED" --listen 127.0.0.1:0 \
        --data-dir "$data" --port-file "$data.port" --pid-file "$data.pid" "$@" \
        </dev/null >>"$data.log" 2>&1 &
    DPID=$!
    DPIDS="$DPIDS $DPID"
    for _ in $(seq 1 $((${DAEMON_START_TIMEOUT:-60} * 10))); do
        if [ -s "$data.port" ] && [ -s "$data.pid" ]; then
            DURL="http://127.0.0.1:$(cat "$data.port")"
            DRANK0=$(cat "$data.pid")
            return 0
        fi
        kill -0 "$DPID" 2>/dev/null || break
        sleep 0.1
    done
    echo "daemon did not start; log:" >&2
    cat "$data.log" >&2
    return 1
}

# daemon_kill9: kill -9 mpirun and every process it started (all ranks).
daemon_kill9() {
    local kids
    kids=$(pgrep -P "$DPID" 2>/dev/null)
    kill -KILL $kids "$DPID" 2>/dev/null
    wait "$DPID" 2>/dev/null
    return 0
}

# daemon_stop [SECONDS]: SIGTERM to rank 0 (drain), then wait for mpirun to
# exit; returns mpirun's exit status (137 after a forced kill).
daemon_stop() {
    local limit=${1:-120} rc
    # a slow daemon (valgrind) gets DAEMON_STOP_TIMEOUT when that is longer
    [ "${DAEMON_STOP_TIMEOUT:-0}" -gt "$limit" ] && limit=$DAEMON_STOP_TIMEOUT
    kill -TERM "$DRANK0" 2>/dev/null
    for _ in $(seq 1 $((limit * 10))); do
        if ! kill -0 "$DPID" 2>/dev/null; then
            wait "$DPID" && return 0
            rc=$?
            # this daemon's sanitizer reports go to the test's output, a
            # crash of LeakSanitizer's tracer at its exit last, right
            # before the test's FAIL line: the sanitized stage's retry
            # (tests/sanitizers/tracer_retry.sh) reads them there
            tail -c +$((DLOG_OFF + 1)) "$DLOG" 2>/dev/null |
                grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:|detected memory leaks" >&2
            tail -c +$((DLOG_OFF + 1)) "$DLOG" 2>/dev/null |
                grep -m1 -E "Tracer caught signal|LeakSanitizer has encountered a fatal error" >&2
            return $rc
        fi
        sleep 0.1
    done
    daemon_kill9
    return 137
}

daemon_cleanup() {
    local rc=$?
    for p in $DPIDS; do
        if kill -0 "$p" 2>/dev/null; then
            kill -KILL $(pgrep -P "$p" 2>/dev/null) "$p" 2>/dev/null
        fi
    done
    # the test fails when a response it received is not what
    # docs/openapi.yaml says (a skipped test stays skipped)
    if [ "$rc" != 77 ] && ! openapi_validate; then
        exit 1
    fi
}
trap daemon_cleanup EXIT

# jq-like helper on a JSON string: jget 'EXPR' <<<"$json"
jget() { $PY -c "import json,sys; j=json.load(sys.stdin); print($1)"; }

# submit_job URL BODYFILE|- QUERY: POST /v1/jobs?QUERY with the file as the
# body (or none); prints the job's id
submit_job() {
    local u=$1 body=$2 q=$3
    if [ "$body" = - ]; then
        $DCLIENT request "$u" POST "/v1/jobs?$q" | tail -n +2 | jget "j['id']"
    else
        $DCLIENT request "$u" POST "/v1/jobs?$q" --body "$body" | tail -n +2 | jget "j['id']"
    fi
}

# submit_deform URL: a deform job whose basis (3 x 1) and q = [1] come as
# multipart parts; prints its id
submit_deform() {
    $PY - "$1" <<'PYEOF'
import json, sys, urllib.request, uuid
b = "----deform" + uuid.uuid4().hex
parts = [("input", "U.mtx", "%%MatrixMarket matrix array real general\n3 1\n1\n2\n3\n"),
         ("options", None, json.dumps({"q": [1]}))]
body = b"".join(("--%s\r\nContent-Disposition: form-data; name=\"%s\"%s\r\n\r\n%s\r\n" %
                 (b, n, '; filename="%s"' % f if f else "", c)).encode() for n, f, c in parts) + ("--%s--\r\n" % b).encode()
req = urllib.request.Request(sys.argv[1] + "/v1/jobs?kind=deform", data=body, method="POST",
                             headers={"Content-Type": "multipart/form-data; boundary=" + b})
print(json.load(urllib.request.urlopen(req))["id"])
PYEOF
}

# wait_job URL ID [TIMEOUT]: prints the final job JSON
wait_job() { $DCLIENT wait "$1" "$2" --timeout "${3:-300}"; }
