/*
 * deform.c: the model-reduction deformers' packed model, unfolded mesh and
 * CPU double references (see deform.h). The device driver is
 * deform_gpu.c, the domains / basis / q readers and the u writer
 * deform_files.c, the run and the `deform` job deform_run.c.
 *
 * Per frame: u = U q (one launch: deform_uq for one domain, deform_uq_multi
 * for several), then, with a mesh, x = R (x0 + u_k) + p, n = R n0,
 * t = R t0 for every corner of the unfolded triangle list (deform_update).
 * q (R floats) and the transforms (12 floats per domain) are the only data
 * sent per frame; U, the rest geometry and the tables stay on the device.
 */
#include "deform.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------------- model */

/* An allocation count that is never 0 (malloc(0) may return NULL). */
static inline size_t nz(int64_t n)
{
    return n > 0 ? (size_t)n : 1;
}

void deform_xform_identity(deform_xform *T)
{
    memset(T, 0, sizeof *T);
    T->R[0] = T->R[4] = T->R[8] = 1.0;
}

void deform_model_free(deform_model *M)
{
    free(M->vert0);
    free(M->col0);
    free(M->row0);
    free(M->Uoff);
    free(M->r);
    free(M->U);
    memset(M, 0, sizeof *M);
}

int deform_model_alloc(deform_model *M, int64_t nd, const int64_t *nv, const int32_t *r,
                       cls_error *err)
{
    memset(M, 0, sizeof *M);
    if (nd < 1)
        return cls_fail(err, CLS_EINPUT, "a deformer needs at least one domain");
    M->ndomains = nd;
    M->vert0 = calloc((size_t)nd + 1, sizeof(int64_t));
    M->col0 = calloc((size_t)nd + 1, sizeof(int64_t));
    M->row0 = calloc((size_t)nd + 1, sizeof(int64_t));
    M->Uoff = calloc((size_t)nd, sizeof(int64_t));
    M->r = calloc((size_t)nd, sizeof(int32_t));
    if (!M->vert0 || !M->col0 || !M->row0 || !M->Uoff || !M->r) {
        deform_model_free(M);
        return cls_fail(err, CLS_EOTHER, "out of memory for %lld domains", (long long)nd);
    }
    int64_t U = 0;
    for (int64_t d = 0; d < nd; d++) {
        if (nv[d] < 1 || r[d] < 0 || nv[d] > ((int64_t)1 << 40)) {
            int64_t bad_nv = nv[d];
            int bad_r = r[d];
            deform_model_free(M);
            return cls_fail(err, CLS_EINPUT,
                            "domain %lld: %lld vertices and %d modes (need >= 1 and >= 0)",
                            (long long)d, (long long)bad_nv, bad_r);
        }
        M->r[d] = r[d];
        int64_t ld = (3 * nv[d] + 3) / 4 * 4;
        M->vert0[d + 1] = M->vert0[d] + nv[d];
        M->col0[d + 1] = M->col0[d] + r[d];
        M->row0[d + 1] = M->row0[d] + ld;
        M->Uoff[d] = U;
        U += ld * r[d];
    }
    M->nverts = M->vert0[nd];
    M->ncols = M->col0[nd];
    M->ulen = M->row0[nd];
    M->Ulen = U;
    if (M->ulen / 4 >= INT_MAX || M->ncols >= INT_MAX || nd >= INT_MAX) {
        deform_model_free(M);
        return cls_fail(err, CLS_EINPUT, "deformer too large for 32-bit row-group indices");
    }
    M->U = calloc((size_t)(U ? U : 1), sizeof(float));
    if (!M->U) {
        deform_model_free(M);
        return cls_fail(err, CLS_EOTHER, "out of memory for a basis of %lld floats", (long long)U);
    }
    return CLS_OK;
}

