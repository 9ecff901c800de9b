/*
 * la_spmv.c: y = A x in every format: one argument binding (spmv_setup) for
 * the plain SpMV and for the fused CG's SpMV with its epilogue (partial
 * pairs, W, control word, row offset of a boundary block), and the SpMV at
 * full precision that the true residual needs under --precision mixed.
 * Design of the layer: la_priv.h.
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

/* ------------------------------------------------------------------- SpMV */

/* Sets the arguments of a format kernel k (la's or a private copy) for
 * y = A x with the fused-CG tail (partial, w, ctl may be NULL) and returns
 * the launch geometry. */
int lai_spmv_setup(la_ctx *la, cl_kernel k, const la_csr *A, cl_mem x, cl_mem y, cl_mem partial,
                   cl_mem w, cl_mem ctl, size_t *groups, size_t *lsz, cls_error *err)
{
    const char *kn = lai_kernel_of(A->variant);
    size_t ls = A->local_size;
    cl_int nrows = (cl_int)A->nrows;
    size_t need = 1, as = lai_acc_size(la);
    const cl_mem *pp = &partial, *pw = &w, *pc = &ctl;
    const cl_int yoff = (cl_int)A->row_offset;
    int rc;
    switch (A->variant) {
    case LA_SPMV_VECTOR: {
        size_t vw = A->vector_width;
        if (!lai_is_pow2(vw) || vw < 2 || vw > 64 || vw > ls || ls % vw)
            return cls_fail(err, CLS_EOTHER,
                            "la_spmv: vector width %zu must be a power of two in 2..64 "
                            "dividing the SpMV work-group size %zu",
                            vw, ls);
        cl_int cvw = (cl_int)vw;
        need = ((size_t)nrows + ls / vw - 1) / (ls / vw);
        rc = lai_set_args(k, kn, err, 13, A_INT(nrows), A_INT(cvw), A_MEM(A->rowptr), A_MEM(A->col),
                          A_MEM(A->val), A_MEM(x), A_MEM(y), A_LOCAL(ls * la->elem), sizeof(cl_mem),
                          (const void *)pp, sizeof(cl_mem), (const void *)pw, sizeof(cl_mem),
                          (const void *)pc, A_LOCAL(4 * ls * as), A_INT(yoff));
        break;
    }
    case LA_SPMV_ADAPTIVE: {
        cl_int nb = (cl_int)A->naux;
        size_t lds = lai_max_sz(A->lds_size, ls);
        cl_int clds = (cl_int)lds;
        need = (size_t)(A->naux ? A->naux : 1);
        rc = lai_set_args(k, kn, err, 14, A_INT(nb), A_MEM(A->aux), A_MEM(A->rowptr), A_MEM(A->col),
                          A_MEM(A->val), A_MEM(x), A_MEM(y), A_LOCAL(lds * la->elem), A_INT(clds),
                          sizeof(cl_mem), (const void *)pp, sizeof(cl_mem), (const void *)pw,
                          sizeof(cl_mem), (const void *)pc, A_LOCAL(4 * ls * as), A_INT(yoff));
        break;
    }
    case LA_SPMV_SELL: {
        cl_int C = (cl_int)A->sell_c;
        need = ((size_t)nrows + ls - 1) / ls;
        rc = lai_set_args(k, kn, err, 13, A_INT(nrows), A_INT(C), A_MEM(A->aux), A_MEM(A->perm),
                          A_MEM(A->fcol), A_MEM(A->fval), A_MEM(x), A_MEM(y), sizeof(cl_mem),
                          (const void *)pp, sizeof(cl_mem), (const void *)pw, sizeof(cl_mem),
                          (const void *)pc, A_LOCAL(4 * ls * as), A_INT(yoff));
        break;
    }
    case LA_SPMV_BCSR: {
        cl_int kk = (cl_int)A->block_k;
        need = ((size_t)nrows + ls - 1) / ls;
        rc = lai_set_args(k, kn, err, 12, A_INT(nrows), A_INT(kk), A_MEM(A->aux), A_MEM(A->fcol),
                          A_MEM(A->fval), A_MEM(x), A_MEM(y), sizeof(cl_mem), (const void *)pp,
                          sizeof(cl_mem), (const void *)pw, sizeof(cl_mem), (const void *)pc,
                          A_LOCAL(4 * ls * as), A_INT(yoff));
        break;
    }
    default:
        need = ((size_t)nrows + ls - 1) / ls;
        rc = lai_set_args(k, kn, err, 11, A_INT(nrows), A_MEM(A->rowptr), A_MEM(A->col),
                          A_MEM(A->val), A_MEM(x), A_MEM(y), sizeof(cl_mem), (const void *)pp,
                          sizeof(cl_mem), (const void *)pw, sizeof(cl_mem), (const void *)pc,
                          A_LOCAL(4 * ls * as), A_INT(yoff));
        break;
    }
    if (rc)
        return rc;
    size_t g = lai_min_sz(need, A->max_groups ? A->max_groups : la->ngroups);
    if (la->serial_group_sum && (A->variant == LA_SPMV_SCALAR || A->variant == LA_SPMV_AUTO))
        g = need; /* CLS_EACH (real.cl): one row per work-item, every row covered */
    *groups = g ? g : 1;
    *lsz = ls;
    return CLS_OK;
}

