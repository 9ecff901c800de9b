/*
 * job_store.c: the durable job store (see job_store.h).
 *
 * Locks: `mu` guards the table and every record; `io` serialises the
 * writes of job.json and the removal of job directories, so two requests
 * on the same job can never interleave their files. Order: io before mu,
 * never the reverse. A record's JSON is built under mu and written under
 * io only, so slow disks never hold up readers of the table.
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
#include <time.h>
#include <unistd.h>

#include "../common/eta.h"
#include "fileio.h"

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
    /* live */
    int64_t iteration;
    double residual, updated;
    char phase[16];
    double *hist;
    int64_t nhist, hcap;
    int64_t hfirst; /* the iteration of hist[0]: 0 when the solver reported it */
    double phase_started; /* Unix time the phase began */
    cls_eta eta;          /* time left from the residual's rate (solving) */
    double eta_s;         /* < 0: unknown */
    int cancel;
} job_rec;

struct job_store {
    char data[PATH_MAX - 64];
    job_store_config cfg;
    pthread_mutex_t mu, io;
    pthread_cond_t cv;
    job_rec **recs; /* ascending seq */
    size_t n, cap;
    int64_t next_seq;
    int pending; /* accepts between the queue check and the insert */
    int wake;
};

static const char *const status_names[] = {"queued", "running", "succeeded", "failed",
                                           "cancelled"};

const char *job_status_name(job_status s)
{
    return (unsigned)s < JOB_NSTATES ? status_names[s] : "unknown";
}

static int status_from_name(const char *n)
{
    for (int i = 0; i < JOB_NSTATES; i++)
        if (n && !strcmp(n, status_names[i]))
            return i;
    return -1;
}

static int is_finished(job_status s) { return s >= JOB_SUCCEEDED; }

static double wall_now(void)
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

static void rec_free(job_rec *r)
{
    if (!r)
        return;
    job_params_free(&r->params);
    json_decref(r->result);
    json_decref(r->error);
    json_decref(r->timings);
    json_decref(r->devices);
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
static json_t *rec_json(const job_rec *r, int internal)
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
    json_object_set_new(o, "progress", pr);
    json_object_set_new(o, "result", r->result ? json_incref(r->result) : json_null());
    json_object_set_new(o, "timings", r->timings ? json_incref(r->timings) : json_null());
    json_object_set_new(o, "devices", r->devices ? json_incref(r->devices) : json_null());
    json_object_set_new(o, "error", r->error ? json_incref(r->error) : json_null());
    json_object_set_new(o, "cancel_requested", json_boolean(r->cancel));
    json_object_set_new(o, "interrupted_runs", json_integer(r->interrupted));
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
        json_object_set_new(o, "store", st);
    }
    return o;
}

static char *dump(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(o);
    return s;
}

static void job_dir(const job_store *s, const char *id, char *out, size_t cap)
{
    snprintf(out, cap, "%s/jobs/%s", s->data, id);
}

static job_rec *find(job_store *s, const char *id)
{
    if (!ids_valid(id))
        return NULL;
    for (size_t i = s->n; i-- > 0;)
        if (!strcmp(s->recs[i]->id, id))
            return s->recs[i];
    return NULL;
}

static size_t find_index(job_store *s, const job_rec *r)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->recs[i] == r)
            return i;
    return s->n;
}

static int insert_sorted(job_store *s, job_rec *r)
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

static void remove_at(job_store *s, size_t i)
{
    memmove(s->recs + i, s->recs + i + 1, (s->n - i - 1) * sizeof *s->recs);
    s->n--;
}

/* Writes the record's job.json (io held by the caller, mu not held). */
static int persist_locked_io(job_store *s, const char *id, cls_error *err)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = find(s, id);
    char *text = r ? dump(rec_json(r, 1)) : NULL;
    pthread_mutex_unlock(&s->mu);
    if (!r)
        return CLS_OK; /* removed meanwhile */
    if (!text)
        return cls_fail(err, CLS_EOTHER, "out of memory writing job.json");
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/jobs/%s/job.json", s->data, id) >= (int)sizeof path) {
        free(text);
        return cls_fail(err, CLS_EOTHER, "data directory path too long");
    }
    int rc = fileio_write_durable(path, text, strlen(text), err);
    free(text);
    return rc;
}

