/*
 * springs_gpu.c: the mass-spring body on an OpenCL device (model in
 * springs.h, kernels in kernels/springs.cl).
 *
 * On the device a particle is a float4 (x, y, z, w), a spring an int4 (i,
 * j, rest bits, k bits), a particle's rest offset and mass a float4 (q, m),
 * a collider two float4. Two launch plans, both race-free and both equal to
 * the sequential sweep in colour order:
 *   - color: per step one Verlet launch, then per sweep one launch per
 *     colour, shape matching in four launches (per-group sums of the
 *     centre, its total, per-group sums of A, the rotation) plus one to
 *     move the particles, and one collider launch; launch overhead times
 *     the number of colours, so it suits large systems with few colours;
 *   - workgroup: one work-group of up to 1024 work-items (a power of two)
 *     runs whole steps, up to 250 per launch, looping over the colours
 *     with a barrier after each and reducing the shape-matching sums in
 *     local memory in the colour plan's order; no launch per colour, one
 *     compute unit only, so it suits small dense systems (the thesis's
 *     models: hundreds of colours of a few thousand springs).
 * The two plans give the same bits (same arithmetic, same reduction
 * order, fma contraction off), so AUTO's timing-dependent choice never
 * changes a result: a run is bitwise repeatable.
 * AUTO times a few batches of steps of each on the body at hand (from the
 * current state, restored afterwards) and keeps the faster.
 *
 * Non-finite states (a dt too large, a body flung to infinity): a one-int
 * buffer holds the first step whose end state was not finite (INT_MAX
 * while all is well), set by the kernels (see kernels/springs.cl) and
 * read after every run, which then fails with CLS_EBREAKDOWN naming the
 * step and a particle, as nbody does. Steps are counted from the state
 * the body was created with (step 0); a trial run and its restore put the
 * count and the flag back too.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "../common/timer.h"
#include "frame.h"
#include "springs.h"

struct springs_gpu {
    ocl_ctx *ctx;
    cl_program prog;
    cl_kernel k_verlet, k_color, k_collide, k_wg, k_spart, k_sfin, k_sapply, k_check, k_jac;
    cl_mem pos, prev, spr, coff, col, rest, shape, partial, bad;
    cl_mem pos2, adj_off, adj; /* the Jacobi plan: the sweep's output, the springs per particle */
    int64_t step; /* steps run from the initial state */
    int np, ns, ncolors, ngroups;
    int64_t *color_off;
    springs_launch mode;
    size_t wg_size;  /* workgroup plan: a power of two */
    size_t ls;       /* local size of the per-particle and per-colour kernels */
    int fence_local; /* the diagnostic build with local fences between colours */
    int team;        /* the Jacobi plan: work-items per particle (a power of two) */
    size_t jls;      /* the Jacobi plan's work-group size */
};

const char *springs_launch_name(springs_launch l)
{
    switch (l) {
    case SPRINGS_LAUNCH_COLOR:
        return "color";
    case SPRINGS_LAUNCH_WORKGROUP:
        return "workgroup";
    case SPRINGS_LAUNCH_JACOBI:
        return "jacobi";
    default:
        return "auto";
    }
}

springs_launch springs_gpu_mode(const springs_gpu *g)
{
    return g->mode;
}

int springs_gpu_fence_local(const springs_gpu *g)
{
    return g->fence_local;
}

size_t springs_gpu_wg_size(const springs_gpu *g)
{
    return g->mode == SPRINGS_LAUNCH_WORKGROUP ? g->wg_size
           : g->mode == SPRINGS_LAUNCH_JACOBI  ? g->jls
                                               : g->ls;
}

void springs_gpu_free(springs_gpu *g)
{
    if (!g)
        return;
    cl_kernel ks[] = {g->k_verlet, g->k_color,  g->k_collide, g->k_wg, g->k_spart,
                      g->k_sfin,   g->k_sapply, g->k_check,   g->k_jac};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
        if (ks[i])
            clReleaseKernel(ks[i]);
    cl_mem *ms[] = {&g->pos,   &g->prev,    &g->spr, &g->coff, &g->col,     &g->rest,
                    &g->shape, &g->partial, &g->bad, &g->pos2, &g->adj_off, &g->adj};
    phys_release(ms, sizeof ms / sizeof ms[0]);
    if (g->prog)
        clReleaseProgram(g->prog);
    free(g->color_off);
    free(g);
}

static int springs_oom(cls_error *err)
{
    return cls_fail(err, CLS_EOTHER, "springs: out of memory");
}

