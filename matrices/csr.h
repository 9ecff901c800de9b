/*
 * csr.h: the compressed sparse row matrix every other module consumes.
 *
 * Host storage is 64-bit row pointers (a part may hold more than 2^31
 * entries on the host) and 32-bit column indices (columns beyond 2^31 are
 * refused by the reader with a clear message). Columns are sorted within each
 * row and unique: duplicates were summed when the matrix was assembled, and
 * that count is reported, not hidden.
 *
 * csr_spmv_ref is the plain double-precision twin that every device kernel is
 * tested against (HPCG's ComputeSPMV_ref).
 */
#ifndef CLS_MATRICES_CSR_H
#define CLS_MATRICES_CSR_H

#include <stdint.h>

#include "../common/error.h"

typedef struct csr_matrix {
    int64_t nrows, ncols, nnz;
    int64_t *rowptr; /* nrows + 1 */
    int32_t *col;    /* nnz, sorted and unique within a row */
    double *val;     /* nnz */
} csr_matrix;

/* A triplet list, as read from a coordinate file, 0-based. */
typedef struct coo_matrix {
    int64_t nrows, ncols, nnz, cap;
    int32_t *row, *col;
    double *val;
} coo_matrix;

/* Row-length and diagonal statistics: drive kernel choice and `clsolve check`. */
typedef struct csr_stats {
    int64_t min_row, max_row, empty_rows;
    double mean_row, stddev_row;
    int64_t missing_diag, zero_diag, negative_diag; /* counts over min(nrows,ncols) */
    int64_t first_bad_diag;                         /* 0-based row, -1 if none */
    int symmetric;                                  /* 1 if A == A^T exactly (pattern and values) */
    double max_asym;                                /* max |a_ij - a_ji| / max |a_ij| */
} csr_stats;

/* The index of column j in row i (columns sorted within the row), or -1:
 * a binary search. */
int64_t csr_find(const csr_matrix *A, int64_t i, int64_t j);

void csr_init(csr_matrix *A);
void csr_free(csr_matrix *A);
int csr_alloc(csr_matrix *A, int64_t nrows, int64_t ncols, int64_t nnz, cls_error *err);

void coo_init(coo_matrix *C);
void coo_free(coo_matrix *C);

/* Builds CSR from triplets: sorts by (row, col), sums duplicates and counts
 * them in *duplicates (may be NULL). C is left intact. Duplicates are summed
 * in ascending value order, so the result is bit-identical whatever the
 * input order and thread count. Uses one thread per online CPU for large
 * inputs (see csr_from_coo_mt). */
int csr_from_coo(const coo_matrix *C, csr_matrix *A, int64_t *duplicates, cls_error *err);

/* As csr_from_coo with `threads` threads (0: one per online CPU; inputs
 * smaller than csr_set_parallel_min's threshold use one) and a mirror:
 * 0 takes the entries as they are; +1 also adds (j, i, v) for every stored
 * (i, j, v) with i != j (symmetric storage), -1 adds (j, i, -v) (skew).
 * *expanded (may be NULL) gets the entry count after mirroring, before the
 * duplicate merge. */
int csr_from_coo_mt(const coo_matrix *C, int mirror, int threads, csr_matrix *A, int64_t *expanded,
                    int64_t *duplicates, cls_error *err);

/* As csr_from_coo_mt, but consumes C (it is freed and emptied on return,
 * success or not): when C is grouped by ascending row and mirror is 0, its
 * column and value arrays become A's without a copy. */
int csr_from_coo_take(coo_matrix *C, int mirror, int threads, csr_matrix *A, int64_t *expanded,
                      int64_t *duplicates, cls_error *err);

/* As csr_from_coo_take, for the rows [rb, re) of C's numbering only: an
 * entry (or, with mirror, its mirror) whose row is outside is skipped;
 * A's row r is C's row rb + r, its columns C's. X (may be NULL) holds
 * more entries of those rows, already expanded (no mirror applied),
 * rows in C's numbering. C and X are consumed. A ranged read keeps its
 * own rows of the triplets it parsed and adds what other ranks sent,
 * without copying its own into one list first (solver/dinput_ranged.c). */
int csr_from_coo_rows_take(coo_matrix *C, int mirror, int64_t rb, int64_t re, coo_matrix *X,
                           int threads, csr_matrix *A, int64_t *expanded, int64_t *duplicates,
                           cls_error *err);

/* The way the calling thread's last assembly went: "adopt" or "copy" (grouped
 * by row, no mirror), "grouped mirror" (symmetric storage grouped by row),
 * "scatter" (the rest). For tests and profiles. CLSOLVE_CSR_PATH=scatter
 * makes symmetric input take the scatter path (A/B runs). */
const char *csr_last_path(void);

/* 1 when the calling thread's last assembly found its rows in order
 * already (grouped by row, columns strictly ascending, a mirrored input
 * all on or below the diagonal) and skipped the sort and merge. */
int csr_last_in_order(void);

/* Entries (plus rows) below which assembly runs on one thread (default
 * 65536; <= 0 restores it). Tests set 1 to run small inputs in parallel. */
void csr_set_parallel_min(int64_t nnz);

/* Sorts one row's (column, value) pairs by column, by insertion: for rows
 * that are short and nearly sorted (a renumbered part's rows, a product's
 * rows). Equal columns keep their order. */
void csr_sort_row_by_col(int32_t *col, double *val, int64_t n);

/* y = A x in double, the reference every kernel is checked against. */
void csr_spmv_ref(const csr_matrix *A, const double *x, double *y);

/* d[i] = a_ii (0 where the diagonal entry is not stored). */
void csr_diagonal(const csr_matrix *A, double *d);

void csr_compute_stats(const csr_matrix *A, csr_stats *s);

#endif
