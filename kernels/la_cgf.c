/*
 * la_cgf.c: the host side of the single-device fused CG (la.h, la_cgf_*;
 * the algorithm is solver/krylov/cg.c's, the kernels cg_fused.cl's). Its kernels
 * get their arguments once; an iteration is five clEnqueueNDRangeKernel
 * calls (three for LA_CGF_FUSED) and one non-blocking read of a 64-byte record on a second in-order
 * queue (la->rq) that waits on the scalar kernel's event, so the main queue
 * never drains for a read. Design of the layer: la_priv.h.
 */
#include "../common/parallel.h"
#include "../common/trace.h"
#include "la.h"
#include "la_priv.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunedb.h"

/* ------------------------------------------------------------ fused CG */

#define CGF_REC 8                /* accumulators per record, as cg_fused.cl */
#define CGF_GPU_GROUPS_PER_CU 16 /* cap of the fused loop's grids on GPUs (see la_cgf_*) */

size_t la_cgf_grid_cap(const la_ctx *la)
{
    return la->ocl->dev.type & CL_DEVICE_TYPE_GPU
               ? lai_max_sz(1, (size_t)la->ocl->dev.compute_units * CGF_GPU_GROUPS_PER_CU)
               : (size_t)-1;
}

int lai_cgf_buffer(la_ctx *la, size_t bytes, cl_mem *m, cls_error *err)
{
    cl_int st;
    *m = clCreateBuffer(la->ocl->context, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &st);
    OCL_CHECK(err, st, "clCreateBuffer(fused CG scalars)");
    return CLS_OK;
}

int lai_fused_spmv_bind(la_ctx *la, const la_csr *A, cl_mem x, cl_mem y, cl_mem d, cl_mem ctl,
                        cl_kernel *k, cl_mem *part, size_t *g, size_t *ls, cls_error *err)
{
    int rc;
    if ((rc = la_spmv_kernel_create(la, A, k, err)) ||
        (rc = la_spmv_bind(la, *k, A, x, y, NULL, NULL, NULL, g, ls, err)))
        return rc;
    *g = lai_min_sz(*g, la_cgf_grid_cap(la));
    if ((rc = lai_cgf_buffer(la, 4 * *g * la_acc_size(la), part, err)))
        return rc;
    size_t g2;
    return la_spmv_bind(la, *k, A, x, y, *part, d, ctl, &g2, ls, err);
}

int lai_cgf_bind_update(la_ctx *la, cl_kernel k_upd, cl_kernel k_init, cl_int n, cl_mem sc,
                        cl_mem ctl, const la_vec *b, const la_vec *x, const la_vec *d,
                        const la_vec *r, const la_vec *p, const la_vec *q, cl_mem pu, size_t ls_upd,
                        cls_error *err)
{
    const size_t as = la_acc_size(la);
    int rc;
    if ((rc = lai_set_args(k_upd, "cgf_update", err, 10, A_INT(n), A_MEM(sc), A_MEM(ctl),
                           A_MEM(p->buf), A_MEM(q->buf), A_MEM(x->buf), A_MEM(r->buf),
                           A_MEM(d->buf), A_MEM(pu), A_LOCAL(4 * ls_upd * as))))
        return rc;
    return lai_set_args(k_init, "cgf_init", err, 8, A_INT(n), A_MEM(b->buf), A_MEM(q->buf),
                        A_MEM(r->buf), A_MEM(p->buf), A_MEM(d->buf), A_MEM(pu),
                        A_LOCAL(4 * ls_upd * as));
}

