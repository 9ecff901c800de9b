/*
 * nbody_gpu.c: the N-body device driver (see nbody.h, kernels/nbody.cl).
 *
 * Device state: positions+mass and velocities as float4, two of each; a
 * step reads one pair and writes the other (every body reads every
 * position), then the roles swap. The tile (work-group) size is a build
 * option; with tile 0 the driver builds the kernel for each power of two
 * from 64 to 1024 the device takes (work-group limit, local memory), times
 * one step of min(n, 32768) bodies with profiling events (best of two after
 * a warm-up) and keeps the fastest. The sweep is cheap (a few steps) and the
 * programs land in the binary cache.
 *
 * A one-int buffer holds the first step whose new state was not finite
 * (INT_MAX while all is well); it is read after every run, so a blow-up is
 * reported with its step however many steps ran in between.
 *
 * Energy at every step: each launch of a run also sums the energy of the
 * state it reads, per work-group (kernels/nbody.cl), into one of
 * NBODY_ESLOTS slots of a partial-sum buffer; every NBODY_ESLOTS launches
 * (and at the end) the host reads the slots back, adds each launch's
 * groups in double and folds the energies into the run's trace (the
 * largest drift from the first step measured, and its step). A launch
 * measures the step it starts from, so a run of k steps from step s
 * measures steps s .. s + k - 1, and leapfrog's closing half kick step
 * s + k as well.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "frame.h"
#include "../kernels/ocl_gate.h"
#include "nbody.h"

static int nbody_oom(cls_error *err)
{
    return cls_fail(err, CLS_EOTHER, "nbody: out of memory");
}

/* Launches whose energies are held on the device between reads. */
#define NBODY_ESLOTS 64

struct nbody_gpu {
    ocl_ctx *ctx;
    cl_program prog;
    cl_kernel k, k_pot;
    cl_mem pos[2], vel[2], acc, bad, phi, epart;
    int cur;
    int n;
    size_t tile;
};

size_t nbody_gpu_tile(const nbody_gpu *g)
{
    return g->tile;
}

void nbody_gpu_free(nbody_gpu *g)
{
    if (!g)
        return;
    if (g->k)
        clReleaseKernel(g->k);
    if (g->k_pot)
        clReleaseKernel(g->k_pot);
    if (g->prog)
        clReleaseProgram(g->prog);
    cl_mem *ms[] = {&g->pos[0], &g->pos[1], &g->vel[0], &g->vel[1],
                    &g->acc,    &g->bad,    &g->phi,    &g->epart};
    phys_release(ms, sizeof ms / sizeof ms[0]);
    free(g);
}

static int nbody_build(ocl_ctx *ctx, size_t tile, cl_program *prog, cl_kernel *k, cls_error *err)
{
    char opts[96];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DTILE=%zu", tile);
    const char *src[] = {"nbody.cl"};
    int rc = ocl_build_program(ctx, src, 1, opts, prog, err);
    if (rc)
        return rc;
    rc = ocl_create_kernel(*prog, "nbody_step", k, err);
    if (rc) {
        clReleaseProgram(*prog);
        *prog = NULL;
        return rc;
    }
    size_t kmax = 0;
    cl_int st = clGetKernelWorkGroupInfo(*k, ctx->dev.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax,
                                         &kmax, NULL);
    if (st != CL_SUCCESS || kmax < tile) {
        clReleaseKernel(*k);
        clReleaseProgram(*prog);
        *k = NULL;
        *prog = NULL;
        return cls_fail(err, CLS_EOTHER, "nbody: tile %zu exceeds the kernel's work-group limit",
                        tile);
    }
    return CLS_OK;
}

/* Enqueues one launch from buffer pair `from` into the other: v' = (v + a
 * kick) damping, x' = x + v' drift; with eslot >= 0 the energy of the
 * state read (velocities brought in step by a kick of sync) into that
 * slot; optional event. */
