/*
 * preparse.c: the registry and the parse threads (see preparse.h).
 *
 * One mutex guards the registry and every entry's counters; each entry has
 * a condition the upload signals as bytes arrive and the parse thread
 * signals when it ends. The parse thread never holds the mutex while it
 * parses: it takes it only in grow(), to wait for bytes.
 */
#include "preparse.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../common/sysres.h"

struct preparse {
    uint64_t id; /* preparse_end's answer, for preparse_forget */
    char path[4096];
    pthread_t tid;
    pthread_cond_t cv;
    uint64_t written;
    int ended, complete; /* the upload's end; whether it wrote everything */
    int finished, rc;    /* the parse's end and outcome */
    double ended_at;     /* monotonic seconds */
    csr_matrix A;
    mm_header h;
    mm_read_stats st;
    dev_t dev;
    ino_t ino;
    struct timespec mtime; /* the file when its upload ended: size (written) and mtime */
    uint64_t max_memory;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static preparse *reg[PREPARSE_MAX];
static int enabled;
static uint64_t next_id = 1;

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void preparse_enable(int on)
{
    const char *v = getenv("CLSOLVE_PREPARSE"); /* 0 or 1: benchmarks compare */
    if (v && *v)
        on = strcmp(v, "0") != 0;
    pthread_mutex_lock(&reg_mu);
    enabled = on;
    pthread_mutex_unlock(&reg_mu);
}

int preparse_enabled(void)
{
    pthread_mutex_lock(&reg_mu);
    int on = enabled;
    pthread_mutex_unlock(&reg_mu);
    return on;
}

/* the reader at the written bytes' end: wait for more, or for the end */
static int grow(void *ctx, int64_t have)
{
    preparse *p = ctx;
    pthread_mutex_lock(&reg_mu);
    while (!p->ended && p->written <= (uint64_t)have)
        pthread_cond_wait(&p->cv, &reg_mu);
    int r = p->written > (uint64_t)have ? 1 : p->complete ? 0 : -1;
    pthread_mutex_unlock(&reg_mu);
    return r;
}

static void *run(void *arg)
{
    preparse *p = arg;
    /* two cores stay with the upload's receiving thread and the rest of the
     * daemon: with every core parsing, the receive took 0.05-0.08 s longer
     * (589 MB on a 16-core H200 host) */
    int cpus = cls_sysres_cpus();
    mm_read_options o = {.grow = grow,
                         .grow_ctx = p,
                         .max_memory = p->max_memory,
                         .threads = cpus > 4   ? cpus - 2
                                    : cpus > 1 ? cpus - 1
                                               : 1};
    cls_error err;
    cls_error_clear(&err);
    csr_matrix A;
    mm_header h;
    mm_read_stats st;
    int rc = mm_read_csr(p->path, &o, &A, &h, &st, &err);
    pthread_mutex_lock(&reg_mu);
    p->rc = rc;
    if (!rc) {
        p->A = A;
        p->h = h;
        p->st = st;
    }
    p->finished = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&reg_mu);
    return NULL;
}

/* Frees an entry whose thread has ended or is ending (joins it). */
static void entry_free(preparse *p)
{
    pthread_join(p->tid, NULL);
    if (!p->rc)
        csr_free(&p->A);
    pthread_cond_destroy(&p->cv);
    free(p);
}

/* Under reg_mu: takes out the entries nobody took in time; returns them
 * in out (freed by the caller without the mutex). */
static int prune(preparse **out)
{
    int n = 0;
    double now = mono();
    for (int i = 0; i < PREPARSE_MAX; i++)
        if (reg[i] && reg[i]->ended &&
            (!reg[i]->complete || now - reg[i]->ended_at > PREPARSE_TTL_S)) {
            out[n++] = reg[i];
            reg[i] = NULL;
        }
    return n;
}

static void free_all(preparse **v, int n)
{
    for (int i = 0; i < n; i++)
        entry_free(v[i]);
}

