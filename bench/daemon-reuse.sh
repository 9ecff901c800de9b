#!/usr/bin/env bash
# bench/daemon-reuse.sh: a preconditioner set up on the device and kept by
# the daemon for the next job on the same matrix (issue 25, item 1: "reuse
# across solves of the same matrix"), against the same daemon with the
# device set-ups not kept (CLSOLVE_PC_DEVICE_CACHE=0), in one command.
#   poisson3d N (default 256) written as .mtx; for ROUNDS rounds, each of
#   MODES ("kept off") in turn: clsolved started directly, one small job
#   to warm it, then REPS jobs POSTing the same file (PRECOND, default amg;
#   tol 1e-8) with x fetched as .npy by the solution's long poll. Per job:
#   the client's end to end, the record's precond_setup_s, setup_s,
#   solve_s and total_s, built/reused and the iterations. The first job of
#   a daemon builds in both modes; the summary gives min / median of the
#   later ones per mode, and checks every x against the bytes of its daemon's
#   first.
#   With ALT=1 the jobs alternate between that file and the same matrix
#   with its diagonal 1.5x (the same pattern, other values: a time step):
#   each job after a daemon's first is then a numeric re-set-up from the
#   kept hierarchy's aggregates (mode "resetup"), against a fresh device
#   set-up each job (mode "fresh": CLSOLVE_AMG_RESETUP=0); every x is
#   checked against its daemon's first x of the same file.
#   BUILD=/tmp/b1 N=256 REPS=5 ROUNDS=2 DEVICE=gpu bash bench/daemon-reuse.sh
#   ALT=1 MODES="resetup fresh" BUILD=/tmp/b1 bash bench/daemon-reuse.sh
# Builds nothing; needs curl and python3 (standard library only).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
C=$B/clsolve
D=$B/clsolved
N=${N:-256}
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-2}
MODES=${MODES:-kept off}
PRECOND=${PRECOND:-amg}
QUERY=${QUERY:-} # more of the query, e.g. "&precond_setup=device" on a CPU device
DEVICE=${DEVICE:-gpu}
PORT=${PORT:-18800}
PY=${PY:-python3}
W=${WORK:-/tmp/daemon-reuse}
mkdir -p "$W"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null)"
ALT=${ALT:-0}
M=$W/p$N.mtx
[ -s "$M" ] || "$C" gen poisson3d "$N" -o "$M" >/dev/null
cat "$M" >/dev/null
M2=$W/p${N}d.mtx # the diagonal (the only entries 6) 1.5x
if [ "$ALT" = 1 ]; then
    [ -s "$M2" ] || sed 's/ 6$/ 9/' "$M" >"$M2"
    cat "$M2" >/dev/null
fi
"$C" gen poisson2d 400 -o "$W/warm.mtx" >/dev/null
echo "file: $M $(stat -c %s "$M") bytes; --precond $PRECOND, tol 1e-8, device $DEVICE"
: >"$W/summary.txt"
now() { date +%s.%N; }
for round in $(seq 1 "$ROUNDS"); do
    for mode in $MODES; do
        dir=$W/data-$mode
        rm -rf "$dir" "$dir.log"
        env=()
        [ "$mode" = off ] && env=(CLSOLVE_PC_DEVICE_CACHE=0)
        [ "$mode" = fresh ] && env=(CLSOLVE_AMG_RESETUP=0)
        env "${env[@]}" setsid "$D" --listen 127.0.0.1:$PORT --data-dir "$dir" --device "$DEVICE" --max-upload 8G \
            --pid-file "$dir.pid" </dev/null >"$dir.log" 2>&1 &
        lpid=$!
        U=http://127.0.0.1:$PORT
        for _ in $(seq 1 300); do curl -sf "$U/healthz" >/dev/null && break; sleep 0.1; done
        for j in warm $(seq 1 "$REPS"); do
            f=$M q="precond=$PRECOND&tol=1e-8$QUERY" tagf=a
            [ "$ALT" = 1 ] && [ $j != warm ] && [ $((j % 2)) = 0 ] && f=$M2 tagf=b
            [ $j = warm ] && f=$W/warm.mtx q="maxiter=50"
            s=$(now)
            resp=$(curl -sf -X POST -T "$f" -H "Content-Type: application/octet-stream" -H "Expect:" "$U/v1/jobs?$q")
            [[ $resp =~ \"id\":\"([^\"]+)\" ]] || { echo "no job id in: $resp" >&2; continue; }
            id=${BASH_REMATCH[1]}
            curl -sf "$U/v1/jobs/$id/solution?format=npy&wait=60" -o "$W/x-$j.npy"
            e=$(now)
            [ $j = warm ] && continue
            # the first job's x of this daemon (daemons started later read
            # the tuning the first one wrote, and may sum in another order)
            [ "$j" -le 2 ] && [ ! -e "$W/x-first-$tagf.npy" ] && cp "$W/x-$j.npy" "$W/x-first-$tagf.npy"
            same=$(cmp -s "$W/x-$j.npy" "$W/x-first-$tagf.npy" && echo same || echo DIFFERS)
            curl -sf "$U/v1/jobs/$id" >"$W/job.json"
            $PY - "$W/job.json" "$s" "$e" "$mode" "$round" "$j" "$same" <<'EOF' | tee -a "$W/summary.txt"
import json, sys
j = json.load(open(sys.argv[1])); t = j.get("timings") or {}; r = j.get("result") or {}
p = r.get("preconditioner") or {}
print("%s round %s job %s: %s, end to end %.3f s, precond_setup %.3f, setup %.3f, solve %.3f, total %.3f;"
      " built %s reused %s resetup %s (aggregation %.3f s), %s iterations, x %s" % (
    sys.argv[4], sys.argv[5], sys.argv[6], j["status"], float(sys.argv[3]) - float(sys.argv[2]),
    t.get("precond_setup_s", -1), t.get("setup_s", -1), t.get("solve_s", -1), t.get("total_s", -1),
    p.get("built"), p.get("reused"), p.get("resetup"), (p.get("amg") or {}).get("aggregate_s", -1),
    r.get("iterations"), sys.argv[7]))
EOF
        done
        rm -f "$W"/x-first-*.npy
        kill -TERM "$(cat "$dir.pid" 2>/dev/null)" 2>/dev/null
        wait $lpid 2>/dev/null
        rm -rf "$dir"
        PORT=$((PORT + 1))
    done
done
$PY - "$W/summary.txt" <<'EOF'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) round \d+ job (\d+): \S+, end to end ([\d.]+) s, precond_setup ([-\d.]+), "
                 r"setup ([-\d.]+), solve ([-\d.]+), total ([-\d.]+);", line)
    if m:
        first = m.group(2) == "1"
        rows.setdefault((m.group(1), first), []).append([float(v) for v in m.groups()[2:]])
print("--- summary (s, min / median): end to end, precond_setup, setup, solve, total")
for (mode, first), v in sorted(rows.items()):
    cols = list(zip(*v))
    print("%-5s %-11s n=%-3d " % (mode, "first job" if first else "later jobs", len(v)) +
          "  ".join("%.3f / %.3f" % (min(c), statistics.median(c)) for c in cols))
EOF
