/*
 * sched_physics.c: running one physics job (sched_priv.h) on rank 0 with
 * its uploaded input only (options naming a file on this host fail it:
 * job_files.h): the kind's run (physics/job.h) with a stop that DELETE and
 * the drain set, its output files synced with their directory before the
 * record says succeeded.
 */
#include "sched_priv.h"

#ifdef CLS_NET_HAVE_PHYSICS
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/timer.h"
#include "../physics/job.h"
#include "fileio.h"
#include "job_files.h"
#include "metrics.h"

/* s with every `from` replaced by `to`, malloc'ed (NULL when out of memory). */
static char *str_replace_dup(const char *s, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), n = 0;
    if (!fl)
        return strdup(s);
    for (const char *p = s; (p = strstr(p, from)) != NULL; p += fl)
        n++;
    size_t len = strlen(s) + n * tl + 1;
    char *out = malloc(len), *o = out;
    if (!out)
        return NULL;
    const char *p = s, *q;
    while ((q = strstr(p, from)) != NULL) {
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, to, tl);
        o += tl;
        p = q + fl;
    }
    strcpy(o, p);
    return out;
}

/* fsyncs the files a physics job wrote, then the directory. */
static int sync_dir_files(const char *dir, cls_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return CLS_OK;
    struct dirent *e;
    int rc = CLS_OK;
    while ((e = readdir(d)) != NULL && !rc) {
        if (e->d_name[0] == '.')
            continue;
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p)
            continue;
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
            rc = fileio_sync_path(p, err);
    }
    closedir(d);
    return rc ? rc : fileio_sync_path(dir, err);
}

/* physics_ctl's stop: DELETE and the drain, as for a read (above) */
static int sched_physics_stop(void *ctx)
{
    return sched_read_progress(ctx, 0);
}

void sched_run_physics(const scheduler_config *cfg, const job_claim *c)
{
    job_store *s = cfg->store;
    char out[PATH_MAX], input[PATH_MAX];
    cls_error err;
    cls_error_clear(&err);
    if (snprintf(out, sizeof out, "%s/out", c->dir) >= (int)sizeof out ||
        snprintf(input, sizeof input, "%s/%s", c->dir, c->in.input_file) >= (int)sizeof input) {
        if (job_store_complete(
                s, c->id, JOB_FAILED, NULL,
                sched_error_json("internal", CLS_EOTHER, "data directory path too long", 0), NULL,
                NULL, &err))
            fprintf(stderr, "clsolved: job %s: %s\n", c->id, err.msg);
        return;
    }
    job_store_set_phase(s, c->id, "running");
    sched_log_started(c);
    double t0 = cls_now();
    /* no options: the driver gets "{}" (a literal: a json_object() made
     * here for it would leak) */
    char *opts = c->params.options ? json_dumps(c->params.options, JSON_COMPACT) : strdup("{}");
    char *result_text = NULL;
    int rc = opts ? fileio_mkdir(out, &err) : cls_fail(&err, CLS_EOTHER, "out of memory");
    /* the routes refuse path options at submission; a record queued by an
     * older daemon is refused here, before the driver could open the path */
    if (!rc)
        rc = job_files_check(c->params.kind, c->params.options, &err);
    sched_monitor_ctx mc = {.store = s, .id = c->id, .cfg = cfg};
    physics_ctl ctl = {.stop = sched_physics_stop, .ctx = &mc};
    if (!rc)
        rc = physics_job_run(c->params.kind, opts, c->in.has_input ? input : NULL, out, cfg->device,
                             &ctl, &result_text, &err);
    if (mc.drained) {
        /* the drain ran out of time: the job runs again at the next start */
        free(opts);
        free(result_text);
        if (job_store_requeue(s, c->id, &err))
            fprintf(stderr, "clsolved: job %s: %s\n", c->id, err.msg);
        fprintf(stderr, "clsolved: job %s stopped by the drain after %.0f s; queued again\n", c->id,
                cfg->drain_timeout_s);
        return;
    }
    if (!rc)
        rc = sync_dir_files(out, &err);
    double total = cls_now() - t0;
    free(opts);
    if (c->in.has_input) {
        char in_dir[PATH_MAX + 2];
        snprintf(in_dir, sizeof in_dir, "%s/", c->dir);
        cls_str_replace_all(err.msg, sizeof err.msg, input, c->in.input_name);
        cls_str_replace_all(err.msg, sizeof err.msg, in_dir, "");
    }
    json_t *result = NULL, *error = NULL;
    if (result_text && c->in.has_input) {
        /* the driver names its input by path: show the client's name */
        char in_dir[PATH_MAX + 2];
        snprintf(in_dir, sizeof in_dir, "%s/", c->dir);
        char *t1 = str_replace_dup(result_text, input, c->in.input_name);
        char *t2 = t1 ? str_replace_dup(t1, in_dir, "") : NULL;
        free(t1);
        if (t2) {
            free(result_text);
            result_text = t2;
        }
    }
    if (!rc && result_text) {
        result = json_loads(result_text, 0, NULL);
        if (!json_is_object(result)) {
            json_decref(result);
            result = json_pack("{s:s}", "summary", result_text);
        }
    }
    free(result_text);
    job_status st = rc ? JOB_FAILED : JOB_SUCCEEDED;
    if (mc.cancelled) {
        st = JOB_CANCELLED;
        json_decref(result);
        result = NULL;
        error = sched_error_json("cancelled", CLS_EOTHER, rc ? err.msg : "cancelled", 0);
    } else if (rc) {
        error = sched_error_json(sched_error_code(rc), rc, err.msg, err.line);
    }
    metrics_job_finished(st, total, 0);
    metrics_job_phase("total", total);
    json_t *tm = json_pack("{s:f}", "total_s", total);
    sched_wait_timings(tm, c);
    sched_log_finished(c, st, error, tm, 0, NAN);
    metrics_device_busy(0, -1, cfg->device, total);
    cls_error werr;
    if (job_store_complete(s, c->id, st, result, error, tm, NULL, &werr))
        fprintf(stderr, "clsolved: job %s: %s\n", c->id, werr.msg);
}
#endif
