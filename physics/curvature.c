/*
 * curvature.c: the curvature estimators' CSR adjacency and CPU double
 * reference (see curvature.h). The device driver is curvature_gpu.c, the
 * geometric checks (boundary, angle defect, Gauss-Bonnet) curvature_check.c,
 * the test meshes curvature_mesh.c and the run, writers and job
 * curvature_run.c.
 *
 * The reference mirrors kernels/curvature.cl line for line, in double:
 *   normal   n_i = normalize( sum_{f ∋ i} (a x b) / (|a|^2 |b|^2) ), a, b
 *            the face's edges from i (Max 1999, as Rusinkiewicz's trimesh2)
 *   frame    (u_i, v_i): the axis least aligned with n_i, orthogonalised
 *   per face (Rusinkiewicz 2004): with edges e_j = p_{j+2} - p_{j+1} and
 *            dn_j = n_{j+2} - n_{j+1}, solve in the face frame (t, b)
 *              [e_j.t  e_j.b  0    ] [L]   [dn_j.t]
 *              [0      e_j.t  e_j.b] [M] = [dn_j.b]   (j = 0, 1, 2)
 *                                    [N]
 *            by least squares (normal equations, LDL^T); rotate (L, M, N)
 *            into the vertex frame; weight by the corner's area A_c and
 *            divide by sum A_c, A_c the thesis's (Camillo 2018,
 *            Pseudocode 3.2 and appendix B, after Rusinkiewicz's
 *            trimesh2): the Voronoi area of Meyer et al. when no angle
 *            is obtuse; in an obtuse triangle each acute corner gets the
 *            right triangle that the perpendicular bisector of its edge
 *            to the obtuse corner cuts off, the obtuse corner the rest
 *            (not Meyer's area/4, area/2: K_defect uses those);
 *   per vertex: the same system over the 1-ring, e = p_j - p_i,
 *            dn = n_j - n_i, in the vertex frame;
 *   then one Jacobi rotation diagonalises [ku kuv; kuv kv]: k1 >= k2.
 */
#include "curvature.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
        /* Max's weights, edges scaled by the first one's length, folded
         * faces (more than 120 degrees from the area-weighted sum) left
         * out, as the kernel does: n = sum (a x b) / (|a|^2 |b|^2) */
        dvec s = {0, 0, 0}, sa = {0, 0, 0}, pi = dv(m->v + 3 * i);
        double L = 0.0;
        for (int pass = 0; pass < 2; pass++)
            for (int32_t k = adj->vf_ptr[i]; k < adj->vf_ptr[i + 1]; k++) {
                const int32_t *t = m->tri + 3 * (int64_t)adj->vf_idx[k];
                int64_t a = t[0] == i ? t[1] : t[1] == i ? t[2] : t[0];
                int64_t b = t[0] == i ? t[2] : t[1] == i ? t[0] : t[1];
                dvec ea = dsub(dv(m->v + 3 * a), pi), eb = dsub(dv(m->v + 3 * b), pi);
                if (L == 0.0)
                    L = sqrt(ddot(ea, ea));
                if (!(L > 0.0))
                    continue;
                ea = dscale(ea, 1.0 / L);
                eb = dscale(eb, 1.0 / L);
                dvec c = dcross(ea, eb);
                if (pass == 0) {
                    sa = dadd(sa, c);
                    continue;
                }
                double la = ddot(ea, ea), lb = ddot(eb, eb);
                if (la > 0.0 && lb > 0.0 && ddot(c, sa) > -0.5 * sqrt(ddot(c, c) * ddot(sa, sa)))
                    s = dadd(s, dscale(c, 1.0 / (la * lb)));
            }
        if (!(ddot(s, s) > 0.0))
            s = sa;
        double l = sqrt(ddot(s, s));
        dvec n = l > 0.0 ? dscale(s, 1.0 / l) : (dvec){0, 0, 0};
        normals[3 * i] = n.x, normals[3 * i + 1] = n.y, normals[3 * i + 2] = n.z;
    }
}

/* The three corners' areas of Pseudocode 3.2 of Camillo 2018 (after
 * Rusinkiewicz; Meyer et al.'s Voronoi areas when no angle is obtuse). */
static void corner_areas(dvec e0, dvec e1, dvec e2, double tarea, double a[3]);

void curv_corner_areas(const double e0[3], const double e1[3], const double e2[3], double tarea,
                       double a[3])
{
    dvec E0 = dv(e0), E1 = dv(e1), E2 = dv(e2);
    corner_areas(E0, E1, E2, tarea, a);
}

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
