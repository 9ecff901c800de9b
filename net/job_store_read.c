/*
 * job_store_read.c: the job store as its readers see it (see
 * job_store.h): a job, the list (newest first, by id or by page), the
 * residual history (live for a running job, from residuals.json once it
 * ended), the counts, and the store's health and metrics. Readers hold
 * `mu` only, never `io`, so a slow disk never holds up a status request.
 * Two reads leave a mark in the record, written under io as every change
 * is: a keep=until-fetched job's first fetch (fetched_at, which frees it
 * for retention) and a download that found the result damaged.
 */
#include "job_store.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_store_priv.h"

/* --- the store's health --- */

int job_store_healthy(job_store *s, char *why, size_t cap)
{
    pthread_mutex_lock(&s->mu);
    int pending = 0;
    for (size_t i = 0; i < s->n; i++)
        pending += s->recs[i]->pending != NULL;
    int ok = !s->write_failed && !pending && !s->disk_wait[0];
    if (!ok && why)
        snprintf(why, cap, "%s%s",
                 s->write_failed   ? s->health
                 : s->disk_wait[0] ? s->disk_wait
                                   : "the job store",
                 pending ? " (finished jobs waiting for their records to be written)" : "");
    pthread_mutex_unlock(&s->mu);
    return ok;
}

/* Entries of DATA/quarantine/ now (an operator may have removed some): a
 * short directory read per scrape; -1 when it cannot be read. */
static int64_t quarantine_count(const job_store *s)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/quarantine", s->data);
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    int64_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

