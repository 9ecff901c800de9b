/*
 * la_amg.c: host side of amg.cl (contract in la_amg.h): the program is
 * built from real.cl + amg.cl with the same precision options la.c gives
 * its own program, so vectors, matrix values and accumulators have the
 * layout of la's vectors; launches go through lai_launch (profiling capture
 * included) with the grid of la's BLAS-1 operations.
 */
#include "la_amg.h"
#include "la_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const amg_sources[] = {"real.cl", "amg.cl"};

int la_amg_init(la_ctx *la, la_amg *k, cls_error *err)
{
    memset(k, 0, sizeof *k);
    const ocl_device *dev = &la->ocl->dev;
    /* the options of la_init_flags (la.c): storage and accumulator types */
    const char *opts = la->prec == LA_DOUBLE  ? "-DCLS_REAL_DOUBLE"
                       : la->prec == LA_MIXED ? "-DCLS_REAL_DOUBLE -DCLS_MAT_FLOAT"
                       : dev->fp64            ? "-DCLS_ACC_DOUBLE"
                                              : "";
    int rc = ocl_build_program(la->ocl, amg_sources, 2, opts, &k->prog, err);
    if (rc)
        return rc;
    struct {
        cl_kernel *k;
        const char *name;
    } ks[] = {{&k->k_cheb_first, "amg_cheb_first"}, {&k->k_cheb_next, "amg_cheb_next"},
              {&k->k_jacobi, "amg_jacobi"},         {&k->k_residual, "amg_residual"},
              {&k->k_dense, "amg_dense"},           {&k->k_pack, "amg_pack"}};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++)
        if ((rc = ocl_create_kernel(k->prog, ks[i].name, ks[i].k, err))) {
            la_amg_release(k);
            return rc;
        }
    k->dense_ls = lai_pow2_floor(lai_kernel_max(la, k->k_dense, 64));
    while (k->dense_ls > 1 && k->dense_ls * lai_acc_size(la) > dev->local_mem / 2)
        k->dense_ls /= 2;
    return CLS_OK;
}

void la_amg_release(la_amg *k)
{
    cl_kernel *ks[] = {&k->k_cheb_first, &k->k_cheb_next, &k->k_jacobi,
                       &k->k_residual,   &k->k_dense,     &k->k_pack};
    lai_release_objects(ks, 6, NULL, 0);
    if (k->prog)
        clReleaseProgram(k->prog);
    k->prog = NULL;
}

/* the grid of an element-wise kernel k over n entries */
static int launch_vec(la_ctx *la, cl_kernel k, const char *name, int64_t n, cls_error *err)
{
    size_t ls = lai_kernel_max(la, k, la->cfg.local_size);
    size_t need = (size_t)((n + (int64_t)ls - 1) / (int64_t)ls);
    size_t g = lai_min_sz(need, la->ngroups);
    return lai_launch(la, k, name, g ? g : 1, ls, err);
}

/* log2 of the block width of a vector of n entries over dinv's nd rows
 * (0: plain), or -1 with the error when n is not nd, 2 nd, 4 nd or 8 nd */
static int block_lg(const char *what, int64_t n, int64_t nd, cls_error *err)
{
    for (int lg = 0; lg <= 3; lg++)
        if (n == nd << lg)
            return lg;
    cls_fail(err, CLS_EOTHER, "%s: a vector of %lld entries over %lld rows", what, (long long)n,
             (long long)nd);
    return -1;
}

