/*
 * job_wait.c: the parked long polls (see job_wait.h).
 *
 * A small array of parked requests under one mutex, and one thread. The
 * thread reads the store's change count first, then resumes every request
 * whose job is final or gone or whose deadline has passed, then waits for
 * the count to move (job_store_watch), at most until the nearest deadline
 * or a second. Reading the count before looking at the jobs is what makes
 * it lose no wake-up: a job that ends after its look has moved the count,
 * so the wait returns at once. A request parked meanwhile pokes the store
 * (job_store_poke) for the same reason. The second's cap bounds what a
 * change the store does not count (none is known) could cost.
 *
 * Connections are resumed outside the mutex, so that no lock of ours is
 * held while MHD_resume_connection takes libmicrohttpd's own. At stop,
 * every parked request is resumed (and answered with the job as it is)
 * before the thread ends.
 */
#include "job_wait.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "ids.h"

typedef struct job_wait_req {
    struct MHD_Connection *conn;
    char id[IDS_LEN + 1];
    double deadline;
} job_wait_req;

struct job_wait {
    job_store *store;
    pthread_t thread;
    pthread_mutex_t mu;
    job_wait_req *reqs;
    size_t n, cap;
    int stop;
    uint64_t parked_total, resumed_final, resumed_deadline;
};

/* 1 when the request is to be answered now. */
static int job_wait_due(job_wait *w, const job_wait_req *r, double now)
{
    char dir[PATH_MAX];
    job_status st;
    if (job_store_job_dir(w->store, r->id, dir, sizeof dir, &st) != 0 || job_status_final(st)) {
        w->resumed_final++;
        return 1;
    }
    if (now >= r->deadline) {
        w->resumed_deadline++;
        return 1;
    }
    return 0;
}

#define JOB_WAIT_BATCH 64 /* resumed per look; more due: look again at once */

static void *job_wait_thread(void *arg)
{
    job_wait *w = arg;
    struct MHD_Connection *due[JOB_WAIT_BATCH];
    uint64_t seen = job_store_watch(w->store, 0, 0);
    for (;;) {
        size_t ndue = 0;
        pthread_mutex_lock(&w->mu);
        int stop = w->stop;
        double now = cls_now(), next = now + 1.0;
        for (size_t i = 0; i < w->n;) {
            if (ndue < JOB_WAIT_BATCH && (stop || job_wait_due(w, &w->reqs[i], now))) {
                due[ndue++] = w->reqs[i].conn;
                w->reqs[i] = w->reqs[--w->n];
                continue;
            }
            if (w->reqs[i].deadline < next)
                next = w->reqs[i].deadline;
            i++;
        }
        size_t left = w->n;
        pthread_mutex_unlock(&w->mu);
        for (size_t i = 0; i < ndue; i++)
            MHD_resume_connection(due[i]);
        if (ndue == JOB_WAIT_BATCH)
            continue; /* a full batch: there may be more due */
        if (stop && !left)
            break;
        double dt = next - cls_now();
        seen = job_store_watch(w->store, seen, dt > 0 ? dt : 0);
    }
    return NULL;
}

int job_wait_start(job_wait **out, job_store *store)
{
    job_wait *w = calloc(1, sizeof *w);
    if (!w)
        return -1;
    w->store = store;
    pthread_mutex_init(&w->mu, NULL);
    if (pthread_create(&w->thread, NULL, job_wait_thread, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        free(w);
        return -1;
    }
    *out = w;
    return 0;
}

int job_wait_add(job_wait *w, struct MHD_Connection *c, const char *id, double deadline)
{
    pthread_mutex_lock(&w->mu);
    if (!w->stop && w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        job_wait_req *r = realloc(w->reqs, cap * sizeof *r);
        if (r) {
            w->reqs = r;
            w->cap = cap;
        }
    }
    if (w->stop || w->n == w->cap) {
        pthread_mutex_unlock(&w->mu);
        return -1;
    }
    job_wait_req *r = &w->reqs[w->n++];
    r->conn = c;
    snprintf(r->id, sizeof r->id, "%s", id);
    r->deadline = deadline;
    w->parked_total++;
    pthread_mutex_unlock(&w->mu);
    job_store_poke(w->store); /* the thread looks again, with this one */
    return 0;
}

void job_wait_stop(job_wait *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_mutex_unlock(&w->mu);
    job_store_poke(w->store);
    pthread_join(w->thread, NULL);
}

void job_wait_free(job_wait *w)
{
    if (!w)
        return;
    pthread_mutex_destroy(&w->mu);
    free(w->reqs);
    free(w);
}

char *job_wait_metrics(void *arg)
{
    job_wait *w = arg;
    size_t cap = 1024;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    pthread_mutex_lock(&w->mu);
    snprintf(
        out, cap,
        "# HELP clsolve_http_waiting_requests Long polls (GET /v1/jobs/ID?wait=S) parked now.\n"
        "# TYPE clsolve_http_waiting_requests gauge\nclsolve_http_waiting_requests %zu\n"
        "# HELP clsolve_http_waits_total Long polls answered, by what ended the wait.\n"
        "# TYPE clsolve_http_waits_total counter\n"
        "clsolve_http_waits_total{ended=\"job\"} %llu\n"
        "clsolve_http_waits_total{ended=\"deadline\"} %llu\n",
        w->n, (unsigned long long)w->resumed_final, (unsigned long long)w->resumed_deadline);
    pthread_mutex_unlock(&w->mu);
    return out;
}
