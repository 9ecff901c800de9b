/*
 * scheduler.c: taking jobs from the store and placing them (see
 * scheduler.h): admission (what a job's input and output need against the
 * machine and the disk), the lanes where small cg jobs run beside each
 * other, the exclusive lane of a large one, batches of queued small jobs
 * (gathered here, run by sched_batch.c), and the drain at a stop. How a
 * job runs is its own room's: a cg job sched_cg.c's, a physics job
 * sched_physics.c's.
 */
#include "scheduler.h"
#include "sched_priv.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include <time.h>

#include "../common/numfmt.h"
#include "../common/timer.h"
#include "../common/trace.h"
#include "../matrices/mm.h"
#include "../solver/dsolve.h"
#include "../solver/names.h"
#include "admission.h"
#include "cluster.h"
#include "fileio.h"
#include "job_files.h"
#include "job_proto.h"
#include "log.h"
#include "metrics.h"
#include "problem.h"
#include "report.h"
#ifdef CLS_NET_HAVE_PHYSICS
#include "../physics/estimate.h"
#include "../physics/job.h"
#endif

/* the scheduler's thread set the store's output wait (sched_output_wait) */
static int sched_output_waiting;


/* The measured text of a job's matrix: recorded at upload (gzip inflated
 * whole there), else the size of a plain file; -1 when unknown. */
static int64_t sched_text_bytes(const job_claim *c, const char *path)
{
    if (c->in.matrix_text_bytes > 0)
        return c->in.matrix_text_bytes;
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    unsigned char magic[2] = {0, 0};
    size_t n = fread(magic, 1, 2, f);
    int gz = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    fclose(f);
    return gz ? -1 : (int64_t)size;
}

/* Admission of the oldest queued cg job (admission.h). WAIT leaves it
 * queued with a note; NEVER fails it at once; RUN gives the estimate and
 * the reader's memory budget. */
/* A job that can never fit this machine: failed at once with the figures
 * (error kind "resources"), logged and counted. */
static void sched_refuse(const scheduler_config *cfg, const job_claim *c, const char *msg)
{
    cls_error err;
    cls_error_clear(&err);
    fprintf(stderr, "clsolved: job %s refused: %s\n", c->id, msg);
    if (job_store_complete(cfg->store, c->id, JOB_FAILED, NULL,
                           sched_error_json("resources", CLS_EOTHER, msg, 0), NULL, NULL, &err))
        fprintf(stderr, "clsolved: job %s: %s\n", c->id, err.msg);
    metrics_job_finished(JOB_FAILED, 0, 0);
}

/* 1 when `need` bytes of c's outputs do not fit the data directory's free
 * space less --disk-reserve: the job's note and /readyz say what it waits
 * for (the store's output wait, which sched_run_cg's full-disk retry sets too),
 * and the scheduler tries again in a second. 0 (and the wait cleared) when
 * they fit or the space is unknown. */
static int sched_output_wait(const scheduler_config *cfg, const job_claim *c, uint64_t need,
                             const char *what)
{
    uint64_t room, avail, reserve;
    if (job_store_disk_room(cfg->store, &room, &avail, &reserve) || need <= room) {
        if (sched_output_waiting) {
            job_store_set_disk_wait(cfg->store, NULL);
            sched_output_waiting = 0;
        }
        return 0;
    }
    char note[320];
    snprintf(note, sizeof note,
             "waits for disk space for %s (about %.1f MB): the data directory's disk has %.1f MB "
             "free, %.1f MB of them the reserve (--disk-reserve)",
             what, (double)need / 1048576.0, (double)avail / 1048576.0,
             (double)reserve / 1048576.0);
    job_store_set_note(cfg->store, c->id, note);
    job_store_set_disk_wait(cfg->store, "the data directory's disk is short of space: a queued job "
                                        "waits for room for its output");
    sched_output_waiting = 1;
    return 1;
}

