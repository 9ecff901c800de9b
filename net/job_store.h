/*
 * job_store.h: the durable job store and the queue it implies.
 *
 * On disk, DATA/jobs/ID/ holds one job: its inputs (matrix.mtx, rhs.mtx,
 * x0.mtx, options.json or input for physics), job.json (the record), and
 * after the run solution.bin (little-endian float64; solution.mtx in jobs
 * of older releases),
 * residuals.json, or out/ for physics outputs. An upload is streamed into
 * DATA/incoming/ID/; it becomes a job only by job_store_accept, which
 * writes job.json (temp file, fsync, rename, fsync dir), fsyncs the
 * directory and renames it into DATA/jobs/ (fsyncing both parents). So a
 * kill -9 at any instant leaves either no trace of a job in jobs/ (the
 * client got no 202) or a complete one; start-up empties incoming/.
 *
 * In memory, a table of records ordered by submission (seq) under one
 * mutex, with a condition variable the scheduler waits on. Every state
 * change rewrites job.json durably before it is visible through the API,
 * and only if the write succeeded: memory and disk agree after every
 * transition. A write that fails leaves the job where the disk says it is,
 * with `store_error` in its JSON, makes the store unhealthy (/readyz) and
 * is retried (job_store_run.c). On start, queued and running jobs are
 * queued again (in submission order); finished ones keep their results; a
 * record that fails to load is moved to DATA/quarantine/, never deleted
 * (job_store_open.c). Retention (--keep, --keep-bytes) removes the oldest
 * finished jobs beyond a count, those finished longer ago than a duration,
 * and the oldest while the finished jobs' files take more than a size;
 * pinned jobs are exempt, and so are keep=until-fetched jobs until their
 * result was fetched once. Uploads must leave disk_reserve bytes free on the
 * data directory's file system (job_store_disk_admit: the server's 507).
 *
 * Live progress (iteration, residual, residual history) of the running job
 * is kept in memory only; it is rebuilt when a re-queued job runs again.
 */
#ifndef CLS_NET_JOB_STORE_H
#define CLS_NET_JOB_STORE_H

#include <jansson.h>
#include <limits.h>
#include <stdint.h>

#include "../common/error.h"
#include "ids.h"
#include "job_params.h"

typedef enum {
    JOB_QUEUED,
    JOB_RUNNING,
    JOB_SUCCEEDED,
    JOB_FAILED,
    JOB_CANCELLED,
    JOB_NSTATES
} job_status;

const char *job_status_name(job_status s);

/* A final status (succeeded, failed, cancelled): the job will not run
 * again, its record is removable and counted by retention, and a long
 * poll on it answers at once. The one test of "final" everywhere. */
static inline int job_status_final(job_status s)
{
    return s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED;
}

/* job_store_accept's answer when the queue is full (the server's 503). */
#define JOB_STORE_FULL 100

typedef struct job_store job_store;

typedef struct job_store_config {
    const char *data_dir;
    int64_t keep_count;    /* finished jobs kept; < 0: no limit */
    double keep_seconds;   /* finished jobs kept this long; < 0: no limit */
    uint64_t keep_bytes;   /* finished jobs' files kept at most (bytes); 0: no limit */
    double keep_min_age;   /* keep_bytes never removes a job finished less than this many
                            * seconds ago (its owner may not have fetched it yet) */
    uint64_t disk_reserve; /* free space an upload must leave on the data dir's disk */
    int max_queued;        /* queued jobs accepted at most */
    int max_job_restarts;  /* a job whose runs the daemon's end cut short this many times
                            * is failed at start, not run again (0: the default, 2) */
} job_store_config;

/* Which input files an upload stored, and under what names the client
 * knows them (used in messages instead of the internal path). */
typedef struct job_inputs {
    int has_matrix, has_rhs, has_x0, has_input;
    char matrix_name[256], rhs_name[256], x0_name[256], input_name[256];
    char input_file[64];       /* stored name of a physics input (input.obj, ...) */
    int64_t matrix_text_bytes; /* the matrix's text, decompressed; 0: not measured */
    double receive_s;          /* the upload, first byte handled to the last (0: unknown) */
} job_inputs;

int job_store_open(job_store **out, const job_store_config *cfg, cls_error *err);
void job_store_close(job_store *s);

/* --- submission (HTTP threads) --- */

/* 1 when no further job can be queued now. */
int job_store_full(job_store *s);
/* A new id and its upload directory DATA/incoming/ID (created). */
int job_store_incoming_new(job_store *s, char id[IDS_LEN + 1], char *dir, size_t cap,
                           cls_error *err);