/* float4 (x, y, z, w) arrays from the model */
static void springs_pack(const springs_model *s, float *pos, float *prev)
{
    for (int64_t i = 0; i < s->np; i++) {
        for (int c = 0; c < 3; c++) {
            pos[4 * i + c] = (float)s->x[3 * i + c];
            prev[4 * i + c] = (float)s->xprev[3 * i + c];
        }
        pos[4 * i + 3] = prev[4 * i + 3] = (float)s->w[i];
    }
}

/* (q, m) per particle: the rest offset from the rest centre of mass */
static void springs_pack_rest(const springs_model *s, float *rest)
{
    double M = 0, c0[3] = {0, 0, 0};
    for (int64_t i = 0; i < s->np; i++) {
        M += s->m[i];
        for (int c = 0; c < 3; c++)
            c0[c] += s->m[i] * s->x0[3 * i + c];
    }
    for (int c = 0; c < 3; c++)
        c0[c] = M > 0 ? c0[c] / M : 0.0;
    for (int64_t i = 0; i < s->np; i++) {
        for (int c = 0; c < 3; c++)
            rest[4 * i + c] = (float)(s->x0[3 * i + c] - c0[c]);
        rest[4 * i + 3] = (float)s->m[i];
    }
}

static size_t springs_kernel_max(springs_gpu *g, cl_kernel k)
{
    size_t kmax = 0;
    if (clGetKernelWorkGroupInfo(k, g->ctx->dev.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax,
                                 NULL) != CL_SUCCESS)
        return 0;
    return kmax;
}

/* The Jacobi plan's data: every spring twice, as a row of its particles'
 * CSR adjacency (j, i, rest bits, k bits: a spring's int4 with the other
 * end first), in colour order within a row
 * (a counting sort: deterministic); a second position buffer for the
 * sweep's output; the team size from the device and the mean degree
 * (CLSOLVE_SPRINGS_TEAM=T, a power of two up to the work-group, overrides
 * it for the benchmark's sweep). */
static int springs_gpu_jacobi_data(springs_gpu *g, const springs_model *s, cls_error *err)
{
    size_t np = (size_t)s->np, ns = (size_t)s->ns;
    cl_int *off = calloc(np + 1, sizeof *off);
    cl_int *fill = malloc((np ? np : 1) * sizeof *fill);
    cl_int *adj = malloc(8 * (ns ? ns : 1) * sizeof *adj);
    int rc = CLS_OK;
    if (!off || !fill || !adj) {
        rc = springs_oom(err);
        goto done;
    }
    for (size_t t = 0; t < 2 * ns; t++)
        off[s->ij[t] + 1]++;
    for (size_t i = 0; i < np; i++)
        off[i + 1] += off[i];
    memcpy(fill, off, np * sizeof *fill);
    for (size_t t = 0; t < ns; t++) {
        float r = (float)s->rest[t], k = (float)s->k[t];
        for (int end = 0; end < 2; end++) {
            int32_t a = s->ij[2 * t + end], b = s->ij[2 * t + 1 - end];
            cl_int *e = adj + 4 * (size_t)fill[a]++;
            e[0] = b;
            e[1] = a;
            memcpy(&e[2], &r, sizeof r);
            memcpy(&e[3], &k, sizeof k);
        }
    }
    /* a GPU: the largest power of two up to 32 that leaves each work-item
     * eight springs (two unrolled rounds: team 16 for the Cochino-sized
     * body, 139 springs per particle, measured 16% faster than 32 and 31%
     * faster than 64 on an H200); a CPU device: 2 (a team is a loop there,
     * its barriers cost, and PoCL was fastest at 1-2) */
    double mean = np ? 2.0 * (double)ns / (double)np : 0.0;
    g->team = 1;
    if (g->ctx->dev.type & CL_DEVICE_TYPE_CPU)
        g->team = 2;
    else
        while (g->team < 32 && 16.0 * g->team <= mean)
            g->team *= 2;
    const char *team = getenv("CLSOLVE_SPRINGS_TEAM");
    if (team && atoi(team) > 0) {
        int t = atoi(team);
        g->team = 1;
        while (2 * g->team <= t && 2 * g->team <= 1024)
            g->team *= 2;
    }
    size_t kmax = springs_kernel_max(g, g->k_jac);
    g->jls = 128;
    while (g->jls < (size_t)g->team)
        g->jls *= 2;
    while (g->jls > (size_t)g->team &&
           ((kmax && g->jls > kmax) || g->jls > g->ctx->dev.max_work_group))
        g->jls /= 2;
    if ((kmax && g->jls > kmax) || g->jls > g->ctx->dev.max_work_group) {
        rc = cls_fail(err, CLS_EUSAGE,
                      "springs: a team of %d work-items per particle does not "
                      "fit a work-group of this device",
                      g->team);
        goto done;
    }
    const cl_mem_flags rw = CL_MEM_READ_WRITE;
    rc = phys_buffer(g->ctx, &g->pos2, rw, 16 * np, NULL, "Jacobi positions", err);
    if (!rc)
        rc = phys_buffer(g->ctx, &g->adj_off, rw, sizeof *off * (np + 1), off,
                         "springs per particle", err);
    if (!rc)
        rc = phys_buffer(g->ctx, &g->adj, rw, 32 * ns, ns ? adj : NULL, "particle springs", err);
done:
    free(off);
    free(fill);
    free(adj);
    return rc;
}

