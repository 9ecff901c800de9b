#!/usr/bin/env bash
# bench/host-path.sh: the path from bytes to x around the solve (issue 23),
# the daemon scenario beside the CLI on the same file, in one command:
#   1. poisson3d N (default 200: 8 M rows, 589 MB) written as .mtx and read
#      once (the page cache, as the issue's figures);
#   2. `clsolve solve FILE --precond jacobi --tol 1e-8 --json`, REPS runs:
#      wall clock and every phase of its `times`; after each, the same
#      with `-o x.mtx` (x written, as the daemon's download gives it);
#   3. the daemon, one rank, for each of DAEMONS (default "plain mpirun1"):
#      plain = clsolved started directly, mpirun1 = `mpirun -np 1
#      --bind-to none clsolved`, bound = `mpirun -np 1 clsolved` (Open
#      MPI's default binding: one core, which clsolved widens: common/
#      affinity.h), keep = bound with CLSOLVE_BINDING=keep (the binding
#      kept, as before the widening), npG = `mpirun -np G --bind-to none
#      clsolved` (G ranks, a GPU each); MODE+pre (plain+pre, np2+pre):
#      that daemon with --parse-while-uploading on. A job of 160,000 rows (50
#      iterations, split over the ranks as the measured one) warms it; then REPS
#      times: POST the file (curl -T, streamed), wait for the job with
#      long polls (GET /v1/jobs/ID?wait=30: answered when it ends; POLL=1
#      polls every 50 ms instead, as before the long poll),
#      download the solution (Matrix Market; then, apart, the same as .npy);
#      then the same file POSTed again and x fetched as .npy by the
#      solution's long poll (GET .../solution?wait=60: one request);
#      the client's own clock for each step and the
#      job record's `timings` (receive, queue, parse, set-up, solve, write).
#   CLSOLVE_MM_PROFILE=1 is set for both, so each read prints its threads,
#   its path (mmap, read, gzip) and its phases (stderr, the daemon's log).
#   BUILD=/tmp/b1 N=200 REPS=3 DEVICE=gpu bash bench/host-path.sh
#   (FORMAT=bin: the file in the binary CSR form instead of Matrix Market)
#   (MAXITER=K caps the iterations of both: the host path alone on PoCL)
# Builds nothing; needs curl and python3 (standard library only).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
C=$B/clsolve
D=$B/clsolved
N=${N:-200}
REPS=${REPS:-3}
DEVICE=${DEVICE:-auto}
DAEMONS=${DAEMONS:-plain mpirun1}
MAXITER=${MAXITER:-} # a cap on iterations for both (a slow device: the host path only)
PORT=${PORT:-18700}
PY=${PY:-python3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=${WORK:-/tmp/host-path}
mkdir -p "$W"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null)"
# FORMAT=bin: the matrix in the binary CSR form (docs/api.md, "Binary matrices")
M=$W/p$N.${FORMAT:-mtx}
[ -s "$M" ] || "$C" gen poisson3d "$N" -o "$M" >/dev/null
cat "$M" >/dev/null
echo "file: $M $(stat -c %s "$M") bytes"
: >"$W/summary.txt"
now() { date +%s.%N; }
# post FILE [MAXITER]: the job's POST (the file streamed), its JSON on stdout
post() {
    curl -sf -X POST -T "$1" -H "Content-Type: application/octet-stream" -H "Expect:" \
        "$U/v1/jobs?precond=jacobi&tol=1e-8${2:+&maxiter=$2}"
}
dt() { $PY -c "print('%.3f' % ($2 - $1))"; }

echo "--- clsolve solve (REPS=$REPS)"
for r in $(seq 1 "$REPS"); do
    s=$(now)
    CLSOLVE_MM_PROFILE=1 "$C" solve "$M" --device "$DEVICE" --precond jacobi --tol 1e-8 --json ${MAXITER:+--maxiter $MAXITER} \
        >"$W/cli.json" 2>"$W/cli.err"
    e=$(now)
    $PY - "$W/cli.json" "$(dt "$s" "$e")" <<'EOF' | tee -a "$W/summary.txt"
