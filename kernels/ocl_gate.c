/*
 * ocl_gate.c: one kernel in flight at a time per process on PoCL before
 * 6.0 (why: ocl_gate.h). The gate is a mutex and the list of gated queues,
 * each with the number of contexts on it (the shared contexts of one device
 * share one queue there: ocl.c). With one queue open a launch only takes
 * the mutex (the in-order queue keeps its kernels apart); with two or more,
 * a launch holds the mutex until its kernel has finished, so no two kernels
 * of the process overlap.
 */
#include "ocl_gate.h"

#include "../common/trace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define OCL_GATE_MAX 256

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static cl_command_queue gate_q[OCL_GATE_MAX];
static int gate_users[OCL_GATE_MAX]; /* contexts on gate_q[i] (a shared queue has several) */
static int gate_n;                   /* distinct queues */

int ocl_gate_wanted(const ocl_device *dev)
{
    const char *off = getenv("CLSOLVE_OCL_GATE");
    if (off && !strcmp(off, "0"))
        return 0;
    if (!strstr(dev->platform_name, "Portable Computing Language"))
        return 0;
    /* CL_DRIVER_VERSION: "3.1+debian", "5.0+debian", "6.0" */
    return atoi(dev->driver) < 6;
}

void ocl_gate_join(ocl_ctx *ctx)
{
    if (!ctx->queue || !ocl_gate_wanted(&ctx->dev))
        return;
    pthread_mutex_lock(&gate_mu);
    int i;
    for (i = 0; i < gate_n && gate_q[i] != ctx->queue; i++)
        ;
    if (i < gate_n) { /* a shared queue (ocl_ctx_create_shared): in order already */
        gate_users[i]++;
        ctx->gated = 1;
    } else if (gate_n < OCL_GATE_MAX) {
        /* kernels launched while one queue was alone may still run */
        for (int j = 0; j < gate_n; j++)
            clFinish(gate_q[j]);
        gate_q[gate_n] = ctx->queue;
        gate_users[gate_n++] = 1;
        ctx->gated = 1;
        if (gate_n == 2)
            cls_trace("ocl_gate: a second PoCL queue: one kernel at a time from now");
    }
    pthread_mutex_unlock(&gate_mu);
}

void ocl_gate_leave(ocl_ctx *ctx)
{
    if (!ctx->gated)
        return;
    pthread_mutex_lock(&gate_mu);
    for (int i = 0; i < gate_n; i++)
        if (gate_q[i] == ctx->queue) {
            if (--gate_users[i] == 0) {
                gate_n--;
                gate_q[i] = gate_q[gate_n];
                gate_users[i] = gate_users[gate_n];
            }
            break;
        }
    ctx->gated = 0;
    pthread_mutex_unlock(&gate_mu);
}

static atomic_llong gate_launches; /* every launch, gated or not (ocl_cache_stats) */

long long ocl_gate_launches(void)
{
    return atomic_load(&gate_launches);
}

cl_int ocl_enqueue_kernel(const ocl_ctx *ctx, cl_kernel k, size_t global, const size_t *local,
                          cl_event *ev)
{
    atomic_fetch_add(&gate_launches, 1);
    if (!ctx->gated)
        return clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &global, local, 0, NULL, ev);
    pthread_mutex_lock(&gate_mu);
    cl_int st = clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &global, local, 0, NULL, ev);
    if (st == CL_SUCCESS && gate_n > 1)
        st = clFinish(ctx->queue);
    pthread_mutex_unlock(&gate_mu);
    return st;
}
