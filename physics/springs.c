/*
 * springs.c: the mass-spring host driver (model in springs.h, kernels in
 * kernels/springs.cl).
 *
 * Building a body: particles at the mesh vertices; springs by proximity
 * through a uniform cell list (cells at least the largest spring reach
 * wide, so only the 27 cells around a particle can hold its partners; the
 * cell size grows when the grid would have more cells than 4 per particle)
 * or from the distinct triangle edges; then the greedy edge colouring: each
 * spring, in (i, j) order, takes the smallest colour free at both ends,
 * found in a per-particle bit set of 2 max_degree - 1 bits, which the greedy
 * rule never exceeds (each end blocks at most max_degree - 1 colours).
 *
 * On the device a particle is a float4 (x, y, z, w) and a spring an int4
 * (i, j, rest bits, k bits). Two launch plans, both race-free and both equal
 * to the sequential sweep in colour order:
 *   - color: per step one Verlet launch, then per sweep one launch per
 *     colour (and one floor launch); launch overhead times the number of
 *     colours, so it suits large systems with few colours;
 *   - workgroup: one work-group of up to 1024 work-items runs whole steps,
 *     looping over the colours with a barrier after each; no launch per
 *     colour, one compute unit only, so it suits small dense systems (the
 *     thesis's models: hundreds of colours of a few thousand springs).
 * AUTO times a few batches of steps of each on the body at hand (from the
 * current state, restored afterwards) and keeps the faster.
 *
 * The CPU reference does the same sweep sequentially in double precision.
 */
#include "springs.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "job.h"

/* springs a body may have: 24 bytes each on the host, 16 on the device */
#define SPRINGS_MAX ((int64_t)200 * 1000 * 1000)

void springs_params_default(springs_params *p)
{
    p->S = 0.5;
    p->d = 0.01;
    p->dt = 0.01;
    p->gravity = 9.81;
    p->iterations = 1;
    p->floor_on = 0;
    p->floor_y = 0.0;
}

void springs_model_init(springs_model *s)
{
    memset(s, 0, sizeof *s);
}

void springs_model_free(springs_model *s)
{
    free(s->x);
    free(s->xprev);
    free(s->w);
    free(s->ij);
    free(s->rest);
    free(s->k);
    free(s->color_off);
    springs_model_init(s);
}

static int springs_oom(cls_error *err)
{
    return cls_fail(err, CLS_EOTHER, "springs: out of memory");
}

/* Particles at the mesh vertices, at rest, all free with unit inverse mass. */
static int springs_particles(const mesh *m, springs_model *s, cls_error *err)
{
    springs_model_init(s);
    if (m->nverts > INT32_MAX)
        return cls_fail(err, CLS_EINPUT, "springs: %lld particles is more than %d",
                        (long long)m->nverts, INT32_MAX);
    size_t n = (size_t)(m->nverts ? m->nverts : 1);
    s->np = m->nverts;
    s->x = malloc(3 * n * sizeof *s->x);
    s->xprev = malloc(3 * n * sizeof *s->xprev);
    s->w = malloc(n * sizeof *s->w);
    if (!s->x || !s->xprev || !s->w) {
        springs_model_free(s);
        return springs_oom(err);
    }
    memcpy(s->x, m->v, 3 * (size_t)s->np * sizeof *s->x);
    memcpy(s->xprev, m->v, 3 * (size_t)s->np * sizeof *s->x);
    for (int64_t i = 0; i < s->np; i++)
        s->w[i] = 1.0;
    return CLS_OK;
}

static double springs_vertex_k(const mesh *m, int64_t i)
{
    return m->color ? (double)m->color[3 * i] : 1.0;
}

/* Appends spring (i, j) with the given rest length and stiffness. */
static int springs_push(springs_model *s, int64_t *cap, int32_t i, int32_t j, double rest,
                        double k, cls_error *err)
{
    if (s->ns == *cap) {
        if (s->ns >= SPRINGS_MAX)
            return cls_fail(err, CLS_EUSAGE,
                            "more than %lld springs; lower --max-dist",
                            (long long)SPRINGS_MAX);
        int64_t nc = *cap ? 2 * *cap : 1024;
        if (nc > SPRINGS_MAX)
            nc = SPRINGS_MAX;
        int32_t *ij = realloc(s->ij, 2 * (size_t)nc * sizeof *ij);
        if (ij)
            s->ij = ij;
        double *r = realloc(s->rest, (size_t)nc * sizeof *r);
        if (r)
            s->rest = r;
        double *kk = realloc(s->k, (size_t)nc * sizeof *kk);
        if (kk)
            s->k = kk;
        if (!ij || !r || !kk)
            return springs_oom(err);
        *cap = nc;
    }
    s->ij[2 * s->ns] = i;
    s->ij[2 * s->ns + 1] = j;
    s->rest[s->ns] = rest;
    s->k[s->ns] = k;
    s->ns++;
    return CLS_OK;
}