static int persist(job_store *s, const char *id, cls_error *err)
{
    pthread_mutex_lock(&s->io);
    int rc = persist_locked_io(s, id, err);
    pthread_mutex_unlock(&s->io);
    return rc;
}

/* Removes a job directory: job.json first, so an interrupted removal
 * leaves a directory that start-up recognises as incomplete. */
static void remove_dir(job_store *s, const char *id)
{
    char dir[PATH_MAX], path[PATH_MAX];
    cls_error err;
    job_dir(s, id, dir, sizeof dir);
    pthread_mutex_lock(&s->io);
    if (snprintf(path, sizeof path, "%s/job.json", dir) < (int)sizeof path)
        unlink(path);
    if (fileio_remove_tree(dir, &err))
        fprintf(stderr, "clsolved: %s\n", err.msg);
    pthread_mutex_unlock(&s->io);
}

/* --- recovery --- */

static int load_one(job_store *s, const char *id, cls_error *err)
{
    char dir[PATH_MAX], path[PATH_MAX];
    job_dir(s, id, dir, sizeof dir);
    if (snprintf(path, sizeof path, "%s/job.json.tmp", dir) < (int)sizeof path)
        unlink(path);
    if (snprintf(path, sizeof path, "%s/job.json", dir) >= (int)sizeof path)
        return cls_fail(err, CLS_EOTHER, "data directory path too long");
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    if (!o)
        return cls_fail(err, CLS_EINPUT, "%s: %s", path, je.text);
    job_rec *r = calloc(1, sizeof *r);
    int rc = CLS_OK;
    if (!r) {
        json_decref(o);
        return cls_fail(err, CLS_EOTHER, "out of memory");
    }
    const char *jid = json_string_value(json_object_get(o, "id"));
    int st = status_from_name(json_string_value(json_object_get(o, "status")));
    json_t *store = json_object_get(o, "store");
    if (!jid || strcmp(jid, id) != 0 || st < 0 || !json_is_object(store)) {
        rc = cls_fail(err, CLS_EINPUT, "%s: not a job record", path);
        goto out;
    }
    memcpy(r->id, id, IDS_LEN + 1);
    if ((rc = job_params_from_json(&r->params, json_string_value(json_object_get(o, "kind")),
                                   json_object_get(o, "parameters"), err)))
        goto out;
    r->status = (job_status)st;
    r->seq = json_integer_value(json_object_get(store, "seq"));
    r->created = json_number_value(json_object_get(store, "created"));
    r->started = json_number_value(json_object_get(store, "started"));
    r->finished = json_number_value(json_object_get(store, "finished"));
    r->bytes = (uint64_t)json_integer_value(json_object_get(o, "bytes_received"));
    r->interrupted = json_integer_value(json_object_get(o, "interrupted_runs"));
    r->in.has_matrix = json_is_true(json_object_get(store, "has_matrix"));
    r->in.has_rhs = json_is_true(json_object_get(store, "has_rhs"));
    r->in.has_x0 = json_is_true(json_object_get(store, "has_x0"));
    r->in.has_input = json_is_true(json_object_get(store, "has_input"));
    const char *s1;
    json_t *in = json_object_get(o, "inputs");
    if ((s1 = json_string_value(json_object_get(in, "matrix"))))
        snprintf(r->in.matrix_name, sizeof r->in.matrix_name, "%s", s1);
    if ((s1 = json_string_value(json_object_get(in, "rhs"))))
        snprintf(r->in.rhs_name, sizeof r->in.rhs_name, "%s", s1);
    if ((s1 = json_string_value(json_object_get(in, "x0"))))
        snprintf(r->in.x0_name, sizeof r->in.x0_name, "%s", s1);
    if ((s1 = json_string_value(json_object_get(in, "input"))))
        snprintf(r->in.input_name, sizeof r->in.input_name, "%s", s1);
    if ((s1 = json_string_value(json_object_get(store, "input_file"))))
        snprintf(r->in.input_file, sizeof r->in.input_file, "%s", s1);
    r->residual = NAN;
    if (is_finished(r->status)) {
        json_t *v;
        if (json_is_object(v = json_object_get(o, "result")))
            r->result = json_incref(v);
        if (json_is_object(v = json_object_get(o, "error")))
            r->error = json_incref(v);
        if (json_is_object(v = json_object_get(o, "timings")))
            r->timings = json_incref(v);
        if (json_is_array(v = json_object_get(o, "devices")))
            r->devices = json_incref(v);
        json_t *pr = json_object_get(o, "progress");
        r->iteration = json_integer_value(json_object_get(pr, "iteration"));
        json_t *res = json_object_get(pr, "residual");
        r->residual = json_is_number(res) ? json_number_value(res) : NAN;
        r->updated = r->finished;
        r->phase_started = r->finished;
        snprintf(r->phase, sizeof r->phase, "done");
    } else {
        /* queued or interrupted while running: run (again); a run cut
         * short is counted, so the client can see its job was re-run */
        if (r->status == JOB_RUNNING)
            r->interrupted++;
        r->status = JOB_QUEUED;
        r->started = 0;
        snprintf(r->phase, sizeof r->phase, "queued");
    }
    if (insert_sorted(s, r)) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory");
        goto out;
    }
    if (r->seq >= s->next_seq)
        s->next_seq = r->seq + 1;
    json_decref(o);
    return CLS_OK;