static int nbody_enqueue(nbody_gpu *g, cl_kernel k, size_t tile, int n, int from, float eps2,
                         float kick, float drift, float damping, int write_acc, int step, int eslot,
                         float sync, cl_event *ev, cls_error *err)
{
    int to = 1 - from;
    cl_int ni = n, wa = write_acc, si = step;
    PHYS_ARG(k, 0, g->pos[from]);
    PHYS_ARG(k, 1, g->vel[from]);
    PHYS_ARG(k, 2, g->pos[to]);
    PHYS_ARG(k, 3, g->vel[to]);
    PHYS_ARG(k, 4, g->acc);
    PHYS_ARG(k, 5, ni);
    PHYS_ARG(k, 6, eps2);
    PHYS_ARG(k, 7, kick);
    PHYS_ARG(k, 8, drift);
    PHYS_ARG(k, 9, damping);
    PHYS_ARG(k, 10, wa);
    PHYS_ARG(k, 11, g->bad);
    PHYS_ARG(k, 12, si);
    cl_int es = eslot;
    PHYS_ARG(k, 13, g->epart);
    PHYS_ARG(k, 14, es);
    PHYS_ARG(k, 15, sync);
    cl_int st;
    size_t global = ((size_t)n + tile - 1) / tile * tile;
    if (global == 0)
        global = tile;
    st = ocl_enqueue_kernel(g->ctx, k, global, &tile, ev);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER,
                        "clEnqueueNDRangeKernel(nbody_step, %zu, tile %zu) failed: %s (%d)", global,
                        tile, ocl_errstr(st), (int)st);
    return CLS_OK;
}

/* Times one step of m bodies with this tile: best of two after a warm-up. */
static int nbody_time_tile(nbody_gpu *g, cl_kernel k, size_t tile, int m, double *best,
                           cls_error *err)
{
    *best = INFINITY;
    for (int rep = 0; rep < 3; rep++) {
        cl_event ev = NULL;
        int rc =
            nbody_enqueue(g, k, tile, m, g->cur, 1e-4f, 0.0f, 0.0f, 1.0f, 0, 0, -1, 0.0f, &ev, err);
        if (rc)
            return rc;
        double t = ocl_event_seconds(ev);
        clReleaseEvent(ev);
        if (t < 0)
            return cls_fail(err, CLS_EOTHER, "nbody: profiling the tile sweep failed");
        if (rep > 0 && t < *best)
            *best = t;
    }
    return CLS_OK;
}

int nbody_gpu_create(ocl_ctx *ctx, const nbody_system *s, int tile, nbody_gpu **out, cls_error *err)
{
    *out = NULL;
    if (s->n < 1 || s->n > INT32_MAX)
        return cls_fail(err, CLS_EUSAGE, "%lld bodies", (long long)s->n);
    nbody_gpu *g = calloc(1, sizeof *g);
    if (!g)
        return nbody_oom(err);
    g->ctx = ctx;
    g->n = (int)s->n;
    size_t n = (size_t)s->n;
    float *pos = malloc(4 * n * sizeof *pos), *vel = malloc(4 * n * sizeof *vel);
    int rc = CLS_OK;
    if (!pos || !vel) {
        rc = nbody_oom(err);
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        for (int c = 0; c < 3; c++) {
            pos[4 * i + c] = (float)s->x[3 * i + c];
            vel[4 * i + c] = (float)s->v[3 * i + c];
        }
        pos[4 * i + 3] = (float)s->m[i];
        vel[4 * i + 3] = 0.0f;
    }
    cl_int st;
    for (int b = 0; b < 2; b++) {
        g->pos[b] = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 16 * n,
                                   pos, &st);
        if (st == CL_SUCCESS)
            g->vel[b] = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                       16 * n, vel, &st);
        if (st != CL_SUCCESS)
            break;
    }
    if (st == CL_SUCCESS)
        g->acc = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, 16 * n, NULL, &st);
    cl_int none = INT_MAX;
    if (st == CL_SUCCESS)
        g->bad = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof none,
                                &none, &st);
    if (st == CL_SUCCESS)
        g->phi = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, 4 * n, NULL, &st);
    /* energy slots for the most work-groups any tile gives (the smallest
     * tile: the one asked for, else the sweep's 64) */
    size_t min_tile = tile > 0 && tile < 64 ? (size_t)tile : 64;
    if (st == CL_SUCCESS)
        g->epart = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE,
                                  8 * NBODY_ESLOTS * ((n + min_tile - 1) / min_tile), NULL, &st);
    free(pos);
    free(vel);
    pos = vel = NULL;
    if (st != CL_SUCCESS) {
        rc = cls_fail(err, CLS_EOTHER, "clCreateBuffer(nbody, %zu bytes) failed: %s (%d)", 16 * n,
                      ocl_errstr(st), (int)st);
        goto fail;
    }
    if (tile > 0) {
        g->tile = (size_t)tile;
        if ((rc = nbody_build(ctx, g->tile, &g->prog, &g->k, err)))
            goto fail;
    } else {
        int m = g->n < 32768 ? g->n : 32768;
        double best_t = INFINITY;
        for (size_t t = 64; t <= 1024; t *= 2) {
            if (t > ctx->dev.max_work_group || 16 * t > ctx->dev.local_mem)
                break;
            cl_program p = NULL;
            cl_kernel k = NULL;
            cls_error e2;
            if (nbody_build(ctx, t, &p, &k, &e2))
                continue; /* this tile does not fit the kernel: skip it */
            double tt;
            rc = nbody_time_tile(g, k, t, m, &tt, err);
            if (rc) {
                clReleaseKernel(k);
                clReleaseProgram(p);
                goto fail;
            }
            if (tt < best_t) {
                best_t = tt;
                if (g->k) {
                    clReleaseKernel(g->k);
                    clReleaseProgram(g->prog);
                }
                g->k = k;
                g->prog = p;
                g->tile = t;
            } else {
                clReleaseKernel(k);
                clReleaseProgram(p);
            }
        }
        if (!g->k) {
            rc = cls_fail(err, CLS_EOTHER, "nbody: no tile size from 64 to 1024 fits this device");
            goto fail;
        }
    }
    if ((rc = ocl_create_kernel(g->prog, "nbody_potential", &g->k_pot, err)))
        goto fail;
    *out = g;
    return CLS_OK;
