/*
 * test_parallel.c: common/parallel's cls_parallel_for on its pool and off
 * it. Every index of [0, n) is visited exactly once, in the ranges
 * parallel.h promises (contiguous, range r = [n r / t, n (r + 1) / t)),
 * whoever runs them:
 *  - many calls in a row on the pool (the staged copies' pattern), with
 *    random n and grain, against the plain split computed here;
 *  - several threads calling at once (one holds the pool, the others start
 *    threads of their own), each checking its own visits;
 *  - a call inside a call's range (the pool is held: the inner call starts
 *    threads);
 *  - a forked child (the pool's threads are not there: threads of its own);
 *  - cls_parallel_memcpy against memcpy.
 * CLS_THREADS=4 is set so that the machine's core count (2 in CI) does not
 * make every call a single range; the test runs again with CLS_POOL=0 in a
 * child to check the per-call threads give the same visits.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "common/parallel.h"

typedef struct visit_ctx {
    _Atomic int *hits; /* per index */
    int64_t n;
    int t;              /* ranges expected */
    _Atomic int bad;    /* a range not where parallel.h says */
    _Atomic int ranges; /* calls of fn */
} visit_ctx;

static void visit(void *arg, int range, int64_t a, int64_t e)
{
    visit_ctx *c = arg;
    atomic_fetch_add(&c->ranges, 1);
    if (range < 0 || range >= c->t || a != c->n * range / c->t || e != c->n * (range + 1) / c->t)
        atomic_store(&c->bad, 1);
    for (int64_t i = a; i < e; i++)
        atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
}

/* one call of n, grain: 1 if every index was visited once in the promised ranges */
static int one_call(int64_t n, int64_t grain)
{
    visit_ctx c = {.hits = calloc((size_t)(n ? n : 1), sizeof(_Atomic int)),
                   .n = n,
                   .t = cls_parallel_ranges(n, grain)};
    if (!c.hits)
        return 0;
    cls_parallel_for(n, grain, visit, &c);
    int ok = !atomic_load(&c.bad) && (n == 0 || atomic_load(&c.ranges) == c.t);
    for (int64_t i = 0; i < n && ok; i++)
        ok = atomic_load(&c.hits[i]) == 1;
    free((void *)c.hits);
    return ok;
}

static void in_a_row(const char *label)
{
    int good = 0, calls = 300;
    for (int k = 0; k < calls; k++) {
        int64_t n = (int64_t)(check_rand() % 200000);
        int64_t grain = 1 + (int64_t)(check_rand() % 5000);
        good += one_call(n, grain);
    }
    CHECK_MSG(good == calls, "%s: %d of %d calls in a row visited every index once", label, good,
              calls);
    CHECK(cls_parallel_ranges(100000, 1000) == 4); /* CLS_THREADS=4 */
    CHECK(cls_parallel_ranges(3000, 1000) == 3);
    CHECK(cls_parallel_ranges(10, 1000) == 1);
}

static _Atomic int caller_good;
static void *caller(void *arg)
{
    (void)arg;
    int good = 0;
    for (int k = 0; k < 50; k++)
        good += one_call(50000 + (int64_t)k * 977, 1000);
    atomic_fetch_add(&caller_good, good);
    return NULL;
}

static void at_once(void)
{
    pthread_t t[6];
    atomic_store(&caller_good, 0);
    int started = 0;
    for (int i = 0; i < 6; i++)
        started += pthread_create(&t[i], NULL, caller, NULL) == 0;
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    CHECK_MSG(atomic_load(&caller_good) == started * 50, "%d callers at once: %d of %d calls right",
              started, atomic_load(&caller_good), started * 50);
}

typedef struct nest_ctx {
    _Atomic int inner_good;
} nest_ctx;

static void outer(void *arg, int range, int64_t a, int64_t e)
{
    (void)range;
    (void)a;
    (void)e;
    nest_ctx *c = arg;
    atomic_fetch_add(&c->inner_good, one_call(40000, 1000));
}

static void nested(void)
{
    nest_ctx c = {0};
    cls_parallel_for(4000, 1000, outer, &c); /* 4 ranges, each a call of its own */
    CHECK_MSG(atomic_load(&c.inner_good) == 4, "calls inside a call: %d of 4 right",
              atomic_load(&c.inner_good));
}

static void forked(void)
{
    CHECK(one_call(100000, 1000)); /* the pool exists in the parent */
    pid_t p = fork();
    if (p == 0)
        _exit(one_call(100000, 1000) && one_call(77777, 100) ? 0 : 1);
    int st = 0;
    CHECK(p > 0 && waitpid(p, &st, 0) == p);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a forked child's calls (status %d)", st);
    CHECK(one_call(100000, 1000)); /* and the parent's pool still serves */
}

static void copies(void)
{
    size_t n = ((size_t)9 << 20) + 12345;
    unsigned char *a = malloc(n), *b = malloc(n);
    if (!a || !b) {
        CHECK(!"out of memory");
        free(a);
        free(b);
        return;
    }
    for (size_t i = 0; i < n; i++)
        a[i] = (unsigned char)check_rand();
    for (int k = 0; k < 20; k++) {
        memset(b, 0, n);
        size_t off = (size_t)(check_rand() % 4096), len = n - off - (size_t)(check_rand() % 4096);
        cls_parallel_memcpy(b + off, a + off, len);
        CHECK_MSG(!memcmp(b + off, a + off, len) && (off == 0 || b[off - 1] == 0) &&
                      (off + len == n || b[off + len] == 0),
                  "cls_parallel_memcpy of %zu bytes at %zu", len, off);
    }
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    setenv("CLS_THREADS", "4", 1);
    check_seed("test_parallel");
    const char *pool = getenv("CLS_POOL");
    const char *label = pool && !strcmp(pool, "0") ? "threads per call" : "pool";
    in_a_row(label);
    at_once();
    nested();
    forked();
    copies();
    if (!(pool && !strcmp(pool, "0"))) { /* the same without the pool, in a child */
        pid_t p = fork();
        if (p == 0) {
            setenv("CLS_POOL", "0", 1);
            execv("/proc/self/exe", argv);
            _exit(127);
        }
        int st = 0;
        CHECK(p > 0 && waitpid(p, &st, 0) == p);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "CLS_POOL=0: status %d", st);
    }
    return check_done(label);
}