static int sched_admit(const scheduler_config *cfg, const job_claim *c, adm_estimate *est,
                       uint64_t *budget)
{
    char path[PATH_MAX + 16], why[512];
    memset(est, 0, sizeof *est);
    est->devices_per_rank = 1;
    *budget = 0;
    if (snprintf(path, sizeof path, "%s/matrix.mtx", c->dir) >= (int)sizeof path)
        return ADM_RUN;
    mm_header h;
    cls_error err;
    if (mm_read_header(path, &h, &err))
        return ADM_RUN; /* the run fails with the reader's own message */
    adm_machine mach = {.nranks = cfg->nranks, .cluster = cfg->cluster};
    adm_memory(&mach.host_total, &mach.host_available);
    int v = adm_decide(&h, sched_text_bytes(c, path), &mach, est, why, sizeof why);
    if (v == ADM_WAIT) {
        job_store_set_note(cfg->store, c->id, why);
        return v;
    }
    if (v == ADM_NEVER) {
        char msg[800];
        snprintf(msg, sizeof msg, "%.200s: this job %.511s", c->in.matrix_name, why);
        sched_refuse(cfg, c, msg);
        return v;
    }
    /* the outputs are admitted as the inputs were (issue 27): the solution
     * (solution.bin, 8 bytes a value; the text is rendered at download) for
     * each right-hand side's column, and 64 KiB for the record and
     * the residual history. Where it does not fit the free space less
     * --disk-reserve the job waits, as a finished one waits to write
     * (sched_run_cg): its note and /readyz say so */
    mm_header bh;
    int64_t nrhs = 1;
    if (c->in.has_rhs && snprintf(path, sizeof path, "%s/rhs.mtx", c->dir) < (int)sizeof path &&
        !mm_read_header(path, &bh, &err) && bh.cols > 1 && bh.cols < 4096)
        nrhs = bh.cols;
    uint64_t need = (uint64_t)h.rows * (uint64_t)nrhs * 8u + ((uint64_t)64 << 10);
    if (sched_output_wait(cfg, c, need, "its solution"))
        return ADM_WAIT;
    job_store_set_note(cfg->store, c->id, NULL);
    if (mach.host_available > ((uint64_t)256 << 20))
        *budget = mach.host_available - ((uint64_t)256 << 20);
    return ADM_RUN;
}

#ifdef CLS_NET_HAVE_PHYSICS
/* A physics job's admission when the scheduler would take it (issue 27):
 * the estimate of the POST again (physics/estimate.h), as the machine and
 * the disk are now. Too much for the machine: failed at once with the
 * figures (job: resources); outputs that do not fit the free space less
 * --disk-reserve, or memory not free now: the job waits, its note (and for
 * the disk /readyz) saying why. */
static int sched_admit_physics(const scheduler_config *cfg, const job_claim *c)
{
    char path[PATH_MAX + 16], why[512];
    cls_error err;
    cls_error_clear(&err);
    physics_input_counts in, *inp = NULL;
    if (c->in.has_input) {
        if (snprintf(path, sizeof path, "%s/%s", c->dir, c->in.input_file) >= (int)sizeof path ||
            physics_estimate_scan(c->params.kind, path, &in, &err))
            return ADM_RUN; /* the run fails with the reader's own message */
        inp = &in;
    }
    physics_estimate e;
    if (physics_estimate_job(c->params.kind, c->params.options, inp, &e, &err))
        return ADM_RUN;
    adm_machine mach = {.nranks = 1, .cluster = cfg->cluster};
    adm_memory(&mach.host_total, &mach.host_available);
    int what;
    /* the disk is the output wait's to judge, below */
    int v = adm_decide_physics(c->params.kind, &e, &mach, UINT64_MAX, &what, why, sizeof why);
    if (v == ADM_WAIT) {
        job_store_set_note(cfg->store, c->id, why);
        return v;
    }
    if (v == ADM_NEVER) {
        char msg[800];
        snprintf(msg, sizeof msg, "this job %.700s", why);
        sched_refuse(cfg, c, msg);
        return v;
    }
    if (sched_output_wait(cfg, c, e.output_bytes, "its output"))
        return ADM_WAIT;
    job_store_set_note(cfg->store, c->id, NULL);
    return ADM_RUN;
}
#endif

/* Sleeps up to `seconds`, waking early when a drain begins. */
static void sched_pause(const scheduler_config *cfg, double seconds)
{
    for (double t = 0; t < seconds && !*cfg->stop; t += 0.05)
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
}

