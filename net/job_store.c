/*
 * job_store.c: the durable job store (see job_store.h): the table, its
 * records' JSON, the durable write of a record and the store's health,
 * submission and the reading routes. The scheduler's transitions,
 * deletion and retention are in job_store_run.c, start-up recovery and the
 * quarantine in job_store_load.c (job_store_priv.h: what they share).
 *
 * Locks: `mu` guards the table and every record; `io` serialises the
 * writes of job.json and the removal of job directories, so two requests
 * on the same job can never interleave their files. Order: io before mu,
 * never the reverse. A record's JSON is built under mu and written under
 * io only, so slow disks never hold up readers of the table.
 *
 * Memory and disk agree after every transition: a transition builds the
 * record it leads to from a copy, writes it, and only then changes the
 * record in memory (all under io). A write that fails leaves the job where
 * the disk says it is, marks the job (`store_error`) and the store
 * (unhealthy: /readyz says so) and is retried; nothing accepted is lost.
 */
#include "job_store.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "job_store_priv.h"

static const char *const status_names[] = {"queued", "running", "succeeded", "failed",
                                           "cancelled"};

const char *job_status_name(job_status s)
{
    return (unsigned)s < JOB_NSTATES ? status_names[s] : "unknown";
}

int job_store_status_from_name(const char *n)
{
    for (int i = 0; i < JOB_NSTATES; i++)
        if (n && !strcmp(n, status_names[i]))
            return i;
    return -1;
}

static int is_finished(job_status s) { return s >= JOB_SUCCEEDED; }

double job_store_wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static json_t *iso_time(double t)
{
    if (t <= 0)
        return json_null();
    time_t sec = (time_t)t;
    struct tm tm;
    gmtime_r(&sec, &tm);
    char buf[40], out[48];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, sizeof out, "%s.%03dZ", buf, (int)((t - (double)sec) * 1000.0));
    return json_string(out);
}

void job_store_rec_free(job_rec *r)
{
    if (!r)
        return;
    job_params_free(&r->params);
    json_decref(r->result);
    json_decref(r->error);
    json_decref(r->timings);
    json_decref(r->devices);
    json_decref(r->placement);
    if (r->pending) {
        json_decref(r->pending->result);
        json_decref(r->pending->error);
        json_decref(r->pending->timings);
        json_decref(r->pending->devices);
        free(r->pending);
    }
    free(r->hist);
    free(r);
}

static json_t *inputs_json(const job_rec *r)
{
    json_t *o = json_object();
    if (r->in.has_matrix)
        json_object_set_new(o, "matrix", json_string(r->in.matrix_name));
    if (job_params_is_cg(&r->params)) {
        json_object_set_new(o, "rhs", r->in.has_rhs ? json_string(r->in.rhs_name) : json_null());
        json_object_set_new(o, "x0", r->in.has_x0 ? json_string(r->in.x0_name) : json_null());
    }
    if (r->in.has_input)
        json_object_set_new(o, "input", json_string(r->in.input_name));
    return o;
}

/* The job's JSON; internal adds what recovery needs (seq, Unix times,
 * stored file names). Called with mu held. */
