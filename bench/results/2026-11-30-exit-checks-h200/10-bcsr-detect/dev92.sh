#!/bin/bash
# nvidia-h200: bcsr_detect on fresh zeroed marks (b1 = working tree) against 6211e7b (b0): the
# upload's classification step in the trace, p256 .mtx, alternated.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git status --short | head) > $R/env.txt 2>&1
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-6211e7b.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j8 --target clsolve >/tmp/build0.log 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j8 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
wait
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
for r in 1 2 3 4; do for b in b0 b1; do
  CLSOLVE_TRACE=1 /tmp/$b/clsolve solve /tmp/p256.mtx --device gpu --json > /tmp/r.json 2> /tmp/r.err
  echo "$b $r $(grep 'la_csr_upload: classified' /tmp/r.err | head -1) | $(python3 -c "import json; t=json.load(open('/tmp/r.json'))['times']; print('setup %.3f upload %.3f it %d' % (t['setup_s'], t['upload_s'], json.load(open('/tmp/r.json'))['iterations']))")"
done; done | tee $R/classify.txt
uptime >> $R/env.txt
