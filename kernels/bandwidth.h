/*
 * bandwidth.h: the device's measured copy bandwidth, the denominator of
 * every "time over the floor" figure (DESIGN.md, Performance method).
 */
#ifndef CLS_KERNELS_BANDWIDTH_H
#define CLS_KERNELS_BANDWIDTH_H

#include "ocl.h"

/* Times clEnqueueCopyBuffer of `bytes` (clamped to what the device can
 * allocate) with profiling events, best of `reps` after a warm-up, and
 * returns the bandwidth in GB/s counting both the read and the write
 * (2 * bytes / time). */
int ocl_copy_bandwidth(ocl_ctx *ctx, size_t bytes, int reps, double *gbps, cls_error *err);

#endif
