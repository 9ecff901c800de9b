#!/bin/bash
# nvidia-h200: x written as text. b0 = 5904d44 (snprintf's %.17g, 1 Mi-entry jobs, rounds written
# by the caller) against b1 = HEAD (cls_fmt_g17, 64 Ki-entry jobs on the pool, a writer thread,
# sync_file_range; CLSOLVE_WRITE_EARLY=0 leaves the last out): clsolve solve -o on p200 and p256,
# alternated; then host-path.sh (the CLI with and without -o, the daemon's .mtx and .npy) for both.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; df -h /tmp; mount | grep -E ' / | /tmp ') > $R/env.txt 2>&1
mkdir -p /tmp/s0 && tar -xzf .devdata/old-5904d44.tgz -C /tmp/s0
for b in 0 1; do
  src=/tmp/s0; [ $b = 1 ] && src=.
  cmake -S $src -B /tmp/b$b -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b$b -j16 --target clsolve clsolved > /tmp/b$b.log 2>&1 || { tail -20 /tmp/b$b.log; exit 1; }
done
uptime >> $R/env.txt
W=/tmp/xw; mkdir -p $W
for n in 200 256; do /tmp/b1/clsolve gen poisson3d $n -o $W/p$n.mtx >/dev/null; cat $W/p$n.mtx > /dev/null; done
/tmp/b1/clsolve solve gen:poisson3d:16 --device gpu >/dev/null 2>&1
one() { # tag bin env n
  local s e; s=$(date +%s.%N)
  env $3 CLSOLVE_TRACE=1 $2 solve $W/p$4.mtx --device gpu --precond jacobi --tol 1e-8 -o $W/x-$1.mtx --json > $W/r.json 2> $W/r.err
  e=$(date +%s.%N)
  python3 - $1 $4 $s $e $W/r.json $W/r.err <<'PY' >> $R/write.txt
import sys,json,re
tag,n,s,e,jf,ef=sys.argv[1:]; j=json.load(open(jf)); t=j["times"]; err=open(ef).read()
tr={}
for m in re.finditer(r"\[trace\]\s+([0-9.]+) s \(\+[0-9.]+ s\) (.*)", err): tr.setdefault(m.group(2).strip(), float(m.group(1)))
fm=[v for k,v in tr.items() if k.startswith("mm_write:") and "formatted" in k]
fs=tr.get("mm_write: fsync done", float("nan"))
print("%s p%s wall %.4f solve %.4f write_s %.4f wall_minus_solve %.4f formatted %.4f fsync %.4f" % (tag,n,float(e)-float(s),t["solve_s"],t.get("write_s",float("nan")),float(e)-float(s)-t["solve_s"], (fm[0] if fm else float("nan")), fs-(fm[0] if fm else float("nan"))))
PY
}
for n in 200 256; do
  for i in 1 2 3 4 5 6; do
    if [ $((i % 2)) = 1 ]; then one b0 /tmp/b0/clsolve "" $n; one b1 /tmp/b1/clsolve "" $n; one b1late /tmp/b1/clsolve CLSOLVE_WRITE_EARLY=0 $n
    else one b1late /tmp/b1/clsolve CLSOLVE_WRITE_EARLY=0 $n; one b1 /tmp/b1/clsolve "" $n; one b0 /tmp/b0/clsolve "" $n; fi
  done
  cmp $W/x-b0.mtx $W/x-b1.mtx && echo "p$n: x.mtx the same bytes from b0 and b1" | tee -a $R/write.txt
  cmp $W/x-b0.mtx $W/x-b1late.mtx && echo "p$n: and from b1late" | tee -a $R/write.txt
done
python3 - $R/write.txt <<'PY' | tee $R/write-summary.txt
import sys,statistics as st
rows={}
for l in open(sys.argv[1]):
    w=l.split()
    if len(w)<4 or w[2]!="wall": continue
    d=dict(zip(w[2::2],map(float,w[3::2])))
    for k,v in d.items(): rows.setdefault((w[1],w[0],k),[]).append(v)
for (n,tag,k),v in sorted(rows.items()):
    if k in ("wall","write_s","wall_minus_solve","formatted","fsync"): print("%s %-7s %-17s min %.4f median %.4f (%d)"%(n,tag,k,min(v),st.median(v),len(v)))
PY
uptime >> $R/env.txt
for b in 0 1; do
  WORK=/tmp/hp BUILD=/tmp/b$b N=200 REPS=3 DEVICE=gpu DAEMONS=plain timeout 240 bash bench/host-path.sh > $R/host-path-b$b.log 2>&1
  echo "== b$b"; tail -6 $R/host-path-b$b.log
done
uptime >> $R/env.txt
pack
