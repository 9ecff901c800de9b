#!/usr/bin/env python3
"""render_mesh.py: a small offline renderer for the physics outputs (ASCII
PLY and OBJ meshes or point sets), standard library only, for the pictures
in docs/physics.md (made by bench/physics-pictures.sh) and for looking at a
result without a viewer.

    render_mesh.py OUT.png FILE [FILE ...] [--size 900x640] [--yaw DEG]
                   [--pitch DEG] [--color R,G,B]

Several files are drawn side by side with one camera (a frame sequence
keeps its scale). A mesh is drawn with a z-buffer, its vertex colours (or
--color) shaded by a headlight (Lambert, both faces lit); a point set as
small discs. The camera looks at the bounding box of all files from the
given yaw (about y) and pitch, orthographic.
"""
import argparse
import math
import struct
import sys
import zlib


def read_ply(path):
    lines = open(path).read().split("\n")
    elems, k = [], 1
    while True:
        t = lines[k].split()
        k += 1
        if not t:
            continue
        if t[0] == "element":
            elems.append([t[1], int(t[2]), []])
        elif t[0] == "property":
            elems[-1][2].append((t[-1], t[1] == "list", t[1]))
        elif t[0] == "end_header":
            break
    pos, col, tri = [], None, []
    for name, count, props in elems:
        names = [p[0] for p in props]
        for _ in range(count):
            t = lines[k].split()
            k += 1
            if name == "vertex":
                pos.append(tuple(float(t[names.index(c)]) for c in "xyz"))
                if "red" in names:
                    s = 255.0 if props[names.index("red")][2] in ("uchar", "uint8") else 1.0
                    if col is None:
                        col = []
                    col.append(tuple(float(t[names.index(c)]) / s for c in ("red", "green", "blue")))
            elif name == "face":
                n = int(t[0])
                idx = [int(x) for x in t[1:1 + n]]
                tri += [(idx[0], idx[j], idx[j + 1]) for j in range(1, n - 1)]
    return pos, col, tri


def read_obj(path):
    pos, col, tri = [], [], []
    for line in open(path):
        t = line.split()
        if not t:
            continue
        if t[0] == "v":
            pos.append(tuple(float(x) for x in t[1:4]))
            if len(t) >= 7:
                col.append(tuple(float(x) for x in t[4:7]))
        elif t[0] == "f":
            idx = [int(c.split("/")[0]) - 1 for c in t[1:]]
            tri += [(idx[0], idx[j], idx[j + 1]) for j in range(1, len(idx) - 1)]
    return pos, (col if len(col) == len(pos) else None), tri


def load(path):
    return read_ply(path) if path.lower().endswith(".ply") else read_obj(path)