fail:
    free(pos);
    free(vel);
    nbody_gpu_free(g);
    return rc;
}

int nbody_gpu_accel(nbody_gpu *g, double eps2, float *acc, cls_error *err)
{
    int rc = nbody_enqueue(g, g->k, g->tile, g->n, g->cur, (float)eps2, 0.0f, 0.0f, 1.0f, 1, 0, -1,
                           0.0f, NULL, err);
    if (rc)
        return rc;
    return phys_read(g->ctx, g->acc, 16 * (size_t)g->n, acc, "nbody accelerations", err);
}

/* Checks the non-finite flag after a run: CLS_EBREAKDOWN naming the first
 * bad step and a body that is not finite now. */
static int nbody_check_finite(nbody_gpu *g, cls_error *err)
{
    cl_int bad = INT_MAX;
    int rc = phys_read(g->ctx, g->bad, sizeof bad, &bad, "nbody non-finite flag", err);
    if (rc || bad == INT_MAX)
        return rc;
    size_t n = (size_t)g->n;
    float *p = malloc(32 * n);
    if (!p)
        return nbody_oom(err);
    int64_t body = -1;
    const char *what = "x";
    if (!phys_read(g->ctx, g->pos[g->cur], 16 * n, p, "nbody state", err) &&
        !phys_read(g->ctx, g->vel[g->cur], 16 * n, p + 4 * n, "nbody state", err))
        for (size_t i = 0; i < n && body < 0; i++)
            for (int c = 0; c < 3; c++)
                if (!isfinite(p[4 * i + c]) || !isfinite(p[4 * n + 4 * i + c])) {
                    body = (int64_t)i;
                    what = isfinite(p[4 * i + c]) ? "v" : "x";
                    break;
                }
    free(p);
    if (body >= 0)
        return cls_fail(err, CLS_EBREAKDOWN,
                        "the state is not finite from step %d on (body %lld has a "
                        "non-finite %s): lower --dt or raise the softening",
                        (int)bad, (long long)body, what);
    return cls_fail(err, CLS_EBREAKDOWN,
                    "the state is not finite from step %d on: lower --dt or raise the "
                    "softening",
                    (int)bad);
}

void nbody_trace_init(nbody_energy_trace *t)
{
    memset(t, 0, sizeof *t);
    t->e_ref = NAN;
    t->max_step = -1;
}

/* Reads the energies of the last `count` launches (slots 0 .. count - 1),
 * the first of which measured step `step0`, into the trace. */
static int nbody_trace_flush(nbody_gpu *g, nbody_energy_trace *t, int count, int64_t step0,
                             cls_error *err)
{
    size_t groups = ((size_t)g->n + g->tile - 1) / g->tile;
    float *part = malloc(8 * groups * (size_t)count);
    if (!part)
        return nbody_oom(err);
    int rc = phys_read(g->ctx, g->epart, 8 * groups * (size_t)count, part, "nbody energies", err);
    for (int c = 0; !rc && c < count; c++) {
        double K = 0, W = 0;
        for (size_t q = 0; q < groups; q++) {
            K += part[2 * (c * groups + q)];
            W += part[2 * (c * groups + q) + 1];
        }
        double E = K + W;
        if (t->measured++ == 0)
            t->e_ref = E;
        double rel = fabs(E - t->e_ref) / fmax(fabs(t->e_ref), 1e-300);
        if (rel > t->max_rel || t->max_step < 0) {
            t->max_rel = rel;
            t->max_step = step0 + c;
        }
    }
    free(part);
    return rc;
}

