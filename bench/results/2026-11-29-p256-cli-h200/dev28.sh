source .devpack/setup.sh >/dev/null 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
export CLSOLVE_TUNE_DIR=/tmp/tune
uptime
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; ls -la /tmp/p256.mtx; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
for r in 1 2 3; do
  s=$(date +%s.%N)
  /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/dev/null
  e=$(date +%s.%N)
  python3 - /tmp/r.json $s $e <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); t = j["times"]; wall = float(sys.argv[3]) - float(sys.argv[2])
print("p256 wall %.3f solve %.3f wall-solve %.3f |" % (wall, t["solve_s"], wall - t["solve_s"]),
      " ".join("%s=%.3f" % (k, t[k]) for k in ("startup_s", "parse_s", "setup_s", "partition_s", "init_s", "upload_s", "gather_s", "write_s", "total_s") if k in t))
PY
done | tee $OUT/p256-cli.txt
CLSOLVE_TRACE=1 /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 2>&1 | grep trace | head -60 > $OUT/p256-trace.txt
uptime
