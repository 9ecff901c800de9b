#!/usr/bin/env bash
# bench/physics-pictures.sh: the pictures of docs/physics.md, made by the
# project's own commands (clsolve) and drawn by bench/render_mesh.py (a
# small offline renderer, standard library only). Builds nothing.
#
#   CLSOLVE=build/clsolve bash bench/physics-pictures.sh [OUT_DIR]
#
# OUT_DIR defaults to docs/images. CLSOLVE_DATA: the shared data.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
CLSOLVE=${CLSOLVE:-$here/build/clsolve}
DATA=${CLSOLVE_DATA:-$here/../shared/data}
OUTD=${1:-$here/docs/images}
PY=${PY:-python3}
M=$DATA/meshes
R="$PY $here/bench/render_mesh.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$OUTD"

# curvature: spot, mean curvature in the cool-warm map (blue concave, red convex)
"$CLSOLVE" curvature "$M/spot.obj" -o "$tmp/spot.ply" --color-by H
$R "$OUTD/curvature-spot.png" "$tmp/spot.ply" --yaw 120 --pitch 15 --size 700x600

# springs: the cow dropped on the floor with the shape-keeping defaults;
# frames at steps 0, 60, 120 and 600 side by side
"$CLSOLVE" springs "$M/cow.obj" --floor -4.5 --friction 0.5 --steps 600 --every 60 -o "$tmp/cow.ply"
$R "$OUTD/springs-cow.png" "$tmp"/cow_000000.ply "$tmp"/cow_000060.ply "$tmp"/cow_000120.ply \
    "$tmp"/cow_000600.ply --yaw 20 --pitch 10 --size 1400x380

# nbody: a disk around a central mass, leapfrog, seen face on at t = 0, 1, 2
"$CLSOLVE" nbody --disk 3000 --integrator leapfrog --dt 0.002 --steps 1000 --every 500 \
    -o "$tmp/disk.ply" --no-check
$R "$OUTD/nbody-disk.png" "$tmp"/disk_000000.ply "$tmp"/disk_000500.ply "$tmp"/disk_001000.ply \
    --pitch 0 --yaw 0 --size 1200x420

# deform: spot with two modes (bend, twist) at four q
$PY "$here/bench/make_deform_demo.py" "$M/spot.obj" "$tmp/U.mtx" "$tmp/q.mtx"
"$CLSOLVE" deform --basis "$tmp/U.mtx" --q "$tmp/q.mtx" --mesh "$M/spot.obj" -o "$tmp/spot_d.ply"
$R "$OUTD/deform-spot.png" "$tmp"/spot_d_000000.ply "$tmp"/spot_d_000001.ply \
    "$tmp"/spot_d_000002.ply "$tmp"/spot_d_000003.ply --yaw 90 --pitch 10 --size 1400x420
ls -l "$OUTD"
