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
    };
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        setenv(set[i][0], set[i][1], 0);
}
