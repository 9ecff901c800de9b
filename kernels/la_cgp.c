/*
 * la_cgp.c: the host side of one part's distributed fused CG iteration
 * (design in la_cgp.h). The device code is la's own: the tuned SpMV format
 * kernels with their compensated epilogue, cgf_update, cgf_init and
 * cgf_fold (cg_fused.cl), each a private kernel object here so that its
 * fixed arguments are set once and an iteration only enqueues.
 */
#include "la_cgp.h"
#include "la_priv.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int la_cgp_create(la_ctx *la, const la_csr *Ai, const la_csr *Ab, int64_t nghost, const la_vec *b,
                  la_vec *x, const la_vec *dinv, la_cgp *w, cls_error *err)
{
    memset(w, 0, sizeof *w);
    w->la = la;
    if (dinv)
        w->d = *dinv;
    const size_t as = la_acc_size(la);
    int rc = la_part_in_set(Ai, Ab, nghost, b, x, "la_cgp_create", &w->in, err);
    if (rc)
        return rc;
    if (dinv && dinv->n != w->in.n)
        return cls_fail(err, CLS_EOTHER, "la_cgp_create: inconsistent part sizes");
    if (!(w->io = malloc(sizeof *w->io)))
        return cls_fail(err, CLS_EOTHER, "out of memory for a part's workspace");
    lai_iohost_init(la, w->io);
    if ((rc = la_vec_create(la, w->in.n, &w->r, err)) ||
        (rc = la_vec_create(la, w->in.n + nghost, &w->p, err)) ||
        (rc = la_vec_create(la, w->in.n, &w->q, err)) ||
        (rc = la_fill(la, 0.0, &w->p, err)) || /* ghost tail defined before any exchange */
        (rc = lai_cgf_buffer(la, 2 * sizeof(cl_int), &w->ctl, err)) ||
        (rc = lai_cgf_buffer(la, 2 * as, &w->sc, err)) ||
        (rc = lai_cgf_buffer(la, 8 * as, &w->res, err)))
        goto fail;
    const cl_int ctl0[2] = {0, 0}; /* running: the host decides when to stop */
    cl_int st =
        clEnqueueWriteBuffer(la->ocl->queue, w->ctl, CL_TRUE, 0, sizeof ctl0, ctl0, 0, NULL, NULL);
    if (st != CL_SUCCESS) {
        rc = cls_fail(err, CLS_EOTHER, "clEnqueueWriteBuffer(control) failed: %s (%d)",
                      ocl_errstr(st), (int)st);
        goto fail;
    }
    if ((rc = lai_fused_spmv_bind(la, Ai, w->p.buf, w->q.buf, w->d.buf, w->ctl, &w->k_spmv_i,
                                  &w->psi, &w->gi, &w->ls_i, err)))
        goto fail;
    if (Ab && Ab->nrows > 0 &&
        (rc = lai_fused_spmv_bind(la, Ab, w->p.buf, w->q.buf, w->d.buf, w->ctl, &w->k_spmv_b,
                                  &w->psb, &w->gb, &w->ls_b, err)))
        goto fail;
    if ((rc = ocl_create_kernel(la->prog, "cgf_update_args", &w->k_upd, err)) ||
        (rc = ocl_create_kernel(la->prog, "cgf_init", &w->k_init, err)) ||
        (rc = ocl_create_kernel(la->prog, "cgf_fold", &w->k_fold, err)) ||
        (rc = ocl_create_kernel(la->prog, "cgc_update", &w->k_updc, err)) ||
        (rc = ocl_create_kernel(la->prog, "cgc_direction", &w->k_dir, err)))
        goto fail;
    w->ls_upd = lai_kernel_max(la, w->k_upd, la->cfg.cg_local_size);
    w->ls_upd = lai_kernel_max(la, w->k_init, w->ls_upd);
    w->ls_upd = lai_kernel_max(la, w->k_updc, w->ls_upd);
    w->ls_upd = lai_kernel_max(la, w->k_dir, w->ls_upd);
    size_t need = (size_t)((w->in.n + (int64_t)w->ls_upd - 1) / (int64_t)w->ls_upd);
    size_t cus = (size_t)la->ocl->dev.compute_units * la->cfg.cg_groups_per_cu;
    w->gu = lai_min_sz(need ? need : 1, cus ? cus : 1);
    w->gu = lai_min_sz(w->gu, la_cgf_grid_cap(la));
    if (la->serial_group_sum) /* CLS_EACH (real.cl): one element per work-item */
        w->gu = need ? need : 1;
    w->ls_fold = lai_pow2_floor(lai_kernel_max(la, w->k_fold, la->cfg.local_size));
    if ((rc = lai_cgf_buffer(la, 4 * w->gu * as, &w->pu, err)))
        goto fail;
    cl_int cn = (cl_int)w->in.n;
    w->cn = cn;
    const real_arg zero = lai_mk_acc(la, 0.0); /* alpha, beta: set by each update */
    if ((rc = lai_set_args(w->k_upd, "cgf_update_args", err, 11, A_INT(cn), A_REAL(zero),
                           A_REAL(zero), A_MEM(w->ctl), A_MEM(w->p.buf), A_MEM(w->q.buf),
                           A_MEM(w->in.x.buf), A_MEM(w->r.buf), A_MEM(w->d.buf), A_MEM(w->pu),
                           A_LOCAL(4 * w->ls_upd * as))) ||
        (rc = lai_cgf_bind_update(la, w->k_updc, w->k_init, cn, w->sc, w->ctl, &w->in.b, &w->in.x,
                                  &w->d, &w->r, &w->p, &w->q, w->pu, w->ls_upd, err)) ||
        (rc =
             lai_set_args(w->k_dir, "cgc_direction", err, 7, A_INT(cn), A_MEM(w->sc), A_MEM(w->ctl),
                          A_MEM(w->p.buf), A_MEM(w->r.buf), A_MEM(w->d.buf), A_MEM(w->in.x.buf))))
        goto fail;
    return CLS_OK;
fail:
    la_cgp_release(w);
    return rc;
}

