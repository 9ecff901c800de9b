#!/usr/bin/env bash
# tests/sanitizers/test_tracer_retry.sh: the sanitized stage's retry
# (tracer_retry.sh) judges failed tests from ctest's LastTest.log. These
# logs, shaped as ctest writes them, hold each kind of failure the retry
# must tell apart: LeakSanitizer's tracer crashing at a test's own exit or
# at the exit of a program a check ran (test_cg_small in CI, 2026-11-30),
# and everything it must not retry: a leak report, an ASan or UBSan error,
# a failed CHECK, a check failing for its own reason beside a tracer crash
# (before it or after it), more failures counted than the crash explains,
# a script that stopped before its count, a timeout, a plain failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks=0
fails=0

crash='Tracer caught signal 11: addr=0x10d0 pc=0x7f91740e80f0 sp=0x7f915d1ead10
==5401==LeakSanitizer has encountered a fatal error.
==5401==HINT: For debugging, try setting environment variable LSAN_OPTIONS=verbosity=1:log_threads=1
==5401==HINT: LeakSanitizer does not work under ptrace (strace, gdb, etc)'

# block NAME BODY VERDICT: one test's block in the log ("Failed" or
# "Passed"), its expected verdict beside it in $tmp/want.
n=0
block() {
    n=$((n + 1))
    printf '%d/99 Testing: %s\n%d/99 Test: %s\nCommand: "bash" "x.sh"\nOutput:\n----------------------------------------------------------\n%s\n<end of output>\nTest time =   1.00 sec\n----------------------------------------------------------\nTest %s.\n\n' \
        "$n" "$1" "$n" "$1" "$2" "$3" >>"$tmp/log"
    [ "$3" = Passed ] || echo "$1 $4" >>"$tmp/want"
}
: >"$tmp/log"
: >"$tmp/want"
block unit.own_exit "test_x: 75 checks, 0 failed
$crash" Failed tracer
block cli.check_same_line "FAIL: chebyshev, mixed: exit 1, residual 5.603338e-09: $crash
test_cg_small.sh: 127 checks, 1 failed" Failed tracer
block cli.check_next_line "FAIL: solve p3d10: exit 1
$crash
x.sh: 12 checks, 1 failed" Failed tracer
block cli.daemon_stop "Tracer caught signal 11: addr=0x0 pc=0x1 sp=0x2
FAIL: daemon did not drain
x.sh: 20 checks, 1 failed" Failed tracer
block cli.passing "x.sh: 3 checks, 0 failed" Passed -
block cli.own_failure "FAIL: residual 1e-3 over 1e-8
FAIL: chebyshev: exit 1: $crash
x.sh: 9 checks, 2 failed" Failed other
block cli.more_counted "FAIL: chebyshev: exit 1: $crash
x.sh: 9 checks, 3 failed" Failed other
block unit.leak "==77==ERROR: LeakSanitizer: detected memory leaks
Direct leak of 8 byte(s) in 1 object(s) allocated from:
$crash" Failed other
block unit.asan "==77==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1
$crash" Failed other
block unit.ubsan "la_format.c:12:3: runtime error: signed integer overflow
$crash" Failed other
block unit.check "test_la.c:40: CHECK failed: a == b
test_la: 10 checks, 1 failed
$crash" Failed other
block cli.timeout "$crash
***Timeout" Failed other
block cli.plain "x.sh: 4 checks, 1 failed
FAIL: x" Failed other
block cli.two_after_one "Tracer caught signal 11: addr=0x0 pc=0x1 sp=0x2
FAIL: daemon did not drain
FAIL: job lost
x.sh: 20 checks, 2 failed" Failed other
block cli.crash_between_two "FAIL: bad line not named
$crash
FAIL: daemon stop
x.sh: 20 checks, 2 failed" Failed other
block cli.aborted "x.sh: line 40: v: unbound variable
$crash" Failed other
block cli.daemon_asan "==9==ERROR: AddressSanitizer: heap-use-after-free on address 0x1
Tracer caught signal 11: addr=0x0 pc=0x1 sp=0x2
FAIL: daemon stop
x.sh: 20 checks, 1 failed" Failed other
block cli.fail_at_end "x.sh: 4 checks, 0 failed
FAIL:" Failed other

got=$(bash "$here/tracer_retry.sh" --classify "$tmp/log")
while read -r name want; do
    checks=$((checks + 1))
    v=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$got")
    if [ "$v" != "$want" ]; then
        fails=$((fails + 1))
        echo "FAIL: $name: verdict '$v', want '$want'" >&2
    fi
done <"$tmp/want"
checks=$((checks + 1))
if [ "$(wc -l <<<"$got")" != "$(wc -l <"$tmp/want")" ]; then
    fails=$((fails + 1))
    echo "FAIL: verdicts for $(wc -l <<<"$got") tests, $(wc -l <"$tmp/want") failed" >&2
fi
echo "test_tracer_retry.sh: $checks checks, $fails failed"
[ "$fails" = 0 ]
