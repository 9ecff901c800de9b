source .devpack/setup.sh >/dev/null 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime
export CLSOLVE_TUNE_DIR=/tmp/tune; [ -d /tmp/tune ] || /tmp/b1/clsolve tune --figures --device gpu >/dev/null 2>&1
echo "== parse of 1138_bus by the CLI (min of 5)"
for r in 1 2 3 4 5; do /tmp/b1/clsolve solve .devdata/1138_bus.mtx --device gpu --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['times']['parse_s'])"; done | sort -n | head -1
d=$(mktemp -d); /tmp/b1/clsolved --listen 127.0.0.1:18830 --data-dir $d --device gpu --lanes 4 --max-queued 4096 >$d.log 2>&1 & pid=$!
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:18830/healthz >/dev/null && break; sleep 0.1; done
sleep 2
PYTHONPATH=python python3 bench/batch-upload.py http://127.0.0.1:18830 .devdata/1138_bus.mtx --count 1000 --reps 3 --workers 40 2>&1 | tee $OUT/batch-upload.txt
kill $pid; wait $pid 2>/dev/null
for rep in 1 2; do
  JOBS=400 LANES=4 MODES="lanes nobatch" CLSOLVED=/tmp/b1/clsolved BUS=.devdata/1138_bus.mtx bash bench/daemon-jobs.sh gpu 1 2>&1
done | tee $OUT/daemon-jobs.txt