void la_cgp_release(la_cgp *w)
{
    if (!w || !w->la)
        return;
    lai_sums_discard(&w->ev_res);
    if (w->io) {
        lai_iohost_free(w->la, w->io);
        free(w->io);
        w->io = NULL;
    }
    cl_kernel *ks[] = {&w->k_spmv_i, &w->k_spmv_b, &w->k_upd, &w->k_init,
                       &w->k_fold,   &w->k_updc,   &w->k_dir};
    cl_mem *ms[] = {&w->psi, &w->psb, &w->pu, &w->res, &w->sc, &w->ctl};
    lai_release_objects(ks, (int)(sizeof ks / sizeof *ks), ms, (int)(sizeof ms / sizeof *ms));
    la_vec_release(&w->r);
    la_vec_release(&w->p);
    la_vec_release(&w->q);
}

int la_cgp_spmv(la_cgp *w, int boundary, cls_error *err)
{
    return lai_split_spmv(w->la, boundary, w->in.Ai, w->k_spmv_i, w->gi, w->ls_i, w->k_spmv_b,
                          w->gb, w->ls_b, err);
}

int la_cgp_start(la_cgp *w, cls_error *err)
{
    int rc;
    /* q = A x at full precision (both blocks write their own rows) */
    if ((rc = la_spmv_full(w->la, w->in.Ai, &w->in.x, &w->q, err)) ||
        (w->in.Ab && (rc = la_spmv_full(w->la, w->in.Ab, &w->in.x, &w->q, err))))
        return rc;
    /* r = b - q; z = D^-1 r; p = z; pairs r'z, r'r */
    if ((rc = la_launch(w->la, w->k_init, "cgf_init", w->gu, w->ls_upd, err)))
        return rc;
    return la_cgp_sums_begin(w, 0, err);
}

int la_cgp_sums_begin(la_cgp *w, int with_spmv, cls_error *err)
{
    la_ctx *la = w->la;
    int rc;
    size_t gi = with_spmv && w->in.Ai->nrows > 0 ? w->gi : 0;
    size_t gb = with_spmv && w->k_spmv_b ? w->gb : 0;
    if ((rc = la_cgf_fold_set(la, w->k_fold, w->res, gi, w->psi, gb, w->psb, w->gu, w->pu,
                              w->ls_fold, err)) ||
        (rc = la_launch(la, w->k_fold, "cgf_fold", 1, w->ls_fold, err)))
        return rc;
    if (w->ev_res)
        return cls_fail(err, CLS_EOTHER, "la_cgp: a read of the sums is already pending");
    return lai_sums_read(la, w->res, w->io->host, &w->ev_res, "la_cgp", err);
}

int la_cgp_sums_wait(la_cgp *w, double out[8], cls_error *err)
{
    return lai_sums_wait(w->la, w->io->host, &w->ev_res, out, "la_cgp", err);
}

int la_cgp_update(la_cgp *w, double alpha, double beta, cls_error *err)
{
    /* alpha, beta as the kernel's arguments: no copy ahead of the launch */
    const real_arg a = lai_mk_acc(w->la, alpha), bt = lai_mk_acc(w->la, beta);
    int rc = lai_set_args(w->k_upd, "cgf_update_args", err, 3, A_INT(w->cn), A_REAL(a), A_REAL(bt));
    return rc ? rc : la_launch(w->la, w->k_upd, "cgf_update_args", w->gu, w->ls_upd, err);
}

int la_cgp_update_r(la_cgp *w, double alpha, cls_error *err)
{
    int rc = lai_write_scalars(w->la, w->sc, alpha, 0.0, w->io->scal, w->io->scalf, err);
    return rc ? rc : la_launch(w->la, w->k_updc, "cgc_update", w->gu, w->ls_upd, err);
}

int la_cgp_direction(la_cgp *w, double alpha, double beta, cls_error *err)
{
    /* sc's host copy is free again: the reduction of beta waited for the
     * update that read the last write */
    int rc = lai_write_scalars(w->la, w->sc, alpha, beta, w->io->scal, w->io->scalf, err);
    return rc ? rc : la_launch(w->la, w->k_dir, "cgc_direction", w->gu, w->ls_upd, err);
}
