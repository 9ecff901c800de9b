/*
 * dprof.h: the iteration profile of a distributed solve (`clsolve solve
 * --profile`): where each microsecond of an iteration goes, per rank and
 * per part, measured rather than estimated.
 *
 * Two clocks, because an iteration runs on two machines at once:
 *   - the device's: every command a part's queue runs in an iteration (halo
 *     pack, its read to the host, interior SpMV, the ghosts' write, boundary
 *     SpMV, the sums' fold and read, the scalars' write, the updates) hands
 *     its OpenCL event to the profile (la_ctx.prof), tagged with its step.
 *     From the events' START and END: each step's device time, and the
 *     device's idle time, the gaps between one command's end and the next
 *     one's start on the part's in-order queue (the device waiting for the
 *     host: a halo in flight, a reduction, a launch not yet made). The
 *     halo's copies on a GPU run on a queue of their own (ld_halo_mark),
 *     beside the kernels: their time is in their steps and in copy_s, not
 *     in the main queue's busy time and gaps;
 *   - the host's: cls_now around each place the rank blocks (the ghost
 *     buffers free, the packed halo read back, the MPI halo exchange, the
 *     parts' sums, the all-reduce); the rest of the wall time is the host
 *     enqueueing and deciding.
 * Each is summed over the measured iterations (from the first iteration's
 * start to the end of the loop, the queues drained) and reported per
 * iteration. Profiling costs an event per command and nothing else; a run
 * without --profile creates no event (la_ctx.prof is NULL).
 *
 * Events are resolved each time the rank has waited for a part's sums
 * (every command before them on that in-order queue has completed), so the
 * profile holds one iteration's events at a time; a loop that waits
 * elsewhere (one part's fused loop) has its older events resolved by the
 * sink once a part holds 4096. Several right-hand sides are not profiled
 * (the report says so): the window would mix the columns.
 */
#ifndef CLSOLVE_DPROF_H
#define CLSOLVE_DPROF_H

#include <stdint.h>

#include "../../kernels/la.h"

/* the device steps of an iteration (the tag of each command) */
typedef enum dprof_step {
    DPROF_PACK,       /* halo_pack: the ghosts others need, gathered on the device */
    DPROF_HALO_READ,  /* the packed halo read to pinned host memory */
    DPROF_INTERIOR,   /* SpMV on the rows that need no ghost */
    DPROF_HALO_WRITE, /* the ghosts received, written to the device */
    DPROF_BOUNDARY,   /* SpMV on the rows that do */
    DPROF_SUMS,       /* the sums folded and read back (the reduction's device side) */
    DPROF_UPDATE,     /* the vector updates and their scalars */
    DPROF_PRECOND,    /* a preconditioner's application (its own SpMVs and halos too) */
    DPROF_OTHER,      /* anything else in the loop */
    DPROF_NSTEPS
} dprof_step;

/* where the host blocks (host clock) */
typedef enum dprof_wait {
    DPROF_W_GHOST,     /* the last iteration's ghost write done (buffers free) */
    DPROF_W_PACK,      /* the packed halo on the host */
    DPROF_W_HALO,      /* MPI: receives posted, sends, local copies, waits */
    DPROF_W_SUMS,      /* the parts' sums on the host */
    DPROF_W_ALLREDUCE, /* MPI_Allreduce of the sums */
    DPROF_NWAITS
} dprof_wait;

const char *dprof_step_name(dprof_step s);
const char *dprof_wait_name(dprof_wait w);

#define DPROF_MAX_PARTS 16 /* parts of one rank a report carries */

typedef struct dprof_part_sum {
    double step_s[DPROF_NSTEPS];        /* device seconds per step */
    double idle_s;                      /* gaps between the main queue's commands */
    double copy_s;                      /* commands on the halo's copy queue (in step_s too) */
    double idle_before_s[DPROF_NSTEPS]; /* idle_s by the step of the command that waited */
    double span_s;                      /* first command's start to last one's end */
    int64_t commands;
} dprof_part_sum;

/* one rank's profile, summed over the measured iterations */
typedef struct dprof_rank_sum {
    int rank, nparts;
    int64_t iterations;
    double wall_s;               /* host: the loop's wall time */
    double wait_s[DPROF_NWAITS]; /* host: blocked there */
    dprof_part_sum part[DPROF_MAX_PARTS];
} dprof_rank_sum;

/* the whole profile (rank 0, in dsolve_report): one entry per rank */
typedef struct dprof_report {
    int nranks;
    dprof_rank_sum *rank;
    char note[160]; /* why there is no profile (nranks 0), else empty */
} dprof_report;
void dprof_report_free(dprof_report *r);

typedef struct dprof dprof;

/* Starts profiling this rank's nparts parts (their la contexts): every
 * command is tagged DPROF_OTHER until dprof_step_set names another step.
 * NULL when out of memory (the solve runs unprofiled). */
dprof *dprof_open(la_ctx *const *la, int nparts);
/* the step of the commands enqueued next on part k (every part when k < 0) */
void dprof_step_set(dprof *d, int k, dprof_step s);
/* every command until dprof_release is step s, whatever dprof_step_set
 * says meanwhile (a preconditioner's application, which exchanges halos
 * and runs SpMVs of its own) */
void dprof_hold(dprof *d, dprof_step s);
void dprof_release(dprof *d);
/* the top of an iteration: the first call starts the measured window (the
 * commands before it, the start-up, are dropped) */
void dprof_iteration(dprof *d);
/* a host wait of t seconds */
void dprof_wait_add(dprof *d, dprof_wait w, double t);
/* part k's queue has completed the commands the caller waited for: resolve
 * those of its recorded events that have completed, in order */
void dprof_resolve(dprof *d, int k);
/* the end of the loop: drains the queues, resolves, stops the hooks and
 * sums this rank's profile for iterations updates */
void dprof_close(dprof *d, int64_t iterations, dprof_rank_sum *out);

#endif
