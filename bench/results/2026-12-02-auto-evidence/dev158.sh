#!/bin/bash
# nvidia-h200 (session 26): --precond auto's evidence as committed (1480aad: a watch at amg's cost
# in Jacobi iterations, switch when rel > sqrt(tol)) against the rule alone (CLSOLVE_AUTO_SWITCH=0)
# and amg named, 3 alternated rounds; solve-only tts = precond_setup_s + solve_s.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; free -g; git log --oneline -1) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
uptime >> $R/env.txt
C=/tmp/b1/clsolve
run() { # label env args...
  local lab=$1 env=$2; shift 2
  env $env $C solve "$@" --device gpu --tol 1e-8 --json 2>/dev/null | python3 -c "
import json,sys; j=json.load(sys.stdin); t=j['times']
print('%-44s %-6s it %5d pc_setup %.4f solve %.4f tts %.4f total %.4f true %.2e | %s' % ('$lab', j['precond'], j['iterations'], t.get('precond_setup_s',0), t['solve_s'], t.get('precond_setup_s',0)+t['solve_s'], t['total_s'], j['true_relative_residual'] or -1, j.get('precond_choice','')[:120]))" >> $R/auto.txt
}
for round in 1 2 3; do
  for spec in "gen:poisson2d:2000" "gen:poisson2d:1000" "gen:poisson2d:1000 -b gen:random:1" "gen:poisson3d:128" "gen:poisson3d:128 -b gen:random:1" "gen:poisson3d:160 -b gen:random:1" "gen:poisson3d27:128 -b gen:random:1"; do
    run "auto   $spec" "CLSOLVE_AUTO_SWITCH=1" $spec --precond auto
    run "rule   $spec" "CLSOLVE_AUTO_SWITCH=0" $spec --precond auto
    run "amg    $spec" "CLSOLVE_AUTO_SWITCH=1" $spec --precond amg
  done
done
uptime >> $R/env.txt
python3 - $R/auto.txt <<'PY' | tee $R/summary.txt
import sys, collections, statistics
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    f = l.split()
    mode, spec = f[0], " ".join(f[1:f.index("it") - 1])
    d[(spec, mode)].append((float(f[f.index("tts") + 1]), int(f[f.index("it") + 1]), f[f.index("it") - 1]))
specs = []
for (s, m) in d:
    if s not in specs: specs.append(s)
for s in specs:
    row = [s]
    for m in ("auto", "rule", "amg"):
        v = d[(s, m)]; t = [x[0] for x in v]
        row.append("%s %s %d: %.4f/%.4f" % (m, v[0][2], v[0][1], min(t), statistics.median(t)))
    print(" | ".join(row))
PY
pack
