/*
 * bandwidth.c: device-to-device copy bandwidth, measured in-process so a
 * benchmark's floor is computed on the same device, driver and clocks as the
 * kernels it judges. A copy moves each byte twice (read, write), so that is
 * what is counted: the figure is comparable with STREAM copy and with
 * nvbandwidth's device-local copy.
 */
#include "bandwidth.h"

int ocl_copy_bandwidth(ocl_ctx *ctx, size_t bytes, int reps, double *gbps, cls_error *err)
{
    cl_int st;
    if (bytes > ctx->dev.max_alloc)
        bytes = (size_t)ctx->dev.max_alloc;
    if (bytes > ctx->dev.global_mem / 4)
        bytes = (size_t)(ctx->dev.global_mem / 4);
    bytes &= ~(size_t)4095;
    cl_mem a = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &st);
    OCL_CHECK(err, st, "clCreateBuffer");
    cl_mem b = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &st);
    if (st != CL_SUCCESS) {
        clReleaseMemObject(a);
        OCL_CHECK(err, st, "clCreateBuffer");
    }
    const unsigned char zero = 0;
    double best = 0.0;
    int rc = CLS_OK;
    st = clEnqueueFillBuffer(ctx->queue, a, &zero, 1, 0, bytes, 0, NULL, NULL);
    if (st == CL_SUCCESS)
        st = clEnqueueFillBuffer(ctx->queue, b, &zero, 1, 0, bytes, 0, NULL, NULL);
    for (int r = 0; st == CL_SUCCESS && r <= reps; r++) {
        cl_event ev;
        st = clEnqueueCopyBuffer(ctx->queue, a, b, 0, 0, bytes, 0, NULL, &ev);
        if (st != CL_SUCCESS)
            break;
        double s = ocl_event_seconds(ev);
        clReleaseEvent(ev);
        if (r > 0 && s > 0.0) { /* r == 0 is the warm-up */
            double g = 2.0 * (double)bytes / s / 1e9;
            if (g > best)
                best = g;
        }
    }
    if (st != CL_SUCCESS)
        rc = cls_fail(err, CLS_EOTHER, "copy bandwidth measurement failed: %s (%d)",
                      ocl_errstr(st), (int)st);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    *gbps = best;
    return rc;
}
