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
    job_store_note_write(s, rc, err);
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
