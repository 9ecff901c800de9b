#!/usr/bin/env bash
# The soak, short form (issue 17; the full form, 10,000 jobs, is
# bench/soak.sh): clsolved on 1 rank under deploy/supervise.sh, 4 clients
# for about 100 s submitting small systems (LFAT5, poisson2d 20 and 30) with
# a mix of malformed uploads, cancels, deletes, disconnects and listings, a
# gzip bomb every 100 jobs (over --max-nnz: 413; under it with an extra
# line: the job fails there), and kill -9 of rank 0 three times
# (tests/load/soak.py). Checked: no job lost or wrong (every accepted job
# that was not deleted is final: succeeded with a recomputed residual under
# 10 x tol, failed at the line the input is wrong, or cancelled), three
# restarts, and rank 0's last life back where it started when idle: the
# same descriptors and threads, its RSS within 64 MB + 16 kB per job of
# that life (+48 MB in the sanitized build: ASan's quarantine and caches). The p99 of GET /v1/jobs/ID is printed (the target, under
# 10 ms, is bench/soak.sh's to judge). Budget: about 2.5 minutes.
# SOAK_SECONDS overrides the 100 s.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data matrices
ROOT=$(cd "$here/../.." && pwd)
D=$TEST_TMP/data
rm -rf "$D" "$D".*
for n in 20 30; do "$CLSOLVE" gen poisson2d $n -o "$TEST_TMP/p$n.mtx" >/dev/null || bad "gen $n"; done
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# In the sanitized build (ASAN_OPTIONS set by tests/CMakeLists.txt) freed
# memory stays resident in ASan's quarantine (256 MB by default) and its
# allocator's caches: the daemon gets a 16 MB quarantine and the RSS bound
# 48 MB more for both, so the check still tells a leak from ASan's keeping.
SOAK_ASAN_KB=0
if [ -n "${ASAN_OPTIONS:-}" ]; then
    export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=16"
    SOAK_ASAN_KB=$((48 * 1024))
fi
export SOAK_ASAN_KB
SUP=""
sup_cleanup() {
    [ -n "$SUP" ] && kill -KILL "$SUP" 2>/dev/null
    local m
    m=$(cat "$D.mpirun" 2>/dev/null) && [ -n "$m" ] && kill -KILL $(pgrep -P "$m") "$m" 2>/dev/null
    return 0
}
trap sup_cleanup EXIT
setsid bash "$ROOT/deploy/supervise.sh" --drain-pid-file "$D.pid" --child-pid-file "$D.mpirun" \
    --restart-sec 1 --stop-timeout 120 -- \
    "$MPIRUN" -np 1 --oversubscribe --bind-to none "$CLSOLVED" --listen 127.0.0.1:$PORT \
    --data-dir "$D" --pid-file "$D.pid" --max-nnz 1000000 --header-timeout 3 </dev/null >>"$D.log" 2>&1 &
SUP=$!
for _ in $(seq 600); do [ -s "$D.pid" ] && curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
$PY "$here/../load/soak.py" --url "http://127.0.0.1:$PORT" --rank0-pid-file "$D.pid" \
    --seconds "${SOAK_SECONDS:-100}" --jobs 100000 --clients 4 --kills 3 --bomb-every 100 \
    --max-nnz 1000000 --warm 30 --quiet 4 --json "$TEST_TMP/soak.json" \
    "$CLSOLVE_DATA/matrices/LFAT5.mtx" "$TEST_TMP/p20.mtx" "$TEST_TMP/p30.mtx"
rc=$?
[ $rc = 0 ] && ok || bad "soak.py: jobs lost or wrong (exit $rc)"
restarts=$(grep -c "supervise: .* restart [0-9]* in" "$D.log")
[ "$restarts" = 3 ] && ok || bad "restarts: $restarts, expected 3"
$PY - "$TEST_TMP/soak.json" <<'PYEOF' && ok || bad "rank 0's last life did not come back to where it started"
import json, sys
j = json.load(open(sys.argv[1])); r = j["rank0_last_life"]; a, b = r["idle_after_warm"], r["idle_at_end"]
if not a or not b:
    print("no samples: %s" % r); sys.exit(1)
import os
bound = 64 * 1024 + 16 * r["jobs_since"] + int(os.environ.get("SOAK_ASAN_KB", "0"))
print("rank 0, last life: RSS %d -> %d kB (bound +%d kB for %d jobs), fds %d -> %d, threads %d -> %d" % (
    a["VmRSS"], b["VmRSS"], bound, r["jobs_since"], a["fds"], b["fds"], a["Threads"], b["Threads"]))
print("GET /v1/jobs/ID p99 %s ms over %d polls" % (j["poll_ms"]["p99"], j["poll_ms"]["count"]))
sys.exit(0 if b["VmRSS"] - a["VmRSS"] <= bound and a["fds"] == b["fds"] and a["Threads"] == b["Threads"] else 1)
PYEOF
kill -TERM "$SUP"
for _ in $(seq 1200); do kill -0 "$SUP" 2>/dev/null || break; sleep 0.1; done
wait "$SUP"
src=$?
SUP=""
[ $src = 0 ] && ok || bad "supervisor exit $src after the drain"
finish
