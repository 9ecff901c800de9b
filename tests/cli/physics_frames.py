#!/usr/bin/env python3
"""physics_frames.py: what the physics commands write, read back by the
independent readers of physics_formats.py (issue 16, item 1), and their
--help (item 7). Run by test_physics_frames.sh:

    physics_frames.py --clsolve BIN --data DATA_DIR --tmp DIR

Checks:
  * springs: OBJ keeps texture coordinates with their corner indices; PLY
    and VTK split the UV seams (one point per distinct vertex/texture
    pair) with vertex_id, the texture coordinate of every corner intact;
    a mesh with normals gets unit outward normals in its frames; a .pvd
    collection lists the VTK frames with their times;
  * nbody: point sets in PLY, VTK (vertex cells, velocity and mass), OBJ
    and CSV agree; frames every K steps and the collection;
  * curvature: PLY and VTK carry the values (equal to the CSV's), colours
    from the diverging map (red for the positive end, blue for the
    negative, grey on the boundary), and the input's normals unchanged;
  * deform: the deformed mesh of every q frame is x0 + u (u read from the
    u.mtx written beside it), UVs intact;
  * an unknown extension is a usage error (exit 2) for every command;
  * --help: exit 0, the usage line and every option named.
Standard library only. Prints one line per check; exits 1 on any failure.
"""
import argparse
import math
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import physics_formats as F  # noqa: E402

fails = 0
checks = 0


def check(cond, what):
    global fails, checks
    checks += 1
    if not cond:
        fails += 1
        print("FAIL:", what)
    else:
        print("ok:", what)


def run(args, tmp, want=0):
    p = subprocess.run([CLSOLVE] + args, cwd=tmp, capture_output=True, text=True, timeout=600)
    if p.returncode != want:
        print("command %s exited %d (wanted %d):\n%s%s" % (args, p.returncode, want, p.stdout[-2000:],
                                                           p.stderr[-2000:]))
    return p


def close(a, b, tol):
    return all(abs(x - y) <= tol * (1 + abs(y)) for x, y in zip(a, b)) and len(a) == len(b)


def uv_cube(path):
    """A unit cube with its 8 vertices, 24 texture coordinates (every face
    its own square: seams everywhere) and 6 face normals, quads split into
    triangles."""
    v = [(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)]
    vn = [(-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1)]
    quads = [  # (vertices counter-clockwise from outside, normal)
        ((0, 1, 3, 2), 0), ((4, 6, 7, 5), 1), ((0, 4, 5, 1), 2),
        ((2, 3, 7, 6), 3), ((0, 2, 6, 4), 4), ((1, 5, 7, 3), 5)]
    vt, lines = [], []
    for q, n in quads:
        base = len(vt)
        vt += [(0.1 * n, 0.0), (0.1 * n + 0.1, 0.0), (0.1 * n + 0.1, 0.1), (0.1 * n, 0.1)]
        c = ["%d/%d/%d" % (q[k] + 1, base + k + 1, n + 1) for k in range(4)]
        lines.append("f %s %s %s" % (c[0], c[1], c[2]))
        lines.append("f %s %s %s" % (c[0], c[2], c[3]))
    with open(path, "w") as f:
        f.write("# uv cube\n")
        f.writelines("v %g %g %g\n" % p for p in v)
        f.writelines("vt %g %g\n" % t for t in vt)
        f.writelines("vn %g %g %g\n" % n for n in vn)
        f.write("\n".join(lines) + "\n")
    return {"v": v, "vt": vt, "vn": vn}


def corners_of(obj):
    """[(v, t, n)] of every triangle corner of an OBJ read back."""
    return [c for face in obj["f"] for c in face]


def check_split_points(src, pts, uv, vid, what):
    """Every corner of the source OBJ has a point with its vertex and its
    texture coordinate; points of one vertex share its position."""
    by = {}
    for i, v in enumerate(vid):
        by.setdefault(v, []).append(i)
    ok = all(len(set(pts[i] for i in ids)) == 1 for ids in by.values())
    check(ok, "%s: the points of one vertex share its position" % what)
    found = set()
    for (v, t, _n) in corners_of(src):
        want = src["vt"][t]
        found.add(any(abs(uv[i][0] - want[0]) < 1e-6 and abs(uv[i][1] - want[1]) < 1e-6 for i in by.get(v, [])))
    check(found == {True}, "%s: every corner's texture coordinate survives" % what)