static int springs_cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int springs_from_mesh_proximity(const mesh *m, double min_dist, double max_dist,
                                springs_model *s, cls_error *err)
{
    if (!(min_dist >= 0.0) || !(max_dist >= 0.0) || !isfinite(min_dist) || !isfinite(max_dist))
        return cls_fail(err, CLS_EUSAGE, "min and max distance must be finite and >= 0");
    int rc = springs_particles(m, s, err);
    if (rc)
        return rc;
    int64_t n = s->np;
    double kmax = 0.0;
    for (int64_t i = 0; i < n; i++)
        kmax = fmax(kmax, springs_vertex_k(m, i));
    double reach = max_dist * kmax; /* no spring is longer */
    if (n < 2 || !(reach > 0.0) || reach < min_dist)
        return CLS_OK;

    /* the cell list */
    double lo[3], hi[3];
    for (int c = 0; c < 3; c++)
        lo[c] = hi[c] = m->v[c];
    for (int64_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            lo[c] = fmin(lo[c], m->v[3 * i + c]);
            hi[c] = fmax(hi[c], m->v[3 * i + c]);
        }
    double cell = reach;
    int64_t dim[3];
    for (;;) {
        double cells = 1.0;
        for (int c = 0; c < 3; c++) {
            double dd = floor((hi[c] - lo[c]) / cell) + 1.0;
            dim[c] = dd > 1e9 ? (int64_t)1e9 : (int64_t)dd;
            cells *= dd;
        }
        if (cells <= 4.0 * (double)n + 64.0)
            break;
        cell *= 2.0;
    }
    int64_t ncell = dim[0] * dim[1] * dim[2];
    int64_t *start = calloc((size_t)ncell + 1, sizeof *start);
    int64_t *cid = malloc((size_t)n * sizeof *cid);
    int32_t *order = malloc((size_t)n * sizeof *order);
    int32_t *nbr = NULL;
    int64_t nbr_cap = 0, scap = 0;
    if (!start || !cid || !order) {
        rc = springs_oom(err);
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t q[3];
        for (int c = 0; c < 3; c++) {
            q[c] = (int64_t)((m->v[3 * i + c] - lo[c]) / cell);
            if (q[c] < 0)
                q[c] = 0;
            if (q[c] >= dim[c])
                q[c] = dim[c] - 1;
        }
        cid[i] = (q[2] * dim[1] + q[1]) * dim[0] + q[0];
        start[cid[i] + 1]++;
    }
    for (int64_t c = 0; c < ncell; c++)
        start[c + 1] += start[c];
    {
        int64_t *fill = malloc((size_t)ncell * sizeof *fill);
        if (!fill) {
            rc = springs_oom(err);
            goto done;
        }
        memcpy(fill, start, (size_t)ncell * sizeof *fill);
        for (int64_t i = 0; i < n; i++)
            order[fill[cid[i]]++] = (int32_t)i;
        free(fill);
    }

    for (int64_t i = 0; i < n; i++) {
        const double *xi = m->v + 3 * i;
        double ki = springs_vertex_k(m, i);
        int64_t c0 = cid[i];
        int64_t qx = c0 % dim[0], qy = (c0 / dim[0]) % dim[1], qz = c0 / (dim[0] * dim[1]);
        int64_t nn = 0;
        for (int64_t z = qz - 1; z <= qz + 1; z++) {
            if (z < 0 || z >= dim[2])
                continue;
            for (int64_t y = qy - 1; y <= qy + 1; y++) {
                if (y < 0 || y >= dim[1])
                    continue;
                for (int64_t x = qx - 1; x <= qx + 1; x++) {
                    if (x < 0 || x >= dim[0])
                        continue;
                    int64_t c = (z * dim[1] + y) * dim[0] + x;
                    for (int64_t t = start[c]; t < start[c + 1]; t++) {
                        int32_t j = order[t];
                        if (j <= i)
                            continue;
                        const double *xj = m->v + 3 * (int64_t)j;
                        double dx = xj[0] - xi[0], dy = xj[1] - xi[1], dz = xj[2] - xi[2];
                        double d = sqrt(dx * dx + dy * dy + dz * dz);
                        if (d < min_dist || d > max_dist * (ki + springs_vertex_k(m, j)) * 0.5)
                            continue;
                        if (nn == nbr_cap) {
                            int64_t nc = nbr_cap ? 2 * nbr_cap : 256;
                            int32_t *q = realloc(nbr, (size_t)nc * sizeof *q);
                            if (!q) {
                                rc = springs_oom(err);
                                goto done;
                            }
                            nbr = q;
                            nbr_cap = nc;
                        }
                        nbr[nn++] = j;
                    }
                }
            }
        }
        qsort(nbr, (size_t)nn, sizeof *nbr, springs_cmp_i32);
        for (int64_t t = 0; t < nn; t++) {
            const double *xj = m->v + 3 * (int64_t)nbr[t];
            double dx = xj[0] - xi[0], dy = xj[1] - xi[1], dz = xj[2] - xi[2];
            double d = sqrt(dx * dx + dy * dy + dz * dz);
            rc = springs_push(s, &scap, (int32_t)i, nbr[t], d,
                              0.5 * (ki + springs_vertex_k(m, nbr[t])), err);
            if (rc)
                goto done;
        }
    }
done:
    free(start);
    free(cid);
    free(order);
    free(nbr);
    if (rc)
        springs_model_free(s);
    return rc;
}

static int springs_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int springs_from_mesh_edges(const mesh *m, double min_dist, springs_model *s, cls_error *err)
{
    if (!(min_dist >= 0.0) || !isfinite(min_dist))
        return cls_fail(err, CLS_EUSAGE, "min distance must be finite and >= 0");
    int rc = springs_particles(m, s, err);
    if (rc)
        return rc;
    size_t ne = 3 * (size_t)m->nfaces;
    uint64_t *e = malloc((ne ? ne : 1) * sizeof *e);
    if (!e) {
        springs_model_free(s);
        return springs_oom(err);
    }
    size_t k = 0;
    for (int64_t t = 0; t < m->nfaces; t++)
        for (int c = 0; c < 3; c++) {
            uint32_t a = (uint32_t)m->tri[3 * t + c], b = (uint32_t)m->tri[3 * t + (c + 1) % 3];
            if (a == b)
                continue;
            if (a > b) {
                uint32_t tmp = a;
                a = b;
                b = tmp;
            }
            e[k++] = (uint64_t)a << 32 | b;
        }
    qsort(e, k, sizeof *e, springs_cmp_u64);
    int64_t scap = 0;
    for (size_t t = 0; t < k; t++) {
        if (t > 0 && e[t] == e[t - 1])
            continue;
        int32_t i = (int32_t)(e[t] >> 32), j = (int32_t)(e[t] & 0xffffffffu);
        const double *xi = m->v + 3 * (int64_t)i, *xj = m->v + 3 * (int64_t)j;
        double dx = xj[0] - xi[0], dy = xj[1] - xi[1], dz = xj[2] - xi[2];
        double d = sqrt(dx * dx + dy * dy + dz * dz);
        if (d < min_dist)
            continue;
        rc = springs_push(s, &scap, i, j, d,
                          0.5 * (springs_vertex_k(m, i) + springs_vertex_k(m, j)), err);
        if (rc)
            break;
    }
    free(e);
    if (rc)
        springs_model_free(s);
    return rc;
}

