#!/bin/bash
# nvidia-h200: does the ICD loader start PoCL beside the GPU driver, and what does that cost
# at the start and at the exit? ocl_floor and p256's host phases with the loader's default
# against OCL_ICD_VENDORS naming the NVIDIA ICD alone.
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -czf $OUT/r.tgz r; }
(nproc; uptime; env | grep -i 'ocl\|opencl'; ls -la /etc/OpenCL/vendors; head /etc/OpenCL/vendors/*.icd;
 ldconfig -p | grep -i 'opencl\|pocl'; for l in $(ldconfig -p | awk '/libOpenCL.so.1 /{print $NF}'); do readlink -f $l; strings $l | grep -i 'OCL_ICD\|OPENCL_'; done;
 dpkg -l | grep -i 'icd\|pocl\|opencl') > $R/env.txt 2>&1
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve > /tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; }
cc -O2 bench/ocl_floor.c -o /tmp/ocl_floor -lOpenCL
NV=/etc/OpenCL/vendors/nvidia.icd
LD_DEBUG=files /tmp/ocl_floor 64 2>&1 | grep -i 'calling init\|calling fini' | awk '{print $NF}' | sort | uniq -c > $R/libs-default.txt
OCL_ICD_VENDORS=$NV LD_DEBUG=files /tmp/ocl_floor 64 2>&1 | grep -i 'calling init\|calling fini' | awk '{print $NF}' | sort | uniq -c > $R/libs-nv.txt
wc -l $R/libs-*.txt; grep -i 'pocl\|llvm' $R/libs-*.txt | head
uptime >> $R/env.txt
for i in 1 2 3 4 5 6 7 8 9 10; do
  for side in default nv; do
    if [ $side = nv ]; then E="OCL_ICD_VENDORS=$NV"; else E=; fi
    s=$(date +%s.%N); env $E /tmp/ocl_floor 64 > /tmp/of.txt; e=$(date +%s.%N)
    python3 - $side $s $e /tmp/of.txt <<'PY' >> $R/floor.txt
import sys,re
side,s,e,f=sys.argv[1],float(sys.argv[2]),float(sys.argv[3]),open(sys.argv[4]).read()
g=lambda k: float(re.search(r"^%s ([0-9.]+)"%k,f,re.M).group(1))
print(side, "main %.3f platforms %.3f started %.3f release %.3f exit %.3f wall %.3f" % (g("main")-s, g("platforms")-g("main"), g("started")-g("main"), g("released")-g("buffers released"), e-g("released"), e-s))
PY
  done
done
python3 - $R/floor.txt <<'PY'
import sys,statistics as st
rows={}
for l in open(sys.argv[1]):
    w=l.split(); side=w[0]; d=dict(zip(w[1::2],map(float,w[2::2])))
    for k,v in d.items(): rows.setdefault((side,k),[]).append(v)
for (side,k),v in sorted(rows.items()): print("%-8s %-10s min %.3f median %.3f" % (side,k,min(v),st.median(v)))
PY
uptime >> $R/env.txt
WORK=/tmp/hph B=/tmp/b1/clsolve B_ENV="OCL_ICD_VENDORS=$NV" N=256 ROUNDS=8 DEVICE=gpu bash bench/host-phases.sh > $R/host-phases.txt 2>&1
tail -24 $R/host-phases.txt
uptime >> $R/env.txt
pack
