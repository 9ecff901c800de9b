source .devpack/setup.sh >/dev/null 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve clsolved >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
git log --oneline -1 2>/dev/null
uptime
export CLSOLVE_TUNE_DIR=/tmp/tune; /tmp/b1/clsolve tune --figures --device gpu 2>&1 | tail -3
for rep in 1 2 3; do
  JOBS=400 LANES=4 MODES="lanes nobatch" CLSOLVED=/tmp/b1/clsolved BUS=.devdata/1138_bus.mtx bash bench/daemon-jobs.sh gpu 1 2>&1
done | tee $OUT/batch-jobs.txt
echo "== no parameters (method auto, no preconditioner)"
for rep in 1 2; do
  JOBS=400 LANES=4 MODES="lanes nobatch" PARAMS="--param precond=none" CLSOLVED=/tmp/b1/clsolved BUS=.devdata/1138_bus.mtx bash bench/daemon-jobs.sh gpu 1 2>&1
done | tee $OUT/batch-jobs-none.txt
t0=$(date +%s.%N); /tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; echo "gen p256: $(echo "$(date +%s.%N) - $t0" | bc) s"
export DAEMON_ARGS="--max-upload 8000000000" LARGE_QUERY="tol=1e-30&maxiter=4000"
for rep in 1 2; do
  echo "== with the large job running: batches (now)"
  LARGE=/tmp/p256.mtx JOBS=400 LANES=4 MODES=lanes CLSOLVED=/tmp/b1/clsolved BUS=.devdata/1138_bus.mtx bash bench/daemon-jobs.sh gpu 1 2>&1 | grep -v "^load"
  echo "== with the large job running: --batch off"
  LARGE=/tmp/p256.mtx JOBS=400 LANES=4 MODES=nobatch CLSOLVED=/tmp/b1/clsolved BUS=.devdata/1138_bus.mtx bash bench/daemon-jobs.sh gpu 1 2>&1 | grep -v "^load"
done | tee $OUT/batch-mixed.txt
