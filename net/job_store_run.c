/*
 * job_store_run.c: the job store's transitions (see job_store.h; the
 * records and locks are job_store_priv.h's): the scheduler taking a job,
 * its final state, a job put back by a drain, cancel, DELETE (remove),
 * pinning.
 *
 * Each transition holds `io` throughout: it copies the record, changes the
 * copy, writes the copy's JSON, and changes the record in memory only when
 * the write succeeded, so what a client reads is what the disk holds. A
 * failed write: the scheduler's claim leaves the job queued (and is retried
 * after a pause); a final state is kept beside the record (`pending`), the
 * job shown `running` in phase `saving` with its `store_error`, and written
 * by job_store_retry_pending; a cancellation or a pin is answered 500 with
 * nothing changed. A job is never lost to the store's own failure.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/timer.h"
#include "fileio.h"
#include "job_store_priv.h"

/* What a client is told about a failed write: the system's words, not the
 * daemon's paths. */
static void store_error_text(char *out, size_t cap, const cls_error *err)
{
    const char *m = err->msg, *c = strrchr(m, ':');
    snprintf(out, cap, "the job record could not be written (%.120s); it is retried",
             c && c[1] ? c + 2 : m);
}

/* Writes the copy v of a record (io held, mu not). */
static int write_view(job_store *s, const job_rec *v, cls_error *err)
{
    pthread_mutex_lock(&s->mu);
    char *text = job_store_dump(job_store_rec_json(v, 1));
    pthread_mutex_unlock(&s->mu);
    if (!text)
        return cls_fail(err, CLS_EOTHER, "out of memory writing job.json");
    int rc = job_store_write_record(s, v->id, text, err);
    free(text);
    return rc;
}

/* --- the scheduler --- */

/* What the scheduler gets of a record (under s->mu): a copy it owns. */
static void claim_fill(job_store *s, const job_rec *r, job_claim *c)
{
    memset(c, 0, sizeof *c);
    memcpy(c->id, r->id, sizeof c->id);
    job_store_dir_of(s, r->id, c->dir, sizeof c->dir);
    c->params = r->params;
    c->params.options = r->params.options ? json_deep_copy(r->params.options) : NULL;
    c->in = r->in;
    c->created = r->created;
    c->started = r->started;
}

int job_store_peek_queued(job_store *s, double timeout_s, job_claim *c)
{
    struct timespec dl = cls_deadline(CLOCK_MONOTONIC, timeout_s);
    job_rec *r = NULL;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        for (size_t i = 0; i < s->n && !r; i++)
            if (s->recs[i]->status == JOB_QUEUED)
                r = s->recs[i];
        if (r || s->wake)
            break;
        if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT)
            break;
    }
    s->wake = 0;
    if (r)
        claim_fill(s, r, c);
    pthread_mutex_unlock(&s->mu);
    return r != NULL;
}

void job_store_set_note(job_store *s, const char *id, const char *note)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (r)
        snprintf(r->note, sizeof r->note, "%s", note ? note : "");
    pthread_mutex_unlock(&s->mu);
}

int job_store_claim(job_store *s, const char *id, job_claim *c, cls_error *err)
{
    pthread_mutex_lock(&s->io);
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (!r || r->status != JOB_QUEUED) { /* cancelled meanwhile */
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_unlock(&s->io);
        return 0;
    }
    job_rec v = *r;
    v.status = JOB_RUNNING;
    v.started = job_store_wall_now();
    v.updated = v.started;
    pthread_mutex_unlock(&s->mu);
    int rc = write_view(s, &v, err);
    pthread_mutex_lock(&s->mu);
    r = job_store_find(s, id);
    if (rc) {
        if (r)
            store_error_text(r->store_error, sizeof r->store_error, err);
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_unlock(&s->io);
        return -1;
    }
    r->status = JOB_RUNNING;
    r->started = v.started;
    r->updated = v.started;
    r->iteration = 0;
    r->residual = NAN;
    r->nhist = 0;
    r->cancel = 0;
    r->store_error[0] = '\0';
    r->note[0] = '\0';
    snprintf(r->phase, sizeof r->phase, "starting");
    r->phase_started = r->started;
    cls_eta_reset(&r->eta);
    r->eta_s = -1;
    claim_fill(s, r, c);
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->io);
    return 1;
}

int job_store_claim_next(job_store *s, double timeout_s, job_claim *c, cls_error *err)
{
    job_claim peek;
    if (!job_store_peek_queued(s, timeout_s, &peek))
        return 0;
    job_params_free(&peek.params);
    return job_store_claim(s, peek.id, c, err);
}

