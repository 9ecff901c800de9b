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

#include "la_spmm.h"

/* amg_spmm.cl's ops */
enum { AMG_SMV_OP_AXPY = 0, AMG_SMV_OP_CHEB = 1, AMG_SMV_OP_STORE = 2 };

static const char *const amg_sources[] = {"real.cl", "amg.cl"};

/* the options of la_init_flags (la.c): storage and accumulator types */
static const char *amg_opts(const la_ctx *la)
{
    return la->prec == LA_DOUBLE  ? "-DCLS_REAL_DOUBLE"
           : la->prec == LA_MIXED ? "-DCLS_REAL_DOUBLE -DCLS_MAT_FLOAT"
           : la->ocl->dev.fp64    ? "-DCLS_ACC_DOUBLE"
                                  : "";
}

int la_amg_init(la_ctx *la, la_amg *k, cls_error *err)
{
    memset(k, 0, sizeof *k);
    const ocl_device *dev = &la->ocl->dev;
    int rc = ocl_build_program(la->ocl, amg_sources, 2, amg_opts(la), &k->prog, err);
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
    cl_kernel *sk[] = {&k->smv[0][0], &k->smv[0][1], &k->smv[0][2],
                       &k->smv[1][0], &k->smv[1][1], &k->smv[1][2]};
    lai_release_objects(sk, 6, NULL, 0);
    if (k->prog)
        clReleaseProgram(k->prog);
    if (k->smv_prog)
        clReleaseProgram(k->smv_prog);
    k->prog = k->smv_prog = NULL;
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
    cl_int n = (cl_int)b->n, z = zero == 2 ? 2 : zero ? 1 : 0, clg = lg;
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

/* ---------------------------------- the SpMMs with the update fused */

static const char *const smv_sources[] = {"real.cl", "rowblock.cl", "amg_spmm.cl"};

/* the epilogue's arguments (amg_spmm.cl's AMG_EPI_ARGS) */
typedef struct smv_epi {
    cl_int op;
    cl_mem in, out, d, dnew, x;
    double c1, c2;
    cl_int xmode, wrd;
} smv_epi;

/* log2 of the sub-lanes a CSR row gets (amg_spmm.cl), by the mean row
 * length: 8 from 48 entries; two and four wide also 4 from 24 and 2 from
 * 12. Measured at poisson3d 256 on an H200 (ms a V-cycle launch, without
 * and with): four wide R 1.37 -> 0.72, level 1's A 0.71 -> 0.62; eight
 * wide R 1.33 -> 1.13 but level 1's A 0.61 -> 0.92 (the row's four lanes
 * already read a 64-byte segment an entry; the fold costs more than the
 * shorter walk gains). CLSOLVE_AMG_LANES = 1, 2, 4 or 8 sets it for every
 * matrix (measuring and the tests; read at each launch, as the tests
 * change it between applies of one hierarchy). */
static int smv_lanes(const la_csr *A, int kw)
{
    const char *e = getenv("CLSOLVE_AMG_LANES");
    const int env = e ? atoi(e) : 0;
    if (env == 1 || env == 2 || env == 4 || env == 8)
        return env == 8 ? 3 : env == 4 ? 2 : env == 2 ? 1 : 0;
    const double mean = A->nrows ? (double)A->nnz / (double)A->nrows : 0.0;
    if (mean >= 48)
        return 3;
    if (kw == 8)
        return 0;
    return mean >= 24 ? 2 : mean >= 12 ? 1 : 0;
}

static int smv_launch(la_ctx *la, la_amg *k, const la_csr *A, int kw, const la_vec *v,
                      const smv_epi *e, const la_vec *dinv, cls_error *err)
{
    const int w = kw == 2 ? 0 : kw == 4 ? 1 : kw == 8 ? 2 : -1;
    if (w < 0 || !la_spmm_rm_supports(A) || v->n != A->ncols * kw)
        return cls_fail(err, CLS_EOTHER,
                        "la_amg_smv: a %lld x %lld %s matrix, a block of %lld entries, width %d",
                        (long long)A->nrows, (long long)A->ncols, la_spmv_variant_name(A->variant),
                        (long long)v->n, kw);
    if (A->nrows == 0)
        return CLS_OK;
    const int sell = A->variant == LA_SPMV_SELL, cw = lai_spmm_rm_cw(A, kw);
    cl_kernel *kn = &k->smv[sell][w];
    char *name = k->smv_name[sell][w];
    int rc;
    if (!*kn) {
        if (!k->smv_prog &&
            (rc = ocl_build_program(la->ocl, smv_sources, 3, amg_opts(la), &k->smv_prog, err)))
            return rc;
        snprintf(name, sizeof k->smv_name[0][0], "amg_smv_%s_%dc%d", sell ? "sell" : "csr", kw, cw);
        if ((rc = ocl_create_kernel(k->smv_prog, name, kn, err)))
            return rc;
        /* sub-lanes need a row's lanes in one group: groups of 128 */
        if (!sell)
            k->smv_sub[w] = lai_kernel_max(la, *kn, 128) >= 128;
    }
    const int lw = !sell && k->smv_sub[w] ? smv_lanes(A, kw) : 0;
    size_t ls = lw ? 128 : 0; /* rows of 1 << lw sub-lanes: groups of 128 */
    const size_t g = lai_spmm_rm_grid(la, A, (size_t)(kw / cw) << lw, SIZE_MAX, &ls);
    cl_int n = (cl_int)A->nrows, clw = lw;
    real_arg a1 = lai_mk_real(la, e->c1), a2 = lai_mk_real(la, e->c2);
    cl_mem dv = dinv ? dinv->buf : e->in;
#define SMV_EPI                                                                                    \
    A_INT(e->op), A_MEM(e->in), A_MEM(e->out), A_MEM(e->d), A_MEM(e->dnew), A_MEM(e->x),           \
        A_MEM(dv), A_REAL(a1), A_REAL(a2), A_INT(e->xmode), A_INT(e->wrd)
    if (sell) {
        cl_int C = (cl_int)A->sell_c;
        rc = lai_set_args(*kn, name, err, 18, A_INT(n), A_INT(C), A_MEM(A->aux), A_MEM(A->perm),
                          A_MEM(A->fcol), A_MEM(A->fval), A_MEM(v->buf), SMV_EPI);
    } else {
        rc = lai_set_args(*kn, name, err, 18, A_INT(n), A_MEM(A->rowptr), A_MEM(A->col),
                          A_MEM(A->val), A_MEM(v->buf), A_INT(clw),
                          A_LOCAL(lw ? 4 * ls * lai_acc_size(la) : 8), SMV_EPI);
    }
#undef SMV_EPI
    return rc ? rc : lai_launch(la, *kn, name, g, ls, err);
}

int la_amg_smv_axpy(la_ctx *la, la_amg *k, const la_csr *A, int kw, const la_vec *v, double s,
                    const la_vec *in, la_vec *out, cls_error *err)
{
    int rc;
    if ((rc = lai_check_len("la_amg_smv_axpy", in->n, out->n, err)) ||
        (rc = lai_check_len("la_amg_smv_axpy", A->nrows * kw, out->n, err)))
        return rc;
    if (out->buf == v->buf)
        return cls_fail(err, CLS_EOTHER, "la_amg_smv_axpy: out is the block the rows gather");
    const smv_epi e = {.op = AMG_SMV_OP_AXPY,
                       .in = in->buf,
                       .out = out->buf,
                       .d = in->buf,
                       .dnew = out->buf,
                       .x = out->buf,
                       .c2 = s};
    return smv_launch(la, k, A, kw, v, &e, NULL, err);
}

int la_amg_smv_cheb(la_ctx *la, la_amg *k, const la_csr *A, int kw, const la_vec *v,
                    const la_vec *in, const la_vec *dinv, double c1, double c2, const la_vec *d,
                    la_vec *rout, la_vec *dnew, int xmode, la_vec *x, cls_error *err)
{
    int rc;
    const int64_t m = A->nrows * kw;
    if ((rc = lai_check_len("la_amg_smv_cheb", m, in->n, err)) ||
        (rc = lai_check_len("la_amg_smv_cheb", A->nrows, dinv->n, err)) ||
        (rc = lai_check_len("la_amg_smv_cheb", m, d->n, err)) ||
        (rc = lai_check_len("la_amg_smv_cheb", m, x->n, err)) ||
        (rout && (rc = lai_check_len("la_amg_smv_cheb", m, rout->n, err))) ||
        (dnew && (rc = lai_check_len("la_amg_smv_cheb", m, dnew->n, err))))
        return rc;
    const int dread = c1 != 0.0 || xmode >= 2;
    if (!rout != !dnew || (dnew && ((dread && dnew->buf == d->buf) || dnew->buf == v->buf)) ||
        (rout && (rout->buf == v->buf || (xmode && rout->buf == x->buf))) ||
        (xmode && x->buf == v->buf) || xmode < 0 || xmode > 3)
        return cls_fail(err, CLS_EOTHER, "la_amg_smv_cheb: blocks that alias (xmode %d)", xmode);
    const smv_epi e = {.op = AMG_SMV_OP_CHEB,
                       .in = in->buf,
                       .out = rout ? rout->buf : in->buf,
                       .d = d->buf,
                       .dnew = dnew ? dnew->buf : d->buf,
                       .x = x->buf,
                       .c1 = c1,
                       .c2 = c2,
                       .xmode = xmode,
                       .wrd = rout != NULL};
    return smv_launch(la, k, A, kw, v, &e, dinv, err);
}

int la_amg_smv_store(la_ctx *la, la_amg *k, const la_csr *A, int kw, const la_vec *v, la_vec *out,
                     cls_error *err)
{
    int rc;
    if ((rc = lai_check_len("la_amg_smv_store", A->nrows * kw, out->n, err)))
        return rc;
    if (out->buf == v->buf)
        return cls_fail(err, CLS_EOTHER, "la_amg_smv_store: out is the block the rows gather");
    const smv_epi e = {.op = AMG_SMV_OP_STORE,
                       .in = out->buf,
                       .out = out->buf,
                       .d = out->buf,
                       .dnew = out->buf,
                       .x = out->buf};
    return smv_launch(la, k, A, kw, v, &e, NULL, err);
}
