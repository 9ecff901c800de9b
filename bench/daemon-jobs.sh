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
# MODES may add nobatch: as lanes with --batch off (issue 24: on a GPU
# the daemon solves the small jobs waiting in its queue in one launch; each
# run prints the batches it made, from /metrics).
# LARGE=FILE (mixed load, issue 24): in each run a large job of FILE
# (LARGE_QUERY, default tol=1e-14&maxiter=6000: it runs to maxiter) is
# submitted first (streamed: curl -T; DAEMON_ARGS="--max-upload BYTES" above
# 1 GiB) and the small jobs start once it runs; its status, its times and
# whether it still ran when the small load ended are printed.
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
        lanes=1 extra=""
        [ $mode = lanes ] || [ $mode = nobatch ] && lanes=${LANES:-4}
        [ $mode = nobatch ] && extra="--batch off"
        # shellcheck disable=SC2086
        "$D" --listen 127.0.0.1:$PORT --data-dir "$dir" --device "$DEVICE" --lanes $lanes ${DAEMON_ARGS:-} $extra >"$dir.log" 2>&1 &
        pid=$!
        for _ in $(seq 1 100); do curl -sf http://127.0.0.1:$PORT/healthz >/dev/null && break; sleep 0.1; done
        big=""
        if [ -n "${LARGE:-}" ]; then
            big=$(curl -sf -X POST -T "$LARGE" \
                "http://127.0.0.1:$PORT/v1/jobs?${LARGE_QUERY:-tol=1e-14&maxiter=6000}" |
                python3 -c "import json,sys; print(json.load(sys.stdin)['id'])")
            for _ in $(seq 1 600); do
                curl -sf "http://127.0.0.1:$PORT/v1/jobs/$big" | grep -q '"status":"running"' && break
                sleep 0.1
            done
        fi
        timeout 300 python3 tests/load/loadgen.py "$BUS" --url http://127.0.0.1:$PORT --clients 40 \
            --jobs "${JOBS:-40}" --param precond=jacobi ${PARAMS:-} --metrics off --settle 0 --wait "${WAIT:-30}" >"$dir.json" 2>&1
        if [ -n "${LARGE:-}" ] && [ -z "$big" ]; then
            echo "large job: not accepted (DAEMON_ARGS=\"--max-upload ...\"?)"
        elif [ -n "$big" ]; then
            ended=$(date +%s.%N)
            for _ in $(seq 1 1200); do
                curl -sf "http://127.0.0.1:$PORT/v1/jobs/$big" | grep -qE '"status":"(succeeded|failed|cancelled)"' && break
                sleep 0.25
            done
            curl -sf "http://127.0.0.1:$PORT/v1/jobs/$big" | python3 -c "
import json, sys, datetime
j = json.load(sys.stdin); t = j.get('timings') or {}; r = j.get('result') or {}
fin = datetime.datetime.fromisoformat(j['finished_at'].replace('Z', '+00:00')).timestamp()
print(f\"large job: {j['status']}, {r.get('iterations')} iterations, parse {t.get('parse_s', 0):.2f} s, \"
      f\"solve {t.get('solve_s', 0):.2f} s ({t.get('ms_per_iteration', 0):.4f} ms/iteration), total {t.get('total_s', 0):.2f} s; \"
      f\"{'still running' if fin > float(sys.argv[1]) else 'already ended'} when the small load ended\")" "$ended"
        fi
        batches=$(curl -sf http://127.0.0.1:$PORT/metrics | awk '/^clsolve_batches_total/ {b=$2} /^clsolve_batched_jobs_total/ {j=$2} END {print b+0, j+0}')
        kill $pid; wait $pid 2>/dev/null
        python3 - "$dir.json" $mode $batches <<'PY'
import json, sys
s = open(sys.argv[1]).read()
j = json.loads(s[s.index("{"):])
nb, nj = int(sys.argv[3]), int(sys.argv[4])
print(f"{sys.argv[2]}: {j['jobs']['verified']}/{j['jobs']['accepted']} verified, "
      f"{j['throughput']['jobs_per_s']:.1f} jobs/s, daemon run p50 {j['daemon_run']['p50_ms']} ms, "
      f"end to end p50 {j['job_e2e']['p50_ms']:.0f} ms, p99 {j['job_e2e'].get('p99_ms', float('nan')):.0f} ms, "
      f"errors {j['errors']}; {nj} jobs in {nb} batches" + (f" (mean {nj / nb:.1f})" if nb else ""))
PY
        rm -rf "$dir" "$dir.log" "$dir.json"
        PORT=$((PORT + 1))
    done
done
unset CLSOLVE_WARM
