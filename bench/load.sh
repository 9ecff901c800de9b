#!/usr/bin/env bash
# bench/load.sh: the daemon under load, for docs/reliability.md ("Load").
#
#   bash bench/load.sh                          # builds build-load/ if CLSOLVE is unset
#   CLSOLVE=build-load/clsolve CLIENTS=64 SECONDS_=120 RANKS="1 2" bash bench/load.sh
#
# Phase 1, for each NP in $RANKS (default "1 2"): clsolved on NP MPI ranks,
#   127.0.0.1 port 0, --max-connections 256 --connections-per-address 1000
#   (every client is on loopback); tests/load/loadgen.py with
#   $CLIENTS clients (64) for $SECONDS_ seconds (120): each client submits
#   small systems (LFAT5, 494_bus, poisson2d 20/30/40), polls every 20 ms,
#   downloads and checks the solution; then the accounting (GET /v1/jobs,
#   /metrics), the daemon's RSS/fds before, peak and after.
# Phase 2, NP = 2: wrk (-t2 -c64 --latency, $WRK_SECONDS s each, default 30)
#   against read-only endpoints of an otherwise idle daemon: GET /v1/jobs/ID
#   of a finished job, GET /healthz.
# Phase 3, NP = 2: the same wrk on GET /v1/jobs/ID while loadgen runs
#   ($CLIENTS clients, $WRK_SECONDS + 10 s, --metrics relaxed since wrk's
#   requests are in the daemon's counters too).
# Output: everything on stdout and in bench/results/load-<date>.log (the
# tables, wrk's reports, then each run's JSON summary). Speeds are
# reported, never judged; the script exits non-zero if any loadgen run
# found an error or an unaccounted job.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CLIENTS=${CLIENTS:-64}
SECONDS_=${SECONDS_:-120}
RANKS=${RANKS:-"1 2"}
WRK_SECONDS=${WRK_SECONDS:-30}
WRK_CONN=${WRK_CONN:-64}
POLL_MS=${POLL_MS:-20}
DATA=${CLSOLVE_DATA:-$ROOT/../shared/data}
PY=${PYTHON:-python3}
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
if [ -z "${CLSOLVE:-}" ]; then
    B=${BUILD:-build-load}
    cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLSOLVE_DATA_DIR="$DATA" >/dev/null &&
        cmake --build "$B" -j"$(nproc)" >/dev/null || { echo "build failed" >&2; exit 1; }
    CLSOLVE=$B/clsolve
fi
CLSOLVED=$(dirname "$CLSOLVE")/clsolved
[ -x "$CLSOLVED" ] || { echo "no $CLSOLVED" >&2; exit 1; }
command -v wrk >/dev/null || echo "note: no wrk; phases 2 and 3 are skipped" >&2
mkdir -p bench/results
LOG=bench/results/load-$(date +%Y-%m-%d).log
[ -e "$LOG" ] && LOG=bench/results/load-$(date +%Y-%m-%d-%H%M).log
TMP=$(mktemp -d /tmp/clsolve-load.XXXXXX)
DPIDS=""
cleanup() {
    for p in $DPIDS; do
        kill -0 "$p" 2>/dev/null && kill -KILL $(pgrep -P "$p" 2>/dev/null) "$p" 2>/dev/null
    done
    rm -rf "$TMP"
}
trap cleanup EXIT
exec > >(tee "$LOG") 2>&1
fail=0

