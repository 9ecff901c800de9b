/*
 * dcg.cl: the device half of the distributed CG's reductions. Each kernel
 * leaves up to three compensated partial sums per work-group (below),
 * dreduce folds them into result[0..2 ncomp), and the host reads those back
 * without blocking and adds them across the rank's devices and then across
 * ranks with MPI (la_dist.c, solver/dist/dvec.c). Same two-stage scheme as dot.cl,
 * kept separate so the distributed solvers can start a reduction on every
 * device before waiting on any.
 */

/* Every sum here is compensated, as if accumulated in twice the precision
 * of acc_t, then rounded once (real.cl, Ogita-Rump-Oishi Sum2 and Dot2). The rounded result is then the correctly
 * rounded dot product except for pathologically cancelling sums, so it does
 * not depend on the order of summation, that is on how the rows are split
 * into parts: a solve on K parts takes the same steps as on one. Contraction
 * would break the error-free transformations, hence FP_CONTRACT OFF.
 * Partial sums are pairs: partial[(2c) * ngroups + g] = hi and
 * partial[(2c + 1) * ngroups + g] = lo of sum c. */
#pragma OPENCL FP_CONTRACT OFF

/* cls_acc2_add and cls_acc2_dot: real.cl */

/* Tree reduction of three interleaved pairs s[6 i + 2 c], s[6 i + 2 c + 1]. */
inline void cls_group_reduce3(__local acc_t *s)
{
    const int lid = (int)get_local_id(0);
    for (int off = (int)get_local_size(0) / 2; off > 0; off >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < off)
            for (int c = 0; c < 3; c++) {
                acc_t hi = s[6 * lid + 2 * c], lo = s[6 * lid + 2 * c + 1];
                cls_acc2_add(&hi, &lo, s[6 * (lid + off) + 2 * c]);
                s[6 * lid + 2 * c] = hi;
                s[6 * lid + 2 * c + 1] = lo + s[6 * (lid + off) + 2 * c + 1];
            }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* the group's three pairs into partial[] (scratch: 6 acc_t per work-item) */
inline void cls_store3(__local acc_t *scratch, const acc_t *hi, const acc_t *lo,
                       __global acc_t *restrict partial)
{
    const int lid = (int)get_local_id(0);
    for (int c = 0; c < 3; c++) {
        scratch[6 * lid + 2 * c] = hi[c];
        scratch[6 * lid + 2 * c + 1] = lo[c];
    }
    cls_group_reduce3(scratch);
    if (lid == 0) {
        const int g = (int)get_group_id(0), ng = (int)get_num_groups(0);
        for (int c = 0; c < 6; c++)
            partial[c * ng + g] = scratch[c];
    }
}

/* up to three dots: c-th sum = x_c' y_c for c < ndots (unused pairs may
 * repeat a used one; they are not read) */
__kernel void dots_partial(const int n, const int ndots, __global const real *restrict x0,
                           __global const real *restrict y0, __global const real *restrict x1,
                           __global const real *restrict y1, __global const real *restrict x2,
                           __global const real *restrict y2, __global acc_t *restrict partial,
                           __local acc_t *scratch)
{
    acc_t hi[3] = {0, 0, 0}, lo[3] = {0, 0, 0};
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        cls_acc2_dot(&hi[0], &lo[0], (acc_t)x0[i], (acc_t)y0[i]);
        if (ndots > 1)
            cls_acc2_dot(&hi[1], &lo[1], (acc_t)x1[i], (acc_t)y1[i]);
        if (ndots > 2)
            cls_acc2_dot(&hi[2], &lo[2], (acc_t)x2[i], (acc_t)y2[i]);
    }
    cls_store3(scratch, hi, lo, partial);
}

/* result[2c], result[2c + 1] = the pair sum_g of partial pair c, c < ncomp;
 * one work-group */
__kernel void dreduce(const int ngroups, const int ncomp, __global const acc_t *restrict partial,
                      __global acc_t *restrict result, __local acc_t *scratch)
{
    const int lid = (int)get_local_id(0);
    acc_t hi[3] = {0, 0, 0}, lo[3] = {0, 0, 0};
    for (int g = lid; g < ngroups; g += (int)get_local_size(0))
        for (int c = 0; c < ncomp; c++) {
            cls_acc2_add(&hi[c], &lo[c], partial[2 * c * ngroups + g]);
            lo[c] += partial[(2 * c + 1) * ngroups + g];
        }
    for (int c = 0; c < 3; c++) {
        scratch[6 * lid + 2 * c] = hi[c];
        scratch[6 * lid + 2 * c + 1] = lo[c];
    }
    cls_group_reduce3(scratch);
    if (lid == 0)
        for (int c = 0; c < 2 * ncomp; c++)
            result[c] = scratch[c];
}

