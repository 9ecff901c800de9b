/*
 * deform.c: host side of the model-reduction deformers (see deform.h):
 * the packed model, the CPU double references, the OpenCL driver, the
 * domains / basis / q readers, the u writer and the `deform` job.
 *
 * Per frame: u = U q (one launch: deform_uq for one domain, deform_uq_multi
 * for several), then, with a mesh, x = R (x0 + u_k) + p, n = R n0,
 * t = R t0 for every corner of the unfolded triangle list (deform_update).
 * q (R floats) and the transforms (12 floats per domain) are the only data
 * sent per frame; U, the rest geometry and the tables stay on the device.
 */
#include "deform.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "../matrices/mm.h"
#include "job.h"

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
    /* area-weighted vertex normals of the rest mesh */
    for (int64_t f = 0; f < m->nfaces; f++) {
        const int32_t *t = m->tri + 3 * f;
        const double *a = m->v + 3 * (int64_t)t[0], *b = m->v + 3 * (int64_t)t[1],
                     *c = m->v + 3 * (int64_t)t[2];
        double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        double e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        double cr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                        e1[0] * e2[1] - e1[1] * e2[0]};
        for (int j = 0; j < 3; j++)
            for (int q = 0; q < 3; q++)
                vn[3 * (int64_t)t[j] + q] += cr[q];
    }
    for (int64_t i = 0; i < m->nverts; i++) {
        double *p = vn + 3 * i;
        double l = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
        for (int q = 0; q < 3; q++)
            p[q] = l > 0 ? p[q] / l : 0.0;
    }
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

/* ------------------------------------------------------------------- device */

void deform_gpu_release(deform_gpu *g)
{
    cl_mem *bufs[] = {&g->U,  &g->q,  &g->u,  &g->quad_dom, &g->dom_info, &g->dom_uoff, &g->corner,
                      &g->x0, &g->n0, &g->t0, &g->T,        &g->x,        &g->n,        &g->t};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        if (*bufs[k])
            clReleaseMemObject(*bufs[k]);
    cl_kernel ks[] = {g->k_single, g->k_multi, g->k_update};
    for (int k = 0; k < 3; k++)
        if (ks[k])
            clReleaseKernel(ks[k]);
    if (g->prog)
        clReleaseProgram(g->prog);
    memset(g, 0, sizeof *g);
}

static int dbuf(ocl_ctx *ctx, cl_mem *b, cl_mem_flags fl, size_t bytes, const void *host,
                cls_error *err)
{
    cl_int st;
    int copy = host && bytes;
    *b = clCreateBuffer(ctx->context, fl | (copy ? CL_MEM_COPY_HOST_PTR : 0), bytes ? bytes : 16,
                        copy ? (void *)host : NULL, &st);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clCreateBuffer(%zu bytes) failed: %s (%d)", bytes,
                        ocl_errstr(st), (int)st);
    return CLS_OK;
}

static void float4_pack(float *dst, const double *src) /* 3 doubles -> float4 */
{
    dst[0] = (float)src[0];
    dst[1] = (float)src[1];
    dst[2] = (float)src[2];
    dst[3] = 0.0f;
}

int deform_gpu_setup(deform_gpu *g, ocl_ctx *ctx, const deform_model *M, const deform_unfolded *uf,
                     cls_error *err)
{
    memset(g, 0, sizeof *g);
    g->ctx = ctx;
    g->M = M;
    g->local_size = (ctx->dev.type & CL_DEVICE_TYPE_CPU) ? 0 : 256;
    if (g->local_size > ctx->dev.max_work_group)
        g->local_size = 0;
    const char *srcs[] = {"deform.cl"};
    int rc = ocl_build_program(ctx, srcs, 1, "", &g->prog, err);
    if (!rc)
        rc = ocl_create_kernel(g->prog, "deform_uq", &g->k_single, err);
    if (!rc)
        rc = ocl_create_kernel(g->prog, "deform_uq_multi", &g->k_multi, err);
    if (!rc)
        rc = ocl_create_kernel(g->prog, "deform_update", &g->k_update, err);
    if (rc) {
        deform_gpu_release(g);
        return rc;
    }
    double t0 = cls_now();
    const cl_mem_flags ro = CL_MEM_READ_ONLY, rw = CL_MEM_READ_WRITE;
    rc = dbuf(ctx, &g->U, ro, (size_t)M->Ulen * sizeof(float), M->U, err);
    if (!rc)
        rc = dbuf(ctx, &g->q, ro, (size_t)M->ncols * sizeof(float), NULL, err);
    if (!rc)
        rc = dbuf(ctx, &g->u, rw, (size_t)M->ulen * sizeof(float), NULL, err);
    if (!rc && M->ndomains > 1) {
        int64_t nq = M->ulen / 4;
        int32_t *qd = malloc((size_t)(nq ? nq : 1) * sizeof(int32_t));
        int32_t *info = malloc((size_t)M->ndomains * 4 * sizeof(int32_t));
        int64_t *uoff = malloc((size_t)M->ndomains * sizeof(int64_t));
        if (!qd || !info || !uoff) {
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the domain tables");
        } else {
            for (int64_t d = 0; d < M->ndomains; d++) {
                for (int64_t k = M->row0[d] / 4; k < M->row0[d + 1] / 4; k++)
                    qd[k] = (int32_t)d;
                info[4 * d] = M->r[d];
                info[4 * d + 1] = (int32_t)M->col0[d];
                info[4 * d + 2] = (int32_t)((M->row0[d + 1] - M->row0[d]) / 4);
                info[4 * d + 3] = (int32_t)(M->row0[d] / 4);
                uoff[d] = M->Uoff[d] / 4;
            }
            rc = dbuf(ctx, &g->quad_dom, ro, (size_t)nq * sizeof(int32_t), qd, err);
            if (!rc)
                rc = dbuf(ctx, &g->dom_info, ro, (size_t)M->ndomains * 4 * sizeof(int32_t), info,
                          err);
            if (!rc)
                rc = dbuf(ctx, &g->dom_uoff, ro, (size_t)M->ndomains * sizeof(int64_t), uoff, err);
        }
        free(qd);
        free(info);
        free(uoff);
    }
    if (!rc && uf) {
        size_t nc = (size_t)uf->ncorners;
        g->ncorners = uf->ncorners;
        int32_t *cd = malloc((nc ? nc : 1) * 2 * sizeof(int32_t));
        float *geo = malloc((nc ? nc : 1) * 12 * sizeof(float));
        if (!cd || !geo) {
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the unfolded mesh");
        } else {
            for (size_t c = 0; c < nc; c++) {
                int64_t v = uf->vertex[c];
                int64_t d = deform_domain_of(M, v);
                cd[2 * c] = (int32_t)d;
                cd[2 * c + 1] = (int32_t)(M->row0[d] + 3 * (v - M->vert0[d]));
                float4_pack(geo + 4 * c, uf->x0 + 3 * c);
                float4_pack(geo + 4 * nc + 4 * c, uf->n0 + 3 * c);
                float4_pack(geo + 8 * nc + 4 * c, uf->t0 + 3 * c);
            }
            rc = dbuf(ctx, &g->corner, ro, nc * 2 * sizeof(int32_t), cd, err);
            if (!rc)
                rc = dbuf(ctx, &g->x0, ro, nc * 4 * sizeof(float), geo, err);
            if (!rc)
                rc = dbuf(ctx, &g->n0, ro, nc * 4 * sizeof(float), geo + 4 * nc, err);
            if (!rc)
                rc = dbuf(ctx, &g->t0, ro, nc * 4 * sizeof(float), geo + 8 * nc, err);
            if (!rc)
                rc = dbuf(ctx, &g->T, ro, (size_t)M->ndomains * 12 * sizeof(float), NULL, err);
            if (!rc)
                rc = dbuf(ctx, &g->x, rw, nc * 4 * sizeof(float), NULL, err);
            if (!rc)
                rc = dbuf(ctx, &g->n, rw, nc * 4 * sizeof(float), NULL, err);
            if (!rc)
                rc = dbuf(ctx, &g->t, rw, nc * 4 * sizeof(float), NULL, err);
        }
        free(cd);
        free(geo);
    }
    if (!rc) {
        cl_int st = clFinish(ctx->queue);
        if (st != CL_SUCCESS)
            rc = cls_fail(err, CLS_EOTHER, "clFinish failed: %s (%d)", ocl_errstr(st), (int)st);
    }
    if (rc) {
        deform_gpu_release(g);
        return rc;
    }
    g->upload_s = cls_now() - t0;
    return CLS_OK;
}