int springs_grid_mesh(int n, mesh *m, cls_error *err)
{
    mesh_init(m);
    if (n < 1 || n > 46000)
        return cls_fail(err, CLS_EUSAGE, "grid size %d is outside [1, 46000]", n);
    int64_t nv = (int64_t)n * n, nf = 2 * (int64_t)(n - 1) * (n - 1);
    m->v = malloc(3 * (size_t)nv * sizeof *m->v);
    m->tri = malloc(3 * (size_t)(nf ? nf : 1) * sizeof *m->tri);
    if (!m->v || !m->tri) {
        mesh_free(m);
        return springs_oom(err);
    }
    m->nverts = nv;
    m->nfaces = nf;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            double *x = m->v + 3 * ((int64_t)r * n + c);
            x[0] = c;
            x[1] = 0.0;
            x[2] = r;
        }
    int64_t t = 0;
    for (int r = 0; r + 1 < n; r++)
        for (int c = 0; c + 1 < n; c++) {
            int32_t a = r * n + c, b = a + 1, d = a + n, e = d + 1;
            int32_t *q = m->tri + 3 * t;
            q[0] = a, q[1] = d, q[2] = b, q[3] = b, q[4] = d, q[5] = e;
            t += 2;
        }
    return CLS_OK;
}

int springs_color(springs_model *s, cls_error *err)
{
    free(s->color_off);
    s->color_off = NULL;
    s->ncolors = 0;
    s->max_degree = 0;
    int64_t np = s->np, ns = s->ns;
    int32_t *deg = calloc((size_t)(np ? np : 1), sizeof *deg);
    if (!deg)
        return springs_oom(err);
    for (int64_t t = 0; t < 2 * ns; t++)
        deg[s->ij[t]]++;
    int maxd = 0;
    for (int64_t i = 0; i < np; i++)
        if (deg[i] > maxd)
            maxd = deg[i];
    free(deg);
    s->max_degree = maxd;
    s->color_off = calloc(2, sizeof *s->color_off);
    if (!s->color_off)
        return springs_oom(err);
    if (ns == 0)
        return CLS_OK;

    /* one bit per colour per particle: greedy needs at most 2 maxd - 1 */
    int64_t words = (2 * (int64_t)maxd - 1 + 63) / 64;
    if ((double)np * (double)words * 8.0 > 2.0 * 1024 * 1024 * 1024)
        return cls_fail(err, CLS_EUSAGE,
                        "a particle with %d springs makes the colouring too large; "
                        "lower --max-dist", maxd);
    uint64_t *used = calloc((size_t)np * (size_t)words, sizeof *used);
    int32_t *col = malloc((size_t)ns * sizeof *col);
    if (!used || !col) {
        free(used);
        free(col);
        return springs_oom(err);
    }
    int ncol = 0;
    for (int64_t t = 0; t < ns; t++) {
        uint64_t *ua = used + (size_t)s->ij[2 * t] * (size_t)words;
        uint64_t *ub = used + (size_t)s->ij[2 * t + 1] * (size_t)words;
        int c = -1;
        for (int64_t w = 0; w < words; w++) {
            uint64_t freeb = ~(ua[w] | ub[w]);
            if (freeb) {
                c = (int)(w * 64 + __builtin_ctzll(freeb));
                break;
            }
        }
        /* cannot happen: each end blocks at most maxd - 1 colours */
        if (c < 0 || c >= 2 * maxd - 1) {
            free(used);
            free(col);
            return cls_fail(err, CLS_EOTHER, "springs: colouring overflow (bug)");
        }
        ua[c / 64] |= 1ull << (c % 64);
        ub[c / 64] |= 1ull << (c % 64);
        col[t] = c;
        if (c + 1 > ncol)
            ncol = c + 1;
    }
    free(used);

    /* stable counting sort by colour */
    int64_t *off = calloc((size_t)ncol + 1, sizeof *off);
    int32_t *ij = malloc(2 * (size_t)ns * sizeof *ij);
    double *rest = malloc((size_t)ns * sizeof *rest), *kk = malloc((size_t)ns * sizeof *kk);
    if (!off || !ij || !rest || !kk) {
        free(off);
        free(ij);
        free(rest);
        free(kk);
        free(col);
        return springs_oom(err);
    }
    for (int64_t t = 0; t < ns; t++)
        off[col[t] + 1]++;
    for (int c = 0; c < ncol; c++)
        off[c + 1] += off[c];
    int64_t *fill = malloc((size_t)ncol * sizeof *fill);
    if (!fill) {
        free(off);
        free(ij);
        free(rest);
        free(kk);
        free(col);
        return springs_oom(err);
    }
    memcpy(fill, off, (size_t)ncol * sizeof *fill);
    for (int64_t t = 0; t < ns; t++) {
        int64_t d = fill[col[t]]++;
        ij[2 * d] = s->ij[2 * t];
        ij[2 * d + 1] = s->ij[2 * t + 1];
        rest[d] = s->rest[t];
        kk[d] = s->k[t];
    }
    free(fill);
    free(col);
    free(s->ij);
    free(s->rest);
    free(s->k);
    free(s->color_off);
    s->ij = ij;
    s->rest = rest;
    s->k = kk;
    s->color_off = off;
    s->ncolors = ncol;
    return CLS_OK;
}

int springs_pin(springs_model *s, int64_t i, cls_error *err)
{
    if (i < 0 || i >= s->np)
        return cls_fail(err, CLS_EUSAGE, "pinned particle %lld is outside [0, %lld)",
                        (long long)i, (long long)s->np);
    s->w[i] = 0.0;
    return CLS_OK;
}

/* ---- CPU reference --------------------------------------------------------- */

