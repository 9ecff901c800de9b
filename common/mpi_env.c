/*
 * mpi_env.c: cls_mpi_singleton_env (mpi_env.h).
 */
#include "mpi_env.h"

#include <stdlib.h>

void cls_mpi_singleton_env(void)
{
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK"))
        return; /* launched by mpirun: its choices stand */
    static const char *const set[][2] = {
        {"OMPI_MCA_ess_singleton_isolated", "1"},
        {"OMPI_MCA_btl", "self"},
        {"OMPI_MCA_pml", "ob1"},
        {"OMPI_MCA_mtl", "^ofi"},
        {"OMPI_MCA_osc", "^ucx"},
        {"OMPI_MCA_coll", "^hcoll"},
        /* An isolated singleton's session directory is always
         * /tmp/ompi.HOST.UID/jf.0: every such process on the host shares it
         * and removes it at exit, so one process ending while another starts
         * fails the other's mkdir ("jf.0/1: No such file or directory"; seen
         * in CI with two clsolved starting at once). One rank with only the
         * self transport needs no session directory. */
        {"OMPI_MCA_orte_create_session_dirs", "0"},
        /* The topology without I/O devices: hwloc's PCI, OpenCL, CUDA and
         * NVML components start the GPU driver inside MPI_Init (0.15-0.18 s
         * on one H200 host, 0.37-0.42 s on a host of two), serially, before
         * anything else. A singleton binds nothing to a GPU, and its own
         * device start then runs in the prewarm thread beside the parse
         * (solver/dist/dwarm.c). With the pci plugin left out, hwloc's
         * linux component walks /sys/bus/pci itself and reads every
         * device's config space (3-4 ms a device on a VM: 15 of the 25 ms
         * MPI_Init took on the 2-core machine); "-linuxio" leaves out its
         * PCI, I/O, misc and annotate phases too (MPI_Init 9.5 ms). */
        {"HWLOC_COMPONENTS", "-linuxio,-pci,-opencl,-cuda,-nvml,-gl"},
    };
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        setenv(set[i][0], set[i][1], 0);
}
