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

#include <dirent.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../common/timer.h"
#include "../common/version.h"

#define METRICS_MAX_DEVICES 256
#define METRICS_MAX_SERIES 256
#define METRICS_MAX_HIST 32

/* Histogram buckets (seconds): 1 ms to 1 h, about three per decade. */
static const double hist_le[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,  1,
                                 2.5,   5,      10,    25,   50,    100,  250, 500,  1000, 3600};
#define HIST_N (sizeof hist_le / sizeof hist_le[0])

typedef struct hist {
    char name[48]; /* the label value: a route or a phase */
    uint64_t bucket[HIST_N];
    uint64_t count;
    double sum;
} hist;

static struct {
    pthread_mutex_t mu;
    int ranks;
    double start;
    uint64_t bytes, submitted, rejected;
    uint64_t batches, batched; /* launches for many jobs, and their jobs */
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
    double start_wall; /* Unix time of metrics_init */
    struct {
        char route[40], method[8];
        unsigned code;
        uint64_t n;
    } req[METRICS_MAX_SERIES];
    int nreq;
    hist req_time[METRICS_MAX_HIST], phase[METRICS_MAX_HIST], queue_wait;
    int nreq_time, nphase;
    struct {
        metrics_source_fn fn;
        void *ctx;
    } src[8];
    int nsrc;
} m = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void hist_add(hist *h, double v)
{
    for (size_t i = 0; i < HIST_N; i++)
        if (v <= hist_le[i])
            h->bucket[i]++;
    h->count++;
    h->sum += v;
}

/* The histogram labelled name in table (created if there is room). */
static hist *hist_find(hist *table, int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(table[i].name, name))
            return &table[i];
    if (*n >= METRICS_MAX_HIST)
        return NULL;
    hist *h = &table[(*n)++];
    memset(h, 0, sizeof *h);
    snprintf(h->name, sizeof h->name, "%s", name);
    return h;
}

/* The method as a label: one of the methods HTTP defines, else "other".
 * A client chooses the method's bytes: taken as given, 300 made-up methods
 * filled the series table (legitimate series never appeared again) and a
 * quote in one broke the whole scrape (issue 27, item 5). */
static const char *metrics_method_label(const char *method)
{
    static const char *const known[] = {"GET",     "HEAD",  "POST",  "PUT",     "DELETE",
                                        "OPTIONS", "PATCH", "TRACE", "CONNECT", NULL};
    for (int i = 0; method && known[i]; i++)
        if (!strcmp(method, known[i]))
            return known[i];
    return "other";
}

void metrics_http_request(const char *route, const char *method, unsigned status, double seconds)
{
    method = metrics_method_label(method);
    if (status < 100 || status > 599) /* the code is a label too: three digits */
        status = 0;
    pthread_mutex_lock(&m.mu);
    int i;
    for (i = 0; i < m.nreq; i++)
        if (m.req[i].code == status && !strcmp(m.req[i].route, route) &&
            !strcmp(m.req[i].method, method))
            break;
    if (i == m.nreq && m.nreq < METRICS_MAX_SERIES) {
        snprintf(m.req[i].route, sizeof m.req[i].route, "%s", route);
        snprintf(m.req[i].method, sizeof m.req[i].method, "%s", method);
        m.req[i].code = status;
        m.req[i].n = 0;
        m.nreq++;
    }
    if (i < m.nreq)
        m.req[i].n++;
    hist *h = hist_find(m.req_time, &m.nreq_time, route);
    if (h)
        hist_add(h, seconds);
    pthread_mutex_unlock(&m.mu);
}

void metrics_queue_wait(double seconds)
{
    pthread_mutex_lock(&m.mu);
    hist_add(&m.queue_wait, seconds > 0 ? seconds : 0);
    pthread_mutex_unlock(&m.mu);
}

void metrics_job_phase(const char *phase, double seconds)
{
    pthread_mutex_lock(&m.mu);
    hist *h = hist_find(m.phase, &m.nphase, phase);
    if (h)
        hist_add(h, seconds > 0 ? seconds : 0);
    pthread_mutex_unlock(&m.mu);
}

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
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m.start_wall = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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

