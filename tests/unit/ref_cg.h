/*
 * ref_cg.h: the textbook (preconditioned) CG (Hestenes-Stiefel, Saad's
 * Algorithm 9.1) in double on the host, from x = 0, with a general M
 * (ref_pcg) or Jacobi (ref_cg, d the inverted diagonal): the reference twin
 * the device and native loops' tests compare with.
 */
#ifndef CLS_TESTS_REF_CG_H
#define CLS_TESTS_REF_CG_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "matrices/csr.h"

/* The textbook preconditioned CG (Saad, Algorithm 9.1) with a general M:
 * apply(ctx, r, z) computes z = M^-1 r. From x = 0 until r'r <= tol^2 b'b
 * or maxiter; returns the iterations, x gets x_k. */
typedef void (*ref_apply_fn)(void *ctx, const double *r, double *z);
static inline int64_t ref_pcg(const csr_matrix *A, const double *b, ref_apply_fn apply, void *ctx,
                              double tol, int64_t maxiter, double *x)
{
    const int64_t n = A->nrows;
    double *r = malloc(n * sizeof *r), *z = malloc(n * sizeof *z), *p = malloc(n * sizeof *p),
           *q = malloc(n * sizeof *q);
    double bb = 0, rz = 0, rr;
    for (int64_t i = 0; i < n; i++) {
        x[i] = 0;
        r[i] = b[i];
        bb += b[i] * b[i];
    }
    apply(ctx, r, z);
    for (int64_t i = 0; i < n; i++) {
        p[i] = z[i];
        rz += r[i] * z[i];
    }
    rr = bb;
    int64_t k = 0;
    while (k < maxiter && rr > tol * tol * bb) {
        csr_spmv_ref(A, p, q);
        double pq = 0;
        for (int64_t i = 0; i < n; i++)
            pq += p[i] * q[i];
        const double alpha = rz / pq;
        rr = 0;
        for (int64_t i = 0; i < n; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
            rr += r[i] * r[i];
        }
        apply(ctx, r, z);
        double rz1 = 0;
        for (int64_t i = 0; i < n; i++)
            rz1 += r[i] * z[i];
        const double beta = rz1 / rz;
        rz = rz1;
        for (int64_t i = 0; i < n; i++)
            p[i] = z[i] + beta * p[i];
        k++;
    }
    free(r);
    free(z);
    free(p);
    free(q);
    return k;
}

/* z = D^-1 r (d the inverted diagonal), or z = r when d is NULL */
static inline void ref_jacobi_apply(void *ctx, const double *r, double *z)
{
    const double *d = ((const double *const *)ctx)[0];
    const int64_t n = (int64_t)(intptr_t)((void *const *)ctx)[1];
    for (int64_t i = 0; i < n; i++)
        z[i] = d ? d[i] * r[i] : r[i];
}

/* The textbook CG, Jacobi when d is given: ref_pcg with M = D (the same
 * operations in the same order as the loop written out). Returns the
 * iterations run until r'r <= tol^2 b'b or maxiter; x gets x_k. */
static inline int64_t ref_cg(const csr_matrix *A, const double *b, const double *d, double tol,
                             int64_t maxiter, double *x)
{
    void *ctx[2] = {(void *)d, (void *)(intptr_t)A->nrows};
    return ref_pcg(A, b, ref_jacobi_apply, ctx, tol, maxiter, x);
}

/* ||a - b|| / ||b|| (||a - b|| when b = 0) */
static inline double ref_rel_diff(const double *a, const double *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

#endif
