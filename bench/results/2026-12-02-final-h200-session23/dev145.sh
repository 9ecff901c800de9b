#!/bin/bash
# nvidia-h200: the session's final code on the GPU host: test_amg_dsetup, test_formats and the reader's
# tests (test_mm, test_mm_limits, test_mm_range, test_sparse: 16 threads' ranges); p256's x from HEAD
# against edd70c0's (before the reader's scanners moved to mm_scan.c), byte for byte
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; uptime; git log --oneline -1) > $R/env.txt 2>&1
mkdir -p /tmp/s0 && tar -C /tmp/s0 -xzf .devdata/old-edd70c0.tgz
T="clsolve test_amg_dsetup test_formats test_mm test_mm_limits test_mm_range test_sparse"
cmake -S /tmp/s0 -B /tmp/b0 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b0 -j8 --target clsolve > /tmp/b0.log 2>&1 &
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target $T > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
wait
[ -x /tmp/b0/clsolve ] || { tail -20 /tmp/b0.log; exit 1; }
for t in test_amg_dsetup test_formats test_mm test_mm_limits test_mm_range test_sparse; do
  (cd /tmp/b1/tests && timeout 300 ./$t > /tmp/$t.out 2>&1; echo "$t exit $?"; grep -E "CHECK failed|FAIL" /tmp/$t.out | head -5; tail -2 /tmp/$t.out) > $R/$t.txt 2>&1
done
/tmp/b1/clsolve gen poisson3d 256 -o /tmp/p256.mtx >/dev/null
/tmp/b0/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x0.mtx > $R/o0.txt 2>&1
/tmp/b1/clsolve solve /tmp/p256.mtx --device gpu --precond jacobi --tol 1e-8 -o /tmp/x1.mtx > $R/o1.txt 2>&1
(cmp /tmp/x0.mtx /tmp/x1.mtx && echo "p256 x: identical bytes (edd70c0 against HEAD)") > $R/x.txt 2>&1
for f in .devdata/shared-mtx/*; do [ -f "$f" ] || continue; a=$(/tmp/b0/clsolve check "$f" 2>&1 | grep -v "parsed:" | md5sum); b=$(/tmp/b1/clsolve check "$f" 2>&1 | grep -v "parsed:" | md5sum); [ "$a" = "$b" ] && echo "same  $(basename $f)" || echo "DIFF  $(basename $f)"; done > $R/check-shared.txt 2>&1
uptime >> $R/env.txt
cat $R/env.txt $R/test_*.txt $R/x.txt; sort $R/check-shared.txt | uniq -c -w5