import json, sys
j = json.load(open(sys.argv[1])); t = j["times"]
keys = ["startup_s", "parse_s", "setup_s", "solve_s", "gather_s", "write_s", "total_s"]
print("cli: wall %s s, iterations %s," % (sys.argv[2], j.get("iterations")),
      " ".join("%s=%.3f" % (k[:-2], t[k]) for k in keys if k in t))
EOF
    grep -h "^mm_read_csr" "$W/cli.err" | sed 's/^/    /'
    # the same writing x (-o, Matrix Market text): x in hand, as the
    # daemon's download gives it
    s=$(now)
    "$C" solve "$M" --device "$DEVICE" --precond jacobi --tol 1e-8 ${MAXITER:+--maxiter $MAXITER} \
        -o "$W/cli-x.mtx" >/dev/null 2>&1
    e=$(now)
    echo "cli -o x.mtx: wall $(dt "$s" "$e") s" | tee -a "$W/summary.txt"
done

for mode in $DAEMONS; do
    dir=$W/data-$mode
    rm -rf "$dir" "$dir.log"
    # MODE+pre: the same daemon with --parse-while-uploading on
    base=${mode%+pre}
    dopt=()
    [ "$base" != "$mode" ] && dopt=(--parse-while-uploading on)
    case $base in
    plain) launch=() ;;
    mpirun1) launch=(mpirun -np 1 --bind-to none) ;;
    bound) launch=(mpirun -np 1) ;;
    keep) launch=(mpirun -np 1 -x CLSOLVE_BINDING=keep) ;;
    np[0-9]*) launch=(mpirun -np "${base#np}" --bind-to none) ;; # a rank per GPU
    *) echo "unknown daemon mode $mode" >&2; continue ;;
    esac
    CLSOLVE_MM_PROFILE=1 setsid "${launch[@]}" "$D" "${dopt[@]}" --listen 127.0.0.1:$PORT --data-dir "$dir" \
        --device "$DEVICE" --pid-file "$dir.pid" </dev/null >"$dir.log" 2>&1 &
    lpid=$!
    for _ in $(seq 1 300); do curl -sf http://127.0.0.1:$PORT/healthz >/dev/null && break; sleep 0.1; done
    U=http://127.0.0.1:$PORT
    for _ in $(seq 1 100); do [ -s "$dir.pid" ] && break; sleep 0.1; done
    echo "--- daemon $mode: ${launch[*]} clsolved (rank 0 affinity: $(taskset -pc "$(cat "$dir.pid" 2>/dev/null)" 2>/dev/null | sed 's/.*: //'))"
    # the warm-up job has 160,000 rows, so that under npG it is split over
    # the ranks as the measured job is: a rank keeps its warm device state
    # per kind of layout (one part, several). The first measured job still
    # sets up slower than the next (0.16-0.26 s against 0.09-0.12 on H200):
    # the min and the median show both
    "$C" gen poisson2d 400 -o "$W/warm.mtx" >/dev/null
    for f in "$W/warm.mtx" $(for r in $(seq 1 "$REPS"); do echo "$M"; done); do
        s=$(now)
        # the id taken by a bash match: a Python started per submit cost
        # 0.15 s of this machine's 0.19 s "submit" (the pyenv interpreter's
        # start), a cost of this script, not of the daemon or of a client
        # that is already running
        # -T streams the file (--data-binary @FILE reads it whole into
        # curl's memory before sending: 0.2 s of the client's at 147 MB)
        mi=${MAXITER:-}
        [ "$f" = "$W/warm.mtx" ] && mi=50
        resp=$(post "$f" "$mi")
        a=$(now)
        [[ $resp =~ \"id\":\"([^\"]+)\" ]] || { echo "no job id in: $resp" >&2; continue; }
        id=${BASH_REMATCH[1]}
        # a poll is one curl and a bash match (a Python per poll took a
        # visible share of a 2-core machine from the solve); a long poll
        # is answered when the job ends
        while :; do
            if [ "${POLL:-0}" = 1 ]; then st=$(curl -sf "$U/v1/jobs/$id"); else st=$(curl -sf "$U/v1/jobs/$id?wait=30"); fi
            case $st in *'"status":"queued"'* | *'"status":"running"'*) [ "${POLL:-0}" = 1 ] && sleep 0.05 ;; *) break ;; esac
        done
        b=$(now)
        curl -sf "$U/v1/jobs/$id/solution" -o "$W/x.mtx"
        e=$(now)
        [ "$f" = "$W/warm.mtx" ] && continue
        curl -sf -H 'Accept: application/x-npy' "$U/v1/jobs/$id/solution" -o "$W/x.npy"
        e2=$(now)
        curl -sf "$U/v1/jobs/$id" >"$W/job.json"
        $PY - "$W/job.json" "$(dt "$s" "$a")" "$(dt "$a" "$b")" "$(dt "$b" "$e")" "$(dt "$s" "$e")" "$mode" \
            "$(dt "$e" "$e2")" <<'EOF' | tee -a "$W/summary.txt"
