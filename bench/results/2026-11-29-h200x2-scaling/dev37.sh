#!/usr/bin/env bash
# issue 28 on 2 x H200: pinned sums/scalars A/B (CLSOLVE_PAGEABLE_SUMS=1 is the old), then the whole scaling benchmark at HEAD
source .devpack/setup.sh >/dev/null 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/dev/null 2>&1 || { echo build failed; exit 1; }
export CLSOLVE_TUNE_DIR=/tmp/tune OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
uptime
prof() { python3 -c "
import json,sys
j=json.load(open(sys.argv[1])); r=j['profile']['ranks'][0]; d=r['parts'][0]
print(sys.argv[2], 'loop %.4f ms/it' % j['times']['loop_ms_per_iteration'], 'wall %.1f busy %.1f idle %.1f' % (r['wall'], d['device_busy'], d['device_idle']), 'idle before:', {k: round(v,1) for k,v in d['idle_before'].items() if v>=0.05}, 'waits', {k: round(v,1) for k,v in r['host_waits'].items()}, 'other %.1f' % r['host_other'])
" $1 "$2"; }
for rep in 1 2; do
for m in cg-single cg; do for n in 320 160; do for pg in 1 0; do
  CLSOLVE_PAGEABLE_SUMS=$pg mpirun --oversubscribe --bind-to none -x CLSOLVE_PAGEABLE_SUMS -np 2 /tmp/b1/clsolve solve gen:poisson3d:$n --device gpu --method $m --maxiter 300 --tol 1e-300 --profile --json > /tmp/p.json 2>/dev/null
  prof /tmp/p.json "rep$rep $m $n pageable=$pg"
  CLSOLVE_PAGEABLE_SUMS=$pg mpirun --oversubscribe --bind-to none -x CLSOLVE_PAGEABLE_SUMS -np 2 /tmp/b1/clsolve solve gen:poisson3d:$n --device gpu --method $m --maxiter 300 --tol 1e-300 --json > /tmp/t.json 2>/dev/null
  python3 -c "import json; j=json.load(open('/tmp/t.json')); print('   timed (no profile): %.4f ms/it' % (1e3*j['times']['solve_s']/j['iterations']))"
done; done; done; done
OUT=/tmp/new METHODS="cg cg-single pipecg" CLSOLVE=/tmp/b1/clsolve timeout 380 bash bench/scaling.sh 2>&1 | grep -v "^$" | grep -E "^\||^###|^rank|^Targets"
uptime
mkdir -p $OUT/r; tar czf $OUT/r/results.tgz -C /tmp new
