#!/usr/bin/env bash
# The dashboard in headless Chromium (Debian's chromium, driven through the
# DevTools protocol by dashboard_check.py / cdp.py): job rows with links
# /#/jobs/ID, the phase bar and its ETA on a running job, a plot that draws
# a real history whole and a 300 000-iteration one decimated, a HiDPI
# canvas and no sideways scrolling at 800 px, download, cancel and delete
# from the page, no page errors. Screenshots are kept for a person to look
# at: TEST_TMP/dashboard-1400.png, dashboard-800-dpr2.png,
# dashboard-huge.png (the build's test-tmp/test_daemon_dashboard/).
# Skipped (77) only when chromium is not installed.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data matrices
need_chromium
M=$CLSOLVE_DATA/matrices
D=$TEST_TMP/data
rm -rf "$D" "$D".* "$TEST_TMP"/dashboard*.png "$TEST_TMP/chromium-profile"
"$CLSOLVE" gen poisson2d 1000 -o "$TEST_TMP/p2d.mtx" >/dev/null || { bad "gen"; finish; }
"$CLSOLVE" gen poisson2d 60 -o "$TEST_TMP/hist.mtx" >/dev/null
daemon_start 1 "$D" || { bad "daemon start"; finish; }
U=$DURL
export CLSOLVE_SERVER=$U
done_id=$("$CLSOLVE" submit "$M/LFAT5.mtx" --tol 1e-12)
fail_id=$("$CLSOLVE" submit "$M/west0067.mtx")
hist_id=$("$CLSOLVE" submit "$TEST_TMP/hist.mtx" --tol 1e-13)
for id in $done_id $fail_id $hist_id; do wait_job "$U" "$id" >/dev/null; done
# runs for minutes here: still running while the page is looked at (cancelled from the page)
run_id=$("$CLSOLVE" submit "$TEST_TMP/p2d.mtx" --tol 1e-13 --maxiter 1000000)
$DCLIENT running "$U" "$run_id" --iteration 20 --timeout 120 >/dev/null && ok || bad "job never ran"

$PY "$here/dashboard_check.py" "$CHROMIUM" "$U" "$TEST_TMP" "$run_id" "$done_id" "$fail_id" "$hist_id" \
    && ok || bad "dashboard checks (screenshots in $TEST_TMP)"
for f in dashboard-1400.png dashboard-800-dpr2.png dashboard-huge.png; do
    $PY -c "import sys; d=open(sys.argv[1],'rb').read(); sys.exit(0 if d[:8]==b'\x89PNG\r\n\x1a\n' and len(d) > 10000 else 1)" \
        "$TEST_TMP/$f" && ok || bad "no screenshot $f"
done
$DCLIENT request "$U" POST "/v1/jobs/$run_id/cancel" >/dev/null
rm -rf "$TEST_TMP/chromium-profile"
daemon_stop 60 && ok || bad "daemon stop"
finish