int64_t deform_domain_of(const deform_model *M, int64_t vertex)
{
    int64_t lo = 0, hi = M->ndomains - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        if (M->vert0[mid] <= vertex)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

void deform_ref_uq(const deform_model *M, const double *q, double *u)
{
    for (int64_t d = 0; d < M->ndomains; d++) {
        int64_t rows = 3 * (M->vert0[d + 1] - M->vert0[d]);
        double *ud = u + 3 * M->vert0[d];
        const double *qd = q + M->col0[d];
        for (int64_t i = 0; i < rows; i++) {
            double s = 0.0;
            for (int32_t j = 0; j < M->r[d]; j++)
                s += (double)*deform_U_at(M, d, i, j) * qd[j];
            ud[i] = s;
        }
    }
}

void deform_unpack(const deform_model *M, const float *packed, double *u)
{
    for (int64_t d = 0; d < M->ndomains; d++) {
        int64_t rows = 3 * (M->vert0[d + 1] - M->vert0[d]);
        for (int64_t i = 0; i < rows; i++)
            u[3 * M->vert0[d] + i] = packed[M->row0[d] + i];
    }
}

double deform_rel_diff(const double *a, const double *b, int64_t n)
{
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* ----------------------------------------------------------------- unfolding */

void deform_unfolded_free(deform_unfolded *uf)
{
    free(uf->vertex);
    free(uf->x0);
    free(uf->n0);
    free(uf->t0);
    memset(uf, 0, sizeof *uf);
}

int deform_unfold(const mesh *m, deform_unfolded *uf, cls_error *err)
{
    memset(uf, 0, sizeof *uf);
    int64_t nc = 3 * m->nfaces;
    if (nc >= INT_MAX)
        return cls_fail(err, CLS_EINPUT, "mesh too large to unfold (%lld faces)",
                        (long long)m->nfaces);
    for (int64_t k = 0; k < nc; k++)
        if (m->tri[k] < 0 || m->tri[k] >= m->nverts)
            return cls_fail(err, CLS_EINPUT, "face %lld uses vertex %d of %lld", (long long)(k / 3),
                            (int)m->tri[k], (long long)m->nverts);
    uf->ncorners = nc;
    size_t n = (size_t)(nc ? nc : 1);
    uf->vertex = malloc(n * sizeof(int32_t));
    uf->x0 = malloc(3 * n * sizeof(double));
    uf->n0 = malloc(3 * n * sizeof(double));
    uf->t0 = malloc(3 * n * sizeof(double));
    double *vn = calloc(3 * (size_t)(m->nverts ? m->nverts : 1), sizeof(double));
    if (!uf->vertex || !uf->x0 || !uf->n0 || !uf->t0 || !vn) {
        free(vn);
        deform_unfolded_free(uf);
        return cls_fail(err, CLS_EOTHER, "out of memory unfolding the mesh");
    }
    mesh_vertex_normals(m, vn); /* area-weighted, of the rest mesh */
    for (int64_t c = 0; c < nc; c++) {
        int32_t v = m->tri[c];
        int32_t w = m->tri[c - c % 3 + (c % 3 + 1) % 3]; /* next corner of the face */
        uf->vertex[c] = v;
        const double *nrm = vn + 3 * (int64_t)v;
        double e[3];
        for (int q = 0; q < 3; q++) {
            uf->x0[3 * c + q] = m->v[3 * (int64_t)v + q];
            uf->n0[3 * c + q] = nrm[q];
            e[q] = m->v[3 * (int64_t)w + q] - m->v[3 * (int64_t)v + q];
        }
        double en = e[0] * nrm[0] + e[1] * nrm[1] + e[2] * nrm[2];
        for (int q = 0; q < 3; q++)
            e[q] -= en * nrm[q];
        double l = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
        for (int q = 0; q < 3; q++)
            uf->t0[3 * c + q] = l > 0 ? e[q] / l : 0.0;
    }
    free(vn);
    return CLS_OK;
}

static void xform_apply(const deform_xform *T, const double *a, double *out, int translate)
{
    for (int r = 0; r < 3; r++)
        out[r] = T->R[3 * r] * a[0] + T->R[3 * r + 1] * a[1] + T->R[3 * r + 2] * a[2] +
                 (translate ? T->p[r] : 0.0);
}

void deform_ref_update(const deform_model *M, const deform_unfolded *uf, const double *u,
                       const deform_xform *T, double *x, double *n, double *t)
{
    for (int64_t c = 0; c < uf->ncorners; c++) {
        int64_t v = uf->vertex[c];
        const deform_xform *tr = T + deform_domain_of(M, v);
        double xd[3];
        for (int q = 0; q < 3; q++)
            xd[q] = uf->x0[3 * c + q] + u[3 * v + q];
        xform_apply(tr, xd, x + 3 * c, 1);
        xform_apply(tr, uf->n0 + 3 * c, n + 3 * c, 0);
        xform_apply(tr, uf->t0 + 3 * c, t + 3 * c, 0);
    }
}
