/*
 * la_pc.c: host calls of the preconditioners' kernels (la_pc.h, pc.cl).
 * Launch geometry is la's BLAS-1 geometry (grid-stride loops over at most
 * la->ngroups groups of la->cfg.local_size).
 */
#include "la_pc.h"
#include "la_priv.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int la_pck_create(la_ctx *la, la_pck *k, cls_error *err)
{
    memset(k, 0, sizeof *k);
    cl_program aux;
    int rc = la_aux_program(la, &aux, err);
    if (rc)
        return rc;
    k->la = la;
    if ((rc = ocl_create_kernel(aux, "cheb_first", &k->cheb_first, err)) ||
        (rc = ocl_create_kernel(aux, "cheb_step", &k->cheb_step, err)) ||
        (rc = ocl_create_kernel(aux, "ic0_sweep", &k->ic0_sweep, err)) ||
        (rc = ocl_create_kernel(aux, "ic0_level", &k->ic0_level, err))) {
        la_pck_release(k);
        return rc;
    }
    return CLS_OK;
}

void la_pck_release(la_pck *k)
{
    if (!k)
        return;
    cl_kernel *ks[] = {&k->cheb_first, &k->cheb_step, &k->ic0_sweep, &k->ic0_level};
    lai_release_objects(ks, 4, NULL, 0);
}

static int pc_launch(la_ctx *la, cl_kernel k, const char *name, int64_t n, cls_error *err)
{
    if (n == 0)
        return CLS_OK;
    return lai_launch(la, k, name, lai_groups_for(la, n), la->cfg.local_size, err);
}

int la_cheb_first(la_pck *k, double c0, const la_vec *dinv, const la_vec *r, la_vec *d, la_vec *z,
                  cls_error *err)
{
    la_ctx *la = k->la;
    cl_int n = (cl_int)z->n;
    real_arg a = lai_mk_real(la, c0);
    int rc = lai_set_args(k->cheb_first, "cheb_first", err, 6, A_INT(n), A_REAL(a),
                          A_MEM(dinv->buf), A_MEM(r->buf), A_MEM(d->buf), A_MEM(z->buf));
    return rc ? rc : pc_launch(la, k->cheb_first, "cheb_first", z->n, err);
}

int la_cheb_step(la_pck *k, double c1, double c2, const la_vec *dinv, const la_vec *q,
                 const la_vec *res_in, la_vec *res, la_vec *d, la_vec *z, cls_error *err)
{
    la_ctx *la = k->la;
    cl_int n = (cl_int)z->n;
    real_arg a = lai_mk_real(la, c1), b = lai_mk_real(la, c2);
    int rc = lai_set_args(k->cheb_step, "cheb_step", err, 9, A_INT(n), A_REAL(a), A_REAL(b),
                          A_MEM(dinv->buf), A_MEM(q->buf), A_MEM(res_in->buf), A_MEM(res->buf),
                          A_MEM(d->buf), A_MEM(z->buf));
    return rc ? rc : pc_launch(la, k->cheb_step, "cheb_step", z->n, err);
}

int la_tri_upload(la_ctx *la, int64_t n, const int32_t *rowptr, const int32_t *col,
                  const double *val, const double *dl, const int32_t *rows, const int64_t *level,
                  int nlevels, la_tri *t, cls_error *err)
{
    memset(t, 0, sizeof *t);
    t->n = n;
    t->nnz = rowptr[n];
    void *v = lai_convert_vals(val, t->nnz, la->elem);
    void *d = lai_convert_vals(dl, n, la->elem);
    int rc = CLS_OK;
    if ((la->elem != sizeof(double)) && (!v || !d))
        rc = cls_fail(err, CLS_EOTHER, "out of memory converting a triangular factor");
    if (!rc)
        rc = lai_upload_buf(la, "factor row pointers", (size_t)(n + 1) * sizeof(int32_t), rowptr,
                            &t->rowptr, err);
    if (!rc)
        rc = lai_upload_buf(la, "factor columns", (size_t)t->nnz * sizeof(int32_t), col, &t->col,
                            err);
    if (!rc)
        rc = lai_upload_buf(la, "factor values", (size_t)t->nnz * la->elem, v ? v : val, &t->val,
                            err);
    if (!rc)
        rc = lai_upload_buf(la, "factor diagonal", (size_t)n * la->elem, d ? d : dl, &t->dl, err);
    if (!rc && rows) {
        rc = lai_upload_buf(la, "factor levels", (size_t)n * sizeof(int32_t), rows, &t->rows, err);
        t->level = malloc((size_t)(nlevels + 1) * sizeof *t->level);
        if (!rc && !t->level)
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the factor's levels");
        if (!rc) {
            memcpy(t->level, level, (size_t)(nlevels + 1) * sizeof *t->level);
            t->nlevels = nlevels;
        }
    }
    free(v);
    free(d);
    if (rc)
        la_tri_release(t);
    return rc;
}

void la_tri_release(la_tri *t)
{
    if (!t)
        return;
    cl_mem *ms[] = {&t->rowptr, &t->col, &t->val, &t->dl, &t->rows};
    lai_release_objects(NULL, 0, ms, 5);
    free(t->level);
    t->level = NULL;
    t->nlevels = 0;
}

static int tri_sweep(la_pck *k, const la_tri *t, const la_vec *b, const la_vec *yin, la_vec *yout,
                     cls_error *err)
{
    la_ctx *la = k->la;
    cl_int n = (cl_int)t->n;
    cl_mem in = yin ? yin->buf : NULL;
    int rc =
        lai_set_args(k->ic0_sweep, "ic0_sweep", err, 8, A_INT(n), A_MEM(t->rowptr), A_MEM(t->col),
                     A_MEM(t->val), A_MEM(t->dl), A_MEM(b->buf), A_MEM(in), A_MEM(yout->buf));
    return rc ? rc : pc_launch(la, k->ic0_sweep, "ic0_sweep", t->n, err);
}

int la_tri_sweeps(la_pck *k, const la_tri *t, int sweeps, const la_vec *b, la_vec *t0, la_vec *y,
                  cls_error *err)
{
    /* outputs alternate between t0 and y so that the last one lands in y:
     * sweep j (1..k) writes y when k - j is even */
    const la_vec *in = NULL;
    for (int j = 1; j <= sweeps; j++) {
        la_vec *out = (sweeps - j) % 2 == 0 ? y : t0;
        int rc = tri_sweep(k, t, b, in, out, err);
        if (rc)
            return rc;
        in = out;
    }
    return CLS_OK;
}

int la_tri_solve_levels(la_pck *k, const la_tri *t, const la_vec *b, la_vec *y, cls_error *err)
{
    la_ctx *la = k->la;
    if (!t->rows)
        return cls_fail(err, CLS_EOTHER, "la_tri_solve_levels: the factor has no level order");
    for (int l = 0; l < t->nlevels; l++) {
        cl_int first = (cl_int)t->level[l], count = (cl_int)(t->level[l + 1] - t->level[l]);
        int rc = lai_set_args(k->ic0_level, "ic0_level", err, 9, A_INT(first), A_INT(count),
                              A_MEM(t->rows), A_MEM(t->rowptr), A_MEM(t->col), A_MEM(t->val),
                              A_MEM(t->dl), A_MEM(b->buf), A_MEM(y->buf));
        if (rc || (rc = pc_launch(la, k->ic0_level, "ic0_level", count, err)))
            return rc;
    }
    return CLS_OK;
}