preparse *preparse_start(const char *path, uint64_t bytes)
{
    preparse *gone[PREPARSE_MAX];
    pthread_mutex_lock(&reg_mu);
    int ngone = prune(gone), slot = -1;
    for (int i = 0; i < PREPARSE_MAX && slot < 0; i++)
        if (!reg[i])
            slot = i;
    pthread_mutex_unlock(&reg_mu);
    free_all(gone, ngone);
    struct stat sb;
    if (!preparse_enabled() || slot < 0 || strlen(path) >= sizeof((preparse *)0)->path ||
        stat(path, &sb) != 0)
        return NULL;
    preparse *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    snprintf(p->path, sizeof p->path, "%s", path);
    pthread_mutex_lock(&reg_mu);
    p->id = next_id++;
    pthread_mutex_unlock(&reg_mu);
    pthread_cond_init(&p->cv, NULL);
    p->written = bytes;
    p->dev = sb.st_dev;
    p->ino = sb.st_ino;
    cls_sysres r;
    cls_sysres_read(&r);
    p->max_memory = r.mem_available ? r.mem_available / 4 : 0;
    pthread_mutex_lock(&reg_mu);
    if (reg[slot]) { /* taken meanwhile */
        pthread_mutex_unlock(&reg_mu);
        pthread_cond_destroy(&p->cv);
        free(p);
        return NULL;
    }
    if (pthread_create(&p->tid, NULL, run, p) != 0) {
        pthread_mutex_unlock(&reg_mu);
        pthread_cond_destroy(&p->cv);
        free(p);
        return NULL;
    }
    reg[slot] = p;
    pthread_mutex_unlock(&reg_mu);
    return p;
}

void preparse_feed(preparse *p, uint64_t bytes)
{
    pthread_mutex_lock(&reg_mu);
    p->written = bytes;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&reg_mu);
}

uint64_t preparse_end(preparse *p, int complete)
{
    struct stat sb;
    int known = complete && stat(p->path, &sb) == 0;
    pthread_mutex_lock(&reg_mu);
    p->ended = 1;
    /* the file as its upload left it: a job takes the entry only for that
     * file (an inode freed by a refused job is reused at once on ext4) */
    p->complete =
        known && sb.st_dev == p->dev && sb.st_ino == p->ino && (uint64_t)sb.st_size == p->written;
    if (known)
        p->mtime = sb.st_mtim;
    p->ended_at = mono();
    pthread_cond_broadcast(&p->cv);
    uint64_t id = p->id;
    pthread_mutex_unlock(&reg_mu);
    return id;
}

void preparse_forget(uint64_t id)
{
    preparse *p = NULL;
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; id && i < PREPARSE_MAX && !p; i++)
        if (reg[i] && reg[i]->id == id) {
            p = reg[i];
            reg[i] = NULL;
        }
    pthread_mutex_unlock(&reg_mu);
    if (p)
        entry_free(p);
}

int preparse_take(const char *path, csr_matrix *A, mm_header *h, mm_read_stats *st)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return 0;
    preparse *p = NULL, *gone[2 * PREPARSE_MAX];
    pthread_mutex_lock(&reg_mu);
    int ngone = prune(gone);
    for (int i = 0; i < PREPARSE_MAX; i++) {
        if (!reg[i] || !reg[i]->ended || reg[i]->dev != sb.st_dev || reg[i]->ino != sb.st_ino)
            continue;
        if (!p && reg[i]->complete && reg[i]->written == (uint64_t)sb.st_size &&
            reg[i]->mtime.tv_sec == sb.st_mtim.tv_sec &&
            reg[i]->mtime.tv_nsec == sb.st_mtim.tv_nsec)
            p = reg[i];
        else /* this inode's file is not what that upload left: stale */
            gone[ngone++] = reg[i];
        reg[i] = NULL;
    }
    pthread_mutex_unlock(&reg_mu);
    free_all(gone, ngone);
    if (!p)
        return 0;
    pthread_mutex_lock(&reg_mu);
    while (!p->finished && p->ended && p->complete)
        pthread_cond_wait(&p->cv, &reg_mu);
    int ok = p->finished && p->ended && p->complete && !p->rc;
    pthread_mutex_unlock(&reg_mu);
    if (!ok) { /* the file is read as before */
        if (!p->ended)
            preparse_end(p, 0);
        entry_free(p);
        return 0;
    }
    pthread_join(p->tid, NULL);
    *A = p->A;
    *h = p->h;
    *st = p->st;
    pthread_cond_destroy(&p->cv);
    free(p);
    return 1;
}

void preparse_clear(void)
{
    preparse *all[PREPARSE_MAX];
    int n = 0;
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < PREPARSE_MAX; i++)
        if (reg[i]) {
            all[n++] = reg[i];
            if (!reg[i]->ended) {
                reg[i]->ended = 1;
                reg[i]->complete = 0;
                pthread_cond_broadcast(&reg[i]->cv);
            }
            reg[i] = NULL;
        }
    pthread_mutex_unlock(&reg_mu);
    free_all(all, n);
}
