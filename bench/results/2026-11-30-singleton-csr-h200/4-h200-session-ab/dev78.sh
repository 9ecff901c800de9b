#!/bin/bash
# nvidia-h200 (one GPU), carry [".devpack", ".devdata"]: this session's host-path changes (b1: the
# grouped mirror, hwloc without I/O devices for a singleton, the later prewarm join) against the
# session's start (b0 = 9216a28), alternated: p256 .mtx with clsolve solve; p200 POSTed to a
# one-rank daemon (host-path.sh, plain).
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head; uname -r) > $R/env.txt
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-9216a28.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j8 --target clsolve clsolved >/tmp/build0.log 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j8 --target clsolve clsolved >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
wait
[ -x /tmp/b0/clsolve ] || { tail -30 /tmp/build0.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
for r in 1 2 3 4 5; do
  for b in b1 b0; do
    s=$(date +%s.%N)
    CLSOLVE_MM_PROFILE=1 /tmp/$b/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
    e=$(date +%s.%N)
    python3 - /tmp/r.json $s $e $b <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); t = j["times"]; wall = float(sys.argv[3]) - float(sys.argv[2])
print("%s wall %.3f solve %.3f wall-solve %.3f |" % (sys.argv[4], wall, t["solve_s"], wall - t["solve_s"]),
      " ".join("%s=%.3f" % (k, t[k]) for k in ("startup_s", "parse_s", "setup_s", "partition_s", "init_s", "upload_s", "gather_s", "total_s") if k in t), "it", j.get("iterations"))
PY
    grep -h "^csr_from_coo" /tmp/r.err | sed 's/^/    /'
  done
done > $R/p256-ab.txt 2>&1
CLSOLVE_TRACE=1 /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 > /dev/null 2> $R/trace-b1.txt
rm -f /tmp/p256.mtx
uptime >> $R/env.txt; pack
for b in b1 b0 b1; do
  WORK=/tmp/hp BUILD=/tmp/$b N=200 REPS=5 DEVICE=gpu DAEMONS=plain bash bench/host-path.sh > $R/hp-$b-$(date +%s).log 2>&1
  uptime >> $R/env.txt; pack
done