int la_amg_cheb_first(la_ctx *la, la_amg *k, int zero, const la_vec *b, const la_vec *q,
                      const la_vec *dinv, double c0, la_vec *r, la_vec *d, la_vec *x,
                      cls_error *err)
{
    int rc;
    if ((rc = lai_check_len("la_amg_cheb_first", b->n, q->n, err)) ||
        (rc = lai_check_len("la_amg_cheb_first", b->n, r->n, err)) ||
        (rc = lai_check_len("la_amg_cheb_first", b->n, d->n, err)) ||
        (rc = lai_check_len("la_amg_cheb_first", b->n, x->n, err)) || b->n == 0)
        return rc;
    const int lg = block_lg("la_amg_cheb_first", b->n, dinv->n, err);
    if (lg < 0)
        return CLS_EOTHER;
    cl_int n = (cl_int)b->n, z = zero ? 1 : 0, clg = lg;
    real_arg a0 = lai_mk_real(la, c0);
    if ((rc = lai_set_args(k->k_cheb_first, "amg_cheb_first", err, 10, A_INT(n), A_INT(z),
                           A_MEM(b->buf), A_MEM(q->buf), A_MEM(dinv->buf), A_REAL(a0),
                           A_MEM(r->buf), A_MEM(d->buf), A_MEM(x->buf), A_INT(clg))))
        return rc;
    return launch_vec(la, k->k_cheb_first, "amg_cheb_first", b->n, err);
}

int la_amg_cheb_next(la_ctx *la, la_amg *k, const la_vec *q, const la_vec *dinv, double c1,
                     double c2, la_vec *r, la_vec *d, la_vec *x, cls_error *err)
{
    int rc;
    if ((rc = lai_check_len("la_amg_cheb_next", q->n, r->n, err)) ||
        (rc = lai_check_len("la_amg_cheb_next", q->n, d->n, err)) ||
        (rc = lai_check_len("la_amg_cheb_next", q->n, x->n, err)) || q->n == 0)
        return rc;
    const int lg = block_lg("la_amg_cheb_next", q->n, dinv->n, err);
    if (lg < 0)
        return CLS_EOTHER;
    cl_int n = (cl_int)q->n, clg = lg;
    real_arg a1 = lai_mk_real(la, c1), a2 = lai_mk_real(la, c2);
    if ((rc = lai_set_args(k->k_cheb_next, "amg_cheb_next", err, 9, A_INT(n), A_MEM(q->buf),
                           A_MEM(dinv->buf), A_REAL(a1), A_REAL(a2), A_MEM(r->buf), A_MEM(d->buf),
                           A_MEM(x->buf), A_INT(clg))))
        return rc;
    return launch_vec(la, k->k_cheb_next, "amg_cheb_next", q->n, err);
}

int la_amg_jacobi(la_ctx *la, la_amg *k, int zero, const la_vec *b, const la_vec *q,
                  const la_vec *dinv, la_vec *x, cls_error *err)
{
    int rc;
    if ((rc = lai_check_len("la_amg_jacobi", b->n, q->n, err)) ||
        (rc = lai_check_len("la_amg_jacobi", b->n, x->n, err)) || b->n == 0)
        return rc;
    const int lg = block_lg("la_amg_jacobi", b->n, dinv->n, err);
    if (lg < 0)
        return CLS_EOTHER;
    cl_int n = (cl_int)b->n, z = zero ? 1 : 0, clg = lg;
    if ((rc = lai_set_args(k->k_jacobi, "amg_jacobi", err, 7, A_INT(n), A_INT(z), A_MEM(b->buf),
                           A_MEM(q->buf), A_MEM(dinv->buf), A_MEM(x->buf), A_INT(clg))))
        return rc;
    return launch_vec(la, k->k_jacobi, "amg_jacobi", b->n, err);
}

int la_amg_residual(la_ctx *la, la_amg *k, const la_vec *b, const la_vec *q, la_vec *r,
                    cls_error *err)
{
    int rc;
    if ((rc = lai_check_len("la_amg_residual", b->n, q->n, err)) ||
        (rc = lai_check_len("la_amg_residual", b->n, r->n, err)) || b->n == 0)
        return rc;
    cl_int n = (cl_int)b->n;
    if ((rc = lai_set_args(k->k_residual, "amg_residual", err, 4, A_INT(n), A_MEM(b->buf),
                           A_MEM(q->buf), A_MEM(r->buf))))
        return rc;
    return launch_vec(la, k->k_residual, "amg_residual", b->n, err);
}

