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
 *  - is missing and DATA/removing/ID marks the job: a removal was cut
 *    short (the marker, then job.json, then the rest: job_store_remove_dir)
 *    and is finished here; missing without the marker, it is damage and is
 *    quarantined as below (reason no-record);
 *  - cannot be read for a passing reason (EMFILE, ENFILE, ENOMEM, EAGAIN,
 *    EINTR): tried again, three times, 100 ms apart;
 *  - is anything else (unreadable, not JSON, not a job record, invalid
 *    parameters): the directory is moved, whole, to DATA/quarantine/ID
 *    (ID.1, ID.2, ... when that exists) with the reason in
 *    QUARANTINE.txt beside it, a log line and a count in /metrics (reason
 *    record). Never deleted, by anything: retention knows only the jobs
 *    table, and quarantine/ is not in it; an operator reads it, mends it
 *    and moves it back, or removes it;
 *  - loads, but the job succeeded and its stored solution files are not
 *    the size the record says, or a download found them damaged (the
 *    record's store.damaged): quarantined the same way (reason damaged).
 *
 * Then queued and interrupted jobs are queued again in submission order
 * (an interrupted run counted), their records rewritten; incoming/ (uploads
 * that never became jobs) is emptied, and so is removing/ but for the
 * marker of a removal that could not be finished (tried again next time).
 *
 * Retention (--keep, --keep-bytes): the oldest removable finished job goes
 * while there are more finished jobs than the count, it finished longer
 * ago than the duration, or the finished jobs' files take more than the
 * size; pinned jobs are exempt. keep=until-fetched jobs count towards the
 * limits like any other but are not removable until their result was
 * fetched once (job_store_held_for_fetch); such a job that failed or was
 * cancelled has nothing to fetch and is removable once --keep-min-age has
 * passed. When a limit is exceeded and only held jobs are left, retention
 * says so (one log line, /metrics) instead of removing them; free-space
 * admission (the 507) then protects the disk. A removed job leaves the table before its directory
 * goes (job.json first), so a crash in between is finished by recovery.
 */
#include "job_store.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "job_store_priv.h"

enum { LOAD_OK, LOAD_MISSING, LOAD_TRANSIENT, LOAD_BAD, LOAD_DAMAGED };

/* LOAD_DAMAGED when a succeeded job's stored solution files are not the
 * size its record says (missing, cut short, grown), or a download of this
 * or an earlier run found them damaged (the record's store.damaged). The
 * CRC-32 is not read here: reading every stored solution whole at every
 * start costs what the store holds; a download checks it (routes_solution.c)
 * and records what it found, which the next start reads. */
static int load_check_result(const char *dir, json_t *o, cls_error *err)
{
    const char *dmg = json_string_value(json_object_get(json_object_get(o, "store"), "damaged"));
    if (dmg)
        return cls_fail(err, CLS_EINPUT, "its result was found damaged: %s", dmg), LOAD_DAMAGED;
    const char *name;
    json_t *f;
    json_object_foreach(json_object_get(json_object_get(o, "result"), "solution_files"), name, f)
    {
        json_t *b = json_object_get(f, "bytes");
        char path[PATH_MAX];
        struct stat sb;
        /* only the names the store writes: a record never names a path */
        if (!json_is_integer(b) || (strcmp(name, "solution.mtx") && strcmp(name, "solution.bin")))
            continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
            continue;
        if (stat(path, &sb) != 0)
            return cls_fail(err, CLS_EINPUT, "its result %s is missing (%s)", name,
                            strerror(errno)),
                   LOAD_DAMAGED;
        if ((int64_t)sb.st_size != json_integer_value(b))
            return cls_fail(err, CLS_EINPUT, "its result %s is %lld bytes, the record says %lld",
                            name, (long long)sb.st_size, (long long)json_integer_value(b)),
                   LOAD_DAMAGED;
    }
    return LOAD_OK;
}

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
    /* absent in older records: the default */
    const char *keep = json_string_value(json_object_get(o, "keep"));
    r->params.keep_until_fetched = keep && !strcmp(keep, "until-fetched");
    r->fetched = json_number_value(json_object_get(store, "fetched"));
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
    if (r->status == JOB_SUCCEEDED && (rc = load_check_result(dir, o, err)) != LOAD_OK)
        goto out;
    rc = LOAD_BAD;
    if (job_status_final(r->status)) {
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

/* Moves DATA/jobs/ID to DATA/quarantine/ID[.N] with the reason beside it.
 * The log line names the data directory's part of the path only: the same
 * words may reach a client (a log shipped to a dashboard), the host's
 * layout is not theirs. */
static void quarantine(job_store *s, const char *id, int reason, const char *why)
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
    const char *rel = dst + strlen(s->data) + 1; /* quarantine/ID[.N] */
    if (rename(src, dst) != 0) {
        fprintf(stderr,
                "clsolved: job %s not loaded and left in place (%s): cannot move it to "
                "%s: %s\n",
                id, why, rel, strerror(errno));
        return;
    }
    if (fileio_sync_parent(src, &e) || fileio_sync_parent(dst, &e))
        fprintf(stderr, "clsolved: %s\n", e.msg);
    char note[PATH_MAX + 32], text[1200];
    time_t now = time(NULL);
    snprintf(note, sizeof note, "%s/QUARANTINE.txt", dst);
    int n = snprintf(text, sizeof text,
                     "job %s was moved here by clsolved at start-up, %sreason: %s\n%s\n"
                     "Mend it (job.json, or the result files) and move the directory back to "
                     "jobs/%s to load it at the next start, or remove it: clsolved never does.\n",
                     id, ctime(&now), job_store_quarantine_reasons[reason], why, id);
    if (fileio_write_durable(note, text, (size_t)(n < (int)sizeof text ? n : (int)sizeof text - 1),
                             &e))
        fprintf(stderr, "clsolved: %s\n", e.msg);
    s->quarantined[reason]++;
    /* the reason may quote a path (a failed open): the data directory's
     * part only, as above */
    char said[600], prefix[PATH_MAX + 1];
    snprintf(said, sizeof said, "%s", why);
    snprintf(prefix, sizeof prefix, "%s/", s->data);
    cls_str_replace_all(said, sizeof said, prefix, "");
    fprintf(stderr, "clsolved: job store: job %s quarantined in %s (%s): %s\n", id, rel,
            job_store_quarantine_reasons[reason], said);
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
            /* a removal cut short is marked (job_store_removal_mark); a
             * record that vanished otherwise is damage: its files are kept */
            char mark[PATH_MAX];
            snprintf(mark, sizeof mark, "%s/removing/%s", s->data, id);
            if (access(mark, F_OK) == 0) {
                fprintf(stderr,
                        "clsolved: job store: finishing the removal of job %s (no job.json)\n", id);
                job_store_dir_of(s, id, path, sizeof path);
                if (fileio_remove_tree(path, &e2))
                    fprintf(stderr, "clsolved: %s\n", e2.msg);
                removed++;
            } else {
                quarantine(s, id, JOB_QUARANTINE_NO_RECORD,
                           "job.json is missing and no removal was under way");
                held++;
            }
        } else {
            quarantine(s, id, rc == LOAD_DAMAGED ? JOB_QUARANTINE_DAMAGED : JOB_QUARANTINE_RECORD,
                       e2.msg[0] ? e2.msg : "unreadable record");
            held++;
        }
    }
    free(names);
    /* a marker is spent once its directory is gone (the removal finished)
     * or has its record (the removal never began: the job stays); one whose
     * finishing failed above stays for the next start */
    snprintf(path, sizeof path, "%s/removing", s->data);
    if ((d = opendir(path)) != NULL) {
        while ((e = readdir(d)) != NULL) {
            char jr[PATH_MAX], jd[PATH_MAX], mk[PATH_MAX];
            if (!ids_valid(e->d_name))
                continue;
            job_store_dir_of(s, e->d_name, jd, sizeof jd);
            if (snprintf(jr, sizeof jr, "%s/job.json", jd) >= (int)sizeof jr ||
                snprintf(mk, sizeof mk, "%s/%s", path, e->d_name) >= (int)sizeof mk)
                continue;
            if (access(jd, F_OK) != 0 || access(jr, F_OK) == 0)
                unlink(mk);
        }
        closedir(d);
    }
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
    pthread_cond_init(&s->watch_cv, &ca);
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
    pthread_cond_destroy(&s->watch_cv);
    free(s);
}

