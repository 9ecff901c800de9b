/*
 * spmv_split.cl: y = A x over a subset of the rows of a part, so the interior
 * rows (no ghost column) can run while the halo is in flight and the
 * boundary rows after it has landed (see la_dist.h).
 *
 * The subset is either a contiguous range (first .. first + nrows: the usual
 * case for the interior of a banded or stencil matrix, with no index reads)
 * or a list rows[0..nrows). Kernels mirror spmv_csr.cl:
 *   spmv_split_scalar: one work-item per row, grid-stride.
 *   spmv_split_vector: vw work-items per row (vw a power of two dividing the
 *     local size), reduced in local memory; for long rows on GPUs.
 * Row pointers are relative to the part (start at 0), columns are local
 * (ghosts follow the local entries in x).
 */

inline int cls_split_row(const int t, const int first, const int use_list,
                         __global const int *restrict rows)
{
    return use_list ? rows[t] : first + t;
}

__kernel void spmv_split_scalar(const int nrows, const int first, const int use_list,
                                __global const int *restrict rows,
                                __global const int *restrict rowptr,
                                __global const int *restrict col,
                                __global const real *restrict val,
                                __global const real *restrict x, __global real *restrict y)
{
    for (int t = (int)get_global_id(0); t < nrows; t += (int)get_global_size(0)) {
        const int row = cls_split_row(t, first, use_list, rows);
        const int end = rowptr[row + 1];
        real sum = 0;
        for (int j = rowptr[row]; j < end; j++)
            sum += val[j] * x[col[j]];
        y[row] = sum;
    }
}

/* scratch: local_size reals */
__kernel void spmv_split_vector(const int nrows, const int first, const int use_list,
                                const int vw, __global const int *restrict rows,
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
    /* uniform loop bound: every work-item reaches every barrier */
    for (int base = (int)get_group_id(0) * rows_per_group; base < nrows; base += stride) {
        const int t = base + lid / vw;
        real sum = 0;
        int row = -1;
        if (t < nrows) {
            row = cls_split_row(t, first, use_list, rows);
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
        if (lane == 0 && t < nrows)
            y[row] = scratch[lid];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
