/*
 * la_amg.h: the device operations of the AMG V-cycle that la.h does not
 * have (solver/amg/amg_device.c strings them together with la_spmv and
 * la_axpy): the smoothers' fused updates and the coarsest level's dense
 * solve. Kernels in amg.cl, built at the la context's precision; formulas
 * beside each call below. The plain host twin of all of them is the
 * reference V-cycle (solver/amg/amg_ref.c).
 */
#ifndef CLS_KERNELS_LA_AMG_H
#define CLS_KERNELS_LA_AMG_H

#include "la.h"

typedef struct la_amg {
    cl_program prog;
    cl_kernel k_cheb_first, k_cheb_next, k_jacobi, k_residual, k_dense, k_pack;
    size_t dense_ls;         /* work-group size of amg_dense */
    cl_program smv_prog;     /* amg_spmm.cl, built at the first la_amg_smv_* */
    cl_kernel smv[2][3];     /* [CSR, SELL][kw = 2, 4, 8] */
    char smv_name[2][3][24]; /* their names (profiles keep the pointer) */
    int smv_sub[3];          /* the CSR kernels take groups of 128 (sub-lanes) */
} la_amg;

/* Builds amg.cl for la's device and precision. */
int la_amg_init(la_ctx *la, la_amg *k, cls_error *err);
void la_amg_release(la_amg *k);

/* The vectors of the updates below are plain (dinv's length) or row-major
 * blocks of kw = 2, 4 or 8 columns (kw times dinv's length: dinv's entry i
 * serves the block's row i), as amg_apply_block's V-cycle keeps them. */

/* r = b - q ; d = c0 dinv.*r ; x += d.  zero: x and q taken as 0 (q may be
 * any vector of the length; it is not read); zero 2: as 1, but only d is
 * written (r = b and x = d left to the caller: la_amg_smv_cheb's xmode 3). */
int la_amg_cheb_first(la_ctx *la, la_amg *k, int zero, const la_vec *b, const la_vec *q,
                      const la_vec *dinv, double c0, la_vec *r, la_vec *d, la_vec *x,
                      cls_error *err);
/* r -= q ; d = c1 d + c2 dinv.*r ; x += d */
int la_amg_cheb_next(la_ctx *la, la_amg *k, const la_vec *q, const la_vec *dinv, double c1,
                     double c2, la_vec *r, la_vec *d, la_vec *x, cls_error *err);
/* x += dinv.*(b - q); zero: x = dinv.*b */
int la_amg_jacobi(la_ctx *la, la_amg *k, int zero, const la_vec *b, const la_vec *q,
                  const la_vec *dinv, la_vec *x, cls_error *err);
/* r = b - q */
int la_amg_residual(la_ctx *la, la_amg *k, const la_vec *b, const la_vec *q, la_vec *r,
                    cls_error *err);
/* The SpMMs with the update in their pass (amg_spmm.cl), A in SELL or the
 * CSR family (la_spmm_rm_supports), v, in, out, d, x row-major blocks of kw
 * columns over A's columns (v) or rows (the rest):
 * out = in + s A v. in and out may be one block; v must not be out. */
int la_amg_smv_axpy(la_ctx *la, la_amg *k, const la_csr *A, int kw, const la_vec *v, double s,
                    const la_vec *in, la_vec *out, cls_error *err);
/* out = A v (the plain SpMM, with long CSR rows split over sub-lanes) */
int la_amg_smv_store(la_ctx *la, la_amg *k, const la_csr *A, int kw, const la_vec *v, la_vec *out,
                     cls_error *err);
/* r' = in - A v ; d' = c1 d + c2 dinv.*r' (c1 = 0: d not read) ; r' into
 * rout and d' into dnew when they are given (both or neither; dnew is not
 * d nor v) ; xmode: 0 x untouched, 1 x += d', 2 x = (x + d) + d',
 * 3 x = d + d'. x must not be v when written. */
int la_amg_smv_cheb(la_ctx *la, la_amg *k, const la_csr *A, int kw, const la_vec *v,
                    const la_vec *in, const la_vec *dinv, double c1, double c2, const la_vec *d,
                    la_vec *rout, la_vec *dnew, int xmode, la_vec *x, cls_error *err);
/* Uploads the n x n row-major matrix M (matrix-value precision). */
int la_amg_dense_upload(la_ctx *la, const double *M, int64_t n, cl_mem *out, cls_error *err);
/* x = M b with the uploaded n x n M (b, x: n entries, or row-major blocks
 * of n x kw: each column) */
int la_amg_dense(la_ctx *la, la_amg *k, cl_mem M, int64_t n, const la_vec *b, la_vec *x,
                 cls_error *err);
/* ncols (1..kw) vectors of n entries into the row-major n x kw block blk
 * (the columns past ncols 0), and back out of it */
int la_amg_pack(la_ctx *la, la_amg *k, int ncols, const la_vec *const *cols, int kw, la_vec *blk,
                cls_error *err);
int la_amg_unpack(la_ctx *la, la_amg *k, const la_vec *blk, int kw, int ncols, la_vec *const *cols,
                  cls_error *err);

#endif