int springs_gpu_create(ocl_ctx *ctx, const springs_model *s, springs_launch mode, springs_gpu **out,
                       cls_error *err)
{
    *out = NULL;
    if (s->np > INT32_MAX / 4 || s->ns > INT32_MAX)
        return cls_fail(err, CLS_EUSAGE, "body too large for the device kernels");
    if (s->ns > 0 && !s->ncolors)
        return cls_fail(err, CLS_EOTHER, "springs: the springs are not coloured (bug)");
    springs_gpu *g = calloc(1, sizeof *g);
    if (!g)
        return springs_oom(err);
    g->ctx = ctx;
    g->np = (int)s->np;
    g->ns = (int)s->ns;
    g->ncolors = s->ncolors;
    g->mode = mode;
    int rc;
    const char *src[] = {"springs.cl"};
    /* CLSOLVE_SPRINGS_FENCE=local: the diagnostic build (see springs.cl) */
    const char *fence = getenv("CLSOLVE_SPRINGS_FENCE");
    g->fence_local = fence && !strcmp(fence, "local");
    if ((rc = ocl_build_program(
             ctx, src, 1, g->fence_local ? "-cl-std=CL1.2 -DSPRINGS_FENCE_LOCAL" : "-cl-std=CL1.2",
             &g->prog, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_verlet", &g->k_verlet, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_project_color", &g->k_color, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_collide", &g->k_collide, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_shape_partial", &g->k_spart, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_shape_finish", &g->k_sfin, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_shape_apply", &g->k_sapply, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_step_wg", &g->k_wg, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_check_finite", &g->k_check, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_jacobi", &g->k_jac, err)))
        goto fail;
    /* the one work-group: the largest power of two up to 1024 the kernel,
     * the device and the local memory (a float4 per work-item) allow */
    size_t kmax = springs_kernel_max(g, g->k_wg);
    g->wg_size = 1024;
    while (g->wg_size > 1 && (g->wg_size > kmax || g->wg_size > ctx->dev.max_work_group ||
                              16 * g->wg_size > ctx->dev.local_mem / 2))
        g->wg_size /= 2;
    /* per-particle kernels: 128 (a power of two, for the shape sums) */
    g->ls = 128;
    size_t lsmax = springs_kernel_max(g, g->k_spart);
    size_t lcmax = springs_kernel_max(g, g->k_color);
    while (g->ls > 1 &&
           ((lsmax && g->ls > lsmax) || (lcmax && g->ls > lcmax) || g->ls > g->wg_size))
        g->ls /= 2; /* no larger than the one work-group: it repeats the shape sums' blocks */
    g->ngroups = (int)((s->np + (int64_t)g->ls - 1) / (int64_t)g->ls);

    size_t np = (size_t)s->np;
    float *pos = malloc(4 * (np ? np : 1) * sizeof *pos);
    float *prev = malloc(4 * (np ? np : 1) * sizeof *prev);
    float *rest = malloc(4 * (np ? np : 1) * sizeof *rest);
    cl_int *spr = malloc(4 * (size_t)(s->ns ? s->ns : 1) * sizeof *spr);
    cl_int *coff = malloc(((size_t)s->ncolors + 2) * sizeof *coff);
    g->color_off = malloc(((size_t)s->ncolors + 1) * sizeof *g->color_off);
    if (!pos || !prev || !rest || !spr || !coff || !g->color_off) {
        free(pos);
        free(prev);
        free(rest);
        free(spr);
        free(coff);
        rc = springs_oom(err);
        goto fail;
    }
    springs_pack(s, pos, prev);
    springs_pack_rest(s, rest);
    for (int64_t t = 0; t < s->ns; t++) {
        float r = (float)s->rest[t], k = (float)s->k[t];
        spr[4 * t] = s->ij[2 * t];
        spr[4 * t + 1] = s->ij[2 * t + 1];
        memcpy(&spr[4 * t + 2], &r, sizeof r);
        memcpy(&spr[4 * t + 3], &k, sizeof k);
    }
    for (int c = 0; c <= s->ncolors; c++) {
        coff[c] = (cl_int)s->color_off[c];
        g->color_off[c] = s->color_off[c];
    }
    coff[s->ncolors + 1] = coff[s->ncolors]; /* the kernel reads one ahead */
    float shape[20] = {0};
    for (int c = 0; c < 4; c++)
        shape[16 + c] = (float)s->q[c];
    const cl_mem_flags rw = CL_MEM_READ_WRITE;
    rc = phys_buffer(ctx, &g->pos, rw, 16 * np, pos, "positions", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->prev, rw, 16 * np, prev, "previous positions", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->rest, rw, 16 * np, rest, "rest offsets", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->spr, rw, 16 * (size_t)s->ns, s->ns ? spr : NULL, "springs", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->coff, rw, sizeof(cl_int) * ((size_t)s->ncolors + 2), coff,
                         "colour offsets", err);
    if (!rc)
        rc =
            phys_buffer(ctx, &g->col, rw, 32 * (SPRINGS_MAX_COLLIDERS + 1), NULL, "colliders", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->shape, rw, sizeof shape, shape, "shape matching", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->partial, rw, 48 * (size_t)(g->ngroups ? g->ngroups : 1), NULL,
                         "shape sums", err);
    cl_int none = INT_MAX;
    if (!rc)
        rc = phys_buffer(ctx, &g->bad, rw, sizeof none, &none, "non-finite flag", err);
    free(pos);
    free(prev);
    free(rest);
    free(spr);
    free(coff);
    if (!rc && mode == SPRINGS_LAUNCH_JACOBI)
        rc = springs_gpu_jacobi_data(g, s, err);
    if (rc)
        goto fail;
    *out = g;
    return CLS_OK;
fail:
    springs_gpu_free(g);
    return rc;
}

/* The colliders as the kernels read them: (a, type), (b, 0). */
static int springs_upload_colliders(springs_gpu *g, const springs_params *p, cl_int *ncol,
                                    cls_error *err)
{
    springs_collider cs[SPRINGS_MAX_COLLIDERS + 1];
    int n = springs_colliders(p, cs);
    float buf[8 * (SPRINGS_MAX_COLLIDERS + 1)];
    memset(buf, 0, sizeof buf);
    for (int c = 0; c < n; c++) {
        for (int k = 0; k < 3; k++) {
            buf[8 * c + k] = (float)cs[c].a[k];
            buf[8 * c + 4 + k] = (float)cs[c].a[3 + k];
        }
        buf[8 * c + 3] = (float)cs[c].type;
    }
    *ncol = n;
    return n ? phys_write(g->ctx, g->col, 32 * (size_t)n, buf, "colliders", err) : CLS_OK;
}

static int springs_shape_launches(springs_gpu *g, float alpha, cls_error *err)
{
    cl_int n = g->np, ng = g->ngroups;
    int rc;
    for (cl_int stage = 0; stage < 2; stage++) {
        PHYS_ARG(g->k_spart, 0, g->pos);
        PHYS_ARG(g->k_spart, 1, g->rest);
        PHYS_ARG(g->k_spart, 2, n);
        PHYS_ARG(g->k_spart, 3, stage);
        PHYS_ARG(g->k_spart, 4, g->shape);
        PHYS_ARG(g->k_spart, 5, g->partial);
        cl_int st = clSetKernelArg(g->k_spart, 6, 16 * g->ls, NULL);
        if (st != CL_SUCCESS)
            return cls_fail(err, CLS_EOTHER, "clSetKernelArg(springs_shape_partial, 6): %s",
                            ocl_errstr(st));
        PHYS_ARG(g->k_sfin, 0, g->partial);
        PHYS_ARG(g->k_sfin, 1, ng);
        PHYS_ARG(g->k_sfin, 2, stage);
        PHYS_ARG(g->k_sfin, 3, g->shape);
        if ((rc = phys_launch(g->ctx, g->k_spart, "springs_shape_partial", (size_t)g->np, g->ls,
                              NULL, err)) ||
            (rc = phys_launch(g->ctx, g->k_sfin, "springs_shape_finish", 1, 1, NULL, err)))
            return rc;
    }
    PHYS_ARG(g->k_sapply, 0, g->pos);
    PHYS_ARG(g->k_sapply, 1, g->rest);
    PHYS_ARG(g->k_sapply, 2, n);
    PHYS_ARG(g->k_sapply, 3, g->shape);
    PHYS_ARG(g->k_sapply, 4, alpha);
    return phys_launch(g->ctx, g->k_sapply, "springs_shape_apply", (size_t)g->np, g->ls, NULL, err);
}

/* A step number as the kernels take it (an int; a run longer than that
 * names its last representable step). */
static cl_int springs_step_arg(int64_t step)
{
    return step >= INT_MAX ? INT_MAX - 1 : (cl_int)step;
}

/* The end state of a run, which no Verlet pass of it reads, into the
 * non-finite flag as step `step`. */
static int springs_check_launch(springs_gpu *g, int64_t step, cls_error *err)
{
    cl_int n = g->np, si = springs_step_arg(step);
    PHYS_ARG(g->k_check, 0, g->pos);
    PHYS_ARG(g->k_check, 1, n);
    PHYS_ARG(g->k_check, 2, g->bad);
    PHYS_ARG(g->k_check, 3, si);
    return phys_launch(g->ctx, g->k_check, "springs_check_finite", (size_t)g->np, g->ls, NULL, err);
}

/* The Jacobi kernel's arguments that stay the same for a whole run (the
 * lists, S, omega, the team, the fused colliders: ncol 0 when shape
 * matching runs between projection and colliders), set once per run. */
static int springs_jacobi_args(springs_gpu *g, const springs_params *p, cl_int ncol,
                               cls_error *err)
{
    cl_int n = g->np, team = g->team;
    cl_float S = (cl_float)p->S, omega = (cl_float)springs_jacobi_omega(p);
    cl_float mu = (cl_float)p->friction;
    PHYS_ARG(g->k_jac, 2, g->adj_off);
    PHYS_ARG(g->k_jac, 3, g->adj);
    PHYS_ARG(g->k_jac, 4, n);
    PHYS_ARG(g->k_jac, 5, S);
    PHYS_ARG(g->k_jac, 6, omega);
    PHYS_ARG(g->k_jac, 8, team);
    cl_int st = clSetKernelArg(g->k_jac, 9, 16 * g->jls, NULL);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clSetKernelArg(springs_jacobi, 9): %s", ocl_errstr(st));
    PHYS_ARG(g->k_jac, 10, g->prev);
    PHYS_ARG(g->k_jac, 11, g->col);
    PHYS_ARG(g->k_jac, 12, ncol);
    PHYS_ARG(g->k_jac, 13, mu);
    return CLS_OK;
}

/* Jacobi sweep k of a step: pos (q^k) into pos2 (which holds q^(k-1),
 * read only under a Chebyshev weight), then the two swap: the state is
 * always in g->pos between launches, the iterate before it in g->pos2.
 * Only the buffers and the weight change between sweeps. */
static int springs_jacobi_launch(springs_gpu *g, const springs_params *p, int k, double *w,
                                 cls_error *err)
{
    *w = springs_chebyshev_weight(p, k, *w);
    cl_float cw = (cl_float)*w;
    PHYS_ARG(g->k_jac, 0, g->pos);
    PHYS_ARG(g->k_jac, 1, g->pos2);
    PHYS_ARG(g->k_jac, 7, cw);
    size_t per = g->jls / (size_t)g->team;
    size_t groups = ((size_t)g->np + per - 1) / per;
    int rc = phys_launch(g->ctx, g->k_jac, "springs_jacobi", groups * g->jls, g->jls, NULL, err);
    if (rc)
        return rc;
    cl_mem t = g->pos;
    g->pos = g->pos2;
    g->pos2 = t;
    return CLS_OK;
}

static int springs_run_mode(springs_gpu *g, springs_launch mode, const springs_params *p,
                            int64_t nsteps, cls_error *err)
{
    /* the Jacobi projection has its own plan, made at creation */
    if ((p->projection == SPRINGS_PROJECT_JACOBI) != (mode == SPRINGS_LAUNCH_JACOBI))
        return cls_fail(err, CLS_EUSAGE, "springs: the %s projection does not run on the %s plan",
                        springs_projection_name(p->projection), springs_launch_name(mode));
    cl_float c2 = (cl_float)(1.0 - p->d);
    cl_float4 adt2 = {{0.0f, (cl_float)(-p->gravity * p->dt * p->dt), 0.0f, 0.0f}};
    cl_float S = (cl_float)p->S, mu = (cl_float)p->friction, alpha = (cl_float)p->shape;
    cl_int n = g->np, iters = p->iterations, ncol = 0;
    int rc = springs_upload_colliders(g, p, &ncol, err);
    if (rc)
        return rc;
    if (mode == SPRINGS_LAUNCH_WORKGROUP) {
        cl_int nc = g->ncolors;
        PHYS_ARG(g->k_wg, 0, g->pos);
        PHYS_ARG(g->k_wg, 1, g->prev);
        PHYS_ARG(g->k_wg, 2, n);
        PHYS_ARG(g->k_wg, 3, g->spr);
        PHYS_ARG(g->k_wg, 4, g->coff);
        PHYS_ARG(g->k_wg, 5, nc);
        PHYS_ARG(g->k_wg, 6, iters);
        PHYS_ARG(g->k_wg, 8, c2);
        PHYS_ARG(g->k_wg, 9, adt2);
        PHYS_ARG(g->k_wg, 10, S);
        PHYS_ARG(g->k_wg, 11, g->col);
        PHYS_ARG(g->k_wg, 12, ncol);
        PHYS_ARG(g->k_wg, 13, mu);
        PHYS_ARG(g->k_wg, 14, g->rest);
        PHYS_ARG(g->k_wg, 15, g->shape);
        PHYS_ARG(g->k_wg, 16, alpha);
        cl_int sblock = (cl_int)g->ls;
        PHYS_ARG(g->k_wg, 17, sblock);
        cl_int st = clSetKernelArg(g->k_wg, 18, 16 * g->wg_size, NULL);
        if (st != CL_SUCCESS)
            return cls_fail(err, CLS_EOTHER, "clSetKernelArg(springs_step_wg, 18): %s",
                            ocl_errstr(st));
        /* a few hundred steps per launch keeps a launch well under a second
         * on slow devices while hiding the launch cost */
        PHYS_ARG(g->k_wg, 19, g->bad);
        /* a job that may be stopped runs launches it waits for, each of
         * about PHYSICS_POLL_S (the step count per launch adapts), so a
         * stop is met within that; the queued launches of a long run took
         * 48 s to drain on the sanitized build's PoCL */
        const int paced = physics_stop_armed();
        int64_t cap = paced ? 8 : 250;
        for (int64_t done = 0; done < nsteps;) {
            if (physics_should_stop())
                return cls_fail(err, CLS_EOTHER, "stopped at step %lld",
                                (long long)(g->step + done + 1));
            cl_int chunk = (cl_int)(nsteps - done > cap ? cap : nsteps - done);
            double t0 = paced ? cls_now() : 0.0;
            cl_int first = springs_step_arg(g->step + done + 1);
            PHYS_ARG(g->k_wg, 7, chunk);
            PHYS_ARG(g->k_wg, 20, first);
            if ((rc = phys_launch(g->ctx, g->k_wg, "springs_step_wg", g->wg_size, g->wg_size, NULL,
                                  err)))
                return rc;
            done += chunk;
            if (paced) {
                if ((rc = phys_finish(g->ctx, "springs", err)))
                    return rc;
                double dt = cls_now() - t0;
                if (dt < 0.25 * PHYSICS_POLL_S && cap < 250)
                    cap *= 2;
                else if (dt > PHYSICS_POLL_S && cap > 1)
                    cap /= 2;
            }
        }
        if (nsteps > 0 && (rc = springs_check_launch(g, g->step + nsteps, err)))
            return rc;
        g->step += nsteps;
        return phys_finish(g->ctx, "springs", err);
    }
    /* the colour and Jacobi plans: launches per step; a Jacobi sweep swaps
     * pos and pos2, so the kernels reading positions take g->pos at each
     * launch */
    PHYS_ARG(g->k_verlet, 1, g->prev);
    PHYS_ARG(g->k_verlet, 2, n);
    PHYS_ARG(g->k_verlet, 3, c2);
    PHYS_ARG(g->k_verlet, 4, adt2);
    PHYS_ARG(g->k_verlet, 5, g->bad);
    PHYS_ARG(g->k_color, 0, g->pos);
    PHYS_ARG(g->k_color, 1, g->spr);
    PHYS_ARG(g->k_color, 4, S);
    PHYS_ARG(g->k_collide, 1, g->prev);
    PHYS_ARG(g->k_collide, 2, n);
    PHYS_ARG(g->k_collide, 3, g->col);
    PHYS_ARG(g->k_collide, 4, ncol);
    PHYS_ARG(g->k_collide, 5, mu);
    /* without shape matching the colliders follow the projection directly:
     * the Jacobi kernel applies them (one launch less per sweep) */
    const int fused = mode == SPRINGS_LAUNCH_JACOBI && !(alpha > 0.0f);
    if (mode == SPRINGS_LAUNCH_JACOBI && (rc = springs_jacobi_args(g, p, fused ? ncol : 0, err)))
        return rc;
    const int paced_c = physics_stop_armed();
    int64_t every = 1, next_poll = 1;
    double t_poll = cls_now();
    for (int64_t step = 0; step < nsteps; step++) {
        /* a job that may be stopped drains the queue and polls every
         * `every` steps, about PHYSICS_POLL_S of work (the launches are
         * queued ahead, a long run queued nothing else) */
        if (paced_c && step == next_poll) {
            if ((rc = phys_finish(g->ctx, "springs", err)))
                return rc;
            if (physics_should_stop())
                return cls_fail(err, CLS_EOTHER, "stopped at step %lld",
                                (long long)(g->step + step + 1));
            double dt = cls_now() - t_poll;
            if (dt < 0.25 * PHYSICS_POLL_S && every < 64)
                every *= 2;
            else if (dt > PHYSICS_POLL_S && every > 1)
                every /= 2;
            next_poll = step + every;
            t_poll = cls_now();
        }
        cl_int si = springs_step_arg(g->step + step + 1);
        PHYS_ARG(g->k_verlet, 0, g->pos);
        PHYS_ARG(g->k_verlet, 6, si);
        if ((rc = phys_launch(g->ctx, g->k_verlet, "springs_verlet", (size_t)g->np, g->ls, NULL,
                              err)))
            return rc;
        double cw = 1.0;
        for (int it = 0; it < p->iterations; it++) {
            if (mode == SPRINGS_LAUNCH_JACOBI && (rc = springs_jacobi_launch(g, p, it, &cw, err)))
                return rc;
            for (int c = 0; mode == SPRINGS_LAUNCH_COLOR && c < g->ncolors; c++) {
                cl_int first = (cl_int)g->color_off[c];
                cl_int count = (cl_int)(g->color_off[c + 1] - g->color_off[c]);
                PHYS_ARG(g->k_color, 2, first);
                PHYS_ARG(g->k_color, 3, count);
                if ((rc = phys_launch(g->ctx, g->k_color, "springs_project_color", (size_t)count,
                                      g->ls, NULL, err)))
                    return rc;
            }
            if (alpha > 0.0f && (rc = springs_shape_launches(g, alpha, err)))
                return rc;
            PHYS_ARG(g->k_collide, 0, g->pos);
            if (ncol && !fused &&
                (rc = phys_launch(g->ctx, g->k_collide, "springs_collide", (size_t)g->np, g->ls,
                                  NULL, err)))
                return rc;
        }
    }
    if (nsteps > 0 && (rc = springs_check_launch(g, g->step + nsteps, err)))
        return rc;
    g->step += nsteps;
    return phys_finish(g->ctx, "springs", err);
}

/* The state a trial run changes: positions, previous positions and the
 * shape-matching quaternion. */
typedef struct springs_saved {
    float *pos, *prev;
    float shape[20];
    int64_t step;
} springs_saved;

static int springs_save(springs_gpu *g, springs_saved *sv, int restore, cls_error *err)
{
    size_t bytes = 16 * (size_t)g->np;
    if (restore) {
        /* a trial that blew up must not leave its step in the flag */
        cl_int none = INT_MAX;
        int rc = phys_write(g->ctx, g->pos, bytes, sv->pos, "positions", err);
        if (!rc)
            rc = phys_write(g->ctx, g->prev, bytes, sv->prev, "previous positions", err);
        if (!rc)
            rc = phys_write(g->ctx, g->shape, sizeof sv->shape, sv->shape, "shape", err);
        if (!rc)
            rc = phys_write(g->ctx, g->bad, sizeof none, &none, "non-finite flag", err);
        g->step = sv->step;
        return rc;
    }
    sv->step = g->step;
    sv->pos = malloc(bytes ? bytes : 16);
    sv->prev = malloc(bytes ? bytes : 16);
    if (!sv->pos || !sv->prev)
        return springs_oom(err);
    int rc = phys_read(g->ctx, g->pos, bytes, sv->pos, "positions", err);
    if (!rc)
        rc = phys_read(g->ctx, g->prev, bytes, sv->prev, "previous positions", err);
    if (!rc)
        rc = phys_read(g->ctx, g->shape, sizeof sv->shape, sv->shape, "shape", err);
    return rc;
}

/* AUTO: time a few steps of each plan from the current state, restore it,
 * keep the faster plan. */
static int springs_choose(springs_gpu *g, const springs_params *p, cls_error *err)
{
    springs_saved sv;
    memset(&sv, 0, sizeof sv);
    int rc = springs_save(g, &sv, 0, err);
    double t[2] = {0, 0};
    springs_launch modes[2] = {SPRINGS_LAUNCH_COLOR, SPRINGS_LAUNCH_WORKGROUP};
    /* per plan: a warm-up step, then batches of 2, 4, 8, ... steps until one
     * lasts 20 ms or 64 steps; the best time per step of the batches counts
     * (one short batch is too noisy on a shared CPU device) */
    for (int m = 0; m < 2 && !rc; m++) {
        if ((rc = springs_run_mode(g, modes[m], p, 1, err))) /* warm-up */
            break;
        t[m] = INFINITY;
        for (int64_t k = 2; k <= 64 && !rc; k *= 2) {
            double t0 = cls_now();
            rc = springs_run_mode(g, modes[m], p, k, err);
            double dt = cls_now() - t0;
            if (dt / (double)k < t[m])
                t[m] = dt / (double)k;
            if (dt > 0.02)
                break;
        }
    }
    if (!rc)
        rc = springs_save(g, &sv, 1, err);
    free(sv.pos);
    free(sv.prev);
    if (!rc)
        g->mode = t[1] < t[0] ? SPRINGS_LAUNCH_WORKGROUP : SPRINGS_LAUNCH_COLOR;
    return rc;
}

/* After a run: CLS_EBREAKDOWN naming the first step whose end state was
 * not finite and a particle that is not finite now. */
static int springs_check_finite(springs_gpu *g, cls_error *err)
{
    cl_int bad = INT_MAX;
    int rc = phys_read(g->ctx, g->bad, sizeof bad, &bad, "springs non-finite flag", err);
    if (rc || bad == INT_MAX)
        return rc;
    size_t n = (size_t)g->np;
    float *p = malloc(16 * (n ? n : 1));
    if (!p)
        return springs_oom(err);
    int64_t particle = -1;
    if (!phys_read(g->ctx, g->pos, 16 * n, p, "springs state", err))
        for (size_t i = 0; i < n && particle < 0; i++)
            if (!isfinite(p[4 * i]) || !isfinite(p[4 * i + 1]) || !isfinite(p[4 * i + 2]))
                particle = (int64_t)i;
    free(p);
    if (particle >= 0)
        return cls_fail(err, CLS_EBREAKDOWN,
                        "the state is not finite from step %d on (particle %lld has a "
                        "non-finite position): lower --dt",
                        (int)bad, (long long)particle);
    return cls_fail(err, CLS_EBREAKDOWN, "the state is not finite from step %d on: lower --dt",
                    (int)bad);
}

int springs_gpu_run(springs_gpu *g, const springs_params *p, int64_t nsteps, cls_error *err)
{
    if (g->mode == SPRINGS_LAUNCH_AUTO) {
        int rc = springs_choose(g, p, err);
        if (rc)
            return rc;
    }
    int rc = springs_run_mode(g, g->mode, p, nsteps, err);
    return rc ? rc : springs_check_finite(g, err);
}

int springs_gpu_warm(springs_gpu *g, const springs_params *p, cls_error *err)
{
    if (g->mode == SPRINGS_LAUNCH_AUTO)
        return springs_gpu_run(g, p, 0, err); /* the choice warms both plans */
    /* one step of the plan (a runtime may compile a kernel for its work-group
     * size at the first launch), undone */
    springs_saved sv;
    memset(&sv, 0, sizeof sv);
    int rc = springs_save(g, &sv, 0, err);
    if (!rc)
        rc = springs_run_mode(g, g->mode, p, 1, err);
    if (!rc)
        rc = springs_save(g, &sv, 1, err);
    free(sv.pos);
    free(sv.prev);
    return rc;
}

int springs_gpu_download(springs_gpu *g, springs_model *s, cls_error *err)
{
    size_t bytes = 16 * (size_t)(g->np ? g->np : 1);
    float *pos = malloc(bytes), *prev = malloc(bytes);
    float shape[20];
    if (!pos || !prev) {
        free(pos);
        free(prev);
        return springs_oom(err);
    }
    int rc = phys_read(g->ctx, g->pos, 16 * (size_t)g->np, pos, "positions", err);
    if (!rc)
        rc = phys_read(g->ctx, g->prev, 16 * (size_t)g->np, prev, "previous positions", err);
    if (!rc)
        rc = phys_read(g->ctx, g->shape, sizeof shape, shape, "shape", err);
    if (!rc) {
        for (int64_t i = 0; i < s->np && i < g->np; i++)
            for (int c = 0; c < 3; c++) {
                s->x[3 * i + c] = pos[4 * i + c];
                s->xprev[3 * i + c] = prev[4 * i + c];
            }
        for (int c = 0; c < 4; c++)
            s->q[c] = shape[16 + c];
    }
    free(pos);
    free(prev);
    return rc;
}