out:
    json_decref(o);
    rec_free(r);
    return rc;
}

static int recover(job_store *s, cls_error *err)
{
    char path[PATH_MAX];
    cls_error e2;
    /* uploads that never became jobs */
    snprintf(path, sizeof path, "%s/incoming", s->data);
    if (fileio_remove_tree(path, &e2))
        fprintf(stderr, "clsolved: %s\n", e2.msg);
    if (fileio_mkdir(path, err))
        return CLS_EOTHER;
    snprintf(path, sizeof path, "%s/jobs", s->data);
    DIR *d = opendir(path);
    if (!d)
        return cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", path, strerror(errno));
    struct dirent *e;
    int requeued = 0, loaded = 0, removed = 0;
    while ((e = readdir(d)) != NULL) {
        if (!ids_valid(e->d_name))
            continue;
        if (load_one(s, e->d_name, &e2)) {
            /* no readable job.json: an upload cut short, or a removal
             * interrupted after job.json went */
            fprintf(stderr, "clsolved: removing incomplete job directory %s (%s)\n", e->d_name,
                    e2.msg);
            char dir[PATH_MAX];
            job_dir(s, e->d_name, dir, sizeof dir);
            if (fileio_remove_tree(dir, &e2))
                fprintf(stderr, "clsolved: %s\n", e2.msg);
            removed++;
            continue;
        }
        loaded++;
    }
    closedir(d);
    for (size_t i = 0; i < s->n; i++)
        if (s->recs[i]->status == JOB_QUEUED) {
            requeued++;
            if (persist_locked_io(s, s->recs[i]->id, &e2))
                fprintf(stderr, "clsolved: %s\n", e2.msg);
        }
    if (loaded || removed)
        fprintf(stderr, "clsolved: job store: %d jobs loaded (%d queued to run), %d incomplete removed\n",
                loaded, requeued, removed);
    return CLS_OK;
}

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
    if (fileio_mkdir(s->data, err) || fileio_mkdir(path, err) || recover(s, err)) {
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
        rec_free(s->recs[i]);
    free(s->recs);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->io);
    pthread_cond_destroy(&s->cv);
    free(s);
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
    job_dir(s, id, fin, sizeof fin);
    if (!r) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory");
        goto fail;
    }
    memcpy(r->id, id, IDS_LEN + 1);
    r->seq = seq;
    r->status = JOB_QUEUED;
    r->created = wall_now();
    r->updated = r->created;
    r->residual = NAN;
    r->bytes = bytes;
    r->in = *in;
    snprintf(r->phase, sizeof r->phase, "queued");
    r->params = *p;
    r->params.options = p->options ? json_deep_copy(p->options) : NULL;
    text = dump(rec_json(r, 1));
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
    if ((rc = fileio_write_durable(path, text, strlen(text), err)))
        goto fail;
    if ((rc = fileio_sync_path(inc, err)))
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
    pthread_mutex_lock(&s->mu);
    s->pending--;
    if (insert_sorted(s, r)) {
        pthread_mutex_unlock(&s->mu);
        remove_dir(s, id);
        rec_free(r);
        free(text);
        return cls_fail(err, CLS_EOTHER, "out of memory");
    }
    *job_json = dump(rec_json(r, 0));
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
    rec_free(r);
    free(text);
    return rc;
}

