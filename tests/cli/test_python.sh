#!/usr/bin/env bash
# The Python package (python/): `pip install --no-index ./python` (offline:
# the in-tree build backend needs nothing from an index) into two fresh
# virtual environments of Debian's python3, one that sees its numpy and
# scipy and one with the standard library only, then
# tests/python/test_client.py in each, against a daemon it starts itself.
# Cases that need numpy or scipy are reported as skipped in the second
# environment; the first must have run them (numpy and scipy are installed
# by deploy/install-deps.sh --test).
. "$(dirname "$0")/lib.sh"
need_data matrices
SRC=$(cd "$here/../.." && pwd)
PY3=/usr/bin/python3
[ -x "$PY3" ] || { echo "SKIP: no /usr/bin/python3" >&2; exit 77; }
export CLSOLVED="$(dirname "$CLSOLVE")/clsolved" CLSOLVE_SRC="$SRC"
record_responses   # the daemons the Python tests start record what they answer
for env in full plain; do
    v=$TEST_TMP/venv-$env
    rm -rf "$v"
    opt=""
    [ $env = full ] && opt=--system-site-packages
    # shellcheck disable=SC2086
    if ! $PY3 -m venv $opt "$v" >"$TEST_TMP/venv.log" 2>&1; then
        bad "python3 -m venv: $(tail -3 "$TEST_TMP/venv.log")"
        continue
    fi
    # offline: --no-index fails if anything has to come from an index
    if PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$v/bin/python" -m pip install --no-index \
        --no-cache-dir -q "$SRC/python" >"$TEST_TMP/pip.log" 2>&1; then ok; else
        bad "pip install ./python ($env): $(tail -5 "$TEST_TMP/pip.log")"
        continue
    fi
    (cd "$TEST_TMP" && "$v/bin/python" -c "import clsolve, sys; assert clsolve.__file__.startswith(sys.prefix), clsolve.__file__") \
        && ok || bad "$env: clsolve is not imported from the venv"
    if [ $env = full ]; then
        "$v/bin/python" -c "import numpy, scipy" 2>/dev/null && ok || bad "no numpy/scipy in $PY3 (deploy/install-deps.sh --test installs them)"
    else
        "$v/bin/python" -c "import numpy" 2>/dev/null && bad "the plain venv sees numpy" || ok
    fi
    (cd "$TEST_TMP" && "$v/bin/python" "$SRC/tests/python/test_client.py" -v 2>&1 \
        | sed "s/^/[$env] /" | tee "$TEST_TMP/unittest-$env.log" | grep -E "FAIL|ERROR|skipped|^\[$env\] (Ran|OK)")
    if grep -q "^\[$env\] OK" "$TEST_TMP/unittest-$env.log"; then ok; else
        bad "$env: unittest failed (log: $TEST_TMP/unittest-$env.log)"
        grep -B2 -A25 "^\[$env\] \(FAIL\|ERROR\):" "$TEST_TMP/unittest-$env.log" | head -80 >&2
    fi
    if [ $env = full ] && grep -q "skipped '" "$TEST_TMP/unittest-$env.log"; then
        bad "full: cases were skipped: $(grep "skipped '" "$TEST_TMP/unittest-$env.log" | head -3)"
    fi
done
openapi_validate && ok || bad "responses to the Python client differ from docs/openapi.yaml"
finish
