/*
 * csr.c: CSR assembly from triplets, the reference SpMV and the statistics
 * that drive kernel choice and `clsolve check`.
 *
 * csr_from_coo is a two-pass counting sort by row (O(nnz), no comparison
 * sort over the whole list), then a sort within each row by column, then an
 * in-place merge that sums duplicates. Rows are independent, so the per-row
 * sort and merge are the natural unit of parallelism if it is ever needed.
 */
#include "csr.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void csr_init(csr_matrix *A)
{
    memset(A, 0, sizeof *A);
}

void csr_free(csr_matrix *A)
{
    if (!A)
        return;
    free(A->rowptr);
    free(A->col);
    free(A->val);
    csr_init(A);
}

int csr_alloc(csr_matrix *A, int64_t nrows, int64_t ncols, int64_t nnz, cls_error *err)
{
    csr_init(A);
    if (nrows < 0 || ncols < 0 || nnz < 0)
        return cls_fail(err, CLS_EOTHER, "csr_alloc: negative size");
    A->rowptr = calloc((size_t)nrows + 1, sizeof *A->rowptr);
    A->col = malloc((size_t)(nnz ? nnz : 1) * sizeof *A->col);
    A->val = malloc((size_t)(nnz ? nnz : 1) * sizeof *A->val);
    if (!A->rowptr || !A->col || !A->val) {
        csr_free(A);
        return cls_fail(err, CLS_EOTHER,
                        "out of memory for a CSR matrix of %lld rows and %lld entries",
                        (long long)nrows, (long long)nnz);
    }
    A->nrows = nrows;
    A->ncols = ncols;
    A->nnz = nnz;
    return CLS_OK;
}

void coo_init(coo_matrix *C)
{
    memset(C, 0, sizeof *C);
}

void coo_free(coo_matrix *C)
{
    if (!C)
        return;
    free(C->row);
    free(C->col);
    free(C->val);
    coo_init(C);
}

/* Sorts one row's (col, val) pairs by column: insertion sort for the short
 * rows that dominate sparse matrices, a heap sort past that so a single huge
 * row stays O(n log n). */
static void sort_row(int32_t *col, double *val, int64_t n)
{
    if (n <= 32) {
        for (int64_t i = 1; i < n; i++) {
            int32_t c = col[i];
            double v = val[i];
            int64_t j = i - 1;
            while (j >= 0 && col[j] > c) {
                col[j + 1] = col[j];
                val[j + 1] = val[j];
                j--;
            }
            col[j + 1] = c;
            val[j + 1] = v;
        }
        return;
    }
    /* heap sort */
    for (int64_t start = n / 2 - 1;; start--) {
        int64_t root = start;
        for (;;) {
            int64_t child = 2 * root + 1;
            if (child >= n)
                break;
            if (child + 1 < n && col[child] < col[child + 1])
                child++;
            if (col[root] >= col[child])
                break;
            int32_t tc = col[root];
            col[root] = col[child];
            col[child] = tc;
            double tv = val[root];
            val[root] = val[child];
            val[child] = tv;
            root = child;
        }
        if (start == 0)
            break;
    }
    for (int64_t end = n - 1; end > 0; end--) {
        int32_t tc = col[0];
        col[0] = col[end];
        col[end] = tc;
        double tv = val[0];
        val[0] = val[end];
        val[end] = tv;
        int64_t root = 0;
        for (;;) {
            int64_t child = 2 * root + 1;
            if (child >= end)
                break;
            if (child + 1 < end && col[child] < col[child + 1])
                child++;
            if (col[root] >= col[child])
                break;
            tc = col[root];
            col[root] = col[child];
            col[child] = tc;
            tv = val[root];
            val[root] = val[child];
            val[child] = tv;
            root = child;
        }
    }
}