void metrics_batch(int jobs)
{
    pthread_mutex_lock(&m.mu);
    m.batches++;
    m.batched += (uint64_t)(jobs > 0 ? jobs : 0);
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

/* A histogram family: one series per label value (label NULL: one series
 * without labels). Called with m.mu held. */
static void render_hist_family(sbuf *b, const char *name, const char *help, const char *label,
                               const hist *hs, int n)
{
    sb_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int k = 0; k < n; k++) {
        const hist *h = &hs[k];
        char lab[128] = "", labc[140] = "";
        if (label) {
            char v[100];
            escape_label(h->name, v, sizeof v);
            snprintf(lab, sizeof lab, "%s=\"%s\"", label, v);
            snprintf(labc, sizeof labc, "%s,", lab);
        }
        for (size_t i = 0; i < HIST_N; i++)
            sb_printf(b, "%s_bucket{%sle=\"%g\"} %llu\n", name, labc, hist_le[i],
                      (unsigned long long)h->bucket[i]);
        sb_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labc, (unsigned long long)h->count);
        sb_printf(b, "%s_sum%s%s%s %.6f\n", name, label ? "{" : "", lab, label ? "}" : "", h->sum);
        sb_printf(b, "%s_count%s%s%s %llu\n", name, label ? "{" : "", lab, label ? "}" : "",
                  (unsigned long long)h->count);
    }
}

/* Requests per route, method and code, and their latency. m.mu held. */
static void render_requests(sbuf *b)
{
    sb_printf(b, "# HELP clsolve_http_requests_total HTTP requests by route, method and status "
                 "code.\n# TYPE clsolve_http_requests_total counter\n");
    for (int i = 0; i < m.nreq; i++) {
        char route[100]; /* route templates from the table, escaped all the same */
        escape_label(m.req[i].route, route, sizeof route);
        sb_printf(b, "clsolve_http_requests_total{route=\"%s\",method=\"%s\",code=\"%u\"} %llu\n",
                  route, m.req[i].method, m.req[i].code, (unsigned long long)m.req[i].n);
    }
    render_hist_family(b, "clsolve_http_request_duration_seconds",
                       "Seconds from a request's first byte to its answer, by route.", "route",
                       m.req_time, m.nreq_time);
}

