#!/bin/bash
# one H200: why a daemon's first big job sets up slower: clsolved traced,
# the 160k-row warm-up, then three p200 jobs
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved >/dev/null 2>&1
/tmp/b1/clsolve gen poisson3d 200 -o /tmp/p200.mtx >/dev/null; cat /tmp/p200.mtx > /dev/null
/tmp/b1/clsolve gen poisson2d 400 -o /tmp/warm.mtx >/dev/null
mkdir -p /tmp/dd
CLSOLVE_TRACE=1 setsid /tmp/b1/clsolved --listen 127.0.0.1:8788 --data-dir /tmp/dd --device gpu > $R/daemon.log 2>&1 &
for _ in $(seq 1 300); do curl -sf http://127.0.0.1:8788/healthz >/dev/null && break; sleep 0.1; done
for f in /tmp/warm.mtx /tmp/p200.mtx /tmp/p200.mtx /tmp/p200.mtx; do
  echo "=== JOB $f $(date +%s.%N)" >> $R/daemon.log
  resp=$(curl -sf -X POST -T "$f" -H "Content-Type: application/octet-stream" -H "Expect:" "http://127.0.0.1:8788/v1/jobs?precond=jacobi&tol=1e-8")
  [[ $resp =~ \"id\":\"([^\"]+)\" ]] && id=${BASH_REMATCH[1]}
  curl -sf "http://127.0.0.1:8788/v1/jobs/$id?wait=60" > /dev/null
  curl -sf "http://127.0.0.1:8788/v1/jobs/$id" | python3 -c "import json,sys; j=json.load(sys.stdin); print(j.get('timings'))" >> $R/timings.txt
done
kill %1; sleep 1
tar -C $OUT -czf $OUT/r.tgz r
