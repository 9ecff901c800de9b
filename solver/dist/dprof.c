/*
 * dprof.c: the iteration profile (design in dprof.h). Each part keeps the
 * events of the commands enqueued since its last resolve; a resolve reads
 * their START/END stamps, adds each to its step, and counts the gap since
 * the previous command's end as idle device time. The hooks are installed
 * at the first iteration, so the start-up never creates an event.
 */
#include "dprof.h"

#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"

typedef struct dprof_ev {
    cl_event ev;
    int step;
} dprof_ev;

typedef struct dprof_part {
    la_ctx *la;
    dprof_ev *ev;
    int nev, cap;
    int lost; /* an event that did not fit (out of memory): the part's figures are partial */
    cl_ulong first_start, last_end;
    int seen;
    dprof_part_sum sum;
} dprof_part;

struct dprof {
    int nparts, on, hold;
    double t0;
    double wait_s[DPROF_NWAITS];
    dprof_part part[];
};

static const char *const step_names[DPROF_NSTEPS] = {"pack",       "halo_read",     "interior_spmv",
                                                     "halo_write", "boundary_spmv", "sums",
                                                     "update",     "precond",       "other"};
static const char *const wait_names[DPROF_NWAITS] = {"ghost_buffers", "halo_packed", "halo_mpi",
                                                     "sums", "allreduce"};

const char *dprof_step_name(dprof_step s)
{
    return s >= 0 && s < DPROF_NSTEPS ? step_names[s] : "?";
}

const char *dprof_wait_name(dprof_wait w)
{
    return w >= 0 && w < DPROF_NWAITS ? wait_names[w] : "?";
}

/* la_ctx.prof: keeps the event (its reference is ours) */
/* events a part holds before the sink resolves the older half itself: a
 * loop that never waits where dprof_resolve is called (the one-part fused
 * loop) stays bounded too */
#define DPROF_HOLD 4096

static void dprof_resolve_first(dprof_part *p, int count);

static void dprof_sink(void *ctx, int step, cl_event ev)
{
    dprof_part *p = ctx;
    if (p->nev >= DPROF_HOLD) { /* the older half is done once its last one is */
        const int half = p->nev / 2;
        if (clWaitForEvents(1, &p->ev[half - 1].ev) == CL_SUCCESS)
            dprof_resolve_first(p, half);
    }
    if (p->nev == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        dprof_ev *n = realloc(p->ev, (size_t)cap * sizeof *n);
        if (!n) {
            clReleaseEvent(ev);
            p->lost = 1;
            return;
        }
        p->ev = n;
        p->cap = cap;
    }
    p->ev[p->nev].ev = ev;
    p->ev[p->nev].step = step;
    p->nev++;
}

dprof *dprof_open(la_ctx *const *la, int nparts)
{
    dprof *d = calloc(1, sizeof *d + (size_t)(nparts > 0 ? nparts : 0) * sizeof(dprof_part));
    if (!d)
        return NULL;
    d->nparts = nparts;
    for (int k = 0; k < nparts; k++)
        d->part[k].la = la[k];
    return d;
}

void dprof_step_set(dprof *d, int k, dprof_step s)
{
    if (!d || d->hold)
        return;
    for (int q = 0; q < d->nparts; q++)
        if (k < 0 || q == k)
            d->part[q].la->prof_step = (int)s;
}

void dprof_hold(dprof *d, dprof_step s)
{
    if (!d)
        return;
    dprof_step_set(d, -1, s);
    d->hold = 1;
}

void dprof_release(dprof *d)
{
    if (!d)
        return;
    d->hold = 0;
    dprof_step_set(d, -1, DPROF_OTHER);
}

void dprof_iteration(dprof *d)
{
    if (!d || d->on)
        return;
    d->on = 1;
    d->t0 = cls_now();
    for (int k = 0; k < d->nparts; k++) {
        d->part[k].la->prof = dprof_sink;
        d->part[k].la->prof_ctx = &d->part[k];
        d->part[k].la->prof_step = DPROF_OTHER;
    }
}

