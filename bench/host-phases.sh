#!/usr/bin/env bash
# bench/host-phases.sh: where `clsolve solve` spends the time outside the
# solve (issue 23's "wall - solve"), two sides alternated run by run: two
# builds (A=, B=) or one build under two environments (A_ENV=, B_ENV=), so
# a change to the host path is measured against its twin in the same
# command. Each run is traced (CLSOLVE_TRACE=1, CLSOLVE_MM_PROFILE=1) and
# split into phases:
#   read          main -> "input: matrix read" (the parse and the CSR;
#                 the driver starts beside it)
#   count/text/csr  the reader's own passes (mm_read_csr's profile line)
#   read_to_solve the read's end -> the first residual (checks, plans,
#                 the matrix and the vectors up)
#   upload        the matrix's upload (la_csr_upload)
#   fill_matrix, fill_vectors  the staged writes' host side (their "fill")
#   after_solve   the solve's end -> the end of main (x down, the release)
#   x_down        the solve's end -> x on the host
#   wall, solve, wall_minus_solve (the process from exec to exit)
#   driver_platforms, driver_context, driver_programs  when the prewarm
#                 beside the read had the OpenCL platforms up, the context
#                 made, the programs loaded (from main; NaN in a build
#                 without those traces)
# Odd rounds run A first, even rounds B first. After the rounds each side
# writes x once (-o) and the two are compared byte for byte.
#   B=/tmp/b1/clsolve A_ENV="CLS_POOL=0" N=256 ROUNDS=12 DEVICE=gpu \
#     bash bench/host-phases.sh            # one build, a switch off (A) / on (B)
#   A=/tmp/b0/clsolve B=/tmp/b1/clsolve bash bench/host-phases.sh
# FILE= names a matrix instead of poisson3d N (written once to WORK, read
# once before the runs); EXTRA= adds options to every solve.
# Prints a line per run and min / median per side and phase last.
set -uo pipefail
B=${B:?path of clsolve (side B; side A is A=, default the same binary)}
A=${A:-$B}
A_ENV=${A_ENV:-}
B_ENV=${B_ENV:-}
N=${N:-256}
ROUNDS=${ROUNDS:-12}
DEVICE=${DEVICE:-gpu}
EXTRA=${EXTRA:---precond jacobi --tol 1e-8}
W=${WORK:-/tmp/host-phases}
PY=${PY:-python3}
mkdir -p "$W"
M=${FILE:-$W/p$N.mtx}
[ -s "$M" ] || "$B" gen poisson3d "$N" -o "$M" >/dev/null || exit 1
cat "$M" >/dev/null
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; A: $A ${A_ENV:-(no env)}; B: $B ${B_ENV:-(no env)}; $M"
# warm the tuner's database and the program cache (not measured)
env $B_ENV "$B" solve gen:poisson3d:16 --device "$DEVICE" >/dev/null 2>&1

one() { # side, tag
    local bin env
    if [ "$1" = A ]; then bin=$A env=$A_ENV; else bin=$B env=$B_ENV; fi
    local s e
    s=$(date +%s.%N)
    # shellcheck disable=SC2086 # EXTRA and env are word lists
    env $env CLSOLVE_TRACE=1 CLSOLVE_MM_PROFILE=1 "$bin" solve "$M" --device "$DEVICE" $EXTRA --json \
        >"$W/r.json" 2>"$W/r.err"
    e=$(date +%s.%N)
    { echo "=== $2"; cat "$W/r.err"; } >>"$W/traces.txt"
    $PY - "$W/r.json" "$s" "$e" "$2" "$W/r.err" <<'EOF'
import json, re, sys
j = json.load(open(sys.argv[1])); t = j["times"]; s = float(sys.argv[2]); e = float(sys.argv[3])
err = open(sys.argv[5]).read()
tr = {}
for m in re.finditer(r"\[trace\]\s+([0-9.]+) s \(\+[0-9.]+ s\) (.*)", err):
    tr.setdefault(m.group(2).strip(), float(m.group(1)))
g = lambda k: tr.get(k, float("nan"))
rd = g("input: matrix read (the checks follow)")
fill = [float(x) / 1e3 for x in re.findall(r"staged write done: \d+ pieces, [0-9.]+ MB, fill ([0-9.]+) ms", err)]
mm = {}
m = re.search(r"^mm_read_csr: .*", err, re.M)
for k in ("count", "parse", "csr"):
    x = re.search(r"\b%s ([0-9.]+) ms" % k, m.group(0)) if m else None
    mm[k] = float(x.group(1)) / 1e3 if x else float("nan")
v = {"wall": e - s, "solve": t["solve_s"], "wall_minus_solve": e - s - t["solve_s"],
     "it": j.get("iterations", -1), "read": rd, "count": mm["count"], "text": mm["parse"],
     "csr": mm["csr"], "read_to_solve": g("ksp: initial residual") - rd,
     "upload": g("dsys_open: matrix up") - g("la_csr_upload: begin"),
     "fill_matrix": sum(fill[:3]), "fill_vectors": sum(fill[3:5]),
     "after_solve": g("main: command returned") - g("dsolve: solved"),
     "x_down": g("gather: x down") - g("dsolve: solved"),
     "driver_platforms": g("prewarm: device picked"), "driver_context": g("prewarm: context made"),
     "driver_programs": g("prewarm: la_init done")}
print(sys.argv[4], " ".join("%s=%.4f" % kv for kv in v.items()))
EOF
}

: >"$W/traces.txt"
: >"$W/runs.txt"
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="A B"; else order="B A"; fi
    for side in $order; do one "$side" "$side-$r" | tee -a "$W/runs.txt"; done
done
# shellcheck disable=SC2086
env $A_ENV "$A" solve "$M" --device "$DEVICE" $EXTRA -o "$W/xA.mtx" >/dev/null 2>&1
# shellcheck disable=SC2086
env $B_ENV "$B" solve "$M" --device "$DEVICE" $EXTRA -o "$W/xB.mtx" >/dev/null 2>&1
if cmp -s "$W/xA.mtx" "$W/xB.mtx"; then echo "x: the same bytes from A and B"; else echo "x: A and B differ"; fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
$PY - "$W/runs.txt" <<'EOF'
import re, statistics as st, sys
v = {}
for l in open(sys.argv[1]):
    side = l.split()[0].split("-")[0]
    for k, x in re.findall(r"(\w+)=([-0-9.na]+)", l):
        try:
            v.setdefault(k, {}).setdefault(side, []).append(float(x))
        except ValueError:
            pass
print("%-18s %-22s %-22s" % ("min / median", "A", "B"))
for k, sides in v.items():
    cell = lambda xs: "%.4f / %.4f" % (min(xs), st.median(xs)) if xs else "-"
    print("%-18s %-22s %-22s" % (k, cell(sides.get("A", [])), cell(sides.get("B", []))))
EOF
