/*
 * test_ocl_gate.c: kernels/ocl_gate.h. Four threads, each with its own
 * queue on the CPU device, launch one kernel at the same local size and at
 * grid widths that change every launch: the pattern (two parts, two lanes)
 * that makes PoCL before 6.0 abort the process when two such kernels
 * overlap (ocl_gate.h). Every launch's result is checked. Through the gate
 * the run ends with every result right. CLSOLVE_OCL_GATE=0 shows the
 * abort (PoCL 3.1 on the 2-core machine: 3 runs of 3 aborted within 0.3 s;
 * not part of the test, as an abort is a matter of timing). A second round
 * does the same through ocl_ctx_create_shared, as the daemon's lanes do:
 * on a gated device the four share one queue (and the results stay
 * right); elsewhere each has its own. The kernels
 * are large enough (up to 256 k elements) for launches of two threads to
 * overlap. Also: which drivers are gated.
 * Skips (77) without a CPU OpenCL device.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/ocl.h"
#include "kernels/ocl_gate.h"

static const char *src = "__kernel void scale(__global const float *x, __global float *y, int n,"
                         " float a) { int i = get_global_id(0); if (i < n) y[i] = a * x[i] + i; }";

#define NMAX (1 << 18)
#define LAUNCHES 300
#define THREADS 4

typedef struct worker {
    ocl_device dev;
    int id, bad, rc, shared;
    cl_command_queue q; /* the queue it launched on (compared, never used) */
    char msg[1200];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    cls_error err;
    cls_error_clear(&err);
    ocl_ctx ctx;
    if ((w->shared ? ocl_ctx_create_shared : ocl_ctx_create)(&w->dev, &ctx, &err)) {
        snprintf(w->msg, sizeof w->msg, "%s", err.msg);
        w->rc = 1;
        return NULL;
    }
    w->q = ctx.queue;
    cl_int st;
    cl_program p = clCreateProgramWithSource(ctx.context, 1, &src, NULL, &st);
    if (st == CL_SUCCESS)
        st = clBuildProgram(p, 1, &ctx.dev.id, "", NULL, NULL);
    cl_kernel k = st == CL_SUCCESS ? clCreateKernel(p, "scale", &st) : NULL;
    float *x = malloc(NMAX * sizeof *x), *y = malloc(NMAX * sizeof *y);
    cl_mem bx = NULL, by = NULL;
    if (st == CL_SUCCESS) {
        for (int i = 0; i < NMAX; i++)
            x[i] = (float)(i % 17);
        bx = clCreateBuffer(ctx.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, NMAX * sizeof *x,
                            x, &st);
    }
    if (st == CL_SUCCESS)
        by = clCreateBuffer(ctx.context, CL_MEM_WRITE_ONLY, NMAX * sizeof *y, NULL, &st);
    if (st != CL_SUCCESS) {
        snprintf(w->msg, sizeof w->msg, "set-up: %s", ocl_errstr(st));
        w->rc = 1;
    }
    size_t ls = 8;
    for (int it = 0; it < LAUNCHES && !w->rc; it++) {
        /* grid widths that grow across the threads (each a new widest one,
         * so PoCL makes a new cache entry beside the earlier ones), then
         * wrap around and grow again */
        int n = 64 * (1 + (it * THREADS + w->id) % (NMAX / 64 - 1)) * 3 % NMAX + 8;
        float a = (float)(1 + (it + w->id) % 5);
        size_t global = (size_t)n;
        clSetKernelArg(k, 0, sizeof bx, &bx);
        clSetKernelArg(k, 1, sizeof by, &by);
        clSetKernelArg(k, 2, sizeof n, &n);
        clSetKernelArg(k, 3, sizeof a, &a);
        st = ocl_enqueue_kernel(&ctx, k, global, &ls, NULL);
        if (st == CL_SUCCESS)
            st = clEnqueueReadBuffer(ctx.queue, by, CL_TRUE, 0, (size_t)n * sizeof *y, y, 0, NULL,
                                     NULL);
        if (st != CL_SUCCESS) {
            snprintf(w->msg, sizeof w->msg, "launch %d: %s", it, ocl_errstr(st));
            w->rc = 1;
            break;
        }
        for (int i = 0; i < n; i++)
            if (y[i] != a * x[i] + (float)i) {
                w->bad++;
                break;
            }
    }
    if (bx)
        clReleaseMemObject(bx);
    if (by)
        clReleaseMemObject(by);
    if (k)
        clReleaseKernel(k);
    if (p)
        clReleaseProgram(p);
    free(x);
    free(y);
    ocl_ctx_release(&ctx);
    return NULL;
}

int main(void)
{
    /* which drivers are gated */
    ocl_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.platform_name, sizeof d.platform_name, "Portable Computing Language");
    snprintf(d.driver, sizeof d.driver, "3.1+debian");
    CHECK(ocl_gate_wanted(&d) == (getenv("CLSOLVE_OCL_GATE") == NULL));
    snprintf(d.driver, sizeof d.driver, "5.0+debian");
    CHECK(ocl_gate_wanted(&d) == (getenv("CLSOLVE_OCL_GATE") == NULL));
    snprintf(d.driver, sizeof d.driver, "6.0");
    CHECK(!ocl_gate_wanted(&d));
    snprintf(d.platform_name, sizeof d.platform_name, "NVIDIA CUDA");
    snprintf(d.driver, sizeof d.driver, "580.65");
    CHECK(!ocl_gate_wanted(&d));

    cls_error err;
    cls_error_clear(&err);
    ocl_device dev;
    if (ocl_pick_device("cpu", &dev, &err) != CLS_OK)
        CHECK_SKIP("no CPU OpenCL device: %s", err.msg);
    printf("device: %s, driver %s, gated %d\n", dev.name, dev.driver, ocl_gate_wanted(&dev));
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int shared = 0; shared < 2; shared++) {
        for (int i = 0; i < THREADS; i++) {
            memset(&w[i], 0, sizeof w[i]);
            w[i].dev = dev;
            w[i].id = i;
            w[i].shared = shared;
            CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
        }
        int same = 1;
        for (int i = 0; i < THREADS; i++) {
            pthread_join(t[i], NULL);
            CHECK_MSG(w[i].rc == 0, "%s, thread %d: %s", shared ? "shared" : "own", i, w[i].msg);
            CHECK_MSG(w[i].bad == 0, "%s, thread %d: %d wrong results", shared ? "shared" : "own",
                      i, w[i].bad);
            same &= w[i].q == w[0].q;
        }
        if (shared && ocl_gate_wanted(&dev)) /* the lanes' case: one in-order queue */
            CHECK_MSG(same, "shared contexts on a gated device have different queues");
        printf("%d threads x %d launches at changing grid widths, %s: done\n", THREADS, LAUNCHES,
               shared ? (same ? "shared contexts, one queue" : "shared contexts, a queue each")
                      : "a context and queue each");
    }
    ocl_shared_release_all();
    return check_done("test_ocl_gate");
}
