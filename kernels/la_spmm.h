/*
 * la_spmm.h: Y = A X for several vectors at once on one device (spmm.cl),
 * for right-hand sides that iterate together (solver/krylov/dbcg.c): the matrix
 * is read once for up to 8 columns. CSR-family formats (scalar, vector,
 * adaptive: the CSR arrays are on the device) and SELL have a block kernel;
 * BCSR falls back to one SpMV per column (the matrix is then read k times,
 * as the docs say).
 */
#ifndef CLS_KERNELS_LA_SPMM_H
#define CLS_KERNELS_LA_SPMM_H

#include "la.h"

#define LA_SPMM_MAXK 8 /* columns per launch */

typedef struct la_spmmk {
    la_ctx *la;
    cl_kernel csr, sell, wdots;
    cl_kernel rm_sell[3], rm_csr[3]; /* la_spmm_rm's, kw = 2, 4, 8 (made at first use) */
    char rm_name[2][3][24];          /* their names (profiles keep the pointer) */
} la_spmmk;

int la_spmm_create(la_ctx *la, la_spmmk *s, cls_error *err);
void la_spmm_release(la_spmmk *s);

/* y[c] = A x[c], c < k (any k: chunks of LA_SPMM_MAXK); A may be a part's
 * block at row_offset (y indexed from it). x[c] holds A->ncols entries. */
int la_spmm(la_spmmk *s, const la_csr *A, int k, const la_vec *const *x, la_vec *const *y,
            cls_error *err);
/* Y = A X with X and Y row-major blocks of kw = 2, 4 or 8 columns (X:
 * A->ncols x kw, Y: A->nrows x kw): bcg.cl's k-wide SpMM, whose gather is
 * one segment of kw values. SELL and the CSR family (not BCSR; no row
 * offset: la_spmm_rm_supports). */
int la_spmm_rm_supports(const la_csr *A);
int la_spmm_rm(la_spmmk *s, const la_csr *A, int kw, const la_vec *X, la_vec *Y, cls_error *err);
/* the pairs u'w, w'w of u and w (n entries) into partial, laid out as an
 * SpMV epilogue's over `groups` groups of ls (cgf_fold reads them) */
int la_spmm_wdots(la_spmmk *s, const la_vec *u, const la_vec *w, cl_mem partial, size_t groups,
                  size_t ls, cls_error *err);

#endif