/* --- reading --- */

int job_store_get_json(job_store *s, const char *id, char **json)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = find(s, id);
    *json = r ? dump(rec_json(r, 0)) : NULL;
    pthread_mutex_unlock(&s->mu);
    return r ? 0 : -1;
}

int job_store_list_json(job_store *s, int limit, const char *after, int page,
                        const char *status, char **json, cls_error *err)
{
    int want = -1;
    if (status && (want = status_from_name(status)) < 0)
        return cls_fail(err, CLS_EINPUT,
                        "status: '%.32s' is not one of queued, running, succeeded, failed, cancelled",
                        status);
    json_t *o = json_object(), *arr = json_array();
    pthread_mutex_lock(&s->mu);
    size_t start = s->n; /* exclusive upper index, newest first */
    if (after && page <= 0) {
        job_rec *a = find(s, after);
        if (!a) {
            pthread_mutex_unlock(&s->mu);
            json_decref(o);
            json_decref(arr);
            return cls_fail(err, CLS_EINPUT, "after: no job with id '%.40s'", after);
        }
        start = find_index(s, a);
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
        json_array_append_new(arr, rec_json(r, 0));
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
    *json = dump(o);
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
    job_rec *r = find(s, id);
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
        *json = dump(o);
        return 0;
    }
    char path[PATH_MAX];
    job_dir(s, r->id, path, sizeof path);
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
    *json = dump(o);
    return 0;
}

int job_store_job_dir(job_store *s, const char *id, char *dir, size_t cap, job_status *st)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = find(s, id);
    if (r) {
        snprintf(dir, cap, "%s/jobs/%s", s->data, r->id);
        *st = r->status;
    }
    pthread_mutex_unlock(&s->mu);
    return r ? 0 : -1;
}

int job_store_cancel(job_store *s, const char *id, job_cancel_outcome *out, job_status *st,
                     char **json, cls_error *err)
{
    *json = NULL;
    pthread_mutex_lock(&s->mu);
    job_rec *r = find(s, id);
    if (!r) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    char rid[IDS_LEN + 1];
    memcpy(rid, r->id, sizeof rid);
    *st = r->status;
    if (r->status == JOB_QUEUED) {
        r->status = JOB_CANCELLED;
        r->finished = wall_now();
        r->updated = r->finished;
        r->phase_started = r->finished;
        r->cancel = 1;
        snprintf(r->phase, sizeof r->phase, "done");
        r->error = json_pack("{s:s, s:i, s:s}", "code", "cancelled", "exit_code", 1, "message",
                             "cancelled while queued");
        *out = JOB_CANCEL_DONE;
        *st = JOB_CANCELLED;
        pthread_mutex_unlock(&s->mu);
        int rc = persist(s, rid, err);
        job_store_get_json(s, rid, json);
        return rc ? CLS_EOTHER : 0;
    }
    /* a running job stops at its next iteration; a finished one is never
     * touched: a cancel that arrives just after the end changes nothing */
    if (r->status == JOB_RUNNING) {
        r->cancel = 1;
        *out = JOB_CANCEL_REQUESTED;
    } else {
        *out = JOB_CANCEL_FINISHED;
    }
    *json = dump(rec_json(r, 0));
    pthread_mutex_unlock(&s->mu);
    return 0;
}

int job_store_remove(job_store *s, const char *id, job_status *st)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = find(s, id);
    if (!r) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    *st = r->status;
    if (!is_finished(r->status)) {
        pthread_mutex_unlock(&s->mu);
        return 1;
    }
    char rid[IDS_LEN + 1];
    memcpy(rid, r->id, sizeof rid);
    remove_at(s, find_index(s, r));
    rec_free(r);
    pthread_mutex_unlock(&s->mu);
    remove_dir(s, rid);
    return 0;
}

/* --- scheduler side --- */

