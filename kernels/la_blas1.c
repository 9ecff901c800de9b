/*
 * la_blas1.c: the vector operations of the classic CG loop and of the
 * tests' references: two-stage dots (dot.cl), axpy, xpay, copy, fill, the
 * Jacobi pointwise product, the fused x/r(/z) updates that return r'r (and
 * r'z), and the true residual r = b - A x. Design of the layer: la_priv.h.
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

/* ------------------------------------------------------------------ kernels */

int la_dot(la_ctx *la, const la_vec *x, const la_vec *y, double *out, cls_error *err)
{
    int rc;
    *out = 0.0;
    if ((rc = lai_check_len("la_dot", x->n, y->n, err)))
        return rc;
    if (x->n == 0)
        return CLS_OK;
    cl_int n = (cl_int)x->n;
    size_t g = lai_groups_for(la, x->n);
    if ((rc = lai_set_args(la->k_dot_partial, "dot_partial", err, 5, A_INT(n), A_MEM(x->buf),
                           A_MEM(y->buf), A_MEM(la->partial),
                           A_LOCAL(la->cfg.local_size * lai_acc_size(la)))) ||
        (rc = lai_launch(la, la->k_dot_partial, "dot_partial", g, la->cfg.local_size, err)))
        return rc;
    return lai_reduce_and_read(la, g, 1, out, err);
}

int la_dot2(la_ctx *la, const la_vec *x, const la_vec *y, const la_vec *z, double out[2],
            cls_error *err)
{
    int rc;
    out[0] = out[1] = 0.0;
    if ((rc = lai_check_len("la_dot2", x->n, y->n, err)) ||
        (rc = lai_check_len("la_dot2", x->n, z->n, err)))
        return rc;
    if (x->n == 0)
        return CLS_OK;
    cl_int n = (cl_int)x->n;
    size_t g = lai_groups_for(la, x->n);
    if ((rc = lai_set_args(la->k_dot2_partial, "dot2_partial", err, 6, A_INT(n), A_MEM(x->buf),
                           A_MEM(y->buf), A_MEM(z->buf), A_MEM(la->partial),
                           A_LOCAL(2 * la->cfg.local_size * lai_acc_size(la)))) ||
        (rc = lai_launch(la, la->k_dot2_partial, "dot2_partial", g, la->cfg.local_size, err)))
        return rc;
    return lai_reduce_and_read(la, g, 2, out, err);
}

int la_axpy(la_ctx *la, double a, const la_vec *x, la_vec *y, cls_error *err)
{
    int rc;
    if ((rc = lai_check_len("la_axpy", x->n, y->n, err)) || x->n == 0)
        return rc;
    cl_int n = (cl_int)x->n;
    real_arg ra = lai_mk_real(la, a);
    if ((rc = lai_set_args(la->k_axpy, "axpy", err, 4, A_INT(n), A_REAL(ra), A_MEM(x->buf),
                           A_MEM(y->buf))))
        return rc;
    return lai_launch(la, la->k_axpy, "axpy", lai_groups_for(la, x->n), la->cfg.local_size, err);
}

int la_xpay(la_ctx *la, const la_vec *x, double a, la_vec *y, cls_error *err)
{
    int rc;
    if ((rc = lai_check_len("la_xpay", x->n, y->n, err)) || x->n == 0)
        return rc;
    cl_int n = (cl_int)x->n;
    real_arg ra = lai_mk_real(la, a);
    if ((rc = lai_set_args(la->k_xpay, "xpay", err, 4, A_INT(n), A_MEM(x->buf), A_REAL(ra),
                           A_MEM(y->buf))))
        return rc;
    return lai_launch(la, la->k_xpay, "xpay", lai_groups_for(la, x->n), la->cfg.local_size, err);
}

int la_copy(la_ctx *la, const la_vec *x, la_vec *y, cls_error *err)
{
    int rc;
    if ((rc = lai_check_len("la_copy", x->n, y->n, err)) || x->n == 0 || x->buf == y->buf)
        return rc;
    cl_int n = (cl_int)x->n;
    if ((rc = lai_set_args(la->k_copy, "copy", err, 3, A_INT(n), A_MEM(x->buf), A_MEM(y->buf))))
        return rc;
    return lai_launch(la, la->k_copy, "copy", lai_groups_for(la, x->n), la->cfg.local_size, err);
}

int la_pointwise(la_ctx *la, const la_vec *d, const la_vec *r, la_vec *z, cls_error *err)
{
    int rc;
    if ((rc = lai_check_len("la_pointwise", d->n, r->n, err)) ||
        (rc = lai_check_len("la_pointwise", d->n, z->n, err)) || d->n == 0)
        return rc;
    cl_int n = (cl_int)d->n;
    if ((rc = lai_set_args(la->k_pointwise, "pointwise", err, 4, A_INT(n), A_MEM(d->buf),
                           A_MEM(r->buf), A_MEM(z->buf))))
        return rc;
    return lai_launch(la, la->k_pointwise, "pointwise", lai_groups_for(la, d->n),
                      la->cfg.local_size, err);
}

