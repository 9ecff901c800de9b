/*
 * metrics.c: counters and their Prometheus rendering (see metrics.h).
 * Label values are escaped as the format requires (backslash, quote,
 * newline), since device names come from drivers.
 */
#include "metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"

#define METRICS_MAX_DEVICES 256

static struct {
    pthread_mutex_t mu;
    int ranks;
    double start;
    uint64_t bytes, submitted, rejected;
    uint64_t finished[JOB_NSTATES];
    double solve_s;
    uint64_t iterations;
    uint64_t http[6]; /* 1xx..5xx by class; [0] other */
    struct {
        int rank, index;
        char name[128];
        double busy;
    } dev[METRICS_MAX_DEVICES];
    int ndev;
    struct {
        metrics_source_fn fn;
        void *ctx;
    } src[8];
    int nsrc;
} m = {.mu = PTHREAD_MUTEX_INITIALIZER};

void metrics_add_source(metrics_source_fn fn, void *ctx)
{
    pthread_mutex_lock(&m.mu);
    if (m.nsrc < 8) {
        m.src[m.nsrc].fn = fn;
        m.src[m.nsrc].ctx = ctx;
        m.nsrc++;
    }
    pthread_mutex_unlock(&m.mu);
}

void metrics_init(int ranks)
{
    pthread_mutex_lock(&m.mu);
    m.ranks = ranks;
    m.start = cls_now();
    pthread_mutex_unlock(&m.mu);
}

void metrics_bytes_received(uint64_t n)
{
    pthread_mutex_lock(&m.mu);
    m.bytes += n;
    pthread_mutex_unlock(&m.mu);
}

void metrics_job_submitted(void)
{
    pthread_mutex_lock(&m.mu);
    m.submitted++;
    pthread_mutex_unlock(&m.mu);
}

void metrics_upload_rejected(void)
{
    pthread_mutex_lock(&m.mu);
    m.rejected++;
    pthread_mutex_unlock(&m.mu);
}

void metrics_job_finished(job_status st, double solve_s, int64_t iterations)
{
    pthread_mutex_lock(&m.mu);
    if ((unsigned)st < JOB_NSTATES)
        m.finished[st]++;
    m.solve_s += solve_s;
    m.iterations += (uint64_t)(iterations > 0 ? iterations : 0);
    pthread_mutex_unlock(&m.mu);
}

void metrics_device_busy(int rank, int index, const char *name, double seconds)
{
    pthread_mutex_lock(&m.mu);
    int i;
    for (i = 0; i < m.ndev; i++)
        if (m.dev[i].rank == rank && m.dev[i].index == index && !strcmp(m.dev[i].name, name))
            break;
    if (i == m.ndev && m.ndev < METRICS_MAX_DEVICES) {
        m.dev[i].rank = rank;
        m.dev[i].index = index;
        snprintf(m.dev[i].name, sizeof m.dev[i].name, "%s", name);
        m.dev[i].busy = 0;
        m.ndev++;
    }
    if (i < m.ndev)
        m.dev[i].busy += seconds;
    pthread_mutex_unlock(&m.mu);
}

void metrics_http_response(unsigned status)
{
    unsigned c = status / 100;
    pthread_mutex_lock(&m.mu);
    m.http[c >= 1 && c <= 5 ? c : 0]++;
    pthread_mutex_unlock(&m.mu);
}

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

__attribute__((format(printf, 2, 3))) static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (w < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)w < b->cap - b->n) {
            b->n += (size_t)w;
            return;
        }
        size_t nc = (b->cap + (size_t)w + 1) * 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
}

