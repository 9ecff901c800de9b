#!/bin/bash
# nvidia-h200: the devices' teardown on a thread beside the write of x (b1 = working tree) against
# 1ebce55 (b0), clsolve solve -o x.mtx on p200 and p256, alternated, the order swapped each round.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt 2>&1
mkdir -p /tmp/old && tar -C /tmp/old -xzf .devdata/old-1ebce55.tgz
( cmake -S /tmp/old -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j8 --target clsolve >/tmp/build0.log 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j8 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
wait
[ -x /tmp/b0/clsolve ] || { tail -30 /tmp/build0.log; exit 1; }
uptime >> $R/env.txt
for n in 200 256; do /tmp/b1/clsolve gen poisson3d $n -o /tmp/p$n.mtx >/dev/null; cat /tmp/p$n.mtx > /dev/null; done
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
one() { # build n tag
  rm -f /tmp/x.mtx; sync
  s=$(date +%s.%N)
  CLSOLVE_TRACE=1 /tmp/$1/clsolve solve /tmp/p$2.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x.mtx --json > /tmp/r.json 2>/tmp/r.err
  e=$(date +%s.%N)
  cp /tmp/r.err $R/err-$3.txt
  python3 - /tmp/r.json $s $e $3 <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); t = j["times"]; wall = float(sys.argv[3]) - float(sys.argv[2])
print("%s wall %.3f solve %.3f wall-solve %.3f |" % (sys.argv[4], wall, t["solve_s"], wall - t["solve_s"]),
      " ".join("%s=%.3f" % (k, t[k]) for k in ("parse_s", "setup_s", "gather_s", "write_s", "total_s") if k in t))
PY
  grep -h "solve: devices torn down\|solve: released\|command returned" /tmp/r.err | sed 's/^/    /'
}
for n in 200 256; do
  for r in 1 2 3 4 5 6 7; do
    if [ $((r % 2)) = 1 ]; then one b0 $n b0-p$n-$r; one b1 $n b1-p$n-$r; else one b1 $n b1-p$n-$r; one b0 $n b0-p$n-$r; fi
  done
done > $R/cli-o.txt 2>&1
rm -f /tmp/p200.mtx /tmp/p256.mtx /tmp/x.mtx
uptime >> $R/env.txt; pack
