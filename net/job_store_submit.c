/*
 * job_store_submit.c: how an upload becomes a job (see job_store.h). It
 * is streamed into DATA/incoming/ID/ (job_store_incoming_new), and exists
 * for clients only once its record is durable: job_store_accept writes
 * job.json inside the upload directory, syncs it, renames the directory
 * into jobs/, and only then inserts the record in the table; a crash at
 * any instant leaves no job or a whole one. The queue's limit is checked
 * twice, before the upload (job_store_full: a quick 503) and at the
 * accept, where uploads that raced each other are counted (`pending`).
 * Free space is admitted before and during the upload
 * (job_store_disk_admit), so a full disk refuses jobs rather than
 * failing the record writes of jobs already taken.
 */
#include "job_store.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "job_store_priv.h"

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

/* Room for n more jobs in the queue, taken at once; JOB_STORE_FULL when
 * they do not all fit (nothing taken). */
static int accept_reserve(job_store *s, int n)
{
    pthread_mutex_lock(&s->mu);
    int full = count_queued(s) + s->pending + n > s->cfg.max_queued;
    if (!full)
        s->pending += n;
    pthread_mutex_unlock(&s->mu);
    return full ? JOB_STORE_FULL : CLS_OK;
}

/* The record of upload id, its job.json written inside the upload
 * directory: durably, with that directory synced, or (group) plainly, the
 * caller syncing the file system once for the whole group. */
static int accept_record(job_store *s, const char *id, int64_t seq, const job_params *p,
                         const job_inputs *in, uint64_t bytes, int group, job_rec **out,
                         cls_error *err)
{
    job_rec *r = calloc(1, sizeof *r);
    *out = r;
    if (!r)
        return cls_fail(err, CLS_EOTHER, "out of memory");
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
    char *text = job_store_dump(job_store_rec_json(r, 1));
    if (!text)
        return cls_fail(err, CLS_EOTHER, "out of memory");
    char path[PATH_MAX];
    int rc = snprintf(path, sizeof path, "%s/incoming/%s/job.json", s->data, id) >=
                     (int)sizeof path
                 ? cls_fail(err, CLS_EOTHER, "data directory path too long")
             : group ? fileio_write_plain(path, text, strlen(text), err)
                     : fileio_write_durable(path, text, strlen(text), err);
    free(text);
    if (!rc && !group) {
        snprintf(path, sizeof path, "%s/incoming/%s", s->data, id);
        rc = fileio_sync_path(path, err);
    }
    job_store_note_write(s, rc, err);
    return rc;
}

static int accept_jobs(job_store *s, int n, const char *const *ids, const job_params *p,
                       const job_inputs *in, const uint64_t *bytes, int group, char **job_json,
                       cls_error *err);

int job_store_accept(job_store *s, const char *id, const job_params *p, const job_inputs *in,
                     uint64_t bytes, char **job_json, cls_error *err)
{
    return accept_jobs(s, 1, &id, p, in, &bytes, 0, job_json, err);
}

int job_store_accept_many(job_store *s, int n, const char *const *ids, const job_params *p,
                          const job_inputs *in, const uint64_t *bytes, char **job_json,
                          cls_error *err)
{
    return accept_jobs(s, n, ids, p, in, bytes, 1, job_json, err);
}

/* Every record is made durable in its upload directory first (a group by
 * one syncfs for all its files), then the directories are renamed into
 * jobs/ and the two parents synced once for all (a batch of n jobs costs
 * one syncfs and two directory fsyncs, where n jobs one by one cost 4n
 * fsyncs with their uploads'), then the
 * records enter the table together under one lock, so the scheduler sees
 * the whole batch at once. A failure before the renames discards every
 * upload; one during them removes the jobs already renamed: no job or
 * all of them. */