void job_store_incoming_discard(job_store *s, const char *id);
/* Makes the upload a queued job (see above). On success *job_json is the
 * job's JSON (malloc'ed). JOB_STORE_FULL when the queue filled meanwhile
 * (the upload is discarded). */
int job_store_accept(job_store *s, const char *id, const job_params *p, const job_inputs *in,
                     uint64_t bytes, char **job_json, cls_error *err);
/* Several uploads accepted together (POST /v1/batches): room for all n
 * in the queue or JOB_STORE_FULL (every upload discarded); the records are
 * made durable first and enter the queue together, so no job or all of
 * them exist, and the scheduler meets them at once (one batch). The group
 * is committed once: the uploads may have been written without fsyncs
 * (upload.h's no_sync) and the records are, and one syncfs of the data
 * directory's file system makes them all durable before the renames. (A
 * crash during the renames leaves the jobs renamed so far queued without
 * their 202, as a crash between one job's rename and its answer leaves it:
 * they run at the next start, their records complete.)
 * job_json[i]
 * receives each job's JSON. A failure after the jobs exist (out of memory
 * inserting one) leaves job_json[i] NULL for the jobs that are not. */
int job_store_accept_many(job_store *s, int n, const char *const *ids, const job_params *p,
                          const job_inputs *in, const uint64_t *bytes, char **job_json,
                          cls_error *err);

/* --- reading (HTTP threads); each returns 0, or -1 for an unknown id --- */

int job_store_get_json(job_store *s, const char *id, char **json);
/* Newest first. after: an id (jobs submitted before it) or NULL; page >= 1
 * when paging by number (after ignored); status: a state name or NULL. */
int job_store_list_json(job_store *s, int limit, const char *after, int page, const char *status,
                        char **json, cls_error *err);
/* Residual history from iteration `since` on (live for a running job). */
int job_store_residuals_json(job_store *s, const char *id, int64_t since, char **json);
/* The job's directory and its status (for the solution routes). */
int job_store_job_dir(job_store *s, const char *id, char *dir, size_t cap, job_status *st);
/* What the job's record says of a stored output file (name: solution.mtx
 * or solution.bin): its size (-1: not recorded, an older record), its
 * CRC-32 (*has_crc 0: none) and whether this daemon has checked it whole
 * already. 0, or -1 for an unknown job. */
int job_store_file_expect(job_store *s, const char *id, const char *name, int64_t *bytes,
                          uint32_t *crc, int *has_crc, int *verified);
/* The file was checked whole and matches: not read again in this run. */
void job_store_file_verified(job_store *s, const char *id, const char *name);
/* A job's outputs wait for disk space (why: for /readyz; NULL: no more). */
void job_store_set_disk_wait(job_store *s, const char *why);
/* A download of job id refused as damaged (why: what differs, no path):
 * counted for /metrics and recorded in its job.json, so the next start
 * quarantines it; this run keeps answering 500 store-damaged. */
void job_store_file_damaged(job_store *s, const char *id, const char *why);
/* A successful download of the job's result (solution, output file): a
 * keep=until-fetched job's first one is recorded durably (fetched_at) and
 * makes it removable by retention. 1 when that happened now (the caller
 * runs retention), else 0 (not such a job, fetched before, or the record
 * could not be written: then it stays kept and the next fetch retries). */
int job_store_mark_fetched(job_store *s, const char *id);

/* POST /v1/jobs/ID/cancel: a queued job is cancelled at once
 * (JOB_CANCEL_DONE), a running one asked to stop at its next iteration
 * (JOB_CANCEL_REQUESTED); a finished one is left as it is
 * (JOB_CANCEL_FINISHED, *st its state). *json: the job after the call.
 * Returns 0, -1 for an unknown id, or CLS_EOTHER with err: the
 * cancellation could not be written (the job is still queued). */
typedef enum { JOB_CANCEL_DONE, JOB_CANCEL_REQUESTED, JOB_CANCEL_FINISHED } job_cancel_outcome;
int job_store_cancel(job_store *s, const char *id, job_cancel_outcome *out, job_status *st,
                     char **json, cls_error *err);
/* DELETE /v1/jobs/ID: removes a finished job and its files (returns 0);
 * a queued or running job is left alone (JOB_REMOVE_ACTIVE, *st its
 * state); -1: no such job; JOB_REMOVE_FAILED with err: the record could
 * not be removed (the job is kept), or the record went but some files
 * stayed (removed at the next start). */