/* ------------------------------------------------------------------ lanes
 *
 * A system too small to fill a device leaves most of it idle, and a GPU's
 * per-iteration latency (launches, the scalar kernel) bounds such a job
 * whatever the GPU's bandwidth: 1138_bus does 937 iterations of ~0.05 ms on
 * an H100. So small cg jobs run on rank 0 alone, several at once, each in a
 * lane: a thread with its own device state (a context, queues, buffers;
 * solver/dvec.h keeps one warm state per lane and device) solving on
 * MPI_COMM_SELF. A job is small when its matrix declares at most
 * shared_max_entries stored entries (the header, read before the job runs;
 * the reader never trusts it beyond the data). Any other job (a large
 * system, a physics job) waits until every lane is idle and then starts
 * with every rank and device. A large cg job then runs in a thread of its
 * own (the exclusive lane, one at a time), and small jobs taken after it
 * go on running in the lanes beside it, on the same devices: a large job
 * takes minutes of host work (upload, parse) and saturates a GPU's memory
 * bandwidth, and small ones, bound by latency, would otherwise wait behind
 * it for all that time (issue 24: "small jobs keep their rate while a large
 * job runs"). A physics job, and every job with lanes = 1, still has the
 * machine to itself. Jobs are taken in order: a large job at the head of
 * the queue holds back the small ones behind it until it starts (the lanes
 * drain first), never longer. The choice is in the job record
 * ("placement"). Lanes need MPI_THREAD_MULTIPLE (clsolved asks for it; with
 * less, lanes = 1 and every job is exclusive, run by the scheduler's
 * thread).
 */
typedef struct sched_lanes {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int max, busy;
    unsigned used; /* bit k: lane k busy */
    int big;       /* 1 while a large cg job runs in the exclusive lane */
} sched_lanes;

typedef struct lane_job {
    const scheduler_config *cfg;
    sched_lanes *L;
    job_claim claim;
    int lane;
    adm_estimate est;
    uint64_t budget;
    job_claim *batch; /* nbatch > 1: these jobs in one launch (sched_batch.c), claim unused */
    int nbatch;
} lane_job;

static void *lane_run(void *arg)
{
    lane_job *j = arg;
    if (j->nbatch > 1) {
        sched_batch_run(j->cfg, j->batch, j->nbatch, j->budget);
        for (int i = 0; i < j->nbatch; i++)
            job_params_free(&j->batch[i].params);
        free(j->batch);
    } else {
        sched_run_cg(MPI_COMM_SELF, 0, j->cfg, &j->claim, &j->est, j->budget);
        job_params_free(&j->claim.params);
    }
    /* --keep and --keep-bytes count this job at once, as after an exclusive
     * job (the scheduler's thread may be waiting for the queue) */
    job_store_retention(j->cfg->store);
    pthread_mutex_lock(&j->L->mu);
    j->L->busy--;
    j->L->used &= ~(1u << j->lane);
    pthread_cond_broadcast(&j->L->cv);
    pthread_mutex_unlock(&j->L->mu);
    free(j);
    return NULL;
}

/* the exclusive lane: one large cg job on every rank, beside the lanes */
typedef struct big_job {
    MPI_Comm comm;
    const scheduler_config *cfg;
    sched_lanes *L;
    job_claim claim;
    adm_estimate est;
    uint64_t budget;
} big_job;

static void *big_run(void *arg)
{
    big_job *j = arg;
    sched_run_cg(j->comm, 1, j->cfg, &j->claim, &j->est, j->budget);
    job_params_free(&j->claim.params);
    job_store_retention(j->cfg->store);
    pthread_mutex_lock(&j->L->mu);
    j->L->big = 0;
    pthread_cond_broadcast(&j->L->cv);
    pthread_mutex_unlock(&j->L->mu);
    free(j);
    return NULL;
}

/* Waits until the exclusive lane is free (stop or not: its job ends). */
static void big_wait(sched_lanes *L)
{
    pthread_mutex_lock(&L->mu);
    while (L->big) {
        struct timespec ts = cls_deadline(CLOCK_REALTIME, 0.25);
        pthread_cond_timedwait(&L->cv, &L->mu, &ts);
    }
    pthread_mutex_unlock(&L->mu);
}

/* Waits until at most `most` lanes are busy (or stop). */
static void lanes_wait(sched_lanes *L, int most, volatile sig_atomic_t *stop, int even_if_stop)
{
    pthread_mutex_lock(&L->mu);
    while (L->busy > most && (even_if_stop || !*stop)) {
        struct timespec ts = cls_deadline(CLOCK_REALTIME, 0.25);
        pthread_cond_timedwait(&L->cv, &L->mu, &ts);
    }
    pthread_mutex_unlock(&L->mu);
}

/* 1 if c's matrix declares at most max_entries stored entries */
static int job_is_small(const job_claim *c, int64_t max_entries)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/matrix.mtx", c->dir) >= (int)sizeof path)
        return 0;
    mm_header h;
    cls_error e;
    if (mm_read_header(path, &h, &e) != CLS_OK)
        return 1; /* a bad header fails at once: no need for the whole world */
    return h.entries <= max_entries && h.rows <= max_entries;
}

