/*
 * la_sparse.h: sparse building blocks on the device for set-ups that build
 * matrices there (solver/amg/amg_dsetup.c builds the AMG hierarchy with
 * them): an exclusive prefix sum of int32 counts (the row pointers of every
 * matrix built on the device come from it) and the sparse product C = A B
 * (the Galerkin product R A P is two of them).
 *
 * Matrices here are plain device CSR (la_dcsr): int32 row pointers and
 * columns, double values, columns sorted within each row. They are built
 * only in double: the set-up's callers fall back to the host set-up for
 * float and mixed precision. la_csr_adopt (la.h) turns an la_dcsr into an
 * la_csr that la_spmv runs.
 *
 * Kernels in scan.cl and spgemm.cl; the plain host twins the tests hold
 * them to are a serial prefix sum and solver/amg/amg_rap.c's amg_spgemm.
 */
#ifndef CLS_KERNELS_LA_SPARSE_H
#define CLS_KERNELS_LA_SPARSE_H

#include "la.h"

/* A CSR matrix on the device: rowptr (nrows + 1 int32), col (nnz int32),
 * val (nnz double); columns sorted in each row. */
typedef struct la_dcsr {
    cl_mem rowptr, col, val;
    int64_t nrows, ncols, nnz;
} la_dcsr;

void la_dcsr_release(la_dcsr *M);

typedef struct la_sparse {
    cl_program prog;
    cl_kernel k_scan_block, k_scan_top, k_scan_add; /* scan.cl */
    cl_kernel k_sg_bound, k_sg_count, k_sg_count_global, k_sg_fill, k_sg_fill_global,
        k_sg_sort;                             /* spgemm.cl */
    cl_kernel k_sg_count_long, k_sg_fill_long; /* spgemm.cl: the rows past the short bin */
    size_t scan_ls;
    size_t sg_ls;    /* work-items per group of the product's kernels */
    size_t hash_cap; /* local hash table entries per work-group of the product (a power of
                      * two; CLSOLVE_SPGEMM_HASH_CAP or a caller may lower it, the tests do
                      * so the global tables run) */
    cl_mem scan_tmp; /* la_scan_i32's block sums and total, grown as needed */
    size_t scan_tmp_bytes;
    /* the last la_spgemm's rows in the long bin and in global tables (what
     * the tests check ran; a tuning aid) */
    int64_t last_long_rows, last_global_rows;
} la_sparse;

/* Builds scan.cl and spgemm.cl for la's device (double values). */
int la_sparse_init(la_ctx *la, la_sparse *k, cls_error *err);
void la_sparse_release(la_sparse *k);

/* off[0..n] = exclusive prefix sums of the int32 counts cnt[0..n-1]
 * (off[0] = 0, off[n] = the total), enqueued; *total (may be NULL) is read
 * back (a blocking read). off must hold n + 1 int32 and must not be cnt.
 * A total past INT32_MAX is an error that says so (the device kernels'
 * indices are 32-bit). */
int la_scan_i32(la_ctx *la, la_sparse *k, cl_mem cnt, int64_t n, cl_mem off, int64_t *total,
                cls_error *err);

/* C = A B (A->ncols == B->nrows); C's buffers are created here, columns
 * sorted in each row, no explicit zeros dropped (C's pattern is the
 * symbolic product's). Values are sums of the same products as the host's
 * amg_spgemm in another order: equal within rounding. */
int la_spgemm(la_ctx *la, la_sparse *k, const la_dcsr *A, const la_dcsr *B, la_dcsr *C,
              cls_error *err);

#endif
