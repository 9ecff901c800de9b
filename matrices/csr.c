/*
 * csr.c: the CSR matrix itself (allocation, csr.h), the reference SpMV that
 * every kernel is tested against, the diagonal, a lookup, and the
 * statistics that drive kernel choice and `clsolve check`. Building one
 * from triplets is csr_assemble.c's.
 */
#include "csr.h"
#include "../common/bigmem.h"

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
    /* written once by many threads (a part's rows in the split engine's
     * device order, the blocks of the preconditioners): huge pages where
     * the system gives them */
    A->rowptr = cls_big_calloc(((size_t)nrows + 1) * sizeof *A->rowptr);
    A->col = cls_big_malloc((size_t)(nnz ? nnz : 1) * sizeof *A->col);
    A->val = cls_big_malloc((size_t)(nnz ? nnz : 1) * sizeof *A->val);
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

void csr_sort_row_by_col(int32_t *col, double *val, int64_t n)
{
    for (int64_t a = 1; a < n; a++) {
        const int32_t cc = col[a];
        const double v = val[a];
        int64_t d = a;
        while (d > 0 && col[d - 1] > cc) {
            col[d] = col[d - 1];
            val[d] = val[d - 1];
            d--;
        }
        col[d] = cc;
        val[d] = v;
    }
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

int64_t csr_find(const csr_matrix *A, int64_t i, int64_t j)
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
