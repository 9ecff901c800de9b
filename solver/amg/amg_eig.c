/*
 * amg_eig.c: the estimate of lambda_max(D^-1 A) that the prolongator's
 * damping (omega = omega_scale / lambda_max) and the Chebyshev smoother's
 * interval need, by `steps` Lanczos steps (Lanczos 1950; Golub and Van
 * Loan, Matrix Computations, 4th ed., 10.1).
 *
 * D^-1 A is self-adjoint in the D inner product (x, y)_D = x'D y, so
 * Lanczos runs on it directly in that inner product (the same iterates as
 * on D^-1/2 A D^-1/2, without its scalings in the SpMV):
 *   w = D^-1 A v_k - beta_{k-1} v_{k-1}
 *   alpha_k = (w, v_k)_D ;  w -= alpha_k v_k ;  beta_k = ||w||_D
 *   v_{k+1} = w / beta_k
 * Two parallel passes per step: the SpMV fused with the first update and
 * alpha's partial sums, then the second update with beta's. v_{k+1} is not
 * formed: the arrays rotate and each carries a scale (v = scale * array),
 * applied where it is read. The start vector is a hash of the row index
 * (the same on every run and thread count); sums are per fixed block, added
 * in order. The largest eigenvalue of the tridiagonal T_k comes from Sturm
 * bisection. A Ritz value is a lower bound of lambda_max, which is why the
 * smoother's interval stretches it by cheb_upper (1.1), as PETSc's
 * Chebyshev does with its CG estimate.
 */
#include "amg_priv.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    const csr_matrix *A;
    const double *d;
    double *dinv;
    const double *v, *vp; /* v_k and v_{k-1} (arrays; scaled by sv, svp) */
    double *zero;         /* v_{-1} = 0, written by the start pass */
    double *w;
    double sv, svp, beta, alpha;
    double *part; /* per block */
    int pass;
} lz_ctx;

static void lz_chunk(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    lz_ctx *c = arg;
    const csr_matrix *A = c->A;
    double s = 0.0;
    if (c->pass == 0) { /* start: v_i = hash(i) in (0.5, 1.5) */
        double *v = c->w;
        for (int64_t i = b; i < e; i++) {
            c->dinv[i] = 1.0 / c->d[i];
            c->zero[i] = 0.0;
            uint64_t z = (uint64_t)i + 0x9e3779b97f4a7c15ULL; /* splitmix64 */
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            z ^= z >> 31;
            v[i] = 0.5 + (double)(z >> 11) * (1.0 / 9007199254740992.0);
            s += c->d[i] * v[i] * v[i];
        }
    } else if (c->pass == 1) { /* w = D^-1 A v - beta v_prev ; (w, v)_D */
        for (int64_t i = b; i < e; i++) {
            double y = 0.0;
            for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
                y += A->val[k] * c->v[A->col[k]];
            double wi = c->sv * c->dinv[i] * y - c->beta * c->svp * c->vp[i];
            c->w[i] = wi;
            s += c->d[i] * wi * c->sv * c->v[i];
        }
    } else { /* w -= alpha v ; (w, w)_D */
        for (int64_t i = b; i < e; i++) {
            double wi = c->w[i] - c->alpha * c->sv * c->v[i];
            c->w[i] = wi;
            s += c->d[i] * wi * wi;
        }
    }
    c->part[chunk] = s;
}

static double lz_pass(lz_ctx *c, int pass, int64_t n)
{
    c->pass = pass;
    amg_par_chunks(n, AMG_BLOCK, lz_chunk, c);
    double s = 0.0;
    for (int64_t k = 0; k < amg_nchunks(n, AMG_BLOCK); k++)
        s += c->part[k];
    return s;
}

/* Largest eigenvalue of the symmetric tridiagonal (a[0..k), b[0..k-1)) by
 * bisection on the Sturm count (the number of eigenvalues below x). */
double amg_tridiag_max_eig(const double *a, const double *b, int k)
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
    int64_t nb = amg_nchunks(n, AMG_BLOCK);
    double *buf = malloc((size_t)n * 4 * sizeof *buf);
    double *part = malloc((size_t)nb * sizeof *part);
    if (!buf || !part) {
        free(buf);
        free(part);
        return cls_fail(err, CLS_EOTHER, "amg: out of memory for the eigenvalue estimate");
    }
    double *dinv = buf, *arr[3] = {buf + n, buf + 2 * n, buf + 3 * n};
    lz_ctx c = {.A = A, .d = diag, .dinv = dinv, .part = part};
    int iv = 0, ivp = 1, iw = 2;
    c.w = arr[iv];
    c.zero = arr[ivp];
    double nv = sqrt(lz_pass(&c, 0, n));
    /* v = arr[0] / nv ; v_prev = 0 */
    c.sv = 1.0 / nv;
    c.svp = 0.0;
    double al[64], be[64];
    int k = 0;
    while (k < steps) {
        c.v = arr[iv];
        c.vp = arr[ivp];
        c.w = arr[iw];
        c.alpha = al[k] = lz_pass(&c, 1, n);
        be[k] = sqrt(fmax(lz_pass(&c, 2, n), 0.0));
        k++;
        if (!(be[k - 1] > 1e-12 * fabs(al[k - 1])))
            break; /* an invariant subspace: T_k's eigenvalues are exact */
        /* rotate: v_prev = v, v = w / beta, the old v_prev's array is free */
        int t = ivp;
        ivp = iv;
        iv = iw;
        iw = t;
        c.svp = c.sv;
        c.sv = 1.0 / be[k - 1];
        c.beta = be[k - 1];
    }
    free(buf);
    free(part);
    *lmax = amg_tridiag_max_eig(al, be, k);
    if (!(*lmax > 0.0) || !isfinite(*lmax))
        return cls_fail(err, CLS_EBREAKDOWN,
                        "amg: the estimate of lambda_max(D^-1 A) is %g: the matrix is not "
                        "positive definite",
                        *lmax);
    return CLS_OK;
}