def write_png(path, w, h, rgb):
    raw = b"".join(b"\x00" + bytes(rgb[y * w * 3:(y + 1) * w * 3]) for y in range(h))

    def chunk(tag, data):
        c = struct.pack(">I", len(data)) + tag + data
        return c + struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--size", default="900x640")
    ap.add_argument("--yaw", type=float, default=30.0)
    ap.add_argument("--pitch", type=float, default=20.0)
    ap.add_argument("--color", default="0.55,0.65,0.8")
    a = ap.parse_args()
    W, H = (int(x) for x in a.size.split("x"))
    base = tuple(float(x) for x in a.color.split(","))
    models = [load(f) for f in a.files]
    cy, sy = math.cos(math.radians(a.yaw)), math.sin(math.radians(a.yaw))
    cp, sp = math.cos(math.radians(a.pitch)), math.sin(math.radians(a.pitch))

    def view(p):  # rotate about y by yaw, then about x by pitch: (screen x, screen y, depth)
        x, y, z = p
        x, z = cy * x + sy * z, -sy * x + cy * z
        y, z = cp * y - sp * z, sp * y + cp * z
        return x, y, z

    views = [[view(p) for p in m[0]] for m in models]
    lo = [min(v[i] for vs in views for v in vs) for i in range(3)]
    hi = [max(v[i] for vs in views for v in vs) for i in range(3)]
    n = len(models)
    pw = W // n
    scale = 0.9 * min(pw / max(hi[0] - lo[0], 1e-12), H / max(hi[1] - lo[1], 1e-12))
    img = bytearray([245, 247, 250] * (W * H))
    zbuf = [-1e300] * (W * H)
    for k, ((pos, col, tri), vs) in enumerate(zip(models, views)):
        ox = k * pw + pw / 2 - scale * (lo[0] + hi[0]) / 2
        oy = H / 2 + scale * (lo[1] + hi[1]) / 2
        sx = [ox + scale * v[0] for v in vs]
        syy = [oy - scale * v[1] for v in vs]
        zz = [v[2] for v in vs]
        colors = col or [base] * len(pos)
        if not tri:  # points: small discs, nearest on top
            r = max(1, int(round(3 - math.log10(max(len(pos), 10)) / 2)))
            for i in sorted(range(len(pos)), key=lambda i: zz[i]):
                c = [int(255 * min(1.0, max(0.0, ch))) for ch in colors[i]]
                for y in range(int(syy[i]) - r, int(syy[i]) + r + 1):
                    for x in range(int(sx[i]) - r, int(sx[i]) + r + 1):
                        if 0 <= x < W and 0 <= y < H and (x - sx[i]) ** 2 + (y - syy[i]) ** 2 <= r * r + 0.5:
                            img[3 * (y * W + x):3 * (y * W + x) + 3] = bytes(c)
            continue
        # vertex normals (area weighted) in view space, for Gouraud shading
        nrm = [[0.0, 0.0, 0.0] for _ in pos]
        for t in tri:
            p0, p1, p2 = (vs[i] for i in t)
            e1 = [p1[j] - p0[j] for j in range(3)]
            e2 = [p2[j] - p0[j] for j in range(3)]
            cr = (e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0])
            for i in t:
                for j in range(3):
                    nrm[i][j] += cr[j]
        shade = []
        for i, nv in enumerate(nrm):
            l = math.sqrt(sum(x * x for x in nv)) or 1.0
            s = 0.35 + 0.65 * abs(nv[2] / l)
            shade.append(tuple(min(1.0, max(0.0, ch)) * s * 255 for ch in colors[i]))
        for t in tri:
            a_, b_, c_ = t
            x0, y0, x1, y1, x2, y2 = sx[a_], syy[a_], sx[b_], syy[b_], sx[c_], syy[c_]
            den = (y1 - y2) * (x0 - x2) + (x2 - x1) * (y0 - y2)
            if abs(den) < 1e-12:
                continue
            xa, xb = max(0, int(min(x0, x1, x2))), min(W - 1, int(max(x0, x1, x2)) + 1)
            ya, yb = max(0, int(min(y0, y1, y2))), min(H - 1, int(max(y0, y1, y2)) + 1)
            za, zb, zc = zz[a_], zz[b_], zz[c_]
            ca, cb, cc = shade[a_], shade[b_], shade[c_]
            for y in range(ya, yb + 1):
                py = y + 0.5
                for x in range(xa, xb + 1):
                    px = x + 0.5
                    w0 = ((y1 - y2) * (px - x2) + (x2 - x1) * (py - y2)) / den
                    w1 = ((y2 - y0) * (px - x2) + (x0 - x2) * (py - y2)) / den
                    w2 = 1 - w0 - w1
                    if w0 < -1e-9 or w1 < -1e-9 or w2 < -1e-9:
                        continue
                    z = w0 * za + w1 * zb + w2 * zc
                    o = y * W + x
                    if z <= zbuf[o]:
                        continue
                    zbuf[o] = z
                    img[3 * o] = int(w0 * ca[0] + w1 * cb[0] + w2 * cc[0])
                    img[3 * o + 1] = int(w0 * ca[1] + w1 * cb[1] + w2 * cc[1])
                    img[3 * o + 2] = int(w0 * ca[2] + w1 * cb[2] + w2 * cc[2])
    write_png(a.out, W, H, img)
    print("%s: %d x %d, %d file(s)" % (a.out, W, H, n), file=sys.stderr)


if __name__ == "__main__":
    main()
