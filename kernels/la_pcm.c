/*
 * la_pcm.c: the host side of one part's preconditioned single-reduction CG
 * (design in la_pcm.h, kernels in pcg_fused.cl). The SpMV is la's tuned
 * format kernel with its epilogue, bound once to u -> w; the scalar,
 * update, sums and restart kernels come from la's auxiliary program
 * (la_aux_program) and are private objects whose arguments are set once, so
 * an iteration only enqueues. One part keeps the scalars on the device and
 * reads a 64-byte record per iteration on la's read-back queue without
 * blocking, as la_cgf.c does.
 */
#include "la_pcm.h"
#include "la_priv.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define PCG_REC 8 /* accumulators per record, as pcg_fused.cl */

static int pcg_write(la_ctx *la, cl_mem m, size_t bytes, const void *src, cls_error *err)
{
    cl_int st = clEnqueueWriteBuffer(la->ocl->queue, m, CL_TRUE, 0, bytes, src, 0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueWriteBuffer(preconditioned CG state)");
    return CLS_OK;
}

void la_pcm_release(la_pcm *w)
{
    if (!w || !w->la)
        return;
    la_pcm_drain(w, NULL);
    lai_sums_discard(&w->ev_res);
    if (w->io) {
        lai_iohost_free(w->la, w->io);
        free(w->io);
        w->io = NULL;
    }
    cl_kernel *ks[] = {&w->k_spmv_i, &w->k_spmv_b, &w->k_upd,  &w->k_dots,
                       &w->k_init,   &w->k_fold,   &w->k_scal, &w->k_wdots};
    cl_mem *ms[] = {&w->psi, &w->psb, &w->pu, &w->res, &w->sc, &w->ctl, &w->hist, &w->pw};
    lai_release_objects(ks, (int)(sizeof ks / sizeof *ks), ms, (int)(sizeof ms / sizeof *ms));
    la_vec *vs[] = {&w->r, &w->u, &w->w, &w->p, &w->s};
    for (size_t i = 0; i < sizeof vs / sizeof *vs; i++)
        la_vec_release(vs[i]);
    w->la = NULL;
}

int la_pcm_create(la_ctx *la, const la_csr *Ai, const la_csr *Ab, int64_t nghost, const la_vec *b,
                  la_vec *x, int one_part, double stop2, la_pcm *w, cls_error *err)
{
    memset(w, 0, sizeof *w);
    w->la = la;
    w->one_part = one_part;
    w->stop2 = stop2;
    const size_t as = la_acc_size(la);
    cl_program aux;
    int rc = la_part_in_set(Ai, Ab, nghost, b, x, "la_pcm_create", &w->in, err);
    if (rc)
        return rc;
    if (one_part && (Ab || nghost)) /* the device-scalar form has no halo */
        return cls_fail(err, CLS_EOTHER, "la_pcm_create: inconsistent part sizes");
    if (!(w->io = malloc(sizeof *w->io)))
        return cls_fail(err, CLS_EOTHER, "out of memory for a part's workspace");
    lai_iohost_init(la, w->io);
    const cl_int ctl0[2] = {0, 0};
    const unsigned char zeros[4 * sizeof(double)] = {0};
    if ((rc = la_aux_program(la, &aux, err)) || (rc = la_vec_create(la, w->in.n, &w->r, err)) ||
        (rc = la_vec_create(la, w->in.n + nghost, &w->u, err)) ||
        (rc = la_vec_create(la, w->in.n, &w->w, err)) ||
        (rc = la_vec_create(la, w->in.n, &w->p, err)) ||
        (rc = la_vec_create(la, w->in.n, &w->s, err)) ||
        (rc = la_fill(la, 0.0, &w->u, err)) || /* ghost tail defined before any exchange */
        (rc = lai_cgf_buffer(la, 2 * sizeof(cl_int), &w->ctl, err)) ||
        (rc = lai_cgf_buffer(la, 4 * as, &w->sc, err)) ||
        (rc = lai_cgf_buffer(la, 8 * as, &w->res, err)) ||
        (rc = pcg_write(la, w->ctl, sizeof ctl0, ctl0, err)) ||
        (rc = pcg_write(la, w->sc, 4 * as, zeros, err)))
        goto fail;
    if ((rc = lai_fused_spmv_bind(la, Ai, w->u.buf, w->w.buf, NULL, w->ctl, &w->k_spmv_i, &w->psi,
                                  &w->gi, &w->ls_i, err)))
        goto fail;
    if (Ab && Ab->nrows > 0 &&
        (rc = lai_fused_spmv_bind(la, Ab, w->u.buf, w->w.buf, NULL, w->ctl, &w->k_spmv_b, &w->psb,
                                  &w->gb, &w->ls_b, err)))
        goto fail;
    if ((rc = ocl_create_kernel(aux, "pcgf_update", &w->k_upd, err)) ||
        (rc = ocl_create_kernel(aux, "pcgf_dots", &w->k_dots, err)) ||
        (rc = ocl_create_kernel(aux, "pcgf_init", &w->k_init, err)) ||
        (rc = ocl_create_kernel(la->prog, "cgf_fold", &w->k_fold, err)))
        goto fail;
    w->ls_upd = lai_kernel_max(la, w->k_upd, la->cfg.cg_local_size);
    w->ls_upd = lai_kernel_max(la, w->k_dots, w->ls_upd);
    w->ls_upd = lai_kernel_max(la, w->k_init, w->ls_upd);
    size_t need = (size_t)((w->in.n + (int64_t)w->ls_upd - 1) / (int64_t)w->ls_upd);
    size_t cus = (size_t)la->ocl->dev.compute_units * la->cfg.cg_groups_per_cu;
    w->gu = lai_min_sz(need ? need : 1, cus ? cus : 1);
    w->gu = lai_min_sz(w->gu, la_cgf_grid_cap(la));
    w->ls_fold = lai_pow2_floor(lai_kernel_max(la, w->k_fold, la->cfg.local_size));
    if ((rc = lai_cgf_buffer(la, 4 * w->gu * as, &w->pu, err)))
        goto fail;
    cl_int cn = (cl_int)w->in.n;
    if ((rc = lai_set_args(w->k_upd, "pcgf_update", err, 9, A_INT(cn), A_MEM(w->sc), A_MEM(w->ctl),
                           A_MEM(w->u.buf), A_MEM(w->w.buf), A_MEM(w->p.buf), A_MEM(w->s.buf),
                           A_MEM(w->in.x.buf), A_MEM(w->r.buf))) ||
        (rc = lai_set_args(w->k_dots, "pcgf_dots", err, 5, A_INT(cn), A_MEM(w->r.buf),
                           A_MEM(w->u.buf), A_MEM(w->pu), A_LOCAL(4 * w->ls_upd * as))) ||
        (rc = lai_set_args(w->k_init, "pcgf_init", err, 6, A_INT(cn), A_MEM(w->in.b.buf),
                           A_MEM(w->w.buf), A_MEM(w->r.buf), A_MEM(w->p.buf), A_MEM(w->s.buf))))
        goto fail;
    if (one_part) {
        cl_int cgs = (cl_int)w->gi, cgu = (cl_int)w->gu, slots = LA_CGF_SLOTS;
        real_arg s2 = lai_mk_acc(la, stop2);
        w->ls_fold = lai_pow2_floor(lai_kernel_max(la, w->k_fold, w->ls_fold));
        if ((rc = ocl_create_kernel(aux, "pcgf_scalars", &w->k_scal, err)))
            goto fail;
        w->ls_fold = lai_pow2_floor(lai_kernel_max(la, w->k_scal, w->ls_fold));
        if ((rc = lai_cgf_buffer(la, LA_CGF_SLOTS * PCG_REC * as, &w->hist, err)) ||
            (rc =
                 lai_set_args(w->k_scal, "pcgf_scalars", err, 10, A_INT(cgs), A_MEM(w->psi),
                              A_INT(cgu), A_MEM(w->pu), A_MEM(w->sc), A_MEM(w->ctl), A_MEM(w->hist),
                              A_INT(slots), A_REAL(s2), A_LOCAL(4 * w->ls_fold * as))))
            goto fail;
        if ((rc = lai_read_queue(la, err)))
            goto fail;
    }
    return CLS_OK;
fail:
    la_pcm_release(w);
    return rc;
}

int la_pcm_restart(la_pcm *w, int64_t k, cls_error *err)
{
    la_ctx *la = w->la;
    int rc;
    if (w->one_part && (rc = la_pcm_drain(w, err)))
        return rc;
    w->rg.k_dev = k;
    w->rg.enq = w->rg.seen = 0;
    const unsigned char zeros[4 * sizeof(double)] = {0};
    const cl_int ctl[2] = {0, (cl_int)(w->one_part ? k : 0)};
    /* q = A x at full precision (into w, free until the next SpMV);
     * r = b - q; p = s = 0; gamma_old = 0 (the next beta is 0) */
    if ((rc = la_spmv_full(la, w->in.Ai, &w->in.x, &w->w, err)) ||
        (w->in.Ab && (rc = la_spmv_full(la, w->in.Ab, &w->in.x, &w->w, err))) ||
        (rc = la_launch(la, w->k_init, "pcgf_init", w->gu, w->ls_upd, err)) ||
        (rc = pcg_write(la, w->sc, 4 * la_acc_size(la), zeros, err)) ||
        (rc = pcg_write(la, w->ctl, sizeof ctl, ctl, err)))
        return rc;
    return CLS_OK;
}

int la_pcm_dots(la_pcm *w, cls_error *err)
{
    return la_launch(w->la, w->k_dots, "pcgf_dots", w->gu, w->ls_upd, err);
}

int la_pcm_spmv(la_pcm *w, int boundary, cls_error *err)
{
    return lai_split_spmv(w->la, boundary, w->in.Ai, w->k_spmv_i, w->gi, w->ls_i, w->k_spmv_b,
                          w->gb, w->ls_b, err);
}

int la_pcm_sums_begin(la_pcm *w, int with_spmv, cls_error *err)
{
    la_ctx *la = w->la;
    int rc;
    size_t gi = with_spmv && w->in.Ai->nrows > 0 ? w->gi : 0;
    size_t gb = with_spmv && w->k_spmv_b ? w->gb : 0;
    if (w->ev_res)
        return cls_fail(err, CLS_EOTHER, "la_pcm: a read of the sums is already pending");
    if ((rc = la_cgf_fold_set(la, w->k_fold, w->res, gi, w->psi, gb, w->psb, w->gu, w->pu,
                              w->ls_fold, err)) ||
        (rc = la_launch(la, w->k_fold, "cgf_fold", 1, w->ls_fold, err)))
        return rc;
    return lai_sums_read(la, w->res, w->io->host, &w->ev_res, "la_pcm", err);
}

int la_pcm_block_sums_begin(la_pcm *w, cls_error *err)
{
    la_ctx *la = w->la;
    const size_t as = la_acc_size(la);
    int rc;
    if (!w->k_wdots) {
        cl_program aux;
        if ((rc = la_aux_program(la, &aux, err)) ||
            (rc = ocl_create_kernel(aux, "spmm_wdots", &w->k_wdots, err)) ||
            (rc = lai_cgf_buffer(la, 4 * w->gu * as, &w->pw, err)))
            return rc;
    }
    if (w->ev_res)
        return cls_fail(err, CLS_EOTHER, "la_pcm: a read of the sums is already pending");
    cl_int n = (cl_int)w->in.n;
    if ((rc = lai_set_args(w->k_wdots, "spmm_wdots", err, 5, A_INT(n), A_MEM(w->u.buf),
                           A_MEM(w->w.buf), A_MEM(w->pw), A_LOCAL(4 * w->ls_upd * as))) ||
        (rc = la_launch(la, w->k_wdots, "spmm_wdots", w->gu, w->ls_upd, err)) ||
        (rc = la_cgf_fold_set(la, w->k_fold, w->res, w->gu, w->pw, 0, NULL, w->gu, w->pu,
                              w->ls_fold, err)) ||
        (rc = la_launch(la, w->k_fold, "cgf_fold", 1, w->ls_fold, err)))
        return rc;
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, w->res, CL_FALSE, 0, 8 * as, w->io->host, 0,
                                    NULL, &w->ev_res);
    if (st != CL_SUCCESS) {
        w->ev_res = NULL;
        OCL_CHECK(err, st, "clEnqueueReadBuffer(part sums)");
    }
    OCL_CHECK(err, clFlush(la->ocl->queue), "clFlush");
    return CLS_OK;
}

