/*
 * la_spmm.c: host calls of the block SpMM (la_spmm.h, spmm.cl). Geometry
 * as the format's SpMV: the format's work-group size, at most its group
 * cap, grid-stride over rows.
 */
#include "la_spmm.h"
#include "la_priv.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int la_spmm_create(la_ctx *la, la_spmmk *s, cls_error *err)
{
    memset(s, 0, sizeof *s);
    cl_program aux;
    int rc = la_aux_program(la, &aux, err);
    if (rc)
        return rc;
    s->la = la;
    if ((rc = ocl_create_kernel(aux, "spmm_csr", &s->csr, err)) ||
        (rc = ocl_create_kernel(aux, "spmm_sell", &s->sell, err)) ||
        (rc = ocl_create_kernel(aux, "spmm_wdots", &s->wdots, err)))
        la_spmm_release(s);
    return rc;
}

void la_spmm_release(la_spmmk *s)
{
    if (!s)
        return;
    cl_kernel *ks[] = {&s->csr,        &s->sell,      &s->wdots,     &s->rm_sell[0], &s->rm_sell[1],
                       &s->rm_sell[2], &s->rm_csr[0], &s->rm_csr[1], &s->rm_csr[2]};
    lai_release_objects(ks, 9, NULL, 0);
}

/* one launch over columns [0, k), k <= LA_SPMM_MAXK */
static int spmm_chunk(la_spmmk *s, const la_csr *A, int k, const la_vec *const *x, la_vec *const *y,
                      cls_error *err)
{
    la_ctx *la = s->la;
    cl_mem xs[LA_SPMM_MAXK], ys[LA_SPMM_MAXK];
    for (int c = 0; c < LA_SPMM_MAXK; c++) { /* unused slots repeat column 0 */
        xs[c] = x[c < k ? c : 0]->buf;
        ys[c] = y[c < k ? c : 0]->buf;
    }
    cl_int n = (cl_int)A->nrows, ck = k, yoff = (cl_int)A->row_offset;
    const int sell = A->variant == LA_SPMV_SELL;
    cl_kernel kn = sell ? s->sell : s->csr;
    const char *name = sell ? "spmm_sell" : "spmm_csr";
    int rc, a = 0;
    if (sell) {
        cl_int C = (cl_int)A->sell_c;
        rc = lai_set_args(kn, name, err, 8, A_INT(n), A_INT(ck), A_INT(C), A_MEM(A->aux),
                          A_MEM(A->perm), A_MEM(A->fcol), A_MEM(A->fval), A_INT(yoff));
        a = 8;
    } else {
        rc = lai_set_args(kn, name, err, 6, A_INT(n), A_INT(ck), A_MEM(A->rowptr), A_MEM(A->col),
                          A_MEM(A->val), A_INT(yoff));
        a = 6;
    }
    for (int c = 0; !rc && c < 2 * LA_SPMM_MAXK; c++) {
        cl_int st = clSetKernelArg(kn, (cl_uint)(a + c), sizeof(cl_mem),
                                   c < LA_SPMM_MAXK ? &xs[c] : &ys[c - LA_SPMM_MAXK]);
        if (st != CL_SUCCESS)
            rc = cls_fail(err, CLS_EOTHER, "clSetKernelArg(%s, %d) failed: %s (%d)", name, a + c,
                          ocl_errstr(st), (int)st);
    }
    if (rc)
        return rc;
    size_t ls = A->local_size ? A->local_size : la->cfg.spmv_local_size;
    size_t need = ((size_t)A->nrows + ls - 1) / ls;
    size_t g = lai_min_sz(need ? need : 1, A->max_groups ? A->max_groups : la->ngroups);
    return la_launch(la, kn, name, g, ls, err);
}

int la_spmm(la_spmmk *s, const la_csr *A, int k, const la_vec *const *x, la_vec *const *y,
            cls_error *err)
{
    if (A->nrows == 0 || k <= 0)
        return CLS_OK;
    const int blocked = A->variant == LA_SPMV_SELL || A->rowptr;
    for (int c0 = 0; c0 < k; c0 += LA_SPMM_MAXK) {
        int kk = k - c0 < LA_SPMM_MAXK ? k - c0 : LA_SPMM_MAXK;
        int rc = CLS_OK;
        if (blocked && A->variant != LA_SPMV_BCSR)
            rc = spmm_chunk(s, A, kk, x + c0, y + c0, err);
        else /* BCSR: no CSR arrays on the device; one SpMV per column */
            for (int c = 0; c < kk && !rc; c++)
                rc = la_spmv(s->la, A, x[c0 + c], y[c0 + c], err);
        if (rc)
            return rc;
    }
    return CLS_OK;
}

