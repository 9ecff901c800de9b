#!/bin/bash
# nvidia-h200: one queued iteration once iterations are slow, and the confirmation without M^-1
# (b1 = working tree) against 4fd54c0 (b0): bench/precond.sh at 256 (jacobi chebyshev amg) and
# 320 (jacobi amg), b0 b1 b1 b0.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt 2>&1
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-4fd54c0.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j8 --target clsolve >/tmp/build0.log 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j8 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
wait
[ -x /tmp/b0/clsolve ] || { tail -30 /tmp/build0.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
i=0
for b in b0 b1 b1 b0; do
  i=$((i+1))
  CLSOLVE=/tmp/$b/clsolve SIZES="256" PCS="jacobi chebyshev amg" REUSE_SIZES= MULTI_PCS= PETSC=0 CUPY=0 REPS=3 OUT=$R/p$i-$b bash bench/precond.sh > $R/p$i-$b.txt 2>&1
  CLSOLVE=/tmp/$b/clsolve SIZES="320" PCS="jacobi amg" REUSE_SIZES= MULTI_PCS= PETSC=0 CUPY=0 REPS=2 OUT=$R/q$i-$b bash bench/precond.sh > $R/q$i-$b.txt 2>&1
  uptime >> $R/env.txt; pack
done
for f in $R/p*-b*/*.json $R/q*-b*/*.json; do python3 -c "
import json,sys; j=json.load(open('$f')); t=j['times']; print('$f'.split('/r/')[1], j['iterations'], 'solve %.4f confirm %.4f loop %.3f ms/it setup %.3f' % (t['solve_s'], t.get('solve_confirm_s',0), t.get('loop_ms_per_iteration',0), t['setup_s']))" 2>/dev/null; done > $R/summary.txt
pack
