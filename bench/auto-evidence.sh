#!/usr/bin/env bash
# auto-evidence.sh: --precond auto's evidence (docs/preconditioners.md) against the rows rule
# alone (CLSOLVE_AUTO_SWITCH=0) and amg named, alternated, on this machine's device; prints per
# system the choice, iterations and time to solution (precond_setup_s + solve_s) min / median.
#
#   CLSOLVE=build/clsolve DEVICE=cpu ROUNDS=5 SPECS="gen:poisson2d:500 gen:poisson3d:64" \
#       bash bench/auto-evidence.sh
set -u
C=${CLSOLVE:-build/clsolve}
DEVICE=${DEVICE:-cpu}
ROUNDS=${ROUNDS:-5}
SPECS=${SPECS:-"gen:poisson2d:500 gen:poisson2d:370 gen:poisson3d:64"}
TOL=${TOL:-1e-8}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
uptime
for r in $(seq 1 "$ROUNDS"); do
    for spec in $SPECS; do
        for mode in auto rule amg; do
            sw=1 pc=auto
            [ $mode = rule ] && sw=0
            [ $mode = amg ] && pc=amg
            # shellcheck disable=SC2086
            CLSOLVE_AUTO_SWITCH=$sw "$C" solve ${spec//,/ } --device "$DEVICE" --precond $pc --tol "$TOL" \
                --json 2>/dev/null | /usr/bin/python3 -c "
import json, sys
j = json.load(sys.stdin); t = j['times']
print('$spec', '$mode', j['precond'], j['iterations'], t.get('precond_setup_s', 0) + t['solve_s'], t['total_s'])" >>"$out"
        done
    done
done
uptime
/usr/bin/python3 - "$out" <<'PY'
import sys, collections, statistics
d = collections.OrderedDict()
for l in open(sys.argv[1]):
    spec, mode, pc, it, tts, tot = l.split()
    d.setdefault(spec, {}).setdefault(mode, []).append((pc, int(it), float(tts), float(tot)))
print("%-28s %-34s %-34s %-34s" % ("system", "auto", "rule alone", "amg named"))
for spec, m in d.items():
    cells = []
    for mode in ("auto", "rule", "amg"):
        v = m.get(mode, [])
        if not v:
            cells.append("-"); continue
        t = [x[2] for x in v]
        cells.append("%s %d: %.4f / %.4f" % (v[0][0], v[0][1], min(t), statistics.median(t)))
    print("%-28s %-34s %-34s %-34s" % (spec, *cells))
PY