json_t *job_store_rec_json(const job_rec *r, int internal)
{
    json_t *o = json_object();
    char link[96];
    json_object_set_new(o, "id", json_string(r->id));
    json_object_set_new(o, "kind", json_string(r->params.kind));
    json_object_set_new(o, "status", json_string(job_status_name(r->status)));
    json_object_set_new(o, "created_at", iso_time(r->created));
    json_object_set_new(o, "started_at", iso_time(r->started));
    json_object_set_new(o, "finished_at", iso_time(r->finished));
    json_object_set_new(o, "parameters", job_params_to_json(&r->params));
    json_object_set_new(o, "inputs", inputs_json(r));
    json_object_set_new(o, "bytes_received", json_integer((json_int_t)r->bytes));
    json_t *pr = json_object();
    json_object_set_new(pr, "phase", json_string(r->phase[0] ? r->phase : job_status_name(r->status)));
    json_object_set_new(pr, "iteration", json_integer(r->iteration));
    json_object_set_new(pr, "residual", isfinite(r->residual) ? json_real(r->residual) : json_null());
    json_object_set_new(pr, "updated_at", iso_time(r->updated > 0 ? r->updated : r->created));
    json_object_set_new(pr, "phase_started_at",
                        iso_time(r->phase_started > 0 ? r->phase_started : r->created));
    json_object_set_new(
        pr, "eta_s", r->status == JOB_RUNNING && r->eta_s >= 0 ? json_real(r->eta_s) : json_null());
    if (!internal)
        json_object_set_new(pr, "note", r->note[0] ? json_string(r->note) : json_null());
    json_object_set_new(o, "progress", pr);
    json_object_set_new(o, "result", r->result ? json_incref(r->result) : json_null());
    json_object_set_new(o, "timings", r->timings ? json_incref(r->timings) : json_null());
    json_object_set_new(o, "devices", r->devices ? json_incref(r->devices) : json_null());
    json_object_set_new(o, "placement", r->placement ? json_incref(r->placement) : json_null());
    json_object_set_new(o, "error", r->error ? json_incref(r->error) : json_null());
    json_object_set_new(o, "cancel_requested", json_boolean(r->cancel));
    json_object_set_new(o, "interrupted_runs", json_integer(r->interrupted));
    json_object_set_new(o, "pinned", json_boolean(r->pinned));
    json_object_set_new(o, "disk_bytes", json_integer((json_int_t)r->disk));
    if (!internal)
        json_object_set_new(o, "store_error",
                            r->store_error[0] ? json_string(r->store_error) : json_null());
    json_t *links = json_object();
    snprintf(link, sizeof link, "/v1/jobs/%s", r->id);
    json_object_set_new(links, "self", json_string(link));
    if (job_params_is_cg(&r->params)) {
        snprintf(link, sizeof link, "/v1/jobs/%s/solution", r->id);
        json_object_set_new(links, "solution", json_string(link));
        snprintf(link, sizeof link, "/v1/jobs/%s/residuals", r->id);
        json_object_set_new(links, "residuals", json_string(link));
    } else {
        snprintf(link, sizeof link, "/v1/jobs/%s/files", r->id);
        json_object_set_new(links, "files", json_string(link));
    }
    json_object_set_new(o, "links", links);
    if (internal) {
        json_t *st = json_object();
        json_object_set_new(st, "seq", json_integer(r->seq));
        json_object_set_new(st, "created", json_real(r->created));
        json_object_set_new(st, "started", json_real(r->started));
        json_object_set_new(st, "finished", json_real(r->finished));
        json_object_set_new(st, "has_matrix", json_boolean(r->in.has_matrix));
        json_object_set_new(st, "has_rhs", json_boolean(r->in.has_rhs));
        json_object_set_new(st, "has_x0", json_boolean(r->in.has_x0));
        json_object_set_new(st, "has_input", json_boolean(r->in.has_input));
        json_object_set_new(st, "input_file", json_string(r->in.input_file));
        json_object_set_new(st, "matrix_text_bytes", json_integer(r->in.matrix_text_bytes));
        json_object_set_new(st, "receive_s", json_real(r->in.receive_s));
        json_object_set_new(o, "store", st);
    }
    return o;
}

char *job_store_dump(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(o);
    return s;
}

void job_store_dir_of(const job_store *s, const char *id, char *out, size_t cap)
{
    snprintf(out, cap, "%s/jobs/%s", s->data, id);
}

job_rec *job_store_find(job_store *s, const char *id)
{
    if (!ids_valid(id))
        return NULL;
    for (size_t i = s->n; i-- > 0;)
        if (!strcmp(s->recs[i]->id, id))
            return s->recs[i];
    return NULL;
}