static int enqueue(deform_gpu *g, cl_kernel k, const char *name, size_t n, double *kernel_s,
                   cls_error *err)
{
    if (kernel_s)
        *kernel_s = 0.0;
    if (!n)
        return CLS_OK;
    size_t ls = g->local_size, global = n;
    if (ls)
        global = (n + ls - 1) / ls * ls;
    cl_event ev = NULL;
    cl_int st = clEnqueueNDRangeKernel(g->ctx->queue, k, 1, NULL, &global, ls ? &ls : NULL, 0, NULL,
                                       kernel_s ? &ev : NULL);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clEnqueueNDRangeKernel(%s, global %zu) failed: %s (%d)",
                        name, global, ocl_errstr(st), (int)st);
    st = clFinish(g->ctx->queue);
    if (st != CL_SUCCESS) {
        if (ev)
            clReleaseEvent(ev);
        return cls_fail(err, CLS_EOTHER, "%s: clFinish failed: %s (%d)", name, ocl_errstr(st),
                        (int)st);
    }
    if (ev) {
        *kernel_s = ocl_event_seconds(ev);
        clReleaseEvent(ev);
    }
    return CLS_OK;
}

int deform_gpu_uq(deform_gpu *g, const double *q, double *kernel_s, cls_error *err)
{
    const deform_model *M = g->M;
    if (kernel_s)
        *kernel_s = 0.0;
    cl_int st;
    if (M->ncols > 0) {
        float *qf = malloc((size_t)M->ncols * sizeof(float));
        if (!qf)
            return cls_fail(err, CLS_EOTHER, "out of memory for q");
        for (int64_t j = 0; j < M->ncols; j++)
            qf[j] = (float)q[j];
        st = clEnqueueWriteBuffer(g->ctx->queue, g->q, CL_TRUE, 0, (size_t)M->ncols * sizeof(float),
                                  qf, 0, NULL, NULL);
        free(qf);
        OCL_CHECK(err, st, "clEnqueueWriteBuffer(q)");
    }
    cl_int nq = (cl_int)(M->ulen / 4);
    if (M->ndomains == 1) {
        cl_int r = M->r[0], ld4 = nq;
        st = clSetKernelArg(g->k_single, 0, sizeof nq, &nq);
        st |= clSetKernelArg(g->k_single, 1, sizeof r, &r);
        st |= clSetKernelArg(g->k_single, 2, sizeof ld4, &ld4);
        st |= clSetKernelArg(g->k_single, 3, sizeof(cl_mem), &g->U);
        st |= clSetKernelArg(g->k_single, 4, sizeof(cl_mem), &g->q);
        st |= clSetKernelArg(g->k_single, 5, sizeof(cl_mem), &g->u);
        if (st != CL_SUCCESS)
            return cls_fail(err, CLS_EOTHER, "clSetKernelArg failed for deform_uq");
        return enqueue(g, g->k_single, "deform_uq", (size_t)nq, kernel_s, err);
    }
    st = clSetKernelArg(g->k_multi, 0, sizeof nq, &nq);
    st |= clSetKernelArg(g->k_multi, 1, sizeof(cl_mem), &g->quad_dom);
    st |= clSetKernelArg(g->k_multi, 2, sizeof(cl_mem), &g->dom_info);
    st |= clSetKernelArg(g->k_multi, 3, sizeof(cl_mem), &g->dom_uoff);
    st |= clSetKernelArg(g->k_multi, 4, sizeof(cl_mem), &g->U);
    st |= clSetKernelArg(g->k_multi, 5, sizeof(cl_mem), &g->q);
    st |= clSetKernelArg(g->k_multi, 6, sizeof(cl_mem), &g->u);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clSetKernelArg failed for deform_uq_multi");
    return enqueue(g, g->k_multi, "deform_uq_multi", (size_t)nq, kernel_s, err);
}