char *job_store_metrics(void *arg)
{
    job_store *s = arg;
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    int healthy = job_store_healthy(s, NULL, 0);
    pthread_mutex_lock(&s->mu);
    fprintf(f,
            "# HELP clsolve_store_healthy 1 when the job store's last write succeeded.\n"
            "# TYPE clsolve_store_healthy gauge\nclsolve_store_healthy %d\n"
            "# HELP clsolve_store_write_errors_total Job records that could not be written.\n"
            "# TYPE clsolve_store_write_errors_total counter\n"
            "clsolve_store_write_errors_total %llu\n"
            "# HELP clsolve_store_removal_errors_total Job directories that could not be "
            "removed completely.\n# TYPE clsolve_store_removal_errors_total counter\n"
            "clsolve_store_removal_errors_total %llu\n"
            "# HELP clsolve_store_damaged_total Downloads refused because the stored file is not "
            "what was written (size or CRC-32).\n# TYPE clsolve_store_damaged_total counter\n"
            "clsolve_store_damaged_total %llu\n",
            healthy, (unsigned long long)s->write_errors, (unsigned long long)s->removal_errors,
            (unsigned long long)s->damaged);
    fprintf(f, "# HELP clsolve_store_quarantined_total Job directories moved to DATA/quarantine "
               "at start in this run, by reason (record: job.json unreadable or invalid; "
               "no-record: job.json missing; damaged: the stored result is not what was "
               "written).\n# TYPE clsolve_store_quarantined_total counter\n");
    for (int k = 0; k < JOB_QUARANTINE_NREASONS; k++)
        fprintf(f, "clsolve_store_quarantined_total{reason=\"%s\"} %llu\n",
                job_store_quarantine_reasons[k], (unsigned long long)s->quarantined[k]);
    uint64_t damaged_jobs = 0;
    for (size_t i = 0; i < s->n; i++)
        damaged_jobs += s->recs[i]->damaged[0] != 0;
    fprintf(f,
            "# HELP clsolve_store_quarantine_jobs Job directories in DATA/quarantine now "
            "(an operator inspects and removes them; the daemon never does).\n"
            "# TYPE clsolve_store_quarantine_jobs gauge\nclsolve_store_quarantine_jobs %lld\n"
            "# HELP clsolve_store_damaged_jobs Jobs whose stored result a download found damaged "
            "(answered 500 store-damaged; quarantined at the next start).\n"
            "# TYPE clsolve_store_damaged_jobs gauge\nclsolve_store_damaged_jobs %llu\n"
            "# HELP clsolve_retention_waiting_fetch Unfetched keep=until-fetched jobs that "
            "retention keeps although a limit is exceeded.\n"
            "# TYPE clsolve_retention_waiting_fetch gauge\nclsolve_retention_waiting_fetch %lld\n",
            (long long)quarantine_count(s), (unsigned long long)damaged_jobs,
            (long long)s->retention_waiting);
    uint64_t jobs_bytes = 0, finished_bytes = 0, pinned = 0;
    for (size_t i = 0; i < s->n; i++) {
        jobs_bytes += s->recs[i]->disk;
        finished_bytes += s->recs[i]->status >= JOB_SUCCEEDED ? s->recs[i]->disk : 0;
        pinned += s->recs[i]->pinned != 0;
    }
    fprintf(f,
            "# HELP clsolve_jobs_disk_bytes Bytes of the jobs' files (all; finished).\n"
            "# TYPE clsolve_jobs_disk_bytes gauge\nclsolve_jobs_disk_bytes{jobs=\"all\"} %llu\n"
            "clsolve_jobs_disk_bytes{jobs=\"finished\"} %llu\n"
            "# HELP clsolve_jobs_pinned Jobs exempt from retention.\n"
            "# TYPE clsolve_jobs_pinned gauge\nclsolve_jobs_pinned %llu\n"
            "# HELP clsolve_retention_removed_total Finished jobs removed by retention.\n"
            "# TYPE clsolve_retention_removed_total counter\n"
            "clsolve_retention_removed_total %llu\n"
            "# HELP clsolve_keep_bytes The --keep-bytes limit (0: none).\n"
            "# TYPE clsolve_keep_bytes gauge\nclsolve_keep_bytes %llu\n",
            (unsigned long long)jobs_bytes, (unsigned long long)finished_bytes,
            (unsigned long long)pinned, (unsigned long long)s->retention_removed,
            (unsigned long long)s->cfg.keep_bytes);
    uint64_t avail, size;
    if (!job_store_disk_space(s, &avail, &size))
        fprintf(f,
                "# HELP clsolve_disk_free_bytes Free bytes on the data directory's disk.\n"
                "# TYPE clsolve_disk_free_bytes gauge\nclsolve_disk_free_bytes %llu\n"
                "# HELP clsolve_disk_size_bytes Size of the data directory's disk.\n"
                "# TYPE clsolve_disk_size_bytes gauge\nclsolve_disk_size_bytes %llu\n"
                "# HELP clsolve_disk_reserve_bytes Free space uploads must leave "
                "(--disk-reserve).\n# TYPE clsolve_disk_reserve_bytes gauge\n"
                "clsolve_disk_reserve_bytes %llu\n",
                (unsigned long long)avail, (unsigned long long)size,
                (unsigned long long)s->cfg.disk_reserve);
    pthread_mutex_unlock(&s->mu);
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* --- reading --- */

int job_store_get_json(job_store *s, const char *id, char **json)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    *json = r ? job_store_dump(job_store_rec_json(r, 0)) : NULL;
    pthread_mutex_unlock(&s->mu);
    return r ? 0 : -1;
}

