#!/usr/bin/env bash
# bench/soak.sh: the soak in full (issue 17), for docs/reliability.md
# ("Soak"). Loopback only; builds nothing.
#
#   CLSOLVE=build/clsolve bash bench/soak.sh                 # clsolved beside it
#   JOBS=10000 RANKS=2 CLIENTS=4 OUT=/tmp/soak bash bench/soak.sh
#
# clsolved on $RANKS (2) MPI ranks under deploy/supervise.sh, --max-nnz 1M,
# --header-timeout 3; tests/load/soak.py with $CLIENTS (4) clients until
# $JOBS (10,000) jobs are accepted (at most $SECONDS_, default 3 h): small
# systems (LFAT5, poisson2d 20, 30) with malformed uploads, cancels,
# deletes, disconnects and listings mixed in, a gzip bomb every 300 jobs,
# kill -9 of rank 0 three times along the way. Then every accepted job is
# checked (final; a recomputed residual for each success; the line of each
# bad input), and rank 0's last life is compared idle after warming up and
# idle at the end.
# Targets: no job lost or wrong; rank 0's RSS after within 64 MB + 16 kB per
# job of before, fds and threads back to their start; p99 of GET
# /v1/jobs/ID under 10 ms. Output: a table on stdout; soak.json and the
# daemon's log under $OUT (if set) and bench/results/soak-<date>.log.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
JOBS=${JOBS:-10000}
SECONDS_=${SECONDS_:-10800}
RANKS=${RANKS:-2}
CLIENTS=${CLIENTS:-4}
DATA=${CLSOLVE_DATA:-$ROOT/../shared/data}
[ -n "${CLSOLVE:-}" ] || { echo "set CLSOLVE to the clsolve binary (clsolved beside it)" >&2; exit 2; }
CLSOLVED=$(dirname "$CLSOLVE")/clsolved
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
W=$(mktemp -d /tmp/clsolve-soak.XXXXXX)
OUTDIR=${OUT:-$W/out}
mkdir -p "$OUTDIR" bench/results
LOG=bench/results/soak-$(date -u +%Y%m%d-%H%M%S).log
D=$W/data
SUP=""
cleanup() {
    [ -n "$SUP" ] && kill -KILL "$SUP" 2>/dev/null
    local m
    m=$(cat "$D.mpirun" 2>/dev/null) && [ -n "$m" ] && kill -KILL $(pgrep -P "$m") "$m" 2>/dev/null
    cp -f "$D.log" "$OUTDIR/daemon.log" 2>/dev/null
    rm -rf "$W/data" "$W"/*.mtx
}
trap cleanup EXIT
for n in 20 30; do "$CLSOLVE" gen poisson2d $n -o "$W/p$n.mtx" >/dev/null || exit 1; done
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
{ uptime; echo "clsolved $CLSOLVED on $RANKS ranks; $CLIENTS clients, $JOBS jobs"; } | tee -a "$LOG"
setsid bash deploy/supervise.sh --drain-pid-file "$D.pid" --child-pid-file "$D.mpirun" \
    --restart-sec 1 --stop-timeout 300 -- \
    mpirun -np "$RANKS" --oversubscribe --bind-to none "$CLSOLVED" --listen 127.0.0.1:$PORT \
    --data-dir "$D" --pid-file "$D.pid" --max-nnz 1000000 --header-timeout 3 \
    </dev/null >>"$D.log" 2>&1 &
SUP=$!
for _ in $(seq 1200); do [ -s "$D.pid" ] && curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
$PY tests/load/soak.py --url "http://127.0.0.1:$PORT" --rank0-pid-file "$D.pid" --jobs "$JOBS" \
    --seconds "$SECONDS_" --clients "$CLIENTS" --kills 3 --bomb-every 300 --max-nnz 1000000 \
    --warm 100 --quiet 4 --json "$OUTDIR/soak.json" \
    "$DATA/matrices/LFAT5.mtx" "$W/p20.mtx" "$W/p30.mtx" | tee -a "$LOG"
rc=${PIPESTATUS[0]}
restarts=$(grep -c "supervise: .* restart [0-9]* in" "$D.log")
$PY - "$OUTDIR/soak.json" "$restarts" <<'PYEOF' | tee -a "$LOG"
import json, sys
j = json.load(open(sys.argv[1])); r = j["rank0_last_life"]; a, b = r["idle_after_warm"] or {}, r["idle_at_end"] or {}
bound = 64 * 1024 + 16 * r["jobs_since"]
rows = [
    ("jobs accepted / s", "%d in %.0f s (%.1f/s)" % (j["accepted"], j["seconds"], j["accepted"] / max(j["seconds"], 1)), ""),
    ("final states", str(j["final"]), ""),
    ("lost / wrong / client errors", "%d / %d / %d" % (len(j["lost"]), j["wrong_count"], j["error_count"]), "0 / 0"),
    ("kill -9 of rank 0, restarts", "%s, %s" % (j["actions"].get("kill9"), sys.argv[2]), "3, 3"),
    ("actions", ", ".join("%s %d" % kv for kv in sorted(j["actions"].items())), ""),
    ("rank 0 RSS, last life (kB)", "%s -> %s over %d jobs" % (a.get("VmRSS"), b.get("VmRSS"), r["jobs_since"]), "+%d kB at most" % bound),
    ("rank 0 fds / threads", "%s -> %s / %s -> %s" % (a.get("fds"), b.get("fds"), a.get("Threads"), b.get("Threads")), "unchanged"),
    ("GET /v1/jobs/ID (ms)", "p50 %s, p99 %s, max %s over %d" % (j["poll_ms"]["p50"], j["poll_ms"]["p99"], j["poll_ms"]["max"], j["poll_ms"]["count"]), "p99 < 10"),
]
print()
for k, v, t in rows:
    print("%-30s %-70s %s" % (k, v, t))
PYEOF
kill -TERM "$SUP"
for _ in $(seq 3000); do kill -0 "$SUP" 2>/dev/null || break; sleep 0.1; done
wait "$SUP"
SUP=""
echo "raw: $OUTDIR, $LOG"
exit "$rc"
