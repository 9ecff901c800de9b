#!/usr/bin/env bash
# run-regression.sh [--fuzz SECONDS] [--work DIR] BINDIR [TARGET...]
#
# Replays the regression corpus of each fuzz target (tests/fuzz/corpus/fuzz_TARGET/:
# the seeds and every crasher ever found) through BINDIR/replay_TARGET, the
# plain driver that any compiler builds (gcc in CI). Every input runs once;
# a crash, an abort from one of the target's checks, or a sanitizer report
# (in a CLSOLVE_SANITIZE build) fails the target.
#
# With --fuzz SECONDS (> 0), each target whose libFuzzer binary
# BINDIR/fuzz_TARGET exists (a clang build with -DCLSOLVE_FUZZ=ON) is then
# fuzzed for SECONDS (FUZZ_JOBS targets at once, default the cores), starting from the regression corpus (read only; new
# inputs go to a scratch corpus under --work, default a temporary directory).
# A finding fails the target and leaves the crasher under WORK/TARGET/; copy
# it into tests/fuzz/corpus/fuzz_TARGET/ once fixed.
#
# TARGETs default to: mm_header mm_read mesh params multipart.
# Exit: 0 all passed, 1 a target failed, 2 usage or a replay driver missing.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fuzz_secs=0
work=
while [ $# -gt 0 ]; do
    case $1 in
    --fuzz) fuzz_secs=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) break ;;
    esac
done
if [ $# -lt 1 ]; then
    echo "usage: $0 [--fuzz SECONDS] [--work DIR] BINDIR [TARGET...]" >&2
    exit 2
fi
bindir=$1
shift
targets=${*:-mm_header mm_read mesh params multipart}
if [ -z "$work" ]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/clsolve-fuzz.XXXXXX")
fi
mkdir -p "$work"

# sanitizer settings for instrumented builds (ignored by plain ones)
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

failed=0
for t in $targets; do
    corpus=$here/corpus/fuzz_$t
    replay=$bindir/replay_$t
    if [ ! -x "$replay" ]; then
        echo "run-regression: $replay not found (build the replay_$t target)" >&2
        exit 2
    fi
    if [ ! -d "$corpus" ]; then
        echo "run-regression: $corpus not found" >&2
        exit 2
    fi
    n=$(find "$corpus" -maxdepth 1 -type f | wc -l)
    log=$work/replay_$t.log
    if "$replay" "$corpus" >"$log" 2>&1; then
        echo "replay_$t: $n inputs passed"
    else
        rc=$?
        echo "FAIL: replay_$t exited $rc; the input that failed and its report:" >&2
        grep '^replay: ' "$log" | tail -n 1 >&2
        grep -v '^replay: ' "$log" | tail -n 40 >&2
        failed=1
    fi
done

# The fuzzing proper: FUZZ_JOBS targets at a time (default: the cores), each
# for its full SECONDS on a core of its own, so the stage's wall time is
# SECONDS x targets / cores rather than SECONDS x targets; the reports are
# printed in the targets' order once all have ended.
fuzz_one() { # TARGET: fuzzes it, writes WORK/fuzz_TARGET.rc
    local t=$1 fz=$bindir/fuzz_$1 corpus=$here/corpus/fuzz_$1
    mkdir -p "$work/$t/corpus"
    "$fz" -max_total_time="$fuzz_secs" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$work/$t/" \
        "$work/$t/corpus" "$corpus" >"$work/fuzz_$t.log" 2>&1
    echo $? >"$work/fuzz_$t.rc"
}
if [ "$fuzz_secs" -gt 0 ]; then
    jobs_max=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
    running=0
    for t in $targets; do
        [ -x "$bindir/fuzz_$t" ] || continue
        if [ "$running" -ge "$jobs_max" ]; then
            wait -n
            running=$((running - 1))
        fi
        fuzz_one "$t" &
        running=$((running + 1))
    done
    wait
    for t in $targets; do
        flog=$work/fuzz_$t.log
        if [ ! -x "$bindir/fuzz_$t" ]; then
            echo "fuzz_$t: not built (needs clang and -DCLSOLVE_FUZZ=ON); replay only"
        elif [ "$(cat "$work/fuzz_$t.rc" 2>/dev/null)" = 0 ]; then
            stats=$(grep -E '^#[0-9]+' "$flog" | tail -n 1)
            echo "fuzz_$t: ${fuzz_secs}s, no finding: $stats"
        else
            echo "FAIL: fuzz_$t exited $(cat "$work/fuzz_$t.rc" 2>/dev/null) (log $flog); the report:" >&2
            grep -vE '^#[0-9]+' "$flog" | tail -n 40 >&2
            ls "$work/$t"/crash-* "$work/$t"/leak-* "$work/$t"/oom-* "$work/$t"/timeout-* 2>/dev/null >&2
            failed=1
        fi
    done
fi
exit $failed
