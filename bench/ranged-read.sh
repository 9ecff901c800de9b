#!/usr/bin/env bash
# bench/ranged-read.sh: the read of a Matrix Market file under mpirun
# (issue 23, item 2), rank 0's read against the ranged read, as ranks are
# added, in one command:
#   poisson3d N (default 200: 8 M rows, 589 MB) written as .mtx and read once
#   (the page cache); then REPS passes, each running for every NP in NPS
#   (default "1 2 4") and every MODE in MODES (default "rank0 ranged";
#   "streamed" is ranged with CLSOLVE_READ_STREAM=1: every rank but 0 gets
#   its span's bytes from rank 0, as on hosts without the file), in
#   turn: `mpirun -np NP clsolve solve FILE --read MODE --maxiter MAXITER
#   --json` (MAXITER default 1: the host path; the ranks share the host's
#   devices). Each rank runs under a small wrapper that prints its peak
#   resident memory. Per (NP, MODE): min / median of the input phase
#   (`times.parse_s`: read, layout, rows to their ranks, checks), of the
#   whole set-up and of the wall clock, and the largest rank's peak memory
#   (less that of a run on an 8^3 grid: the OpenCL runtime) against the CSR
#   bytes of one rank's rows.
#   BUILD=/tmp/b1 N=200 REPS=3 DEVICE=gpu bash bench/ranged-read.sh
# Builds nothing; needs mpirun and python3 (standard library only).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
C=$(cd "$B" && pwd)/clsolve
N=${N:-200}
REPS=${REPS:-3}
NPS=${NPS:-1 2 4}
MODES=${MODES:-rank0 ranged}
DEVICE=${DEVICE:-auto}
MAXITER=${MAXITER:-1}
PY=${PY:-python3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=${WORK:-/tmp/ranged-read}
mkdir -p "$W"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null)"
M=$W/p$N.mtx
[ -s "$M" ] || "$C" gen poisson3d "$N" -o "$M" >/dev/null
cat "$M" >/dev/null
echo "file: $M $(stat -c %s "$M") bytes"
cat >"$W/rss.py" <<'EOF'
import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:])
print("peak_rss_kb %d" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(rc)
EOF
: >"$W/runs.txt"
# the memory a rank holds for a system of no size (OpenCL runtime, programs):
# subtracted from each run's peak to give what the read itself holds
for np in $NPS; do
    mpirun --oversubscribe -np "$np" "$PY" "$W/rss.py" "$C" solve gen:poisson3d:8 --device "$DEVICE" \
        --maxiter 1 --json >/dev/null 2>"$W/base.err"
    echo "{\"np\": $np, \"baseline_kb\": $(grep peak_rss_kb "$W/base.err" | awk '{print $2}' | sort -n | tail -1)}" >>"$W/runs.txt"
done
for rep in $(seq 1 "$REPS"); do
    for np in $NPS; do
        for mode in $MODES; do
            read=$mode
            stream=0
            [ "$mode" = streamed ] && read=ranged stream=1
            s=$(date +%s.%N)
            CLSOLVE_READ_STREAM=$stream mpirun --oversubscribe -x CLSOLVE_READ_STREAM -np "$np" \
                "$PY" "$W/rss.py" "$C" solve "$M" --read "$read" \
                --device "$DEVICE" --maxiter "$MAXITER" --json >"$W/run.json" 2>"$W/run.err"
            rc=$?
            e=$(date +%s.%N)
            $PY - "$W/run.json" "$W/run.err" "$np" "$mode" "$s" "$e" "$rc" >>"$W/runs.txt" <<'EOF'
import json, sys
js, errf, np, mode, s, e, rc = sys.argv[1:]
try:
    t = json.load(open(js))["times"]
except Exception:
    t = {}
rss = [int(l.split()[1]) for l in open(errf) if l.startswith("peak_rss_kb")]
print(json.dumps({"np": int(np), "mode": mode, "rc": int(rc), "wall": float(e) - float(s),
                  "parse": t.get("parse_s"), "setup": t.get("setup_s"),
                  "rss_kb": max(rss) if rss else None}))
EOF
            tail -1 "$W/runs.txt"
        done
    done
done
$PY - "$W/runs.txt" "$N" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
base = {r["np"]: r["baseline_kb"] * 1024 for r in runs if "baseline_kb" in r}
runs = [r for r in runs if "mode" in r]
n = int(sys.argv[2]) ** 3
nnz = 7 * n - 6 * int(sys.argv[2]) ** 2
csr = 12 * nnz + 8 * (n + 1)
def mm(v):
    v = [x for x in v if x is not None]
    return "%.3f / %.3f" % (min(v), statistics.median(v)) if v else "-"
print("| ranks | read | input phase (s), min / median | set-up (s) | wall (s) | peak memory of a rank over a tiny run's / its CSR |")
print("|---|---|---|---|---|---|")
for key in sorted({(r["np"], r["mode"]) for r in runs}):
    rs = [r for r in runs if (r["np"], r["mode"]) == key and r["rc"] in (0, 4)]
    bad = [r for r in runs if (r["np"], r["mode"]) == key and r["rc"] not in (0, 4)]
    rss = max((r["rss_kb"] or 0) for r in rs) * 1024 - base.get(key[0], 0) if rs else 0
    share = csr / key[0]
    print("| %d | %s | %s | %s | %s | %.2f GB / %.2f GB = %.1fx |%s" % (
        key[0], key[1], mm([r["parse"] for r in rs]), mm([r["setup"] for r in rs]),
        mm([r["wall"] for r in rs]), rss / 1e9, share / 1e9, rss / share if share else 0,
        " %d failed" % len(bad) if bad else ""))
EOF
