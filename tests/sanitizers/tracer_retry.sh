#!/usr/bin/env bash
# tests/sanitizers/tracer_retry.sh BUILD_DIR [JOBS]: after the sanitized
# stage's ctest failed, reruns once the tests whose only failure was
# LeakSanitizer's own tracer crashing at exit, and fails for anything else.
#
# Why: LeakSanitizer stops the process's threads with a tracer thread at
# exit. In the fresh-clone CI that tracer has crashed ("Tracer caught signal
# 11", "LeakSanitizer has encountered a fatal error") after every check of a
# test had passed: once in test_amg_dsetup, once in test_scaling; neither
# came back in hundreds of reruns, loaded or not, cold caches or warm. The
# crash is no result of the test, and no leak check took place. A rerun
# that must pass in full (its checks and a completed leak check) is a real
# result; turning leak detection off per test was not (it hid that test's
# leaks for good).
#
# A failed test is retried only when its output (ctest's LastTest.log) holds
# the tracer's fatal error and nothing else went wrong: no leak report, no
# AddressSanitizer or UBSan error, no timeout, no failed CHECK of a C test,
# and every failed check of a script ("FAIL: ...", tests/cli/lib.sh) names
# the tracer's crash on its line, the line before or the next (the check
# ran a program that did its work and then died of the crash at exit; CI
# saw this in test_cg_small; daemon_stop says a daemon's crash right before
# the FAIL line; a crash line explains one FAIL line), and a check count
# ("N checks, K failed", which the test must have printed: it ran to its
# end) of no more failures than that. Anything else fails the stage at
# once, as before.
# `tracer_retry.sh --classify LOG` prints the verdict per failed test
# (tests/sanitizers/test_tracer_retry.sh checks it).
set -euo pipefail

# Per failed test of ctest log $1: "name tracer" when its only failure is
# the tracer's crash, else "name other". The blocks of LastTest.log run from
# "N/M Test: name" to "Test Passed." / "Test Failed.".
tracer_classify() {
    awk '
    function sig(l) { return l ~ /Tracer caught signal|LeakSanitizer has encountered a fatal error/ }
    /^[0-9]+\/[0-9]+ Test: / { name = $3; tracer = 0; bad = 0; said = -1; explained = 0; pending = 0; prev = 0; used = 0; next }
    pending { pending = 0; used = 0; if (sig($0) && $0 !~ /^FAIL/) { explained++; used = 1 } else bad = 1 }
    sig($0) { tracer = 1 }
    /^FAIL/ { if (sig($0) || prev) explained++; else pending = 1 }
    { prev = !used && sig($0) && $0 !~ /^FAIL/; used = 0 }
    /LeakSanitizer: detected memory leaks|ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|CHECK failed|Timeout/ { bad = 1 }
    / checks, [0-9]+ failed/ { s = $0; sub(/.* checks, /, "", s); sub(/ failed.*/, "", s); said = s + 0 }
    /^Test Failed/ { print name, (tracer && !bad && !pending && said >= 0 && said <= explained) ? "tracer" : "other" }
    ' "$1"
}
if [ "${1:-}" = --classify ]; then
    tracer_classify "$2"
    exit 0
fi

build=$1
jobs=${2:-1}
log=$build/Testing/Temporary/LastTest.log
failed=$build/Testing/Temporary/LastTestsFailed.log
[ -f "$log" ] && [ -f "$failed" ] || { echo "tracer_retry: no ctest logs in $build" >&2; exit 1; }
verdicts=$(tracer_classify "$log")

retry=()
while IFS=: read -r _ name; do
    [ -n "$name" ] || continue
    v=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$verdicts" | tail -1)
    if [ "$v" != tracer ]; then
        echo "tracer_retry: $name failed for a reason of its own; no retry" >&2
        exit 1
    fi
    retry+=("$name")
done <"$failed"
[ ${#retry[@]} -gt 0 ] || { echo "tracer_retry: no failed tests recorded" >&2; exit 1; }

regex=$(printf '^%s$|' "${retry[@]}" | sed 's/\./\\./g; s/|$//')
echo "tracer_retry: LeakSanitizer's tracer crashed at the exit of: ${retry[*]}; rerunning them once"
ctest --test-dir "$build" --output-on-failure -j "$jobs" -R "$regex"
