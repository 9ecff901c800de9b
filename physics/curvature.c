/*
 * curvature.c: host side of the curvature estimators (see curvature.h):
 * CSR adjacency, the CPU double reference, the OpenCL driver, the writers,
 * the test meshes and the `curvature` job.
 *
 * The reference mirrors kernels/curvature.cl line for line, in double:
 *   normal   n_i = normalize( sum_{f ∋ i} (p1 - p0) x (p2 - p0) )
 *   frame    (u_i, v_i): the axis least aligned with n_i, orthogonalised
 *   per face (Rusinkiewicz 2004): with edges e_j = p_{j+2} - p_{j+1} and
 *            dn_j = n_{j+2} - n_{j+1}, solve in the face frame (t, b)
 *              [e_j.t  e_j.b  0    ] [L]   [dn_j.t]
 *              [0      e_j.t  e_j.b] [M] = [dn_j.b]   (j = 0, 1, 2)
 *                                    [N]
 *            by least squares (normal equations, LDL^T); rotate (L, M, N)
 *            into the vertex frame; weight by the corner's mixed Voronoi
 *            area A_c (Meyer et al. 2002) and divide by sum A_c;
 *   per vertex: the same system over the 1-ring, e = p_j - p_i,
 *            dn = n_j - n_i, in the vertex frame;
 *   then one Jacobi rotation diagonalises [ku kuv; kuv kv]: k1 >= k2.
 */
#include "curvature.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/timer.h"
#include "job.h"

#define CURV_PIVOT_TOL 1e-5 /* keep equal to the kernel's */

const char *curv_estimator_name(curv_estimator e)
{
    return e == CURV_VERTEX ? "vertex" : "face";
}

int curv_estimator_parse(const char *s, curv_estimator *e)
{
    if (!strcmp(s, "face"))
        *e = CURV_FACE;
    else if (!strcmp(s, "vertex"))
        *e = CURV_VERTEX;
    else
        return -1;
    return 0;
}

/* ---------------------------------------------------------------- adjacency */