int deform_gpu_update(deform_gpu *g, const deform_xform *T, double *kernel_s, cls_error *err)
{
    const deform_model *M = g->M;
    if (kernel_s)
        *kernel_s = 0.0;
    if (!g->k_update || !g->corner)
        return cls_fail(err, CLS_EUSAGE, "deform: no mesh was set up for the vertex update");
    float *tf = malloc((size_t)M->ndomains * 12 * sizeof(float));
    if (!tf)
        return cls_fail(err, CLS_EOTHER, "out of memory for the transforms");
    for (int64_t d = 0; d < M->ndomains; d++) {
        for (int k = 0; k < 9; k++)
            tf[12 * d + k] = (float)T[d].R[k];
        for (int k = 0; k < 3; k++)
            tf[12 * d + 9 + k] = (float)T[d].p[k];
    }
    cl_int st = clEnqueueWriteBuffer(g->ctx->queue, g->T, CL_TRUE, 0,
                                     (size_t)M->ndomains * 12 * sizeof(float), tf, 0, NULL, NULL);
    free(tf);
    OCL_CHECK(err, st, "clEnqueueWriteBuffer(T)");
    cl_int nc = (cl_int)g->ncorners;
    cl_mem args[] = {g->corner, g->x0, g->n0, g->t0, g->u, g->T, g->x, g->n, g->t};
    st = clSetKernelArg(g->k_update, 0, sizeof nc, &nc);
    for (int a = 0; a < 9; a++)
        st |= clSetKernelArg(g->k_update, (cl_uint)(a + 1), sizeof(cl_mem), &args[a]);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clSetKernelArg failed for deform_update");
    return enqueue(g, g->k_update, "deform_update", (size_t)g->ncorners, kernel_s, err);
}

int deform_gpu_read_u(deform_gpu *g, double *u, cls_error *err)
{
    const deform_model *M = g->M;
    float *p = malloc((size_t)(M->ulen ? M->ulen : 1) * sizeof(float));
    if (!p)
        return cls_fail(err, CLS_EOTHER, "out of memory reading u");
    cl_int st = clEnqueueReadBuffer(g->ctx->queue, g->u, CL_TRUE, 0,
                                    (size_t)M->ulen * sizeof(float), p, 0, NULL, NULL);
    if (st != CL_SUCCESS) {
        free(p);
        OCL_CHECK(err, st, "clEnqueueReadBuffer(u)");
    }
    deform_unpack(M, p, u);
    free(p);
    return CLS_OK;
}

int deform_gpu_read_vertices(deform_gpu *g, double *x, double *n, double *t, cls_error *err)
{
    size_t nc = (size_t)g->ncorners;
    if (!nc)
        return CLS_OK;
    float *p = malloc(nc * 4 * sizeof(float));
    if (!p)
        return cls_fail(err, CLS_EOTHER, "out of memory reading the vertices");
    double *dst[3] = {x, n, t};
    cl_mem src[3] = {g->x, g->n, g->t};
    for (int b = 0; b < 3; b++) {
        if (!dst[b])
            continue;
        cl_int st = clEnqueueReadBuffer(g->ctx->queue, src[b], CL_TRUE, 0, nc * 4 * sizeof(float),
                                        p, 0, NULL, NULL);
        if (st != CL_SUCCESS) {
            free(p);
            OCL_CHECK(err, st, "clEnqueueReadBuffer(vertices)");
        }
        for (size_t c = 0; c < nc; c++)
            for (int q = 0; q < 3; q++)
                dst[b][3 * c + q] = p[4 * c + q];
    }
    free(p);
    return CLS_OK;
}

/* -------------------------------------------------------------- domains file */

void deform_domains_free(deform_domains *D)
{
    free(D->nv);
    free(D->r);
    free(D->tf_frame);
    free(D->tf_domain);
    free(D->tf);
    memset(D, 0, sizeof *D);
}

static int parse_i64(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (end == s || *end || errno)
        return -1;
    *v = x;
    return 0;
}

static int parse_dbl(const char *s, double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(x))
        return -1;
    *v = x;
    return 0;
}

#define DOM_FAIL(...) (rc = cls_fail_line(err, CLS_EINPUT, lineno, __VA_ARGS__))