void springs_step_ref(springs_model *s, const springs_params *p)
{
    /* (2-d) x - (1-d) x_prev = x + (1-d)(x - x_prev), the form the kernel
     * uses (see springs.cl) */
    double c2 = 1.0 - p->d;
    double ay = -p->gravity * p->dt * p->dt;
    for (int64_t i = 0; i < s->np; i++) {
        if (s->w[i] == 0.0)
            continue;
        double *x = s->x + 3 * i, *q = s->xprev + 3 * i;
        for (int c = 0; c < 3; c++) {
            double nx = x[c] + c2 * (x[c] - q[c]) + (c == 1 ? ay : 0.0);
            q[c] = x[c];
            x[c] = nx;
        }
    }
    for (int it = 0; it < p->iterations; it++) {
        for (int64_t t = 0; t < s->ns; t++) {
            int32_t i = s->ij[2 * t], j = s->ij[2 * t + 1];
            double *xi = s->x + 3 * (int64_t)i, *xj = s->x + 3 * (int64_t)j;
            double wi = s->w[i], wj = s->w[j], wsum = wi + wj;
            double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
            double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            if (!(len > 0.0) || !(wsum > 0.0))
                continue;
            double diff = (len - s->rest[t]) / len;
            double f = p->S * s->k[t] * diff;
            for (int c = 0; c < 3; c++) {
                double corr = f * d[c];
                xi[c] += corr * (wi / wsum);
                xj[c] -= corr * (wj / wsum);
            }
        }
        if (p->floor_on)
            for (int64_t i = 0; i < s->np; i++)
                if (s->w[i] != 0.0 && s->x[3 * i + 1] < p->floor_y)
                    s->x[3 * i + 1] = p->floor_y;
    }
}

/* ---- device ---------------------------------------------------------------- */

struct springs_gpu {
    ocl_ctx *ctx;
    cl_program prog;
    cl_kernel k_verlet, k_color, k_floor, k_wg;
    cl_mem pos, prev, spr, coff;
    int np, ns, ncolors;
    int64_t *color_off;
    springs_launch mode;
    size_t wg_size; /* workgroup plan */
    size_t ls;      /* local size of the per-particle and per-colour kernels */
};

const char *springs_launch_name(springs_launch l)
{
    switch (l) {
    case SPRINGS_LAUNCH_COLOR:
        return "color";
    case SPRINGS_LAUNCH_WORKGROUP:
        return "workgroup";
    default:
        return "auto";
    }
}

springs_launch springs_gpu_mode(const springs_gpu *g)
{
    return g->mode;
}

size_t springs_gpu_wg_size(const springs_gpu *g)
{
    return g->wg_size;
}

void springs_gpu_free(springs_gpu *g)
{
    if (!g)
        return;
    cl_kernel ks[] = {g->k_verlet, g->k_color, g->k_floor, g->k_wg};
    for (size_t i = 0; i < 4; i++)
        if (ks[i])
            clReleaseKernel(ks[i]);
    cl_mem ms[] = {g->pos, g->prev, g->spr, g->coff};
    for (size_t i = 0; i < 4; i++)
        if (ms[i])
            clReleaseMemObject(ms[i]);
    if (g->prog)
        clReleaseProgram(g->prog);
    free(g->color_off);
    free(g);
}

static int springs_buffer(springs_gpu *g, cl_mem *m, size_t bytes, void *host, const char *what,
                          cls_error *err)
{
    cl_int st;
    *m = clCreateBuffer(g->ctx->context, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0),
                        bytes ? bytes : 16, host, &st);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clCreateBuffer(%s, %zu bytes) failed: %s (%d)", what,
                        bytes, ocl_errstr(st), (int)st);
    return CLS_OK;
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

int springs_gpu_create(ocl_ctx *ctx, const springs_model *s, springs_launch mode,
                       springs_gpu **out, cls_error *err)
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
    g->ls = 128;
    int rc;
    const char *src[] = {"springs.cl"};
    if ((rc = ocl_build_program(ctx, src, 1, "-cl-std=CL1.2", &g->prog, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_verlet", &g->k_verlet, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_project_color", &g->k_color, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_floor", &g->k_floor, err)) ||
        (rc = ocl_create_kernel(g->prog, "springs_step_wg", &g->k_wg, err)))
        goto fail;
    size_t kmax = 0;
    cl_int st = clGetKernelWorkGroupInfo(g->k_wg, ctx->dev.id, CL_KERNEL_WORK_GROUP_SIZE,
                                         sizeof kmax, &kmax, NULL);
    if (st != CL_SUCCESS) {
        rc = cls_fail(err, CLS_EOTHER, "clGetKernelWorkGroupInfo failed: %s (%d)",
                      ocl_errstr(st), (int)st);
        goto fail;
    }
    g->wg_size = 1024;
    if (g->wg_size > kmax)
        g->wg_size = kmax;
    if (g->wg_size > ctx->dev.max_work_group)
        g->wg_size = ctx->dev.max_work_group;
    size_t lsmax = 0;
    clGetKernelWorkGroupInfo(g->k_color, ctx->dev.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof lsmax,
                             &lsmax, NULL);
    while (g->ls > 1 && lsmax && g->ls > lsmax)
        g->ls /= 2;

    size_t np = (size_t)s->np;
    float *pos = malloc(4 * (np ? np : 1) * sizeof *pos);
    float *prev = malloc(4 * (np ? np : 1) * sizeof *prev);
    cl_int *spr = malloc(4 * (size_t)(s->ns ? s->ns : 1) * sizeof *spr);
    cl_int *coff = malloc(((size_t)s->ncolors + 1) * sizeof *coff);
    g->color_off = malloc(((size_t)s->ncolors + 1) * sizeof *g->color_off);
    if (!pos || !prev || !spr || !coff || !g->color_off) {
        free(pos);
        free(prev);
        free(spr);
        free(coff);
        rc = springs_oom(err);
        goto fail;
    }
    springs_pack(s, pos, prev);
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
    rc = springs_buffer(g, &g->pos, 16 * np, pos, "positions", err);
    if (!rc)
        rc = springs_buffer(g, &g->prev, 16 * np, prev, "previous positions", err);
    if (!rc)
        rc = springs_buffer(g, &g->spr, 16 * (size_t)s->ns, s->ns ? spr : NULL, "springs", err);
    if (!rc)
        rc = springs_buffer(g, &g->coff, sizeof(cl_int) * ((size_t)s->ncolors + 1), coff,
                            "colour offsets", err);
    free(pos);
    free(prev);
    free(spr);
    free(coff);
    if (rc)
        goto fail;
    *out = g;
    return CLS_OK;
fail:
    springs_gpu_free(g);
    return rc;
}

static int springs_launch1(springs_gpu *g, cl_kernel k, const char *name, size_t n, size_t ls,
                           cls_error *err)
{
    if (n == 0)
        return CLS_OK;
    size_t global = (n + ls - 1) / ls * ls;
    cl_int st = clEnqueueNDRangeKernel(g->ctx->queue, k, 1, NULL, &global, &ls, 0, NULL, NULL);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clEnqueueNDRangeKernel(%s, %zu) failed: %s (%d)",
                        name, global, ocl_errstr(st), (int)st);
    return CLS_OK;
}

