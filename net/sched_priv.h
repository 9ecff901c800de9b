/*
 * sched_priv.h: the scheduler's rooms and what they share. scheduler.c
 * takes jobs from the store and places them (lanes, the exclusive lane,
 * admission, physics); sched_cg.c runs one cg job from its files to its
 * record; sched_batch.c runs many small queued cg jobs in one launch with
 * sched_cg.c's beginning and end around it; sched_physics.c runs a physics
 * job; sched_common.c holds what all of them use (and uses none of them).
 */
#ifndef CLS_NET_SCHED_PRIV_H
#define CLS_NET_SCHED_PRIV_H

#include <jansson.h>
#include <mpi.h>
#include <stdint.h>

#include "../solver/dsolve.h"
#include "admission.h"
#include "job_proto.h"
#include "scheduler.h"

/* --- sched_common.c: shared by every kind of job --- */

/* 1 once a drain has given the running jobs their time (the first call
 * after the stop starts its clock); sched_drain_reset at a start. */
int sched_drain_over(const scheduler_config *cfg);
void sched_drain_reset(void);
/* msg with the daemon's paths a, b, x0 replaced by the names the client
 * gave, and the job directory left out */
void sched_user_message(char *msg, size_t cap, const job_claim *c, const char *a, const char *b,
                        const char *x0);
/* the error kind of a cls class (bad_input, not_converged, ...) */
const char *sched_error_code(int rc);
/* the record's error object */
json_t *sched_error_json(const char *code, int exit_code, const char *msg, long long line);
/* 1 when a write failed for lack of space (or quota): worth a retry */
int sched_disk_full(const cls_error *e);
typedef struct sched_monitor_ctx {
    job_store *store;
    const char *id;
    const scheduler_config *cfg;
    int cancelled; /* DELETE */
    int drained;   /* stopped by a drain that ran out of time: queued again */
} sched_monitor_ctx;
/* The reader's callback (mm_read_options; ctx a sched_monitor_ctx):
 * DELETE and the drain stop a long read, as they stop iterations. */
int sched_read_progress(void *ctx, int64_t bytes);
/* the job's events in the structured log, and its wait before it ran */
void sched_log_started(const job_claim *c);
void sched_wait_timings(json_t *timings, const job_claim *c);
void sched_log_finished(const job_claim *c, job_status st, json_t *error, json_t *timings,
                        int64_t iterations, double rel);

/* --- sched_cg.c: one cg job --- */

/* A cg job between its beginning and its end. */
typedef struct sched_cg_run {
    job_proto_msg m;  /* the files (a_path, b_path, x0_path) and parameters */
    dsolve_options o; /* the solver's options, the monitor and reader callbacks set */
    sched_monitor_ctx mc;
    double t0; /* when it began */
} sched_cg_run;

/* Runs a cg job: collective, every rank of comm solves it with rank 0;
 * otherwise comm is MPI_COMM_SELF and the job runs on this rank alone, in
 * a lane. est and read_budget: the admission's estimate and the reader's
 * memory budget. */
void sched_run_cg(MPI_Comm comm, int collective, const scheduler_config *cfg, const job_claim *c,
                  const adm_estimate *est, uint64_t read_budget);
/* The solve and the end of a job already begun (sched_cg_begin): what
 * sched_run_cg does after the beginning. */
void sched_cg_solve(MPI_Comm comm, int collective, const scheduler_config *cfg, const job_claim *c,
                    sched_cg_run *r);
/* The beginning: messages, options, monitor (r->o's callbacks point into
 * r: it must stay put until the end); the job logged as started. Not
 * CLS_OK: the job has been failed already. */
int sched_cg_begin(const scheduler_config *cfg, const job_claim *c, const adm_estimate *est,
                   uint64_t read_budget, sched_cg_run *r);
/* The end: x (NULL if none) written durably (a full disk waits), the
 * residual history, then the job's final record from rc, err and rep (a
 * cancel or a drain seen by r's monitor says how it ended). Frees x and
 * rep. */
void sched_cg_finish(const scheduler_config *cfg, const job_claim *c, sched_cg_run *r, int rc,
                     cls_error *err, dsolve_report *rep, double *x);

/* --- sched_physics.c: one physics job (a build with physics/job.c) --- */

void sched_run_physics(const scheduler_config *cfg, const job_claim *c);

/* --- sched_batch.c: queued small jobs in one launch --- */

/* 1 when this daemon batches (--batch, the lanes' device, lanes > 1). */
int sched_batch_enabled(const scheduler_config *cfg);
/* 1 when c can join a batch (its parameters, inputs and size). */
int sched_batch_fits(const scheduler_config *cfg, const job_claim *c);
/* 1 when b can join a batch a began (same precision and preconditioner). */
int sched_batch_same(const job_claim *a, const job_claim *b);
/* Runs c[0..n) (claimed: running) in one launch on this rank's lane
 * device; each job ends in its own final record. */
void sched_batch_run(const scheduler_config *cfg, job_claim *c, int n, uint64_t read_budget);

#endif
