#!/usr/bin/env bash
# nbody's energy drift, measured every step on the device, against an
# independent integrator in numpy (tests/cli/nbody_drift.py: the same
# scheme and initial conditions, in double): the largest drift, where it
# happens mid-run, and the end drift must match (issue 26, item 6).
# numpy comes with Debian's python3 (deploy/install-deps.sh --test installs it).
. "$(dirname "$0")/lib.sh"
PY3=/usr/bin/python3
[ -x "$PY3" ] || { echo "SKIP: no /usr/bin/python3" >&2; exit 77; }
if ! $PY3 -c "import numpy" 2>/dev/null; then
    bad "no numpy in $PY3 (deploy/install-deps.sh --test installs it)"
    finish
fi
rm -rf "$TEST_TMP/drift"
$PY3 "$here/nbody_drift.py" --clsolve "$CLSOLVE" --tmp "$TEST_TMP/drift"
[ $? -eq 0 ] && ok || bad "nbody_drift.py"
finish
