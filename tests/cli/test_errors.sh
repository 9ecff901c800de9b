#!/usr/bin/env bash
# The bad-input catalogue, docs/errors.md, as a test: every row's input is
# fed to the real clsolve and to one real daemon (mpirun -np 1, a bearer
# token, a small upload limit and queue), and the exit code, the HTTP status
# or the failed job's error, and the message must be what the row says.
# errors_catalogue.py holds one case per catalogue ID and fails when an ID
# has no case, a case has no row, or a row names another test that does not
# mention it. The last phase runs a long job, fills the queue and drains the
# daemon with SIGTERM, so the daemon is stopped here.
# Debugging: ERRORS_ONLY=ID,ID runs those rows only; ERRORS_ARGS="--timing"
# (or "--print-types") is passed to errors_catalogue.py.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data matrices
D=$TEST_TMP/data
rm -rf "$D" "$D".* "$TEST_TMP"/cases
mkdir -p "$TEST_TMP/cases"
printf 'errors-catalogue-token-%s\n' "$$" >"$TEST_TMP/token"
MAX_UPLOAD=$((20 * 1024 * 1024))
MAX_QUEUED=40
# --lanes 1: one job at a time, so the last phase's queue fills behind a
# long job
daemon_start 1 "$D" --lanes 1 --token-file "$TEST_TMP/token" --max-upload $MAX_UPLOAD \
    --max-queued $MAX_QUEUED || { bad "daemon start"; finish; }

$PY "$here/errors_catalogue.py" --doc "$here/../../docs/errors.md" --tests-dir "$here" \
    --clsolve "$CLSOLVE" --url "$DURL" --token-file "$TEST_TMP/token" --rank0-pid "$DRANK0" \
    --max-upload $MAX_UPLOAD --max-queued $MAX_QUEUED --data "$CLSOLVE_DATA" \
    --tmp "$TEST_TMP/cases" ${ERRORS_ONLY:+--only "$ERRORS_ONLY"} ${ERRORS_ARGS:-}
rc=$?
[ $rc -eq 0 ] && ok || bad "errors_catalogue.py: exit $rc"

# the final phase sent SIGTERM and cancelled the job it was running: the
# daemon drains and exits 0 (without --only, or when it ran)
if [ -z "${ERRORS_ONLY:-}" ]; then
    daemon_stop 120
    src=$?
    [ $src -eq 0 ] && ok || { bad "daemon exit $src"; tail -20 "$D.log" >&2; }
fi
finish