int nbody_gpu_run(nbody_gpu *g, nbody_integrator k, int64_t first_step, int64_t steps, double dt,
                  double eps2, double damping, double *kernel_s, nbody_energy_trace *trace,
                  cls_error *err)
{
    double total = 0.0;
    /* leapfrog: the opening half kick, full kicks, and a closing half kick
     * (drift 0) so that velocities are in step with positions at the end */
    int64_t launches = k == NBODY_LEAPFROG && steps > 0 ? steps + 1 : steps;
    int pending = 0; /* launches whose energies are still on the device */
    for (int64_t s = 0; s < launches; s++) {
        double kick = dt, drift = dt;
        /* the kick that brings the velocities read in step with the
         * positions read: leapfrog's are half a step behind after its
         * opening half kick */
        double sync = k == NBODY_LEAPFROG && s > 0 ? 0.5 * dt : 0.0;
        if (k == NBODY_LEAPFROG) {
            if (s == 0)
                kick = 0.5 * dt;
            if (s == steps) {
                kick = 0.5 * dt;
                drift = 0.0;
            }
        }
        int64_t step = first_step + (s < steps ? s : steps - 1) + 1;
        if (physics_should_stop()) /* every step waits on its event: polled as often */
            return cls_fail(err, CLS_EOTHER, "stopped at step %lld", (long long)step);
        cl_event ev = NULL;
        int rc =
            nbody_enqueue(g, g->k, g->tile, g->n, g->cur, (float)eps2, (float)kick, (float)drift,
                          (float)damping, 0, step > INT_MAX ? INT_MAX - 1 : (int)step,
                          trace ? pending : -1, (float)sync, &ev, err);
        if (rc)
            return rc;
        g->cur = 1 - g->cur;
        /* waiting on each step's event costs a little host latency, not
         * device time: the kernel is long next to it for any n worth timing */
        double t = ocl_event_seconds(ev);
        clReleaseEvent(ev);
        if (t < 0)
            return cls_fail(err, CLS_EOTHER, "nbody: step %lld failed on the device",
                            (long long)step);
        total += t;
        if (trace && (++pending == NBODY_ESLOTS || s + 1 == launches)) {
            if ((rc = nbody_trace_flush(g, trace, pending, first_step + s + 1 - pending, err)))
                return rc;
            pending = 0;
        }
    }
    if (kernel_s)
        *kernel_s = total;
    return nbody_check_finite(g, err);
}

int nbody_gpu_potential(nbody_gpu *g, const double *mass, double eps2, double *W, cls_error *err)
{
    cl_int ni = g->n;
    cl_float e2 = (cl_float)eps2;
    PHYS_ARG(g->k_pot, 0, g->pos[g->cur]);
    PHYS_ARG(g->k_pot, 1, ni);
    PHYS_ARG(g->k_pot, 2, e2);
    PHYS_ARG(g->k_pot, 3, g->phi);
    int rc = phys_launch(g->ctx, g->k_pot, "nbody_potential", (size_t)g->n, g->tile, NULL, err);
    float *phi = malloc(4 * (size_t)g->n);
    if (!phi)
        return nbody_oom(err);
    if (!rc)
        rc = phys_read(g->ctx, g->phi, 4 * (size_t)g->n, phi, "nbody potential", err);
    double w = 0;
    for (int64_t i = 0; !rc && i < g->n; i++)
        w += 0.5 * mass[i] * (double)phi[i];
    free(phi);
    *W = w;
    return rc;
}

int nbody_gpu_download(nbody_gpu *g, nbody_system *s, cls_error *err)
{
    size_t n = (size_t)g->n;
    float *pos = malloc(16 * n), *vel = malloc(16 * n);
    if (!pos || !vel) {
        free(pos);
        free(vel);
        return nbody_oom(err);
    }
    int rc = phys_read(g->ctx, g->pos[g->cur], 16 * n, pos, "nbody positions", err);
    if (!rc)
        rc = phys_read(g->ctx, g->vel[g->cur], 16 * n, vel, "nbody velocities", err);
    if (!rc)
        for (size_t i = 0; i < n && (int64_t)i < s->n; i++)
            for (int c = 0; c < 3; c++) {
                s->x[3 * i + c] = pos[4 * i + c];
                s->v[3 * i + c] = vel[4 * i + c];
            }
    free(pos);
    free(vel);
    return rc;
}