int la_cg_update(la_ctx *la, double alpha, const la_vec *p, const la_vec *q, la_vec *x, la_vec *r,
                 double *rr, cls_error *err)
{
    int rc;
    *rr = 0.0;
    if ((rc = lai_check_len("la_cg_update", p->n, q->n, err)) ||
        (rc = lai_check_len("la_cg_update", p->n, x->n, err)) ||
        (rc = lai_check_len("la_cg_update", p->n, r->n, err)))
        return rc;
    if (x->buf == r->buf || x->buf == p->buf || x->buf == q->buf || r->buf == p->buf ||
        r->buf == q->buf)
        return cls_fail(err, CLS_EOTHER, "la_cg_update: x and r must not alias p, q or each other");
    if (p->n == 0)
        return CLS_OK;
    cl_int n = (cl_int)p->n;
    real_arg ra = lai_mk_real(la, alpha);
    size_t g = lai_groups_for(la, p->n);
    if ((rc = lai_set_args(la->k_cg_update, "cg_update", err, 8, A_INT(n), A_REAL(ra),
                           A_MEM(p->buf), A_MEM(q->buf), A_MEM(x->buf), A_MEM(r->buf),
                           A_MEM(la->partial), A_LOCAL(la->cfg.local_size * lai_acc_size(la)))) ||
        (rc = lai_launch(la, la->k_cg_update, "cg_update", g, la->cfg.local_size, err)))
        return rc;
    return lai_reduce_and_read(la, g, 1, rr, err);
}

int la_pcg_update(la_ctx *la, double alpha, const la_vec *p, const la_vec *q, la_vec *x, la_vec *r,
                  const la_vec *d, la_vec *z, double *rz, double *rr, cls_error *err)
{
    int rc;
    *rz = *rr = 0.0;
    if ((rc = lai_check_len("la_pcg_update", p->n, q->n, err)) ||
        (rc = lai_check_len("la_pcg_update", p->n, x->n, err)) ||
        (rc = lai_check_len("la_pcg_update", p->n, r->n, err)) ||
        (rc = lai_check_len("la_pcg_update", p->n, d->n, err)) ||
        (rc = lai_check_len("la_pcg_update", p->n, z->n, err)))
        return rc;
    cl_mem outs[3] = {x->buf, r->buf, z->buf};
    cl_mem all[6] = {x->buf, r->buf, z->buf, p->buf, q->buf, d->buf};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 6; j++)
            if (i != j && outs[i] == all[j])
                return cls_fail(err, CLS_EOTHER,
                                "la_pcg_update: x, r and z must not alias each other or "
                                "p, q, d");
    if (p->n == 0)
        return CLS_OK;
    cl_int n = (cl_int)p->n;
    real_arg ra = lai_mk_real(la, alpha);
    size_t g = lai_groups_for(la, p->n);
    if ((rc = lai_set_args(la->k_pcg_update, "pcg_update", err, 10, A_INT(n), A_REAL(ra),
                           A_MEM(p->buf), A_MEM(q->buf), A_MEM(x->buf), A_MEM(r->buf),
                           A_MEM(d->buf), A_MEM(z->buf), A_MEM(la->partial),
                           A_LOCAL(2 * la->cfg.local_size * lai_acc_size(la)))) ||
        (rc = lai_launch(la, la->k_pcg_update, "pcg_update", g, la->cfg.local_size, err)))
        return rc;
    double out[2] = {0.0, 0.0};
    if ((rc = lai_reduce_and_read(la, g, 2, out, err)))
        return rc;
    *rz = out[0];
    *rr = out[1];
    return CLS_OK;
}

int la_residual(la_ctx *la, const la_csr *A, const la_vec *b, const la_vec *x, la_vec *q, la_vec *r,
                double *rr, cls_error *err)
{
    int rc;
    *rr = 0.0;
    if ((rc = lai_check_len("la_residual (b vs rows)", b->n, A->nrows, err)) ||
        (rc = lai_check_len("la_residual (x vs columns)", x->n, A->ncols, err)) ||
        (rc = lai_check_len("la_residual (q)", q->n, A->nrows, err)) ||
        (rc = lai_check_len("la_residual (r)", r->n, A->nrows, err)))
        return rc;
    if (A->nrows == 0)
        return CLS_OK;
    if ((rc = la_spmv_full(la, A, x, q, err)))
        return rc;
    cl_int n = (cl_int)A->nrows;
    size_t g = lai_groups_for(la, A->nrows);
    if ((rc = lai_set_args(la->k_residual, "residual", err, 6, A_INT(n), A_MEM(b->buf),
                           A_MEM(q->buf), A_MEM(r->buf), A_MEM(la->partial),
                           A_LOCAL(la->cfg.local_size * lai_acc_size(la)))) ||
        (rc = lai_launch(la, la->k_residual, "residual", g, la->cfg.local_size, err)))
        return rc;
    return lai_reduce_and_read(la, g, 1, rr, err);
}