def test_springs(tmp):
    spot = os.path.join(DATA, "meshes", "spot.obj")
    src = F.read_obj(spot)
    run(["springs", spot, "--steps", "0", "-o", "s0.obj"], tmp)
    o = F.read_obj(os.path.join(tmp, "s0.obj"))
    check(len(o["v"]) == len(src["v"]) == 2930 and len(o["vt"]) == len(src["vt"]) == 3225,
          "springs OBJ: 2930 vertices and 3225 texture coordinates (spot)")
    check([(c[0], c[1]) for c in corners_of(o)] == [(c[0], c[1]) for c in corners_of(src)],
          "springs OBJ: every corner keeps its vertex and texture index")
    check(all(close(a, b, 1e-7) for a, b in zip(o["vt"], src["vt"])), "springs OBJ: texture coordinates equal")
    check(all(close(a, b, 2e-7) for a, b in zip(o["v"], src["v"])),
          "springs OBJ, 0 steps: positions equal (to float, the device's precision)")

    run(["springs", spot, "--steps", "30", "--floor", "-1", "-o", "s.ply"], tmp)
    p = F.read_ply(os.path.join(tmp, "s.ply"))
    n = len(p["vertex"]["x"])
    check(n == 3225 and "u" in p["vertex"] and "vertex_id" in p["vertex"],
          "springs PLY: the UV seams split into 3225 points with u, v and vertex_id")
    pts = list(zip(p["vertex"]["x"], p["vertex"]["y"], p["vertex"]["z"]))
    check_split_points(src, pts, list(zip(p["vertex"]["u"], p["vertex"]["v"])), p["vertex"]["vertex_id"],
                       "springs PLY")
    check(len(p["faces"]) == len(src["f"]) and all(len(f) == 3 for f in p["faces"]),
          "springs PLY: %d triangles" % len(src["f"]))
    check(all(p["vertex"]["vertex_id"][i] == c[0] for f, sf in zip(p["faces"], src["f"]) for i, c in zip(f, sf)),
          "springs PLY: faces name the points of their vertices")

    run(["springs", spot, "--steps", "30", "--floor", "-1", "-o", "s.vtk"], tmp)
    v = F.read_vtk(os.path.join(tmp, "s.vtk"))
    check(len(v["points"]) == 3225 and len(v["polygons"]) == len(src["f"]), "springs VTK: 3225 points, the triangles")
    check(close([c for q in v["points"] for c in q], [c for q in pts for c in q], 1e-12),
          "springs VTK = PLY (same run, same positions)")
    check_split_points(src, v["points"], v["point_data"]["TCoords"][1],
                       [int(x) for x in v["point_data"]["vertex_id"][1]], "springs VTK")

    cube = os.path.join(tmp, "cube.obj")
    uv_cube(cube)
    run(["springs", cube, "--steps", "5", "-o", "c.vtk"], tmp)
    c = F.read_vtk(os.path.join(tmp, "c.vtk"))
    ns = c["point_data"].get("Normals", (None, []))[1]
    cen = [sum(p[k] for p in c["points"]) / len(c["points"]) for k in range(3)]
    check(len(ns) == len(c["points"]) and all(abs(math.sqrt(sum(x * x for x in q)) - 1) < 1e-5 for q in ns),
          "springs VTK of a mesh with normals: a unit normal per point")
    check(all(sum((p[k] - cen[k]) * q[k] for k in range(3)) > 0 for p, q in zip(c["points"], ns)),
          "springs VTK: the recomputed normals point outwards")
    check(len(c["points"]) == 24, "springs VTK of the cube: its 24 texture coordinates make 24 points")

    run(["springs", spot, "--steps", "20", "--every", "10", "--floor", "-1", "-o", "seq.pvd"], tmp)
    col = F.read_pvd(os.path.join(tmp, "seq.pvd"))
    check([f for _, f in col] == ["seq_000000.vtk", "seq_000010.vtk", "seq_000020.vtk"] and
          close([t for t, _ in col], [0.0, 0.1, 0.2], 1e-9), "springs .pvd: three frames at t = 0, 0.1, 0.2")
    frames = [F.read_vtk(os.path.join(tmp, f)) for _, f in col]
    check(all(len(fr["points"]) == 3225 for fr in frames), "springs frames: each a full VTK mesh")
    check(frames[0]["points"] != frames[2]["points"], "springs frames: the body moved")
    check(run(["springs", spot, "-o", "x.stl"], tmp, 2).returncode == 2, "springs -o x.stl: exit 2")


