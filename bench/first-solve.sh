#!/usr/bin/env bash
# bench/first-solve.sh: README command 1's solve for a user who never ran
# clsolve (issue 23, item 5): poisson3d 48 on the default device, with
# empty user and PoCL caches, then again with the caches that run left;
# each with the build's prebuilt programs (build/programs) and without them
# (CLSOLVE_PROGRAMS_DIR pointed at an empty directory: every program
# compiled on first use, as before). REPS rounds; wall clock and clsolve's
# own total for each run, and the trace's count of the programs it built or
# loaded and the kernels it launched (CLSOLVE_TRACE: ocl_trace_stats).
# PCS: the solves, one per word, `+` for a space (default jacobi; e.g.
# "jacobi amg ic0 chebyshev none+--method+bcg+-b+gen:random:4"); MODES:
# "prebuilt none" (default), either, or "nocache": no prebuilt programs
# and clsolve's program cache off (CLSOLVE_PROGRAM_CACHE=0), so the
# driver's own cache alone keeps what the first run built.
#   BUILD=build REPS=3 PCS="jacobi amg" bash bench/first-solve.sh
set -uo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
C=$B/clsolve
REPS=${REPS:-3}
PCS=${PCS:-jacobi}
MODES=${MODES:-prebuilt none}
W=${WORK:-/tmp/first-solve}
mkdir -p "$W"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null)," \
    "prebuilt: $(ls "$B"/programs/*.clbin 2>/dev/null | wc -l) programs"
M=$W/poisson3d-48.mtx
[ -s "$M" ] || "$C" gen poisson3d 48 -o "$M" >/dev/null
one() { # one LABEL ARGS...: a solve with the caches in $W/user, $W/pocl
    local label=$1 s e
    shift
    s=$(date +%s.%N)
    CLSOLVE_TRACE=1 CLSOLVE_CACHE_DIR=$W/user POCL_CACHE_DIR=$W/pocl XDG_CACHE_HOME=$W/xdg \
        "$C" solve "$M" "$@" -o "$W/x.mtx" >"$W/out" 2>"$W/err"
    e=$(date +%s.%N)
    echo "$label: wall $(python3 -c "print('%.2f' % ($e - $s))") s; $(grep '^times' "$W/out");" \
        "$(grep -o 'OpenCL programs.*' "$W/err" | tail -1)"
}
for r in $(seq 1 "$REPS"); do
    for pc in $PCS; do
        args=${pc//+/ }
        for mode in $MODES; do
            if [ $mode = prebuilt ]; then unset CLSOLVE_PROGRAMS_DIR; else export CLSOLVE_PROGRAMS_DIR=$W/no-programs; fi
            if [ $mode = nocache ]; then export CLSOLVE_PROGRAM_CACHE=0; else unset CLSOLVE_PROGRAM_CACHE; fi
            rm -rf "$W/user" "$W/pocl" "$W/xdg"
            mkdir -p "$W/user" "$W/pocl" "$W/xdg"
            one "round $r, --precond $args, $mode, first (empty caches)" --precond $args
            one "round $r, --precond $args, $mode, second" --precond $args
        done
    done
done
unset CLSOLVE_PROGRAMS_DIR CLSOLVE_PROGRAM_CACHE
