/*
 * parallel.c: cls_parallel_for (parallel.h) on a pool of threads started
 * once per process (a cls_team, team.h) and taken by one call at a time;
 * a call that finds it taken (a daemon's lanes at once, a loop inside a
 * loop) or that runs in a forked child starts threads of its own, as
 * every call did before the pool.
 *
 * Why a pool: a call is often short. The staged uploads and downloads
 * copy 32 MiB pieces (la_vec.c), 0.3-0.5 ms of memcpy on 16 cores, and
 * starting and joining 15 threads per piece took longer than the copy on
 * a 16-core GPU host: poisson3d 256's 936 MB of values went up in 26-65
 * ms for 28 pieces; on the pool, 21-37 ms (docs/benchmarks.md, issue 23,
 * 2026-12-02). Idle members spin briefly and then sleep (team.c), so the
 * pool costs nothing between solves.
 *
 * The reader's passes and the CSR assembly's phases keep threads of their
 * own (mm_scan.c, csr_assemble.c): their calls last 40-180 ms, so a
 * thread's start is noise there, and on the pool the read of poisson3d 256
 * came out 0.01-0.02 s slower (members spinning through the serial steps
 * between its phases, beside the driver's start).
 *
 * CLS_POOL=0 starts threads per call always (for measuring the pool).
 */
#include "parallel.h"

#include <string.h>
#include "sysres.h"
#include "team.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/types.h>
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

/* ------------------------------------------------------------------ pool */

static cls_team *pool;
static pid_t pool_pid;
static int pool_tried;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct pool_call_ranges {
    cls_range_fn fn;
    void *ctx;
    int t;
    int64_t n;
} pool_call_ranges;

/* member id of nm: ranges id, id + nm, ... (one each when the pool has a
 * member per range: the ranges are cls_parallel_for's, whoever runs them) */
static void pool_member(void *arg, int id, int nm)
{
    const pool_call_ranges *c = arg;
    for (int i = id; i < c->t; i += nm)
        c->fn(c->ctx, i, c->n * i / c->t, c->n * (i + 1) / c->t);
}

/* the call's ranges on the pool: 1 if they ran so; 0 (the pool held by
 * another call, or none in this process) and the caller starts threads of
 * its own */
static int pool_run(int64_t n, int t, cls_range_fn fn, void *ctx)
{
    if (pthread_mutex_trylock(&pool_mu) != 0)
        return 0;
    if (!pool_tried) {
        pool_tried = 1;
        const char *v = getenv("CLS_POOL");
        if (!(v && !strcmp(v, "0"))) {
            pool = cls_team_create(threads_wanted());
            pool_pid = getpid();
        }
    }
    int ran = 0;
    if (pool && pool_pid == getpid() && cls_team_size(pool) > 1) {
        pool_call_ranges c = {fn, ctx, t, n};
        cls_team_run(pool, pool_member, &c);
        ran = 1;
    }
    pthread_mutex_unlock(&pool_mu);
    return ran;
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
    if (pool_run(n, t, fn, ctx))
        return;
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