size_t job_store_find_index(job_store *s, const job_rec *r)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->recs[i] == r)
            return i;
    return s->n;
}

int job_store_insert_sorted(job_store *s, job_rec *r)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 64;
        job_rec **nr = realloc(s->recs, nc * sizeof *nr);
        if (!nr)
            return -1;
        s->recs = nr;
        s->cap = nc;
    }
    size_t i = s->n;
    while (i > 0 && s->recs[i - 1]->seq > r->seq) {
        s->recs[i] = s->recs[i - 1];
        i--;
    }
    s->recs[i] = r;
    s->n++;
    return 0;
}

void job_store_remove_at(job_store *s, size_t i)
{
    memmove(s->recs + i, s->recs + i + 1, (s->n - i - 1) * sizeof *s->recs);
    s->n--;
}

/* --- writing a record, and the store's health --- */

/* Records a write's outcome for the store's health (mu not held). */
static void note_write(job_store *s, int rc, const cls_error *err)
{
    pthread_mutex_lock(&s->mu);
    if (rc) {
        s->write_failed = 1;
        s->write_errors++;
        /* the system's words only: /readyz answers without a token, and
         * the data directory's path is not its business */
        const char *c = strrchr(err->msg, ':');
        snprintf(s->health, sizeof s->health, "the job store cannot write job records (%.160s)",
                 c && c[1] ? c + 2 : err->msg);
    } else {
        s->write_failed = 0;
    }
    pthread_mutex_unlock(&s->mu);
}

int job_store_write_record(job_store *s, const char *id, const char *text, cls_error *err)
{
    char path[PATH_MAX];
    int rc;
    if (snprintf(path, sizeof path, "%s/jobs/%s/job.json", s->data, id) >= (int)sizeof path)
        rc = cls_fail(err, CLS_EOTHER, "data directory path too long");
    else
        rc = fileio_write_durable(path, text, strlen(text), err);
    note_write(s, rc, err);
    return rc;
}

int job_store_healthy(job_store *s, char *why, size_t cap)
{
    pthread_mutex_lock(&s->mu);
    int pending = 0;
    for (size_t i = 0; i < s->n; i++)
        pending += s->recs[i]->pending != NULL;
    int ok = !s->write_failed && !pending;
    if (!ok && why)
        snprintf(why, cap, "%s%s", s->write_failed ? s->health : "the job store",
                 pending ? " (finished jobs waiting for their records to be written)" : "");
    pthread_mutex_unlock(&s->mu);
    return ok;
}

/* The data directory's file system: bytes free (to us) and in all. */
static int disk_space(const job_store *s, uint64_t *avail, uint64_t *size)
{
    struct statvfs v;
    if (statvfs(s->data, &v) != 0)
        return -1;
    *avail = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
    *size = (uint64_t)v.f_blocks * (uint64_t)v.f_frsize;
    return 0;
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
            "# HELP clsolve_store_quarantined_total Job records that failed to load at start, "
            "moved to DATA/quarantine.\n# TYPE clsolve_store_quarantined_total counter\n"
            "clsolve_store_quarantined_total %llu\n"
            "# HELP clsolve_store_removal_errors_total Job directories that could not be "
            "removed completely.\n# TYPE clsolve_store_removal_errors_total counter\n"
            "clsolve_store_removal_errors_total %llu\n",
            healthy, (unsigned long long)s->write_errors, (unsigned long long)s->quarantined,
            (unsigned long long)s->removal_errors);
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
    if (!disk_space(s, &avail, &size))
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

uint64_t job_store_dir_bytes(const char *dir)
{
    uint64_t total = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[PATH_MAX];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || lstat(p, &st))
            continue;
        if (S_ISREG(st.st_mode))
            total += (uint64_t)st.st_size;
        else if (S_ISDIR(st.st_mode) && !strcmp(e->d_name, "out"))
            total += job_store_dir_bytes(p);
    }
    closedir(d);
    return total;
}