#define SPRINGS_ARG(k, i, v)                                                            \
    do {                                                                                \
        cl_int st_ = clSetKernelArg((k), (i), sizeof(v), &(v));                         \
        if (st_ != CL_SUCCESS)                                                          \
            return cls_fail(err, CLS_EOTHER, "clSetKernelArg(%s, %d) failed: %s (%d)", #k, \
                            (int)(i), ocl_errstr(st_), (int)st_);                       \
    } while (0)

static int springs_run_mode(springs_gpu *g, springs_launch mode, const springs_params *p,
                            int64_t nsteps, cls_error *err)
{
    cl_float c2 = (cl_float)(1.0 - p->d);
    cl_float4 adt2 = {{0.0f, (cl_float)(-p->gravity * p->dt * p->dt), 0.0f, 0.0f}};
    cl_float S = (cl_float)p->S, y0 = (cl_float)p->floor_y;
    cl_int n = g->np, floor_on = p->floor_on ? 1 : 0, iters = p->iterations;
    int rc;
    if (mode == SPRINGS_LAUNCH_WORKGROUP) {
        cl_int nc = g->ncolors;
        SPRINGS_ARG(g->k_wg, 0, g->pos);
        SPRINGS_ARG(g->k_wg, 1, g->prev);
        SPRINGS_ARG(g->k_wg, 2, n);
        SPRINGS_ARG(g->k_wg, 3, g->spr);
        SPRINGS_ARG(g->k_wg, 4, g->coff);
        SPRINGS_ARG(g->k_wg, 5, nc);
        SPRINGS_ARG(g->k_wg, 6, iters);
        SPRINGS_ARG(g->k_wg, 8, c2);
        SPRINGS_ARG(g->k_wg, 9, adt2);
        SPRINGS_ARG(g->k_wg, 10, S);
        SPRINGS_ARG(g->k_wg, 11, floor_on);
        SPRINGS_ARG(g->k_wg, 12, y0);
        /* a few hundred steps per launch keeps a launch well under a second
         * on slow devices while hiding the launch cost */
        for (int64_t done = 0; done < nsteps;) {
            cl_int chunk = (cl_int)(nsteps - done > 250 ? 250 : nsteps - done);
            SPRINGS_ARG(g->k_wg, 7, chunk);
            if ((rc = springs_launch1(g, g->k_wg, "springs_step_wg", g->wg_size, g->wg_size,
                                      err)))
                return rc;
            done += chunk;
        }
    } else {
        SPRINGS_ARG(g->k_verlet, 0, g->pos);
        SPRINGS_ARG(g->k_verlet, 1, g->prev);
        SPRINGS_ARG(g->k_verlet, 2, n);
        SPRINGS_ARG(g->k_verlet, 3, c2);
        SPRINGS_ARG(g->k_verlet, 4, adt2);
        SPRINGS_ARG(g->k_color, 0, g->pos);
        SPRINGS_ARG(g->k_color, 1, g->spr);
        SPRINGS_ARG(g->k_color, 4, S);
        SPRINGS_ARG(g->k_floor, 0, g->pos);
        SPRINGS_ARG(g->k_floor, 1, n);
        SPRINGS_ARG(g->k_floor, 2, y0);
        for (int64_t step = 0; step < nsteps; step++) {
            if ((rc = springs_launch1(g, g->k_verlet, "springs_verlet", (size_t)g->np, g->ls,
                                      err)))
                return rc;
            for (int it = 0; it < p->iterations; it++) {
                for (int c = 0; c < g->ncolors; c++) {
                    cl_int first = (cl_int)g->color_off[c];
                    cl_int count = (cl_int)(g->color_off[c + 1] - g->color_off[c]);
                    SPRINGS_ARG(g->k_color, 2, first);
                    SPRINGS_ARG(g->k_color, 3, count);
                    if ((rc = springs_launch1(g, g->k_color, "springs_project_color",
                                              (size_t)count, g->ls, err)))
                        return rc;
                }
                if (p->floor_on &&
                    (rc = springs_launch1(g, g->k_floor, "springs_floor", (size_t)g->np, g->ls,
                                          err)))
                    return rc;
            }
        }
    }
    cl_int st = clFinish(g->ctx->queue);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clFinish(springs) failed: %s (%d)", ocl_errstr(st),
                        (int)st);
    return CLS_OK;
}

/* AUTO: time a few steps of each plan from the current state, restore it,
 * keep the faster plan. */
