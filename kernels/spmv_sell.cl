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

/* SELL's columns and values made from CSR on the device (la_format.c,
 * sell_device_build): the host copies CSR's arrays up as they are, which
 * runs at the bus's speed, instead of building this padded, permuted
 * layout in the staging buffers. Work-item r makes stored row r of its
 * chunk, every slot, padded as the host's fill (sell_fill_chunks) pads: a
 * padded slot repeats the row's last column (0 for an empty row or a
 * chunk's missing rows) and holds 0, so both give the same bytes. rp is
 * the host's row pointers (long) from the first row, entries counted from
 * base. */
__kernel void sell_from_csr(const int nrows, const int nslots, const int C,
                            __global const int *restrict cs, __global const int *restrict perm,
                            __global const long *restrict rp, const long base,
                            __global const int *restrict col, __global const mat_t *restrict val,
                            __global int *restrict scol, __global mat_t *restrict sval)
{
    for (int r = (int)get_global_id(0); r < nslots; r += (int)get_global_size(0)) {
        const int c = r / C;
        const int i = r - c * C;
        const int start = cs[c];
        const int width = (cs[c + 1] - start) / C;
        int beg = 0, len = 0;
        if (r < nrows) {
            const int row = perm ? perm[r] : r;
            beg = (int)(rp[row] - base);
            len = (int)(rp[row + 1] - rp[row]);
        }
        const int pad = len ? col[beg + len - 1] : 0;
        for (int j = 0, k = start + i; j < width; j++, k += C) {
            scol[k] = j < len ? col[beg + j] : pad;
            sval[k] = j < len ? val[beg + j] : (mat_t)0;
        }
    }
}
