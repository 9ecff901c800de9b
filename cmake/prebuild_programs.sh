#!/bin/sh
# cmake/prebuild_programs.sh CLSOLVE DIR: the build's `programs` target.
# Solves a small generated system once with CLSOLVE_CACHE_DIR=DIR, so the
# OpenCL programs a default solve uses are built for this machine's
# default device and their binaries left in DIR (build/programs/, which
# clsolve and clsolved read after a miss in the user's cache: kernels/
# ocl.h). On PoCL that first build and its binary cost 15-30 s, which README
# command 1's first solve no longer pays (issue 23, item 5). A machine
# without an OpenCL device only gets a note: the build goes on.
clsolve=$1
dir=$2
# a sanitized build's clsolve: its leak report is not this step's business
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
mkdir -p "$dir" || exit 0
if CLSOLVE_CACHE_DIR="$dir" "$clsolve" solve gen:poisson3d:6 --precond jacobi --tol 1e-6 \
    >"$dir/build.log" 2>&1; then
    echo "OpenCL programs prebuilt in $dir ($(ls "$dir" | grep -c '\.clbin$') programs)"
else
    echo "note: the OpenCL programs were not prebuilt (no device, or the solve failed:" \
        "$dir/build.log); a first solve builds them"
fi
touch "$dir/.built"
