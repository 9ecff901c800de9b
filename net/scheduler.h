/*
 * scheduler.h: rank 0's job loop and the workers' loop.
 *
 * The scheduler takes the oldest queued job. A small cg job (its matrix
 * declares at most shared_max_entries entries) runs in one of `lanes`
 * threads on rank 0 alone, beside other small jobs (scheduler.c explains
 * why); any other job waits until the lanes are idle and has the whole
 * world: a cg job is announced (job_proto) so every rank enters the same
 * collective dsolve_file, a physics job runs on rank 0 while the workers
 * keep waiting. The choice is recorded as the job's "placement".
 *
 * On rank 0 the scheduler's thread and the lanes call MPI (the lanes only
 * on MPI_COMM_SELF), which needs MPI_THREAD_MULTIPLE; the HTTP threads
 * never do: they talk to the scheduler through the job store. When *stop becomes non-zero (SIGTERM) the loop
 * finishes the running job, leaves queued jobs queued on disk, tells the
 * workers to exit and returns.
 */
#ifndef CLS_NET_SCHEDULER_H
#define CLS_NET_SCHEDULER_H

#include <mpi.h>
#include <signal.h>

#include "job_store.h"

typedef struct scheduler_config {
    job_store *store;
    const char *device;          /* --device */
    volatile sig_atomic_t *stop; /* set by the signal handler */
    double retention_every_s;    /* how often --keep is applied while idle */
    int lanes;                   /* small jobs running at once on rank 0 (<= 1: none beside) */
    int64_t shared_max_entries;  /* largest declared entries of a small job (0: 4 Mi) */
} scheduler_config;

/* Rank 0. Returns 0 after a drain. */
int scheduler_run_root(MPI_Comm comm, const scheduler_config *cfg);

/* Ranks > 0: serve cg jobs until rank 0 says exit. */
int scheduler_run_worker(MPI_Comm comm, const char *device);

#endif
