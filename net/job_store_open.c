/*
 * job_store_open.c: the job store's life on disk, in one place (see
 * job_store.h): job_store_open makes the data directory, recovers what
 * the last run left and applies retention, in that order; retention runs
 * again after every job; job_store_close ends it. Recovery and retention
 * are the two places that decide which directories stay, so they stand
 * together.
 *
 * Recovery: every DATA/jobs/ID/job.json is read back: its id, status and stored
 * parameters are validated as a request's would be (job_params_from_json),
 * so a record that an older daemon, a disk or a hand wrote wrongly is never
 * run with what it says. A job directory whose record
 *
 *  - is missing: a removal was cut short (job.json goes first, see
 *    job_store_remove_dir) and is finished here;
 *  - cannot be read for a passing reason (EMFILE, ENFILE, ENOMEM, EAGAIN,
 *    EINTR): tried again, three times, 100 ms apart;
 *  - is anything else (unreadable, not JSON, not a job record, invalid
 *    parameters): the directory is moved, whole, to DATA/quarantine/ID
 *    (ID.1, ID.2, ... when that exists) with the reason in
 *    QUARANTINE.txt beside it, a log line and a count in /metrics. Never
 *    deleted: an operator can read it, mend job.json and move it back.
 *
 * Then queued and interrupted jobs are queued again in submission order
 * (an interrupted run counted), their records rewritten; incoming/ (uploads
 * that never became jobs) is emptied.
 *
 * Retention (--keep, --keep-bytes): the oldest finished job goes while
 * there are more than the count, it finished longer ago than the
 * duration, or the finished jobs' files take more than the size; pinned
 * jobs are exempt. A removed job leaves the table before its directory
 * goes (job.json first), so a crash in between is finished by recovery.
 */
#include "job_store.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "job_store_priv.h"

enum { LOAD_OK, LOAD_MISSING, LOAD_TRANSIENT, LOAD_BAD };

/* --- recovery --- */

