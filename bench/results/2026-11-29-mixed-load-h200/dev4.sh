source .devpack/setup.sh >/dev/null 2>&1
here=$PWD
rm -rf /tmp/old && mkdir /tmp/old && cp -a . /tmp/old/ && (cd /tmp/old && patch -R -p1 < "$here/.devdata/sched.patch" | tail -1)
grep -c "big_run" /tmp/old/net/scheduler.c
cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j16 --target clsolve clsolved >/tmp/build0.log 2>&1 || { tail -20 /tmp/build0.log; exit 1; }
[ -f /tmp/p256.mtx ] || /tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null
export CLSOLVE_TUNE_DIR=/tmp/tune DAEMON_ARGS="--max-upload 8000000000" LARGE_QUERY="tol=1e-30&maxiter=4000"
uptime
for rep in 1 2; do
  echo "== small load alone (this commit)"
  JOBS=400 LANES=4 MODES=lanes CLSOLVED=/tmp/b1/clsolved BUS=.devdata/1138_bus.mtx bash bench/daemon-jobs.sh gpu 1 2>&1 | grep -v "^load"
  echo "== with the large job running (this commit: the exclusive lane)"
  LARGE=/tmp/p256.mtx JOBS=400 LANES=4 MODES=lanes CLSOLVED=/tmp/b1/clsolved BUS=.devdata/1138_bus.mtx bash bench/daemon-jobs.sh gpu 1 2>&1 | grep -v "^load"
  echo "== with the large job running (before: the large job exclusive)"
  LARGE=/tmp/p256.mtx JOBS=400 LANES=4 MODES=lanes CLSOLVED=/tmp/b0/clsolved BUS=.devdata/1138_bus.mtx bash bench/daemon-jobs.sh gpu 1 2>&1 | grep -v "^load"
done | tee $OUT/mixed2.txt
