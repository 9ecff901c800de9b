/*
 * la_bcg.h: the block CG's workspace on one device (bcg.cl; the method is
 * solver/krylov/bcg.c). Blocks of k <= LA_BCG_MAXK columns in one buffer
 * each, column-major with a leading dimension ld padded to the device's
 * sub-buffer alignment, so that column c of a block is also an la_vec of
 * its own (an OpenCL sub-buffer): the block SpMM (la_spmm.h) and the
 * preconditioners' pc_apply_block take the columns as vectors, with no
 * copies, while the block kernels read a row's k entries together. P and
 * Q alone are row-major n x kw (kw = k rounded up to 2, 4 or 8), for the
 * block's own SpMM (bcg.cl says why).
 *
 * Every call that returns sums enqueues its kernel, folds the groups'
 * partial sums on the device (bcg_fold) and reads back the upper triangle
 * and the diagonal, which it returns as LA_BCG_NSUM doubles: out[a * 8 + b]
 * the symmetric k x k matrix, out[64 + b] the diagonal r_b'r_b.
 */
#ifndef CLS_KERNELS_LA_BCG_H
#define CLS_KERNELS_LA_BCG_H

#include "la.h"

#define LA_BCG_MAXK 8
#define LA_BCG_NSUM 72 /* what a call returns: the square, then the diagonal */
#define LA_BCG_NACC 44 /* what the device sums: the upper triangle, then the diagonal */

/* bcg.cl's kernels, in la_bcg.kern */
enum {
    LA_BCG_SPMM_SELL, /* these four and UPDATE, DIR: the kw-wide ones */
    LA_BCG_SPMM_SELL_G,
    LA_BCG_SPMM_CSR,
    LA_BCG_SPMM_CSR_G,
    LA_BCG_GRAM,
    LA_BCG_UPDATE,
    LA_BCG_RESID,
    LA_BCG_DIR,
    LA_BCG_FOLD,
    LA_BCG_NKERN
};

typedef struct la_bcg {
    la_ctx *la;
    int k, kw, lg; /* columns; P and Q's width kw = 1 << lg >= k, 2 at least */
    int lc;        /* the unfused SpMM sums 1 << lc columns a work-item */
    int fused;     /* the width's choice: G = P'Q summed inside the SpMM
                    * (la_bcg_spmm with gram; bcg_width_choice in la_bcg.c) */
    int64_t n, ld;
    cl_mem X, R, Z, B; /* column-major; Z: with a general preconditioner only */
    cl_mem P, Q;       /* row-major n x kw */
    la_vec xv[LA_BCG_MAXK], rv[LA_BCG_MAXK], zv[LA_BCG_MAXK]; /* the columns (sub-buffers) */
    cl_mem alpha, beta, partial, out;
    size_t groups, pcap, ls; /* the vector kernels' grid; the records in partial */
    cl_kernel kern[LA_BCG_NKERN];
    char names[LA_BCG_NKERN][24]; /* the kernels' names, for errors and profiles */
    struct cpu_bcg *cpu;          /* native loops on a CPU device (la_bcg_native), else NULL */
    int rho_fused;                /* la_bcg_update and la_bcg_resid also return rho = (W R)'R
                                   * in out's square (W: the dinv given to la_bcg_native,
                                   * or I): the native passes without a Z block */
} la_bcg;

/* n rows, k columns (1..LA_BCG_MAXK); with_z: a Z block for a general
 * preconditioner. X, R, B (and Z) are allocated, not cleared; P, Q zeroed. */
int la_bcg_create(la_ctx *la, int64_t n, int k, int with_z, la_bcg *w, cls_error *err);
void la_bcg_release(la_bcg *w);

/* On a CPU device in double precision with A in CSR: the blocks, A and
 * dinv (Jacobi's D^-1, or NULL) mapped, and every call below runs as
 * native loops from here to la_bcg_release (kernels/cpu/cpu_bcg.c: PoCL
 * ran bcg.cl 5-7x slower). 1 when it did, 0 when the kernels stay
 * (why in the trace); CLSOLVE_BCG_NATIVE=0 keeps the kernels. Call it
 * before la_bcg_put. */
int la_bcg_native(la_bcg *w, const la_csr *A, const la_vec *dinv);
/* 1 when la_bcg_native would take la and A (for --method auto) */
int la_bcg_native_usable(const la_ctx *la, const la_csr *A);

/* column c of blk (w->X, w->B, ...) from / into a vector of n entries */
int la_bcg_put(la_bcg *w, cl_mem blk, int c, const la_vec *v, cls_error *err);
int la_bcg_get(la_bcg *w, cl_mem blk, int c, la_vec *v, cls_error *err);

/* 1 when the block SpMM reads A's format: SELL, or the CSR family's arrays
 * (not BCSR), a whole part (no row offset) */
int la_bcg_supports(const la_csr *A);
/* Q = A P; with gram non-NULL, also gram = P'Q (as la_bcg_gram_pq's,
 * summed in the SpMM while Q's row is in registers: one pass less) */
int la_bcg_spmm(la_bcg *w, const la_csr *A, double *gram, cls_error *err);
/* out = P'Q (the fused SpMM's twin), or U'WV of two column-major blocks,
 * W = diag(wt) or I (wt NULL): the k x k matrix; out[64..] is 0 */
int la_bcg_gram_pq(la_bcg *w, double out[LA_BCG_NSUM], cls_error *err);
int la_bcg_gram_cols(la_bcg *w, cl_mem U, cl_mem V, const la_vec *wt, double out[LA_BCG_NSUM],
                     cls_error *err);
/* R -= Q alpha (alpha[a * 8 + b]: column b loses sum_a Q_a alpha_ab), and
 * alpha kept for the X += P alpha that la_bcg_dir's with_x makes;
 * out[64 + b]: the new r_b'r_b (the square 0: rho is la_bcg_gram_cols's, a
 * separate pass, which the update's registers could not afford) */
int la_bcg_update(la_bcg *w, const double *alpha, double out[LA_BCG_NSUM], cls_error *err);
/* R = B - R (R holds A X, from la_spmm into w->rv), with the same sums */
int la_bcg_resid(la_bcg *w, double out[LA_BCG_NSUM], cls_error *err);
/* R = A X (la_spmm through sk into the columns of R, or the native passes,
 * which go through P and Q and leave them changed: a restart's P = Z
 * follows): the product la_bcg_resid turns into B - A X */
struct la_spmmk;
int la_bcg_ax(la_bcg *w, struct la_spmmk *sk, const la_csr *A, cls_error *err);
/* P = Z + P beta, Z = zsrc (R or Z) scaled by dinv when given; with_x:
 * first X += P alpha with the old P and the last la_bcg_update's alpha (the
 * old P read once for both); fresh: P = Z (beta not read, X untouched) */
int la_bcg_dir(la_bcg *w, cl_mem zsrc, const la_vec *dinv, const double *beta, int fresh,
               int with_x, cls_error *err);

#endif
