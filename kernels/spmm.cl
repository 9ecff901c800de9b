/*
 * spmm.cl: Y = A X for up to 8 vectors at once (several right-hand sides
 * iterating together, solver/krylov/dbcg.c): each stored entry of A (value and
 * column) is read once for all k columns, so the matrix's traffic, which
 * dominates an SpMV, is paid once per iteration instead of k times. The
 * vectors are separate buffers x0..x7, y0..y7 (the first k used; k is
 * uniform over the launch, so the guards below do not diverge). A row is
 * summed in stored order, as the single-vector kernels do.
 *
 *   spmm_csr    CSR, one work-item per row (the CSR-family formats: scalar,
 *               vector and adaptive all keep the CSR arrays)
 *   spmm_sell   SELL-C-sigma (spmv_sell.cl's layout), one work-item per row
 * yoff: the vector index of the block's row 0 (a part's boundary rows).
 */

#define SPMM_ARGS                                                                        \
    __global const real *x0, __global const real *x1, __global const real *x2,          \
        __global const real *x3, __global const real *x4, __global const real *x5,      \
        __global const real *x6, __global const real *x7, __global real *y0,            \
        __global real *y1, __global real *y2, __global real *y3, __global real *y4,     \
        __global real *y5, __global real *y6, __global real *y7

/* s_c += v x_c[c] for the k columns in use */
#define SPMM_ACC(v, cc)                                                                  \
    do {                                                                                 \
        s0 += (v) * x0[cc];                                                              \
        if (k > 1)                                                                       \
            s1 += (v) * x1[cc];                                                          \
        if (k > 2)                                                                       \
            s2 += (v) * x2[cc];                                                          \
        if (k > 3)                                                                       \
            s3 += (v) * x3[cc];                                                          \
        if (k > 4)                                                                       \
            s4 += (v) * x4[cc];                                                          \
        if (k > 5)                                                                       \
            s5 += (v) * x5[cc];                                                          \
        if (k > 6)                                                                       \
            s6 += (v) * x6[cc];                                                          \
        if (k > 7)                                                                       \
            s7 += (v) * x7[cc];                                                          \
    } while (0)

#define SPMM_STORE(o)                                                                    \
    do {                                                                                 \
        y0[o] = s0;                                                                      \
        if (k > 1)                                                                       \
            y1[o] = s1;                                                                  \
        if (k > 2)                                                                       \
            y2[o] = s2;                                                                  \
        if (k > 3)                                                                       \
            y3[o] = s3;                                                                  \
        if (k > 4)                                                                       \
            y4[o] = s4;                                                                  \
        if (k > 5)                                                                       \
            y5[o] = s5;                                                                  \
        if (k > 6)                                                                       \
            y6[o] = s6;                                                                  \
        if (k > 7)                                                                       \
            y7[o] = s7;                                                                  \
    } while (0)

__kernel void spmm_csr(const int nrows, const int k, __global const int *restrict rowptr,
                       __global const int *restrict col, __global const mat_t *restrict val,
                       const int yoff, SPMM_ARGS)
{
    for (int row = (int)get_global_id(0); row < nrows; row += (int)get_global_size(0)) {
        real s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
        const int end = rowptr[row + 1];
        for (int j = rowptr[row]; j < end; j++) {
            const real v = (real)val[j];
            const int cc = col[j];
            SPMM_ACC(v, cc);
        }
        SPMM_STORE(yoff + row);
    }
}

__kernel void spmm_sell(const int nrows, const int k, const int C, __global const int *restrict cs,
                        __global const int *restrict perm, __global const int *restrict col,
                        __global const mat_t *restrict val, const int yoff, SPMM_ARGS)
{
    for (int r = (int)get_global_id(0); r < nrows; r += (int)get_global_size(0)) {
        const int c = r / C;
        const int i = r - c * C;
        const int start = cs[c];
        const int width = (cs[c + 1] - start) / C;
        real s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
        for (int j = 0, e = start + i; j < width; j++, e += C) {
            const real v = (real)val[e];
            const int cc = col[e];
            SPMM_ACC(v, cc);
        }
        SPMM_STORE(yoff + (perm ? perm[r] : r));
    }
}

/* the pairs u'w, w'w of one column after the SpMM, laid out as an SpMV
 * epilogue's (cls_write_pairs2), so cgf_fold takes them as it takes those */
__kernel void spmm_wdots(const int n, __global const real *restrict u,
                         __global const real *restrict w, __global acc_t *restrict partial,
                         __local acc_t *scratch)
{
    acc_t uw = 0, uwl = 0, ww = 0, wwl = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        const acc_t wi = (acc_t)w[i];
        cls_acc2_dot(&uw, &uwl, (acc_t)u[i], wi);
        cls_acc2_dot(&ww, &wwl, wi, wi);
    }
    cls_write_pairs2(partial, scratch, uw, uwl, ww, wwl);
}