int deform_domains_parse(const char *text, size_t len, const char *name, deform_domains *D,
                         cls_error *err)
{
    memset(D, 0, sizeof *D);
    int rc = CLS_OK;
    long long lineno = 0;
    int64_t seen = 0, tcap = 0;
    size_t pos = 0;
    char line[4096];
    while (pos < len && !rc) {
        size_t e = pos;
        while (e < len && text[e] != '\n')
            e++;
        lineno++;
        size_t l = e - pos;
        if (l >= sizeof line) {
            DOM_FAIL("%s:%lld: line longer than %zu bytes", name, lineno, sizeof line - 1);
            break;
        }
        memcpy(line, text + pos, l);
        line[l] = '\0';
        pos = e + 1;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *tok[20], *save = NULL;
        int nt = 0;
        for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
            if (nt == 20) {
                nt++;
                break;
            }
            tok[nt++] = t;
        }
        if (nt == 0)
            continue;
        if (!strcmp(tok[0], "domains")) {
            int64_t d;
            if (D->nv)
                DOM_FAIL("%s:%lld: second 'domains' line", name, lineno);
            else if (nt != 2 || parse_i64(tok[1], &d) || d < 1 || d > INT_MAX / 2)
                DOM_FAIL("%s:%lld: expected 'domains D' with D >= 1", name, lineno);
            else if (d > (int64_t)len) /* every domain needs a line: never trust the count */
                DOM_FAIL("%s:%lld: %lld domains declared but the file is %zu bytes", name, lineno,
                         (long long)d, len);
            else {
                D->ndomains = d;
                D->nv = calloc((size_t)d, sizeof(int64_t));
                D->r = calloc((size_t)d, sizeof(int32_t));
                if (!D->nv || !D->r)
                    rc = cls_fail(err, CLS_EOTHER, "out of memory for %lld domains", (long long)d);
            }
        } else if (!strcmp(tok[0], "domain")) {
            int64_t idx, nv, r;
            if (!D->nv)
                DOM_FAIL("%s:%lld: 'domain' before 'domains D'", name, lineno);
            else if (nt != 4 || parse_i64(tok[1], &idx) || parse_i64(tok[2], &nv) ||
                     parse_i64(tok[3], &r))
                DOM_FAIL("%s:%lld: expected 'domain INDEX NVERTS R'", name, lineno);
            else if (idx != seen)
                DOM_FAIL("%s:%lld: domain %lld out of order (expected %lld)", name, lineno,
                         (long long)idx, (long long)seen);
            else if (seen >= D->ndomains)
                DOM_FAIL("%s:%lld: more domains than the %lld declared", name, lineno,
                         (long long)D->ndomains);
            else if (nv < 1 || nv > ((int64_t)1 << 40))
                DOM_FAIL("%s:%lld: domain %lld: NVERTS must be >= 1", name, lineno, (long long)idx);
            else if (r < 0 || r > 65536)
                DOM_FAIL("%s:%lld: domain %lld: R must be in [0, 65536]", name, lineno,
                         (long long)idx);
            else {
                D->nv[seen] = nv;
                D->r[seen] = (int32_t)r;
                seen++;
            }
        } else if (!strcmp(tok[0], "transform")) {
            int64_t fr, dom;
            double v[12];
            int bad = nt != 15 || parse_i64(tok[1], &fr) || parse_i64(tok[2], &dom);
            for (int k = 0; k < 12 && !bad; k++)
                bad = parse_dbl(tok[3 + k], &v[k]);
            if (bad) {
                DOM_FAIL("%s:%lld: expected 'transform FRAME DOMAIN' and 12 numbers (R row-major, "
                         "p)",
                         name, lineno);
                break;
            }
            if (!D->nv || dom < 0 || dom >= D->ndomains || fr < 0) {
                DOM_FAIL("%s:%lld: transform of unknown domain %lld or negative frame", name,
                         lineno, (long long)dom);
                break;
            }
            /* R must be a rotation */
            double worst = 0;
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                    double s = 0;
                    for (int k = 0; k < 3; k++)
                        s += v[3 * k + a] * v[3 * k + b];
                    worst = fmax(worst, fabs(s - (a == b)));
                }
            double det = v[0] * (v[4] * v[8] - v[5] * v[7]) - v[1] * (v[3] * v[8] - v[5] * v[6]) +
                         v[2] * (v[3] * v[7] - v[4] * v[6]);
            if (worst > 1e-4 || det <= 0) {
                DOM_FAIL("%s:%lld: transform of domain %lld: R is not a rotation (|R^T R - I| = "
                         "%.2g, det %.3g)",
                         name, lineno, (long long)dom, worst, det);
                break;
            }
            if (D->ntransforms == tcap) {
                int64_t nc = tcap ? 2 * tcap : 16;
                int64_t *a = realloc(D->tf_frame, (size_t)nc * sizeof(int64_t));
                if (a)
                    D->tf_frame = a;
                int64_t *b = realloc(D->tf_domain, (size_t)nc * sizeof(int64_t));
                if (b)
                    D->tf_domain = b;
                deform_xform *c = realloc(D->tf, (size_t)nc * sizeof(deform_xform));
                if (c)
                    D->tf = c;
                if (!a || !b || !c) {
                    rc = cls_fail(err, CLS_EOTHER, "out of memory for the transforms");
                    break;
                }
                tcap = nc;
            }
            int64_t k = D->ntransforms++;
            D->tf_frame[k] = fr;
            D->tf_domain[k] = dom;
            memcpy(D->tf[k].R, v, 9 * sizeof(double));
            memcpy(D->tf[k].p, v + 9, 3 * sizeof(double));
        } else {
            DOM_FAIL("%s:%lld: unknown keyword '%s' (domains, domain, transform)", name, lineno,
                     tok[0]);
        }
    }
    if (!rc && !D->nv)
        rc = cls_fail_line(err, CLS_EINPUT, lineno ? lineno : 1, "%s:%lld: no 'domains D' line",
                           name, lineno ? lineno : 1);
    else if (!rc && seen != D->ndomains)
        rc = cls_fail_line(err, CLS_EINPUT, lineno, "%s:%lld: %lld domains declared, %lld given",
                           name, lineno, (long long)D->ndomains, (long long)seen);
    if (!rc) {
        /* stable insertion sort by frame: file order within a frame */
        for (int64_t i = 1; i < D->ntransforms; i++) {
            int64_t fr = D->tf_frame[i], dm = D->tf_domain[i];
            deform_xform x = D->tf[i];
            int64_t j = i - 1;
            while (j >= 0 && D->tf_frame[j] > fr) {
                D->tf_frame[j + 1] = D->tf_frame[j];
                D->tf_domain[j + 1] = D->tf_domain[j];
                D->tf[j + 1] = D->tf[j];
                j--;
            }
            D->tf_frame[j + 1] = fr;
            D->tf_domain[j + 1] = dm;
            D->tf[j + 1] = x;
        }
    }
    if (rc)
        deform_domains_free(D);
    return rc;
}

/* The whole file. A file that cannot be opened or read is an I/O failure
 * (CLS_EOTHER, exit 1), as for the mesh and Matrix Market readers; only
 * what the file holds can be bad input. */
static int slurp(const char *path, char **buf, size_t *len, cls_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            if (ferror(f)) {
                free(b);
                fclose(f);
                return cls_fail(err, CLS_EOTHER, "%s: read error", path);
            }
            break;
        }
        char *nb = realloc(b, cap * 2);
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
        cap *= 2;
    }
    fclose(f);
    if (!b)
        return cls_fail(err, CLS_EOTHER, "%s: out of memory reading the file", path);
    *buf = b;
    *len = n;
    return CLS_OK;
}