def test_nbody(tmp):
    base = ["nbody", "--plummer", "100", "--seed", "7", "--steps", "10", "--integrator", "leapfrog"]
    run(base + ["--every", "5", "-o", "nb.pvd"], tmp)
    col = F.read_pvd(os.path.join(tmp, "nb.pvd"))
    check([f for _, f in col] == ["nb_000000.vtk", "nb_000005.vtk", "nb_000010.vtk"],
          "nbody .pvd: frames at steps 0, 5, 10")
    fr = [F.read_vtk(os.path.join(tmp, f)) for _, f in col]
    check(all(len(x["points"]) == 100 and len(x["vertices"]) == 100 and not x["polygons"] for x in fr),
          "nbody VTK: 100 points, one vertex cell each")
    check(all(abs(m - 0.01) < 1e-12 for m in fr[0]["point_data"]["mass"][1]) and
          fr[0]["point_data"]["velocity"][0] == "VECTORS", "nbody VTK: velocity vectors and masses 1/100")
    outs = {}
    for ext in ("ply", "obj", "csv"):
        run(base + ["-o", "nb." + ext], tmp)
    p = F.read_ply(os.path.join(tmp, "nb.ply"))
    check(p["vertex_props"] == ["x", "y", "z", "velocity_x", "velocity_y", "velocity_z", "mass"] and not p["faces"],
          "nbody PLY: x y z, velocity and mass, no faces")
    o = F.read_obj(os.path.join(tmp, "nb.obj"))
    head, rows = F.read_csv(os.path.join(tmp, "nb.csv"))
    check(head == ["x", "y", "z", "vx", "vy", "vz", "m"] and len(rows) == 100, "nbody CSV: 100 bodies")
    check(all(close(r[:3], [p["vertex"][k][i] for k in "xyz"], 1e-7) and close(r[:3], o["v"][i], 1e-7)
              for i, r in enumerate(rows)), "nbody: the CSV, PLY and OBJ of the same run agree")
    check(all(close(r[:3], fr[2]["points"][i], 1e-7) for i, r in enumerate(rows)),
          "nbody: the last frame equals the final CSV")
    check(run(base + ["-o", "x.xyz"], tmp, 2).returncode == 2, "nbody -o x.xyz: exit 2")


def coolwarm_end(rgb, positive):
    r, g, b = rgb
    return r > b + 60 if positive else b > r + 60


