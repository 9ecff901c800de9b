#!/bin/bash
# nvidia-h200: where the p256 CLI's wall beyond the solve goes: exec -> main, main -> return, exit
# (trace epochs against date), the 16-core mm profile; b1 = working tree (sole part's halo fill
# parallel, no identity scan; CLSOLVE_EXIT=quick switch) against b0 = f0d326f.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head; uname -r; which perf strace ltrace) > $R/env.txt 2>&1
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-f0d326f.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j8 --target clsolve >/tmp/build0.log 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j8 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
wait
[ -x /tmp/b0/clsolve ] || { tail -30 /tmp/build0.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
one() { # build exitmode tag
  s=$(date +%s.%N)
  CLSOLVE_EXIT=$2 CLSOLVE_TRACE=1 CLSOLVE_MM_PROFILE=1 /tmp/$1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
  e=$(date +%s.%N)
  cp /tmp/r.err $R/err-$3.txt
  python3 - /tmp/r.json $s $e $3 /tmp/r.err <<'PY'
import json, sys, re
j = json.load(open(sys.argv[1])); t = j["times"]; s = float(sys.argv[2]); e = float(sys.argv[3])
wall = e - s
err = open(sys.argv[5]).read()
m = re.search(r"epoch ([0-9.]+)", err)
ep = float(m.group(1)) if m else float("nan")
last = [float(l.split()[1]) for l in err.splitlines() if l.startswith("[trace]") and "s (+" in l]
tl = max(last) if last else float("nan")
print("%s wall %.3f solve %.3f wall-solve %.3f | exec->firsttrace %.3f lasttrace %.3f after %.3f |" % (
    sys.argv[4], wall, t["solve_s"], wall - t["solve_s"], ep - s, tl, e - ep - tl),
    " ".join("%s=%.3f" % (k, t[k]) for k in ("startup_s", "parse_s", "setup_s", "partition_s", "init_s", "upload_s", "gather_s", "total_s") if k in t))
PY
  grep -h "^csr_from_coo\|^mm_read_csr" /tmp/r.err | sed 's/^/    /'
}
for r in 1 2 3 4 5 6 7; do
  one b1 full b1-$r; one b1 quick b1q-$r; one b0 full b0-$r
done > $R/p256.txt 2>&1
pack
LD_DEBUG=statistics /tmp/b1/clsolve solve gen:poisson3d:16 --device gpu > /dev/null 2> $R/ld-stats.txt
if which perf >/dev/null 2>&1; then
  perf record -g -o /tmp/perf.data /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 >/dev/null 2>&1
  perf report -i /tmp/perf.data --no-children --stdio 2>/dev/null | head -150 > $R/perf.txt
fi
rm -f /tmp/p256.mtx
uptime >> $R/env.txt; pack
