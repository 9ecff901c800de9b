/*
 * team.c: the persistent thread team of team.h.
 *
 * A call is published by bumping a generation counter that idle members
 * watch; the caller runs member 0 itself and then waits for a count of the
 * others' returns. The barrier is a counter and a sense (a generation)
 * flipped by the last member to arrive. Every wait spins on a relaxed load
 * with a pause for a while and then yields the CPU: on the 2-core CI
 * machine another test is often running, and a member spinning on a core
 * another process needs would slow both. Idle members sleep on a condition
 * variable once a wait has lasted ~0.1-1 ms (a CG iteration's host work
 * between two calls is microseconds), so a warm team costs nothing between
 * solves.
 */
#define _GNU_SOURCE
#include "team.h"
#include "sysres.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#define TEAM_MAX 64
#define TEAM_SPIN 2000   /* pause-spins before a wait yields */
#define TEAM_SLEEP 2500 /* polls before an idle member sleeps (~0.1-1 ms): a
                         * member that yields for long starves the others
                         * under valgrind, whose threads share one lock */

struct cls_team {
    int n;
    pthread_t tid[TEAM_MAX];
    _Atomic unsigned gen;  /* calls published */
    _Atomic int done;      /* members (besides 0) finished with this call */
    _Atomic int bar_count; /* members at the barrier */
    _Atomic unsigned bar_gen;
    int quit;
    cls_team_fn fn;
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

typedef struct member {
    cls_team *t;
    int id;
} member;

static void team_pause(unsigned i)
{
    if (i < TEAM_SPIN) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else
        sched_yield();
}

int cls_team_threads(void)
{
    const char *v = getenv("CLSOLVE_CPU_THREADS");
    long n = v && *v ? strtol(v, NULL, 10) : cls_sysres_cpus();
    if (n < 1)
        n = 1;
    return n > TEAM_MAX ? TEAM_MAX : (int)n;
}

static void *team_main(void *arg)
{
    member *m = arg;
    cls_team *t = m->t;
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        for (unsigned i = 0; (g = atomic_load_explicit(&t->gen, memory_order_acquire)) == seen;
             i++) {
            if (i < TEAM_SLEEP) {
                team_pause(i);
                continue;
            }
            pthread_mutex_lock(&t->mu);
            while ((g = atomic_load_explicit(&t->gen, memory_order_acquire)) == seen)
                pthread_cond_wait(&t->cv, &t->mu);
            pthread_mutex_unlock(&t->mu);
            break;
        }
        seen = g;
        if (t->quit)
            break;
        t->fn(t->ctx, m->id, t->n);
        atomic_fetch_add_explicit(&t->done, 1, memory_order_acq_rel);
    }
    free(m);
    return NULL;
}

cls_team *cls_team_create(int n)
{
    if (n < 1)
        n = 1;
    if (n > TEAM_MAX)
        n = TEAM_MAX;
    cls_team *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->n = 1;
    for (int i = 1; i < n; i++) {
        member *m = malloc(sizeof *m);
        if (!m)
            break;
        m->t = t;
        m->id = i;
        if (pthread_create(&t->tid[i], NULL, team_main, m) != 0) {
            free(m);
            break;
        }
        t->n = i + 1;
    }
    return t;
}

int cls_team_size(const cls_team *t)
{
    return t->n;
}

void cls_team_run(cls_team *t, cls_team_fn fn, void *ctx)
{
    if (t->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    t->fn = fn;
    t->ctx = ctx;
    atomic_store_explicit(&t->done, 0, memory_order_relaxed);
    pthread_mutex_lock(&t->mu); /* a member may be between its last poll and its wait */
    atomic_fetch_add_explicit(&t->gen, 1, memory_order_acq_rel);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    fn(ctx, 0, t->n);
    for (unsigned i = 0; atomic_load_explicit(&t->done, memory_order_acquire) < t->n - 1; i++)
        team_pause(i);
}

void cls_team_barrier(cls_team *t)
{
    if (t->n == 1)
        return;
    unsigned g = atomic_load_explicit(&t->bar_gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&t->bar_count, 1, memory_order_acq_rel) == t->n - 1) {
        atomic_store_explicit(&t->bar_count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->bar_gen, 1, memory_order_acq_rel);
        return;
    }
    for (unsigned i = 0; atomic_load_explicit(&t->bar_gen, memory_order_acquire) == g; i++)
        team_pause(i);
}

void cls_team_destroy(cls_team *t)
{
    if (!t)
        return;
    if (t->n > 1) {
        t->quit = 1;
        pthread_mutex_lock(&t->mu);
        atomic_fetch_add_explicit(&t->gen, 1, memory_order_acq_rel);
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        for (int i = 1; i < t->n; i++)
            pthread_join(t->tid[i], NULL);
    }
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}
