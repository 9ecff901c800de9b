/*
 * parallel.c: cls_parallel_for (parallel.h) on POSIX threads, started per
 * call: the loops it serves run for tens of milliseconds or more, against
 * tens of microseconds to start a thread.
 */
#include "parallel.h"

#include <string.h>
#include "sysres.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define CLS_MAX_THREADS 64

typedef struct range_job {
    cls_range_fn fn;
    void *ctx;
    int range;
    int64_t begin, end;
} range_job;

static void *range_run(void *arg)
{
    range_job *j = arg;
    j->fn(j->ctx, j->range, j->begin, j->end);
    return NULL;
}

static int threads_wanted(void)
{
    const char *v = getenv("CLS_THREADS");
    long t = v && *v ? strtol(v, NULL, 10) : cls_sysres_cpus(); /* affinity, CPU quota */
    if (t < 1)
        t = 1;
    return t > CLS_MAX_THREADS ? CLS_MAX_THREADS : (int)t;
}

int cls_parallel_ranges(int64_t n, int64_t grain)
{
    if (grain < 1)
        grain = 1;
    int64_t by_size = n / grain;
    int t = threads_wanted();
    if (by_size < t)
        t = by_size > 0 ? (int)by_size : 1;
    return t;
}

void cls_parallel_for(int64_t n, int64_t grain, cls_range_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    int t = cls_parallel_ranges(n, grain);
    if (t == 1) {
        fn(ctx, 0, 0, n);
        return;
    }
    range_job jobs[CLS_MAX_THREADS];
    pthread_t tid[CLS_MAX_THREADS];
    int started[CLS_MAX_THREADS];
    for (int i = 0; i < t; i++) {
        jobs[i] = (range_job){fn, ctx, i, n * i / t, n * (i + 1) / t};
        started[i] = i > 0 && pthread_create(&tid[i], NULL, range_run, &jobs[i]) == 0;
    }
    for (int i = 0; i < t; i++)
        if (!started[i]) /* the caller's own range, and any that found no thread */
            fn(ctx, i, jobs[i].begin, jobs[i].end);
    for (int i = 0; i < t; i++)
        if (started[i])
            pthread_join(tid[i], NULL);
}

typedef struct copy_ctx {
    unsigned char *dst;
    const unsigned char *src;
} copy_ctx;

static void copy_range(void *arg, int range, int64_t a, int64_t e)
{
    (void)range;
    const copy_ctx *c = arg;
    memcpy(c->dst + a, c->src + a, (size_t)(e - a));
}

void cls_parallel_memcpy(void *dst, const void *src, size_t bytes)
{
    copy_ctx c = {dst, src};
    cls_parallel_for((int64_t)bytes, (int64_t)2 << 20, copy_range, &c);
}