enum { JOB_REMOVE_ACTIVE = 1, JOB_REMOVE_FAILED = 2 };
int job_store_remove(job_store *s, const char *id, job_status *st, cls_error *err);

/* --- the scheduler (rank 0's main thread) --- */

typedef struct job_claim {
    char id[IDS_LEN + 1];
    char dir[PATH_MAX];
    job_params params; /* owned by the claim: job_params_free */
    job_inputs in;
    double created, started; /* Unix time: submitted, claimed (the queue wait between) */
} job_claim;

/* Waits up to timeout_s for a queued job; marks the oldest one running
 * (durably) and returns 1, or 0 when none came, -1 when its record could
 * not be written (it stays queued). */
int job_store_claim_next(job_store *s, double timeout_s, job_claim *c, cls_error *err);
/* The same in two steps, for admission: the oldest queued job (a copy:
 * job_params_free its params), without taking it... */
int job_store_peek_queued(job_store *s, double timeout_s, job_claim *c);
/* ...then that job taken, if still queued: 1, 0 (not queued any more), -1. */
int job_store_claim(job_store *s, const char *id, job_claim *c, cls_error *err);
/* Why a queued job waits (progress.note while queued; memory only). */
void job_store_set_note(job_store *s, const char *id, const char *note);
/* Wakes a waiting claim (shutdown). */
void job_store_wake(job_store *s);
/* The store's change count: it moves when a job reaches a final state or
 * is removed (what a long-polling GET waits for: job_wait.h), and at
 * job_store_poke. job_store_watch waits until it differs from seen, or
 * timeout_s passes, and returns it. */
uint64_t job_store_watch(job_store *s, uint64_t seen, double timeout_s);
void job_store_poke(job_store *s);
/* Progress of the running job; returns non-zero when it is to stop. */
int job_store_progress(job_store *s, const char *id, int64_t iteration, double residual);
void job_store_set_phase(job_store *s, const char *id, const char *phase);
/* Where the scheduler runs the job (scheduler.c), shown in the job's JSON
 * from then on and kept with the final record; placement is stolen. */
void job_store_set_placement(job_store *s, const char *id, json_t *placement);
/* Copies the running job's residual history (malloc'ed) for residuals.json. */
int job_store_history(job_store *s, const char *id, double **h, int64_t *n);
/* Final state; the json objects are stolen (may be NULL). */
int job_store_complete(job_store *s, const char *id, job_status st, json_t *result, json_t *error,
                       json_t *timings, json_t *devices, cls_error *err);
/* Non-zero when the running job has been asked to stop (DELETE), or is gone. */
int job_store_cancel_requested(job_store *s, const char *id);
/* Writes the final states whose records could not be written before;
 * returns how many still wait. */
int job_store_retry_pending(job_store *s, cls_error *err);
/* A running job stopped by a drain: queued again (an interrupted run
 * counted), to run at the next start. */
int job_store_requeue(job_store *s, const char *id, cls_error *err);
/* Removes finished jobs beyond the retention policy. */
void job_store_retention(job_store *s);
/* Jobs per state. */
void job_store_counts(job_store *s, int64_t counts[JOB_NSTATES]);

/* --- health and pinning --- */

/* 1 when the store's last write succeeded and no final state waits to be
 * written; else 0 and why (may be NULL). */
int job_store_healthy(job_store *s, char *why, size_t cap);
/* The store's figures for /metrics (metrics_source_fn; malloc'ed text). */
char *job_store_metrics(void *store);
const char *job_store_data_dir(const job_store *s);
/* Free-space admission: CLS_OK when `need` more bytes (0: unknown) leave
 * at least disk_reserve free on the data directory's file system; else
 * CLS_EOTHER with the figures in err. */
int job_store_disk_admit(job_store *s, uint64_t need, cls_error *err);
/* The room a job's outputs may take: the data directory's free space less
 * disk_reserve (0 below it); *avail and *reserve for messages. 0, or -1
 * when the file system cannot be asked (nothing is known: admit). */
int job_store_disk_room(job_store *s, uint64_t *room, uint64_t *avail, uint64_t *reserve);
/* Pins (exempts from retention) or unpins a job; 0, -1 unknown id, or
 * CLS_EOTHER when its record could not be written (nothing changed). */
int job_store_pin(job_store *s, const char *id, int pinned, char **json, cls_error *err);
/* Pinned and keep=until-fetched jobs are the two exemptions from retention:
 * a pin until unpinned, keep until the result was fetched once. */

#endif
