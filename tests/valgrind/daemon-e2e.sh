#!/usr/bin/env bash
# daemon-e2e.sh: the daemon's end-to-end test (tests/cli/test_daemon_api.sh:
# uploads raw, gzip and multipart, every answer of the API, bad input, a
# token, listing, deletion, a drain) with every clsolved rank under valgrind
# memcheck, then a check of valgrind's reports: no definitely-lost block
# and no memory error (invalid read or write, use of uninitialised values,
# bad free) in any rank, after tests/valgrind/third-party.supp has removed
# what Open MPI, PoCL and LLVM keep for the life of the process.
#
#   tests/valgrind/daemon-e2e.sh [BUILD_DIR]     (default: build)
#
# ctest runs it as cli.test_daemon_valgrind (tests/cli/test_daemon_valgrind.sh):
# about 90 s on the 2-core machine with empty caches, after the warm-up
# below; docs/reliability.md records its last result. Exits 0 only when the test passed and every
# report is clean.
set -u
cd "$(dirname "$0")/../.."
build=$(cd "${1:-build}" && pwd)
root=$PWD
out=$build/test-tmp/valgrind-daemon
rm -rf "$out"
mkdir -p "$out"
command -v valgrind >/dev/null || { echo "daemon-e2e: valgrind is not installed" >&2; exit 2; }
export CLSOLVE=$build/clsolve
export CLSOLVE_DATA=${CLSOLVE_DATA:-$(cd .. && pwd)/shared/data}
export CLSOLVE_CACHE_DIR=$build/test-cache
export TEST_TMP=$out/test
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export DAEMON_START_TIMEOUT=900 DAEMON_STOP_TIMEOUT=900
export DAEMON_WRAP="valgrind --leak-check=full --show-leak-kinds=definite
    --errors-for-leak-kinds=definite --keep-debuginfo=yes --num-callers=40
    --suppressions=$root/tests/valgrind/third-party.supp --log-file=$out/vg.%p.log"
# the client's waits are long enough for jobs under memcheck
export DCLIENT_TIMEOUT=1800

# PoCL compiles each kernel at its first launch and keeps the result in its
# cache, as clsolve keeps its programs in CLSOLVE_CACHE_DIR. Under memcheck
# that compile (LLVM) ran 15-20x slower: on a fresh 2-core machine the test
# took 566-735 s with empty caches and 37 s with warm ones (2026-12-03), and
# once ran past ctest's 900 s. With the warm-up: 162 s from empty caches,
# 87 s once the suite also ran with clsolve's program cache off
# (tests/CMakeLists.txt; the warm-up 41 s of it). A native run cannot warm them: under valgrind
# the CPU has no AVX-512, so PoCL names another device (pthread-haswell, not
# pthread-skylake-avx512) and both caches miss. The same test therefore runs
# first under valgrind's no-instrumentation tool, which shows the ranks the
# same CPU at a few times native speed and leaves the kernels and programs
# in the caches. memcheck then watches every rank as before, over loaded
# kernels instead of LLVM's compiler. CLSOLVE_VG_WARM=0 skips the warm-up.
if [ "${CLSOLVE_VG_WARM:-1}" != 0 ]; then
    w0=$(date +%s)
    DAEMON_WRAP="valgrind --tool=none -q --log-file=$out/warm.%p.log" TEST_TMP=$out/warm \
        bash tests/cli/test_daemon_api.sh >"$out/warm.out" 2>&1
    echo "daemon-e2e: the warm-up under valgrind --tool=none exited $? after $(($(date +%s) - w0)) s"
fi
t0=$(date +%s)
bash tests/cli/test_daemon_api.sh
trc=$?
t1=$(date +%s)
echo "daemon-e2e: test_daemon_api.sh exited $trc after $((t1 - t0)) s under valgrind"

# one report per process valgrind watched (the ranks of every daemon start)
rc=$trc
n=0
execd=0
for log in "$out"/vg.*.log; do
    [ -e "$log" ] || continue
    grep -q "Command: .*clsolved" "$log" || continue
    # a child a rank forked (PoCL runs its linker that way) writes the
    # header of a log and then execs another program, which valgrind does
    # not follow: no summary, and its parent is a watched rank
    if ! grep -q "HEAP SUMMARY" "$log"; then
        ppid=$(sed -n 's/.*Parent PID: \([0-9]*\).*/\1/p' "$log" | head -1)
        if [ -n "$ppid" ] && [ -e "$out/vg.$ppid.log" ] && [ "$(wc -l <"$log")" -le 12 ]; then
            execd=$((execd + 1))
            continue
        fi
    fi
    n=$((n + 1))
    def=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes in \([0-9,]*\) blocks.*/\1 \2/p' "$log" | tail -1)
    ind=$(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tail -1)
    sup=$(sed -n 's/.*suppressed: \([0-9,]*\) bytes.*/\1/p' "$log" | tail -1)
    errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -1)
    if grep -q "All heap blocks were freed" "$log"; then def="0 0"; fi
    echo "$(basename "$log"): definitely lost ${def:-?} (bytes blocks), indirectly ${ind:-0}, suppressed ${sup:-0}, errors ${errs:-?}"
    if [ "${def%% *}" != 0 ] || [ "${errs:-1}" != 0 ]; then
        rc=1
        echo "daemon-e2e: $log is not clean:" >&2
        grep -A30 "definitely lost in\|Invalid \|uninitialised\|Mismatched free" "$log" | head -80 >&2
    fi
done
[ "$n" -gt 0 ] || { echo "daemon-e2e: no valgrind report of clsolved found" >&2; rc=1; }
echo "daemon-e2e: $n reports of ranks ($execd forked children that exec'd another program skipped); $([ $rc = 0 ] && echo clean || echo NOT clean)"
exit $rc