int job_store_list_json(job_store *s, int limit, const char *after, int page, const char *status,
                        char **json, cls_error *err)
{
    int want = -1;
    if (status && (want = job_store_status_from_name(status)) < 0)
        return cls_fail(
            err, CLS_EINPUT,
            "status: '%.32s' is not one of queued, running, succeeded, failed, cancelled", status);
    json_t *o = json_object(), *arr = json_array();
    pthread_mutex_lock(&s->mu);
    size_t start = s->n; /* exclusive upper index, newest first */
    if (after && page <= 0) {
        job_rec *a = job_store_find(s, after);
        if (!a) {
            pthread_mutex_unlock(&s->mu);
            json_decref(o);
            json_decref(arr);
            return cls_fail(err, CLS_EINPUT, "after: no job with id '%.40s'", after);
        }
        start = job_store_find_index(s, a);
    }
    int64_t skip = page > 0 ? (int64_t)(page - 1) * limit : 0;
    int64_t total = 0;
    const job_rec *last = NULL;
    int more = 0;
    for (size_t i = s->n; i-- > 0;) {
        const job_rec *r = s->recs[i];
        if (want >= 0 && (int)r->status != want)
            continue;
        total++;
        if (i >= start)
            continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        if ((int64_t)json_array_size(arr) >= limit) {
            more = 1;
            continue;
        }
        json_array_append_new(arr, job_store_rec_json(r, 0));
        last = r;
    }
    json_object_set_new(o, "jobs", arr);
    json_object_set_new(o, "total", json_integer(total));
    json_object_set_new(o, "limit", json_integer(limit));
    if (more && last) {
        char next[160];
        snprintf(next, sizeof next, "/v1/jobs?limit=%d&after=%s%s%s", limit, last->id,
                 status ? "&status=" : "", status ? job_status_name((job_status)want) : "");
        json_object_set_new(o, "next", json_string(next));
    } else {
        json_object_set_new(o, "next", json_null());
    }
    pthread_mutex_unlock(&s->mu);
    *json = job_store_dump(o);
    return *json ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory");
}

static json_t *residual_array(const double *h, int64_t from, int64_t n)
{
    json_t *a = json_array();
    for (int64_t i = from; i < n; i++)
        json_array_append_new(a, isfinite(h[i]) ? json_real(h[i]) : json_null());
    return a;
}

int job_store_residuals_json(job_store *s, const char *id, int64_t since, char **json)
{
    if (since < 0)
        since = 0;
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (!r) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(r->id));
    json_object_set_new(o, "status", json_string(job_status_name(r->status)));
    json_object_set_new(o, "start", json_integer(since));
    int finished = job_status_final(r->status);
    if (!finished) {
        int64_t n = r->status == JOB_RUNNING ? r->nhist : 0;
        json_object_set_new(o, "first_iteration", json_integer(n ? r->hfirst : 0));
        json_object_set_new(o, "count", json_integer(n));
        json_object_set_new(o, "residuals", residual_array(r->hist, since < n ? since : n, n));
        pthread_mutex_unlock(&s->mu);
        *json = job_store_dump(o);
        return 0;
    }
    char path[PATH_MAX];
    job_store_dir_of(s, r->id, path, sizeof path);
    pthread_mutex_unlock(&s->mu);
    strncat(path, "/residuals.json", sizeof path - strlen(path) - 1);
    json_t *h = json_load_file(path, 0, NULL);
    json_t *arr = json_object_get(h, "residuals");
    int64_t n = json_is_array(arr) ? (int64_t)json_array_size(arr) : 0;
    json_t *out = json_array();
    for (int64_t i = since; i < n; i++)
        json_array_append(out, json_array_get(arr, (size_t)i));
    json_t *fi = json_object_get(h, "first_iteration");
    json_object_set_new(o, "first_iteration",
                        json_integer(json_is_integer(fi) ? json_integer_value(fi) : 0));
    json_object_set_new(o, "count", json_integer(n));
    json_object_set_new(o, "residuals", out);
    json_decref(h);
    *json = job_store_dump(o);
    return 0;
}

int job_store_job_dir(job_store *s, const char *id, char *dir, size_t cap, job_status *st)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (r) {
        snprintf(dir, cap, "%s/jobs/%s", s->data, r->id);
        *st = r->status;
    }
    pthread_mutex_unlock(&s->mu);
    return r ? 0 : -1;
}