static void escape_label(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (; *in && o + 3 < cap; in++) {
        if (*in == '\\' || *in == '"') {
            out[o++] = '\\';
            out[o++] = *in;
        } else if (*in == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
}

char *metrics_render(job_store *store)
{
    int64_t counts[JOB_NSTATES];
    job_store_counts(store, counts);
    sbuf b = {.cap = 4096};
    b.p = malloc(b.cap);
    if (!b.p)
        return NULL;
    b.p[0] = '\0';
    pthread_mutex_lock(&m.mu);
    sb_printf(&b, "# HELP clsolve_jobs Jobs in the store by state.\n# TYPE clsolve_jobs gauge\n");
    for (int s = 0; s < JOB_NSTATES; s++)
        sb_printf(&b, "clsolve_jobs{state=\"%s\"} %lld\n", job_status_name((job_status)s),
                  (long long)counts[s]);
    sb_printf(&b, "# HELP clsolve_jobs_submitted_total Jobs accepted (202) since start.\n"
                  "# TYPE clsolve_jobs_submitted_total counter\nclsolve_jobs_submitted_total %llu\n",
              (unsigned long long)m.submitted);
    sb_printf(&b, "# HELP clsolve_uploads_rejected_total Uploads answered with an error.\n"
                  "# TYPE clsolve_uploads_rejected_total counter\nclsolve_uploads_rejected_total %llu\n",
              (unsigned long long)m.rejected);
    sb_printf(&b, "# HELP clsolve_jobs_finished_total Jobs finished since start, by final state.\n"
                  "# TYPE clsolve_jobs_finished_total counter\n");
    for (int s = JOB_SUCCEEDED; s < JOB_NSTATES; s++)
        sb_printf(&b, "clsolve_jobs_finished_total{state=\"%s\"} %llu\n",
                  job_status_name((job_status)s), (unsigned long long)m.finished[s]);
    sb_printf(&b, "# HELP clsolve_solve_seconds_total Seconds spent in solver iterations.\n"
                  "# TYPE clsolve_solve_seconds_total counter\nclsolve_solve_seconds_total %.6f\n",
              m.solve_s);
    sb_printf(&b, "# HELP clsolve_iterations_total Krylov iterations run.\n"
                  "# TYPE clsolve_iterations_total counter\nclsolve_iterations_total %llu\n",
              (unsigned long long)m.iterations);
    sb_printf(&b, "# HELP clsolve_bytes_received_total Upload bytes received.\n"
                  "# TYPE clsolve_bytes_received_total counter\nclsolve_bytes_received_total %llu\n",
              (unsigned long long)m.bytes);
    sb_printf(&b, "# HELP clsolve_device_busy_seconds_total Seconds each device spent on jobs.\n"
                  "# TYPE clsolve_device_busy_seconds_total counter\n");
    for (int i = 0; i < m.ndev; i++) {
        char name[300];
        escape_label(m.dev[i].name, name, sizeof name);
        sb_printf(&b, "clsolve_device_busy_seconds_total{rank=\"%d\",device=\"%d\",name=\"%s\"} %.6f\n",
                  m.dev[i].rank, m.dev[i].index, name, m.dev[i].busy);
    }
    static const char *const cls[] = {"other", "1xx", "2xx", "3xx", "4xx", "5xx"};
    sb_printf(&b, "# HELP clsolve_http_responses_total HTTP responses by status class.\n"
                  "# TYPE clsolve_http_responses_total counter\n");
    for (int c = 1; c <= 5; c++)
        sb_printf(&b, "clsolve_http_responses_total{code=\"%s\"} %llu\n", cls[c],
                  (unsigned long long)m.http[c]);
    sb_printf(&b, "# HELP clsolve_ranks MPI ranks of the daemon.\n# TYPE clsolve_ranks gauge\n"
                  "clsolve_ranks %d\n",
              m.ranks);
    sb_printf(&b, "# HELP clsolve_uptime_seconds Seconds since the daemon started.\n"
                  "# TYPE clsolve_uptime_seconds gauge\nclsolve_uptime_seconds %.3f\n",
              cls_now() - m.start);
    int nsrc = m.nsrc;
    pthread_mutex_unlock(&m.mu);
    for (int i = 0; i < nsrc; i++) {
        char *t = m.src[i].fn(m.src[i].ctx);
        if (t)
            sb_printf(&b, "%s", t);
        free(t);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
