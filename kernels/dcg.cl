/*
 * dcg.cl: the device half of the distributed CG's reductions. Each kernel
 * leaves up to three compensated partial sums per work-group (below),
 * dreduce folds them into result[0..2 ncomp), and the host reads those back
 * without blocking and adds them across the rank's devices and then across
 * ranks with MPI (la_dist.c, solver/dvec.c). Same two-stage scheme as dot.cl,
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

/* x += alpha p ; r -= alpha q ; sum0 = r'r */
__kernel void dcg_update(const int n, const real alpha, __global const real *restrict p,
                         __global const real *restrict q, __global real *restrict x,
                         __global real *restrict r, __global acc_t *restrict partial,
                         __local acc_t *scratch)
{
    acc_t hi[3] = {0, 0, 0}, lo[3] = {0, 0, 0};
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        x[i] += alpha * p[i];
        const real ri = r[i] - alpha * q[i];
        r[i] = ri;
        cls_acc2_dot(&hi[0], &lo[0], (acc_t)ri, (acc_t)ri);   /* r'r */
    }
    cls_store3(scratch, hi, lo, partial);
}

/* x += alpha p ; r -= alpha q ; z = d .* r ; sum0 = r'z, sum1 = r'r */
__kernel void dpcg_update(const int n, const real alpha, __global const real *restrict p,
                          __global const real *restrict q, __global real *restrict x,
                          __global real *restrict r, __global const real *restrict d,
                          __global real *restrict z, __global acc_t *restrict partial,
                          __local acc_t *scratch)
{
    acc_t hi[3] = {0, 0, 0}, lo[3] = {0, 0, 0};
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        x[i] += alpha * p[i];
        const real ri = r[i] - alpha * q[i];
        r[i] = ri;
        const real zi = d[i] * ri;
        z[i] = zi;
        cls_acc2_dot(&hi[0], &lo[0], (acc_t)ri, (acc_t)zi);   /* r'z */
        cls_acc2_dot(&hi[1], &lo[1], (acc_t)ri, (acc_t)ri);   /* r'r */
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

/* The single-reduction CG (dcg.c, Chronopoulos-Gear with the identity of
 * cg.c): after q = A p, one pass gives the three sums of the iteration's
 * one MPI_Allreduce: sum0 = p'q, sum1 = q'Wq (W = D^-1 with Jacobi, else I),
 * sum2 = r'r (the current residual's norm, for the stopping test).
 * mode 1 (Jacobi): sum0 = r'Wr, the fresh r'z for alpha. */
__kernel void dcg1_dots(const int n, const int jacobi, const int mode,
                        __global const real *restrict p,
                        __global const real *restrict q, __global const real *restrict r,
                        __global const real *restrict d, __global acc_t *restrict partial,
                        __local acc_t *scratch)
{
    acc_t hi[3] = {0, 0, 0}, lo[3] = {0, 0, 0};
    for (int i = (int)get_global_id(0); i < n && mode; i += (int)get_global_size(0)) {
        const real ri = r[i];                                   /* mode 1: r'Wr alone */
        cls_acc2_dot(&hi[0], &lo[0], (acc_t)ri, (acc_t)(d[i] * ri));
    }
    for (int i = (int)get_global_id(0); i < n && !mode; i += (int)get_global_size(0)) {
        const real qi = q[i], ri = r[i];
        const real wq = jacobi ? d[i] * qi : qi;
        cls_acc2_dot(&hi[0], &lo[0], (acc_t)p[i], (acc_t)qi);  /* p'q */
        cls_acc2_dot(&hi[1], &lo[1], (acc_t)qi, (acc_t)wq);    /* q'Wq */
        cls_acc2_dot(&hi[2], &lo[2], (acc_t)ri, (acc_t)ri);    /* r'r */
    }
    cls_store3(scratch, hi, lo, partial);
}

/* x += alpha p ; r -= alpha q ; p = W r + beta p: the whole vector update in
 * one pass, no reduction (the next dcg1_dots gives r'r). */
__kernel void dcg1_update(const int n, const int jacobi, const real alpha, const real beta,
                          __global real *restrict p, __global const real *restrict q,
                          __global real *restrict x, __global real *restrict r,
                          __global const real *restrict d)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        const real pi = p[i];
        x[i] += alpha * pi;
        const real ri = r[i] - alpha * q[i];
        r[i] = ri;
        p[i] = (jacobi ? d[i] * ri : ri) + beta * pi;
    }
}
