/*
 * cpu_pc.c: the preconditioners' passes of the native CPU loops
 * (cpu_ops.h), the twins of pc.cl's kernels with the same operations per
 * entry: Chebyshev's steps (the SpMV fused into the step: one pass reads
 * the matrix and the vectors once, where the kernels' path runs an SpMV
 * launch and a step launch) and IC(0)'s triangular solves, by Jacobi
 * sweeps (a pass over a row range, as ic0_sweep) or exactly.
 *
 * The exact solve runs serially in row order. A triangular solve is a
 * chain: the device needs level scheduling (ic0_level, one launch per
 * level) to find parallel work in it, and pays a launch per level; a core
 * walks the rows in order at memory speed with nothing to wait for, which
 * on the 2-core machine is what PETSc's ICC does too (MatSolve_SeqSBAIJ).
 */
#include "cpu_ops.h"

void cpu_cheb_first(double c0, const double *restrict dinv, const double *restrict r,
                    double *restrict d, double *restrict z, double *restrict res, int64_t lo,
                    int64_t hi)
{
    for (int64_t i = lo; i < hi; i++) {
        const double di = c0 * dinv[i] * r[i];
        d[i] = di;
        z[i] = di;
        res[i] = r[i];
    }
}

void cpu_cheb_step(const cpu_csr *A, double c1, double c2, const double *restrict dinv,
                   const double *restrict din, double *restrict dout, double *restrict res,
                   double *restrict z, int64_t lo, int64_t hi)
{
    const int32_t *restrict rp = A->rp, *restrict col = A->col;
    const double *restrict val = A->val;
    for (int64_t i = lo; i < hi; i++) {
        double q = 0;
        for (int32_t j = rp[i]; j < rp[i + 1]; j++)
            q += val[j] * din[col[j]];
        const double ri = res[i] - q;
        const double di = c1 * din[i] + c2 * dinv[i] * ri;
        res[i] = ri;
        dout[i] = di;
        z[i] += di;
    }
}

void cpu_tri_sweep(const cpu_csr *N, const double *restrict dl, const double *restrict b,
                   const double *restrict yin, double *restrict yout, int64_t lo, int64_t hi)
{
    const int32_t *restrict rp = N->rp, *restrict col = N->col;
    const double *restrict val = N->val;
    for (int64_t i = lo; i < hi; i++) {
        double s = b[i];
        if (yin)
            for (int32_t j = rp[i]; j < rp[i + 1]; j++)
                s -= val[j] * yin[col[j]];
        else
            for (int32_t j = rp[i]; j < rp[i + 1]; j++) {
                const int32_t c = col[j];
                s -= val[j] * (dl[c] * b[c]);
            }
        yout[i] = dl[i] * s;
    }
}

void cpu_tri_solve(const cpu_csr *N, const double *restrict dl, const double *restrict b,
                   double *restrict y, int lower)
{
    const int32_t *restrict rp = N->rp, *restrict col = N->col;
    const double *restrict val = N->val;
    const int64_t n = N->n;
    for (int64_t k = 0; k < n; k++) {
        const int64_t i = lower ? k : n - 1 - k;
        double s = b[i];
        for (int32_t j = rp[i]; j < rp[i + 1]; j++)
            s -= val[j] * y[col[j]];
        y[i] = dl[i] * s;
    }
}