int deform_domains_read(const char *path, deform_domains *D, cls_error *err)
{
    char *buf;
    size_t len;
    int rc = slurp(path, &buf, &len, err);
    if (rc)
        return rc;
    rc = deform_domains_parse(buf, len, path, D, err);
    free(buf);
    return rc;
}

void deform_domains_transforms(const deform_domains *D, int64_t frame, deform_xform *T)
{
    for (int64_t d = 0; d < D->ndomains; d++)
        deform_xform_identity(&T[d]);
    for (int64_t k = 0; k < D->ntransforms && D->tf_frame[k] <= frame; k++)
        T[D->tf_domain[k]] = D->tf[k];
}

/* ------------------------------------------------------------ basis and q */

static int raw_kind(const char *path) /* 4: .f32, 8: .f64, 0: Matrix Market */
{
    size_t n = strlen(path);
    if (n > 4 && !strcmp(path + n - 4, ".f32"))
        return 4;
    if (n > 4 && !strcmp(path + n - 4, ".f64"))
        return 8;
    return 0;
}

/* Raw little-endian values as doubles. */
static int read_raw(const char *path, int width, double **vals, int64_t *count, cls_error *err)
{
    char *buf;
    size_t len;
    int rc = slurp(path, &buf, &len, err);
    if (rc)
        return rc;
    if (len % (size_t)width) {
        free(buf);
        return cls_fail(err, CLS_EINPUT, "%s: %zu bytes is not a whole number of %d-byte values",
                        path, len, width);
    }
    int64_t n = (int64_t)(len / (size_t)width);
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
    if (!v) {
        free(buf);
        return cls_fail(err, CLS_EOTHER, "%s: out of memory", path);
    }
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)buf + (size_t)i * (size_t)width;
        if (width == 4) {
            uint32_t b =
                (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            float f;
            memcpy(&f, &b, 4);
            v[i] = f;
        } else {
            uint64_t b = 0;
            for (int k = 7; k >= 0; k--)
                b = b << 8 | p[k];
            memcpy(&v[i], &b, 8);
        }
        if (!isfinite(v[i])) {
            free(buf);
            free(v);
            return cls_fail(err, CLS_EINPUT, "%s: value %lld is not finite", path, (long long)i);
        }
    }
    free(buf);
    *vals = v;
    *count = n;
    return CLS_OK;
}

int deform_read_basis(const char *path, const deform_domains *D, int64_t rank, deform_model *M,
                      cls_error *err)
{
    memset(M, 0, sizeof *M);
    int width = raw_kind(path);
    int rc;
    if (width) {
        double *v;
        int64_t n;
        rc = read_raw(path, width, &v, &n, err);
        if (rc)
            return rc;
        int64_t one_nv;
        int32_t one_r;
        if (D) {
            rc = deform_model_alloc(M, D->ndomains, D->nv, D->r, err);
        } else {
            if (rank < 1) {
                free(v);
                return cls_fail(err, CLS_EUSAGE,
                                "%s: a raw basis needs its rank (columns) or a "
                                "domains file",
                                path);
            }
            if (n % (3 * rank) || n == 0) {
                free(v);
                return cls_fail(err, CLS_EINPUT, "%s: %lld values are not 3n x %lld", path,
                                (long long)n, (long long)rank);
            }
            one_nv = n / (3 * rank);
            one_r = (int32_t)rank;
            rc = deform_model_alloc(M, 1, &one_nv, &one_r, err);
        }
        if (rc) {
            free(v);
            return rc;
        }
        int64_t need = 0;
        for (int64_t d = 0; d < M->ndomains; d++)
            need += 3 * (M->vert0[d + 1] - M->vert0[d]) * M->r[d];
        if (need != n) {
            free(v);
            deform_model_free(M);
            return cls_fail(err, CLS_EINPUT, "%s: %lld values, the domains need %lld", path,
                            (long long)n, (long long)need);
        }
        int64_t k = 0;
        for (int64_t d = 0; d < M->ndomains; d++) {
            int64_t rows = 3 * (M->vert0[d + 1] - M->vert0[d]);
            for (int32_t j = 0; j < M->r[d]; j++)
                for (int64_t i = 0; i < rows; i++)
                    *deform_U_at(M, d, i, j) = (float)v[k++];
        }
        free(v);
        return CLS_OK;
    }
    csr_matrix A;
    csr_init(&A);
    mm_header h;
    rc = mm_read_csr(path, NULL, &A, &h, NULL, err);
    if (rc)
        return rc;
    if (D) {
        int64_t nv = 0, R = 0;
        for (int64_t d = 0; d < D->ndomains; d++)
            nv += D->nv[d], R += D->r[d];
        if (A.nrows != 3 * nv || A.ncols != R) {
            rc = cls_fail(err, CLS_EINPUT, "%s: basis is %lld x %lld, the domains need %lld x %lld",
                          path, (long long)A.nrows, (long long)A.ncols, (long long)(3 * nv),
                          (long long)R);
            csr_free(&A);
            return rc;
        }
        rc = deform_model_alloc(M, D->ndomains, D->nv, D->r, err);
    } else {
        if (A.nrows % 3 || A.nrows == 0 || A.ncols >= INT32_MAX) {
            rc = cls_fail(err, CLS_EINPUT, "%s: basis has %lld rows, not 3 per vertex", path,
                          (long long)A.nrows);
            csr_free(&A);
            return rc;
        }
        int64_t one_nv = A.nrows / 3;
        int32_t one_r = (int32_t)A.ncols;
        rc = deform_model_alloc(M, 1, &one_nv, &one_r, err);
    }
    if (rc) {
        csr_free(&A);
        return rc;
    }
    for (int64_t i = 0; i < A.nrows; i++) {
        int64_t d = deform_domain_of(M, i / 3);
        int64_t row = i - 3 * M->vert0[d];
        for (int64_t k = A.rowptr[i]; k < A.rowptr[i + 1]; k++) {
            int64_t j = A.col[k] - M->col0[d];
            if (j < 0 || j >= M->r[d]) {
                rc = cls_fail(err, CLS_EINPUT,
                              "%s: entry (%lld, %d) lies outside the block of "
                              "domain %lld (columns %lld..%lld)",
                              path, (long long)(i + 1), (int)A.col[k] + 1, (long long)d,
                              (long long)M->col0[d] + 1, (long long)M->col0[d + 1]);
                break;
            }
            *deform_U_at(M, d, row, j) = (float)A.val[k];
        }
        if (rc)
            break;
    }
    csr_free(&A);
    if (rc)
        deform_model_free(M);
    return rc;
}

