/*
 * ref_cg.h: the textbook CG (Hestenes-Stiefel, Saad's Algorithm 9.1) in
 * double on the host, from x = 0, Jacobi when d (the inverted diagonal) is
 * given: the reference twin the device loops' tests compare with.
 */
#ifndef CLS_TESTS_REF_CG_H
#define CLS_TESTS_REF_CG_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "matrices/csr.h"

/* Returns the iterations run until r'r <= tol^2 b'b or maxiter; x gets x_k. */
static inline int64_t ref_cg(const csr_matrix *A, const double *b, const double *d, double tol,
                             int64_t maxiter, double *x)
{
    const int64_t n = A->nrows;
    double *r = malloc(n * sizeof *r), *p = malloc(n * sizeof *p), *q = malloc(n * sizeof *q);
    double bb = 0, rz = 0, rr = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = 0;
        r[i] = b[i];
        p[i] = d ? d[i] * r[i] : r[i];
        bb += b[i] * b[i];
        rz += r[i] * p[i];
    }
    rr = bb;
    int64_t k = 0;
    while (k < maxiter && rr > tol * tol * bb) {
        csr_spmv_ref(A, p, q);
        double pq = 0;
        for (int64_t i = 0; i < n; i++)
            pq += p[i] * q[i];
        const double alpha = rz / pq;
        double rz1 = 0;
        rr = 0;
        for (int64_t i = 0; i < n; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
            rz1 += r[i] * (d ? d[i] * r[i] : r[i]);
            rr += r[i] * r[i];
        }
        const double beta = rz1 / rz;
        rz = rz1;
        for (int64_t i = 0; i < n; i++)
            p[i] = (d ? d[i] * r[i] : r[i]) + beta * p[i];
        k++;
    }
    free(r);
    free(p);
    free(q);
    return k;
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
