/*
 * amg_prolong.c: the smoothed prolongator of smoothed aggregation and the
 * estimate of lambda_max(D^-1 A) it (and the Chebyshev smoother) needs.
 *
 * Tentative prolongator (Vanek, Mandel, Brezina 1996, section 3.2): the
 * near-nullspace of a scalar elliptic operator is the constant, restricted
 * to each aggregate and normalised,
 *     T(i, a) = 1 / sqrt(|aggregate a|)   if row i belongs to aggregate a,
 * so T'T = I. Rows outside every aggregate are zero rows of T.
 *
 * Smoothed prolongator (ibid., section 4): one damped Jacobi step on T,
 *     P = (I - omega D^-1 A) T,   omega = omega_scale / lambda_max(D^-1 A),
 * omega_scale = 4/3 in Vanek et al. (PETSc GAMG uses 1.4). Row i of P is
 *     P(i, agg(j)) += (delta_ij - omega a_ij / a_ii) T(j, agg(j))
 * over the stored a_ij: a short merge per row, parallel over rows, written
 * at A's row offsets first and compacted after (no symbolic pass).
 *
 * lambda_max: `steps` Lanczos steps (Lanczos 1950; Golub and Van Loan,
 * Matrix Computations, 4th ed., 10.1) on B = D^-1/2 A D^-1/2, similar to
 * D^-1 A and symmetric, from a fixed pseudo-random start; the largest
 * eigenvalue of the tridiagonal T_k by Sturm bisection. A Ritz value is a
 * lower bound of lambda_max, which is why the smoother's interval stretches
 * it by cheb_upper (1.1) as PETSc's Chebyshev does.
 */
#include "amg_priv.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../common/parallel.h"

/* ----------------------------------------------------------- lambda_max */

typedef struct {
    int64_t n;
    const double *dsq, *y;
    double *v, *w, *vprev;
    double alpha, beta;
    int op;
} lz_ctx;

static void lz_range(void *arg, int range, int64_t b, int64_t e)
{
    lz_ctx *c = arg;
    for (int64_t i = b; i < e; i++) {
        switch (c->op) {
        case 0: /* w = D^-1/2 y - beta v_prev  (y = A D^-1/2 v) */
            c->w[i] = c->dsq[i] * c->y[i] - c->beta * c->vprev[i];
            break;
        case 1: /* w -= alpha v */
            c->w[i] -= c->alpha * c->v[i];
            break;
        case 2: /* v_prev = v ; v = w / beta */
            c->vprev[i] = c->v[i];
            c->v[i] = c->w[i] / c->beta;
            break;
        case 3: /* u = D^-1/2 v, in w */
            c->w[i] = c->dsq[i] * c->v[i];
            break;
        }
    }
}

/* Largest eigenvalue of the symmetric tridiagonal (a[0..k), b[0..k-1)) by
 * bisection on the Sturm count (the number of eigenvalues below x). */
static double tridiag_max_eig(const double *a, const double *b, int k)
{
    double lo = a[0], hi = a[0];
    for (int i = 0; i < k; i++) { /* Gershgorin */
        double r = (i > 0 ? fabs(b[i - 1]) : 0.0) + (i + 1 < k ? fabs(b[i]) : 0.0);
        lo = fmin(lo, a[i] - r);
        hi = fmax(hi, a[i] + r);
    }
    for (int it = 0; it < 200 && hi - lo > 1e-12 * fmax(fabs(hi), 1e-300); it++) {
        double x = 0.5 * (lo + hi), q = 1.0;
        int below = 0;
        for (int i = 0; i < k; i++) {
            q = a[i] - x - (i > 0 ? b[i - 1] * b[i - 1] / q : 0.0);
            if (q == 0.0)
                q = -1e-300;
            below += q < 0.0;
        }
        if (below == k)
            hi = x; /* every eigenvalue is below x */
        else
            lo = x;
    }
    return hi;
}

int amg_lambda_max(const csr_matrix *A, const double *diag, int steps, double *lmax, cls_error *err)
{
    int64_t n = A->nrows;
    *lmax = 1.0;
    if (n == 0)
        return CLS_OK;
    if (steps < 1)
        steps = 1;
    if (steps > 64)
        steps = 64;
    double *buf = malloc((size_t)n * 5 * sizeof *buf);
    if (!buf)
        return cls_fail(err, CLS_EOTHER, "amg: out of memory for the eigenvalue estimate");
    double *dsq = buf, *v = buf + n, *vprev = buf + 2 * n, *w = buf + 3 * n, *y = buf + 4 * n;
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    for (int64_t i = 0; i < n; i++) {
        dsq[i] = 1.0 / sqrt(fabs(diag[i]));
        s ^= s << 13; /* xorshift64: a start with every eigencomponent */
        s ^= s >> 7;
        s ^= s << 17;
        v[i] = (double)(s >> 11) * (1.0 / 9007199254740992.0) + 0.5;
        vprev[i] = 0.0;
    }
    double nv = sqrt(amg_par_dot(v, v, n));
    for (int64_t i = 0; i < n; i++)
        v[i] /= nv;
    double al[64], be[64];
    int k = 0;
    lz_ctx c = {n, dsq, y, v, w, vprev, 0.0, 0.0, 0};
    for (; k < steps; k++) {
        c.op = 3;
        cls_parallel_for(n, AMG_GRAIN, lz_range, &c);
        amg_par_spmv(A, w, y); /* y = A D^-1/2 v */
        c.op = 0;
        cls_parallel_for(n, AMG_GRAIN, lz_range, &c);
        c.alpha = al[k] = amg_par_dot(w, v, n); /* alpha_k = v'B v */
        c.op = 1;
        cls_parallel_for(n, AMG_GRAIN, lz_range, &c);
        c.beta = be[k] = sqrt(amg_par_dot(w, w, n));
        if (!(be[k] > 1e-12 * fabs(al[k])) || k + 1 == steps) {
            k++;
            break;
        }
        c.op = 2;
        cls_parallel_for(n, AMG_GRAIN, lz_range, &c);
    }
    free(buf);
    *lmax = tridiag_max_eig(al, be, k);
    if (!(*lmax > 0.0) || !isfinite(*lmax))
        return cls_fail(err, CLS_EBREAKDOWN,
                        "amg: the estimate of lambda_max(D^-1 A) is %g: the matrix is not "
                        "positive definite",
                        *lmax);
    return CLS_OK;
}