# start NP DIR: sets DPID (mpirun), RANK0, URL
start() {
    local np=$1 d=$2
    setsid mpirun -np "$np" --oversubscribe --bind-to none "$CLSOLVED" --listen 127.0.0.1:0 \
        --data-dir "$d" --port-file "$d.port" --pid-file "$d.pid" --max-connections 256 --connections-per-address 1000 \
        </dev/null >>"$d.log" 2>&1 &
    DPID=$!
    DPIDS="$DPIDS $DPID"
    for _ in $(seq 600); do
        [ -s "$d.port" ] && [ -s "$d.pid" ] && break
        sleep 0.1
    done
    [ -s "$d.port" ] || { echo "daemon did not start:"; cat "$d.log"; exit 1; }
    RANK0=$(cat "$d.pid")
    URL=http://127.0.0.1:$(cat "$d.port")
}
stop() {
    kill -TERM "$RANK0"
    for _ in $(seq 600); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
    wait "$DPID"
    echo "daemon exit status $?"
}
loadgen() { # loadgen LABEL DIR [options...]
    local label=$1 d=$2
    shift 2
    $PY tests/load/loadgen.py --url "$URL" --poll-ms "$POLL_MS" --pid-file "$d.pid" \
        --data-dir "$d" --fsync-probe "$d" --json "$TMP/$label.json" --label "$label" "$@" "${FILES[@]}"
    local rc=$?
    [ $rc = 0 ] || { echo "loadgen $label exited $rc"; fail=1; }
    return $rc
}

echo "# clsolve load benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- net cli 2>/dev/null || echo ' (net/ or cli/ modified)')"
echo "host $(hostname), $(uname -srm), nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "memory $(free -m | awk '/^Mem/ {print $2 " MB, " $7 " MB available"}')"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "python $($PY -c 'import sys; print(sys.version.split()[0])'), $(mpirun --version 2>&1 | head -1)"
echo "libmicrohttpd $(dpkg-query -W -f '${Version}' libmicrohttpd12 2>/dev/null || echo '?'), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
echo "clients $CLIENTS, duration $SECONDS_ s, poll $POLL_MS ms, ranks: $RANKS; wrk $WRK_CONN connections, $WRK_SECONDS s"
echo

for n in 20 30 40; do
    "$CLSOLVE" gen poisson2d $n -o "$TMP/poisson2d_$n.mtx" >/dev/null
done
FILES=("$DATA/matrices/LFAT5.mtx" "$DATA/matrices/494_bus.mtx" "$TMP"/poisson2d_{20,30,40}.mtx)

for np in $RANKS; do
    echo "## phase 1: $np rank(s), $CLIENTS clients, $SECONDS_ s"
    start "$np" "$TMP/d$np"
    loadgen "np$np" "$TMP/d$np" --clients "$CLIENTS" --duration "$SECONDS_" --drain-timeout 120
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
    stop
    echo
done

if command -v wrk >/dev/null; then
    echo "## phase 2: wrk on an idle daemon (2 ranks), -t2 -c$WRK_CONN -d${WRK_SECONDS}s --latency"
    start 2 "$TMP/w"
    id=$($PY tests/cli/daemon_client.py submit "$URL" "$DATA/matrices/LFAT5.mtx")
    $PY tests/cli/daemon_client.py wait "$URL" "$id" --timeout 120 >/dev/null
    for path in "/v1/jobs/$id" /healthz; do
        echo "### GET $path"
        wrk -t2 -c"$WRK_CONN" -d"${WRK_SECONDS}s" --latency "$URL$path"
        echo
    done
    echo "## phase 3: wrk on GET /v1/jobs/ID while loadgen runs ($CLIENTS clients, $((WRK_SECONDS + 10)) s)"
    loadgen "np2-with-wrk" "$TMP/w" --clients "$CLIENTS" --duration $((WRK_SECONDS + 10)) \
        --drain-timeout 120 --metrics relaxed >"$TMP/concurrent.out" 2>&1 &
    lg=$!
    sleep 5
    wrk -t2 -c"$WRK_CONN" -d"${WRK_SECONDS}s" --latency "$URL/v1/jobs/$id"
    wait $lg || fail=1
    cat "$TMP/concurrent.out"
    stop
    echo
fi

echo "## JSON summaries"
for f in "$TMP"/*.json; do
    echo "### $(basename "$f")"
    cat "$f"
done
echo "log: $LOG"
exit $fail
