/*
 * mpi_env.h: the environment a process started WITHOUT mpirun gives Open
 * MPI before MPI_Init, so that a plain `clsolve solve A.mtx` does not pay
 * for a cluster's start-up. An Open MPI singleton otherwise starts its
 * runtime daemon and probes every transport (UCX, OFI, hcoll): 0.31 s on
 * the 2-core machine and 0.55 s on the GPU host, more than a small solve.
 * A singleton has one rank and talks to nobody, so: ess_singleton_isolated
 * (no daemon), the self transport only (btl self, pml ob1) and no UCX, OFI
 * or hcoll, and no session directory (isolated singletons would all share
 * one and remove it under each other); 0.04 s. And hwloc's topology without
 * I/O devices, whose probing started the GPU driver inside MPI_Init (the
 * process's device start then overlaps its parse instead). Under mpirun (OMPI_COMM_WORLD_SIZE or PMIX_RANK set)
 * nothing is changed, and a variable the user set is never overridden.
 */
#ifndef CLS_COMMON_MPI_ENV_H
#define CLS_COMMON_MPI_ENV_H

void cls_mpi_singleton_env(void);

#endif