int job_store_disk_admit(job_store *s, uint64_t need, cls_error *err)
{
    uint64_t avail, size;
    if (!s->cfg.disk_reserve || disk_space(s, &avail, &size))
        return CLS_OK;
    if (avail >= s->cfg.disk_reserve && avail - s->cfg.disk_reserve >= need)
        return CLS_OK;
    if (need)
        return cls_fail(err, CLS_EOTHER,
                        "the data directory's disk has %llu MB free; this upload (%llu MB) would "
                        "leave less than the reserve of %llu MB (--disk-reserve)",
                        (unsigned long long)(avail >> 20), (unsigned long long)(need >> 20),
                        (unsigned long long)(s->cfg.disk_reserve >> 20));
    return cls_fail(err, CLS_EOTHER,
                    "the data directory's disk has %llu MB free, less than the reserve of %llu MB "
                    "(--disk-reserve)",
                    (unsigned long long)(avail >> 20),
                    (unsigned long long)(s->cfg.disk_reserve >> 20));
}

/* --- opening --- */

int job_store_open(job_store **out, const job_store_config *cfg, cls_error *err)
{
    *out = NULL;
    job_store *s = calloc(1, sizeof *s);
    if (!s)
        return cls_fail(err, CLS_EOTHER, "out of memory");
    if (snprintf(s->data, sizeof s->data, "%s", cfg->data_dir) >= (int)sizeof s->data) {
        free(s);
        return cls_fail(err, CLS_EUSAGE, "--data-dir: path too long");
    }
    size_t dl = strlen(s->data);
    while (dl > 1 && s->data[dl - 1] == '/')
        s->data[--dl] = '\0';
    s->cfg = *cfg;
    s->cfg.data_dir = s->data;
    s->next_seq = 1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->io, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/jobs", s->data);
    if (fileio_mkdir(s->data, err) || fileio_mkdir(path, err) || job_store_recover(s, err)) {
        job_store_close(s);
        return CLS_EOTHER;
    }
    job_store_retention(s);
    *out = s;
    return CLS_OK;
}

void job_store_close(job_store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        job_store_rec_free(s->recs[i]);
    free(s->recs);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->io);
    pthread_cond_destroy(&s->cv);
    free(s);
}

const char *job_store_data_dir(const job_store *s)
{
    return s->data;
}

/* --- submission --- */

static int count_queued(job_store *s)
{
    int q = 0;
    for (size_t i = 0; i < s->n; i++)
        q += s->recs[i]->status == JOB_QUEUED;
    return q;
}

int job_store_full(job_store *s)
{
    pthread_mutex_lock(&s->mu);
    int full = count_queued(s) + s->pending >= s->cfg.max_queued;
    pthread_mutex_unlock(&s->mu);
    return full;
}

int job_store_incoming_new(job_store *s, char id[IDS_LEN + 1], char *dir, size_t cap,
                           cls_error *err)
{
    if (ids_new(id, err))
        return CLS_EOTHER;
    if (snprintf(dir, cap, "%s/incoming/%s", s->data, id) >= (int)cap)
        return cls_fail(err, CLS_EOTHER, "data directory path too long");
    if (mkdir(dir, 0755) != 0)
        return cls_fail(err, CLS_EOTHER, "%s: cannot create: %s", dir, strerror(errno));
    return CLS_OK;
}

void job_store_incoming_discard(job_store *s, const char *id)
{
    char dir[PATH_MAX];
    cls_error err;
    if (!ids_valid(id))
        return;
    snprintf(dir, sizeof dir, "%s/incoming/%s", s->data, id);
    if (fileio_remove_tree(dir, &err))
        fprintf(stderr, "clsolved: %s\n", err.msg);
}