static int accept_jobs(job_store *s, int n, const char *const *ids, const job_params *p,
                       const job_inputs *in, const uint64_t *bytes, int group, char **job_json,
                       cls_error *err)
{
    int rc = CLS_OK, renamed = 0;
    for (int i = 0; i < n; i++)
        job_json[i] = NULL;
    for (int i = 0; i < n && !rc; i++)
        if (!ids_valid(ids[i]))
            rc = cls_fail(err, CLS_EOTHER, "invalid job id");
    if (!rc && accept_reserve(s, n)) {
        for (int i = 0; i < n; i++)
            job_store_incoming_discard(s, ids[i]);
        return JOB_STORE_FULL;
    }
    if (rc)
        return rc; /* never an upload's: ids come from job_store_incoming_new */
    job_rec **r = calloc((size_t)n, sizeof *r);
    if (!r)
        rc = cls_fail(err, CLS_EOTHER, "out of memory");
    pthread_mutex_lock(&s->mu);
    const int64_t seq = s->next_seq;
    s->next_seq += n;
    pthread_mutex_unlock(&s->mu);
    /* a group (a batch) is committed once: its records and uploads
     * (written without fsyncs, upload.h's no_sync) made durable by one
     * syncfs before any rename, where one job syncs its own files */
    for (int i = 0; i < n && !rc; i++)
        rc = accept_record(s, ids[i], seq + i, p, &in[i], bytes[i], group, &r[i], err);
    if (!rc && group) {
        rc = fileio_sync_fs(s->data, err);
        job_store_note_write(s, rc, err);
    }
    char inc[PATH_MAX], fin[PATH_MAX];
    for (int i = 0; i < n && !rc; i++) {
        snprintf(inc, sizeof inc, "%s/incoming/%s", s->data, ids[i]);
        job_store_dir_of(s, ids[i], fin, sizeof fin);
        if (rename(inc, fin) != 0)
            rc = cls_fail(err, CLS_EOTHER, "%s: rename failed: %s", fin, strerror(errno));
        else
            renamed++; /* only a rename that happened is undone below */
    }
    /* the renames durable: jobs/ and incoming/ are every job's parents (a
     * failure: they may not be, so they are undone rather than acknowledged) */
    if (!rc && !(rc = fileio_sync_parent(fin, err)))
        rc = fileio_sync_parent(inc, err);
    if (rc) {
        for (int i = 0; i < n; i++) {
            if (i < renamed) {
                job_store_dir_of(s, ids[i], fin, sizeof fin);
                fileio_remove_tree(fin, &(cls_error){0});
            } else {
                job_store_incoming_discard(s, ids[i]);
            }
            if (r)
                job_store_rec_free(r[i]);
        }
        free(r);
        pthread_mutex_lock(&s->mu);
        s->pending -= n;
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        job_store_dir_of(s, ids[i], fin, sizeof fin);
        r[i]->disk = job_store_dir_bytes(fin);
    }
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < n; i++) {
        s->pending--;
        if (job_store_insert_sorted(s, r[i])) { /* out of memory: this one is not a job */
            job_store_rec_free(r[i]);
            pthread_mutex_unlock(&s->mu);
            job_store_remove_dir(s, ids[i], NULL);
            pthread_mutex_lock(&s->mu);
            rc = cls_fail(err, CLS_EOTHER, "out of memory");
            continue;
        }
        job_json[i] = job_store_dump(job_store_rec_json(r[i], 0));
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    free(r);
    return rc;
}

/* MiB with one decimal: whole MiB printed a 1 MB reserve as "0 MB" */
static double job_store_mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

int job_store_disk_admit(job_store *s, uint64_t need, cls_error *err)
{
    uint64_t avail, size;
    if (!s->cfg.disk_reserve || job_store_disk_space(s, &avail, &size))
        return CLS_OK;
    if (avail >= s->cfg.disk_reserve && avail - s->cfg.disk_reserve >= need)
        return CLS_OK;
    if (need)
        return cls_fail(err, CLS_EOTHER,
                        "the data directory's disk has %.1f MB free; this upload (%.1f MB) would "
                        "leave less than the reserve of %.1f MB (--disk-reserve)",
                        job_store_mib(avail), job_store_mib(need),
                        job_store_mib(s->cfg.disk_reserve));
    return cls_fail(err, CLS_EOTHER,
                    "the data directory's disk has %.1f MB free, less than the reserve of %.1f MB "
                    "(--disk-reserve)",
                    job_store_mib(avail), job_store_mib(s->cfg.disk_reserve));
}

int job_store_disk_room(job_store *s, uint64_t *room, uint64_t *avail, uint64_t *reserve)
{
    uint64_t size;
    *room = *avail = 0;
    *reserve = s->cfg.disk_reserve;
    if (job_store_disk_space(s, avail, &size))
        return -1;
    *room = *avail > *reserve ? *avail - *reserve : 0;
    return 0;
}