const char *job_store_data_dir(const job_store *s)
{
    return s->data;
}

/* --- retention --- */

/* 1 when retention may remove r (a finished, unpinned job) now: not held
 * for its fetch, and a keep=until-fetched job that failed or was cancelled
 * (nothing to fetch) only after --keep-min-age. */
static int retention_removable(const job_store *s, const job_rec *r, double now)
{
    if (job_store_held_for_fetch(r))
        return 0;
    return !r->params.keep_until_fetched || r->status == JOB_SUCCEEDED ||
           now - r->finished >= s->cfg.keep_min_age;
}

void job_store_retention(job_store *s)
{
    if (s->cfg.keep_count < 0 && s->cfg.keep_seconds < 0 && !s->cfg.keep_bytes)
        return;
    double now = job_store_wall_now();
    for (;;) {
        char victim[IDS_LEN + 1] = "";
        pthread_mutex_lock(&s->mu);
        /* held jobs count towards the limits (they take the disk), they
         * are only never the one removed */
        int64_t finished = 0, held = 0;
        uint64_t bytes = 0;
        job_rec *oldest = NULL;
        for (size_t i = 0; i < s->n; i++) {
            job_rec *r = s->recs[i];
            if (!job_status_final(r->status) || r->pinned)
                continue;
            finished++;
            bytes += r->disk;
            held += job_store_held_for_fetch(r);
            if (retention_removable(s, r, now) && (!oldest || r->finished < oldest->finished))
                oldest = r;
        }
        int over_count = s->cfg.keep_count >= 0 && finished > s->cfg.keep_count;
        int over_bytes = s->cfg.keep_bytes && bytes > s->cfg.keep_bytes;
        if (oldest && (over_count ||
                       (s->cfg.keep_seconds >= 0 && now - oldest->finished > s->cfg.keep_seconds) ||
                       (over_bytes && now - oldest->finished >= s->cfg.keep_min_age))) {
            memcpy(victim, oldest->id, sizeof victim);
            job_store_remove_at(s, job_store_find_index(s, oldest));
            job_store_rec_free(oldest);
            s->retention_removed++;
        } else {
            /* what is left over a limit waits for its owners: said once
             * per change, not at every pass */
            int64_t waiting = (over_count || over_bytes) ? held : 0;
            if (waiting && waiting != s->retention_waiting)
                fprintf(stderr,
                        "clsolved: retention: %s over its limit; %lld finished jobs kept until "
                        "their results are fetched (keep=until-fetched)\n",
                        over_bytes ? "--keep-bytes" : "--keep", (long long)waiting);
            s->retention_waiting = waiting;
        }
        pthread_mutex_unlock(&s->mu);
        if (!victim[0])
            return;
        job_store_remove_dir(s, victim, NULL);
    }
}