int job_store_accept(job_store *s, const char *id, const job_params *p, const job_inputs *in,
                     uint64_t bytes, char **job_json, cls_error *err)
{
    *job_json = NULL;
    if (!ids_valid(id))
        return cls_fail(err, CLS_EOTHER, "invalid job id");
    pthread_mutex_lock(&s->mu);
    if (count_queued(s) + s->pending >= s->cfg.max_queued) {
        pthread_mutex_unlock(&s->mu);
        job_store_incoming_discard(s, id);
        return JOB_STORE_FULL;
    }
    s->pending++;
    int64_t seq = s->next_seq++;
    pthread_mutex_unlock(&s->mu);

    int rc = CLS_OK;
    job_rec *r = calloc(1, sizeof *r);
    char *text = NULL;
    char inc[PATH_MAX], fin[PATH_MAX], path[PATH_MAX];
    snprintf(inc, sizeof inc, "%s/incoming/%s", s->data, id);
    job_store_dir_of(s, id, fin, sizeof fin);
    if (!r) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory");
        goto fail;
    }
    memcpy(r->id, id, IDS_LEN + 1);
    r->seq = seq;
    r->status = JOB_QUEUED;
    r->created = job_store_wall_now();
    r->updated = r->created;
    r->residual = NAN;
    r->bytes = bytes;
    r->in = *in;
    snprintf(r->phase, sizeof r->phase, "queued");
    r->params = *p;
    r->params.options = p->options ? json_deep_copy(p->options) : NULL;
    text = job_store_dump(job_store_rec_json(r, 1));
    if (!text) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory");
        goto fail;
    }
    /* job.json durable inside the upload directory, the directory itself
     * synced, then one rename makes the job exist */
    if (snprintf(path, sizeof path, "%s/job.json", inc) >= (int)sizeof path) {
        rc = cls_fail(err, CLS_EOTHER, "data directory path too long");
        goto fail;
    }
    rc = fileio_write_durable(path, text, strlen(text), err);
    if (!rc)
        rc = fileio_sync_path(inc, err);
    note_write(s, rc, err);
    if (rc)
        goto fail;
    if (rename(inc, fin) != 0) {
        rc = cls_fail(err, CLS_EOTHER, "%s: rename failed: %s", fin, strerror(errno));
        goto fail;
    }
    if ((rc = fileio_sync_parent(fin, err)) || (rc = fileio_sync_parent(inc, err))) {
        /* the rename may not be durable: undo it rather than acknowledge */
        fileio_remove_tree(fin, &(cls_error){0});
        goto fail_nodiscard;
    }
    r->disk = job_store_dir_bytes(fin);
    pthread_mutex_lock(&s->mu);
    s->pending--;
    if (job_store_insert_sorted(s, r)) {
        pthread_mutex_unlock(&s->mu);
        job_store_remove_dir(s, id, NULL);
        job_store_rec_free(r);
        free(text);
        return cls_fail(err, CLS_EOTHER, "out of memory");
    }
    *job_json = job_store_dump(job_store_rec_json(r, 0));
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    free(text);
    return CLS_OK;

fail:
    job_store_incoming_discard(s, id);
fail_nodiscard:
    pthread_mutex_lock(&s->mu);
    s->pending--;
    pthread_mutex_unlock(&s->mu);
    job_store_rec_free(r);
    free(text);
    return rc;
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

int job_store_list_json(job_store *s, int limit, const char *after, int page,
                        const char *status, char **json, cls_error *err)
{
    int want = -1;
    if (status && (want = job_store_status_from_name(status)) < 0)
        return cls_fail(err, CLS_EINPUT,
                        "status: '%.32s' is not one of queued, running, succeeded, failed, cancelled",
                        status);
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
                 status ? "&status=" : "", status ? status_names[want] : "");
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
    int finished = is_finished(r->status);
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
    json_object_set_new(o, "first_iteration", json_integer(json_is_integer(fi) ? json_integer_value(fi) : 0));
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

void job_store_counts(job_store *s, int64_t counts[JOB_NSTATES])
{
    memset(counts, 0, JOB_NSTATES * sizeof *counts);
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n; i++)
        counts[s->recs[i]->status]++;
    pthread_mutex_unlock(&s->mu);
}