static int load_one(job_store *s, const char *id, cls_error *err)
{
    char dir[PATH_MAX], path[PATH_MAX];
    job_store_dir_of(s, id, dir, sizeof dir);
    if (snprintf(path, sizeof path, "%s/job.json.tmp", dir) < (int)sizeof path)
        unlink(path);
    if (snprintf(path, sizeof path, "%s/job.json", dir) >= (int)sizeof path)
        return cls_fail(err, CLS_EOTHER, "data directory path too long"), LOAD_BAD;
    char *text = NULL;
    size_t len = 0;
    errno = 0;
    if (fileio_read_small(path, (size_t)16 << 20, &text, &len, err)) {
        int e = errno;
        if (e == ENOENT)
            return LOAD_MISSING;
        return e == EMFILE || e == ENFILE || e == ENOMEM || e == EAGAIN || e == EINTR
                   ? LOAD_TRANSIENT
                   : LOAD_BAD;
    }
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    free(text);
    if (!o)
        return cls_fail(err, CLS_EINPUT, "job.json is not valid JSON (line %d: %s)", je.line,
                        je.text),
               LOAD_BAD;
    job_rec *r = calloc(1, sizeof *r);
    if (!r) {
        json_decref(o);
        return cls_fail(err, CLS_EOTHER, "out of memory"), LOAD_TRANSIENT;
    }
    int rc = LOAD_BAD;
    const char *jid = json_string_value(json_object_get(o, "id"));
    int st = job_store_status_from_name(json_string_value(json_object_get(o, "status")));
    json_t *store = json_object_get(o, "store");
    if (!jid || strcmp(jid, id) != 0 || st < 0 || !json_is_object(store)) {
        cls_fail(err, CLS_EINPUT, "job.json is not this job's record (id, status or store)");
        goto out;
    }
    memcpy(r->id, id, IDS_LEN + 1);
    if (job_params_from_json(&r->params, json_string_value(json_object_get(o, "kind")),
                             json_object_get(o, "parameters"), err))
        goto out;
    r->status = (job_status)st;
    r->seq = json_integer_value(json_object_get(store, "seq"));
    r->created = json_number_value(json_object_get(store, "created"));
    r->started = json_number_value(json_object_get(store, "started"));
    r->finished = json_number_value(json_object_get(store, "finished"));
    r->bytes = (uint64_t)json_integer_value(json_object_get(o, "bytes_received"));
    r->interrupted = json_integer_value(json_object_get(o, "interrupted_runs"));
    r->pinned = json_is_true(json_object_get(o, "pinned"));
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
    r->in.matrix_text_bytes = json_integer_value(json_object_get(store, "matrix_text_bytes"));
    r->in.receive_s = json_number_value(json_object_get(store, "receive_s"));
    if (job_params_is_cg(&r->params) && !r->in.has_matrix) {
        cls_fail(err, CLS_EINPUT, "job.json: a cg job without a matrix");
        goto out;
    }
    r->residual = NAN;
    if (job_store_finished(r->status)) {
        json_t *v;
        if (json_is_object(v = json_object_get(o, "result")))
            r->result = json_incref(v);
        if (json_is_object(v = json_object_get(o, "error")))
            r->error = json_incref(v);
        if (json_is_object(v = json_object_get(o, "timings")))
            r->timings = json_incref(v);
        if (json_is_array(v = json_object_get(o, "devices")))
            r->devices = json_incref(v);
        if (json_is_object(v = json_object_get(o, "placement")))
            r->placement = json_incref(v);
        json_t *pr = json_object_get(o, "progress");
        r->iteration = json_integer_value(json_object_get(pr, "iteration"));
        json_t *res = json_object_get(pr, "residual");
        r->residual = json_is_number(res) ? json_number_value(res) : NAN;
        r->updated = r->finished;
        r->phase_started = r->finished;
        snprintf(r->phase, sizeof r->phase, "done");
    } else {
        /* queued or interrupted while running: run (again); a run cut
         * short is counted, so the client can see its job was re-run. Two
         * ends instead (issue 27, item 1): a cancel asked for while it ran
         * is honoured now (it was forgotten and the job ran again), and a
         * job whose runs were cut short max_restarts times fails, so that a
         * job that kills the daemon (the OOM killer, a driver crash) is not
         * run again in a loop under a supervisor. */
        int was_running = r->status == JOB_RUNNING;
        if (was_running)
            r->interrupted++;
        int limit = s->cfg.max_job_restarts > 0 ? s->cfg.max_job_restarts : 2;
        const char *why = NULL, *code = NULL;
        char msg[200];
        if (json_is_true(json_object_get(o, "cancel_requested"))) {
            r->status = JOB_CANCELLED;
            r->cancel = 1;
            code = "cancelled";
            why = was_running ? "cancelled; the daemon stopped before the job did"
                              : "cancelled while queued";
        } else if (was_running && r->interrupted >= limit) {
            r->status = JOB_FAILED;
            code = "internal";
            snprintf(msg, sizeof msg,
                     "the daemon stopped %lld times while this job ran (a crash, the OOM killer, "
                     "kill -9); it is not run again (--max-job-restarts %d)",
                     (long long)r->interrupted, limit);
            why = msg;
        } else {
            r->status = JOB_QUEUED;
            r->started = 0;
            snprintf(r->phase, sizeof r->phase, "queued");
        }
        if (why) {
            r->finished = job_store_wall_now();
            r->updated = r->phase_started = r->finished;
            snprintf(r->phase, sizeof r->phase, "done");
            json_decref(r->error);
            r->error = json_pack("{s:s, s:i, s:s}", "code", code, "exit_code", 1, "message", why);
            r->load_ended = 1; /* its record is rewritten once every job is loaded */
        }
    }
    r->disk = job_store_dir_bytes(dir);
    if (job_store_insert_sorted(s, r)) {
        cls_fail(err, CLS_EOTHER, "out of memory");
        rc = LOAD_TRANSIENT;
        goto out;
    }
    if (r->seq >= s->next_seq)
        s->next_seq = r->seq + 1;
    json_decref(o);
    return LOAD_OK;
out:
    json_decref(o);
    job_store_rec_free(r);
    return rc;
}

/* Moves DATA/jobs/ID to DATA/quarantine/ID[.N] with the reason beside it. */
static void quarantine(job_store *s, const char *id, const char *why)
{
    char qdir[PATH_MAX], dst[PATH_MAX], src[PATH_MAX];
    cls_error e;
    snprintf(qdir, sizeof qdir, "%s/quarantine", s->data);
    job_store_dir_of(s, id, src, sizeof src);
    if (fileio_mkdir(qdir, &e)) {
        fprintf(stderr, "clsolved: job %s not loaded and left in place (%s): %s\n", id, why, e.msg);
        return;
    }
    if (snprintf(dst, sizeof dst, "%s/%s", qdir, id) >= (int)sizeof dst)
        return;
    for (int k = 1; access(dst, F_OK) == 0 && k < 1000; k++)
        if (snprintf(dst, sizeof dst, "%s/%s.%d", qdir, id, k) >= (int)sizeof dst)
            return;
    if (rename(src, dst) != 0) {
        fprintf(stderr,
                "clsolved: job %s not loaded and left in place (%s): cannot move it to "
                "%s: %s\n",
                id, why, dst, strerror(errno));
        return;
    }
    if (fileio_sync_parent(src, &e) || fileio_sync_parent(dst, &e))
        fprintf(stderr, "clsolved: %s\n", e.msg);
    char note[PATH_MAX + 32], text[1200];
    time_t now = time(NULL);
    snprintf(note, sizeof note, "%s/QUARANTINE.txt", dst);
    int n = snprintf(text, sizeof text,
                     "job %s was moved here by clsolved at start-up (%s): its record could not "
                     "be loaded:\n%s\nMend job.json and move the directory back to jobs/%s to "
                     "load it at the next start.\n",
                     id, ctime(&now), why, id);
    if (fileio_write_durable(note, text, (size_t)(n < (int)sizeof text ? n : (int)sizeof text - 1),
                             &e))
        fprintf(stderr, "clsolved: %s\n", e.msg);
    s->quarantined++;
    fprintf(stderr, "clsolved: job store: job %s quarantined in %s: %s\n", id, dst, why);
}

