/*
 * ocl_floor.c: what any process that uses a GPU through OpenCL pays around
 * its work, measured without clsolve: the driver's start (platform, device,
 * context, queue), MB megabytes of buffers written from the host, a read
 * back of 8 MB, the buffers' release, the context's release, and the exit.
 *
 * clsolve's trace puts p256's last 0.13-0.2 s after x is down in the
 * context's release and the process's exit; this says how much of that a
 * process that does nothing else pays, on the same host and driver.
 *
 *   cc -O2 bench/ocl_floor.c -o ocl_floor -lOpenCL
 *   s=$(date +%s.%N); ./ocl_floor 2300; e=$(date +%s.%N)
 *
 * Each line gives the epoch time of a step's end, so the caller's clock
 * before exec and after the exit frames it: exit = e - "released".
 * Buffers are written in pieces of 256 MB from one plain host buffer (the
 * driver stages pageable memory itself).
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define PIECE ((size_t)256 << 20)
#define MAXBUF 256

int main(int argc, char **argv)
{
    double t0 = now();
    size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 2300;
    cl_platform_id plats[8];
    cl_uint np = 0;
    cl_device_id dev = NULL;
    if (clGetPlatformIDs(8, plats, &np) != CL_SUCCESS)
        return fprintf(stderr, "no OpenCL platform\n"), 1;
    double tp = now();
    for (cl_uint p = 0; p < np && !dev; p++)
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_GPU, 1, &dev, NULL) != CL_SUCCESS)
            dev = NULL;
    if (!dev)
        return fprintf(stderr, "no GPU\n"), 1;
    cl_int st;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &st);
    if (st != CL_SUCCESS)
        return fprintf(stderr, "clCreateContext: %d\n", st), 1;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &st);
    if (st != CL_SUCCESS)
        return fprintf(stderr, "clCreateCommandQueue: %d\n", st), 1;
    double t1 = now();
    printf("platforms %.6f (%u, %.3f s)\n", tp, np, tp - t0);
    char *host = malloc(PIECE);
    if (!host)
        return 1;
    memset(host, 1, PIECE);
    cl_mem buf[MAXBUF];
    int nb = 0;
    for (size_t left = mb << 20; left && nb < MAXBUF; nb++) {
        size_t n = left < PIECE ? left : PIECE;
        buf[nb] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n, NULL, &st);
        if (st != CL_SUCCESS)
            return fprintf(stderr, "clCreateBuffer: %d\n", st), 1;
        clEnqueueWriteBuffer(q, buf[nb], CL_FALSE, 0, n, host, 0, NULL, NULL);
        left -= n;
    }
    clFinish(q);
    double t2 = now();
    clEnqueueReadBuffer(q, buf[0], CL_TRUE, 0, (size_t)8 << 20, host, 0, NULL, NULL);
    double t3 = now();
    for (int i = 0; i < nb; i++)
        clReleaseMemObject(buf[i]);
    clFinish(q);
    double t4 = now();
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    double t5 = now();
    free(host);
    printf("main %.6f\nstarted %.6f (%.3f s)\nwritten %.6f (%zu MB, %.3f s)\nread %.6f (%.3f s)\n"
           "buffers released %.6f (%.3f s)\nreleased %.6f (context and queue, %.3f s)\n",
           t0, t1, t1 - t0, t2, mb, t2 - t1, t3, t3 - t2, t4, t4 - t3, t5, t5 - t4);
    fflush(stdout);
    return 0;
}
