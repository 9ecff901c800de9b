#!/bin/bash
# nvidia-h200: the host's memory bandwidth (bench/host_bw.c, 16 and 15 threads) and, in the same
# call, p256's host phases (count, text, assembly, checks, staging fill) timed by the reader's
# profile and the trace, for the bytes each must move over the measured bandwidth.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; git log --oneline -1; git status --short | head -5; lscpu | grep -E "Model name|Socket|NUMA node\(s\)|L3"; free -g | head -2) > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
gcc -O2 -march=native -std=gnu17 -pthread bench/host_bw.c -o /tmp/host_bw || exit 1
uptime >> $R/env.txt
/tmp/host_bw 2048 16 7 > $R/bw16-first.txt 2>&1   # a fresh VM: the first touches of its memory
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null; cat /tmp/p256.mtx > /dev/null
stat -c %s /tmp/p256.mtx > $R/filesize.txt; sed -n 3p /tmp/p256.mtx >> $R/filesize.txt
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
for r in 1 2 3 4 5 6 7 8; do
  s=$(date +%s.%N)
  CLSOLVE_TRACE=1 CLSOLVE_MM_PROFILE=1 /tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 --json > /tmp/r.json 2>/tmp/r.err
  e=$(date +%s.%N)
  echo "=== $r wall $(python3 -c "print(round($e-$s,4))") solve $(python3 -c "import json; print(json.load(open('/tmp/r.json'))['times']['solve_s'])")" >> $R/err-all.txt
  cat /tmp/r.err >> $R/err-all.txt
done
/tmp/host_bw 2048 16 7 > $R/bw16.txt 2>&1
/tmp/host_bw 2048 15 7 > $R/bw15.txt 2>&1
/tmp/host_bw 2048 1 5 > $R/bw1.txt 2>&1
uptime >> $R/env.txt
python3 - $R > $R/summary.txt <<'PY'
import sys, re, statistics as st
R = sys.argv[1]
F = int(open(R + "/filesize.txt").read().split()[0])
n, _, E = map(int, open(R + "/filesize.txt").read().split("\n")[1].split())
N = 2 * E - n
bw = {}
for l in open(R + "/bw16.txt"):
    m = re.match(r"(\w+) GB/s ([0-9.]+) ([0-9.]+)", l)
    if m: bw[m.group(1)] = float(m.group(2))
runs = open(R + "/err-all.txt").read().split("=== ")[1:]
ph = {}
for r in runs:
    tr = {}
    for l in r.splitlines():
        m = re.search(r"\[trace\]\s+([0-9.]+) s \(\+[0-9.]+ s\) (.*)$", l)
        if m: tr.setdefault(m.group(2).strip(), float(m.group(1)))
        if l.startswith("mm_read_csr"):
            for k in ("count", "parse", "csr"):
                m = re.search(r"\b%s ([0-9.]+) ms" % k, l)
                if m: ph.setdefault(k, []).append(float(m.group(1)) / 1e3)
        if l.startswith("csr_from_coo"):
            m = re.search(r"count\+rowptr ([0-9.]+) ms.*scatter ([0-9.]+) ms", l)
            if m:
                ph.setdefault("asm_count", []).append(float(m.group(1)) / 1e3)
                ph.setdefault("asm_scatter", []).append(float(m.group(2)) / 1e3)
    fills = []
    up = False
    for l in r.splitlines():
        if "la_csr_upload: begin" in l: up = True
        if "dsys_open: matrix up" in l: up = False
        m = re.search(r"staged write done: \d+ pieces, ([0-9.]+) MB, fill ([0-9.]+) ms", l)
        if m and up: fills.append((float(m.group(1)), float(m.group(2))))
    ph.setdefault("checks", []).append(tr["input: read (or header of the generator)"] - tr["input: matrix read (the checks follow)"])
    ph.setdefault("fill", []).append(sum(f for _, f in fills) / 1e3)
    ph.setdefault("upload", []).append(tr["dsys_open: matrix up"] - tr["la_csr_upload: begin"])
    ph.setdefault("staged_MB", []).append(sum(b for b, _ in fills))
    w = float(r.split()[2]); s = float(r.split()[4])
    ph.setdefault("wall_minus_solve", []).append(w - s)
S = st.median(ph["staged_MB"]) * 1e6
# the bytes each phase must move at the least (no write-allocate traffic counted)
model = [
    ("count (newlines)", "count", F, 0, "read"),
    ("text (parse into COO)", "parse", F, 16 * E, "copy"),
    ("assembly: counts and row pointers", "asm_count", 8 * E, 8 * (n + 1), "copy"),
    ("assembly: scatter", "asm_scatter", 16 * E, 12 * N, "copy"),
    ("checks (b = A*1, D^-1, max |a|)", "checks", 8 * (n + 1) + 12 * N, 16 * n, "copy"),
    ("staging fill (matrix)", "fill", S, S, "copy"),
]
print("file %d bytes, n %d, stored %d, full nnz %d; host bandwidth (16 threads, best): %s" % (F, n, E, N, bw))
print("| phase | bytes read + written | floor at %s | measured min / median | over the floor |" % "copy/read bandwidth")
print("|---|---|---|---|---|")
tot_floor = tot_med = 0
for name, key, rd, wr, kind in model:
    b = rd + wr
    fl = b / (bw[kind] * 1e9)
    v = ph.get(key, [float("nan")])
    med = st.median(v)
    tot_floor += fl; tot_med += med
    if fl <= 0:
        continue
    print("| %s | %.2f GB | %.3f s | %.3f / %.3f s | %.1fx |" % (name, b / 1e9, fl, min(v), med, med / fl))
print("| all of these | | %.3f s | %.3f s (medians) | %.1fx |" % (tot_floor, tot_med, tot_med / tot_floor))
for k in ("csr", "upload", "wall_minus_solve"):
    v = ph[k]
    print("%s min %.3f median %.3f (n %d)" % (k, min(v), st.median(v), len(v)))
PY
pack
tail -4 $R/env.txt; cat $R/bw16-first.txt $R/bw16.txt $R/bw15.txt $R/bw1.txt $R/summary.txt
