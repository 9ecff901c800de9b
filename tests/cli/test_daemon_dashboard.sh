#!/usr/bin/env bash
# The dashboard in headless Chromium (Debian's chromium): the page is loaded
# while a job runs; the DOM it builds must list the job (a row with its id
# and status running) and the device table, and the convergence plot must
# have drawn (app.js sets data-drawn="1" and data-points on the canvas after
# drawing). A screenshot is kept as the test's artifact:
# TEST_TMP/dashboard.png (the build's test-tmp/test_daemon_dashboard/).
# Skipped (77) only when chromium is not installed.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}
if [ -z "$CHROMIUM" ]; then
    echo "SKIP: chromium is not installed (deploy/install-deps.sh installs it)" >&2
    exit 77
fi
D=$TEST_TMP/data
rm -rf "$D" "$D".* "$TEST_TMP/dashboard.png"
A=$TEST_TMP/p2d.mtx
"$CLSOLVE" gen poisson2d 1000 -o "$A" >/dev/null || { bad "gen"; finish; }  # runs for tens of seconds: still running while the browser loads the page (it is cancelled at the end)
daemon_start 1 "$D" || { bad "daemon start"; finish; }
U=$DURL
done_id=$($DCLIENT submit "$U" "$CLSOLVE_DATA/matrices/LFAT5.mtx" 2>/dev/null || true)
id=$($DCLIENT submit "$U" "$A" --param tol=1e-12 --param maxiter=100000) || { bad "submit"; finish; }
$DCLIENT running "$U" "$id" --iteration 20 --timeout 120 >/dev/null && ok || bad "job never ran"

chrome() {
    local prof
    prof=$(mktemp -d "$TEST_TMP/chromium.XXXXXX")
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$prof" --window-size=1200,900 --virtual-time-budget=5000 "$@" \
        2>>"$TEST_TMP/chromium.log"
    local rc=$?
    rm -rf "$prof"
    return $rc
}
chrome --dump-dom "$U/" >"$TEST_TMP/dom.html" && ok || bad "chromium --dump-dom failed: $(tail -5 "$TEST_TMP/chromium.log")"
chrome --screenshot="$TEST_TMP/dashboard.png" "$U/" >/dev/null && ok || bad "chromium --screenshot failed"
st=$($DCLIENT request "$U" GET "/v1/jobs/$id" | tail -n +2 | jget "j['status']")

$PY - "$TEST_TMP/dom.html" "$id" <<'PYEOF'
import re, sys
dom = open(sys.argv[1]).read()
jid = sys.argv[2]
fails = []
row = re.search(r'<tr[^>]*data-job-id="%s"[^>]*>' % jid, dom)
if not row:
    fails.append("the running job %s is not in the job table" % jid)
elif 'data-status="running"' not in row.group(0):
    fails.append("the job's row does not say running: " + row.group(0))
canvas = re.search(r'<canvas[^>]*id="plot"[^>]*>', dom)
if not canvas:
    fails.append("no canvas")
else:
    c = canvas.group(0)
    if 'data-drawn="1"' not in c:
        fails.append("the plot did not draw: " + c)
    m = re.search(r'data-points="(\d+)"', c)
    if not m or int(m.group(1)) < 2:
        fails.append("the plot has too few points: " + c)
    if 'data-job="%s"' % jid not in c:
        fails.append("the plot is not of the running job: " + c)
    print("canvas:", c)
if not re.search(r'data-devices="[1-9]', dom):
    fails.append("no device rows")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
PYEOF
[ $? = 0 ] && ok || bad "dashboard DOM checks"
$PY -c "import sys; d=open(sys.argv[1],'rb').read(); sys.exit(0 if d[:8]==b'\x89PNG\r\n\x1a\n' and len(d) > 10000 else 1)" \
    "$TEST_TMP/dashboard.png" && ok || bad "no screenshot"
echo "job was $st while the page loaded; screenshot: $TEST_TMP/dashboard.png"
[ -n "$done_id" ] || true
$DCLIENT request "$U" POST "/v1/jobs/$id/cancel" >/dev/null
daemon_stop 60 && ok || bad "daemon stop"
finish