void curv_adjacency_free(curv_adjacency *adj)
{
    free(adj->vf_ptr);
    free(adj->vf_idx);
    free(adj->vv_ptr);
    free(adj->vv_idx);
    memset(adj, 0, sizeof *adj);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int curv_adjacency_build(const mesh *m, curv_adjacency *adj, cls_error *err)
{
    memset(adj, 0, sizeof *adj);
    const int64_t nv = m->nverts, nf = m->nfaces;
    if (nv >= INT32_MAX || 3 * nf >= INT32_MAX || 6 * nf >= INT32_MAX)
        return cls_fail(err, CLS_EINPUT,
                        "mesh too large for 32-bit adjacency (%lld vertices, %lld faces)",
                        (long long)nv, (long long)nf);
    for (int64_t k = 0; k < 3 * nf; k++)
        if (m->tri[k] < 0 || m->tri[k] >= nv)
            return cls_fail(err, CLS_EINPUT, "face %lld uses vertex %d of %lld", (long long)(k / 3),
                            (int)m->tri[k], (long long)nv);
    adj->nverts = nv;
    adj->nfaces = nf;
    adj->vf_ptr = calloc((size_t)nv + 1, sizeof(int32_t));
    adj->vf_idx = malloc((size_t)(3 * nf + 1) * sizeof(int32_t));
    adj->vv_ptr = calloc((size_t)nv + 1, sizeof(int32_t));
    int32_t *fill = calloc((size_t)nv + 1, sizeof(int32_t));
    int32_t *cand_ptr = calloc((size_t)nv + 1, sizeof(int32_t));
    int32_t *cand = malloc((size_t)(6 * nf + 1) * sizeof(int32_t));
    if (!adj->vf_ptr || !adj->vf_idx || !adj->vv_ptr || !fill || !cand_ptr || !cand) {
        free(fill);
        free(cand_ptr);
        free(cand);
        curv_adjacency_free(adj);
        return cls_fail(err, CLS_EOTHER, "out of memory for the mesh adjacency");
    }
    /* vertex -> faces by counting sort: faces come out ascending per vertex */
    for (int64_t k = 0; k < 3 * nf; k++)
        adj->vf_ptr[m->tri[k] + 1]++;
    for (int64_t i = 0; i < nv; i++)
        adj->vf_ptr[i + 1] += adj->vf_ptr[i];
    memcpy(fill, adj->vf_ptr, (size_t)nv * sizeof(int32_t));
    for (int64_t f = 0; f < nf; f++)
        for (int c = 0; c < 3; c++) {
            int32_t v = m->tri[3 * f + c];
            /* a face listing the same vertex twice is counted once */
            if ((c >= 1 && m->tri[3 * f] == v) || (c == 2 && m->tri[3 * f + 1] == v)) {
                continue;
            }
            adj->vf_idx[fill[v]++] = (int32_t)f;
        }
    /* compact away the slots of repeated corners */
    {
        int32_t w = 0;
        for (int64_t i = 0; i < nv; i++) {
            int32_t b = adj->vf_ptr[i];
            adj->vf_ptr[i] = w;
            for (int32_t k = b; k < fill[i]; k++)
                adj->vf_idx[w++] = adj->vf_idx[k];
        }
        adj->vf_ptr[nv] = w;
    }
    /* vertex -> 1-ring: the other corners of every incident face, sorted,
     * repeats removed */
    for (int64_t i = 0; i < nv; i++)
        cand_ptr[i + 1] = cand_ptr[i] + 2 * (adj->vf_ptr[i + 1] - adj->vf_ptr[i]);
    for (int64_t i = 0; i < nv; i++) {
        int32_t w = cand_ptr[i];
        for (int32_t k = adj->vf_ptr[i]; k < adj->vf_ptr[i + 1]; k++) {
            int32_t f = adj->vf_idx[k];
            for (int c = 0; c < 3; c++) {
                int32_t v = m->tri[3 * f + c];
                if (v != i)
                    cand[w++] = v;
            }
        }
        qsort(cand + cand_ptr[i], (size_t)(w - cand_ptr[i]), sizeof(int32_t), cmp_i32);
        int32_t u = cand_ptr[i];
        for (int32_t k = cand_ptr[i]; k < w; k++)
            if (k == cand_ptr[i] || cand[k] != cand[k - 1])
                cand[u++] = cand[k];
        adj->vv_ptr[i + 1] = adj->vv_ptr[i] + (u - cand_ptr[i]);
        fill[i] = u; /* end of the unique run */
    }
    adj->vv_idx = malloc((size_t)(adj->vv_ptr[nv] + 1) * sizeof(int32_t));
    if (!adj->vv_idx) {
        free(fill);
        free(cand_ptr);
        free(cand);
        curv_adjacency_free(adj);
        return cls_fail(err, CLS_EOTHER, "out of memory for the mesh adjacency");
    }
    for (int64_t i = 0; i < nv; i++)
        memcpy(adj->vv_idx + adj->vv_ptr[i], cand + cand_ptr[i],
               (size_t)(fill[i] - cand_ptr[i]) * sizeof(int32_t));
    free(fill);
    free(cand_ptr);
    free(cand);
    return CLS_OK;
}

/* ------------------------------------------------------------------- result */

int curv_result_alloc(curv_result *res, int64_t nverts, cls_error *err)
{
    memset(res, 0, sizeof *res);
    size_t n = (size_t)(nverts > 0 ? nverts : 1);
    res->nverts = nverts;
    res->k1 = calloc(n, sizeof(double));
    res->k2 = calloc(n, sizeof(double));
    res->H = calloc(n, sizeof(double));
    res->K = calloc(n, sizeof(double));
    res->dir1 = calloc(3 * n, sizeof(double));
    res->dir2 = calloc(3 * n, sizeof(double));
    res->normal = calloc(3 * n, sizeof(double));
    if (!res->k1 || !res->k2 || !res->H || !res->K || !res->dir1 || !res->dir2 || !res->normal) {
        curv_result_free(res);
        return cls_fail(err, CLS_EOTHER, "out of memory for %lld curvature results",
                        (long long)nverts);
    }
    return CLS_OK;
}

void curv_result_free(curv_result *res)
{
    free(res->k1);
    free(res->k2);
    free(res->H);
    free(res->K);
    free(res->dir1);
    free(res->dir2);
    free(res->normal);
    memset(res, 0, sizeof *res);
}

/* ------------------------------------------------------- the double reference */

typedef struct {
    double x, y, z;
} dvec;

static inline dvec dv(const double *p)
{
    return (dvec){p[0], p[1], p[2]};
}
static inline dvec dsub(dvec a, dvec b)
{
    return (dvec){a.x - b.x, a.y - b.y, a.z - b.z};
}
static inline dvec dadd(dvec a, dvec b)
{
    return (dvec){a.x + b.x, a.y + b.y, a.z + b.z};
}
static inline dvec dscale(dvec a, double s)
{
    return (dvec){a.x * s, a.y * s, a.z * s};
}
static inline double ddot(dvec a, dvec b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
static inline dvec dcross(dvec a, dvec b)
{
    return (dvec){a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

static void frame_of(dvec n, dvec *u, dvec *v)
{
    double ax = fabs(n.x), ay = fabs(n.y), az = fabs(n.z);
    dvec a = (ax <= ay && ax <= az) ? (dvec){1, 0, 0}
             : (ay <= az)           ? (dvec){0, 1, 0}
                                    : (dvec){0, 0, 1};
    dvec w = dsub(a, dscale(n, ddot(a, n)));
    *u = dscale(w, 1.0 / sqrt(ddot(w, w)));
    *v = dcross(n, *u);
}

static void rot_frame(dvec ou, dvec ov, dvec nn, dvec *ru, dvec *rv)
{
    dvec on = dcross(ou, ov);
    double nd = ddot(on, nn);
    if (nd <= -1.0) {
        *ru = dscale(ou, -1.0);
        *rv = dscale(ov, -1.0);
        return;
    }
    dvec perp = dsub(nn, dscale(on, nd));
    dvec dperp = dscale(dadd(on, nn), 1.0 / (1.0 + nd));
    *ru = dsub(ou, dscale(dperp, ddot(ou, perp)));
    *rv = dsub(ov, dscale(dperp, ddot(ov, perp)));
}

static int solve3(double w00, double w01, double w22, const double m[3], double x[3])
{
    const double tol = CURV_PIVOT_TOL * (w00 + w22);
    double d0 = w00;
    if (!(d0 > tol))
        return 0;
    double l10 = w01 / d0;
    double d1 = w00 + w22 - l10 * l10 * d0;
    if (!(d1 > tol))
        return 0;
    double l21 = w01 / d1;
    double d2 = w22 - l21 * l21 * d1;
    if (!(d2 > tol))
        return 0;
    double y0 = m[0], y1 = m[1] - l10 * y0, y2 = m[2] - l21 * y1;
    x[2] = y2 / d2;
    x[1] = y1 / d1 - l21 * x[2];
    x[0] = y0 / d0 - l10 * x[1];
    return 1;
}

static void store(curv_result *res, int64_t i, dvec n, dvec u, dvec v, double ku, double kuv,
                  double kv)
{
    double c = 1.0, s = 0.0, tt = 0.0;
    if (kuv != 0.0) {
        double h = 0.5 * (kv - ku) / kuv;
        tt = (h < 0.0) ? 1.0 / (h - sqrt(1.0 + h * h)) : 1.0 / (h + sqrt(1.0 + h * h));
        c = 1.0 / sqrt(1.0 + tt * tt);
        s = tt * c;
    }
    double k1 = ku - tt * kuv, k2 = kv + tt * kuv;
    dvec d1;
    if (k1 >= k2) {
        d1 = dsub(dscale(u, c), dscale(v, s));
    } else {
        double k = k1;
        k1 = k2;
        k2 = k;
        d1 = dadd(dscale(u, s), dscale(v, c));
    }
    dvec d2 = dcross(n, d1);
    res->k1[i] = k1;
    res->k2[i] = k2;
    res->H[i] = 0.5 * (k1 + k2);
    res->K[i] = k1 * k2;
    res->dir1[3 * i] = d1.x, res->dir1[3 * i + 1] = d1.y, res->dir1[3 * i + 2] = d1.z;
    res->dir2[3 * i] = d2.x, res->dir2[3 * i + 1] = d2.y, res->dir2[3 * i + 2] = d2.z;
}

static void store_zero(curv_result *res, int64_t i)
{
    res->k1[i] = res->k2[i] = res->H[i] = res->K[i] = 0.0;
    for (int c = 0; c < 3; c++)
        res->dir1[3 * i + c] = res->dir2[3 * i + c] = 0.0;
}

void curv_ref_normals(const mesh *m, const curv_adjacency *adj, double *normals, int64_t v0,
                      int64_t v1)
{
    for (int64_t i = v0; i < v1; i++) {
        dvec s = {0, 0, 0};
        for (int32_t k = adj->vf_ptr[i]; k < adj->vf_ptr[i + 1]; k++) {
            const int32_t *t = m->tri + 3 * (int64_t)adj->vf_idx[k];
            dvec p0 = dv(m->v + 3 * (int64_t)t[0]), p1 = dv(m->v + 3 * (int64_t)t[1]),
                 p2 = dv(m->v + 3 * (int64_t)t[2]);
            s = dadd(s, dcross(dsub(p1, p0), dsub(p2, p0)));
        }
        double l = sqrt(ddot(s, s));
        dvec n = l > 0.0 ? dscale(s, 1.0 / l) : (dvec){0, 0, 0};
        normals[3 * i] = n.x, normals[3 * i + 1] = n.y, normals[3 * i + 2] = n.z;
    }
}

/* Mixed Voronoi areas of the three corners (Pseudocode 3.2 of Camillo
 * 2018, after Rusinkiewicz and Meyer et al.). */
static void corner_areas(dvec e0, dvec e1, dvec e2, double tarea, double a[3])
{
    double l0 = ddot(e0, e0), l1 = ddot(e1, e1), l2 = ddot(e2, e2);
    double bw0 = l0 * (l1 + l2 - l0), bw1 = l1 * (l2 + l0 - l1), bw2 = l2 * (l0 + l1 - l2);
    if (bw0 <= 0.0) {
        a[1] = -0.25 * tarea * l2 / ddot(e0, e2);
        a[2] = -0.25 * tarea * l1 / ddot(e0, e1);
        a[0] = tarea - a[1] - a[2];
    } else if (bw1 <= 0.0) {
        a[0] = -0.25 * tarea * l2 / ddot(e1, e2);
        a[2] = -0.25 * tarea * l0 / ddot(e1, e0);
        a[1] = tarea - a[0] - a[2];
    } else if (bw2 <= 0.0) {
        a[0] = -0.25 * tarea * l1 / ddot(e2, e1);
        a[1] = -0.25 * tarea * l0 / ddot(e2, e0);
        a[2] = tarea - a[0] - a[1];
    } else {
        double sc = 0.5 * tarea / (bw0 + bw1 + bw2);
        a[0] = sc * (bw1 + bw2);
        a[1] = sc * (bw0 + bw2);
        a[2] = sc * (bw0 + bw1);
    }
}

static void tensor_face(const mesh *m, const curv_adjacency *adj, const double *nrm,
                        curv_result *res, int64_t i)
{
    dvec ni = dv(nrm + 3 * i);
    if (ddot(ni, ni) == 0.0) {
        store_zero(res, i);
        return;
    }
    dvec fu, fv;
    frame_of(ni, &fu, &fv);
    double ku = 0, kuv = 0, kv = 0, area = 0;
    for (int32_t k = adj->vf_ptr[i]; k < adj->vf_ptr[i + 1]; k++) {
        const int32_t *t3 = m->tri + 3 * (int64_t)adj->vf_idx[k];
        dvec p[3], n[3];
        for (int c = 0; c < 3; c++) {
            p[c] = dv(m->v + 3 * (int64_t)t3[c]);
            n[c] = dv(nrm + 3 * (int64_t)t3[c]);
        }
        int corner = t3[0] == i ? 0 : t3[1] == i ? 1 : 2;
        dvec e[3] = {dsub(p[2], p[1]), dsub(p[0], p[2]), dsub(p[1], p[0])};
        dvec dn[3] = {dsub(n[2], n[1]), dsub(n[0], n[2]), dsub(n[1], n[0])};
        dvec fn = dcross(e[0], e[1]);
        double fnl = sqrt(ddot(fn, fn)), e0l = sqrt(ddot(e[0], e[0]));
        if (!(fnl > 0.0) || !(e0l > 0.0))
            continue;
        dvec t = dscale(e[0], 1.0 / e0l);
        dvec nf = dscale(fn, 1.0 / fnl);
        dvec b = dcross(nf, t);
        double w00 = 0, w01 = 0, w22 = 0, mm[3] = {0, 0, 0};
        for (int j = 0; j < 3; j++) {
            double u = ddot(e[j], t), v = ddot(e[j], b);
            double dnu = ddot(dn[j], t), dnv = ddot(dn[j], b);
            w00 += u * u;
            w01 += u * v;
            w22 += v * v;
            mm[0] += dnu * u;
            mm[1] += dnu * v + dnv * u;
            mm[2] += dnv * v;
        }
        double sff[3];
        if (!solve3(w00, w01, w22, mm, sff))
            continue;
        double a[3];
        corner_areas(e[0], e[1], e[2], 0.5 * fnl, a);
        double wa = a[corner];
        dvec ru, rv;
        rot_frame(fu, fv, nf, &ru, &rv);
        double u1 = ddot(ru, t), v1 = ddot(ru, b), u2 = ddot(rv, t), v2 = ddot(rv, b);
        ku += wa * (sff[0] * u1 * u1 + sff[1] * (2.0 * u1 * v1) + sff[2] * v1 * v1);
        kuv += wa * (sff[0] * u1 * u2 + sff[1] * (u1 * v2 + u2 * v1) + sff[2] * v1 * v2);
        kv += wa * (sff[0] * u2 * u2 + sff[1] * (2.0 * u2 * v2) + sff[2] * v2 * v2);
        area += wa;
    }
    if (!(area > 0.0)) {
        store_zero(res, i);
        return;
    }
    store(res, i, ni, fu, fv, ku / area, kuv / area, kv / area);
}

static void tensor_vertex(const mesh *m, const curv_adjacency *adj, const double *nrm,
                          curv_result *res, int64_t i)
{
    dvec ni = dv(nrm + 3 * i);
    if (ddot(ni, ni) == 0.0) {
        store_zero(res, i);
        return;
    }
    dvec fu, fv;
    frame_of(ni, &fu, &fv);
    dvec pi = dv(m->v + 3 * i);
    double w00 = 0, w01 = 0, w22 = 0, mm[3] = {0, 0, 0};
    for (int32_t k = adj->vv_ptr[i]; k < adj->vv_ptr[i + 1]; k++) {
        int64_t j = adj->vv_idx[k];
        dvec e = dsub(dv(m->v + 3 * j), pi);
        dvec dn = dsub(dv(nrm + 3 * j), ni);
        double u = ddot(e, fu), v = ddot(e, fv), dnu = ddot(dn, fu), dnv = ddot(dn, fv);
        w00 += u * u;
        w01 += u * v;
        w22 += v * v;
        mm[0] += dnu * u;
        mm[1] += dnu * v + dnv * u;
        mm[2] += dnv * v;
    }
    double sff[3];
    if (!solve3(w00, w01, w22, mm, sff)) {
        store_zero(res, i);
        return;
    }
    store(res, i, ni, fu, fv, sff[0], sff[1], sff[2]);
}

void curv_ref_tensors(const mesh *m, const curv_adjacency *adj, curv_estimator est,
                      const double *normals, curv_result *res, int64_t v0, int64_t v1)
{
    for (int64_t i = v0; i < v1; i++) {
        if (est == CURV_VERTEX)
            tensor_vertex(m, adj, normals, res, i);
        else
            tensor_face(m, adj, normals, res, i);
    }
}

void curv_reference(const mesh *m, const curv_adjacency *adj, curv_estimator est, curv_result *res)
{
    curv_ref_normals(m, adj, res->normal, 0, m->nverts);
    curv_ref_tensors(m, adj, est, res->normal, res, 0, m->nverts);
}

double curv_rel_diff(const curv_result *a, const curv_result *b)
{
    const double *pa[4] = {a->k1, a->k2, a->H, a->K};
    const double *pb[4] = {b->k1, b->k2, b->H, b->K};
    double worst = 0.0;
    for (int q = 0; q < 4; q++) {
        double num = 0.0, den = 0.0;
        for (int64_t i = 0; i < b->nverts; i++) {
            double d = pa[q][i] - pb[q][i];
            num += d * d;
            den += pb[q][i] * pb[q][i];
        }
        double r = den > 0.0 ? sqrt(num / den) : sqrt(num);
        if (r > worst || isnan(r))
            worst = r;
    }
    return worst;
}

/* ------------------------------------------------------------------- device */

void curv_gpu_release(curv_gpu *g)
{
    cl_mem *bufs[] = {&g->pos,    &g->pos_lo, &g->tri,  &g->vf_ptr, &g->vf_idx, &g->vv_ptr,
                      &g->vv_idx, &g->normal, &g->curv, &g->dir1,   &g->dir2};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        if (*bufs[k])
            clReleaseMemObject(*bufs[k]);
    if (g->k_normals)
        clReleaseKernel(g->k_normals);
    if (g->k_face)
        clReleaseKernel(g->k_face);
    if (g->k_vertex)
        clReleaseKernel(g->k_vertex);
    if (g->prog)
        clReleaseProgram(g->prog);
    memset(g, 0, sizeof *g);
}

static int make_buf(ocl_ctx *ctx, cl_mem *b, cl_mem_flags fl, size_t bytes, const void *host,
                    cls_error *err)
{
    cl_int st;
    /* an empty array still gets a (16-byte) buffer: kernels take it as an
     * argument even when they never read it */
    int copy = host && bytes;
    *b = clCreateBuffer(ctx->context, fl | (copy ? CL_MEM_COPY_HOST_PTR : 0), bytes ? bytes : 16,
                        copy ? (void *)host : NULL, &st);
    OCL_CHECK(err, st, "clCreateBuffer");
    return CLS_OK;
}

int curv_gpu_setup(curv_gpu *g, ocl_ctx *ctx, const mesh *m, const curv_adjacency *adj,
                   cls_error *err)
{
    memset(g, 0, sizeof *g);
    g->ctx = ctx;
    g->nverts = m->nverts;
    g->nfaces = m->nfaces;
    g->local_size = (ctx->dev.type & CL_DEVICE_TYPE_CPU) ? 0 : 128;
    if (g->local_size > ctx->dev.max_work_group)
        g->local_size = 0;
    const char *srcs[] = {"curvature.cl"};
    int rc = ocl_build_program(ctx, srcs, 1, "", &g->prog, err);
    if (!rc)
        rc = ocl_create_kernel(g->prog, "curv_normals", &g->k_normals, err);
    if (!rc)
        rc = ocl_create_kernel(g->prog, "curv_face", &g->k_face, err);
    if (!rc)
        rc = ocl_create_kernel(g->prog, "curv_vertex", &g->k_vertex, err);
    if (rc) {
        curv_gpu_release(g);
        return rc;
    }
    double t0 = cls_now();
    size_t nv = (size_t)m->nverts;
    /* positions split as hi + lo floats (see kernels/curvature.cl) */
    float *pos = malloc((nv ? nv : 1) * 8 * sizeof(float));
    if (!pos) {
        curv_gpu_release(g);
        return cls_fail(err, CLS_EOTHER, "out of memory for the device positions");
    }
    float *plo = pos + 4 * nv;
    for (size_t i = 0; i < nv; i++) {
        for (int c = 0; c < 3; c++) {
            float hi = (float)m->v[3 * i + c];
            pos[4 * i + c] = hi;
            plo[4 * i + c] = (float)(m->v[3 * i + c] - (double)hi);
        }
        pos[4 * i + 3] = 0.0f;
        plo[4 * i + 3] = 0.0f;
    }
    const cl_mem_flags ro = CL_MEM_READ_ONLY, rw = CL_MEM_READ_WRITE;
    rc = make_buf(ctx, &g->pos, ro, nv * 4 * sizeof(float), pos, err);
    if (!rc)
        rc = make_buf(ctx, &g->pos_lo, ro, nv * 4 * sizeof(float), plo, err);
    free(pos);
    if (!rc)
        rc = make_buf(ctx, &g->tri, ro, (size_t)m->nfaces * 3 * sizeof(int32_t), m->tri, err);
    if (!rc)
        rc = make_buf(ctx, &g->vf_ptr, ro, (nv + 1) * sizeof(int32_t), adj->vf_ptr, err);
    if (!rc)
        rc = make_buf(ctx, &g->vf_idx, ro, (size_t)adj->vf_ptr[nv] * sizeof(int32_t), adj->vf_idx,
                      err);
    if (!rc)
        rc = make_buf(ctx, &g->vv_ptr, ro, (nv + 1) * sizeof(int32_t), adj->vv_ptr, err);
    if (!rc)
        rc = make_buf(ctx, &g->vv_idx, ro, (size_t)adj->vv_ptr[nv] * sizeof(int32_t), adj->vv_idx,
                      err);
    if (!rc)
        rc = make_buf(ctx, &g->normal, rw, nv * 4 * sizeof(float), NULL, err);
    if (!rc)
        rc = make_buf(ctx, &g->curv, rw, nv * 4 * sizeof(float), NULL, err);
    if (!rc)
        rc = make_buf(ctx, &g->dir1, rw, nv * 4 * sizeof(float), NULL, err);
    if (!rc)
        rc = make_buf(ctx, &g->dir2, rw, nv * 4 * sizeof(float), NULL, err);
    if (!rc) {
        cl_int st = clFinish(ctx->queue);
        if (st != CL_SUCCESS)
            rc = cls_fail(err, CLS_EOTHER, "clFinish failed: %s (%d)", ocl_errstr(st), (int)st);
    }
    if (rc) {
        curv_gpu_release(g);
        return rc;
    }
    g->upload_s = cls_now() - t0;
    return CLS_OK;
}

static int launch(curv_gpu *g, cl_kernel k, const char *name, cl_event *ev, cls_error *err)
{
    size_t ls = g->local_size;
    size_t global = (size_t)g->nverts;
    if (ls)
        global = (global + ls - 1) / ls * ls;
    if (!global)
        return CLS_OK;
    cl_int st =
        clEnqueueNDRangeKernel(g->ctx->queue, k, 1, NULL, &global, ls ? &ls : NULL, 0, NULL, ev);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clEnqueueNDRangeKernel(%s, global %zu) failed: %s (%d)",
                        name, global, ocl_errstr(st), (int)st);
    return CLS_OK;
}

int curv_gpu_run(curv_gpu *g, curv_estimator est, double *kernel_s, cls_error *err)
{
    if (kernel_s)
        *kernel_s = 0.0;
    if (g->nverts == 0)
        return CLS_OK;
    cl_int nv = (cl_int)g->nverts;
    cl_int st = 0;
    st |= clSetKernelArg(g->k_normals, 0, sizeof nv, &nv);
    st |= clSetKernelArg(g->k_normals, 1, sizeof(cl_mem), &g->pos);
    st |= clSetKernelArg(g->k_normals, 2, sizeof(cl_mem), &g->pos_lo);
    st |= clSetKernelArg(g->k_normals, 3, sizeof(cl_mem), &g->tri);
    st |= clSetKernelArg(g->k_normals, 4, sizeof(cl_mem), &g->vf_ptr);
    st |= clSetKernelArg(g->k_normals, 5, sizeof(cl_mem), &g->vf_idx);
    st |= clSetKernelArg(g->k_normals, 6, sizeof(cl_mem), &g->normal);
    cl_kernel kt = est == CURV_VERTEX ? g->k_vertex : g->k_face;
    int a = 0;
    st |= clSetKernelArg(kt, a++, sizeof nv, &nv);
    st |= clSetKernelArg(kt, a++, sizeof(cl_mem), &g->pos);
    st |= clSetKernelArg(kt, a++, sizeof(cl_mem), &g->pos_lo);
    if (est == CURV_VERTEX) {
        st |= clSetKernelArg(kt, a++, sizeof(cl_mem), &g->vv_ptr);
        st |= clSetKernelArg(kt, a++, sizeof(cl_mem), &g->vv_idx);
    } else {
        st |= clSetKernelArg(kt, a++, sizeof(cl_mem), &g->tri);
        st |= clSetKernelArg(kt, a++, sizeof(cl_mem), &g->vf_ptr);
        st |= clSetKernelArg(kt, a++, sizeof(cl_mem), &g->vf_idx);
    }
    st |= clSetKernelArg(kt, a++, sizeof(cl_mem), &g->normal);
    st |= clSetKernelArg(kt, a++, sizeof(cl_mem), &g->curv);
    st |= clSetKernelArg(kt, a++, sizeof(cl_mem), &g->dir1);
    st |= clSetKernelArg(kt, a++, sizeof(cl_mem), &g->dir2);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clSetKernelArg failed for the curvature kernels");
    cl_event e1 = NULL, e2 = NULL;
    int rc = launch(g, g->k_normals, "curv_normals", kernel_s ? &e1 : NULL, err);
    if (!rc)
        rc = launch(g, kt, est == CURV_VERTEX ? "curv_vertex" : "curv_face", kernel_s ? &e2 : NULL,
                    err);
    if (!rc) {
        cl_int fs = clFinish(g->ctx->queue);
        if (fs != CL_SUCCESS)
            rc = cls_fail(err, CLS_EOTHER, "clFinish failed: %s (%d)", ocl_errstr(fs), (int)fs);
    }
    if (!rc && kernel_s)
        *kernel_s = ocl_event_seconds(e1) + ocl_event_seconds(e2);
    if (e1)
        clReleaseEvent(e1);
    if (e2)
        clReleaseEvent(e2);
    return rc;
}

int curv_gpu_read(curv_gpu *g, curv_result *res, cls_error *err)
{
    size_t nv = (size_t)g->nverts;
    if (!nv)
        return CLS_OK;
    float *buf = malloc(nv * 16 * sizeof(float));
    if (!buf)
        return cls_fail(err, CLS_EOTHER, "out of memory reading the curvature back");
    cl_mem src[4] = {g->curv, g->dir1, g->dir2, g->normal};
    cl_int st = CL_SUCCESS;
    for (int b = 0; b < 4 && st == CL_SUCCESS; b++)
        st = clEnqueueReadBuffer(g->ctx->queue, src[b], CL_TRUE, 0, nv * 4 * sizeof(float),
                                 buf + (size_t)b * 4 * nv, 0, NULL, NULL);
    if (st != CL_SUCCESS) {
        free(buf);
        OCL_CHECK(err, st, "clEnqueueReadBuffer");
    }
    const float *c = buf, *d1 = buf + 4 * nv, *d2 = buf + 8 * nv, *n = buf + 12 * nv;
    for (size_t i = 0; i < nv; i++) {
        res->k1[i] = c[4 * i];
        res->k2[i] = c[4 * i + 1];
        res->H[i] = c[4 * i + 2];
        res->K[i] = c[4 * i + 3];
        for (int k = 0; k < 3; k++) {
            res->dir1[3 * i + k] = d1[4 * i + k];
            res->dir2[3 * i + k] = d2[4 * i + k];
            res->normal[3 * i + k] = n[4 * i + k];
        }
    }
    free(buf);
    return CLS_OK;
}

/* ------------------------------------------------------------------ writers */

static FILE *open_tmp(const char *path, char *tmp, size_t cap, cls_error *err)
{
    snprintf(tmp, cap, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        cls_fail(err, CLS_EOTHER, "%s: cannot write: %s", tmp, strerror(errno));
    return f;
}

static int close_rename(FILE *f, const char *tmp, const char *path, cls_error *err)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        remove(tmp);
        return cls_fail(err, CLS_EOTHER, "%s: write failed", path);
    }
    if (rename(tmp, path) != 0) {
        remove(tmp);
        return cls_fail(err, CLS_EOTHER, "%s: cannot rename into place: %s", path, strerror(errno));
    }
    return CLS_OK;
}

int curv_write_csv(const char *path, const mesh *m, const curv_result *res, cls_error *err)
{
    char tmp[4096];
    FILE *f = open_tmp(path, tmp, sizeof tmp, err);
    if (!f)
        return CLS_EOTHER;
    fputs("vertex,x,y,z,k1,k2,H,K,d1x,d1y,d1z,d2x,d2y,d2z,nx,ny,nz\n", f);
    for (int64_t i = 0; i < res->nverts; i++) {
        fprintf(f, "%lld,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g", (long long)i, m->v[3 * i],
                m->v[3 * i + 1], m->v[3 * i + 2], res->k1[i], res->k2[i], res->H[i], res->K[i]);
        for (int k = 0; k < 3; k++)
            fprintf(f, ",%.7g", res->dir1[3 * i + k]);
        for (int k = 0; k < 3; k++)
            fprintf(f, ",%.7g", res->dir2[3 * i + k]);
        for (int k = 0; k < 3; k++)
            fprintf(f, ",%.7g", res->normal[3 * i + k]);
        fputc('\n', f);
    }
    return close_rename(f, tmp, path, err);
}

int curv_write_ply(const char *path, const mesh *m, const curv_result *res, cls_error *err)
{
    char tmp[4096];
    FILE *f = open_tmp(path, tmp, sizeof tmp, err);
    if (!f)
        return CLS_EOTHER;
    fprintf(f,
            "ply\nformat ascii 1.0\ncomment clsolve curvature (k1 >= k2, outward normals: "
            "sphere positive)\nelement vertex %lld\n"
            "property float x\nproperty float y\nproperty float z\n"
            "property float nx\nproperty float ny\nproperty float nz\n"
            "property float k1\nproperty float k2\n"
            "property float mean_curvature\nproperty float gaussian_curvature\n"
            "property float d1x\nproperty float d1y\nproperty float d1z\n"
            "property float d2x\nproperty float d2y\nproperty float d2z\n"
            "element face %lld\nproperty list uchar int vertex_indices\nend_header\n",
            (long long)m->nverts, (long long)m->nfaces);
    for (int64_t i = 0; i < m->nverts; i++) {
        fprintf(f,
                "%.9g %.9g %.9g %.7g %.7g %.7g %.9g %.9g %.9g %.9g %.7g %.7g %.7g %.7g %.7g %.7g\n",
                m->v[3 * i], m->v[3 * i + 1], m->v[3 * i + 2], res->normal[3 * i],
                res->normal[3 * i + 1], res->normal[3 * i + 2], res->k1[i], res->k2[i], res->H[i],
                res->K[i], res->dir1[3 * i], res->dir1[3 * i + 1], res->dir1[3 * i + 2],
                res->dir2[3 * i], res->dir2[3 * i + 1], res->dir2[3 * i + 2]);
    }
    for (int64_t t = 0; t < m->nfaces; t++)
        fprintf(f, "3 %d %d %d\n", (int)m->tri[3 * t], (int)m->tri[3 * t + 1],
                (int)m->tri[3 * t + 2]);
    return close_rename(f, tmp, path, err);
}

/* ------------------------------------------------------------------- meshes */

static int mesh_alloc(mesh *m, int64_t nv, int64_t nf, cls_error *err)
{
    mesh_init(m);
    m->v = malloc((size_t)(nv ? nv : 1) * 3 * sizeof(double));
    m->tri = malloc((size_t)(nf ? nf : 1) * 3 * sizeof(int32_t));
    if (!m->v || !m->tri) {
        mesh_free(m);
        return cls_fail(err, CLS_EOTHER, "out of memory for a mesh of %lld vertices",
                        (long long)nv);
    }
    m->nverts = nv;
    m->nfaces = nf;
    return CLS_OK;
}

int curv_mesh_saddle(int k, double a, mesh *m, cls_error *err)
{
    if (k < 2 || (int64_t)k * k >= INT32_MAX / 2)
        return cls_fail(err, CLS_EUSAGE, "saddle grid size %d is not in [2, 32767]", k);
    int64_t nv = (int64_t)k * k, nf = 2 * (int64_t)(k - 1) * (k - 1);
    int rc = mesh_alloc(m, nv, nf, err);
    if (rc)
        return rc;
    double h = 2.0 * a / (k - 1);
    for (int j = 0; j < k; j++)
        for (int i = 0; i < k; i++) {
            double x = -a + h * i, y = -a + h * j;
            double *p = m->v + 3 * ((int64_t)j * k + i);
            p[0] = x;
            p[1] = y;
            p[2] = x * x - y * y;
        }
    int32_t *t = m->tri;
    for (int j = 0; j + 1 < k; j++)
        for (int i = 0; i + 1 < k; i++) {
            int32_t v00 = j * k + i, v10 = v00 + 1, v01 = v00 + k, v11 = v01 + 1;
            *t++ = v00, *t++ = v10, *t++ = v11; /* counter-clockwise from +z */
            *t++ = v00, *t++ = v11, *t++ = v01;
        }
    return CLS_OK;
}

void curv_saddle_exact(double x, double y, double *H, double *K)
{
    double W2 = 1.0 + 4.0 * x * x + 4.0 * y * y;
    double W = sqrt(W2);
    *H = 4.0 * (x * x - y * y) / (W2 * W);
    *K = -4.0 / (W2 * W2);
}

/* Edge-midpoint table for the icosphere: open addressing on (lo, hi). */
typedef struct {
    int64_t key;
    int32_t v;
} mid_slot;

int curv_mesh_icosphere(int level, double R, mesh *m, cls_error *err)
{
    if (level < 0 || level > 9 || !(R > 0.0))
        return cls_fail(err, CLS_EUSAGE, "icosphere level %d (0..9) or radius %g is invalid", level,
                        R);
    const double g = (1.0 + sqrt(5.0)) / 2.0;
    static const int32_t f0[20][3] = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11},
                                      {1, 5, 9},  {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
                                      {3, 9, 4},  {3, 4, 2},  {3, 2, 6},   {3, 6, 8},  {3, 8, 9},
                                      {4, 9, 5},  {2, 4, 11}, {6, 2, 10},  {8, 6, 7},  {9, 8, 1}};
    const double v0[12][3] = {{-1, g, 0}, {1, g, 0}, {-1, -g, 0}, {1, -g, 0},
                              {0, -1, g}, {0, 1, g}, {0, -1, -g}, {0, 1, -g},
                              {g, 0, -1}, {g, 0, 1}, {-g, 0, -1}, {-g, 0, 1}};
    int64_t nf = 20, nv = 12;
    for (int l = 0; l < level; l++)
        nf *= 4;
    int64_t nv_final = nf / 2 + 2; /* Euler: V - 3F/2 + F = 2 */
    int rc = mesh_alloc(m, nv_final, nf, err);
    if (rc)
        return rc;
    for (int i = 0; i < 12; i++)
        for (int c = 0; c < 3; c++)
            m->v[3 * i + c] = v0[i][c];
    memcpy(m->tri, f0, sizeof f0);
    int64_t cur_f = 20;
    int32_t *next = malloc((size_t)nf * 3 * sizeof(int32_t));
    size_t cap = 1;
    while (cap < (size_t)(3 * nf))
        cap *= 2;
    mid_slot *tab = malloc(cap * sizeof *tab);
    if (!next || !tab) {
        free(next);
        free(tab);
        mesh_free(m);
        return cls_fail(err, CLS_EOTHER, "out of memory for the icosphere");
    }
    for (int l = 0; l < level; l++) {
        for (size_t s = 0; s < cap; s++)
            tab[s].key = -1;
        for (int64_t f = 0; f < cur_f; f++) {
            int32_t c[3], mid[3];
            for (int j = 0; j < 3; j++)
                c[j] = m->tri[3 * f + j];
            for (int j = 0; j < 3; j++) {
                int32_t a = c[j], b = c[(j + 1) % 3];
                int64_t lo = a < b ? a : b, hi = a < b ? b : a;
                int64_t key = lo * 2147483647LL + hi;
                size_t s = (size_t)((uint64_t)key * 0x9E3779B97F4A7C15ULL >> 20) & (cap - 1);
                while (tab[s].key != -1 && tab[s].key != key)
                    s = (s + 1) & (cap - 1);
                if (tab[s].key == -1) {
                    tab[s].key = key;
                    tab[s].v = (int32_t)nv;
                    for (int q = 0; q < 3; q++)
                        m->v[3 * nv + q] = 0.5 * (m->v[3 * a + q] + m->v[3 * b + q]);
                    nv++;
                }
                mid[j] = tab[s].v;
            }
            int32_t *o = next + 12 * f;
            o[0] = c[0], o[1] = mid[0], o[2] = mid[2];
            o[3] = c[1], o[4] = mid[1], o[5] = mid[0];
            o[6] = c[2], o[7] = mid[2], o[8] = mid[1];
            o[9] = mid[0], o[10] = mid[1], o[11] = mid[2];
        }
        cur_f *= 4;
        memcpy(m->tri, next, (size_t)cur_f * 3 * sizeof(int32_t));
    }
    free(next);
    free(tab);
    for (int64_t i = 0; i < nv; i++) {
        double *p = m->v + 3 * i;
        double l = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
        for (int q = 0; q < 3; q++)
            p[q] *= R / l;
    }
    return CLS_OK;
}

/* ---------------------------------------------------------------------- job */

static int write_result(const char *path, const char *fmt, const mesh *m, const curv_result *res,
                        cls_error *err)
{
    return !strcmp(fmt, "ply") ? curv_write_ply(path, m, res, err)
                               : curv_write_csv(path, m, res, err);
}

int curv_run_local(const char *mesh_path, int saddle_k, curv_estimator est, const char *device,
                   int check, const char *out_path, const char *out_format, json_t **summary,
                   cls_error *err)
{
    double t0 = cls_now();
    mesh m;
    mesh_init(&m);
    curv_adjacency adj;
    memset(&adj, 0, sizeof adj);
    curv_result res, ref;
    memset(&res, 0, sizeof res);
    memset(&ref, 0, sizeof ref);
    curv_gpu g;
    memset(&g, 0, sizeof g);
    ocl_ctx ctx;
    int have_ctx = 0;
    double read_s = 0, adj_s = 0, kernel_s = 0, wall_s = 0, ref_s = 0, write_s = 0;
    double rel = NAN;
    ocl_device dev;
    int rc;
    *summary = NULL;

    if (mesh_path)
        rc = mesh_read(mesh_path, &m, err);
    else
        rc = curv_mesh_saddle(saddle_k, 1.0, &m, err);
    if (rc)
        goto done;
    read_s = cls_now() - t0;
    double t1 = cls_now();
    rc = curv_adjacency_build(&m, &adj, err);
    if (rc)
        goto done;
    adj_s = cls_now() - t1;
    rc = curv_result_alloc(&res, m.nverts, err);
    if (rc)
        goto done;
    rc = ocl_pick_device(device ? device : "auto", &dev, err);
    if (!rc)
        rc = ocl_ctx_create(&dev, &ctx, err);
    if (rc)
        goto done;
    have_ctx = 1;
    rc = curv_gpu_setup(&g, &ctx, &m, &adj, err);
    if (rc)
        goto done;
    /* first run builds caches and warms the device; the second is timed */
    rc = curv_gpu_run(&g, est, &kernel_s, err);
    if (!rc) {
        double t2 = cls_now();
        rc = curv_gpu_run(&g, est, &kernel_s, err);
        wall_s = cls_now() - t2;
    }
    if (!rc)
        rc = curv_gpu_read(&g, &res, err);
    if (rc)
        goto done;
    if (check) {
        rc = curv_result_alloc(&ref, m.nverts, err);
        if (rc)
            goto done;
        double t3 = cls_now();
        curv_reference(&m, &adj, est, &ref);
        ref_s = cls_now() - t3;
        rel = curv_rel_diff(&res, &ref);
    }
    if (out_path) {
        double t4 = cls_now();
        rc = write_result(out_path, out_format, &m, &res, err);
        if (rc)
            goto done;
        write_s = cls_now() - t4;
    }

done:;
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string("curvature"));
    json_object_set_new(o, "estimator", json_string(curv_estimator_name(est)));
    json_object_set_new(o, "mesh", mesh_path ? json_string(mesh_path) : json_null());
    if (!mesh_path)
        json_object_set_new(o, "saddle", json_integer(saddle_k));
    json_object_set_new(o, "vertices", json_integer(m.nverts));
    json_object_set_new(o, "faces", json_integer(m.nfaces));
    if (!rc && m.nverts > 0) {
        double hmin = INFINITY, hmax = -INFINITY, kmin = INFINITY, kmax = -INFINITY;
        for (int64_t i = 0; i < m.nverts; i++) {
            hmin = fmin(hmin, res.H[i]), hmax = fmax(hmax, res.H[i]);
            kmin = fmin(kmin, res.K[i]), kmax = fmax(kmax, res.K[i]);
        }
        json_object_set_new(o, "H_range", json_pack("[f, f]", hmin, hmax));
        json_object_set_new(o, "K_range", json_pack("[f, f]", kmin, kmax));
    }
    if (have_ctx)
        json_object_set_new(o, "device",
                            json_pack("{s:i, s:s, s:s, s:s, s:I}", "index", dev.index, "name",
                                      dev.name, "platform", dev.platform_name, "type",
                                      ocl_type_name(dev.type), "local_size",
                                      (json_int_t)g.local_size));
    if (check)
        json_object_set_new(o, "rel_diff_vs_cpu_double",
                            isfinite(rel) ? json_real(rel) : json_null());
    json_object_set_new(o, "output", out_path ? json_string(out_path) : json_null());
    json_object_set_new(o, "times",
                        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "read_s", read_s,
                                  "adjacency_s", adj_s, "upload_s", g.upload_s, "kernel_ms",
                                  1e3 * kernel_s, "estimate_wall_ms", 1e3 * wall_s,
                                  "cpu_reference_ms", 1e3 * ref_s, "write_s", write_s, "total_s",
                                  cls_now() - t0));
    if (rc) {
        json_object_set_new(o, "error", json_string(err->msg));
        json_object_set_new(o, "exit_code", json_integer(rc));
    }
    *summary = o;
    curv_gpu_release(&g);
    if (have_ctx)
        ocl_ctx_release(&ctx);
    curv_result_free(&res);
    curv_result_free(&ref);
    curv_adjacency_free(&adj);
    mesh_free(&m);
    return rc;
}