int deform_read_q(const char *path, int64_t R, double **q, int64_t *frames, cls_error *err)
{
    *q = NULL;
    *frames = 0;
    int width = raw_kind(path);
    if (width) {
        double *v;
        int64_t n;
        int rc = read_raw(path, width, &v, &n, err);
        if (rc)
            return rc;
        if (R == 0 || n == 0 || n % R) {
            free(v);
            return cls_fail(err, CLS_EINPUT, "%s: %lld values are not whole frames of %lld", path,
                            (long long)n, (long long)R);
        }
        *q = v;
        *frames = n / R;
        return CLS_OK;
    }
    csr_matrix A;
    csr_init(&A);
    mm_header h;
    int rc = mm_read_csr(path, NULL, &A, &h, NULL, err);
    if (rc)
        return rc;
    int transposed = 0;
    int64_t F;
    if (A.nrows == R && A.ncols >= 1)
        F = A.ncols;
    else if (A.nrows == 1 && A.ncols == R)
        F = 1, transposed = 1;
    else {
        rc = cls_fail(err, CLS_EINPUT,
                      "%s: q is %lld x %lld, expected %lld rows (one column per "
                      "frame)",
                      path, (long long)A.nrows, (long long)A.ncols, (long long)R);
        csr_free(&A);
        return rc;
    }
    double *v = calloc(nz(R * F), sizeof(double));
    if (!v) {
        csr_free(&A);
        return cls_fail(err, CLS_EOTHER, "%s: out of memory", path);
    }
    for (int64_t i = 0; i < A.nrows; i++)
        for (int64_t k = A.rowptr[i]; k < A.rowptr[i + 1]; k++) {
            if (transposed)
                v[A.col[k]] = A.val[k];
            else
                v[(int64_t)A.col[k] * R + i] = A.val[k];
        }
    csr_free(&A);
    *q = v;
    *frames = F;
    return CLS_OK;
}