/* The queued jobs that can join the batch c begins (sched_batch.c), in
 * queue order, each admitted and claimed; the first that cannot stays
 * queued and ends the gathering, so no job is overtaken by one behind it
 * (a job admission fails at once is skipped: it has ended). Returns the
 * batch, c first, with *n jobs (1: nothing else was waiting); NULL when
 * out of memory. */
static job_claim *batch_gather(const scheduler_config *cfg, const job_claim *c, int *n)
{
    const int cap = cfg->batch_max > 0 ? cfg->batch_max : 256;
    job_claim *b = malloc((size_t)cap * sizeof *b);
    *n = 0;
    if (!b)
        return NULL;
    b[0] = *c;
    int k = 1;
    while (k < cap && !*cfg->stop) {
        job_claim pk;
        if (!job_store_peek_queued(cfg->store, 0, &pk))
            break;
        int ok = sched_batch_same(c, &pk) && sched_batch_fits(cfg, &pk), v = ADM_RUN;
        adm_estimate est;
        uint64_t budget;
        if (ok)
            v = sched_admit(cfg, &pk, &est, &budget);
        job_params_free(&pk.params);
        if (ok && v == ADM_NEVER)
            continue; /* failed at once: the next one */
        if (!ok || v != ADM_RUN)
            break;
        cls_error e;
        int got = job_store_claim(cfg->store, pk.id, &b[k], &e);
        if (got < 0)
            break;
        k += got == 1;
    }
    *n = k;
    return b;
}

static json_t *placement_json(const char *mode, int lane, int lanes, int running, int ranks)
{
    json_t *o = json_pack("{s:s, s:i, s:i}", "mode", mode, "ranks", ranks, "running", running);
    if (lane >= 0) {
        json_object_set_new(o, "lane", json_integer(lane));
        json_object_set_new(o, "lanes", json_integer(lanes));
    }
    return o;
}

