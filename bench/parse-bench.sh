#!/usr/bin/env bash
# parse-bench.sh: Matrix Market parse throughput, clsolve against scipy, on
# the same host, the same file and in the same run (docs/benchmarks.md,
# "Matrix Market parse throughput").
#
#   bench/parse-bench.sh [CLSOLVE]        (default: build/clsolve)
#
# Generates poisson3d N in general storage (N=150: 427.6 MB, 23.49 M
# entries) unless FILE exists, warms the page cache, then takes the best of
# REPS runs of
#   - `clsolve check --threads T --json FILE` for each T in THREADS: the
#     "parse.seconds" it reports is the whole mm_read_csr (header, parallel
#     entry parse, CSR assembly, unmapping); CLSOLVE_MM_PROFILE=1 adds the
#     phase breakdown (stderr) shown under the table;
#   - the same at the largest T with CLSOLVE_MM_NOMAP=1 (the read() path that
#     gzip and pipes take), for comparison;
#   - scipy.io.mmread(FILE) (fast_matrix_market, all threads, returns COO),
#     and mmread(FILE).tocsr() for the same end product as ours.
#
# Environment: N (150), FILE (/tmp/p$N.mtx), THREADS ("1 2 4 8 16"),
# REPS (3), KEEP=1 keeps a generated FILE (default: kept; it is in /tmp).
set -euo pipefail

BIN=${1:-build/clsolve}
N=${N:-150}
FILE=${FILE:-/tmp/p$N.mtx}
THREADS=${THREADS:-"1 2 4 8 16"}
REPS=${REPS:-3}

[ -x "$BIN" ] || { echo "parse-bench: no clsolve binary at $BIN" >&2; exit 1; }
command -v python3 >/dev/null || { echo "parse-bench: python3 needed" >&2; exit 1; }

if [ ! -s "$FILE" ]; then
    echo "generating $FILE (poisson3d $N, general)..." >&2
    "$BIN" gen poisson3d "$N" --general -o "$FILE" >&2
fi
BYTES=$(stat -c %s "$FILE")
cat "$FILE" >/dev/null
cat "$FILE" >/dev/null # warm: twice, so it is all resident

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

host_info() {
    echo "host: $(hostname), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "file: $FILE, $BYTES bytes"
    echo "clsolve: $BIN ($(git -C "$(dirname "$0")/.." rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$(dirname "$0")/.." diff --quiet 2>/dev/null || echo '+dirty'))"
}

# best of REPS: prints "seconds" and leaves that run's profile in $TMP/best.prof
run_clsolve() { # threads, extra env (may be empty)
    local t=$1 envs=$2 best="" s
    for ((r = 0; r < REPS; r++)); do
        env $envs CLSOLVE_MM_PROFILE=1 "$BIN" check --threads "$t" --json "$FILE" \
            >"$TMP/out.json" 2>"$TMP/prof" || { cat "$TMP/prof" >&2; exit 1; }
        s=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["parse"]["seconds"])' \
            "$TMP/out.json")
        if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $s < $best else 1)"; then
            best=$s
            cp "$TMP/prof" "$TMP/best.prof"
        fi
    done
    echo "$best"
}

host_info
declare -a ROWS PROFS
for t in $THREADS; do
    s=$(run_clsolve "$t" "")
    ROWS+=("clsolve mm_read_csr (mmap)|$t|$s")
    PROFS+=("T=$t: $(grep -h '^mm_read_csr' "$TMP/best.prof" | sed 's/^mm_read_csr: [^,]*, //')"$'\n'"      $(grep -h '^csr_from_coo' "$TMP/best.prof" | sed 's/^csr_from_coo: //')")
    TMAX=$t
done
s=$(run_clsolve "$TMAX" "CLSOLVE_MM_NOMAP=1")
ROWS+=("clsolve mm_read_csr (read path)|$TMAX|$s")
PROFS+=("T=$TMAX, read path: $(grep -h '^mm_read_csr' "$TMP/best.prof" | sed 's/^mm_read_csr: [^,]*, //')")

# -W ignore: scipy's deprecation warnings must not land in the parsed line
SCIPY=$(python3 -W ignore - "$FILE" "$REPS" <<'EOF' 2>&1 | tail -1
import sys, time
try:
    import scipy, scipy.io
except Exception as e:
    print("none", "none", "scipy unavailable: %s" % e)
    sys.exit(0)
path, reps = sys.argv[1], int(sys.argv[2])
best_coo = best_csr = None
for _ in range(reps):
    t0 = time.perf_counter()
    m = scipy.io.mmread(path)
    t1 = time.perf_counter()
    a = m.tocsr()
    t2 = time.perf_counter()
    best_coo = t1 - t0 if best_coo is None else min(best_coo, t1 - t0)
    best_csr = t2 - t0 if best_csr is None else min(best_csr, t2 - t0)
    del m, a
print(best_coo, best_csr, "scipy %s" % scipy.__version__)
EOF
)
read -r SC_COO SC_CSR SC_VER <<<"$SCIPY"
if [ "$SC_COO" != none ]; then
    ROWS+=("$SC_VER mmread (COO)|all|$SC_COO")
    ROWS+=("$SC_VER mmread + tocsr|all|$SC_CSR")
else
    echo "$SCIPY" | cut -d' ' -f3- >&2
fi

echo
echo "| reader | threads | seconds | MB/s |"
echo "|---|---|---|---|"
for row in "${ROWS[@]}"; do
    IFS='|' read -r name t s <<<"$row"
    python3 -c "import sys; s=float(sys.argv[3]); print('| %s | %s | %.3f | %.0f |' % (sys.argv[1], sys.argv[2], s, int(sys.argv[4]) / s / 1e6))" \
        "$name" "$t" "$s" "$BYTES"
done
echo
echo "phases of the best clsolve runs (CLSOLVE_MM_PROFILE=1):"
for p in "${PROFS[@]}"; do
    echo "  $p"
done
