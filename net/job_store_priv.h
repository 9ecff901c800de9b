/*
 * job_store_priv.h: what the job store's files share, not part of the
 * contract (job_store.h). The store is layers:
 *
 *   job_store_open.c    opening, start-up recovery, retention, closing
 *   job_store_submit.c  an upload made a job; free-space admission
 *   job_store_read.c    a job, the list, residuals; health and metrics
 *   job_store_run.c     the transitions: claim, progress, final state,
 *                       requeue, cancel, DELETE, pin
 *   job_store.c         the floor: records, the table, the durable write
 *                       of a record, removal of a job's directory
 *
 * The four upper files use the floor and never each other.
 *
 * Locks: `mu` guards the table and every record; `io` serialises the
 * writes of job.json and the removal of job directories, so two requests
 * on the same job can never interleave their files. Order: io before mu,
 * never the reverse. A record's JSON is built under mu and written under
 * io only, so slow disks never hold up readers of the table.
 */
#ifndef CLS_NET_JOB_STORE_PRIV_H
#define CLS_NET_JOB_STORE_PRIV_H

#include <pthread.h>

#include "../common/eta.h"
#include "job_store.h"

/* A final state computed by the scheduler whose record could not be
 * written yet: the job stays `running` (what the disk says) until a retry
 * writes it (job_store_retry_pending). */
typedef struct job_pending {
    job_status status;
    double finished;
    json_t *result, *error, *timings, *devices;
} job_pending;

/* Why a job directory went to DATA/quarantine/ (the metric's reason label). */
enum {
    JOB_QUARANTINE_RECORD,
    JOB_QUARANTINE_NO_RECORD,
    JOB_QUARANTINE_DAMAGED,
    JOB_QUARANTINE_NREASONS
};
extern const char *const job_store_quarantine_reasons[JOB_QUARANTINE_NREASONS];

typedef struct job_rec {
    char id[IDS_LEN + 1];
    int64_t seq;
    job_status status;
    double created, started, finished; /* Unix time; 0: not yet */
    job_params params;
    job_inputs in;
    uint64_t bytes;
    int64_t interrupted; /* runs cut short by a crash or kill (re-queued at start) */
    json_t *result, *error, *timings, *devices;
    json_t *placement; /* the scheduler's choice: lane or whole world, device (scheduler.c) */
    int pinned;        /* exempt from retention */
    double fetched;    /* Unix time its result was first fetched (keep=until-fetched
                        * jobs only, written to job.json; 0: not yet) */
    char damaged[96];  /* a download found its result damaged ("" none): the reason,
                        * written to job.json so the next start quarantines it */
    uint64_t disk;     /* bytes of its files (for --keep-bytes) */
    /* live */
    int64_t iteration;
    double residual, updated;
    char phase[16];
    double *hist;
    int64_t nhist, hcap;
    int64_t hfirst;       /* the iteration of hist[0]: 0 when the solver reported it */
    double phase_started; /* Unix time the phase began */
    cls_eta eta;          /* time left from the residual's rate (solving) */
    double eta_s;         /* < 0: unknown */
    int cancel;
    int load_ended;        /* ended at load (a cancel kept, too many restarts): rewrite */
    int cancel_written;    /* a running job's cancel is in its job.json */
    int bin_verified;      /* solution.bin read whole against its CRC-32 in this run */
    char store_error[200]; /* the last failed write of this job's record ("" none) */
    char note[256];        /* why a queued job waits (admission), in memory only */
    job_pending *pending;
} job_rec;

struct job_store {
    char data[PATH_MAX - 64];
    job_store_config cfg;
    pthread_mutex_t mu, io;
    pthread_cond_t cv;
    /* job_store_watch: counts the changes a waiting GET may be after (a
     * job finished or removed), under mu, with its own condition variable
     * so the scheduler's waits and the watchers' never wake each other */
    uint64_t changes;
    pthread_cond_t watch_cv;
    job_rec **recs; /* ascending seq */
    size_t n, cap;
    int64_t next_seq;
    int pending; /* accepts between the queue check and the insert */
    int wake;
    /* health: a failed write makes the store unhealthy until one succeeds
     * and no final state waits to be written */
    int write_failed;
    char health[256];
    uint64_t write_errors, removal_errors;
    /* jobs moved to DATA/quarantine/ in this run, by reason (job_store_open.c) */
    uint64_t quarantined[JOB_QUARANTINE_NREASONS];
    /* unfetched keep=until-fetched jobs retention would remove but keeps
     * (a limit is exceeded and only they are left): /metrics, one log line */
    int64_t retention_waiting;
    char disk_wait[200]; /* a job's outputs wait for disk space: /readyz says so */
    uint64_t damaged;    /* stored outputs refused: not what was written (size, CRC-32) */
    uint64_t retention_removed;
    double last_retry;
};

double job_store_wall_now(void);
int job_store_status_from_name(const char *n);
void job_store_rec_free(job_rec *r);
/* The record's JSON; internal adds what recovery needs. Called with mu held. */
json_t *job_store_rec_json(const job_rec *r, int internal);
/* json_dumps (compact, 17 digits) and json_decref. */
char *job_store_dump(json_t *o);
void job_store_dir_of(const job_store *s, const char *id, char *out, size_t cap);
int job_store_insert_sorted(job_store *s, job_rec *r);
job_rec *job_store_find(job_store *s, const char *id); /* mu held */
void job_store_changed(job_store *s);                  /* mu held: wakes the watchers */
size_t job_store_find_index(job_store *s, const job_rec *r);
void job_store_remove_at(job_store *s, size_t i);
/* Removes a job's directory, job.json first (io not held); err may be NULL. */
int job_store_remove_dir(job_store *s, const char *id, cls_error *err);
/* The removal marker DATA/removing/ID, written durably before a job's
 * job.json goes and removed once its directory is gone: start-up tells a
 * removal cut short (marker: finished) from a record lost to damage (no
 * marker: quarantined). io held. */
int job_store_removal_mark(job_store *s, const char *id, cls_error *err);
void job_store_removal_unmark(job_store *s, const char *id);
/* 1 when retention must not remove the finished job yet: keep=until-fetched,
 * succeeded, its result not fetched (mu held). */
int job_store_held_for_fetch(const job_rec *r);
/* Bytes of the regular files in a job directory and its out/. */
uint64_t job_store_dir_bytes(const char *dir);
/* Writes text as DATA/jobs/ID/job.json durably (io held) and records the
 * outcome for the store's health. */
int job_store_write_record(job_store *s, const char *id, const char *text, cls_error *err);
/* Records a write's outcome for the store's health (mu not held): the
 * store is unhealthy from a failed write until one succeeds. */
void job_store_note_write(job_store *s, int rc, const cls_error *err);
/* The data directory's file system: bytes free (to us) and in all; -1
 * when it cannot be asked. */
int job_store_disk_space(const job_store *s, uint64_t *avail, uint64_t *size);

#endif