int la_pcm_sums_wait(la_pcm *w, double out[8], cls_error *err)
{
    return lai_sums_wait(w->la, w->io->host, &w->ev_res, out, "la_pcm", err);
}

int la_pcm_update(la_pcm *w, double alpha, double beta, cls_error *err)
{
    int rc = lai_write_scalars(w->la, w->sc, alpha, beta, w->io->scal, w->io->scalf, err);
    return rc ? rc : la_launch(w->la, w->k_upd, "pcgf_update", w->gu, w->ls_upd, err);
}

int la_pcm_enqueue(la_pcm *w, cls_error *err)
{
    la_ctx *la = w->la;
    if (!la_ring_room(&w->rg))
        return cls_fail(err, CLS_EOTHER, "la_pcm_enqueue: %d iterations already in flight",
                        LA_CGF_SLOTS - 1);
    int rc;
    if ((rc = la_pcm_spmv(w, 0, err)))
        return rc;
    return la_ring_step(la, &w->rg, w->k_scal, w->ls_fold, w->k_upd, "pcgf_update", w->gu,
                        w->ls_upd, w->hist, "preconditioned CG", err);
}

int la_pcm_next(la_pcm *w, la_cgf_record *rec, cls_error *err)
{
    return la_ring_next(w->la, &w->rg, rec, "preconditioned CG", err);
}

int la_pcm_drain(la_pcm *w, cls_error *err)
{
    return la_ring_drain(&w->rg, "preconditioned CG", err);
}

int la_pcm_last(la_pcm *w, double *rr, double *ru, cls_error *err)
{
    double out[8];
    int rc = la_cgf_fold_read(w->la, w->k_fold, w->res, 0, NULL, 0, NULL, w->gu, w->pu, w->ls_fold,
                              out, err);
    *ru = out[4] + out[5];
    *rr = out[6] + out[7];
    return rc;
}