void job_store_wake(job_store *s)
{
    pthread_mutex_lock(&s->mu);
    s->wake = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

int job_store_progress(job_store *s, const char *id, int64_t iteration, double residual)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    int cancel = 1;
    if (r) {
        r->iteration = iteration;
        r->residual = residual;
        r->updated = job_store_wall_now();
        r->eta_s = cls_eta_update(&r->eta, r->updated, iteration, r->params.maxiter, residual,
                                  r->params.tol);
        if (r->nhist == r->hcap) {
            int64_t nc = r->hcap ? 2 * r->hcap : 1024;
            double *nh = realloc(r->hist, (size_t)nc * sizeof *nh);
            if (nh) {
                r->hist = nh;
                r->hcap = nc;
            }
        }
        if (r->nhist == 0)
            r->hfirst = iteration == 0 ? 0 : 1;
        if (r->nhist < r->hcap) {
            /* the live history holds iterations hfirst, hfirst + 1, ... at
             * 0, 1, ... (the solvers report iteration 0, the initial
             * residual, first); a gap, should the monitor skip iterations,
             * repeats the value */
            while (r->nhist + r->hfirst <= iteration && r->nhist < r->hcap)
                r->hist[r->nhist++] = residual;
        }
        cancel = r->cancel;
    }
    pthread_mutex_unlock(&s->mu);
    return cancel;
}

int job_store_cancel_requested(job_store *s, const char *id)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    int cancel = !r || r->cancel;
    pthread_mutex_unlock(&s->mu);
    return cancel;
}

void job_store_set_phase(job_store *s, const char *id, const char *phase)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (r) {
        snprintf(r->phase, sizeof r->phase, "%s", phase);
        r->updated = job_store_wall_now();
        r->phase_started = r->updated;
    }
    pthread_mutex_unlock(&s->mu);
}

void job_store_set_placement(job_store *s, const char *id, json_t *placement)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (r) {
        json_decref(r->placement);
        r->placement = placement;
        placement = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    json_decref(placement);
}

int job_store_history(job_store *s, const char *id, double **h, int64_t *n)
{
    *h = NULL;
    *n = 0;
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (r && r->nhist > 0 && (*h = malloc((size_t)r->nhist * sizeof **h))) {
        memcpy(*h, r->hist, (size_t)r->nhist * sizeof **h);
        *n = r->nhist;
    }
    pthread_mutex_unlock(&s->mu);
    return r ? 0 : -1;
}

/* drops the four objects of an outcome (the struct itself stays) */
static void outcome_drop(job_pending *o)
{
    json_decref(o->result);
    json_decref(o->error);
    json_decref(o->timings);
    json_decref(o->devices);
    o->result = o->error = o->timings = o->devices = NULL;
}

static void pending_free(job_pending *p)
{
    if (!p)
        return;
    outcome_drop(p);
    free(p);
}

/* The final state, finished at `finished` (the json objects are stolen).
 * The outcome is written first; what the table keeps depends on whether
 * the write succeeded, and whatever nobody keeps is dropped at the end. */
static int complete_at(job_store *s, const char *id, job_status st, double finished, json_t *result,
                       json_t *error, json_t *timings, json_t *devices, cls_error *err)
{
    job_pending out = {st, finished, result, error, timings, devices};
    int rc = CLS_OK;
    pthread_mutex_lock(&s->io);
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (!r) {
        pthread_mutex_unlock(&s->mu);
        goto unlock;
    }
    job_rec v = *r;
    v.status = st;
    v.finished = finished;
    v.updated = finished;
    v.result = result;
    v.error = error;
    v.timings = timings;
    v.devices = devices;
    v.pending = NULL;
    /* the progress ends at the result's iteration and residual: the last
     * report is throttled and may lag it by a few iterations (a cancelled
     * job's record said 313 where its result said 316) */
    json_t *rit = json_object_get(result, "iterations");
    json_t *rres = json_object_get(result, "relative_residual");
    if (json_is_integer(rit))
        v.iteration = json_integer_value(rit);
    if (json_is_number(rres))
        v.residual = json_number_value(rres);
    pthread_mutex_unlock(&s->mu);
    rc = write_view(s, &v, err);
    pthread_mutex_lock(&s->mu);
    r = job_store_find(s, id);
    if (r && rc) {
        /* the disk still says running: so does the table, until a retry
         * writes the final state kept here */
        job_pending *p = r->pending ? r->pending : calloc(1, sizeof *p);
        if (p) {
            outcome_drop(p);
            *p = out; /* kept: nothing left to drop */
            out = (job_pending){0};
            r->pending = p;
        }
        if (strcmp(r->phase, "saving")) {
            snprintf(r->phase, sizeof r->phase, "saving");
            r->phase_started = job_store_wall_now();
        }
        store_error_text(r->store_error, sizeof r->store_error, err);
    } else if (r) {
        r->status = st;
        job_store_changed(s);
        r->finished = finished;
        r->updated = finished;
        r->phase_started = finished;
        snprintf(r->phase, sizeof r->phase, "done");
        r->iteration = v.iteration;
        r->residual = v.residual;
        /* swap: the record takes the outcome, `out` the objects it had */
        job_pending old = {0, 0, r->result, r->error, r->timings, r->devices};
        r->result = out.result;
        r->error = out.error;
        r->timings = out.timings;
        r->devices = out.devices;
        out = old;
        free(r->hist);
        r->hist = NULL;
        r->nhist = r->hcap = 0;
        r->store_error[0] = '\0';
        pending_free(r->pending);
        r->pending = NULL;
        char dir[PATH_MAX];
        job_store_dir_of(s, id, dir, sizeof dir);
        r->disk = job_store_dir_bytes(dir); /* io held: no removal meanwhile */
    }
    pthread_mutex_unlock(&s->mu);
unlock:
    pthread_mutex_unlock(&s->io);
    outcome_drop(&out);
    return rc;
}