static int springs_choose(springs_gpu *g, const springs_params *p, cls_error *err)
{
    size_t bytes = 16 * (size_t)(g->np ? g->np : 1);
    float *pos = malloc(bytes), *prev = malloc(bytes);
    if (!pos || !prev) {
        free(pos);
        free(prev);
        return springs_oom(err);
    }
    cl_int st = clEnqueueReadBuffer(g->ctx->queue, g->pos, CL_TRUE, 0, 16 * (size_t)g->np, pos,
                                    0, NULL, NULL);
    if (st == CL_SUCCESS)
        st = clEnqueueReadBuffer(g->ctx->queue, g->prev, CL_TRUE, 0, 16 * (size_t)g->np, prev, 0,
                                 NULL, NULL);
    int rc = CLS_OK;
    double t[2] = {0, 0};
    springs_launch modes[2] = {SPRINGS_LAUNCH_COLOR, SPRINGS_LAUNCH_WORKGROUP};
    /* per plan: a warm-up step, then batches of 2, 4, 8, ... steps until one
     * lasts 20 ms or 64 steps; the best time per step of the batches counts
     * (one short batch is too noisy on a shared CPU device) */
    for (int m = 0; m < 2 && st == CL_SUCCESS && !rc; m++) {
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
    if (st == CL_SUCCESS && !rc && g->np > 0) {
        st = clEnqueueWriteBuffer(g->ctx->queue, g->pos, CL_TRUE, 0, 16 * (size_t)g->np, pos, 0,
                                  NULL, NULL);
        if (st == CL_SUCCESS)
            st = clEnqueueWriteBuffer(g->ctx->queue, g->prev, CL_TRUE, 0, 16 * (size_t)g->np,
                                      prev, 0, NULL, NULL);
    }
    free(pos);
    free(prev);
    if (rc)
        return rc;
    OCL_CHECK(err, st, "springs: clEnqueueRead/WriteBuffer(state)");
    g->mode = t[1] < t[0] ? SPRINGS_LAUNCH_WORKGROUP : SPRINGS_LAUNCH_COLOR;
    return CLS_OK;
}

int springs_gpu_run(springs_gpu *g, const springs_params *p, int64_t nsteps, cls_error *err)
{
    if (g->mode == SPRINGS_LAUNCH_AUTO) {
        int rc = springs_choose(g, p, err);
        if (rc)
            return rc;
    }
    return springs_run_mode(g, g->mode, p, nsteps, err);
}

int springs_gpu_download(springs_gpu *g, springs_model *s, cls_error *err)
{
    size_t bytes = 16 * (size_t)(g->np ? g->np : 1);
    float *pos = malloc(bytes), *prev = malloc(bytes);
    if (!pos || !prev) {
        free(pos);
        free(prev);
        return springs_oom(err);
    }
    cl_int st = CL_SUCCESS;
    if (g->np > 0) {
        st = clEnqueueReadBuffer(g->ctx->queue, g->pos, CL_TRUE, 0, 16 * (size_t)g->np, pos, 0,
                                 NULL, NULL);
        if (st == CL_SUCCESS)
            st = clEnqueueReadBuffer(g->ctx->queue, g->prev, CL_TRUE, 0, 16 * (size_t)g->np,
                                     prev, 0, NULL, NULL);
    }
    if (st == CL_SUCCESS)
        for (int64_t i = 0; i < s->np && i < g->np; i++)
            for (int c = 0; c < 3; c++) {
                s->x[3 * i + c] = pos[4 * i + c];
                s->xprev[3 * i + c] = prev[4 * i + c];
            }
    free(pos);
    free(prev);
    OCL_CHECK(err, st, "springs: clEnqueueReadBuffer(state)");
    return CLS_OK;
}

/* ---- the whole job ----------------------------------------------------------- */

void springs_options_default(springs_options *o)
{
    memset(o, 0, sizeof *o);
    o->grid = 0;
    o->min_dist = NAN;
    o->max_dist = NAN;
    springs_params_default(&o->params);
    o->steps = 100;
    o->launch = SPRINGS_LAUNCH_AUTO;
    o->device = "auto";
}

static int springs_check_params(const springs_options *o, cls_error *err)
{
    const springs_params *p = &o->params;
    if (!(p->S > 0.0 && p->S <= 1.0))
        return cls_fail(err, CLS_EUSAGE, "S must be in (0, 1], got %g", p->S);
    if (!(p->d >= 0.0 && p->d < 1.0))
        return cls_fail(err, CLS_EUSAGE, "damping d must be in [0, 1), got %g", p->d);
    if (!(p->dt > 0.0) || !isfinite(p->dt))
        return cls_fail(err, CLS_EUSAGE, "dt must be > 0, got %g", p->dt);
    if (!isfinite(p->gravity))
        return cls_fail(err, CLS_EUSAGE, "gravity must be finite");
    if (p->iterations < 1)
        return cls_fail(err, CLS_EUSAGE, "iterations must be >= 1, got %d",
                        p->iterations);
    if (p->floor_on && !isfinite(p->floor_y))
        return cls_fail(err, CLS_EUSAGE, "floor must be finite");
    if (o->steps < 0)
        return cls_fail(err, CLS_EUSAGE, "steps must be >= 0");
    if (!o->mesh_path && o->grid < 1)
        return cls_fail(err, CLS_EUSAGE, "give a mesh or a grid size");
    /* NaN is "not given" (the mesh's default) */
    if (!isnan(o->min_dist) && !(o->min_dist >= 0.0 && isfinite(o->min_dist)))
        return cls_fail(err, CLS_EUSAGE, "min-dist must be finite and >= 0, got %g",
                        o->min_dist);
    if (!isnan(o->max_dist) && !(o->max_dist >= 0.0 && isfinite(o->max_dist)))
        return cls_fail(err, CLS_EUSAGE, "max-dist must be finite and >= 0, got %g",
                        o->max_dist);
    return CLS_OK;
}

/* Default distances for a mesh: min 1e-6 of the bounding-box diagonal (so
 * coincident vertices are not joined), max 1.5 times the mean edge length
 * (1% of the diagonal without faces). */
static void springs_default_dist(const mesh *m, double *min_dist, double *max_dist,
                                 double *diag)
{
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int64_t i = 0; i < m->nverts; i++)
        for (int c = 0; c < 3; c++) {
            double v = m->v[3 * i + c];
            if (i == 0 || v < lo[c])
                lo[c] = v;
            if (i == 0 || v > hi[c])
                hi[c] = v;
        }
    *diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                 (hi[2] - lo[2]) * (hi[2] - lo[2]));
    double sum = 0.0;
    int64_t cnt = 0;
    for (int64_t t = 0; t < m->nfaces; t++)
        for (int c = 0; c < 3; c++) {
            const double *a = m->v + 3 * (int64_t)m->tri[3 * t + c];
            const double *b = m->v + 3 * (int64_t)m->tri[3 * t + (c + 1) % 3];
            sum += sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                        (a[2] - b[2]) * (a[2] - b[2]));
            cnt++;
        }
    if (isnan(*min_dist))
        *min_dist = 1e-6 * *diag;
    if (isnan(*max_dist))
        *max_dist = cnt ? 1.5 * sum / (double)cnt : 0.01 * *diag;
}

