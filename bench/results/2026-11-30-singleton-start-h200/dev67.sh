#!/bin/bash
# one H200: where a singleton clsolve's MPI start (startup_s 0.25-0.5 s on
# the GPU hosts, 0.09 s on the 2-core VM) goes: env variations, 3 runs each
source .devpack/setup.sh >/dev/null 2>&1
export CLSOLVE_TUNE_DIR=/tmp/tune
R=$OUT/r; mkdir -p $R
(nproc; nvidia-smi -L; uptime; ompi_info --version 2>&1 | head -2; ompi_info 2>/dev/null | grep -i "cuda\|hwloc" | head -10) > $R/env.txt
cmake -S . -B /tmp/b1 -DCMAKE_BUILD_TYPE=Release -DCLSOLVE_PREBUILD_PROGRAMS=OFF >/dev/null && cmake --build /tmp/b1 -j16 --target clsolve >/dev/null 2>&1
/tmp/b1/clsolve gen poisson3d 20 -o /tmp/p20.mtx >/dev/null
/tmp/b1/clsolve solve /tmp/p20.mtx --device gpu > /dev/null 2>&1
run() {
  for i in 1 2 3; do
    s=$(date +%s.%N)
    env "$@" /tmp/b1/clsolve solve /tmp/p20.mtx --device gpu --json 2>/dev/null > /tmp/o.json
    e=$(date +%s.%N)
    python3 -c "import json,sys; t=json.load(open('/tmp/o.json'))['times']; print('%-60s wall %.3f startup %.3f init %.3f total %.3f' % (sys.argv[1], float(sys.argv[3])-float(sys.argv[2]), t['startup_s'], t['init_s'], t['total_s']))" "$*" $s $e >> $R/startup.txt
  done
}
run X=1
run OMPI_MCA_opal_cuda_support=0
run HWLOC_COMPONENTS=-pci,-opencl,-cuda,-nvml,-gl
run OMPI_MCA_opal_cuda_support=0 HWLOC_COMPONENTS=-pci,-opencl,-cuda,-nvml,-gl
run OMPI_MCA_hwloc_base_use_hwthreads_as_cpus=0 OMPI_MCA_rmaps_base_oversubscribe=1
cat > /tmp/mi.c <<'CEOF'
#include <mpi.h>
#include <stdio.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(void){double a=now();int p;MPI_Init_thread(NULL,NULL,MPI_THREAD_FUNNELED,&p);double b=now();MPI_Finalize();printf("MPI_Init_thread %.3f s, finalize %.3f s\n",b-a,now()-b);return 0;}
CEOF
mpicc -O2 /tmp/mi.c -o /tmp/mi 2>> $R/env.txt
for v in "X=1" "OMPI_MCA_ess_singleton_isolated=1 OMPI_MCA_btl=self OMPI_MCA_pml=ob1 OMPI_MCA_mtl=^ofi OMPI_MCA_osc=^ucx OMPI_MCA_coll=^hcoll OMPI_MCA_orte_create_session_dirs=0" ; do
  for i in 1 2 3; do echo "$v: $(env $v /tmp/mi)" >> $R/startup.txt; done
done
( env OMPI_MCA_ess_singleton_isolated=1 OMPI_MCA_btl=self OMPI_MCA_pml=ob1 OMPI_MCA_mtl=^ofi OMPI_MCA_osc=^ucx OMPI_MCA_coll=^hcoll OMPI_MCA_orte_create_session_dirs=0 strace -f -c -o $R/strace-c.txt /tmp/mi ) >/dev/null 2>&1
( env OMPI_MCA_ess_singleton_isolated=1 OMPI_MCA_btl=self OMPI_MCA_pml=ob1 OMPI_MCA_mtl=^ofi OMPI_MCA_osc=^ucx OMPI_MCA_coll=^hcoll OMPI_MCA_orte_create_session_dirs=0 strace -f -tt -e trace=openat,execve,clone -o $R/strace-t.txt /tmp/mi ) >/dev/null 2>&1
tar -C $OUT -czf $OUT/r.tgz r
