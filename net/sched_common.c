/*
 * sched_common.c: what every kind of job's run shares (sched_priv.h): the
 * drain's clock, the messages and error objects of a job's record, its
 * events in the structured log, and the reader's callback that DELETE and
 * the drain stop. The scheduler's rooms (scheduler.c, sched_cg.c,
 * sched_batch.c) all use it; it uses none of them.
 */
#include "sched_priv.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../common/numfmt.h"
#include "../common/timer.h"
#include "log.h"
#include "metrics.h"
#include "problem.h"

/* When the drain began (0: not draining); the lanes' monitors read it
 * too, hence the lock. */
static double sched_drain_since;
static pthread_mutex_t sched_drain_mu = PTHREAD_MUTEX_INITIALIZER;

/* 1 once a drain has given the running jobs their time. */
int sched_drain_over(const scheduler_config *cfg)
{
    if (!*cfg->stop)
        return 0;
    pthread_mutex_lock(&sched_drain_mu);
    if (sched_drain_since == 0)
        sched_drain_since = cls_now();
    double since = sched_drain_since;
    pthread_mutex_unlock(&sched_drain_mu);
    return cls_now() - since > cfg->drain_timeout_s;
}

void sched_drain_reset(void)
{
    pthread_mutex_lock(&sched_drain_mu);
    sched_drain_since = 0;
    pthread_mutex_unlock(&sched_drain_mu);
}

/* The reader's callback (mm_read_options): DELETE and the drain stop a
 * long read, as they stop iterations. */
int sched_read_progress(void *ctx, int64_t bytes)
{
    sched_monitor_ctx *c = ctx;
    (void)bytes;
    if (job_store_cancel_requested(c->store, c->id))
        c->cancelled = 1;
    else if (sched_drain_over(c->cfg))
        c->drained = 1;
    return c->cancelled || c->drained;
}

void sched_user_message(char *msg, size_t cap, const job_claim *c, const char *a, const char *b,
                        const char *x0)
{
    cls_str_replace_all(msg, cap, a, c->in.matrix_name);
    if (b[0])
        cls_str_replace_all(msg, cap, b, c->in.rhs_name);
    if (x0[0])
        cls_str_replace_all(msg, cap, x0, c->in.x0_name);
    char dir[PATH_MAX + 2];
    snprintf(dir, sizeof dir, "%s/", c->dir);
    cls_str_replace_all(msg, cap, dir, "");
    cls_str_replace_all(msg, cap, c->dir, "the job directory");
}

const char *sched_error_code(int rc)
{
    switch (rc) {
    case CLS_EINPUT:
        return "bad_input";
    case CLS_ENOTCONV:
        return "not_converged";
    case CLS_EBREAKDOWN:
        return "breakdown";
    case CLS_EUSAGE:
        return "bad_request";
    default:
        return "internal";
    }
}

json_t *sched_error_json(const char *code, int exit_code, const char *msg, long long line)
{
    char m[1024];
    snprintf(m, sizeof m, "%s", msg);
    problem_ascii(m);
    json_t *e = json_pack("{s:s, s:i, s:s}", "code", code, "exit_code", exit_code, "message", m);
    if (line > 0)
        json_object_set_new(e, "line", json_integer(line));
    return e;
}

int sched_disk_full(const cls_error *e)
{
    return strstr(e->msg, strerror(ENOSPC)) || strstr(e->msg, strerror(EDQUOT));
}

/* The job's events in the structured log (log.h). */
void sched_log_started(const job_claim *c)
{
    double wait = c->started > c->created ? c->started - c->created : 0;
    metrics_queue_wait(wait);
    log_event("job_started", json_pack("{s:s, s:s, s:f}", "job", c->id, "kind", c->params.kind,
                                       "queue_wait_s", wait));
}

/* The job's time before it ran, beside the phases of its run (total_s):
 * its upload (receive_s, 0 when unknown: a record from before the field)
 * and its wait in the queue (queue_s), for the dashboard's bar. */
void sched_wait_timings(json_t *timings, const job_claim *c)
{
    json_object_set_new(timings, "receive_s", json_real(c->in.receive_s > 0 ? c->in.receive_s : 0));
    double q = c->created > 0 && c->started >= c->created ? c->started - c->created : 0;
    json_object_set_new(timings, "queue_s", json_real(q));
}

void sched_log_finished(const job_claim *c, job_status st, json_t *error, json_t *timings,
                        int64_t iterations, double rel)
{
    json_t *f = json_pack("{s:s, s:s, s:s}", "job", c->id, "kind", c->params.kind, "status",
                          job_status_name(st));
    if (!f)
        return;
    if (iterations > 0 || isfinite(rel)) {
        json_object_set_new(f, "iterations", json_integer(iterations));
        json_object_set_new(f, "relative_residual", isfinite(rel) ? json_real(rel) : json_null());
    }
    if (json_is_object(error)) {
        json_object_set(f, "code", json_object_get(error, "code"));
        json_object_set(f, "message", json_object_get(error, "message"));
    }
    if (json_is_object(timings))
        json_object_set(f, "timings", timings);
    log_event("job_finished", f);
}