int la_cgf_create(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
                  double stop2, la_cgf_recurrence recurrence, la_cgf *w, cls_error *err)
{
    memset(w, 0, sizeof *w);
    int rc;
    if ((rc = lai_check_len("la_cgf (b)", b->n, A->nrows, err)) ||
        (rc = lai_check_len("la_cgf (x)", x->n, A->nrows, err)) ||
        (rc = lai_check_len("la_cgf (square)", A->ncols, A->nrows, err)) ||
        (dinv && (rc = lai_check_len("la_cgf (diagonal)", dinv->n, A->nrows, err))))
        return rc;
    w->la = la;
    w->A = A;
    w->b = *b;
    w->x = *x;
    if (dinv)
        w->d = *dinv;
    w->stop2 = stop2;
    w->recurrence = recurrence;
    const int classic = recurrence == LA_CGF_CLASSIC;
    const int64_t n = A->nrows;
    const size_t as = lai_acc_size(la);
    if ((rc = la_vec_create(la, n, &w->r, err)) || (rc = la_vec_create(la, n, &w->p, err)) ||
        (rc = la_vec_create(la, n, &w->q, err)))
        goto fail;
    if ((rc = ocl_create_kernel(la->prog, lai_kernel_of(A->variant), &w->k_spmv, err)) ||
        (rc = ocl_create_kernel(la->prog, classic ? "cgc_scalars" : "cgf_scalars", &w->k_scal,
                                err)) ||
        (rc = ocl_create_kernel(la->prog, classic ? "cgc_update" : "cgf_update", &w->k_upd, err)) ||
        (rc = ocl_create_kernel(la->prog, "cgf_init", &w->k_init, err)) ||
        (rc = ocl_create_kernel(la->prog, "cgf_fold", &w->k_fold, err)) ||
        (classic && ((rc = ocl_create_kernel(la->prog, "cgc_beta", &w->k_beta, err)) ||
                     (rc = ocl_create_kernel(la->prog, "cgc_direction", &w->k_dir, err)))))
        goto fail;

    /* geometry */
    size_t gs = 1, ls_spmv = 1;
    w->ls_upd = lai_kernel_max(la, w->k_upd, la->cfg.cg_local_size);
    w->ls_upd = lai_kernel_max(la, w->k_init, w->ls_upd);
    size_t need = (size_t)((n + (int64_t)w->ls_upd - 1) / (int64_t)w->ls_upd);
    w->gu = lai_min_sz(need ? need : 1, lai_max_sz(1, (size_t)la->ocl->dev.compute_units *
                                                          la->cfg.cg_groups_per_cu));
    /* Every group of the update and of the SpMV leaves partial sums that one
     * work-group of cgf_scalars folds each iteration: on a GPU, a tuned
     * geometry of hundreds of groups per CU (right for the kernel alone)
     * made that fold cost 0.12 ms per iteration on an H200 at N = 256. A
     * grid of CGF_GPU_GROUPS_PER_CU per CU still fills the device (grid-
     * stride loops), so the fused loop caps both grids there. CPUs (PoCL)
     * want many small groups and fold cheaply: no cap. */
    const size_t cgf_cap = la_cgf_grid_cap(la);
    w->gu = lai_min_sz(w->gu, cgf_cap);
    if (la->serial_group_sum) /* CLS_EACH (real.cl): one element per work-item */
        w->gu = need ? need : 1;
    w->nu = w->gu;
    w->ls_scal = lai_pow2_floor(lai_kernel_max(la, w->k_scal, la->cfg.local_size));
    w->ls_scal = lai_pow2_floor(lai_kernel_max(la, w->k_fold, w->ls_scal));
    if (classic) {
        w->ls_upd = lai_kernel_max(la, w->k_dir, w->ls_upd);
        w->ls_scal = lai_pow2_floor(lai_kernel_max(la, w->k_beta, w->ls_scal));
    }
    /* the SpMV partials: geometry first (spmv_setup computes it), buffers after */
    if ((rc = lai_cgf_buffer(la, 4 * as, &w->sc, err)) || /* alpha, beta, r_k'z_k */
        (rc = lai_cgf_buffer(la, 2 * sizeof(cl_int), &w->ctl, err)) ||
        (rc = lai_cgf_buffer(la, LA_CGF_SLOTS * CGF_REC * as, &w->hist, err)) ||
        (rc = lai_cgf_buffer(la, 4 * w->nu * as, &w->pu, err)) ||
        (rc = lai_cgf_buffer(la, 8 * as, &w->res, err)))
        goto fail;
    if ((rc = lai_spmv_setup(la, w->k_spmv, A, w->p.buf, w->q.buf, NULL, NULL, NULL, &gs, &ls_spmv,
                             err)))
        goto fail;
    w->gs = lai_min_sz(gs, cgf_cap);
    w->ls_spmv = ls_spmv;
    w->ns = w->gs;
    if ((rc = lai_cgf_buffer(la, 4 * w->ns * as, &w->ps, err)) ||
        (rc = lai_spmv_setup(la, w->k_spmv, A, w->p.buf, w->q.buf, w->ps, w->d.buf, w->ctl, &gs,
                             &ls_spmv, err)))
        goto fail;

    cl_int cn = (cl_int)n, cgs = (cl_int)w->ns, cgu = (cl_int)w->nu, slots = LA_CGF_SLOTS;
    real_arg s2 = lai_mk_acc(la, stop2);
    if ((rc = lai_set_args(w->k_scal, "cgf_scalars", err, 10, A_INT(cgs), A_MEM(w->ps), A_INT(cgu),
                           A_MEM(w->pu), A_MEM(w->sc), A_MEM(w->ctl), A_MEM(w->hist), A_INT(slots),
                           A_REAL(s2), A_LOCAL(4 * w->ls_scal * as))) ||
        (rc = lai_cgf_bind_update(la, w->k_upd, w->k_init, cn, w->sc, w->ctl, &w->b, &w->x, &w->d,
                                  &w->r, &w->p, &w->q, w->pu, w->ls_upd, err)))
        goto fail;
    if (classic &&
        ((rc = lai_set_args(w->k_beta, "cgc_beta", err, 5, A_INT(cgu), A_MEM(w->pu), A_MEM(w->sc),
                            A_MEM(w->ctl), A_LOCAL(4 * w->ls_scal * as))) ||
         (rc = lai_set_args(w->k_dir, "cgc_direction", err, 7, A_INT(cn), A_MEM(w->sc),
                            A_MEM(w->ctl), A_MEM(w->p.buf), A_MEM(w->r.buf), A_MEM(w->d.buf),
                            A_MEM(w->x.buf)))))
        goto fail;
    if ((rc = lai_ring_open(la, w->hist, LA_CGF_SLOTS * CGF_REC * as, "fused CG", err)))
        goto fail;
    return CLS_OK;
fail:
    la_cgf_release(w);
    return rc;
}

