/*
 * dot.cl: dot products as a two-stage reduction.
 *
 * Stage 1 (dot_partial, dot2_partial, and the fused updates in cg_fused.cl):
 * each work-item accumulates a grid-stride slice in acc_t (coalesced: at
 * every step neighbouring work-items read neighbouring elements), the group
 * reduces in local memory and work-item 0 writes partial[group]. Two-sum
 * kernels write partial[group] and partial[ngroups + group].
 * Stage 2 (reduce_partials): one work-group folds the ngroups partials of
 * ncomp (1 or 2) sums into result[0..ncomp). The host then reads 1 or 2
 * acc_t values; nothing else crosses the bus.
 *
 * scratch is __local, sized by the host: local_size * 2 * sizeof(acc_t).
 */

/* partial[g] = sum over this group's slice of x[i] * y[i] */
__kernel void dot_partial(const int n, __global const real *restrict x,
                          __global const real *restrict y, __global acc_t *restrict partial,
                          __local acc_t *scratch)
{
    acc_t sum = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0))
        sum += (acc_t)x[i] * (acc_t)y[i];
    cls_group_sum_to(scratch, partial, sum);
}

/* Two dots sharing x, x read once: x'y into the first half, x'z into the
 * second (pipelined CG's r'u and w'u, PCG's r'z and r'r). */
__kernel void dot2_partial(const int n, __global const real *restrict x,
                           __global const real *restrict y, __global const real *restrict z,
                           __global acc_t *restrict partial, __local acc_t *scratch)
{
    acc_t s0 = 0, s1 = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        const acc_t xi = x[i];
        s0 += xi * (acc_t)y[i];
        s1 += xi * (acc_t)z[i];
    }
    const int lid = (int)get_local_id(0);
    scratch[2 * lid] = s0;
    scratch[2 * lid + 1] = s1;
    cls_group_reduce2(scratch);
    if (lid == 0) {
        partial[get_group_id(0)] = scratch[0];
        partial[get_num_groups(0) + get_group_id(0)] = scratch[1];
    }
}

/* Stage 2: one work-group. result[c] = sum_g partial[c * ngroups + g]. */
__kernel void reduce_partials(const int ngroups, const int ncomp,
                              __global const acc_t *restrict partial,
                              __global acc_t *restrict result, __local acc_t *scratch)
{
    const int lid = (int)get_local_id(0);
    const int ls = (int)get_local_size(0);
    acc_t s0 = 0, s1 = 0;
    for (int g = lid; g < ngroups; g += ls) {
        s0 += partial[g];
        if (ncomp > 1)
            s1 += partial[ngroups + g];
    }
    scratch[2 * lid] = s0;
    scratch[2 * lid + 1] = s1;
    cls_group_reduce2(scratch);
    if (lid == 0) {
        result[0] = scratch[0];
        if (ncomp > 1)
            result[1] = scratch[1];
    }
}
