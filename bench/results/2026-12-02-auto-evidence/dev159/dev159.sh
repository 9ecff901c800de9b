#!/bin/bash
# nvidia-h200 (session 26): --precond auto with its evidence and the entries bound (commit below)
# against the rule alone and amg named (bench/auto-evidence.sh, 3 alternated rounds); AMG's host
# re-set-up at poisson3d 128 and 256 on 16 cores (bench_amg --resetup); test_pc and test_amg.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; free -g; git log --oneline -1) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve bench_amg test_amg test_pc > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
uptime >> $R/env.txt
(/tmp/b1/tests/test_pc | tail -1; /tmp/b1/tests/test_amg | tail -4) > $R/unit.txt 2>&1; cat $R/unit.txt
CLSOLVE=/tmp/b1/clsolve DEVICE=gpu ROUNDS=3 SPECS="gen:poisson2d:1000 gen:poisson2d:1000,-b,gen:random:1 gen:poisson2d:2000 gen:poisson3d:128 gen:poisson3d:128,-b,gen:random:1 gen:poisson3d:160,-b,gen:random:1 gen:poisson3d27:128,-b,gen:random:1 gen:poisson3d:256" bash bench/auto-evidence.sh > $R/auto-gpu.txt 2>&1
tail -10 $R/auto-gpu.txt
uptime >> $R/env.txt
for n in 128 256; do
  /tmp/b1/bench/bench_amg gen:poisson3d:$n --setup host --resetup --reps 3 --vcycles 0 --device gpu 2>/dev/null >> $R/resetup.jsonl
done
python3 - $R/resetup.jsonl <<'PY' | tee $R/resetup.txt
import json, sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    print(j["matrix"], "fresh %.4f/%.4f (strength+agg %.4f, prolong %.4f, rap %.4f)  re-set-up %.4f/%.4f (prolong %.4f, rap %.4f)" % (
        j["setup_min_s"], j["setup_s"], j["strength_s"] + j["aggregate_s"], j["prolong_s"], j["rap_s"],
        j["resetup_min_s"], j["resetup_s"], j["resetup_prolong_s"], j["resetup_rap_s"]))
PY
uptime >> $R/env.txt
pack