int deform_write_u(const char *path, const double *u, int64_t rows, int64_t frames,
                   const char *comment, cls_error *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return cls_fail(err, CLS_EOTHER, "%s: cannot write: %s", tmp, strerror(errno));
    fprintf(f, "%%%%MatrixMarket matrix array real general\n");
    if (comment)
        fprintf(f, "%% %s\n", comment);
    fprintf(f, "%lld %lld\n", (long long)rows, (long long)frames);
    for (int64_t k = 0; k < rows * frames; k++)
        fprintf(f, "%.9g\n", u[k]);
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

/* --------------------------------------------------------------------- run */

int deform_run_local(const deform_run_opts *o, struct json_t **summary, cls_error *err)
{
    double t0 = cls_now();
    deform_domains D;
    memset(&D, 0, sizeof D);
    int have_D = 0, have_ctx = 0;
    deform_model M;
    memset(&M, 0, sizeof M);
    double *q = NULL, *u_all = NULL, *u_ref = NULL, *xg = NULL, *ng = NULL, *tg = NULL, *xr = NULL,
           *nr = NULL, *trf = NULL;
    deform_xform *T = NULL;
    int64_t frames = 0;
    mesh m;
    mesh_init(&m);
    deform_unfolded uf;
    memset(&uf, 0, sizeof uf);
    deform_gpu g;
    memset(&g, 0, sizeof g);
    ocl_ctx ctx;
    ocl_device dev;
    FILE *csv = NULL;
    char csv_tmp[4200] = "";
    double read_s = 0, uq_s = 0, upd_s = 0, worst_u = 0, worst_x = 0, write_s = 0;
    int rc;
    *summary = NULL;

    if (o->domains) {
        rc = deform_domains_read(o->domains, &D, err);
        if (rc)
            goto done;
        have_D = 1;
    }
    rc = deform_read_basis(o->basis, have_D ? &D : NULL, o->rank, &M, err);
    if (rc)
        goto done;
    if (o->q_inline) {
        if (o->q_inline_r != M.ncols) {
            rc = cls_fail(err, CLS_EUSAGE,
                          "deform: q has %lld entries per frame, the basis %lld "
                          "columns",
                          (long long)o->q_inline_r, (long long)M.ncols);
            goto done;
        }
        frames = o->q_frames;
        q = malloc(nz(M.ncols * frames) * sizeof(double));
        if (!q) {
            rc = cls_fail(err, CLS_EOTHER, "out of memory for q");
            goto done;
        }
        memcpy(q, o->q_inline, (size_t)(M.ncols * frames) * sizeof(double));
    } else if (o->q) {
        rc = deform_read_q(o->q, M.ncols, &q, &frames, err);
        if (rc)
            goto done;
    } else if (M.ncols == 0) {
        frames = 1; /* only rigid domains: one frame, no q needed */
        q = calloc(1, sizeof(double));
    } else {
        rc = cls_fail(err, CLS_EUSAGE, "deform: no q given");
        goto done;
    }
    if (o->mesh) {
        rc = mesh_read(o->mesh, &m, err);
        if (rc)
            goto done;
        if (m.nverts != M.nverts) {
            rc = cls_fail(err, CLS_EINPUT, "%s: mesh has %lld vertices, the basis %lld", o->mesh,
                          (long long)m.nverts, (long long)M.nverts);
            goto done;
        }
        rc = deform_unfold(&m, &uf, err);
        if (rc)
            goto done;
    }
    read_s = cls_now() - t0;
    int64_t n3 = 3 * M.nverts, nc = uf.ncorners;
    u_all = malloc(nz(n3 * frames) * sizeof(double));
    u_ref = malloc((size_t)(n3 ? n3 : 1) * sizeof(double));
    T = malloc((size_t)M.ndomains * sizeof(deform_xform));
    if (nc) {
        xg = malloc((size_t)nc * 3 * sizeof(double));
        ng = malloc((size_t)nc * 3 * sizeof(double));
        tg = malloc((size_t)nc * 3 * sizeof(double));
        xr = malloc((size_t)nc * 3 * sizeof(double));
        nr = malloc((size_t)nc * 3 * sizeof(double));
        trf = malloc((size_t)nc * 3 * sizeof(double));
    }
    if (!u_all || !u_ref || !T || (nc && (!xg || !ng || !tg || !xr || !nr || !trf))) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the frames");
        goto done;
    }
    rc = ocl_pick_device(o->device ? o->device : "auto", &dev, err);
    if (!rc)
        rc = ocl_ctx_create(&dev, &ctx, err);
    if (rc)
        goto done;
    have_ctx = 1;
    rc = deform_gpu_setup(&g, &ctx, &M, nc ? &uf : NULL, err);
    if (rc)
        goto done;
    if (o->out_unfolded && nc) {
        snprintf(csv_tmp, sizeof csv_tmp, "%s.tmp", o->out_unfolded);
        csv = fopen(csv_tmp, "w");
        if (!csv) {
            rc = cls_fail(err, CLS_EOTHER, "%s: cannot write: %s", csv_tmp, strerror(errno));
            goto done;
        }
        fputs("frame,corner,vertex,domain,x,y,z,nx,ny,nz,tx,ty,tz\n", csv);
    }
    for (int64_t f = 0; f < frames && !rc; f++) {
        double ks = 0;
        const double *qf = q + f * M.ncols;
        double *uf_out = u_all + f * n3;
        rc = deform_gpu_uq(&g, qf, &ks, err);
        if (rc)
            break;
        uq_s += ks;
        rc = deform_gpu_read_u(&g, uf_out, err);
        if (rc)
            break;
        if (o->check) {
            deform_ref_uq(&M, qf, u_ref);
            worst_u = fmax(worst_u, deform_rel_diff(uf_out, u_ref, n3));
        }
        if (!nc)
            continue;
        if (have_D)
            deform_domains_transforms(&D, f, T);
        else
            for (int64_t d = 0; d < M.ndomains; d++)
                deform_xform_identity(&T[d]);
        rc = deform_gpu_update(&g, T, &ks, err);
        if (rc)
            break;
        upd_s += ks;
        rc = deform_gpu_read_vertices(&g, xg, ng, tg, err);
        if (rc)
            break;
        if (o->check) {
            deform_ref_update(&M, &uf, u_ref, T, xr, nr, trf);
            worst_x = fmax(worst_x, deform_rel_diff(xg, xr, 3 * nc));
            worst_x = fmax(worst_x, deform_rel_diff(ng, nr, 3 * nc));
            worst_x = fmax(worst_x, deform_rel_diff(tg, trf, 3 * nc));
        }
        if (csv) {
            for (int64_t c = 0; c < nc; c++) {
                int64_t v = uf.vertex[c];
                fprintf(csv, "%lld,%lld,%lld,%lld,%.9g,%.9g,%.9g,%.7g,%.7g,%.7g,%.7g,%.7g,%.7g\n",
                        (long long)f, (long long)c, (long long)v,
                        (long long)deform_domain_of(&M, v), xg[3 * c], xg[3 * c + 1], xg[3 * c + 2],
                        ng[3 * c], ng[3 * c + 1], ng[3 * c + 2], tg[3 * c], tg[3 * c + 1],
                        tg[3 * c + 2]);
            }
        }
    }
    if (rc)
        goto done;
    double tw = cls_now();
    if (csv) {
        int bad = ferror(csv);
        if (fclose(csv) != 0 || bad) {
            csv = NULL;
            rc = cls_fail(err, CLS_EOTHER, "%s: write failed", o->out_unfolded);
            goto done;
        }
        csv = NULL;
        if (rename(csv_tmp, o->out_unfolded) != 0) {
            rc = cls_fail(err, CLS_EOTHER, "%s: cannot rename into place: %s", o->out_unfolded,
                          strerror(errno));
            goto done;
        }
        csv_tmp[0] = '\0';
    }
    if (o->out_u) {
        char comment[512];
        snprintf(comment, sizeof comment, "clsolve deform: u = U q, %lld frame(s), %lld domain(s)",
                 (long long)frames, (long long)M.ndomains);
        rc = deform_write_u(o->out_u, u_all, n3, frames, comment, err);
    }
    write_s = cls_now() - tw;

done:;
    if (csv) {
        fclose(csv);
        remove(csv_tmp);
    }
    json_t *js = json_object();
    json_object_set_new(js, "kind", json_string("deform"));
    json_object_set_new(js, "basis", o->basis ? json_string(o->basis) : json_null());
    json_object_set_new(js, "vertices", json_integer(M.nverts));
    json_object_set_new(js, "domains", json_integer(M.ndomains));
    json_object_set_new(js, "modes", json_integer(M.ncols));
    json_object_set_new(js, "frames", json_integer(frames));
    json_object_set_new(js, "corners", json_integer(uf.ncorners));
    if (have_ctx)
        json_object_set_new(js, "device",
                            json_pack("{s:i, s:s, s:s, s:s, s:I}", "index", dev.index, "name",
                                      dev.name, "platform", dev.platform_name, "type",
                                      ocl_type_name(dev.type), "local_size",
                                      (json_int_t)g.local_size));
    if (o->check && !rc) {
        json_object_set_new(js, "max_rel_err_u", json_real(worst_u));
        if (uf.ncorners)
            json_object_set_new(js, "max_rel_err_vertices", json_real(worst_x));
    }
    double fr = frames > 0 ? (double)frames : 1.0;
    json_object_set_new(js, "output", o->out_u ? json_string(o->out_u) : json_null());
    json_object_set_new(js, "times",
                        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "read_s", read_s, "upload_s",
                                  g.upload_s, "uq_kernel_ms_per_frame", 1e3 * uq_s / fr,
                                  "update_kernel_ms_per_frame", 1e3 * upd_s / fr, "write_s",
                                  write_s, "total_s", cls_now() - t0));
    if (rc) {
        json_object_set_new(js, "error", json_string(err->msg));
        json_object_set_new(js, "exit_code", json_integer(rc));
        if (err->line)
            json_object_set_new(js, "line", json_integer(err->line));
    }
    *summary = js;
    deform_gpu_release(&g);
    if (have_ctx)
        ocl_ctx_release(&ctx);
    free(q);
    free(u_all);
    free(u_ref);
    free(T);
    free(xg);
    free(ng);
    free(tg);
    free(xr);
    free(nr);
    free(trf);
    deform_unfolded_free(&uf);
    mesh_free(&m);
    deform_model_free(&M);
    deform_domains_free(&D);
    return rc;
}

