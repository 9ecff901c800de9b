/*
 * curvature_gpu.c: the device side of the curvature estimators (see
 * curvature.h and kernels/curvature.cl): the mesh and its CSR adjacency go
 * up once, then any number of estimates, two launches each (curv_normals,
 * then curv_face or curv_vertex), read back as float4 per vertex.
 *
 * Positions go up as two floats, hi = (float)p and lo = (float)(p - hi),
 * so that every edge the kernels form keeps float accuracy (curvature is a
 * second difference of positions; see the kernel's header).
 */
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "curvature.h"
#include "frame.h"

void curv_gpu_release(curv_gpu *g)
{
    cl_mem *bufs[] = {&g->pos,    &g->pos_lo, &g->tri,  &g->vf_ptr, &g->vf_idx, &g->vv_ptr,
                      &g->vv_idx, &g->normal, &g->curv, &g->dir1,   &g->dir2};
    phys_release(bufs, sizeof bufs / sizeof bufs[0]);
    cl_kernel ks[] = {g->k_normals, g->k_face, g->k_vertex};
    for (size_t k = 0; k < 3; k++)
        if (ks[k])
            clReleaseKernel(ks[k]);
    if (g->prog)
        clReleaseProgram(g->prog);
    memset(g, 0, sizeof *g);
}

int curv_gpu_setup(curv_gpu *g, ocl_ctx *ctx, const mesh *m, const curv_adjacency *adj,
                   cls_error *err)
{
    memset(g, 0, sizeof *g);
    g->ctx = ctx;
    g->nverts = m->nverts;
    g->nfaces = m->nfaces;
    g->local_size = phys_local_size(ctx, 128);
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
    const size_t f4 = nv * 4 * sizeof(float);
    rc = phys_buffer(ctx, &g->pos, ro, f4, pos, "positions", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->pos_lo, ro, f4, plo, "positions (low parts)", err);
    free(pos);
    if (!rc)
        rc = phys_buffer(ctx, &g->tri, ro, (size_t)m->nfaces * 3 * sizeof(int32_t), m->tri,
                         "triangles", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->vf_ptr, ro, (nv + 1) * sizeof(int32_t), adj->vf_ptr,
                         "vertex-face offsets", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->vf_idx, ro, (size_t)adj->vf_ptr[nv] * sizeof(int32_t),
                         adj->vf_idx, "vertex-face indices", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->vv_ptr, ro, (nv + 1) * sizeof(int32_t), adj->vv_ptr,
                         "1-ring offsets", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->vv_idx, ro, (size_t)adj->vv_ptr[nv] * sizeof(int32_t),
                         adj->vv_idx, "1-ring indices", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->normal, rw, f4, NULL, "normals", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->curv, rw, f4, NULL, "curvatures", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->dir1, rw, f4, NULL, "first directions", err);
    if (!rc)
        rc = phys_buffer(ctx, &g->dir2, rw, f4, NULL, "second directions", err);
    if (!rc)
        rc = phys_finish(ctx, "curvature upload", err);
    if (rc) {
        curv_gpu_release(g);
        return rc;
    }
    g->upload_s = cls_now() - t0;
    return CLS_OK;
}

static int curv_gpu_args(curv_gpu *g, curv_estimator est, cls_error *err)
{
    cl_int nv = (cl_int)g->nverts;
    PHYS_ARG(g->k_normals, 0, nv);
    PHYS_ARG(g->k_normals, 1, g->pos);
    PHYS_ARG(g->k_normals, 2, g->pos_lo);
    PHYS_ARG(g->k_normals, 3, g->tri);
    PHYS_ARG(g->k_normals, 4, g->vf_ptr);
    PHYS_ARG(g->k_normals, 5, g->vf_idx);
    PHYS_ARG(g->k_normals, 6, g->normal);
    cl_kernel kt = est == CURV_VERTEX ? g->k_vertex : g->k_face;
    int a = 0;
    PHYS_ARG(kt, a++, nv);
    PHYS_ARG(kt, a++, g->pos);
    PHYS_ARG(kt, a++, g->pos_lo);
    if (est == CURV_VERTEX) {
        PHYS_ARG(kt, a++, g->vv_ptr);
        PHYS_ARG(kt, a++, g->vv_idx);
    } else {
        PHYS_ARG(kt, a++, g->tri);
        PHYS_ARG(kt, a++, g->vf_ptr);
        PHYS_ARG(kt, a++, g->vf_idx);
    }
    PHYS_ARG(kt, a++, g->normal);
    PHYS_ARG(kt, a++, g->curv);
    PHYS_ARG(kt, a++, g->dir1);
    PHYS_ARG(kt, a++, g->dir2);
    return CLS_OK;
}

int curv_gpu_run(curv_gpu *g, curv_estimator est, double *kernel_s, cls_error *err)
{
    if (kernel_s)
        *kernel_s = 0.0;
    if (g->nverts == 0)
        return CLS_OK;
    int rc = curv_gpu_args(g, est, err);
    if (rc)
        return rc;
    cl_kernel kt = est == CURV_VERTEX ? g->k_vertex : g->k_face;
    cl_event e1 = NULL, e2 = NULL;
    size_t n = (size_t)g->nverts;
    rc = phys_launch(g->ctx, g->k_normals, "curv_normals", n, g->local_size, kernel_s ? &e1 : NULL,
                     err);
    if (!rc)
        rc = phys_launch(g->ctx, kt, est == CURV_VERTEX ? "curv_vertex" : "curv_face", n,
                         g->local_size, kernel_s ? &e2 : NULL, err);
    if (!rc)
        rc = phys_finish(g->ctx, "curvature", err);
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
    int rc = CLS_OK;
    for (int b = 0; b < 4 && !rc; b++)
        rc = phys_read(g->ctx, src[b], nv * 4 * sizeof(float), buf + (size_t)b * 4 * nv,
                       "curvature results", err);
    if (rc) {
        free(buf);
        return rc;
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
