/*
 * amg_coarse.c: the direct solve of the coarsest level, as its explicit
 * inverse.
 *
 * The coarsest operator is small (at most coarse_size rows, AMG_DENSE_MAX
 * when coarsening stalled), so it is factored densely, A = L L' (Cholesky;
 * Golub and Van Loan, Matrix Computations, 4th ed., Algorithm 4.2.1), and
 * inverted column by column (L y = e_j, L' x = y; the columns in parallel).
 * The device then solves the coarsest level with one dense matrix-vector
 * product, which is parallel where two triangular solves are not; the
 * inverse is symmetrised ((X + X')/2) so the V-cycle stays exactly
 * symmetric. A pivot that is not positive means the operator is not SPD to
 * working precision (a singular or indefinite input): reported, never
 * worked around here (amg.c then smooths the coarsest level instead).
 */
#include "amg_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const double *L;
    double *X;
    int64_t n;
} inv_ctx;

static void inv_cols(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    inv_ctx *c = arg;
    const int64_t n = c->n;
    const double *L = c->L;
    for (int64_t j = b; j < e; j++) {
        double *x = c->X + j * n; /* column j, stored as row j */
        memset(x, 0, (size_t)n * sizeof *x);
        for (int64_t i = j; i < n; i++) { /* L y = e_j */
            double s = i == j ? 1.0 : 0.0;
            for (int64_t k = j; k < i; k++)
                s -= L[i * n + k] * x[k];
            x[i] = s / L[i * n + i];
        }
        for (int64_t i = n - 1; i >= 0; i--) { /* L' x = y */
            double s = x[i];
            for (int64_t k = i + 1; k < n; k++)
                s -= L[k * n + i] * x[k];
            x[i] = s / L[i * n + i];
        }
    }
}

int amg_dense_inverse(const csr_matrix *A, double **inv, cls_error *err)
{
    int64_t n = A->nrows;
    *inv = NULL;
    if (n > AMG_DENSE_MAX)
        return cls_fail(err, CLS_EOTHER, "amg: coarsest level of %lld rows is too large to invert",
                        (long long)n);
    double *L = calloc((size_t)(n ? n * n : 1), sizeof *L);
    double *X = malloc((size_t)(n ? n * n : 1) * sizeof *X);
    if (!L || !X) {
        free(L);
        free(X);
        return cls_fail(err, CLS_EOTHER, "amg: out of memory for the coarsest level (%lld rows)",
                        (long long)n);
    }
    double dmax = 0.0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            L[i * n + A->col[k]] = A->val[k];
            if (A->col[k] == i)
                dmax = fmax(dmax, fabs(A->val[k]));
        }
    for (int64_t j = 0; j < n; j++) { /* L L' = A, lower triangle in place */
        double d = L[j * n + j];
        for (int64_t k = 0; k < j; k++)
            d -= L[j * n + k] * L[j * n + k];
        if (!(d > 1e-14 * dmax)) {
            free(L);
            free(X);
            return cls_fail(err, CLS_EBREAKDOWN,
                            "amg: the coarsest operator (%lld rows) is not positive definite "
                            "(Cholesky pivot %g at row %lld)",
                            (long long)n, d, (long long)j);
        }
        d = sqrt(d);
        L[j * n + j] = d;
        for (int64_t i = j + 1; i < n; i++) {
            double s = L[i * n + j];
            for (int64_t k = 0; k < j; k++)
                s -= L[i * n + k] * L[j * n + k];
            L[i * n + j] = s / d;
        }
    }
    inv_ctx c = {L, X, n};
    amg_par_chunks(n, 8, inv_cols, &c);
    for (int64_t i = 0; i < n; i++) /* exactly symmetric */
        for (int64_t j = i + 1; j < n; j++) {
            double s = 0.5 * (X[i * n + j] + X[j * n + i]);
            X[i * n + j] = X[j * n + i] = s;
        }
    free(L);
    *inv = X;
    return CLS_OK;
}
