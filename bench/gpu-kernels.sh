#!/usr/bin/env bash
# bench/gpu-kernels.sh: the kernel issue's GPU measurements in ONE call on the
# device machine (../shared/DEVICE.md), under 8 minutes on one H200:
#   source .devpack/setup.sh && bash bench/gpu-kernels.sh
#  1. Release build; the devices;
#  2. clsolve tune (exhaustive grid, early stop replayed on it) for 7-point
#     poisson3d N = 64, 128, 256 and the 27-point stencil N = 64, 128, into a
#     fresh tuning database ($OUT/tuning);
#  3. clsolve bench, tuned: 7-point N = 64, 128, 256, 320; 27-point N = 64, 128, 256;
#     then untuned (empty database) 7-point N = 64, 128, 256; the formats side
#     by side at N = 128 and 256; mixed precision at 256;
#  4. the peers on the same matrices in the same command: ViennaCL 1.7.1's
#     OpenCL CG and CuPy's CG, 7-point N = 64, 128, 256 (and 27-point 64, 128);
#  5. a final comparison table (ms per CG iteration) and $OUT/summary.json.
# Every step has its own time limit, so one slow step cannot sink the rest;
# a step that fails prints why and the script goes on. Results: stdout and
# $OUT/*.json, *.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/clsolve-out}
mkdir -p "$OUT"
B=${BUILD:-/tmp/b}
T0=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - T0 )) s] $*"; }

stamp "build"
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build "$B" -j16 --target clsolve >"$OUT/build.log" 2>&1 || {
    tail -30 "$OUT/build.log"; echo "build failed"; exit 1; }
C=$B/clsolve
git rev-parse --short HEAD 2>/dev/null | sed 's/^/commit /'
git status --porcelain 2>/dev/null | head -5 | sed 's/^/dirty: /'
$C devices
nvidia-smi --query-gpu=name,driver_version,clocks.current.memory,clocks.current.sm --format=csv 2>/dev/null

# peers build in the background while clsolve tunes (CPU work only)
( g++ -O3 -std=c++11 -DCL_TARGET_OPENCL_VERSION=120 bench/peers/viennacl_cg.cpp -lOpenCL \
      -o /tmp/vcl >"$OUT/vcl-build.log" 2>&1 && echo ok >"$OUT/vcl-built" ) &
VCL_PID=$!

export CLSOLVE_TUNE_DIR="$OUT/tuning"
rm -rf "$CLSOLVE_TUNE_DIR"
stamp "tune: 7-point poisson3d 64,128,256 (exhaustive)"
timeout 170 $C tune --device gpu --sizes 64,128,256 --exhaustive | tee "$OUT/tune-p7.txt"
stamp "tune: 27-point 64,128 (exhaustive)"
timeout 60 $C tune --device gpu --stencil poisson3d27 --sizes 64,128 --exhaustive |
    tee "$OUT/tune-p27.txt"