int la_spmv_bind(la_ctx *la, cl_kernel k, const la_csr *A, cl_mem x, cl_mem y, cl_mem partial,
                 cl_mem w, cl_mem ctl, size_t *groups, size_t *lsz, cls_error *err)
{
    return lai_spmv_setup(la, k, A, x, y, partial, w, ctl, groups, lsz, err);
}

int la_spmv_kernel_create(la_ctx *la, const la_csr *A, cl_kernel *k, cls_error *err)
{
    return ocl_create_kernel(la->prog, lai_kernel_of(A->variant), k, err);
}

int la_launch(la_ctx *la, cl_kernel k, const char *kname, size_t groups, size_t ls, cls_error *err)
{
    return lai_launch(la, k, kname, groups, ls, err);
}

static cl_kernel la_kernel_of(la_ctx *la, la_spmv_variant v)
{
    switch (v) {
    case LA_SPMV_VECTOR:
        return la->k_spmv_vector;
    case LA_SPMV_ADAPTIVE:
        return la->k_spmv_adaptive;
    case LA_SPMV_SELL:
        return la->k_spmv_sell;
    case LA_SPMV_BCSR:
        return la->k_spmv_bcsr;
    default:
        return la->k_spmv_scalar;
    }
}

int la_spmv(la_ctx *la, const la_csr *A, const la_vec *x, la_vec *y, cls_error *err)
{
    int rc;
    if ((rc = lai_check_len("la_spmv (x vs columns)", x->n, A->ncols, err)))
        return rc;
    if (y->n < A->row_offset + A->nrows) /* y holds the rows at row_offset.. */
        return cls_fail(err, CLS_EOTHER, "la_spmv (y vs rows): length mismatch (%lld vs %lld)",
                        (long long)y->n, (long long)(A->row_offset + A->nrows));
    if (x->buf == y->buf)
        return cls_fail(err, CLS_EOTHER, "la_spmv: x and y must be different vectors");
    if (A->nrows == 0)
        return CLS_OK;
    size_t groups, ls;
    cl_kernel k = la_kernel_of(la, A->variant);
    if ((rc = lai_spmv_setup(la, k, A, x->buf, y->buf, NULL, NULL, NULL, &groups, &ls, err)))
        return rc;
    return lai_launch(la, k, lai_kernel_of(A->variant), groups, ls, err);
}

int la_spmv_full(la_ctx *la, const la_csr *A, const la_vec *x, la_vec *y, cls_error *err)
{
    if (la->prec != LA_MIXED)
        return la_spmv(la, A, x, y, err);
    if (A->nrows == 0)
        return CLS_OK;
    cl_int nrows = (cl_int)A->nrows, yoff = (cl_int)A->row_offset;
    size_t ls = la->cfg.spmv_local_size;
    size_t need = ((size_t)nrows + ls - 1) / ls;
    int rc;
    if ((rc = lai_set_args(la->k_spmv_hi, "spmv_csr_hi", err, 7, A_INT(nrows), A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(A->val_hi), A_MEM(x->buf), A_MEM(y->buf),
                           A_INT(yoff))))
        return rc;
    return lai_launch(la, la->k_spmv_hi, "spmv_csr_hi", lai_min_sz(need, A->max_groups), ls, err);
}

int lai_split_spmv(la_ctx *la, int boundary, const la_csr *Ai, cl_kernel ki, size_t gi, size_t ls_i,
                   cl_kernel kb, size_t gb, size_t ls_b, cls_error *err)
{
    if (boundary)
        return kb ? la_launch(la, kb, "spmv (boundary rows)", gb, ls_b, err) : CLS_OK;
    if (Ai->nrows == 0)
        return CLS_OK;
    return la_launch(la, ki, "spmv (interior rows)", gi, ls_i, err);
}