def test_curvature(tmp):
    spot = os.path.join(DATA, "meshes", "spot.obj")
    for ext in ("ply", "csv", "vtk"):
        run(["curvature", spot, "-o", "k." + ext], tmp)
    p = F.read_ply(os.path.join(tmp, "k.ply"))
    head, rows = F.read_csv(os.path.join(tmp, "k.csv"))
    H = [r[head.index("H")] for r in rows]
    K = [r[head.index("K")] for r in rows]
    vid = p["vertex"]["vertex_id"]
    check(all(p["vertex_types"][c] == "uchar" for c in ("red", "green", "blue")), "curvature PLY: uchar colours")
    check(all(abs(p["vertex"]["mean_curvature"][i] - H[v]) <= 1e-6 * (1 + abs(H[v])) and
              abs(p["vertex"]["gaussian_curvature"][i] - K[v]) <= 1e-6 * (1 + abs(K[v])) for i, v in enumerate(vid)),
          "curvature PLY: H and K per point equal the CSV's")
    for name in ("k1", "k2", "d1_x", "d2_z", "boundary", "angle_defect", "K_defect", "nx", "u"):
        check(name in p["vertex"], "curvature PLY: property %s" % name)
    rng = float(p["comments"][0].split("[-")[1].split(",")[0])
    rgb = list(zip(p["vertex"]["red"], p["vertex"]["green"], p["vertex"]["blue"]))
    hi = [i for i, h in enumerate(p["vertex"]["mean_curvature"]) if h > 0.95 * rng]
    lo = [i for i, h in enumerate(p["vertex"]["mean_curvature"]) if h < -0.95 * rng]
    check(hi and lo and all(coolwarm_end(rgb[i], True) for i in hi) and all(coolwarm_end(rgb[i], False) for i in lo),
          "curvature PLY: red at H = +range (%g), blue at -range (%d and %d points)" % (rng, len(hi), len(lo)))
    v = F.read_vtk(os.path.join(tmp, "k.vtk"))
    pd = v["point_data"]
    check(all(k in pd for k in ("rgb", "gaussian_curvature", "mean_curvature", "d1", "TCoords", "Normals")),
          "curvature VTK: colours, values, directions, UVs, normals")
    check(close(pd["mean_curvature"][1], p["vertex"]["mean_curvature"], 1e-12), "curvature VTK = PLY")

    run(["curvature", "--saddle", "9", "-o", "s.ply"], tmp)
    s = F.read_ply(os.path.join(tmp, "s.ply"))
    b = s["vertex"]["boundary"]
    grey = [(s["vertex"]["red"][i], s["vertex"]["green"][i], s["vertex"]["blue"][i]) for i in range(len(b)) if b[i]]
    check(sum(b) == 32 and all(c == (64, 64, 64) for c in grey), "curvature: the saddle's 32 boundary points flagged and grey")

    cube = os.path.join(tmp, "cube2.obj")
    src = uv_cube(cube)
    run(["curvature", cube, "-o", "c.ply"], tmp)
    c = F.read_ply(os.path.join(tmp, "c.ply"))
    obj = F.read_obj(cube)
    ok = True
    for (vi, ti, ni) in corners_of(obj):
        want = src["vn"][ni]
        ids = [i for i, x in enumerate(c["vertex"]["vertex_id"]) if x == vi]
        ok &= any(close((c["vertex"]["nx"][i], c["vertex"]["ny"][i], c["vertex"]["nz"][i]), want, 1e-7) for i in ids)
    check(ok and len(c["vertex"]["x"]) == 24, "curvature PLY: the cube's own normals survive (24 points at its corners)")
    check(run(["curvature", "--saddle", "3", "-o", "k.txt"], tmp, 2).returncode == 2, "curvature -o k.txt: exit 2")


def write_mm_array(path, rows, cols, vals_colmajor):
    with open(path, "w") as f:
        f.write("%%%%MatrixMarket matrix array real general\n%d %d\n" % (rows, cols))
        f.writelines("%.17g\n" % x for x in vals_colmajor)


def read_mm_array(path):
    lines = [l for l in open(path) if not l.startswith("%")]
    r, c = (int(x) for x in lines[0].split())
    vals = [float(x) for x in lines[1:1 + r * c]]
    return r, c, vals