/* options: {"q": [..] | [[..], ..] (one array per frame), "q_file": path,
 *           "mesh": path, "domains": path, "rank": n, "check": bool}
 * input_path: the basis. Writes out_dir/u.mtx and, with a mesh,
 * out_dir/unfolded.csv. */
int deform_job_run(const char *options_json, const char *input_path, const char *out_dir,
                   const char *device, char **result_json, cls_error *err)
{
    *result_json = NULL;
    if (!input_path)
        return cls_fail(err, CLS_EUSAGE, "deform: the job needs a basis file");
    json_error_t jerr;
    json_t *opt =
        options_json && *options_json ? json_loads(options_json, 0, &jerr) : json_object();
    if (!opt || !json_is_object(opt)) {
        json_decref(opt);
        return cls_fail(err, CLS_EUSAGE, "deform options: not a JSON object");
    }
    deform_run_opts o;
    memset(&o, 0, sizeof o);
    o.basis = input_path;
    o.device = device;
    double *qin = NULL;
    int rc = CLS_OK;
    const char *key;
    json_t *val;
    json_object_foreach(opt, key, val)
    {
        if (!strcmp(key, "q")) {
            /* [numbers] is one frame; [[numbers], ...] a sequence */
            if (!json_is_array(val) || json_array_size(val) == 0) {
                rc = cls_fail(err, CLS_EUSAGE, "deform option q: a non-empty array");
                break;
            }
            int seq = json_is_array(json_array_get(val, 0));
            size_t F = seq ? json_array_size(val) : 1;
            size_t R = seq ? json_array_size(json_array_get(val, 0)) : json_array_size(val);
            qin = malloc(nz((int64_t)(F * R)) * sizeof(double));
            if (!qin) {
                rc = cls_fail(err, CLS_EOTHER, "out of memory for q");
                break;
            }
            for (size_t f = 0; f < F && !rc; f++) {
                json_t *row = seq ? json_array_get(val, f) : val;
                if (!json_is_array(row) || json_array_size(row) != R) {
                    rc = cls_fail(err, CLS_EUSAGE,
                                  "deform option q: frame %zu does not have %zu "
                                  "numbers",
                                  f, R);
                    break;
                }
                for (size_t j = 0; j < R; j++) {
                    json_t *x = json_array_get(row, j);
                    if (!json_is_number(x)) {
                        rc = cls_fail(err, CLS_EUSAGE, "deform option q: not a number");
                        break;
                    }
                    qin[f * R + j] = json_number_value(x);
                }
            }
            o.q_inline = qin;
            o.q_frames = (int64_t)F;
            o.q_inline_r = (int64_t)R;
        } else if (!strcmp(key, "q_file") || !strcmp(key, "mesh") || !strcmp(key, "domains")) {
            if (!json_is_string(val)) {
                rc = cls_fail(err, CLS_EUSAGE, "deform option %s: a file name", key);
                break;
            }
            if (!strcmp(key, "q_file"))
                o.q = json_string_value(val);
            else if (!strcmp(key, "mesh"))
                o.mesh = json_string_value(val);
            else
                o.domains = json_string_value(val);
        } else if (!strcmp(key, "rank")) {
            if (!json_is_integer(val) || json_integer_value(val) < 1) {
                rc = cls_fail(err, CLS_EUSAGE, "deform option rank: a positive integer");
                break;
            }
            o.rank = json_integer_value(val);
        } else if (!strcmp(key, "check")) {
            if (!json_is_boolean(val)) {
                rc = cls_fail(err, CLS_EUSAGE, "deform option check: true or false");
                break;
            }
            o.check = json_is_true(val);
        } else {
            rc = cls_fail(err, CLS_EUSAGE, "deform: unknown option '%s'", key);
            break;
        }
    }
    if (!rc && o.q_inline && o.q)
        rc = cls_fail(err, CLS_EUSAGE, "deform: give q or q_file, not both");
    char pu[4096], pc[4096];
    if (!rc && out_dir) {
        int a = snprintf(pu, sizeof pu, "%s/u.mtx", out_dir);
        int b = snprintf(pc, sizeof pc, "%s/unfolded.csv", out_dir);
        if (a < 0 || b < 0 || (size_t)a >= sizeof pu || (size_t)b >= sizeof pc)
            rc = cls_fail(err, CLS_EUSAGE, "deform: output directory name too long");
        o.out_u = pu;
        o.out_unfolded = o.mesh ? pc : NULL;
    }
    if (!rc) {
        json_t *summary = NULL;
        rc = deform_run_local(&o, &summary, err);
        if (summary) {
            json_t *files = json_array();
            if (!rc && out_dir) {
                json_array_append_new(files, json_string("u.mtx"));
                if (o.mesh)
                    json_array_append_new(files, json_string("unfolded.csv"));
            }
            json_object_set_new(summary, "files", files);
            *result_json = json_dumps(summary, JSON_COMPACT);
            json_decref(summary);
        }
    }
    free(qin);
    json_decref(opt);
    return rc;
}
