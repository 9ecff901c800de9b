/*
 * spmv_sell.cl: SELL-C-sigma (Kreutzer, Hager, Wellein, Fehske, Bishop,
 * "A unified sparse matrix data format for efficient general sparse
 * matrix-vector multiplication on modern processors with wide SIMD units",
 * SIAM J. Sci. Comput. 36(5), 2014) for regular rows.
 *
 * Rows are sorted by length within windows of sigma rows (perm[r] is the
 * original row of stored row r; no permutation when sigma = 1), cut into
 * chunks of C rows, and each chunk is stored column-major, padded to its
 * longest row: entry j of the chunk's row i is at cs[c] + j*C + i. One
 * work-item per row: at every step the C work-items of a chunk read C
 * consecutive values and columns (one coalesced transaction per warp when C
 * is the warp width) and no row pointer is read at all. Padding has value 0
 * and repeats a column the row already reads.
 */

__kernel void spmv_sell(const int nrows, const int C, __global const int *restrict cs,
                        __global const int *restrict perm, __global const int *restrict col,
                        __global const mat_t *restrict val, __global const real *restrict x,
                        __global real *restrict y, __global acc_t *partial,
                        __global const real *w, __global const int *ctl, __local acc_t *red,
                        const int yoff)
{
    const int run = !(ctl && ctl[0]); /* no early return: see real.cl */
    CLS_DOTS_DECL;
    for (int r = (int)get_global_id(0); run && r < nrows; r += (int)get_global_size(0)) {
        const int c = r / C;
        const int i = r - c * C;
        const int start = cs[c];
        const int width = (cs[c + 1] - start) / C;
        real sum = 0;
        for (int j = 0, k = start + i; j < width; j++, k += C)
            sum += (real)val[k] * x[col[k]];
        const int orow = yoff + (perm ? perm[r] : r);
        y[orow] = sum;
        if (partial)
            CLS_ROW_DOTS(x[orow], sum, w, orow);
    }
    CLS_SPMV_DOTS(partial, red);
}