int job_store_complete(job_store *s, const char *id, job_status st, json_t *result, json_t *error,
                       json_t *timings, json_t *devices, cls_error *err)
{
    return complete_at(s, id, st, job_store_wall_now(), result, error, timings, devices, err);
}

int job_store_retry_pending(job_store *s, cls_error *err)
{
    int left = 0;
    for (;;) {
        char id[IDS_LEN + 1] = "";
        job_pending *p = NULL;
        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < s->n && !p; i++)
            if (s->recs[i]->pending && strcmp(s->recs[i]->id, id) != 0) {
                p = s->recs[i]->pending;
                s->recs[i]->pending = NULL;
                memcpy(id, s->recs[i]->id, sizeof id);
            }
        pthread_mutex_unlock(&s->mu);
        if (!p)
            return left;
        /* complete_at puts it back on failure; stop there (the disk fails) */
        int rc = complete_at(s, id, p->status, p->finished, p->result, p->error, p->timings,
                             p->devices, err);
        free(p);
        if (rc) {
            pthread_mutex_lock(&s->mu);
            for (size_t i = 0; i < s->n; i++)
                left += s->recs[i]->pending != NULL;
            pthread_mutex_unlock(&s->mu);
            return left;
        }
    }
}

int job_store_requeue(job_store *s, const char *id, cls_error *err)
{
    pthread_mutex_lock(&s->io);
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (!r || r->status != JOB_RUNNING) {
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_unlock(&s->io);
        return CLS_OK;
    }
    job_rec v = *r;
    v.status = JOB_QUEUED;
    v.started = 0;
    v.interrupted++;
    pthread_mutex_unlock(&s->mu);
    int rc = write_view(s, &v, err);
    pthread_mutex_lock(&s->mu);
    r = job_store_find(s, id);
    if (r && !rc) {
        r->status = JOB_QUEUED;
        r->started = 0;
        r->interrupted = v.interrupted;
        r->cancel = 0;
        r->nhist = 0;
        r->iteration = 0;
        r->residual = NAN;
        snprintf(r->phase, sizeof r->phase, "queued");
        r->phase_started = job_store_wall_now();
    }
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->io);
    return rc;
}

/* --- cancel, DELETE, pinning --- */

int job_store_cancel(job_store *s, const char *id, job_cancel_outcome *out, job_status *st,
                     char **json, cls_error *err)
{
    *json = NULL;
    pthread_mutex_lock(&s->io);
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (!r) {
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_unlock(&s->io);
        return -1;
    }
    char rid[IDS_LEN + 1];
    memcpy(rid, r->id, sizeof rid);
    *st = r->status;
    if (r->status == JOB_QUEUED) {
        job_rec v = *r;
        v.status = JOB_CANCELLED;
        v.finished = job_store_wall_now();
        v.updated = v.finished;
        v.phase_started = v.finished;
        v.cancel = 1;
        v.error = json_pack("{s:s, s:i, s:s}", "code", "cancelled", "exit_code", 1, "message",
                            "cancelled while queued");
        pthread_mutex_unlock(&s->mu);
        int rc = write_view(s, &v, err);
        pthread_mutex_lock(&s->mu);
        r = job_store_find(s, rid);
        if (r && !rc) {
            r->status = JOB_CANCELLED;
            job_store_changed(s);
            r->finished = v.finished;
            r->updated = v.finished;
            r->phase_started = v.finished;
            r->cancel = 1;
            snprintf(r->phase, sizeof r->phase, "done");
            json_decref(r->error);
            r->error = v.error;
            r->store_error[0] = '\0';
            *st = JOB_CANCELLED;
        } else {
            json_decref(v.error);
        }
        *out = JOB_CANCEL_DONE;
        *json = r ? job_store_dump(job_store_rec_json(r, 0)) : NULL;
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_unlock(&s->io);
        if (rc) {
            char why[200];
            store_error_text(why, sizeof why, err);
            cls_fail(err, CLS_EOTHER, "job %s could not be cancelled and is still queued: %s", rid,
                     why);
        }
        return rc ? CLS_EOTHER : 0;
    }
    /* a running job stops at its next iteration; a finished one is never
     * touched: a cancel that arrives just after the end changes nothing.
     * The request is written to the record too, so that a daemon that
     * stops before the job does ends it cancelled at its next start
     * instead of running it again (issue 27, item 1); io is held, so the
     * job cannot complete while its view is written. */
    if (r->status == JOB_RUNNING) {
        r->cancel = 1;
        *out = JOB_CANCEL_REQUESTED;
        if (!r->cancel_written) {
            job_rec v = *r;
            pthread_mutex_unlock(&s->mu);
            cls_error we;
            cls_error_clear(&we);
            int wrc = write_view(s, &v, &we);
            pthread_mutex_lock(&s->mu);
            r = job_store_find(s, rid);
            if (r && !wrc)
                r->cancel_written = 1;
            else if (wrc)
                fprintf(stderr, "clsolved: job %s: the cancel was not recorded: %s\n", rid, we.msg);
        }
    } else {
        *out = JOB_CANCEL_FINISHED;
    }
    *json = r ? job_store_dump(job_store_rec_json(r, 0)) : NULL;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->io);
    return 0;
}

