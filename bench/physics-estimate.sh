#!/usr/bin/env bash
# physics-estimate.sh: the physics jobs' admission estimate (physics/estimate.c)
# beside what the jobs take, on the default OpenCL device (PoCL here): each
# kind at 2-3 sizes through bench_physics_estimate, which runs the job by
# physics_job_run (the daemon's entry point) and reports its peak resident
# memory (VmHWM) and the bytes it wrote (files and the result the record
# stores). On a CPU device the device's buffers are host memory, so the host
# estimate compared is host + device, as the admission counts it.
#   BUILD=build bash bench/physics-estimate.sh
# Prints a markdown table; ratio = estimate / measured (target 1 to 2).
set -euo pipefail
BUILD=${BUILD:-build}
B=$BUILD/bench/bench_physics_estimate
[ -x "$B" ] || { echo "build $B first" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
python3 - "$T/basis1.mtx" 3000 8 "$T/basis2.mtx" 30000 8 <<'PY'
import random, sys
a = sys.argv[1:]
for k in range(0, len(a), 3):
    r, c = int(a[k + 1]), int(a[k + 2])
    with open(a[k], "w") as f:
        f.write("%%%%MatrixMarket matrix array real general\n%d %d\n" % (r, c))
        for _ in range(r * c):
            f.write("%.9g\n" % random.uniform(-1, 1))
PY
q='[[1,0,0,0,0,0,0,0],[0,1,0,0,0,0,0,0],[0,0,1,0,0,0,0,0]]'
# nbody is all pairs (n^2 per step): sizes PoCL on two cores runs in seconds
cases=(
    "nbody|{\"plummer\": 64, \"steps\": 20, \"every\": 5}|"
    "nbody|{\"plummer\": 20000, \"steps\": 2, \"every\": 1, \"check\": false}|"
    "nbody|{\"plummer\": 40000, \"steps\": 1, \"format\": \"ply\", \"check\": false}|"
    "springs|{\"grid\": 50, \"steps\": 20, \"every\": 10}|"
    "springs|{\"grid\": 100, \"steps\": 20, \"every\": 10, \"format\": \"ply\"}|"
    "curvature|{\"saddle\": 100}|"
    "curvature|{\"saddle\": 300, \"format\": \"ply\"}|"
    "deform|{\"q\": $q}|$T/basis1.mtx"
    "deform|{\"q\": $q}|$T/basis2.mtx"
)
echo "| kind | options | items | est. host+device MB | peak RSS MB | ratio | est. output MB | output MB | ratio |"
echo "|---|---|---|---|---|---|---|---|---|"
i=0
for c in "${cases[@]}"; do
    IFS='|' read -r kind opts input <<<"$c"
    i=$((i + 1))
    mkdir -p "$T/o$i"
    line=$("$B" "$kind" "$opts" "$T/o$i" ${input:+"$input"})
    python3 - "$line" "$opts" "${input:+$(basename "$input")}" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
mb = 1048576.0
host = j["est_host"] + j["est_device"]
opts = sys.argv[2] + (" + " + sys.argv[3] if sys.argv[3] else "")
print("| %s | `%s` | %d | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f |" % (
    j["kind"], opts, j["items"], host / mb, j["peak_rss"] / mb, host / j["peak_rss"],
    j["est_output"] / mb, j["output"] / mb, j["est_output"] / j["output"]))
PY
done