int la_cgf_drain(la_cgf *w, cls_error *err)
{
    return la_ring_drain(&w->rg, "fused CG", err);
}

int la_cgf_start(la_cgf *w, int64_t k, double *rr, double *rz, cls_error *err)
{
    la_ctx *la = w->la;
    int rc = la_ring_reset(&w->rg, k, "fused CG", err);
    if (rc)
        return rc;
    double out[8];
    /* q = A x at full precision; r = b - q; z = D^-1 r; p = z; r'z, r'r */
    if ((rc = la_spmv_full(la, w->A, &w->x, &w->q, err)) ||
        (rc = lai_launch(la, w->k_init, "cgf_init", w->gu, w->ls_upd, err)) ||
        (rc = la_cgf_fold_read(la, w->k_fold, w->res, 0, NULL, 0, NULL, w->nu, w->pu, w->ls_scal,
                               out, err)))
        return rc;
    *rz = out[4] + out[5];
    *rr = out[6] + out[7];
    /* the scalars from zero: a start's record says beta 0 (p = z) */
    const unsigned char zero = 0;
    cl_int st = clEnqueueFillBuffer(la->ocl->queue, w->sc, &zero, 1, 0, 4 * lai_acc_size(la), 0,
                                    NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueFillBuffer(fused CG scalars)");
    cl_int ctl[2] = {0, (cl_int)k};
    st = clEnqueueWriteBuffer(la->ocl->queue, w->ctl, CL_TRUE, 0, sizeof ctl, ctl, 0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueWriteBuffer(fused CG control)");
    return CLS_OK;
}

int la_cgf_last(la_cgf *w, double *rr, double *rz, cls_error *err)
{
    double out[8];
    int rc = la_cgf_fold_read(w->la, w->k_fold, w->res, 0, NULL, 0, NULL, w->nu, w->pu, w->ls_scal,
                              out, err);
    *rz = out[4] + out[5];
    *rr = out[6] + out[7];
    return rc;
}

int la_cgf_fold_set(la_ctx *la, cl_kernel k, cl_mem res, size_t gi, cl_mem pi, size_t gb, cl_mem pb,
                    size_t gu, cl_mem pu, size_t ls, cls_error *err)
{
    cl_int cgi = (cl_int)gi, cgb = (cl_int)gb, cgu = (cl_int)gu;
    /* unused inputs still need a valid buffer argument: pu stands in */
    cl_mem mi = pi ? pi : pu, mb = pb ? pb : pu;
    return lai_set_args(k, "cgf_fold", err, 8, A_INT(cgi), A_MEM(mi), A_INT(cgb), A_MEM(mb),
                        A_INT(cgu), A_MEM(pu), A_MEM(res), A_LOCAL(4 * ls * lai_acc_size(la)));
}

int la_cgf_fold_read(la_ctx *la, cl_kernel k, cl_mem res, size_t gi, cl_mem pi, size_t gb,
                     cl_mem pb, size_t gu, cl_mem pu, size_t ls, double out[8], cls_error *err)
{
    int rc;
    unsigned char host[8 * sizeof(double)];
    if ((rc = la_cgf_fold_set(la, k, res, gi, pi, gb, pb, gu, pu, ls, err)) ||
        (rc = lai_launch(la, k, "cgf_fold", 1, ls, err)))
        return rc;
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, res, CL_TRUE, 0, 8 * lai_acc_size(la), host, 0,
                                    NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(fused CG sums)");
    lai_acc_to_double(la, host, 8, out);
    return CLS_OK;
}

int la_cgf_enqueue(la_cgf *w, cls_error *err)
{
    la_ctx *la = w->la;
    if (!la_ring_room(&w->rg))
        return cls_fail(err, CLS_EOTHER, "la_cgf_enqueue: %d iterations already in flight",
                        LA_CGF_SLOTS - 1);
    int rc;
    if ((rc = lai_enqueue(la, w->k_spmv, lai_kernel_of(w->A->variant), w->gs, w->ls_spmv, err)))
        return rc;
    const int classic = w->recurrence == LA_CGF_CLASSIC;
    if ((rc = la_ring_step(la, &w->rg, w->k_scal, w->ls_scal, w->k_upd,
                           classic ? "cgc_update" : "cgf_update", w->gu, w->ls_upd, w->hist,
                           "fused CG", err)))
        return rc;
    if (!classic)
        return CLS_OK;
    /* beta from the two computed r'z, then p = z + beta p (cg_classic.cl) */
    if ((rc = lai_enqueue(la, w->k_beta, "cgc_beta", 1, w->ls_scal, err)))
        return rc;
    return lai_enqueue(la, w->k_dir, "cgc_direction", w->gu, w->ls_upd, err);
}

int la_cgf_next(la_cgf *w, la_cgf_record *rec, cls_error *err)
{
    return la_ring_next(w->la, &w->rg, rec, "fused CG", err);
}

void la_cgf_release(la_cgf *w)
{
    if (!w || !w->la)
        return;
    la_cgf_drain(w, NULL);
    cl_kernel *ks[] = {&w->k_spmv, &w->k_scal, &w->k_upd, &w->k_init,
                       &w->k_fold, &w->k_beta, &w->k_dir};
    cl_mem *ms[] = {&w->ps, &w->pu, &w->sc, &w->ctl, &w->hist, &w->res};
    lai_release_objects(ks, (int)(sizeof ks / sizeof *ks), ms, (int)(sizeof ms / sizeof *ms));
    la_vec_release(&w->r);
    la_vec_release(&w->p);
    la_vec_release(&w->q);
}

int la_cgf_set_update_geometry(la_cgf *w, size_t local_size, size_t groups, cls_error *err)
{
    la_ctx *la = w->la;
    size_t as = lai_acc_size(la);
    int rc = la_cgf_drain(w, err);
    if (rc)
        return rc;
    if (!local_size || !groups)
        return cls_fail(err, CLS_EUSAGE, "bad geometry: local %zu, groups %zu", local_size, groups);
    if (la->serial_group_sum) { /* CLS_EACH (real.cl): the launch covers every row */
        int64_t n = w->A->nrows;
        groups = (size_t)((n + (int64_t)local_size - 1) / (int64_t)local_size);
        if (!groups)
            groups = 1;
    }
    cl_mem pu;
    size_t nu = groups;
    if ((rc = lai_cgf_buffer(la, 4 * nu * as, &pu, err)))
        return rc;
    clReleaseMemObject(w->pu);
    w->pu = pu;
    w->ls_upd = local_size;
    w->gu = groups;
    w->nu = nu;
    cl_int cgu = (cl_int)nu, cgs = (cl_int)w->ns;
    if ((rc = lai_set_args(w->k_scal, "cgf_scalars", err, 4, A_INT(cgs), A_MEM(w->ps), A_INT(cgu),
                           A_MEM(w->pu))))
        return rc;
    OCL_CHECK(err, clSetKernelArg(w->k_upd, 8, sizeof(cl_mem), &w->pu),
              "clSetKernelArg(cgf_update)");
    OCL_CHECK(err, clSetKernelArg(w->k_upd, 9, 4 * local_size * as, NULL),
              "clSetKernelArg(cgf_update)");
    OCL_CHECK(err, clSetKernelArg(w->k_init, 6, sizeof(cl_mem), &w->pu),
              "clSetKernelArg(cgf_init)");
    OCL_CHECK(err, clSetKernelArg(w->k_init, 7, 4 * local_size * as, NULL),
              "clSetKernelArg(cgf_init)");
    if (w->k_beta) {
        OCL_CHECK(err, clSetKernelArg(w->k_beta, 0, sizeof cgu, &cgu), "clSetKernelArg(cgc_beta)");
        OCL_CHECK(err, clSetKernelArg(w->k_beta, 1, sizeof(cl_mem), &w->pu),
                  "clSetKernelArg(cgc_beta)");
    }
    return CLS_OK;
}