/* ------------------------------------------------------------ prolongator */

typedef struct {
    const csr_matrix *A;
    const double *diag;
    const int32_t *agg;
    const double *tval; /* 1/sqrt(|aggregate|) */
    _Atomic int32_t *size;
    double omega;
    int32_t *tcol; /* rows written at A's row offsets */
    double *tv;
    int64_t *len;
    csr_matrix *P;
    int pass;
} pr_ctx;

static void pr_range(void *arg, int range, int64_t b, int64_t e)
{
    pr_ctx *c = arg;
    const csr_matrix *A = c->A;
    if (c->pass == 0) { /* aggregate sizes */
        for (int64_t i = b; i < e; i++)
            if (c->agg[i] >= 0)
                atomic_fetch_add_explicit(&c->size[c->agg[i]], 1, memory_order_relaxed);
        return;
    }
    if (c->pass == 2) { /* compaction into P */
        for (int64_t i = b; i < e; i++) {
            int64_t src = A->rowptr[i], dst = c->P->rowptr[i];
            memcpy(c->P->col + dst, c->tcol + src, (size_t)c->len[i] * sizeof(int32_t));
            memcpy(c->P->val + dst, c->tv + src, (size_t)c->len[i] * sizeof(double));
        }
        return;
    }
    for (int64_t i = b; i < e; i++) {
        int32_t *cols = c->tcol + A->rowptr[i];
        double *vals = c->tv + A->rowptr[i];
        int64_t m = 0;
        double s = c->omega / c->diag[i];
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            int32_t j = A->col[k], a = c->agg[j];
            if (a < 0)
                continue;
            /* (delta_ij - omega a_ij / a_ii) T(j, a) */
            double v = ((j == i ? 1.0 : 0.0) - s * A->val[k]) * c->tval[a];
            int64_t p = m;
            while (p > 0 && cols[p - 1] > a)
                p--;
            if (p > 0 && cols[p - 1] == a) {
                vals[p - 1] += v;
                continue;
            }
            memmove(cols + p + 1, cols + p, (size_t)(m - p) * sizeof *cols);
            memmove(vals + p + 1, vals + p, (size_t)(m - p) * sizeof *vals);
            cols[p] = a;
            vals[p] = v;
            m++;
        }
        c->len[i] = m;
    }
}

int amg_prolongator(const csr_matrix *A, const double *diag, const int32_t *agg, int64_t naggs,
                    double omega, csr_matrix *P, cls_error *err)
{
    int64_t n = A->nrows;
    csr_init(P);
    pr_ctx c = {.A = A, .diag = diag, .agg = agg, .omega = omega, .P = P};
    double *tval = malloc((size_t)(naggs ? naggs : 1) * sizeof *tval);
    c.size = calloc((size_t)(naggs ? naggs : 1), sizeof *c.size);
    c.tcol = malloc((size_t)(A->nnz ? A->nnz : 1) * sizeof *c.tcol);
    c.tv = malloc((size_t)(A->nnz ? A->nnz : 1) * sizeof *c.tv);
    c.len = malloc((size_t)(n ? n : 1) * sizeof *c.len);
    c.tval = tval;
    int rc = CLS_OK;
    if (!tval || !c.size || !c.tcol || !c.tv || !c.len) {
        rc = cls_fail(err, CLS_EOTHER, "amg: out of memory for the prolongator (%lld rows)",
                      (long long)n);
        goto done;
    }
    c.pass = 0;
    cls_parallel_for(n, AMG_GRAIN, pr_range, &c);
    for (int64_t a = 0; a < naggs; a++)
        tval[a] = 1.0 / sqrt((double)atomic_load_explicit(&c.size[a], memory_order_relaxed));
    c.pass = 1;
    cls_parallel_for(n, AMG_GRAIN, pr_range, &c);
    int64_t nnz = 0;
    for (int64_t i = 0; i < n; i++)
        nnz += c.len[i];
    if ((rc = csr_alloc(P, n, naggs, nnz, err)))
        goto done;
    P->rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++)
        P->rowptr[i + 1] = P->rowptr[i] + c.len[i];
    c.pass = 2;
    cls_parallel_for(n, AMG_GRAIN, pr_range, &c);
done:
    free(tval);
    free(c.size);
    free(c.tcol);
    free(c.tv);
    free(c.len);
    return rc;
}