int scheduler_run_root(MPI_Comm comm, const scheduler_config *cfg)
{
    double last_retention = cls_now(), last_retry = 0;
    sched_drain_reset();
    int size = 1;
    MPI_Comm_size(comm, &size);
    sched_lanes L = {.max = cfg->lanes > 1 ? cfg->lanes : 1};
    if (L.max > 32)
        L.max = 32;
    pthread_mutex_init(&L.mu, NULL);
    pthread_cond_init(&L.cv, NULL);
    const int64_t small_max = cfg->shared_max_entries > 0 ? cfg->shared_max_entries : 4194304;
    while (!*cfg->stop) {
        /* take a job only when a lane could run it */
        lanes_wait(&L, L.max - 1, cfg->stop, 0);
        if (*cfg->stop)
            break;
        job_claim c;
        cls_error err;
        cls_error_clear(&err);
        if (cls_now() - last_retry > 1.0) {
            /* final states whose records could not be written */
            last_retry = cls_now();
            if (job_store_retry_pending(cfg->store, &err))
                fprintf(stderr, "clsolved: job store: %s (retrying)\n", err.msg);
        }
        job_claim peek;
        if (!job_store_peek_queued(cfg->store, 0.25, &peek)) {
            if (cls_now() - last_retention > cfg->retention_every_s) {
                job_store_retention(cfg->store);
                last_retention = cls_now();
            }
            continue;
        }
        adm_estimate est = {0};
        uint64_t budget = 0;
        int verdict = ADM_RUN;
        if (job_params_is_cg(&peek.params))
            verdict = sched_admit(cfg, &peek, &est, &budget);
#ifdef CLS_NET_HAVE_PHYSICS
        else
            verdict = sched_admit_physics(cfg, &peek);
#endif
        job_params_free(&peek.params);
        if (verdict == ADM_WAIT) {
            sched_pause(cfg, 1.0);
            continue;
        }
        if (verdict == ADM_NEVER)
            continue; /* failed at once */
        int got = job_store_claim(cfg->store, peek.id, &c, &err);
        if (got < 0) {
            /* the job stays queued (the disk says so); try again shortly */
            fprintf(stderr, "clsolved: job store: %s (retrying)\n", err.msg);
            sched_pause(cfg, 1.0);
            continue;
        }
        if (got == 1) {
            int cg = job_params_is_cg(&c.params);
            if (cg && L.max > 1 && job_is_small(&c, small_max)) {
                /* more small jobs waiting behind it: one launch for all */
                int nb = 1;
                job_claim *batch = sched_batch_fits(cfg, &c) ? batch_gather(cfg, &c, &nb) : NULL;
                if (batch && nb < 2) {
                    free(batch);
                    batch = NULL;
                }
                lane_job *j = malloc(sizeof *j);
                pthread_t tid;
                pthread_attr_t at;
                pthread_attr_init(&at);
                pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
                pthread_mutex_lock(&L.mu);
                int lane = 0;
                while (L.used & (1u << lane))
                    lane++;
                L.used |= 1u << lane;
                L.busy++;
                int running = L.busy;
                pthread_mutex_unlock(&L.mu);
                for (int i = 0; i < (batch ? nb : 1); i++) {
                    json_t *pl = placement_json(batch ? "batch" : "shared", lane, L.max, running, 1);
                    if (batch)
                        json_object_set_new(pl, "batch", json_integer(nb));
                    job_store_set_placement(cfg->store, batch ? batch[i].id : c.id, pl);
                }
                int started = 0;
                if (j) {
                    est.devices_per_rank = 1; /* a lane has one device */
                    *j = (lane_job){cfg, &L, c, lane, est, budget, batch, batch ? nb : 1};
                    started = pthread_create(&tid, &at, lane_run, j) == 0;
                }
                pthread_attr_destroy(&at);
                if (!started) { /* no thread: run it here, as a lane would */
                    free(j);
                    if (batch) {
                        sched_batch_run(cfg, batch, nb, budget);
                        for (int i = 1; i < nb; i++)
                            job_params_free(&batch[i].params);
                        free(batch);
                    } else {
                        sched_run_cg(MPI_COMM_SELF, 0, cfg, &c, &est, budget);
                    }
                    job_params_free(&c.params);
                    pthread_mutex_lock(&L.mu);
                    L.busy--;
                    L.used &= ~(1u << lane);
                    pthread_mutex_unlock(&L.mu);
                }
            } else {
                /* the whole world: once the exclusive lane and every lane
                 * are idle */
                if (L.busy > 0 || L.big) {
                    job_store_set_phase(cfg->store, c.id, "waiting");
                    big_wait(&L);
                    lanes_wait(&L, 0, cfg->stop, 1);
                }
                job_store_set_placement(cfg->store, c.id,
                                        placement_json("exclusive", -1, L.max, 1, cg ? size : 1));
                big_job *bj = cg && L.max > 1 ? malloc(sizeof *bj) : NULL;
                int started = 0;
                if (bj) { /* in the exclusive lane: the lanes go on beside it */
                    pthread_t tid;
                    pthread_attr_t at;
                    pthread_attr_init(&at);
                    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
                    *bj = (big_job){comm, cfg, &L, c, est, budget};
                    pthread_mutex_lock(&L.mu);
                    L.big = 1;
                    pthread_mutex_unlock(&L.mu);
                    started = pthread_create(&tid, &at, big_run, bj) == 0;
                    pthread_attr_destroy(&at);
                    if (!started) {
                        free(bj);
                        pthread_mutex_lock(&L.mu);
                        L.big = 0;
                        pthread_mutex_unlock(&L.mu);
                    }
                }
                if (started)
                    ; /* its thread frees the claim's parameters */
                else if (cg)
                    sched_run_cg(comm, 1, cfg, &c, &est, budget);
#ifdef CLS_NET_HAVE_PHYSICS
                else
                    sched_run_physics(cfg, &c);
#else
                else
                    job_store_complete(cfg->store, c.id, JOB_FAILED, NULL,
                                       sched_error_json("bad_request", CLS_EUSAGE,
                                                  "this daemon was built without the physics jobs",
                                                  0),
                                       NULL, NULL, &err);
#endif
                if (!started)
                    job_params_free(&c.params);
            }
        }
        if (got == 1 || cls_now() - last_retention > cfg->retention_every_s) {
            job_store_retention(cfg->store);
            last_retention = cls_now();
        }
    }
    /* drain: the lanes' jobs and the exclusive one finish before the
     * workers are told to exit */
    lanes_wait(&L, 0, cfg->stop, 1);
    big_wait(&L);
    pthread_mutex_destroy(&L.mu);
    pthread_cond_destroy(&L.cv);
    /* a last try for final states still unwritten (else the jobs run again
     * at the next start: the disk says running) */
    cls_error err;
    if (job_store_retry_pending(cfg->store, &err))
        fprintf(stderr, "clsolved: job store: %s; those jobs run again at the next start\n",
                err.msg);
    job_proto_msg m;
    memset(&m, 0, sizeof m);
    m.cmd = JOB_PROTO_EXIT;
    job_proto_send(comm, &m);
    return 0;
}
