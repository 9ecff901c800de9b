#!/bin/bash
# nvidia-h200: p256 `clsolve solve` wall - solve, b0 = 5890c34 (the session's start) against
# b1 = 3b62ca8 (SELL made on the device from CSR; the sort skipped for rows in order, checked in ph_window),
# and b1 with CLSOLVE_SELL_BUILD=host (b1h: the in-order skip alone); rotated, 7 rounds; x of b0
# and b1 compared byte for byte.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head) > $R/env.txt 2>&1
mkdir -p /tmp/old0 && tar -C /tmp/old0 -xzf .devdata/old-5890c34.tgz
( cmake -S /tmp/old0 -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j8 --target clsolve >/tmp/build0.log 2>&1 ) &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j8 --target clsolve >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
wait
[ -x /tmp/b0/clsolve ] || { tail -30 /tmp/build0.log; exit 1; }
uptime >> $R/env.txt
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
for b in b0 b1; do /tmp/$b/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1; done
one() { # build tag [env...]
  b=$1; tag=$2; shift 2
  s=$(date +%s.%N)
  env "$@" CLSOLVE_TRACE=1 CLSOLVE_MM_PROFILE=1 /tmp/$b/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
  e=$(date +%s.%N)
  cp /tmp/r.err $R/err-$tag.txt
  python3 - /tmp/r.json $s $e $tag <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); t = j["times"]; s = float(sys.argv[2]); e = float(sys.argv[3])
print("%s wall %.3f solve %.3f wall-solve %.3f it %d true %.3e |" % (sys.argv[4], e - s, t["solve_s"], e - s - t["solve_s"], j["iterations"], j["true_relative_residual"]),
    " ".join("%s=%.3f" % (k, t[k]) for k in ("startup_s", "parse_s", "setup_s", "gather_s", "total_s") if k in t))
PY
  grep -h "^csr_from\|staged write done\|SELL made on\|SELL planned\|matrix up" /tmp/r.err | sed 's/^/    /' | cut -c1-200
}
for r in 1 2 3 4 5 6 7 8 9; do
  case $((r % 3)) in
    1) one b0 b0-$r; one b1 b1-$r; one b1 b1h-$r CLSOLVE_SELL_BUILD=host;;
    2) one b1 b1-$r; one b1 b1h-$r CLSOLVE_SELL_BUILD=host; one b0 b0-$r;;
    0) one b1 b1h-$r CLSOLVE_SELL_BUILD=host; one b0 b0-$r; one b1 b1-$r;;
  esac
done > $R/p256.txt 2>&1
uptime >> $R/env.txt
python3 - $R/p256.txt $R > $R/summary.txt <<'PY'
import sys, re, glob, statistics as st
v = {}; su = {}
for l in open(sys.argv[1]):
    m = re.match(r"(b0|b1|b1h)-\d+ wall ([0-9.]+) solve ([0-9.]+) wall-solve ([0-9.]+).*setup_s=([0-9.]+)", l)
    if m: v.setdefault(m.group(1), []).append(float(m.group(4))); su.setdefault(m.group(1), []).append(float(m.group(5)))
for k in sorted(v): print(k, "p256 wall-solve min %.3f median %.3f n %d; setup_s min %.3f median %.3f" % (min(v[k]), st.median(v[k]), len(v[k]), min(su[k]), st.median(su[k])))
for k in sorted(v):
    f = {}
    for fn in glob.glob(sys.argv[2] + "/err-%s-*.txt" % k):
        t = open(fn).read()
        for key in ("window", "sort\\+merge", "scatter", "total"):
            m = re.search(r"^csr_from_coo.*?" + key + r" ([0-9.]+)", t, re.M)
            if m: f.setdefault(key.replace("\\", ""), []).append(float(m.group(1)))
        up = [float(x) for x in re.findall(r"staged write done: \d+ pieces, [0-9.]+ MB, fill ([0-9.]+) ms", t)]
        tr = dict((m2.group(2), float(m2.group(1))) for m2 in re.finditer(r"\[trace\]\s+([0-9.]+) s \(\+[0-9.]+ s\) (la_csr_upload: begin|dsys_open: matrix up)", t))
        if len(tr) == 2: f.setdefault("upload begin..matrix up ms", []).append(1e3 * (tr["dsys_open: matrix up"] - tr["la_csr_upload: begin"]))
    print("  %s: " % k + "; ".join("%s min %.1f median %.1f" % (key, min(x), st.median(x)) for key, x in f.items()))
PY
# x byte for byte: the old build's against the new (SELL from the device)
/tmp/b0/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x0.mtx > $R/o0.txt 2>&1
/tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x1.mtx > $R/o1.txt 2>&1
(cmp /tmp/x0.mtx /tmp/x1.mtx && echo "x: identical bytes") >> $R/summary.txt 2>&1
pack
cat $R/summary.txt
