#!/bin/bash
# nvidia-h200 (session 26): --precond auto's evidence (Jacobi within amg's measured cost, else
# amg from its x) against the rule alone (CLSOLVE_AUTO_SWITCH=0) and amg named, alternated;
# AMG's host re-set-up (bench_amg --resetup) on 16 cores; test_amg on the host.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; free -g; git log --oneline -1) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve bench_amg test_amg > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/tests/test_amg > $R/test_amg.txt 2>&1; tail -5 $R/test_amg.txt
# the host re-set-up, 16 threads
for n in 64 128; do
  for r in 1 2; do
    /tmp/b1/bench/bench_amg gen:poisson3d:$n --setup host --resetup --reps 5 --vcycles 0 --device gpu 2>/dev/null >> $R/resetup.jsonl
  done
done
python3 - $R/resetup.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    print(j["matrix"], "fresh %.4f/%.4f (strength+agg %.4f, prolong %.4f, rap %.4f)  re-set-up %.4f/%.4f (prolong %.4f, rap %.4f)" % (
        j["setup_min_s"], j["setup_s"], j["strength_s"] + j["aggregate_s"], j["prolong_s"], j["rap_s"],
        j["resetup_min_s"], j["resetup_s"], j["resetup_prolong_s"], j["resetup_rap_s"]))
PY
uptime >> $R/env.txt
# auto's evidence on the GPU: 3 alternated rounds of auto / the rule alone / amg named
C=/tmp/b1/clsolve
run() { # label env args...
  local lab=$1 env=$2; shift 2
  env $env $C solve "$@" --device gpu --tol 1e-8 --json 2>/dev/null | python3 -c "
import json,sys; j=json.load(sys.stdin); t=j['times']
print('%-40s %-6s it %5d pc_setup %.4f solve %.4f tts %.4f total %.4f true %.2e | %s' % ('$lab', j['precond'], j['iterations'], t.get('precond_setup_s',0), t['solve_s'], t.get('precond_setup_s',0)+t['solve_s'], t['total_s'], j['true_relative_residual'], j.get('precond_choice','')[:150]))" >> $R/auto.txt
}
for round in 1 2 3; do
  for spec in "gen:poisson2d:2000" "gen:poisson2d:1000" "gen:poisson3d:128" "gen:poisson3d:128 -b gen:random:1" "gen:poisson3d:160 -b gen:random:1"; do
    run "auto   $spec" "CLSOLVE_AUTO_SWITCH=1" $spec --precond auto
    run "rule   $spec" "CLSOLVE_AUTO_SWITCH=0" $spec --precond auto
    run "amg    $spec" "CLSOLVE_AUTO_SWITCH=1" $spec --precond amg
  done
done
cat $R/auto.txt
uptime >> $R/env.txt
pack