import json, sys
j = json.load(open(sys.argv[1])); t = j.get("timings") or {}
keys = ["receive_s", "queue_s", "parse_s", "setup_s", "solve_s", "gather_s", "write_s", "total_s"]
e2e_npy = float(sys.argv[2]) + float(sys.argv[3]) + float(sys.argv[7])
print("daemon %s: %s, submit %s s, wait %s s, download %s s (.npy: %s s), end to end %s s (.npy: %.3f s);" % (
    sys.argv[6], j["status"], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[7], sys.argv[5], e2e_npy),
    " ".join("%s=%.3f" % (k[:-2], t[k]) for k in keys if k in t))
EOF
        # the same system again, x fetched by the solution's long poll
        # (GET .../solution?wait=S): the POST and one request
        s=$(now)
        resp=$(post "$f" "$mi")
        [[ $resp =~ \"id\":\"([^\"]+)\" ]] || { echo "no job id in: $resp" >&2; continue; }
        curl -sf "$U/v1/jobs/${BASH_REMATCH[1]}/solution?format=npy&wait=60" -o "$W/x1.npy"
        e=$(now)
        same=$(cmp -s "$W/x.npy" "$W/x1.npy" && echo "the same x" || echo "x DIFFERS")
        echo "daemon $mode: x in one request after the POST (solution?wait): end to end $(dt "$s" "$e") s, $same" |
            tee -a "$W/summary.txt"
    done
    grep -h "^mm_read_csr" "$dir.log" | tail -n "$REPS" | sed 's/^/    /'
    kill -TERM "$(cat "$dir.pid" 2>/dev/null)" 2>/dev/null
    wait $lpid 2>/dev/null
    rm -rf "$dir"
    PORT=$((PORT + 1))
done
# min / median of each way, and each median over the CLI's (no x written)
$PY - "$W/summary.txt" <<'EOF'
import re, statistics, sys
ways = {}
for line in open(sys.argv[1]):
    m = re.match(r"cli( -o x.mtx)?: wall ([\d.]+)", line)
    if m:
        ways.setdefault("cli" + (m.group(1) or ""), []).append(float(m.group(2)))
    m = re.match(r"daemon (\S+): x in one request .*end to end ([\d.]+) s", line)
    if m:
        ways.setdefault("daemon %s, .npy by ?wait" % m.group(1), []).append(float(m.group(2)))
    m = re.match(r"daemon (\S+): \S+, .*end to end ([\d.]+) s \(.npy: ([\d.]+) s\)", line)
    if m:
        ways.setdefault("daemon %s, x as .mtx" % m.group(1), []).append(float(m.group(2)))
        ways.setdefault("daemon %s, x as .npy" % m.group(1), []).append(float(m.group(3)))
if not ways.get("cli"):
    sys.exit(0)
cli = statistics.median(ways["cli"])
print("--- summary: wall or end to end (s), min / median; the median over the CLI's (no x written)")
for k, v in ways.items():
    med = statistics.median(v)
    print("%-26s n=%-3d %.3f / %.3f  %.2fx" % (k, len(v), min(v), med, med / cli))
EOF
