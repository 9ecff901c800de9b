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
 * lets the running job finish for up to drain_timeout_s, then stops it (in
 * any phase: reading or solving) and queues it again on disk for the next
 * start; queued jobs stay queued; it tells the workers to exit and
 * returns. DELETE stops a running job in any phase the same way (it ends
 * cancelled). A final state whose record could not be written is retried
 * every second (job_store_retry_pending); so is a job whose claim could
 * not be written, which stays queued meanwhile.
 *
 * Admission (admission.h): before the oldest queued cg job is taken, its
 * cost is estimated from its matrix's header and measured text; a job that
 * needs rank 0's memory while it is in use by others stays queued (the
 * ones behind it too: first come, first served) with a progress note; one
 * that can never fit fails at once with the figures; one whose part is too
 * large for one device per rank runs on several devices per rank.
 */
#ifndef CLS_NET_SCHEDULER_H
#define CLS_NET_SCHEDULER_H

#include <jansson.h>
#include <mpi.h>
#include <signal.h>

#include "job_store.h"

/* --batch: off; auto (on GPUs and accelerators, the default); on (any
 * device, for tests on PoCL) */
enum { SCHED_BATCH_AUTO = 0, SCHED_BATCH_OFF = 1, SCHED_BATCH_ON = 2 };

typedef struct scheduler_config {
    job_store *store;
    const char *device;          /* --device */
    volatile sig_atomic_t *stop; /* set by the signal handler */
    double retention_every_s;    /* how often --keep is applied while idle */
    int lanes;                   /* small jobs running at once on rank 0 (<= 1: none beside) */
    int64_t shared_max_entries;  /* largest declared entries of a small job (0: 4 Mi) */
    double drain_timeout_s;      /* a running job's time to finish after *stop */
    int batch;                   /* SCHED_BATCH_*: queued small jobs solved in one launch */
    int batch_max;               /* jobs per launch at most (0: 256) */
    json_t *cluster;             /* the ranks' devices, for admission (may be NULL) */
    int nranks;
} scheduler_config;

/* Rank 0. Returns 0 after a drain. */
int scheduler_run_root(MPI_Comm comm, const scheduler_config *cfg);

/* Ranks > 0: serve cg jobs until rank 0 says exit. */
int scheduler_run_worker(MPI_Comm comm, const char *device);

#endif
