/*
 * team.h: a persistent team of threads for loops that run thousands of
 * times a second (the native CPU CG's iterations, kernels/cpu/): the
 * threads are started once and wait between calls, so a call costs a wake
 * and a join (microseconds), not thread creation (parallel.h's per-call
 * threads, right for set-up loops of tens of milliseconds).
 *
 * cls_team_run(t, fn, ctx) calls fn(ctx, id, n) on every member at once
 * (id 0 is the caller) and returns when all have returned; inside fn,
 * cls_team_barrier(t) waits for every member. Waits spin briefly and then
 * yield, so a team on a loaded or oversubscribed machine gives its cores
 * away instead of burning them; members idle between calls sleep on a
 * condition variable after a short spin.
 *
 * The size is cls_team_threads(): CLSOLVE_CPU_THREADS when set, else the
 * CPUs this process may run on (the affinity mask and the CPU quota,
 * sysres.h), so that under mpirun with one core bound per rank each rank
 * runs one thread and ranks do not oversubscribe the node.
 */
#ifndef CLS_COMMON_TEAM_H
#define CLS_COMMON_TEAM_H

typedef struct cls_team cls_team;
typedef void (*cls_team_fn)(void *ctx, int id, int n);

/* CLSOLVE_CPU_THREADS, else the CPUs this process may use (1..64) */
int cls_team_threads(void);
/* A team of n members (the caller and n - 1 threads); NULL if out of
 * memory. Threads that cannot be started shrink the team (never an error
 * unless none is left but the caller, which is a team of one). */
cls_team *cls_team_create(int n);
int cls_team_size(const cls_team *t);
void cls_team_run(cls_team *t, cls_team_fn fn, void *ctx);
void cls_team_barrier(cls_team *t);
void cls_team_destroy(cls_team *t);

#endif