void dprof_wait_add(dprof *d, dprof_wait w, double t)
{
    if (d && d->on && w >= 0 && w < DPROF_NWAITS)
        d->wait_s[w] += t;
}

/* resolves part p's first count events (complete: the caller knows) */
static void dprof_resolve_first(dprof_part *p, int count)
{
    for (int i = 0; i < count; i++) {
        cl_ulong t0 = 0, t1 = 0;
        cl_event ev = p->ev[i].ev;
        if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) ==
                CL_SUCCESS &&
            clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) ==
                CL_SUCCESS &&
            t1 >= t0) {
            cl_command_queue q = NULL;
            clGetEventInfo(ev, CL_EVENT_COMMAND_QUEUE, sizeof q, &q, NULL);
            p->sum.step_s[p->ev[i].step] += (double)(t1 - t0) * 1e-9;
            p->sum.commands++;
            if (q && q != p->la->ocl->queue) { /* the halo's copy queue: beside the chain */
                p->sum.copy_s += (double)(t1 - t0) * 1e-9;
            } else if (!p->seen) {
                p->first_start = t0;
                p->seen = 1;
            } else if (t0 > p->last_end) { /* in-order queue: the device waited */
                p->sum.idle_s += (double)(t0 - p->last_end) * 1e-9;
                p->sum.idle_before_s[p->ev[i].step] += (double)(t0 - p->last_end) * 1e-9;
            }
            if ((!q || q == p->la->ocl->queue) && t1 > p->last_end)
                p->last_end = t1;
        } else {
            p->lost = 1;
        }
        clReleaseEvent(ev);
    }
    if (count > 0 && p->nev > count) /* (no events yet: p->ev may be NULL) */
        memmove(p->ev, p->ev + count, (size_t)(p->nev - count) * sizeof *p->ev);
    p->nev -= count;
}

void dprof_resolve(dprof *d, int k)
{
    if (!d || k < 0 || k >= d->nparts)
        return;
    dprof_part *p = &d->part[k];
    /* the leading events that have completed: a loop may have enqueued
     * more behind the ones it waited for (pipecg's next SpMV) */
    int done = 0;
    while (done < p->nev) {
        cl_int es = CL_QUEUED;
        if (clGetEventInfo(p->ev[done].ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof es, &es,
                           NULL) != CL_SUCCESS ||
            es > CL_COMPLETE)
            break;
        done++;
    }
    dprof_resolve_first(p, done);
}

void dprof_close(dprof *d, int64_t iterations, dprof_rank_sum *out)
{
    memset(out, 0, sizeof *out);
    if (!d)
        return;
    double t1 = cls_now();
    for (int k = 0; k < d->nparts; k++) {
        dprof_part *p = &d->part[k];
        if (d->on)
            clFinish(p->la->ocl->queue);
        dprof_resolve(d, k);
        p->la->prof = NULL;
        p->la->prof_ctx = NULL;
        p->la->prof_step = 0;
        free(p->ev);
        if (p->seen)
            p->sum.span_s = (double)(p->last_end - p->first_start) * 1e-9;
        if (k < DPROF_MAX_PARTS)
            out->part[k] = p->sum;
        if (p->lost) /* marked, not hidden: a negative count */
            out->part[k < DPROF_MAX_PARTS ? k : 0].commands = -1;
    }
    out->nparts = d->nparts < DPROF_MAX_PARTS ? d->nparts : DPROF_MAX_PARTS;
    out->iterations = iterations;
    out->wall_s = d->on ? t1 - d->t0 : 0.0;
    memcpy(out->wait_s, d->wait_s, sizeof out->wait_s);
    free(d);
}

void dprof_report_free(dprof_report *r)
{
    if (!r)
        return;
    free(r->rank);
    r->rank = NULL;
    r->nranks = 0;
}
