/*
 * ocl_gate.h: one kernel in flight at a time per process on PoCL before 6.0.
 *
 * PoCL's CPU drivers before 6.0 keep one process-wide cache of compiled
 * work-group functions, and the release at a kernel's end finds its entry
 * by kernel and local size only, while the lookup at its start also tells
 * entries apart by grid width (pocl commit c9ac4c0c3, "fix dlhandle cache",
 * in 6.0). When one kernel runs at two grid widths with the same local size
 * (two parts, two lanes, two sizes of system) on two queues at once, a
 * release lands on the wrong entry and PoCL aborts the process
 * ("pocl_release_dlhandle_cache: Assertion `found->ref_count > 0'"). With
 * one queue in the process nothing overlaps (an in-order queue starts a
 * kernel after the previous one has released its entry); with more, each
 * launch on such a device waits for its kernel before the next launch in
 * the process may start. A queue joining the gate first drains the queues
 * already there, so kernels launched while the gate was open are done.
 * The daemon's lanes share one context and, on a gated device, its one
 * queue (ocl_ctx_create_shared), so they do not pay that wait.
 * Other drivers are not gated. CLSOLVE_OCL_GATE=0 turns it off (to show
 * the abort).
 */
#ifndef CLS_KERNELS_OCL_GATE_H
#define CLS_KERNELS_OCL_GATE_H

#include "ocl.h"

/* 1 when dev is a PoCL CPU device whose driver is older than 6.0. */
int ocl_gate_wanted(const ocl_device *dev);
/* Registers ctx's queue with the gate (sets ctx->gated), or does nothing. */
void ocl_gate_join(ocl_ctx *ctx);
/* Unregisters it (after its last kernel has finished). */
void ocl_gate_leave(ocl_ctx *ctx);
/* kernels launched by this process (ocl_enqueue_kernel), for the trace */
long long ocl_gate_launches(void);
/* clEnqueueNDRangeKernel in one dimension on ctx's queue, through the gate
 * when ctx is gated and more than one queue is open. */
cl_int ocl_enqueue_kernel(const ocl_ctx *ctx, cl_kernel k, size_t global, const size_t *local,
                          cl_event *ev);

#endif
