/*
 * spmv_adaptive.cl: CSR-Adaptive (Greathouse and Daga, "Efficient Sparse
 * Matrix-Vector Multiplication on GPUs using the CSR Storage Format", SC14)
 * for matrices whose row lengths vary.
 *
 * The host (la.c, adaptive_blocks) cuts the rows into blocks: consecutive
 * rows whose entries together fit in `lds_size` values, or one row alone
 * when it does not fit. A work-group takes a block (grid-stride over
 * blocks):
 *   CSR-Stream (several rows): the group streams the block's val[j]*x[col[j]]
 *     into local memory with fully coalesced loads whatever the row lengths,
 *     then each work-item sums one row out of local memory;
 *   CSR-Vector (one long row): the whole group strides over the row and
 *     reduces in local memory, so one huge row costs one group, not one
 *     work-item.
 * Empty rows cost nothing but their y write. The branch is uniform over the
 * group (it depends only on the block), so barriers are reached by all.
 * lds: lds_size reals, lds_size >= local size (the host ensures it).
 */

__kernel void spmv_adaptive(const int nblocks, __global const int *restrict blocks,
                            __global const int *restrict rowptr,
                            __global const int *restrict col,
                            __global const mat_t *restrict val,
                            __global const real *restrict x, __global real *restrict y,
                            __local real *lds, const int lds_size, __global acc_t *partial,
                            __global const real *w, __global const int *ctl,
                            __local acc_t *red, const int yoff)
{
    const int run = !(ctl && ctl[0]); /* no early return: see real.cl */
    const int lid = (int)get_local_id(0);
    const int ls = (int)get_local_size(0);
    CLS_DOTS_DECL;
    for (int b = (int)get_group_id(0); run && b < nblocks; b += (int)get_num_groups(0)) {
        const int r0 = blocks[b], r1 = blocks[b + 1];
        const int j0 = rowptr[r0], j1 = rowptr[r1];
        if (r1 - r0 > 1 || j1 - j0 <= lds_size) {
            /* CSR-Stream */
            for (int j = j0 + lid; j < j1; j += ls)
                lds[j - j0] = (real)val[j] * x[col[j]];
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int row = r0 + lid; row < r1; row += ls) {
                const int e = rowptr[row + 1] - j0;
                real sum = 0;
                for (int j = rowptr[row] - j0; j < e; j++)
                    sum += lds[j];
                y[yoff + row] = sum;
                if (partial)
                    CLS_ROW_DOTS(x[yoff + row], sum, w, yoff + row);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        } else {
            /* CSR-Vector over the whole group: one long row */
            real sum = 0;
            for (int j = j0 + lid; j < j1; j += ls)
                sum += (real)val[j] * x[col[j]];
            lds[lid] = sum;
            for (int off = cls_pow2_floor(ls); off > 0; off >>= 1) {
                barrier(CLK_LOCAL_MEM_FENCE);
                if (lid < off && lid + off < ls)
                    lds[lid] += lds[lid + off];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid == 0) {
                const real yr = lds[0];
                y[yoff + r0] = yr;
                if (partial)
                    CLS_ROW_DOTS(x[yoff + r0], yr, w, yoff + r0);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    CLS_SPMV_DOTS(partial, red);
}
