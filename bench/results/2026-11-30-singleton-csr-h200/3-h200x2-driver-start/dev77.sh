#!/bin/bash
# nvidia-h200-x2, carry [".devpack", ".devdata"]: p256 .mtx with clsolve solve: can the driver's
# start (now inside MPI_Init: hwloc probes the GPUs) overlap the parse? A default; B hwloc without
# I/O devices (the driver then starts in the prewarm thread, beside the parse); C = B with the
# parse on nproc-1 threads (is the slowdown a straggler?); D = A with nproc-1.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head; uname -r) > $R/env.txt
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
N1=$(( $(nproc) - 1 ))
H=-pci,-opencl,-cuda,-nvml,-gl
for r in 1 2 3 4; do
  for v in A B C D; do
    env=(CLSOLVE_MM_PROFILE=1)
    case $v in B) env+=(HWLOC_COMPONENTS=$H) ;; C) env+=(HWLOC_COMPONENTS=$H CLSOLVE_MM_THREADS=$N1) ;; D) env+=(CLSOLVE_MM_THREADS=$N1) ;; esac
    s=$(date +%s.%N)
    env "${env[@]}" /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
    e=$(date +%s.%N)
    python3 - /tmp/r.json $s $e $v <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); t = j["times"]; wall = float(sys.argv[3]) - float(sys.argv[2])
print("%s wall %.3f solve %.3f wall-solve %.3f |" % (sys.argv[4], wall, t["solve_s"], wall - t["solve_s"]),
      " ".join("%s=%.3f" % (k, t[k]) for k in ("startup_s", "parse_s", "setup_s", "init_s", "upload_s", "gather_s", "total_s") if k in t), "it", j.get("iterations"))
PY
    grep -h "^csr_from_coo\|^mm_read" /tmp/r.err | sed 's/^/    /'
  done
done > $R/p256-start.txt 2>&1
uptime >> $R/env.txt; pack
for v in A C; do
  env=(CLSOLVE_TRACE=1)
  [ $v = C ] && env+=(HWLOC_COMPONENTS=$H CLSOLVE_MM_THREADS=$N1)
  env "${env[@]}" /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 > /dev/null 2> $R/trace-$v.txt
done
pack