int job_store_claim_next(job_store *s, double timeout_s, job_claim *c, cls_error *err)
{
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    long long ns = (long long)(timeout_s * 1e9);
    dl.tv_sec += ns / 1000000000LL;
    dl.tv_nsec += ns % 1000000000LL;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->mu);
    job_rec *r = NULL;
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
    if (!r) {
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    r->status = JOB_RUNNING;
    r->started = wall_now();
    r->updated = r->started;
    r->iteration = 0;
    r->residual = NAN;
    r->nhist = 0;
    r->cancel = 0;
    snprintf(r->phase, sizeof r->phase, "starting");
    r->phase_started = r->started;
    cls_eta_reset(&r->eta);
    r->eta_s = -1;
    memset(c, 0, sizeof *c);
    memcpy(c->id, r->id, sizeof c->id);
    job_dir(s, r->id, c->dir, sizeof c->dir);
    c->params = r->params;
    c->params.options = r->params.options ? json_deep_copy(r->params.options) : NULL;
    c->in = r->in;
    c->created = r->created;
    c->started = r->started;
    pthread_mutex_unlock(&s->mu);
    if (persist(s, c->id, err)) {
        job_params_free(&c->params);
        return -1;
    }
    return 1;
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
    job_rec *r = find(s, id);
    int cancel = 1;
    if (r) {
        r->iteration = iteration;
        r->residual = residual;
        r->updated = wall_now();
        r->eta_s = cls_eta_update(&r->eta, r->updated, residual, r->params.tol);
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

void job_store_set_phase(job_store *s, const char *id, const char *phase)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = find(s, id);
    if (r) {
        snprintf(r->phase, sizeof r->phase, "%s", phase);
        r->updated = wall_now();
        r->phase_started = r->updated;
    }
    pthread_mutex_unlock(&s->mu);
}

int job_store_history(job_store *s, const char *id, double **h, int64_t *n)
{
    *h = NULL;
    *n = 0;
    pthread_mutex_lock(&s->mu);
    job_rec *r = find(s, id);
    if (r && r->nhist > 0 && (*h = malloc((size_t)r->nhist * sizeof **h))) {
        memcpy(*h, r->hist, (size_t)r->nhist * sizeof **h);
        *n = r->nhist;
    }
    pthread_mutex_unlock(&s->mu);
    return r ? 0 : -1;
}

int job_store_complete(job_store *s, const char *id, job_status st, json_t *result,
                       json_t *error, json_t *timings, json_t *devices, cls_error *err)
{
    pthread_mutex_lock(&s->mu);
    job_rec *r = find(s, id);
    if (!r) {
        pthread_mutex_unlock(&s->mu);
        json_decref(result);
        json_decref(error);
        json_decref(timings);
        json_decref(devices);
        return CLS_OK;
    }
    r->status = st;
    r->finished = wall_now();
    r->updated = r->finished;
    r->phase_started = r->finished;
    snprintf(r->phase, sizeof r->phase, "done");
    json_decref(r->result);
    json_decref(r->error);
    json_decref(r->timings);
    json_decref(r->devices);
    r->result = result;
    r->error = error;
    r->timings = timings;
    r->devices = devices;
    free(r->hist);
    r->hist = NULL;
    r->nhist = r->hcap = 0;
    pthread_mutex_unlock(&s->mu);
    return persist(s, id, err);
}

void job_store_retention(job_store *s)
{
    if (s->cfg.keep_count < 0 && s->cfg.keep_seconds < 0)
        return;
    double now = wall_now();
    for (;;) {
        char victim[IDS_LEN + 1] = "";
        pthread_mutex_lock(&s->mu);
        int64_t finished = 0;
        for (size_t i = 0; i < s->n; i++)
            finished += is_finished(s->recs[i]->status);
        job_rec *oldest = NULL;
        for (size_t i = 0; i < s->n; i++) {
            job_rec *r = s->recs[i];
            if (!is_finished(r->status))
                continue;
            if (!oldest || r->finished < oldest->finished)
                oldest = r;
        }
        if (oldest && ((s->cfg.keep_count >= 0 && finished > s->cfg.keep_count) ||
                       (s->cfg.keep_seconds >= 0 && now - oldest->finished > s->cfg.keep_seconds))) {
            memcpy(victim, oldest->id, sizeof victim);
            remove_at(s, find_index(s, oldest));
            rec_free(oldest);
        }
        pthread_mutex_unlock(&s->mu);
        if (!victim[0])
            return;
        remove_dir(s, victim);
    }
}

void job_store_counts(job_store *s, int64_t counts[JOB_NSTATES])
{
    memset(counts, 0, JOB_NSTATES * sizeof *counts);
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n; i++)
        counts[s->recs[i]->status]++;
    pthread_mutex_unlock(&s->mu);
}
