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
 *   when rows are long enough to keep the lanes busy. vw is the "sub-group
 *   width" the profiler tunes (a runtime argument: no rebuild per width).
 * spmv_csr_hi: the scalar kernel with values stored as `real` whatever
 *   mat_t is: LA_MIXED keeps a double copy of A for the true residual.
 *
 * Every format kernel (this file, spmv_adaptive.cl, spmv_sell.cl,
 * spmv_bcsr.cl) takes the same tail of arguments:
 *   partial  NULL, or 4 * ngroups accumulators: the fused CG's p'Ap and
 *            (Ap)'W(Ap) per group as compensated (hi, lo) pairs
 *            (cls_spmv_dots in real.cl)
 *   w        NULL (W = I) or the Jacobi inverse diagonal
 *   ctl      NULL, or the fused CG's control word: ctl[0] != 0 means the
 *            solve has stopped and the kernel returns at once
 *   red      __local, 4 * local_size acc_t (only touched with partial)
 *   yoff     the vector index of the matrix's row 0: a part's boundary
 *            rows are a matrix of their own whose rows sit at yoff.. in y
 *            (and in x and w for the epilogue); 0 for a whole matrix
 * Accumulation is in `real`; values are read as mat_t. A row is summed in
 * stored (column) order by the scalar, SELL and BCSR kernels, so its value
 * does not depend on the part or the block it sits in.
 */

/* one row of CSR: sum of val * x over the row */
#define CLS_CSR_ROW(sum, row)                                                          \
    do {                                                                               \
        const int end_ = rowptr[(row) + 1];                                            \
        sum = 0;                                                                       \
        for (int j_ = rowptr[row]; j_ < end_; j_++)                                    \
            sum += (real)val[j_] * x[col[j_]];                                         \
    } while (0)

/* Loops are versioned (plain / with dots / with weighted dots) rather than
 * branching per row: PoCL vectorises across work-items only loops without
 * such branches (a branch per row made the fused SpMV 2.7x slower). */
__kernel void spmv_csr_scalar(const int nrows, __global const int *restrict rowptr,
                              __global const int *restrict col,
                              __global const mat_t *restrict val,
                              __global const real *restrict x, __global real *restrict y,
                              __global acc_t *partial, __global const real *w,
                              __global const int *ctl, __local acc_t *red, const int yoff)
{
    const int run = !(ctl && ctl[0]); /* no early return: see real.cl */
    const int n = run ? nrows : 0;
    CLS_DOTS_DECL;
    if (!partial) {
        CLS_EACH(row, n, 1) {
            real sum;
            CLS_CSR_ROW(sum, row);
            y[yoff + row] = sum;
        }
    } else if (!w) {
        CLS_EACH(row, n, 1) {
            real sum;
            CLS_CSR_ROW(sum, row);
            y[yoff + row] = sum;
            const acc_t ys = (acc_t)sum;
            cls_acc2_dot(&s0, &s0l, (acc_t)x[yoff + row], ys);
            cls_acc2_dot(&s1, &s1l, ys, ys);
        }
    } else {
        CLS_EACH(row, n, 1) {
            real sum;
            CLS_CSR_ROW(sum, row);
            y[yoff + row] = sum;
            const acc_t ys = (acc_t)sum;
            cls_acc2_dot(&s0, &s0l, (acc_t)x[yoff + row], ys);
            cls_acc2_dot(&s1, &s1l, ys * ys, (acc_t)w[yoff + row]);
        }
    }
    CLS_SPMV_DOTS(partial, red);
}

/* scratch: local_size reals */
__kernel void spmv_csr_vector(const int nrows, const int vw,
                              __global const int *restrict rowptr,
                              __global const int *restrict col,
                              __global const mat_t *restrict val,
                              __global const real *restrict x, __global real *restrict y,
                              __local real *scratch, __global acc_t *partial,
                              __global const real *w, __global const int *ctl,
                              __local acc_t *red, const int yoff)
{
    const int run = !(ctl && ctl[0]); /* no early return: see real.cl */
    const int lid = (int)get_local_id(0);
    const int lane = lid & (vw - 1);
    const int rows_per_group = (int)get_local_size(0) / vw;
    const int stride = (int)get_num_groups(0) * rows_per_group;
    CLS_DOTS_DECL;
    /* the loop bound is uniform over the group, so every work-item reaches
     * every barrier */
    for (int base = (int)get_group_id(0) * rows_per_group; run && base < nrows; base += stride) {
        const int row = base + lid / vw;
        real sum = 0;
        if (row < nrows) {
            const int end = rowptr[row + 1];
            for (int j = rowptr[row] + lane; j < end; j += vw)
                sum += (real)val[j] * x[col[j]];
        }
        scratch[lid] = sum;
        for (int off = vw / 2; off > 0; off >>= 1) {
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lane < off)
                scratch[lid] += scratch[lid + off];
        }
        if (lane == 0 && row < nrows) {
            const real yr = scratch[lid];
            y[yoff + row] = yr;
            if (partial)
                CLS_ROW_DOTS(x[yoff + row], yr, w, yoff + row);
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* scratch is reused by the next block */
    }
    CLS_SPMV_DOTS(partial, red);
}

/* y = A x with `real` values (LA_MIXED's exact copy of A) */
__kernel void spmv_csr_hi(const int nrows, __global const int *restrict rowptr,
                          __global const int *restrict col, __global const real *restrict val,
                          __global const real *restrict x, __global real *restrict y,
                          const int yoff)
{
    for (int row = (int)get_global_id(0); row < nrows; row += (int)get_global_size(0)) {
        const int end = rowptr[row + 1];
        real sum = 0;
        for (int j = rowptr[row]; j < end; j++)
            sum += val[j] * x[col[j]];
        y[yoff + row] = sum;
    }
}
