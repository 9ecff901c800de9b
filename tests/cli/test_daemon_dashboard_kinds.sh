#!/usr/bin/env bash
# The dashboard shows what each job kind produced (issue 30, item 5), in
# headless Chromium with software WebGL (dashboard_kinds_check.py, cdp.py):
# a curvature job (spot), a springs job (the cow, five frames: steps 0, 50,
# 100, 150, 200, the order readdir scrambled), an nbody, a deform and a cg
# job run on the daemon; each job's page is loaded at 800, 1280 and 1600 px
# wide (900 high) and checked: no CG wording on a physics job, its numbers
# equal the API's result, the viewer above the fold and on the selected
# job, the colour legend's range the data's (from the downloaded PLY), the
# files in natural order (the API's list too), nothing wider than the
# window, no clipped table cell, the time drawn as a bar of phases, no page
# errors. Screenshots stay for a person to look at:
# TEST_TMP/dashboard-KIND-WIDTH.png (the build's
# test-tmp/test_daemon_dashboard_kinds/). Skipped (77) only when chromium
# is not installed or ../shared/data/meshes is missing.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data meshes
need_chromium
D=$TEST_TMP/data
rm -rf "$D" "$D".* "$TEST_TMP"/dashboard-*.png "$TEST_TMP/chromium-profile"
daemon_start 1 "$D" || { bad "daemon start"; finish; }
U=$DURL
export CLSOLVE_SERVER=$U
M=$CLSOLVE_DATA/meshes
submit() { submit_job "$U" "$@"; } # submit BODYFILE|- QUERY -> job id
cid=$(submit "$M/spot.obj" "kind=curvature&format=ply") || bad "submit curvature"
sid=$(submit "$M/cow.obj" "kind=springs&steps=200&every=50&format=ply&floor=-4.5") || bad "submit springs"
nid=$(submit - "kind=nbody&plummer=500&steps=20&every=10&format=ply&integrator=leapfrog") || bad "submit nbody"
did=$(submit_deform "$U") || bad "submit deform"
gid=$("$CLSOLVE" submit "$here/../../examples/poisson2d-30.mtx" --tol 1e-10) || bad "submit cg"
for id in $cid $sid $nid $did $gid; do
    st=$($DCLIENT wait "$U" "$id" --timeout 300 | jget "j['status']")
    [ "$st" = succeeded ] && ok || bad "job $id ended $st"
done

$PY "$here/dashboard_kinds_check.py" "$CHROMIUM" "$U" "$TEST_TMP" \
    "curvature=$cid" "springs=$sid" "nbody=$nid" "deform=$did" "cg=$gid" \
    && ok || bad "dashboard kinds checks (screenshots in $TEST_TMP)"
for kind in curvature springs nbody deform cg; do
    for w in 800 1280 1600; do
        f=$TEST_TMP/dashboard-$kind-$w.png
        $PY -c "import sys, struct; d=open(sys.argv[1],'rb').read(); w=struct.unpack('>I', d[16:20])[0]
sys.exit(0 if d[:8]==b'\x89PNG\r\n\x1a\n' and d[12:16]==b'IHDR' and len(d) > 10000 and int(sys.argv[2]) - 20 <= w <= int(sys.argv[2]) else 1)" \
            "$f" "$w" && ok || bad "no screenshot $f"
    done
done
rm -rf "$TEST_TMP/chromium-profile"
daemon_stop 60 && ok || bad "daemon stop"
finish