ls -l "$CLSOLVE_TUNE_DIR" 2>/dev/null
cp "$CLSOLVE_TUNE_DIR"/*.json "$OUT/tuning-db.json" 2>/dev/null

stamp "bench: tuned, 7-point 64,128,256,320"
timeout 90 $C bench --device gpu --sizes 64,128,256,320 --iters 200 --json >"$OUT/bench-p7.json"
python3 - "$OUT/bench-p7.json" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("bench-p7: no result:", e); sys.exit(0)
print("copy bandwidth %.0f GB/s" % j["copy_bandwidth_gb_per_s"])
print("%-5s %-14s %9s %9s %7s %9s %7s  %s" % ("N", "format", "fused", "floor", "x floor",
      "classic", "x floor", "kernels ms (GB/s)"))
for r in j["results"]:
    ks = " ".join("%s %.4f%s" % (k, v["ms"], " (%.0f)" % v["gb_per_s"] if "gb_per_s" in v else "")
                  for k, v in r["kernels"].items())
    c = r.get("classic", {})
    print("%-5d %-14s %9.4f %9.4f %7.2f %9.4f %7.2f  %s [%s]" % (r["n"], r["format_detail"],
          r["ms_per_iteration"], r["floor_ms"], r["ratio_to_floor"], c.get("ms_per_iteration", 0),
          c.get("ratio_to_floor", 0), ks, r["config"]["source"]))
PY
stamp "bench: tuned, 27-point 64,128,256"
timeout 80 $C bench --device gpu --stencil poisson3d27 --sizes 64,128,256 --iters 200 |
    tee "$OUT/bench-p27.txt"
stamp "bench: untuned (empty database), 7-point 64,128,256"
CLSOLVE_TUNE_DIR="$OUT/empty-tuning" timeout 60 $C bench --device gpu --sizes 64,128,256 \
    --iters 200 --no-classic | tee "$OUT/bench-untuned.txt"
stamp "bench: formats side by side, 7-point 128,256 (fused CG)"
for f in csr csr-vector adaptive sell; do
    timeout 40 $C bench --device gpu --sizes 128,256 --iters 100 --reps 10 --no-classic \
        --format $f | grep -v '^N ' | grep -v '^device' | sed "s/^/$f: /"
done | tee "$OUT/bench-formats.txt"
stamp "bench: mixed precision, 7-point 256"
timeout 30 $C bench --device gpu --sizes 256 --iters 200 --precision mixed --no-classic |
    tee "$OUT/bench-mixed.txt"
stamp "solve: poisson3d 128, mixed precision reaches 1e-10 (true residual)"
$C gen poisson3d 128 -o /tmp/p128.mtx >/dev/null 2>&1 &&
    timeout 30 $C solve /tmp/p128.mtx --precision mixed --tol 1e-10 --json >"$OUT/solve-mixed.json"
python3 -c "import json;j=json.load(open('$OUT/solve-mixed.json'));print('mixed p128:',j.get('iterations'),'its, true residual',j.get('true_relative_residual'),j.get('times'))" 2>/dev/null

stamp "peers"
wait $VCL_PID
PEERS="$OUT/peers.jsonl"
: >"$PEERS"
if [ -f "$OUT/vcl-built" ]; then
    for n in 64 128 256; do timeout 40 /tmp/vcl $n 200 3 >>"$PEERS"; done
    for n in 64 128; do timeout 30 /tmp/vcl $n 200 3 27 | sed 's/}$/, "stencil": 27}/' >>"$PEERS"; done
else
    tail -5 "$OUT/vcl-build.log"; echo "ViennaCL build failed"
fi
for n in 64 128 256; do timeout 60 python3 bench/peers/cupy_cg.py --n $n --iters 200 >>"$PEERS"; done
for n in 64 128; do timeout 40 python3 bench/peers/cupy_cg.py --n $n --iters 200 --stencil 27 |
    sed 's/}$/, "stencil": 27}/' >>"$PEERS"; done
cat "$PEERS"

stamp "comparison"
python3 - "$OUT" <<'PY'
import json, os, re, sys
out = sys.argv[1]
def load(p):
    try:
        return json.load(open(os.path.join(out, p)))
    except Exception:
        return None
b = load("bench-p7.json")
mine = {r["n"]: r for r in (b or {}).get("results", [])}
peers = {}
for line in open(os.path.join(out, "peers.jsonl")):
    try:
        j = json.loads(line)
    except Exception:
        continue
    st = j.get("stencil", 7)
    name = "viennacl" if "viennacl" in j["peer"] else "cupy"
    peers[(name, st, j["n"])] = j["ms_per_iteration"]
untuned = {}
try:
    for line in open(os.path.join(out, "bench-untuned.txt")):
        m = re.match(r"^(\d+)\s+\d+\s+\d+\s+\S+\s+([\d.]+)", line)
        if m:
            untuned[int(m.group(1))] = float(m.group(2))
except Exception:
    pass
print("7-point poisson3d, double, ms per CG iteration (same command, same device)")
print("%-5s %10s %9s %8s %10s %10s %9s %9s %s" % ("N", "clsolve", "floor", "x floor", "untuned",
      "classic", "ViennaCL", "CuPy", "verdict"))
summary = []
for n in (64, 128, 256, 320):
    r = mine.get(n)
    if not r:
        continue
    v, c = peers.get(("viennacl", 7, n)), peers.get(("cupy", 7, n))
    ms = r["ms_per_iteration"]
    ok = all(p is None or ms < p for p in (v, c))
    goal = []
    if n == 256: goal.append("<=1.15x floor: %s" % ("met" if r["ratio_to_floor"] <= 1.15 else "missed"))
    if n == 64: goal.append("<=0.040 ms: %s" % ("met" if ms <= 0.040 else "missed"))
    if v is not None or c is not None: goal.append("beats peers: %s" % ("yes" if ok else "no"))
    print("%-5d %10.4f %9.4f %8.2f %10s %10.4f %9s %9s %s" % (n, ms, r["floor_ms"], r["ratio_to_floor"],
          "%.4f" % untuned[n] if n in untuned else "-", r.get("classic", {}).get("ms_per_iteration", 0),
          "%.4f" % v if v else "-", "%.4f" % c if c else "-", "; ".join(goal)))
    summary.append({"n": n, "clsolve_ms": ms, "floor_ms": r["floor_ms"], "ratio_to_floor": r["ratio_to_floor"],
                    "format": r["format_detail"], "untuned_ms": untuned.get(n), "viennacl_ms": v, "cupy_ms": c,
                    "classic_ms": r.get("classic", {}).get("ms_per_iteration")})
json.dump({"device_bench": b and {k: b[k] for k in ("device", "driver", "copy_bandwidth_gb_per_s")},
           "rows": summary, "peers_27": {"%s-%d" % (k[0], k[2]): v for k, v in peers.items() if k[1] == 27}},
          open(os.path.join(out, "summary.json"), "w"), indent=1)
p27 = {k: v for k, v in peers.items() if k[1] == 27}
if p27:
    print("27-point peers:", ", ".join("%s N=%d %.4f" % (k[0], k[2], v) for k, v in sorted(p27.items())))
PY
stamp "done"
