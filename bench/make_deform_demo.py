#!/usr/bin/env python3
"""make_deform_demo.py: a two-mode basis and a q sequence for a mesh, to
show the deformer (bench/physics-pictures.sh): mode 1 bends the mesh
(z displaced by the square of its height above its lowest point), mode 2 twists it
about the vertical axis (an angle proportional to the height, linearised).
Writes U.mtx (3n x 2) and q.mtx (2 x frames) as Matrix Market arrays.

    make_deform_demo.py MESH.obj U.mtx q.mtx
"""
import sys

mesh, out_u, out_q = sys.argv[1:4]
v = [tuple(float(x) for x in l.split()[1:4]) for l in open(mesh) if l.startswith("v ")]
n = len(v)
lo = [min(p[i] for p in v) for i in range(3)]
hi = [max(p[i] for p in v) for i in range(3)]
c = [(lo[i] + hi[i]) / 2 for i in range(3)]
h = hi[1] - lo[1]
bend, twist = [], []
for x, y, z in v:
    t = (y - lo[1]) / h  # 0 at the bottom, 1 at the top
    bend += [0.0, 0.0, 0.5 * h * t * t]
    # rotation by angle t about the vertical axis through the centre, linearised: (-dz, 0, dx)
    twist += [-(z - c[2]) * t, 0.0, (x - c[0]) * t]
with open(out_u, "w") as f:
    f.write("%%%%MatrixMarket matrix array real general\n%d 2\n" % (3 * n))
    f.writelines("%.9g\n" % x for x in bend + twist)
frames = [(0, 0), (0.5, 0), (0.5, 0.6), (0, 0.6)]
with open(out_q, "w") as f:
    f.write("%%%%MatrixMarket matrix array real general\n2 %d\n" % len(frames))
    f.writelines("%.9g\n%.9g\n" % q for q in frames)
