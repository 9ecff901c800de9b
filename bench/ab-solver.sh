#!/usr/bin/env bash
# bench/ab-solver.sh: two builds of clsolve side by side on one device, run
# by run alternating (A, B, A, B, ...), so a restructuring can be shown to be
# no slower: `clsolve bench` (ms per fused CG iteration against the
# bandwidth floor) and `clsolve solve` on generated systems with each
# preconditioner and pipelined CG (solve_s, iterations, total wall).
#   A=/tmp/b0/clsolve B=/tmp/b1/clsolve REPS=3 SIZES=256,320 N=256 NPC=128 \
#     bash bench/ab-solver.sh
# Prints one line per run and a table of min / median per case last.
set -uo pipefail
A=${A:?path of build A}
B=${B:?path of build B}
REPS=${REPS:-3}
SIZES=${SIZES:-256,320}
N=${N:-256}     # jacobi / none / pipecg
NPC=${NPC:-128} # ic0 / amg / chebyshev (host set-ups)
DEV=${DEV:-gpu}
PY=${PY:-python3}
LOG=${LOG:-/tmp/ab-solver.log}
: >"$LOG"
export CLSOLVE_TUNE_DIR=${CLSOLVE_TUNE_DIR:-/tmp/ab-tuning}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores" | tee -a "$LOG"
for r in $(seq 1 "$REPS"); do
    for side in A B; do
        C=${!side}
        "$C" bench --sizes "$SIZES" --no-classic --device "$DEV" --json 2>/dev/null |
            $PY -c "
import json, sys
j = json.load(sys.stdin)
for row in j['results']:
    print('bench $side', row['n'], row['ms_per_iteration'], row['floor_ms'])" | tee -a "$LOG"
        run() { # case args...
            local case=$1
            shift
            local s e
            s=$(date +%s.%N)
            "$C" solve "$@" --device "$DEV" --tol 1e-8 --json 2>/dev/null >/tmp/ab.json
            e=$(date +%s.%N)
            $PY -c "
import json
j = json.load(open('/tmp/ab.json'))
t = j['times']
print('solve $side $case', j['iterations'], '%.4f' % t['solve_s'], '%.4f' % t.get('setup_s', 0), '%.3f' % ($e - $s))" | tee -a "$LOG"
        }
        run jacobi gen:poisson3d:"$N" --precond jacobi
        run none gen:poisson3d:"$N" --precond none
        run pipecg gen:poisson3d:"$N" --precond jacobi --method pipecg
        run ic0 gen:poisson3d:"$NPC" --precond ic0
        run amg gen:poisson3d:"$NPC" --precond amg
        run chebyshev gen:poisson3d:"$NPC" --precond chebyshev
    done
done
$PY - "$LOG" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if not f or f[0] not in ("bench", "solve"):
        continue
    if f[0] == "bench":
        key, side, val = ("bench", f[2]), f[1], float(f[3]) if f[3] != "None" else float("nan")
        rows.setdefault(key, {}).setdefault(side, []).append(val)
    else:
        key, side = ("solve " + f[2], f[3]), f[1]
        rows.setdefault(key, {}).setdefault(side, []).append((float(f[4]), int(f[3]), float(f[6])))
print("| case | A min / median | B min / median | B/A (median) |")
print("|---|---|---|---|")
for key, sides in rows.items():
    a, b = sides.get("A", []), sides.get("B", [])
    if key[0] == "bench":
        name = "bench fused ms/it, n=%s" % key[1]
        av, bv = a, b
    else:
        name = "%s solve_s (it %s)" % (key[0], key[1])
        av, bv = [x[0] for x in a], [x[0] for x in b]
    if not av or not bv:
        continue
    ma, mb = statistics.median(av), statistics.median(bv)
    print("| %s | %.4f / %.4f | %.4f / %.4f | %.3f |" % (name, min(av), ma, min(bv), mb, mb / ma))
EOF
