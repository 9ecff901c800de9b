/*
 * test_mpi_env.c: cls_mpi_singleton_env (common/mpi_env.h), the environment
 * a process started without mpirun gives Open MPI and hwloc before MPI_Init.
 *
 * Three cases: a plain process gets the singleton settings (hwloc without
 * I/O devices among them: its PCI/CUDA/NVML probing started the GPU driver
 * inside MPI_Init); a variable the user set is kept as it is; under mpirun
 * (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK set) nothing is changed.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/mpi_env.h"

static const char *const launcher_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"};
static const char *const set_vars[] = {"OMPI_MCA_ess_singleton_isolated", "OMPI_MCA_btl",
                                       "OMPI_MCA_pml", "OMPI_MCA_orte_create_session_dirs",
                                       "HWLOC_COMPONENTS"};
#define N(a) (sizeof a / sizeof a[0])

static void clean(void)
{
    for (size_t i = 0; i < N(launcher_vars); i++)
        unsetenv(launcher_vars[i]);
    for (size_t i = 0; i < N(set_vars); i++)
        unsetenv(set_vars[i]);
}

static int is(const char *name, const char *want)
{
    const char *v = getenv(name);
    return v && strcmp(v, want) == 0;
}

int main(void)
{
    /* a plain process */
    clean();
    cls_mpi_singleton_env();
    CHECK(is("OMPI_MCA_ess_singleton_isolated", "1"));
    CHECK(is("OMPI_MCA_btl", "self"));
    CHECK(is("OMPI_MCA_orte_create_session_dirs", "0"));
    CHECK_MSG(is("HWLOC_COMPONENTS", "-linuxio,-pci,-opencl,-cuda,-nvml,-gl"),
              "HWLOC_COMPONENTS=%s",
              getenv("HWLOC_COMPONENTS") ? getenv("HWLOC_COMPONENTS") : "(unset)");

    /* what the user set stands */
    clean();
    setenv("HWLOC_COMPONENTS", "-gl", 1);
    setenv("OMPI_MCA_btl", "self,vader", 1);
    cls_mpi_singleton_env();
    CHECK(is("HWLOC_COMPONENTS", "-gl"));
    CHECK(is("OMPI_MCA_btl", "self,vader"));
    CHECK(is("OMPI_MCA_pml", "ob1"));

    /* under a launcher nothing changes */
    for (size_t k = 0; k < N(launcher_vars); k++) {
        clean();
        setenv(launcher_vars[k], "2", 1);
        cls_mpi_singleton_env();
        for (size_t i = 0; i < N(set_vars); i++)
            CHECK_MSG(getenv(set_vars[i]) == NULL, "%s set under %s", set_vars[i],
                      launcher_vars[k]);
    }
    clean();
    return check_done("test_mpi_env");
}