static int springs_model_copy(const springs_model *a, springs_model *b, cls_error *err)
{
    springs_model_init(b);
    *b = *a;
    size_t np = (size_t)(a->np ? a->np : 1), ns = (size_t)(a->ns ? a->ns : 1);
    b->x = malloc(3 * np * sizeof *b->x);
    b->xprev = malloc(3 * np * sizeof *b->xprev);
    b->w = malloc(np * sizeof *b->w);
    b->ij = malloc(2 * ns * sizeof *b->ij);
    b->rest = malloc(ns * sizeof *b->rest);
    b->k = malloc(ns * sizeof *b->k);
    b->color_off = malloc(((size_t)a->ncolors + 1) * sizeof *b->color_off);
    if (!b->x || !b->xprev || !b->w || !b->ij || !b->rest || !b->k || !b->color_off) {
        springs_model_free(b);
        return springs_oom(err);
    }
    memcpy(b->x, a->x, 3 * (size_t)a->np * sizeof *b->x);
    memcpy(b->xprev, a->xprev, 3 * (size_t)a->np * sizeof *b->x);
    memcpy(b->w, a->w, (size_t)a->np * sizeof *b->w);
    memcpy(b->ij, a->ij, 2 * (size_t)a->ns * sizeof *b->ij);
    memcpy(b->rest, a->rest, (size_t)a->ns * sizeof *b->rest);
    memcpy(b->k, a->k, (size_t)a->ns * sizeof *b->k);
    memcpy(b->color_off, a->color_off, ((size_t)a->ncolors + 1) * sizeof *b->color_off);
    return CLS_OK;
}

int springs_run(const springs_options *o, springs_report *r, cls_error *err)
{
    memset(r, 0, sizeof *r);
    r->cpu_ms_per_step = NAN;
    r->max_diff = NAN;
    r->gpu_ms_per_step = NAN;
    int rc = springs_check_params(o, err);
    if (rc)
        return rc;
    double t0 = cls_now();
    mesh m;
    springs_model s, ref;
    springs_model_init(&s);
    springs_model_init(&ref);
    ocl_ctx ctx;
    int have_ctx = 0;
    springs_gpu *g = NULL;
    if (o->mesh_path)
        rc = mesh_read(o->mesh_path, &m, err);
    else
        rc = springs_grid_mesh(o->grid, &m, err);
    if (rc)
        return rc;
    double min_dist = o->min_dist, max_dist = o->max_dist;
    if (!o->mesh_path) {
        if (isnan(min_dist))
            min_dist = 0.5;
        if (isnan(max_dist))
            max_dist = 6.5;
    }
    springs_default_dist(&m, &min_dist, &max_dist, &r->extent);
    r->min_dist = min_dist;
    r->max_dist = max_dist;
    rc = o->edges ? springs_from_mesh_edges(&m, min_dist, &s, err)
                  : springs_from_mesh_proximity(&m, min_dist, max_dist, &s, err);
    if (rc)
        goto done;
    for (int i = 0; i < o->npins && !rc; i++)
        rc = springs_pin(&s, o->pins[i], err);
    if (!rc)
        rc = springs_color(&s, err);
    if (rc)
        goto done;
    r->particles = s.np;
    r->springs = s.ns;
    r->colors = s.ncolors;
    r->max_degree = s.max_degree;
    r->build_s = cls_now() - t0;
    if (o->cpu && (rc = springs_model_copy(&s, &ref, err)))
        goto done;

    if ((rc = ocl_pick_device(o->device ? o->device : "auto", &r->device, err)))
        goto done;
    if ((rc = ocl_ctx_create(&r->device, &ctx, err)))
        goto done;
    have_ctx = 1;
    if ((rc = springs_gpu_create(&ctx, &s, o->launch, &g, err)))
        goto done;
    if ((rc = springs_gpu_run(g, &o->params, 0, err))) /* AUTO decides here */
        goto done;
    double g0 = cls_now();
    if ((rc = springs_gpu_run(g, &o->params, o->steps, err)))
        goto done;
    double gs = cls_now() - g0;
    r->gpu_ms_per_step = o->steps ? 1e3 * gs / (double)o->steps : 0.0;
    r->launch = springs_gpu_mode(g);
    r->wg_size = r->launch == SPRINGS_LAUNCH_WORKGROUP ? springs_gpu_wg_size(g) : g->ls;
    if ((rc = springs_gpu_download(g, &s, err)))
        goto done;

    if (o->cpu) {
        double c0 = cls_now();
        for (int64_t t = 0; t < o->steps; t++)
            springs_step_ref(&ref, &o->params);
        double cs = cls_now() - c0;
        r->cpu_ms_per_step = o->steps ? 1e3 * cs / (double)o->steps : 0.0;
        double md = 0.0;
        for (int64_t i = 0; i < 3 * s.np; i++)
            md = fmax(md, fabs(s.x[i] - ref.x[i]));
        r->max_diff = md;
    }
    if (o->out_obj) {
        memcpy(m.v, s.x, 3 * (size_t)s.np * sizeof *m.v);
        rc = mesh_write_obj(o->out_obj, &m, err);
    }
done:
    springs_gpu_free(g);
    if (have_ctx)
        ocl_ctx_release(&ctx);
    springs_model_free(&s);
    springs_model_free(&ref);
    mesh_free(&m);
    return rc;
}

/* ---- JSON (CLI --json and job results) ----------------------------------------- */

static json_t *springs_report_object(const springs_options *o, const springs_report *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "kind", json_string("springs"));
    json_object_set_new(j, "mesh", o->mesh_path ? json_string(o->mesh_path) : json_null());
    if (!o->mesh_path)
        json_object_set_new(j, "grid", json_integer(o->grid));
    json_object_set_new(j, "particles", json_integer(r->particles));
    json_object_set_new(j, "springs", json_integer(r->springs));
    json_object_set_new(j, "colors", json_integer(r->colors));
    json_object_set_new(j, "max_degree", json_integer(r->max_degree));
    json_object_set_new(j, "source", json_string(o->edges ? "edges" : "proximity"));
    json_object_set_new(j, "min_dist", json_real(r->min_dist));
    json_object_set_new(j, "max_dist", json_real(r->max_dist));
    json_object_set_new(j, "steps", json_integer(o->steps));
    json_object_set_new(j, "S", json_real(o->params.S));
    json_object_set_new(j, "d", json_real(o->params.d));
    json_object_set_new(j, "dt", json_real(o->params.dt));
    json_object_set_new(j, "gravity", json_real(o->params.gravity));
    json_object_set_new(j, "iterations", json_integer(o->params.iterations));
    json_object_set_new(j, "floor", o->params.floor_on ? json_real(o->params.floor_y)
                                                       : json_null());
    json_object_set_new(j, "pinned", json_integer(o->npins));
    json_object_set_new(j, "ms_per_step",
                        isfinite(r->gpu_ms_per_step) ? json_real(r->gpu_ms_per_step)
                                                     : json_null());
    json_object_set_new(j, "launch", json_string(springs_launch_name(r->launch)));
    json_object_set_new(j, "work_group_size", json_integer((json_int_t)r->wg_size));
    json_object_set_new(j, "build_s", json_real(r->build_s));
    if (o->cpu) {
        json_object_set_new(j, "cpu_ms_per_step", json_real(r->cpu_ms_per_step));
        json_object_set_new(j, "speedup", json_real(r->cpu_ms_per_step / r->gpu_ms_per_step));
        json_object_set_new(j, "max_diff_vs_cpu", json_real(r->max_diff));
    }
    json_object_set_new(j, "device",
                        json_pack("{s:i, s:s, s:s, s:s}", "index", r->device.index, "name",
                                  r->device.name, "platform", r->device.platform_name, "type",
                                  ocl_type_name(r->device.type)));
    return j;
}