int csr_from_coo(const coo_matrix *C, csr_matrix *A, int64_t *duplicates, cls_error *err)
{
    int rc = csr_alloc(A, C->nrows, C->ncols, C->nnz, err);
    if (rc)
        return rc;
    /* pass 1: count entries per row */
    for (int64_t k = 0; k < C->nnz; k++)
        A->rowptr[C->row[k] + 1]++;
    for (int64_t i = 0; i < C->nrows; i++)
        A->rowptr[i + 1] += A->rowptr[i];
    /* pass 2: scatter into row buckets */
    int64_t *next = malloc((size_t)(C->nrows ? C->nrows : 1) * sizeof *next);
    if (!next) {
        csr_free(A);
        return cls_fail(err, CLS_EOTHER, "out of memory assembling CSR");
    }
    memcpy(next, A->rowptr, (size_t)C->nrows * sizeof *next);
    for (int64_t k = 0; k < C->nnz; k++) {
        int64_t dst = next[C->row[k]]++;
        A->col[dst] = C->col[k];
        A->val[dst] = C->val[k];
    }
    free(next);
    /* sort each row by column, then merge duplicates in place */
    int64_t dups = 0, out = 0;
    for (int64_t i = 0; i < C->nrows; i++) {
        int64_t begin = A->rowptr[i], end = A->rowptr[i + 1];
        sort_row(A->col + begin, A->val + begin, end - begin);
        A->rowptr[i] = out;
        for (int64_t k = begin; k < end; k++) {
            if (out > A->rowptr[i] && A->col[out - 1] == A->col[k]) {
                A->val[out - 1] += A->val[k];
                dups++;
            } else {
                A->col[out] = A->col[k];
                A->val[out] = A->val[k];
                out++;
            }
        }
    }
    A->rowptr[C->nrows] = out;
    A->nnz = out;
    if (duplicates)
        *duplicates = dups;
    return CLS_OK;
}

void csr_spmv_ref(const csr_matrix *A, const double *x, double *y)
{
    for (int64_t i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            s += A->val[k] * x[A->col[k]];
        y[i] = s;
    }
}

void csr_diagonal(const csr_matrix *A, double *d)
{
    for (int64_t i = 0; i < A->nrows; i++) {
        d[i] = 0.0;
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            if (A->col[k] == i) {
                d[i] = A->val[k];
                break;
            }
    }
}

/* Binary search for column j in row i; returns the index or -1. */
static int64_t csr_find(const csr_matrix *A, int64_t i, int32_t j)
{
    int64_t lo = A->rowptr[i], hi = A->rowptr[i + 1] - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (A->col[mid] == j)
            return mid;
        if (A->col[mid] < j)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

void csr_compute_stats(const csr_matrix *A, csr_stats *s)
{
    memset(s, 0, sizeof *s);
    s->first_bad_diag = -1;
    s->min_row = A->nrows ? INT64_MAX : 0;
    double sum = 0, sum2 = 0, maxabs = 0, maxdiff = 0;
    for (int64_t i = 0; i < A->nrows; i++) {
        int64_t len = A->rowptr[i + 1] - A->rowptr[i];
        if (len < s->min_row)
            s->min_row = len;
        if (len > s->max_row)
            s->max_row = len;
        if (len == 0)
            s->empty_rows++;
        sum += (double)len;
        sum2 += (double)len * (double)len;
    }
    if (A->nrows) {
        s->mean_row = sum / (double)A->nrows;
        double var = sum2 / (double)A->nrows - s->mean_row * s->mean_row;
        s->stddev_row = var > 0 ? sqrt(var) : 0.0;
    }
    int64_t ndiag = A->nrows < A->ncols ? A->nrows : A->ncols;
    for (int64_t i = 0; i < ndiag; i++) {
        int64_t k = csr_find(A, i, (int32_t)i);
        int bad = 0;
        if (k < 0) {
            s->missing_diag++;
            bad = 1;
        } else if (A->val[k] == 0.0) {
            s->zero_diag++;
            bad = 1;
        } else if (A->val[k] < 0.0) {
            s->negative_diag++;
            bad = 1;
        }
        if (bad && s->first_bad_diag < 0)
            s->first_bad_diag = i;
    }
    /* symmetry: every a_ij must have a matching a_ji */
    int sym = A->nrows == A->ncols;
    for (int64_t i = 0; sym && i < A->nrows; i++) {
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            double v = fabs(A->val[k]);
            if (v > maxabs)
                maxabs = v;
            int64_t t = csr_find(A, A->col[k], (int32_t)i);
            double vt = t < 0 ? 0.0 : A->val[t];
            double d = fabs(A->val[k] - vt);
            if (d > maxdiff)
                maxdiff = d;
        }
    }
    s->symmetric = sym && maxdiff == 0.0;
    s->max_asym = !sym ? INFINITY : (maxabs > 0 ? maxdiff / maxabs : 0.0);
}
