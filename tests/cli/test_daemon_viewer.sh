#!/usr/bin/env bash
# The dashboard's physics viewer (net/dashboard/viewer.js) in headless
# Chromium with software WebGL (SwiftShader): a curvature job (spot, PLY
# with colours), a springs job (the cow, four frames) and an nbody job (a
# Plummer sphere, three frames) run on the daemon; the page opened at
# #view=ID must draw each: the canvas reports data-drawn="1", its kind, the
# frame count, the vertex count of the file it drew, and data-nonblank,
# the pixels of a 64 x 64 sample of the WebGL buffer that are not the
# background. Screenshots of #view=ID&full (the viewer alone) are decoded
# here (a small PNG reader, standard library only) and must show the body:
# enough pixels away from the background, and for curvature both ends of
# the diverging map (red and blue). The screenshots stay as artifacts in
# TEST_TMP (viewer_*.png). A deform job's page says why there is no mesh.
# Skipped (77) only when chromium is not installed.
. "$(dirname "$0")/lib.sh"
. "$here/daemon_lib.sh"
need_data meshes
need_chromium
D=$TEST_TMP/data
rm -rf "$D" "$D".* "$TEST_TMP"/viewer_*
daemon_start 1 "$D" || { bad "daemon start"; finish; }
U=$DURL
M=$CLSOLVE_DATA/meshes
submit() { submit_job "$U" "$@"; } # submit BODYFILE|- QUERY -> job id
cid=$(submit "$M/spot.obj" "kind=curvature&format=ply") || bad "submit curvature"
sid=$(submit "$M/cow.obj" "kind=springs&steps=300&every=100&format=ply&floor=-4.5") || bad "submit springs"
nid=$(submit - "kind=nbody&plummer=2000&steps=20&every=10&format=ply&integrator=leapfrog") || bad "submit nbody"
# a deform job: basis and q (an option) as multipart parts
did=$(submit_deform "$U") || bad "submit deform"
for id in $cid $sid $nid $did; do
    st=$($DCLIENT wait "$U" "$id" --timeout 300 | jget "j['status']")
    [ "$st" = succeeded ] && ok || bad "job $id ended $st"
done

chrome() {
    local prof
    prof=$(mktemp -d "$TEST_TMP/chromium.XXXXXX")
    timeout 120 "$CHROMIUM" --headless --no-sandbox --use-gl=swiftshader --enable-unsafe-swiftshader \
        --disable-quic --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync --user-data-dir="$prof" --window-size=1000,900 --virtual-time-budget=10000 "$@" \
        2>>"$TEST_TMP/chromium.log"
    local rc=$?
    rm -rf "$prof"
    return $rc
}
for pair in "curvature:$cid" "springs:$sid" "nbody:$nid" "deform:$did"; do
    kind=${pair%%:*} id=${pair#*:}
    chrome --dump-dom "$U/#view=$id" >"$TEST_TMP/viewer_$kind.html" || bad "chromium --dump-dom ($kind)"
    chrome --screenshot="$TEST_TMP/viewer_$kind.png" "$U/#view=$id&full" >/dev/null ||
        bad "chromium --screenshot ($kind)"
done

$PY - "$TEST_TMP" "$cid" "$sid" "$nid" "$did" <<'PYEOF'
import re, struct, sys, zlib
tmp, ids = sys.argv[1], dict(zip(("curvature", "springs", "nbody", "deform"), sys.argv[2:]))
fails = []

def png(path):
    """8-bit RGB(A) PNG, non-interlaced -> (w, h, rows of (r, g, b))."""
    d = open(path, "rb").read()
    if d[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(d):
        n, typ = struct.unpack(">I4s", d[pos:pos + 8])
        body = d[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype, _, _, lace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or lace:
                raise ValueError("PNG kind %d/%d" % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    raw, rows, prev, stride = zlib.decompress(idat), [], bytearray(w * bpp), w * bpp
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return w, h, rows

want = {"curvature": ("1", 3225), "springs": ("4", 2903), "nbody": ("3", 2000)}
for kind, (frames, verts) in want.items():
    dom = open("%s/viewer_%s.html" % (tmp, kind)).read()
    m = re.search(r'<canvas[^>]*id="viewer"[^>]*>', dom)
    if not m:
        fails.append("%s: no viewer canvas" % kind)
        continue
    c = m.group(0)
    attr = dict(re.findall(r'data-([a-z]+)="([^"]*)"', c))
    print(kind, attr)
    if attr.get("drawn") != "1" or attr.get("job") != ids[kind] or attr.get("kind") != kind:
        fails.append("%s: not drawn: %s" % (kind, c))
    if attr.get("frames") != frames:
        fails.append("%s: %s frames, expected %s" % (kind, attr.get("frames"), frames))
    if attr.get("vertices") != str(verts) and not (kind == "curvature" and attr.get("vertices") == "3225"):
        fails.append("%s: %s vertices drawn, expected %d" % (kind, attr.get("vertices"), verts))
    if int(attr.get("nonblank", 0)) < (40 if kind == "nbody" else 300):
        fails.append("%s: only %s of 4096 sampled pixels drawn" % (kind, attr.get("nonblank")))
    w, h, rows = png("%s/viewer_%s.png" % (tmp, kind))
    bg = rows[h // 2][4]
    px = [p for r in rows[::4] for p in r[::4]]
    body = [p for p in px if sum(abs(p[i] - bg[i]) for i in range(3)) > 40]
    red = [p for p in body if p[0] > p[2] + 60]
    blue = [p for p in body if p[2] > p[0] + 40]
    print("%s screenshot %dx%d: %d of %d sampled pixels off the background (%s), %d red, %d blue" %
          (kind, w, h, len(body), len(px), bg, len(red), len(blue)))
    if len(body) < (30 if kind == "nbody" else 1500):
        fails.append("%s: the screenshot is nearly blank" % kind)
    if kind == "curvature" and (len(red) < 10 or len(blue) < 10):
        fails.append("curvature: the screenshot lacks one end of the colour map")
dom = open("%s/viewer_deform.html" % tmp).read()
if "a deform job writes u.mtx only" not in dom:
    fails.append("deform: the viewer does not say why there is no mesh")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
PYEOF
[ $? = 0 ] && ok || bad "viewer checks (screenshots: $TEST_TMP/viewer_*.png)"
daemon_stop 60 && ok || bad "daemon stop"
finish
