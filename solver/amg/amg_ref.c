/*
 * amg_ref.c: the plain V-cycle on the host in double, the reference twin of
 * the device V-cycle (amg_device.c) that the tests compare it against, step
 * for step the same algorithm in serial loops.
 *
 * V-cycle on level l for A_l x = b, from x = 0 (Briggs, Henson, McCormick,
 * A Multigrid Tutorial, 2nd ed., chapter 3):
 *   coarsest:  x = A_l^-1 b (dense inverse), or the pre-smoother alone
 *   otherwise: x = S(b, 0), r = b - A_l x          pre-smoothing
 *              x += P_l V_{l+1}(R_l r)              coarse correction
 *              x = S(b, x)                          post-smoothing
 * S is the same polynomial in D^-1 A before and after, so the error
 * propagation E = S' (I - P A_c^-1 R A) S is A-self-adjoint and M (the
 * V-cycle as an operator on b) is symmetric; with S convergent in the
 * A-norm, M is positive definite and preconditioned CG stays valid.
 *
 * Chebyshev smoothing, x += p(D^-1 A) D^-1 (b - A x) with degree m (Saad,
 * Iterative Methods for Sparse Linear Systems, 2nd ed., Algorithm 12.1):
 *   r = b - A x ; d = c0 D^-1 r ; x += d
 *   for k = 1 .. m-1:  r -= A d ; d = c1_k d + c2_k D^-1 r ; x += d
 * (pre-smoothing from x = 0 skips the first A x and keeps r up to date,
 * r -= A d, for the residual the restriction needs).
 * l1-Jacobi: m sweeps of x += D_l1^-1 (b - A x).
 */
#include "amg_priv.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    double *x, *b, *r, *d, *q;
} ref_ws;

/* x = S(b, x) (zero: x = 0 on entry); with want_r, r = b - A x after */
static void ref_smooth(const amg_hierarchy *h, int l, const double *b, double *x, ref_ws *w,
                       int zero, int want_r)
{
    const amg_level *L = &h->lev[l];
    const csr_matrix *A = &L->A;
    int64_t n = A->nrows;
    double *r = w->r, *d = w->d, *q = w->q;
    const double *di = L->dinv;
    if (h->opt.smoother == AMG_SMOOTHER_CHEBYSHEV) {
        amg_cheb c;
        amg_cheb_coeffs(&h->opt, L->lmax, &c);
        if (!zero)
            csr_spmv_ref(A, x, q);
        for (int64_t i = 0; i < n; i++) {
            r[i] = b[i] - (zero ? 0.0 : q[i]);
            d[i] = c.c0 * di[i] * r[i];
            x[i] = (zero ? 0.0 : x[i]) + d[i];
        }
        for (int k = 1; k < c.degree; k++) {
            csr_spmv_ref(A, d, q);
            for (int64_t i = 0; i < n; i++) {
                r[i] -= q[i];
                d[i] = c.c1[k] * d[i] + c.c2[k] * di[i] * r[i];
                x[i] += d[i];
            }
        }
        if (want_r) {
            csr_spmv_ref(A, d, q);
            for (int64_t i = 0; i < n; i++)
                r[i] -= q[i];
        }
        return;
    }
    for (int s = 0; s < h->opt.degree; s++) { /* l1-Jacobi */
        if (zero && s == 0) {
            for (int64_t i = 0; i < n; i++)
                x[i] = di[i] * b[i];
            continue;
        }
        csr_spmv_ref(A, x, q);
        for (int64_t i = 0; i < n; i++)
            x[i] += di[i] * (b[i] - q[i]);
    }
    if (want_r) {
        csr_spmv_ref(A, x, q);
        for (int64_t i = 0; i < n; i++)
            r[i] = b[i] - q[i];
    }
}

static void ref_vcycle(const amg_hierarchy *h, int l, const double *b, double *x, ref_ws *ws)
{
    const amg_level *L = &h->lev[l];
    int64_t n = L->A.nrows;
    if (l == h->nlevels - 1) {
        if (h->coarse_direct) {
            for (int64_t i = 0; i < n; i++) { /* x = A^-1 b */
                double s = 0.0;
                for (int64_t j = 0; j < n; j++)
                    s += h->coarse_inv[i * n + j] * b[j];
                x[i] = s;
            }
        } else {
            ref_smooth(h, l, b, x, &ws[l], 1, 0);
        }
        return;
    }
    ref_smooth(h, l, b, x, &ws[l], 1, 1);
    csr_spmv_ref(&L->R, ws[l].r, ws[l + 1].b); /* b_c = R r */
    ref_vcycle(h, l + 1, ws[l + 1].b, ws[l + 1].x, ws);
    csr_spmv_ref(&L->P, ws[l + 1].x, ws[l].q); /* x += P x_c */
    for (int64_t i = 0; i < n; i++)
        x[i] += ws[l].q[i];
    ref_smooth(h, l, b, x, &ws[l], 0, 0);
}

int amg_apply_ref(const amg_hierarchy *h, const double *r, double *z, cls_error *err)
{
    int64_t tot = 0;
    for (int l = 0; l < h->nlevels; l++)
        tot += 5 * h->lev[l].A.nrows;
    double *buf = malloc((size_t)(tot ? tot : 1) * sizeof *buf);
    if (!buf)
        return cls_fail(err, CLS_EOTHER, "amg: out of memory for the reference V-cycle");
    ref_ws ws[AMG_MAX_LEVELS];
    double *p = buf;
    for (int l = 0; l < h->nlevels; l++) {
        int64_t n = h->lev[l].A.nrows;
        ws[l] = (ref_ws){p, p + n, p + 2 * n, p + 3 * n, p + 4 * n};
        p += 5 * n;
    }
    ref_vcycle(h, 0, r, z, ws);
    free(buf);
    return CLS_OK;
}
