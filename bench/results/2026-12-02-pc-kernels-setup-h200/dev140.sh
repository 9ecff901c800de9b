#!/bin/bash
# nvidia-h200: where a program built from source is counted (empty caches, fresh machine): b0 = 594a23c
# (kernels at the first device apply) against b1 = HEAD (at set-up where the apply runs on the device),
# each with its own empty program cache: jacobi first (the main programs), then chebyshev, ic0, amg at 128;
# then the same again (warm caches). Iterations must match.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline -1) > $R/env.txt 2>&1
mkdir -p /tmp/s0 && tar -C /tmp/s0 -xzf .devdata/old-594a23c.tgz
bld() { cmake -S $1 -B $2 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build $2 -j8 --target clsolve > $2.log 2>&1; }
bld /tmp/s0 /tmp/b0 & bld . /tmp/b1; wait
for b in b0 b1; do [ -x /tmp/$b/clsolve ] || { tail -20 /tmp/$b.log; exit 1; }; done
for pass in cold warm; do
  for b in b1 b0; do
    for pc in jacobi chebyshev ic0 amg; do
      CUDA_CACHE_PATH=/tmp/nvcache-$b CLSOLVE_CACHE_DIR=/tmp/cache-$b /tmp/$b/clsolve solve gen:poisson3d:128 --device gpu --precond $pc --tol 1e-8 --json 2>/dev/null | python3 -c "
import json,sys; j=json.load(sys.stdin); t=j['times']
print('$pass $b %-9s it %4d true %.3e setup %.3f (pc %.3f) solve %.3f' % ('$pc', j['iterations'], j['true_relative_residual'], t['setup_s'], t.get('precond_setup_s', 0), t['solve_s']))"
    done
  done
done > $R/runs.txt 2>&1
uptime >> $R/env.txt
cat $R/env.txt $R/runs.txt
