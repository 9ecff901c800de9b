/*
 * deform_gpu.c: the deformer on an OpenCL device (see deform.h and
 * kernels/deform.cl): U, the domain tables and the unfolded rest geometry
 * go up once; per frame only q (R floats) and the transforms (12 floats per
 * domain) go up, one launch computes u = U q (deform_uq for one domain,
 * deform_uq_multi for several) and one the vertex update.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "deform.h"
#include "frame.h"

void deform_gpu_release(deform_gpu *g)
{
    cl_mem *bufs[] = {&g->U,  &g->q,  &g->u,  &g->quad_dom, &g->dom_info, &g->dom_uoff, &g->corner,
                      &g->x0, &g->n0, &g->t0, &g->T,        &g->x,        &g->n,        &g->t};
    phys_release(bufs, sizeof bufs / sizeof bufs[0]);
    cl_kernel ks[] = {g->k_single, g->k_multi, g->k_update};
    for (int k = 0; k < 3; k++)
        if (ks[k])
            clReleaseKernel(ks[k]);
    if (g->prog)
        clReleaseProgram(g->prog);
    memset(g, 0, sizeof *g);
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
    g->local_size = phys_local_size(ctx, 256);
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
    rc = phys_buffer(ctx, &g->U, ro, (size_t)M->Ulen * sizeof(float), M->U, "U", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->q, ro, (size_t)M->ncols * sizeof(float), NULL, "q", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->u, rw, (size_t)M->ulen * sizeof(float), NULL, "u", err);
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
            rc = phys_buffer(ctx, &g->quad_dom, ro, (size_t)nq * sizeof(int32_t), qd, "quad_dom",
                             err);
            if (!rc)
                rc = phys_buffer(ctx, &g->dom_info, ro, (size_t)M->ndomains * 4 * sizeof(int32_t),
                                 info, "dom_info", err);
            if (!rc)
                rc = phys_buffer(ctx, &g->dom_uoff, ro, (size_t)M->ndomains * sizeof(int64_t), uoff,
                                 "dom_uoff", err);
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
            rc = phys_buffer(ctx, &g->corner, ro, nc * 2 * sizeof(int32_t), cd, "corner", err);
            if (!rc)
                rc = phys_buffer(ctx, &g->x0, ro, nc * 4 * sizeof(float), geo, "x0", err);
            if (!rc)
                rc = phys_buffer(ctx, &g->n0, ro, nc * 4 * sizeof(float), geo + 4 * nc, "n0", err);
            if (!rc)
                rc = phys_buffer(ctx, &g->t0, ro, nc * 4 * sizeof(float), geo + 8 * nc, "t0", err);
            if (!rc)
                rc = phys_buffer(ctx, &g->T, ro, (size_t)M->ndomains * 12 * sizeof(float), NULL,
                                 "T", err);
            if (!rc)
                rc = phys_buffer(ctx, &g->x, rw, nc * 4 * sizeof(float), NULL, "x", err);
            if (!rc)
                rc = phys_buffer(ctx, &g->n, rw, nc * 4 * sizeof(float), NULL, "n", err);
            if (!rc)
                rc = phys_buffer(ctx, &g->t, rw, nc * 4 * sizeof(float), NULL, "t", err);
        }
        free(cd);
        free(geo);
    }
    if (!rc)
        rc = phys_finish(ctx, "deform upload", err);
    if (rc) {
        deform_gpu_release(g);
        return rc;
    }
    g->upload_s = cls_now() - t0;
    return CLS_OK;
}

/* One launch over n work-items, waited for; *kernel_s its profiled time. */
static int enqueue(deform_gpu *g, cl_kernel k, const char *name, size_t n, double *kernel_s,
                   cls_error *err)
{
    if (kernel_s)
        *kernel_s = 0.0;
    cl_event ev = NULL;
    int rc = phys_launch(g->ctx, k, name, n, g->local_size, kernel_s ? &ev : NULL, err);
    if (!rc)
        rc = phys_finish(g->ctx, name, err);
    if (!rc && ev)
        *kernel_s = ocl_event_seconds(ev);
    if (ev)
        clReleaseEvent(ev);
    return rc;
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
        int rc = phys_write(g->ctx, g->q, (size_t)M->ncols * sizeof(float), qf, "q", err);
        free(qf);
        if (rc)
            return rc;
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
    int rc =
        phys_write(g->ctx, g->T, (size_t)M->ndomains * 12 * sizeof(float), tf, "transforms", err);
    free(tf);
    if (rc)
        return rc;
    cl_int nc = (cl_int)g->ncorners;
    cl_mem args[] = {g->corner, g->x0, g->n0, g->t0, g->u, g->T, g->x, g->n, g->t};
    cl_int st = clSetKernelArg(g->k_update, 0, sizeof nc, &nc);
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
    int rc = phys_read(g->ctx, g->u, (size_t)M->ulen * sizeof(float), p, "u", err);
    if (rc) {
        free(p);
        return rc;
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
        int rc = phys_read(g->ctx, src[b], nc * 4 * sizeof(float), p, "vertices", err);
        if (rc) {
            free(p);
            return rc;
        }
        for (size_t c = 0; c < nc; c++)
            for (int q = 0; q < 3; q++)
                dst[b][3 * c + q] = p[4 * c + q];
    }
    free(p);
    return CLS_OK;
}