/* options: {"estimator": "face"|"vertex", "format": "csv"|"ply",
 *           "check": bool, "saddle": k (when there is no input mesh)} */
int curvature_job_run(const char *options_json, const char *input_path, const char *out_dir,
                      const char *device, char **result_json, cls_error *err)
{
    *result_json = NULL;
    json_error_t jerr;
    json_t *opt =
        options_json && *options_json ? json_loads(options_json, 0, &jerr) : json_object();
    if (!opt || !json_is_object(opt)) {
        json_decref(opt);
        return cls_fail(err, CLS_EUSAGE, "curvature options: not a JSON object%s%s",
                        opt ? "" : ": ", opt ? "" : jerr.text);
    }
    curv_estimator est = CURV_FACE;
    const char *fmt = "csv";
    int check = 0, saddle = 0;
    const char *key;
    json_t *val;
    int rc = CLS_OK;
    json_object_foreach(opt, key, val)
    {
        if (!strcmp(key, "estimator")) {
            if (!json_is_string(val) || curv_estimator_parse(json_string_value(val), &est))
                rc = cls_fail(err, CLS_EUSAGE, "curvature option estimator: face or vertex");
        } else if (!strcmp(key, "format")) {
            if (!json_is_string(val) ||
                (strcmp(json_string_value(val), "csv") && strcmp(json_string_value(val), "ply")))
                rc = cls_fail(err, CLS_EUSAGE, "curvature option format: csv or ply");
            else
                fmt = json_string_value(val);
        } else if (!strcmp(key, "check")) {
            if (!json_is_boolean(val))
                rc = cls_fail(err, CLS_EUSAGE, "curvature option check: true or false");
            else
                check = json_is_true(val);
        } else if (!strcmp(key, "saddle")) {
            if (!json_is_integer(val) || json_integer_value(val) < 2 ||
                json_integer_value(val) > 32767)
                rc = cls_fail(err, CLS_EUSAGE, "curvature option saddle: an integer in [2, 32767]");
            else
                saddle = (int)json_integer_value(val);
        } else {
            rc = cls_fail(err, CLS_EUSAGE, "curvature: unknown option '%s'", key);
        }
        if (rc)
            break;
    }
    if (!rc && !input_path && !saddle)
        rc = cls_fail(err, CLS_EUSAGE, "curvature: no mesh given (upload one or set \"saddle\")");
    char out_path[4096] = "";
    if (!rc && out_dir) {
        int n = snprintf(out_path, sizeof out_path, "%s/curvature.%s", out_dir, fmt);
        if (n < 0 || (size_t)n >= sizeof out_path)
            rc = cls_fail(err, CLS_EUSAGE, "curvature: output directory name too long");
    }
    if (rc) {
        json_decref(opt);
        return rc;
    }
    json_t *summary = NULL;
    rc = curv_run_local(input_path, saddle, est, device, check, out_dir ? out_path : NULL, fmt,
                        &summary, err);
    if (summary) {
        json_object_set_new(summary, "files",
                            out_dir && !rc ? json_pack("[s]", strrchr(out_path, '/') + 1)
                                           : json_array());
        *result_json = json_dumps(summary, JSON_COMPACT);
        json_decref(summary);
    }
    json_decref(opt);
    return rc;
}
