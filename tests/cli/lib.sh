# lib.sh: shared by the CLI tests. Sourced; expects CLSOLVE (the binary),
# CLSOLVE_DATA (../shared/data) and TEST_TMP from ctest.
set -u
fails=0
checks=0
mkdir -p "$TEST_TMP"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${PYTHON:-python3}
# the clients (libcurl, urllib) reach the daemons the tests start directly,
# whatever proxy the machine is configured with
export no_proxy=127.0.0.1,localhost,::1 NO_PROXY=127.0.0.1,localhost,::1

ok() { checks=$((checks + 1)); }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $*" >&2; }
# tracer_crash FILE: FILE, a program's stderr, shows LeakSanitizer's own
# tracer crashing at the program's exit (sanitized builds) and no sanitizer
# report of the program's own: a run to repeat, not a result
# (tests/sanitizers/tracer_retry.sh says why)
tracer_crash() {
    grep -qE "Tracer caught signal|LeakSanitizer has encountered a fatal error" "$1" 2>/dev/null &&
        ! grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$1"
}

need_data() {
    if [ ! -d "$CLSOLVE_DATA/$1" ]; then
        echo "SKIP: $CLSOLVE_DATA/$1 not found (set CLSOLVE_DATA_DIR)" >&2
        exit 77
    fi
}

# need_chromium: CHROMIUM set to Debian's chromium, or the test skipped (77)
need_chromium() {
    CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
    if [ -z "$CHROMIUM" ]; then
        echo "SKIP: chromium is not installed (deploy/install-deps.sh --test installs it)" >&2
        exit 77
    fi
}

# expect_exit CODE CMD...: runs CMD, checks its exit code, keeps stdout/stderr
expect_exit() {
    local want=$1
    shift
    "$@" >"$TEST_TMP/out" 2>"$TEST_TMP/err"
    local got=$?
    if [ "$got" -eq "$want" ]; then ok; else
        bad "'$*' exited $got, expected $want"
        sed 's/^/    /' "$TEST_TMP/err" >&2
    fi
    return 0
}

# json_get FILE EXPR: evaluates a Python expression on the parsed JSON `j`
json_get() { $PY -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

# lt A B: true when float A < float B
lt() { $PY -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$1" "$2"; }

# Every response a daemon of this test sends is recorded (net/record.h)
# and checked against docs/openapi.yaml when the test ends (openapi_check.py).
RESPONSES=$TEST_TMP/responses.jsonl
rm -f "$RESPONSES"
record_responses() { export CLSOLVE_RECORD_RESPONSES=$RESPONSES; }
# openapi_validate: 0 when nothing was recorded or everything satisfies the
# document; else prints the violations and returns 1
openapi_validate() {
    [ -s "$RESPONSES" ] || return 0
    local py=/usr/bin/python3
    [ -x $py ] || py=$PY
    if ! $py "$here/openapi_check.py" check "$here/../../docs/openapi.yaml" "$RESPONSES" >"$TEST_TMP/openapi.out" 2>&1; then
        echo "FAIL: responses that docs/openapi.yaml does not describe ($RESPONSES):" >&2
        sed 's/^/    /' "$TEST_TMP/openapi.out" >&2
        return 1
    fi
    tail -1 "$TEST_TMP/openapi.out"
    return 0
}

finish() {
    echo "$(basename "$0"): $checks checks, $fails failed"
    [ "$fails" -eq 0 ]
    exit $?
}