def test_deform(tmp):
    spot = os.path.join(DATA, "meshes", "spot.obj")
    src = F.read_obj(spot)
    n = len(src["v"])
    rnd = random.Random(5)
    write_mm_array(os.path.join(tmp, "U.mtx"), 3 * n, 2, [rnd.uniform(-0.05, 0.05) for _ in range(6 * n)])
    write_mm_array(os.path.join(tmp, "q.mtx"), 2, 3, [0, 0, 1, 0.5, -1, 2])
    run(["deform", "--basis", "U.mtx", "--q", "q.mtx", "--mesh", spot, "-o", "u.mtx", "-o", "d.pvd"], tmp)
    rows, frames, u = read_mm_array(os.path.join(tmp, "u.mtx"))
    col = F.read_pvd(os.path.join(tmp, "d.pvd"))
    check(rows == 3 * n and frames == 3 and [f for _, f in col] == ["d_000000.vtk", "d_000001.vtk", "d_000002.vtk"],
          "deform: u.mtx of 3 frames and three VTK frames in the collection")
    worst = 0.0
    for f, (_, name) in enumerate(col):
        v = F.read_vtk(os.path.join(tmp, name))
        vid = [int(x) for x in v["point_data"]["vertex_id"][1]]
        for i, p in enumerate(v["points"]):
            x0 = src["v"][vid[i]]
            want = [x0[k] + u[f * rows + 3 * vid[i] + k] for k in range(3)]
            worst = max(worst, max(abs(p[k] - want[k]) for k in range(3)))
        if f == 2:
            check_split_points(src, v["points"], v["point_data"]["TCoords"][1], vid, "deform VTK frame 2")
    check(worst < 1e-6, "deform: every frame's points are x0 + u (worst %.2g)" % worst)
    write_mm_array(os.path.join(tmp, "q1.mtx"), 2, 1, [1, -1])
    run(["deform", "--basis", "U.mtx", "--q", "q1.mtx", "--mesh", spot, "-o", "one.obj"], tmp)
    o = F.read_obj(os.path.join(tmp, "one.obj"))
    check(len(o["v"]) == n and len(o["vt"]) == 3225 and len(o["vn"]) == n,
          "deform, one frame: one.obj itself, with UVs and recomputed normals")
    check(run(["deform", "--basis", "U.mtx", "--q", "q1.mtx", "-o", "u.txt"], tmp, 2).returncode == 2,
          "deform -o u.txt: exit 2")


HELP = {
    "springs": ["--grid", "--min-dist", "--max-dist", "--edges", "--bend", "--shape", "--mass", "--total-mass",
                "--scale", "--rotate", "--translate", "--velocity", "--pin", "--pin-box", "--S", "--d", "--dt",
                "--gravity", "--iterations", "--steps", "--floor", "--plane", "--sphere", "--box", "--friction",
                "--launch", "--cpu", "--device", "--output", "--every", "--energy-every", "--json", "--help"],
    "nbody": ["--bodies", "--random", "--plummer", "--disk", "--seed", "--steps", "--dt", "--integrator",
              "--softening", "--softening-thesis", "--damping", "--tile", "--no-check", "--output", "--every",
              "--device", "--json", "--help"],
    "curvature": ["--saddle", "--estimator", "--output", "--color-by", "--color-range", "--check", "--device",
                  "--json", "--help"],
    "deform": ["--basis", "--q", "--rank", "--mesh", "--domains", "--output", "--unfolded", "--check", "--device",
               "--json", "--help"],
}


def test_help(tmp):
    for cmd, opts in HELP.items():
        for flag in ("--help", "-h"):
            p = run([cmd, flag], tmp)
            missing = [o for o in opts if o not in p.stdout]
            check(p.returncode == 0 and p.stdout.startswith("usage: clsolve " + cmd) and not missing,
                  "clsolve %s %s: exit 0, usage and every option (missing: %s)" % (cmd, flag, missing))


def main():
    global CLSOLVE, DATA
    ap = argparse.ArgumentParser()
    ap.add_argument("--clsolve", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--tmp", required=True)
    a = ap.parse_args()
    CLSOLVE, DATA = a.clsolve, a.data
    os.makedirs(a.tmp, exist_ok=True)
    for t in (test_help, test_springs, test_nbody, test_curvature, test_deform):
        d = os.path.join(a.tmp, t.__name__)
        os.makedirs(d, exist_ok=True)
        try:
            t(d)
        except Exception as e:  # a reader refusing a file is a failure, with its reason
            check(False, "%s: %s: %s" % (t.__name__, type(e).__name__, e))
    print("physics_frames.py: %d checks, %d failed" % (checks, fails))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