static int job_store_recover(job_store *s, cls_error *err)
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
    /* the names first: quarantine renames entries out of the directory */
    char(*names)[IDS_LEN + 1] = NULL;
    size_t nn = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!ids_valid(e->d_name))
            continue;
        if (nn == cap) {
            size_t nc = cap ? 2 * cap : 256;
            void *p = realloc(names, nc * sizeof *names);
            if (!p) {
                closedir(d);
                free(names);
                return cls_fail(err, CLS_EOTHER, "out of memory listing %s", path);
            }
            names = p;
            cap = nc;
        }
        memcpy(names[nn++], e->d_name, IDS_LEN + 1);
    }
    closedir(d);
    int requeued = 0, loaded = 0, removed = 0, held = 0;
    for (size_t i = 0; i < nn; i++) {
        const char *id = names[i];
        int rc = LOAD_TRANSIENT;
        for (int attempt = 0; attempt < 4 && rc == LOAD_TRANSIENT; attempt++) {
            if (attempt)
                nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
            cls_error_clear(&e2);
            rc = load_one(s, id, &e2);
        }
        if (rc == LOAD_OK) {
            loaded++;
        } else if (rc == LOAD_MISSING) {
            fprintf(stderr, "clsolved: job store: finishing the removal of job %s (no job.json)\n",
                    id);
            job_store_dir_of(s, id, path, sizeof path);
            if (fileio_remove_tree(path, &e2))
                fprintf(stderr, "clsolved: %s\n", e2.msg);
            removed++;
        } else {
            quarantine(s, id, e2.msg[0] ? e2.msg : "unreadable record");
            held++;
        }
    }
    free(names);
    for (size_t i = 0; i < s->n; i++)
        if (s->recs[i]->status == JOB_QUEUED || s->recs[i]->load_ended) {
            requeued += s->recs[i]->status == JOB_QUEUED;
            s->recs[i]->load_ended = 0;
            char *text = job_store_dump(job_store_rec_json(s->recs[i], 1));
            if (!text || job_store_write_record(s, s->recs[i]->id, text, &e2))
                fprintf(stderr, "clsolved: %s\n", text ? e2.msg : "out of memory");
            free(text);
        }
    if (loaded || removed || held)
        fprintf(stderr,
                "clsolved: job store: %d jobs loaded (%d queued to run), %d interrupted removals "
                "finished, %d quarantined\n",
                loaded, requeued, removed, held);
    return CLS_OK;
}

/* --- opening and closing --- */

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

/* --- retention --- */

void job_store_retention(job_store *s)
{
    if (s->cfg.keep_count < 0 && s->cfg.keep_seconds < 0 && !s->cfg.keep_bytes)
        return;
    double now = job_store_wall_now();
    for (;;) {
        char victim[IDS_LEN + 1] = "";
        pthread_mutex_lock(&s->mu);
        int64_t finished = 0;
        uint64_t bytes = 0;
        for (size_t i = 0; i < s->n; i++)
            if (job_store_finished(s->recs[i]->status) && !s->recs[i]->pinned) {
                finished++;
                bytes += s->recs[i]->disk;
            }
        job_rec *oldest = NULL;
        for (size_t i = 0; i < s->n; i++) {
            job_rec *r = s->recs[i];
            if (!job_store_finished(r->status) || r->pinned)
                continue;
            if (!oldest || r->finished < oldest->finished)
                oldest = r;
        }
        if (oldest && ((s->cfg.keep_count >= 0 && finished > s->cfg.keep_count) ||
                       (s->cfg.keep_seconds >= 0 && now - oldest->finished > s->cfg.keep_seconds) ||
                       (s->cfg.keep_bytes && bytes > s->cfg.keep_bytes &&
                        now - oldest->finished >= s->cfg.keep_min_age))) {
            memcpy(victim, oldest->id, sizeof victim);
            job_store_remove_at(s, job_store_find_index(s, oldest));
            job_store_rec_free(oldest);
            s->retention_removed++;
        }
        pthread_mutex_unlock(&s->mu);
        if (!victim[0])
            return;
        job_store_remove_dir(s, victim, NULL);
    }
}
