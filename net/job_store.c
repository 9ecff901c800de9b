/*
 * job_store.c: the floor the durable job store stands on (see
 * job_store.h for the contract, job_store_priv.h for what the store's
 * files share): its records and their JSON, the table in submission
 * order, the durable write of one record and what that write tells about
 * the store's health, the removal of a job's directory, the disk's
 * figures.
 *
 * The files above it (job_store_open.c: opening, recovery, retention;
 * job_store_submit.c and job_store_read.c: the HTTP threads' side;
 * job_store_run.c: the transitions) are built from these and never call
 * each other, so each one's rules can be read without the others' order
 * of events.
 */
#include "job_store.h"

#include "job_store_priv.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "../common/numfmt.h"
#include "../common/timer.h"
#include "fileio.h"

const char *const job_store_quarantine_reasons[JOB_QUARANTINE_NREASONS] = {"record", "no-record",
                                                                           "damaged"};

static const char *const status_names[] = {"queued", "running", "succeeded", "failed", "cancelled"};

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

/* internal adds the seq, the Unix times and the stored file names: what
 * recovery needs to rebuild the record, and no client's business. */
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
    json_object_set_new(pr, "phase",
                        json_string(r->phase[0] ? r->phase : job_status_name(r->status)));
    json_object_set_new(pr, "iteration", json_integer(r->iteration));
    json_object_set_new(pr, "residual",
                        isfinite(r->residual) ? json_real(r->residual) : json_null());
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
    json_object_set_new(o, "keep",
                        json_string(r->params.keep_until_fetched ? "until-fetched" : "default"));
    json_object_set_new(o, "fetched_at", iso_time(r->fetched));
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
        json_object_set_new(st, "fetched", json_real(r->fetched));
        if (r->damaged[0])
            json_object_set_new(st, "damaged", json_string(r->damaged));
        json_object_set_new(o, "store", st);
    }
    return o;
}

char *job_store_dump(json_t *o)
{
    char *s = cls_json_shorten(json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)));
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

/* --- watching for changes (job_store_watch: long polls) --- */

void job_store_changed(job_store *s)
{
    s->changes++;
    pthread_cond_broadcast(&s->watch_cv);
}

void job_store_poke(job_store *s)
{
    pthread_mutex_lock(&s->mu);
    job_store_changed(s);
    pthread_mutex_unlock(&s->mu);
}

uint64_t job_store_watch(job_store *s, uint64_t seen, double timeout_s)
{
    struct timespec dl = cls_deadline(CLOCK_MONOTONIC, timeout_s);
    pthread_mutex_lock(&s->mu);
    while (s->changes == seen)
        if (pthread_cond_timedwait(&s->watch_cv, &s->mu, &dl) == ETIMEDOUT)
            break;
    uint64_t now = s->changes;
    pthread_mutex_unlock(&s->mu);
    return now;
}

void job_store_remove_at(job_store *s, size_t i)
{
    memmove(s->recs + i, s->recs + i + 1, (s->n - i - 1) * sizeof *s->recs);
    s->n--;
    job_store_changed(s); /* a GET waiting on it answers 404 now */
}

/* --- writing a record, and the store's health --- */

void job_store_note_write(job_store *s, int rc, const cls_error *err)
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
    job_store_note_write(s, rc, err);
    return rc;
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

int job_store_held_for_fetch(const job_rec *r)
{
    return r->params.keep_until_fetched && r->status == JOB_SUCCEEDED && r->fetched <= 0;
}

int job_store_removal_mark(job_store *s, const char *id, cls_error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/removing", s->data);
    if (fileio_mkdir(path, err))
        return CLS_EOTHER;
    if (snprintf(path, sizeof path, "%s/removing/%s", s->data, id) >= (int)sizeof path)
        return cls_fail(err, CLS_EOTHER, "data directory path too long");
    return fileio_write_durable(path, "", 0, err);
}

void job_store_removal_unmark(job_store *s, const char *id)
{
    char path[PATH_MAX];
    /* a marker left behind is harmless: start-up empties removing/ */
    if (snprintf(path, sizeof path, "%s/removing/%s", s->data, id) < (int)sizeof path)
        unlink(path);
}

/* Removes a job directory: the removal marker, then job.json, then the rest
 * (an interrupted removal leaves a marked directory without a record,
 * which start-up finishes removing). io is not held. */
int job_store_remove_dir(job_store *s, const char *id, cls_error *err)
{
    char dir[PATH_MAX], path[PATH_MAX];
    cls_error e2;
    if (!err)
        err = &e2;
    job_store_dir_of(s, id, dir, sizeof dir);
    pthread_mutex_lock(&s->io);
    int rc = job_store_removal_mark(s, id, err);
    if (!rc && snprintf(path, sizeof path, "%s/job.json", dir) < (int)sizeof path &&
        unlink(path) != 0 && errno != ENOENT) {
        rc = cls_fail(err, CLS_EOTHER, "%s: cannot remove: %s", path, strerror(errno));
        job_store_removal_unmark(s, id);
    }
    if (!rc && !(rc = fileio_remove_tree(dir, err)))
        job_store_removal_unmark(s, id);
    pthread_mutex_unlock(&s->io);
    if (rc) {
        pthread_mutex_lock(&s->mu);
        s->removal_errors++;
        pthread_mutex_unlock(&s->mu);
        fprintf(stderr, "clsolved: %s\n", err->msg);
    }
    return rc;
}

int job_store_disk_space(const job_store *s, uint64_t *avail, uint64_t *size)
{
    struct statvfs v;
    if (statvfs(s->data, &v) != 0)
        return -1;
    *avail = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
    *size = (uint64_t)v.f_blocks * (uint64_t)v.f_frsize;
    return 0;
}
