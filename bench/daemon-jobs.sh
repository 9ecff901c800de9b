#!/usr/bin/env bash
# bench/daemon-jobs.sh: small-job throughput of the daemon, one rank (issue
# 13): 40 jobs of 1138_bus (Jacobi) submitted at once by 40 clients
# (tests/load/loadgen.py: every answer's residual checked; JOBS=400 for
# the issue's 400), REPS times each
# way, all in one command. The ways: lanes (small jobs several at once on
# the device, --lanes 4, the default), one (--lanes 1: one job at a time,
# warm devices) and cold (--lanes 1 and CLSOLVE_WARM=0: contexts and
# programs made per job).
#   bash bench/daemon-jobs.sh [DEVICE] [REPS]      (defaults auto 3)
#   BUS=path/to/1138_bus.mtx CLSOLVED=build/clsolved
# Prints jobs per second end to end and the daemon's own run time per job
# (p50) for each way (MODES="lanes one cold", LANES=4). The clients wait
# with long polls (GET /v1/jobs/ID?wait=30, as clsolve and the Python client
# do); WAIT=0 polls every 20 ms instead, as before them. PARAMS adds job
# parameters (e.g. PARAMS="--param method=cg-small", the one-launch loop).
set -uo pipefail
cd "$(dirname "$0")/.."
DEVICE=${1:-auto}
REPS=${2:-3}
BUS=${BUS:-../shared/data/matrices/1138_bus.mtx}
D=${CLSOLVED:-build/clsolved}
PORT=${PORT:-18600}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
MODES=${MODES:-lanes one cold}
for mode in $MODES; do
    for r in $(seq 1 "$REPS"); do
        dir=$(mktemp -d)
        if [ $mode = cold ]; then export CLSOLVE_WARM=0; else unset CLSOLVE_WARM; fi
        lanes=1
        [ $mode = lanes ] && lanes=${LANES:-4}
        "$D" --listen 127.0.0.1:$PORT --data-dir "$dir" --device "$DEVICE" --lanes $lanes >"$dir.log" 2>&1 &
        pid=$!
        for _ in $(seq 1 100); do curl -sf http://127.0.0.1:$PORT/healthz >/dev/null && break; sleep 0.1; done
        timeout 300 python3 tests/load/loadgen.py "$BUS" --url http://127.0.0.1:$PORT --clients 40 \
            --jobs "${JOBS:-40}" --param precond=jacobi ${PARAMS:-} --metrics off --settle 0 --wait "${WAIT:-30}" >"$dir.json" 2>&1
        kill $pid; wait $pid 2>/dev/null
        python3 - "$dir.json" $mode <<'PY'
import json, sys
s = open(sys.argv[1]).read()
j = json.loads(s[s.index("{"):])
print(f"{sys.argv[2]}: {j['jobs']['verified']}/{j['jobs']['accepted']} verified, "
      f"{j['throughput']['jobs_per_s']:.1f} jobs/s, daemon run p50 {j['daemon_run']['p50_ms']} ms, "
      f"end to end p50 {j['job_e2e']['p50_ms']:.0f} ms, p99 {j['job_e2e'].get('p99_ms', float('nan')):.0f} ms, "
      f"errors {j['errors']}")
PY
        rm -rf "$dir" "$dir.log" "$dir.json"
        PORT=$((PORT + 1))
    done
done
unset CLSOLVE_WARM