char *springs_report_json(const springs_options *o, const springs_report *r)
{
    json_t *j = springs_report_object(o, r);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    return s;
}

/* Options of a springs job, the JSON twin of the command-line flags:
 * {"grid": N, "min_dist", "max_dist", "edges", "S", "d", "dt", "gravity",
 *  "iterations", "steps", "floor", "pin": [i, ...], "launch", "cpu"}. */
static int springs_job_options(const char *json, springs_options *o, int64_t **pins,
                               cls_error *err)
{
    *pins = NULL;
    if (!json || !*json)
        return CLS_OK;
    json_error_t je;
    json_t *j = json_loads(json, 0, &je);
    if (!j)
        return cls_fail(err, CLS_EUSAGE, "springs options: line %d: %s", je.line, je.text);
    int rc = CLS_OK;
    if (!json_is_object(j)) {
        rc = cls_fail(err, CLS_EUSAGE, "springs options: not a JSON object");
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v)
    {
        double *dst = NULL;
        if (!strcmp(key, "min_dist"))
            dst = &o->min_dist;
        else if (!strcmp(key, "max_dist"))
            dst = &o->max_dist;
        else if (!strcmp(key, "S"))
            dst = &o->params.S;
        else if (!strcmp(key, "d"))
            dst = &o->params.d;
        else if (!strcmp(key, "dt"))
            dst = &o->params.dt;
        else if (!strcmp(key, "gravity"))
            dst = &o->params.gravity;
        if (dst) {
            if (!json_is_number(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "springs options: '%s' must be a number", key);
                goto done;
            }
            *dst = json_number_value(v);
            continue;
        }
        if (!strcmp(key, "floor")) {
            if (json_is_null(v) || json_is_false(v)) {
                o->params.floor_on = 0;
                continue;
            }
            if (!json_is_number(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "springs options: 'floor' must be a number");
                goto done;
            }
            o->params.floor_on = 1;
            o->params.floor_y = json_number_value(v);
        } else if (!strcmp(key, "grid") || !strcmp(key, "iterations") ||
                   !strcmp(key, "steps")) {
            if (!json_is_integer(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "springs options: '%s' must be an integer", key);
                goto done;
            }
            json_int_t x = json_integer_value(v);
            if (!strcmp(key, "steps"))
                o->steps = x;
            else if (x < INT32_MIN || x > INT32_MAX) {
                rc = cls_fail(err, CLS_EUSAGE, "springs options: '%s' out of range", key);
                goto done;
            } else if (!strcmp(key, "grid"))
                o->grid = (int)x;
            else
                o->params.iterations = (int)x;
        } else if (!strcmp(key, "edges") || !strcmp(key, "cpu")) {
            if (!json_is_boolean(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "springs options: '%s' must be true or false",
                              key);
                goto done;
            }
            *(!strcmp(key, "edges") ? &o->edges : &o->cpu) = json_is_true(v);
        } else if (!strcmp(key, "launch")) {
            const char *s = json_string_value(v);
            if (s && !strcmp(s, "auto"))
                o->launch = SPRINGS_LAUNCH_AUTO;
            else if (s && !strcmp(s, "color"))
                o->launch = SPRINGS_LAUNCH_COLOR;
            else if (s && !strcmp(s, "workgroup"))
                o->launch = SPRINGS_LAUNCH_WORKGROUP;
            else {
                rc = cls_fail(err, CLS_EUSAGE,
                              "springs options: 'launch' must be auto, color or workgroup");
                goto done;
            }
        } else if (!strcmp(key, "pin")) {
            if (!json_is_array(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "springs options: 'pin' must be an array");
                goto done;
            }
            size_t n = json_array_size(v);
            *pins = malloc((n ? n : 1) * sizeof **pins);
            if (!*pins) {
                rc = springs_oom(err);
                goto done;
            }
            for (size_t i = 0; i < n; i++) {
                json_t *e = json_array_get(v, i);
                if (!json_is_integer(e)) {
                    rc = cls_fail(err, CLS_EUSAGE, "springs options: 'pin' holds a non-integer");
                    goto done;
                }
                (*pins)[i] = json_integer_value(e);
            }
            o->pins = *pins;
            o->npins = (int)n;
        } else {
            rc = cls_fail(err, CLS_EUSAGE, "springs options: unknown option '%s'", key);
            goto done;
        }
    }
done:
    json_decref(j);
    return rc;
}

int springs_job_run(const char *options_json, const char *input_path, const char *out_dir,
                    const char *device, char **result_json, cls_error *err)
{
    *result_json = NULL;
    springs_options o;
    springs_options_default(&o);
    int64_t *pins = NULL;
    int rc = springs_job_options(options_json, &o, &pins, err);
    if (rc) {
        free(pins);
        return rc;
    }
    o.mesh_path = input_path;
    o.device = device ? device : "auto";
    if (input_path && o.grid)
        o.grid = 0; /* an uploaded mesh wins over a grid option */
    char out[4096];
    if (out_dir) {
        snprintf(out, sizeof out, "%s/springs.obj", out_dir);
        o.out_obj = out;
    }
    springs_report r;
    rc = springs_run(&o, &r, err);
    free(pins);
    if (rc)
        return rc;
    json_t *j = springs_report_object(&o, &r);
    json_object_set_new(j, "files", out_dir ? json_pack("[s]", "springs.obj") : json_array());
    *result_json = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!*result_json)
        return springs_oom(err);
    return CLS_OK;
}
