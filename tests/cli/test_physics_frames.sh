#!/usr/bin/env bash
# The physics commands' output files read back by independent Python
# readers (tests/cli/physics_formats.py: OBJ, ASCII PLY, legacy VTK, .pvd,
# CSV), UVs and normals through every format, frame sequences, unknown
# extensions refused, and --help of every physics command (exit 0, every
# option named). The checks are in tests/cli/physics_frames.py.
. "$(dirname "$0")/lib.sh"
need_data meshes
rm -rf "$TEST_TMP/frames"
$PY "$here/physics_frames.py" --clsolve "$CLSOLVE" --data "$CLSOLVE_DATA" --tmp "$TEST_TMP/frames"
[ $? -eq 0 ] && ok || bad "physics_frames.py"
finish
