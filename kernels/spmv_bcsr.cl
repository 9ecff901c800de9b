/*
 * spmv_bcsr.cl: block CSR with dense k x k blocks (k = 2..8; 3 for 3D
 * elasticity, one block per node pair). The host detects k (la.c,
 * bcsr_detect) and stores, per block row, the block columns and the k*k
 * values of each block row-major. One column index serves k*k values, so
 * the index stream shrinks by k^2 and x is read in runs of k.
 * One work-item per scalar row: row i of block row br walks the blocks of
 * br and reads k consecutive values of each.
 */

__kernel void spmv_bcsr(const int nrows, const int k, __global const int *restrict browptr,
                        __global const int *restrict bcol, __global const mat_t *restrict val,
                        __global const real *restrict x, __global real *restrict y,
                        __global acc_t *partial, __global const real *w,
                        __global const int *ctl, __local acc_t *red, const int yoff)
{
    const int run = !(ctl && ctl[0]); /* no early return: see real.cl */
    CLS_DOTS_DECL;
    const int kk = k * k;
    for (int row = (int)get_global_id(0); run && row < nrows; row += (int)get_global_size(0)) {
        const int br = row / k;
        const int i = row - br * k;
        const int end = browptr[br + 1];
        real sum = 0;
        for (int b = browptr[br]; b < end; b++) {
            const int base = b * kk + i * k;
            const int c0 = bcol[b] * k;
            for (int t = 0; t < k; t++)
                sum += (real)val[base + t] * x[c0 + t];
        }
        y[yoff + row] = sum;
        if (partial)
            CLS_ROW_DOTS(x[yoff + row], sum, w, yoff + row);
    }
    CLS_SPMV_DOTS(partial, red);
}