int job_store_remove(job_store *s, const char *id, job_status *st, cls_error *err)
{
    pthread_mutex_lock(&s->io);
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (!r) {
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_unlock(&s->io);
        return -1;
    }
    *st = r->status;
    if (!job_status_final(r->status)) { /* queued or running: cancel it first */
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_unlock(&s->io);
        return JOB_REMOVE_ACTIVE;
    }
    char rid[IDS_LEN + 1];
    memcpy(rid, r->id, sizeof rid);
    /* the record goes first; while it cannot, nothing changes */
    pthread_mutex_unlock(&s->mu);
    char dir[PATH_MAX], path[PATH_MAX];
    job_store_dir_of(s, rid, dir, sizeof dir);
    /* the marker first: a directory without job.json is a removal cut
     * short only when marked (else start-up quarantines it) */
    cls_error em;
    cls_error_clear(&em);
    int mark_failed = job_store_removal_mark(s, rid, &em) != 0;
    int e = mark_failed ? EIO : 0;
    if (!e && snprintf(path, sizeof path, "%s/job.json", dir) < (int)sizeof path &&
        unlink(path) != 0 && errno != ENOENT) {
        e = errno;
        job_store_removal_unmark(s, rid);
    }
    if (e) {
        if (mark_failed)
            fprintf(stderr, "clsolved: %s\n", em.msg);
        pthread_mutex_unlock(&s->io);
        pthread_mutex_lock(&s->mu);
        s->removal_errors++;
        pthread_mutex_unlock(&s->mu);
        cls_fail(err, CLS_EOTHER,
                 "job %s could not be deleted: its record cannot be removed (%s); it is kept", rid,
                 strerror(e));
        return JOB_REMOVE_FAILED;
    }
    pthread_mutex_lock(&s->mu);
    r = job_store_find(s, rid);
    if (r) {
        job_store_remove_at(s, job_store_find_index(s, r));
        job_store_rec_free(r);
    }
    pthread_mutex_unlock(&s->mu);
    cls_error e2;
    int rc = fileio_remove_tree(dir, &e2);
    if (!rc)
        job_store_removal_unmark(s, rid);
    pthread_mutex_unlock(&s->io);
    if (rc) {
        pthread_mutex_lock(&s->mu);
        s->removal_errors++;
        pthread_mutex_unlock(&s->mu);
        const char *c = strrchr(e2.msg, ':');
        cls_fail(err, CLS_EOTHER,
                 "job %s is deleted, but some of its files could not be removed (%s); the daemon "
                 "removes them at its next start",
                 rid, c && c[1] ? c + 2 : e2.msg);
        return JOB_REMOVE_FAILED;
    }
    return 0;
}

int job_store_pin(job_store *s, const char *id, int pinned, char **json, cls_error *err)
{
    *json = NULL;
    pthread_mutex_lock(&s->io);
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (!r) {
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_unlock(&s->io);
        return -1;
    }
    job_rec v = *r;
    v.pinned = pinned != 0;
    pthread_mutex_unlock(&s->mu);
    int rc = write_view(s, &v, err);
    pthread_mutex_lock(&s->mu);
    r = job_store_find(s, id);
    if (r && !rc)
        r->pinned = v.pinned;
    *json = r ? job_store_dump(job_store_rec_json(r, 0)) : NULL;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&s->io);
    return rc ? CLS_EOTHER : 0;
}