int job_store_file_expect(job_store *s, const char *id, const char *name, int64_t *bytes,
                          uint32_t *crc, int *has_crc, int *verified)
{
    *bytes = -1;
    *crc = 0;
    *has_crc = *verified = 0;
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (r) {
        json_t *f = json_object_get(json_object_get(r->result, "solution_files"), name);
        json_t *b = json_object_get(f, "bytes");
        const char *c = json_string_value(json_object_get(f, "crc32"));
        if (json_is_integer(b))
            *bytes = json_integer_value(b);
        if (c) {
            *crc = (uint32_t)strtoul(c, NULL, 16);
            *has_crc = 1;
        }
        *verified = !strcmp(name, "solution.bin") ? r->bin_verified : 0;
    }
    pthread_mutex_unlock(&s->mu);
    return r ? 0 : -1;
}

void job_store_set_disk_wait(job_store *s, const char *why)
{
    pthread_mutex_lock(&s->mu);
    snprintf(s->disk_wait, sizeof s->disk_wait, "%s", why ? why : "");
    pthread_mutex_unlock(&s->mu);
}

/* Rewrites r's record (io held, mu not): the caller changed it under mu.
 * 0, or CLS_EOTHER (logged). */
static int reader_write_record(job_store *s, const char *id, cls_error *err)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    char *text = r ? job_store_dump(job_store_rec_json(r, 1)) : NULL;
    pthread_mutex_unlock(&s->mu);
    if (!r)
        return CLS_OK; /* removed meanwhile (DELETE): nothing to record */
    int rc = text ? job_store_write_record(s, id, text, err)
                  : cls_fail(err, CLS_EOTHER, "out of memory");
    free(text);
    return rc;
}

void job_store_file_damaged(job_store *s, const char *id, const char *why)
{
    pthread_mutex_lock(&s->io);
    pthread_mutex_lock(&s->mu);
    s->damaged++;
    job_rec *r = job_store_find(s, id);
    int first = r && !r->damaged[0];
    if (first)
        snprintf(r->damaged, sizeof r->damaged, "%s", why);
    pthread_mutex_unlock(&s->mu);
    /* recorded durably once: the next start quarantines the job (its
     * size may be right and only the CRC-32, read here, tells) */
    cls_error e;
    if (first && reader_write_record(s, id, &e))
        fprintf(stderr, "clsolved: job %s: its damage could not be recorded: %s\n", id, e.msg);
    pthread_mutex_unlock(&s->io);
}

int job_store_mark_fetched(job_store *s, const char *id)
{
    /* cheap look first: every download of every job comes here */
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    int want =
        r && r->params.keep_until_fetched && r->fetched <= 0 && job_status_final(r->status);
    pthread_mutex_unlock(&s->mu);
    if (!want)
        return 0;
    pthread_mutex_lock(&s->io);
    pthread_mutex_lock(&s->mu);
    r = job_store_find(s, id);
    want = r && r->fetched <= 0;
    if (want)
        r->fetched = job_store_wall_now();
    pthread_mutex_unlock(&s->mu);
    cls_error e;
    int rc = want ? reader_write_record(s, id, &e) : CLS_OK;
    if (rc) {
        /* not on disk, so not so in memory either: retention keeps the job
         * and the next download tries again */
        pthread_mutex_lock(&s->mu);
        if ((r = job_store_find(s, id)))
            r->fetched = 0;
        pthread_mutex_unlock(&s->mu);
        fprintf(stderr, "clsolved: job %s: its fetch could not be recorded: %s\n", id, e.msg);
    }
    pthread_mutex_unlock(&s->io);
    return want && !rc;
}

void job_store_file_verified(job_store *s, const char *id, const char *name)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = job_store_find(s, id);
    if (r && !strcmp(name, "solution.bin"))
        r->bin_verified = 1;
    pthread_mutex_unlock(&s->mu);
}

void job_store_counts(job_store *s, int64_t counts[JOB_NSTATES])
{
    memset(counts, 0, JOB_NSTATES * sizeof *counts);
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n; i++)
        counts[s->recs[i]->status]++;
    pthread_mutex_unlock(&s->mu);
}
