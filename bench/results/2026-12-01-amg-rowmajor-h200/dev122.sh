#!/bin/bash
# nvidia-h200: amg_apply_block on row-major k-wide blocks (b1) against the column-major V-cycle
# (b0 = HEAD, and b1 with CLSOLVE_AMG_BLOCK=columns); unit tests on the GPU.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git status --short | head) > $R/env.txt 2>&1
mkdir -p /tmp/s0 && tar -C /tmp/s0 -xzf .devdata/old-head.tgz
bld() { cmake -S $1 -B $2 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build $2 -j8 --target $3 > $2.log 2>&1; }
bld /tmp/s0 /tmp/b0 clsolve & bld . /tmp/b1 "clsolve test_formats test_amg_dsetup test_amg_device"; wait
for b in b0 b1; do [ -x /tmp/$b/clsolve ] || { tail -20 /tmp/$b.log; exit 1; }; done
uptime >> $R/env.txt
SD=$(readlink -f ../shared/data 2>/dev/null || echo none)
for t in test_formats test_amg_dsetup test_amg_device; do (cd /tmp/b1/tests && timeout 300 ./$t $SD 2>&1 | tail -3) > $R/$t.txt 2>&1; done
for b in b0 b1; do /tmp/$b/clsolve solve gen:poisson3d:16 --device gpu --method bcg -b gen:random:8 --precond amg >/dev/null 2>&1; done
one() { # build tag k pc [env]
  b=$1; tag=$2; k=$3; pc=$4; shift 4
  env "$@" /tmp/$b/clsolve solve gen:poisson3d:256 --device gpu --precond $pc --tol 1e-8 ${k:+--method bcg -b gen:random:$k} --json 2>/tmp/r.err > /tmp/r.json
  python3 -c "import json; j=json.load(open('/tmp/r.json')); print('$tag solve %.4f it %d true %.3e setup %.3f' % (j['times']['solve_s'], j['iterations'], j['true_relative_residual'], j['times']['setup_s']))"
  grep "bcg profile by kernel" /tmp/r.err
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then o="b0 b1"; else o="b1 b0"; fi
  for b in $o; do one $b $b-amg8 8 amg; one $b $b-amg4 4 amg; one $b $b-amg1 "" amg; done
  one b1 bc-amg8 8 amg CLSOLVE_AMG_BLOCK=columns; one b1 bc-amg4 4 amg CLSOLVE_AMG_BLOCK=columns
done > $R/amg.txt 2>&1
one b1 b1-amg8-prof 8 amg CLSOLVE_BCG_PROFILE=1 >> $R/amg.txt 2>&1
one b1 b1-amg4-prof 4 amg CLSOLVE_BCG_PROFILE=1 >> $R/amg.txt 2>&1
one b1 b1-jac8-prof 8 jacobi CLSOLVE_BCG_PROFILE=1 >> $R/amg.txt 2>&1
uptime >> $R/env.txt
python3 - $R/amg.txt > $R/summary.txt <<'PY'
import sys, re, statistics as st
v = {}
for l in open(sys.argv[1]):
    m = re.match(r"(b\w)-(amg\d) solve ([0-9.]+) it (\d+)", l)
    if m: v.setdefault((m.group(2), m.group(1)), []).append((float(m.group(3)), int(m.group(4))))
for k in sorted(v):
    s = [a for a, _ in v[k]]
    print("%s %s solve min %.4f median %.4f it %s" % (k[0], k[1], min(s), st.median(s), sorted(set(b for _, b in v[k]))))
PY
grep -h "checks" $R/test_*.txt >> $R/summary.txt
pack
cat $R/summary.txt; grep "prof\|by kernel" $R/amg.txt | tail -6
