/*
 * affinity.h: a rank's CPUs under mpirun.
 *
 * Open MPI binds each rank to one core when it starts two ranks or fewer
 * (to a socket above that). clsolve's host work is parallel (the .mtx
 * parse, CSR assembly, partitioning, packing), so `mpirun -np 1 clsolved`
 * ran all of it on one core: on a 2-core machine the daemon's CSR assembly
 * of a poisson3d 30 system took 263 ms bound against 4 ms unbound.
 * One rank per GPU is the intended layout, and a rank's threads are its
 * own: each rank takes its share of the node instead (affinity.c).
 */
#ifndef CLS_COMMON_AFFINITY_H
#define CLS_COMMON_AFFINITY_H

#include <stddef.h>

/* Before MPI_Init and before any thread starts (threads inherit the mask):
 * when the launcher (Open MPI, MPICH's Hydra: their node-local rank and
 * size variables) bound this process to fewer CPUs than its share of the
 * node's online CPUs, widens it to that share. CLSOLVE_BINDING=keep leaves
 * every binding alone. Returns 1 when it widened the mask, with a sentence
 * saying from what to what in msg. */
int cls_affinity_share(char *msg, size_t cap);

#endif
