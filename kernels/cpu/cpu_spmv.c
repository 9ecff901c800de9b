/*
 * cpu_spmv.c: the SpMV of the native CPU CG with its dot products fused
 * (cpu_ops.h): one pass over a row range reads the matrix once and leaves
 * p'q and q'Wq, as the device SpMV's epilogue does (cg_fused.cl).
 *
 * A row is the plain CSR loop (PETSc's MatMult_SeqAIJ) with two partial
 * sums: short rows of a few entries do not pay for gathering into vector
 * registers, and several rows' chains overlap in the out-of-order window.
 * The range's dot products are kept in one accumulator each, added row by
 * row: a row costs far more than the add's latency.
 */
#include "cpu_ops.h"

/* one row's sum in two accumulators (even and odd entries): a 7-entry
 * row is a chain of 4 dependent adds instead of 7, which on the 2-core
 * machine made the pass 15-25% faster (poisson3d 64, one thread) */
static inline double cpu_row(const int32_t *restrict col, const double *restrict val,
                             const double *restrict p, int32_t j, int32_t e)
{
    double s0 = 0, s1 = 0;
    for (; j + 1 < e; j += 2) {
        s0 += val[j] * p[col[j]];
        s1 += val[j + 1] * p[col[j + 1]];
    }
    if (j < e)
        s0 += val[j] * p[col[j]];
    return s0 + s1;
}

void cpu_spmv_dots(const cpu_csr *A, const double *restrict p, double *restrict q,
                   const double *restrict d, int with_qq, int64_t lo, int64_t hi, double out[2])
{
    const int32_t *restrict rp = A->rp, *restrict col = A->col;
    const double *restrict val = A->val;
    double pq = 0, qq = 0;
    if (!with_qq) /* the classic recurrence needs p'q only: d is not read here */
        for (int64_t i = lo; i < hi; i++) {
            const double s = cpu_row(col, val, p, rp[i], rp[i + 1]);
            q[i] = s;
            pq += p[i] * s;
        }
    else if (d) /* three loops, so that none tests a flag per row */
        for (int64_t i = lo; i < hi; i++) {
            const double s = cpu_row(col, val, p, rp[i], rp[i + 1]);
            q[i] = s;
            pq += p[i] * s;
            qq += (d[i] * s) * s;
        }
    else
        for (int64_t i = lo; i < hi; i++) {
            const double s = cpu_row(col, val, p, rp[i], rp[i + 1]);
            q[i] = s;
            pq += p[i] * s;
            qq += s * s;
        }
    out[0] = pq;
    out[1] = qq;
}

void cpu_residual_start(const cpu_csr *A, const double *b, const double *x, double *r, double *p,
                        const double *d, int64_t lo, int64_t hi, double out[2])
{
    const int32_t *restrict rp = A->rp, *restrict col = A->col;
    const double *restrict val = A->val;
    double rz = 0, rr = 0;
    for (int64_t i = lo; i < hi; i++) {
        const double s = cpu_row(col, val, x, rp[i], rp[i + 1]);
        const double ri = b[i] - s, zi = d ? d[i] * ri : ri;
        r[i] = ri;
        p[i] = zi;
        rz += ri * zi;
        rr += ri * ri;
    }
    out[0] = rz;
    out[1] = rr;
}

void cpu_pcg_start(const cpu_csr *A, const double *b, const double *x, double *r, double *p,
                   double *s, int64_t lo, int64_t hi)
{
    const int32_t *restrict rp = A->rp, *restrict col = A->col;
    const double *restrict val = A->val;
    for (int64_t i = lo; i < hi; i++) {
        r[i] = b[i] - cpu_row(col, val, x, rp[i], rp[i + 1]);
        p[i] = 0;
        s[i] = 0;
    }
}

void cpu_rows_split(const int32_t *rp, int64_t n, int parts, int64_t *bound)
{
    const double total = (double)rp[n] + 2.0 * (double)n;
    bound[0] = 0;
    for (int t = 1; t < parts; t++) {
        const double target = total * t / parts;
        int64_t lo = bound[t - 1], hi = n; /* first row r with rp[r] + 2r >= target */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if ((double)rp[mid] + 2.0 * (double)mid < target)
                lo = mid + 1;
            else
                hi = mid;
        }
        bound[t] = lo;
    }
    bound[parts] = n;
}