int la_spmm_wdots(la_spmmk *s, const la_vec *u, const la_vec *w, cl_mem partial, size_t groups,
                  size_t ls, cls_error *err)
{
    cl_int n = (cl_int)w->n;
    int rc = lai_set_args(s->wdots, "spmm_wdots", err, 5, A_INT(n), A_MEM(u->buf), A_MEM(w->buf),
                          A_MEM(partial), A_LOCAL(4 * ls * la_acc_size(s->la)));
    return rc ? rc : la_launch(s->la, s->wdots, "spmm_wdots", groups, ls, err);
}

int la_spmm_rm_supports(const la_csr *A)
{
    return A->row_offset == 0 &&
           (A->variant == LA_SPMV_SELL || (A->rowptr && A->variant != LA_SPMV_BCSR));
}

int la_spmm_rm(la_spmmk *s, const la_csr *A, int kw, const la_vec *X, la_vec *Y, cls_error *err)
{
    la_ctx *la = s->la;
    const int w = kw == 2 ? 0 : kw == 4 ? 1 : kw == 8 ? 2 : -1;
    if (w < 0 || !la_spmm_rm_supports(A) || X->n != A->ncols * kw || Y->n != A->nrows * kw)
        return cls_fail(err, CLS_EOTHER,
                        "la_spmm_rm: a %lld x %lld %s matrix, blocks of %lld and %lld entries, "
                        "width %d",
                        (long long)A->nrows, (long long)A->ncols, la_spmv_variant_name(A->variant),
                        (long long)X->n, (long long)Y->n, kw);
    if (A->nrows == 0)
        return CLS_OK;
    const int sell = A->variant == LA_SPMV_SELL;
    const int cw = lai_spmm_rm_cw(A, kw);
    cl_kernel *kn = sell ? &s->rm_sell[w] : &s->rm_csr[w];
    char *name = s->rm_name[sell][w];
    if (!*kn) {
        snprintf(name, sizeof s->rm_name[0][0], "bcg_spmm_%s_%dc%d", sell ? "sell" : "csr", kw, cw);
        cl_program aux;
        int rc = la_aux_program(la, &aux, err);
        if (rc || (rc = ocl_create_kernel(aux, name, kn, err)))
            return rc;
    }
    size_t g;
    return lai_spmm_rm_launch(la, *kn, name, A, (size_t)(kw / cw), X->buf, Y->buf, Y->buf, 0,
                              SIZE_MAX, &g, err);
}

/* the columns a work-item sums: 2, or with SELL four wide 4 (block CG's
 * SpMM, la_bcg.c); the coarse levels' long CSR rows took 10.6 ms four
 * wide with 4 (one work-item a row) against 5.9 eight wide with 2
 * (poisson3d 256, H200) */
int lai_spmm_rm_cw(const la_csr *A, int kw)
{
    return A->variant == LA_SPMV_SELL && kw == 4 ? 4 : 2;
}

size_t lai_spmm_rm_grid(const la_ctx *la, const la_csr *A, size_t lanes, size_t gcap, size_t *ls)
{
    size_t l = *ls ? *ls : A->local_size ? A->local_size : la->cfg.spmv_local_size;
    *ls = l < 8 ? 8 : l / 8 * 8;
    size_t need = ((size_t)A->nrows * lanes + *ls - 1) / *ls;
    size_t g = lai_min_sz(need ? need : 1, lanes * (A->max_groups ? A->max_groups : la->ngroups));
    return lai_min_sz(g, gcap);
}

int lai_spmm_rm_launch(la_ctx *la, cl_kernel kn, const char *name, const la_csr *A, size_t lanes,
                       cl_mem X, cl_mem Y, cl_mem partial, int sums, size_t gcap, size_t *groups,
                       cls_error *err)
{
    size_t ls = 0;
    const size_t g = lai_spmm_rm_grid(la, A, lanes, gcap, &ls);
    *groups = g;
    const size_t loc = 8 * (sums ? ls : 1) * la_acc_size(la);
    cl_int n = (cl_int)A->nrows;
    int rc;
    if (A->variant == LA_SPMV_SELL) {
        cl_int C = (cl_int)A->sell_c;
        rc = lai_set_args(kn, name, err, 10, A_INT(n), A_INT(C), A_MEM(A->aux), A_MEM(A->perm),
                          A_MEM(A->fcol), A_MEM(A->fval), A_MEM(X), A_MEM(Y), A_MEM(partial),
                          A_LOCAL(loc));
    } else {
        rc = lai_set_args(kn, name, err, 8, A_INT(n), A_MEM(A->rowptr), A_MEM(A->col),
                          A_MEM(A->val), A_MEM(X), A_MEM(Y), A_MEM(partial), A_LOCAL(loc));
    }
    return rc ? rc : la_launch(la, kn, name, g, ls, err);
}
