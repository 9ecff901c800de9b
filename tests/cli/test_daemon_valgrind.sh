#!/usr/bin/env bash
# The daemon's end-to-end test with every rank under valgrind memcheck
# (tests/valgrind/daemon-e2e.sh): the test passes and valgrind finds no
# definitely-lost block and no memory error in any rank. Skipped in the
# sanitizer build (valgrind cannot run an ASan binary) and where valgrind
# is missing.
. "$(dirname "$0")/lib.sh"
if [ -n "${ASAN_OPTIONS:-}" ]; then echo "SKIP: sanitizer build" >&2; exit 77; fi
command -v valgrind >/dev/null || { echo "SKIP: no valgrind" >&2; exit 77; }
need_data matrices
build=$(dirname "$CLSOLVE")
CLSOLVE_DATA=$CLSOLVE_DATA bash "$here/../valgrind/daemon-e2e.sh" "$build"
