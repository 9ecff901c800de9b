source .devpack/setup.sh >/dev/null 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime
export CLSOLVE_TUNE_DIR=/tmp/tune; /tmp/b1/clsolve tune --figures --device gpu >/dev/null 2>&1
t0=$(date +%s.%N); /tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; echo "gen p256: $(echo "$(date +%s.%N) - $t0" | bc) s, $(du -h /tmp/p256.mtx | cut -f1)"
# the large job alone
d=$(mktemp -d); /tmp/b1/clsolved --listen 127.0.0.1:18700 --data-dir $d --device gpu --lanes 4 --max-upload 8000000000 >$d.log 2>&1 & pid=$!
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:18700/healthz >/dev/null && break; sleep 0.1; done
id=$(curl -sf -X POST -T /tmp/p256.mtx "http://127.0.0.1:18700/v1/jobs?tol=1e-14&maxiter=6000" | python3 -c "import json,sys; print(json.load(sys.stdin)['id'])")
[ -n "$id" ] && for _ in $(seq 1 1200); do curl -sf http://127.0.0.1:18700/v1/jobs/$id | grep -qE '"status":"(succeeded|failed|cancelled)"' && break; sleep 0.25; done
curl -sf http://127.0.0.1:18700/v1/jobs/$id | python3 -c "
import json,sys; j=json.load(sys.stdin); t=j.get('timings') or {}; r=j.get('result') or {}
print(f\"large job alone: {j['status']}, {r.get('iterations')} iterations, parse {t.get('parse_s',0):.2f} s, solve {t.get('solve_s',0):.2f} s ({t.get('ms_per_iteration',0):.4f} ms/it), total {t.get('total_s',0):.2f} s\")"
kill $pid; wait $pid 2>/dev/null; rm -rf $d $d.log
export DAEMON_ARGS="--max-upload 8000000000"
for rep in 1 2; do
  echo "== small load alone"
  JOBS=400 LANES=4 MODES=lanes CLSOLVED=/tmp/b1/clsolved BUS=.devdata/1138_bus.mtx bash bench/daemon-jobs.sh gpu 1 2>&1
  echo "== small load with the large job running"
  LARGE=/tmp/p256.mtx JOBS=400 LANES=4 MODES=lanes CLSOLVED=/tmp/b1/clsolved BUS=.devdata/1138_bus.mtx bash bench/daemon-jobs.sh gpu 1 2>&1
done | tee $OUT/mixed.txt