/* process_* as the Prometheus client libraries name them, from /proc/self. */
static void render_process(sbuf *b)
{
    double utime = 0, stime = 0, vsize = 0, rss = 0;
    long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    FILE *f = fopen("/proc/self/stat", "r");
    if (f) {
        char buf[1024];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
        /* the fields after the command name in parentheses: 14 utime, 15
         * stime, 23 vsize, 24 rss (pages) */
        const char *p = strrchr(buf, ')');
        unsigned long long ut = 0, st = 0, vs = 0;
        long long rs = 0;
        if (p && sscanf(p + 2,
                        "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
                        "%*d %*d %*u %llu %lld",
                        &ut, &st, &vs, &rs) == 4) {
            utime = tck > 0 ? (double)ut / (double)tck : 0;
            stime = tck > 0 ? (double)st / (double)tck : 0;
            vsize = (double)vs;
            rss = (double)rs * (double)(page > 0 ? page : 4096);
        }
    }
    int fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            fds += e->d_name[0] != '.';
        closedir(d);
        fds--; /* the directory stream's own descriptor */
    }
    struct rlimit rl;
    double maxfds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                        ? (double)rl.rlim_cur
                        : -1;
    pthread_mutex_lock(&m.mu);
    double start = m.start_wall;
    pthread_mutex_unlock(&m.mu);
    sb_printf(b,
              "# HELP process_start_time_seconds Start time of the process since the Unix "
              "epoch in seconds.\n# TYPE process_start_time_seconds gauge\n"
              "process_start_time_seconds %.3f\n",
              start);
    sb_printf(b,
              "# HELP process_cpu_seconds_total Total user and system CPU time spent in "
              "seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total "
              "%.2f\n",
              utime + stime);
    sb_printf(b,
              "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
              "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %.0f\n",
              rss);
    sb_printf(b,
              "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
              "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %.0f\n",
              vsize);
    sb_printf(b,
              "# HELP process_open_fds Number of open file descriptors.\n"
              "# TYPE process_open_fds gauge\nprocess_open_fds %d\n",
              fds);
    if (maxfds > 0)
        sb_printf(b,
                  "# HELP process_max_fds Maximum number of open file descriptors.\n"
                  "# TYPE process_max_fds gauge\nprocess_max_fds %.0f\n",
                  maxfds);
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
    sb_printf(&b,
              "# HELP clsolve_jobs_submitted_total Jobs accepted (202) since start.\n"
              "# TYPE clsolve_jobs_submitted_total counter\nclsolve_jobs_submitted_total %llu\n",
              (unsigned long long)m.submitted);
    sb_printf(
        &b,
        "# HELP clsolve_uploads_rejected_total Uploads answered with an error.\n"
        "# TYPE clsolve_uploads_rejected_total counter\nclsolve_uploads_rejected_total %llu\n",
        (unsigned long long)m.rejected);
    sb_printf(&b,
              "# HELP clsolve_batches_total Launches that solved several queued small jobs "
              "together (--batch).\n"
              "# TYPE clsolve_batches_total counter\nclsolve_batches_total %llu\n"
              "# HELP clsolve_batched_jobs_total Jobs gathered into those launches.\n"
              "# TYPE clsolve_batched_jobs_total counter\nclsolve_batched_jobs_total %llu\n",
              (unsigned long long)m.batches, (unsigned long long)m.batched);
    sb_printf(&b, "# HELP clsolve_jobs_finished_total Jobs finished since start, by final state.\n"
                  "# TYPE clsolve_jobs_finished_total counter\n");
    for (int s = JOB_SUCCEEDED; s < JOB_NSTATES; s++)
        sb_printf(&b, "clsolve_jobs_finished_total{state=\"%s\"} %llu\n",
                  job_status_name((job_status)s), (unsigned long long)m.finished[s]);
    sb_printf(&b,
              "# HELP clsolve_solve_seconds_total Seconds spent in solver iterations.\n"
              "# TYPE clsolve_solve_seconds_total counter\nclsolve_solve_seconds_total %.6f\n",
              m.solve_s);
    sb_printf(&b,
              "# HELP clsolve_iterations_total Krylov iterations run.\n"
              "# TYPE clsolve_iterations_total counter\nclsolve_iterations_total %llu\n",
              (unsigned long long)m.iterations);
    sb_printf(&b,
              "# HELP clsolve_bytes_received_total Upload bytes received.\n"
              "# TYPE clsolve_bytes_received_total counter\nclsolve_bytes_received_total %llu\n",
              (unsigned long long)m.bytes);
    sb_printf(&b, "# HELP clsolve_device_busy_seconds_total Seconds each device spent on jobs.\n"
                  "# TYPE clsolve_device_busy_seconds_total counter\n");
    for (int i = 0; i < m.ndev; i++) {
        char name[300];
        escape_label(m.dev[i].name, name, sizeof name);
        sb_printf(&b,
                  "clsolve_device_busy_seconds_total{rank=\"%d\",device=\"%d\",name=\"%s\"} %.6f\n",
                  m.dev[i].rank, m.dev[i].index, name, m.dev[i].busy);
    }
    static const char *const cls[] = {"other", "1xx", "2xx", "3xx", "4xx", "5xx"};
    sb_printf(&b, "# HELP clsolve_http_responses_total HTTP responses by status class.\n"
                  "# TYPE clsolve_http_responses_total counter\n");
    for (int c = 1; c <= 5; c++)
        sb_printf(&b, "clsolve_http_responses_total{code=\"%s\"} %llu\n", cls[c],
                  (unsigned long long)m.http[c]);
    sb_printf(&b,
              "# HELP clsolve_ranks MPI ranks of the daemon.\n# TYPE clsolve_ranks gauge\n"
              "clsolve_ranks %d\n",
              m.ranks);
    sb_printf(&b,
              "# HELP clsolve_uptime_seconds Seconds since the daemon started.\n"
              "# TYPE clsolve_uptime_seconds gauge\nclsolve_uptime_seconds %.3f\n",
              cls_now() - m.start);
    render_requests(&b);
    render_hist_family(&b, "clsolve_job_queue_wait_seconds",
                       "Seconds jobs waited in the queue (submitted to started).", NULL,
                       &m.queue_wait, 1);
    render_hist_family(&b, "clsolve_job_phase_seconds",
                       "Seconds of each phase of a job's run (parse, partition, init, upload, "
                       "solve, gather, total).",
                       "phase", m.phase, m.nphase);
    int nsrc = m.nsrc;
    pthread_mutex_unlock(&m.mu);
    render_process(&b);
    sb_printf(
        &b,
        "# HELP clsolve_build_info The version and commit of this daemon.\n"
        "# TYPE clsolve_build_info gauge\nclsolve_build_info{version=\"%s\",commit=\"%s\"} 1\n",
        cls_version(), cls_commit());
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