int la_amg_dense_upload(la_ctx *la, const double *M, int64_t n, cl_mem *out, cls_error *err)
{
    size_t cnt = (size_t)(n * n);
    void *f = lai_convert_vals(M, (int64_t)cnt, la->melem);
    if (!f && la->melem != sizeof(double))
        return cls_fail(err, CLS_EOTHER, "out of memory converting the coarsest inverse");
    int rc = lai_upload_buf(la, "AMG coarsest inverse", cnt * la->melem, f ? f : (const void *)M,
                            out, err);
    free(f);
    return rc;
}

int la_amg_dense(la_ctx *la, la_amg *k, cl_mem M, int64_t n, const la_vec *b, la_vec *x,
                 cls_error *err)
{
    int rc;
    if ((rc = lai_check_len("la_amg_dense (x)", x->n, b->n, err)) || n == 0)
        return rc;
    const int lg = block_lg("la_amg_dense", b->n, n, err);
    if (lg < 0)
        return CLS_EOTHER;
    cl_int cn = (cl_int)n, clg = lg;
    if ((rc = lai_set_args(k->k_dense, "amg_dense", err, 6, A_INT(cn), A_MEM(M), A_MEM(b->buf),
                           A_MEM(x->buf), A_LOCAL(k->dense_ls * lai_acc_size(la)), A_INT(clg))))
        return rc;
    size_t g = lai_min_sz((size_t)n, lai_max_sz(la->ngroups, 1) * 4);
    return lai_launch(la, k->k_dense, "amg_dense", g, k->dense_ls, err);
}

/* amg_pack both ways (out 0: the columns into the block, 1: back); the
 * unused column slots repeat column 0 (the kernel does not touch them) */
static int pack_cols(la_ctx *la, la_amg *k, int out, int ncols, const la_vec *const *cols, int kw,
                     const la_vec *blk, cls_error *err)
{
    const char *what = out ? "la_amg_unpack" : "la_amg_pack";
    int lg = 0;
    while (lg < 3 && (1 << lg) < kw)
        lg++;
    if ((1 << lg) != kw || blk->n % kw != 0 || ncols < 1 || ncols > kw)
        return cls_fail(err, CLS_EOTHER, "%s: %d columns and a block of %lld entries, width %d",
                        what, ncols, (long long)blk->n, kw);
    cl_mem m[8];
    for (int c = 0; c < 8; c++) {
        const la_vec *v = cols[c < ncols ? c : 0];
        if (v->n * kw != blk->n)
            return cls_fail(err, CLS_EOTHER, "%s: column %d has %lld entries, the block %lld", what,
                            c, (long long)v->n, (long long)blk->n);
        m[c] = v->buf;
    }
    if (blk->n == 0)
        return CLS_OK;
    cl_int cn = (cl_int)(blk->n / kw), ck = ncols, clg = lg, co = out;
    int rc = lai_set_args(k->k_pack, "amg_pack", err, 5, A_INT(cn), A_INT(ck), A_INT(clg),
                          A_MEM(blk->buf), A_INT(co));
    for (int c = 0; !rc && c < 8; c++) {
        cl_int st = clSetKernelArg(k->k_pack, (cl_uint)(5 + c), sizeof(cl_mem), &m[c]);
        if (st != CL_SUCCESS)
            rc = cls_fail(err, CLS_EOTHER, "clSetKernelArg(amg_pack, %d) failed: %s (%d)", 5 + c,
                          ocl_errstr(st), (int)st);
    }
    return rc ? rc : launch_vec(la, k->k_pack, out ? "amg_unpack" : "amg_pack", blk->n, err);
}

int la_amg_pack(la_ctx *la, la_amg *k, int ncols, const la_vec *const *cols, int kw, la_vec *blk,
                cls_error *err)
{
    return pack_cols(la, k, 0, ncols, cols, kw, blk, err);
}

int la_amg_unpack(la_ctx *la, la_amg *k, const la_vec *blk, int kw, int ncols, la_vec *const *cols,
                  cls_error *err)
{
    return pack_cols(la, k, 1, ncols, (const la_vec *const *)cols, kw, blk, err);
}
