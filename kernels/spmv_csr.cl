/*
 * spmv_csr.cl: y = A x for CSR with 32-bit row pointers and columns.
 *
 * spmv_csr_scalar: one work-item per row (grid-stride over rows). Good for
 *   short, regular rows (stencils): neighbouring work-items write
 *   neighbouring y, but their loads of val/col are strided by the row length.
 * spmv_csr_vector: vw work-items per row (vw a power of two, 2..64, dividing
 *   the local size), local_size / vw rows per work-group, grid-stride over
 *   blocks of rows. The vw lanes of a row read val/col contiguously
 *   (coalesced), then reduce in local memory with log2(vw) barriers. Good
 *   when rows are long enough to keep the lanes busy.
 * vw is a runtime argument so the profiler can sweep it without rebuilding.
 * Accumulation is in `real`.
 */

__kernel void spmv_csr_scalar(const int nrows, __global const int *restrict rowptr,
                              __global const int *restrict col,
                              __global const real *restrict val,
                              __global const real *restrict x, __global real *restrict y)
{
    for (int row = (int)get_global_id(0); row < nrows; row += (int)get_global_size(0)) {
        const int end = rowptr[row + 1];
        real sum = 0;
        for (int j = rowptr[row]; j < end; j++)
            sum += val[j] * x[col[j]];
        y[row] = sum;
    }
}

/* scratch: local_size reals */
__kernel void spmv_csr_vector(const int nrows, const int vw,
                              __global const int *restrict rowptr,
                              __global const int *restrict col,
                              __global const real *restrict val,
                              __global const real *restrict x, __global real *restrict y,
                              __local real *scratch)
{
    const int lid = (int)get_local_id(0);
    const int lane = lid & (vw - 1);
    const int rows_per_group = (int)get_local_size(0) / vw;
    const int stride = (int)get_num_groups(0) * rows_per_group;
    /* the loop bound is uniform over the group, so every work-item reaches
     * every barrier */
    for (int base = (int)get_group_id(0) * rows_per_group; base < nrows; base += stride) {
        const int row = base + lid / vw;
        real sum = 0;
        if (row < nrows) {
            const int end = rowptr[row + 1];
            for (int j = rowptr[row] + lane; j < end; j += vw)
                sum += val[j] * x[col[j]];
        }
        scratch[lid] = sum;
        for (int off = vw / 2; off > 0; off >>= 1) {
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lane < off)
                scratch[lid] += scratch[lid + off];
        }
        if (lane == 0 && row < nrows)
            y[row] = scratch[lid];
        barrier(CLK_LOCAL_MEM_FENCE); /* scratch is reused by the next block */
    }
}
