/*
 * cg_fused.cl: the CG vector update fused with the dot product that follows
 * it, so one pass reads p, q, x, r (and d) once and writes x, r (and z) once;
 * stage 1 of the reduction rides along and reduce_partials (dot.cl) finishes
 * it. Without fusion CG would read r again for r'r.
 */

/* x += alpha p ; r -= alpha q ; partial[g] = sum r'r (new r) */
__kernel void cg_update(const int n, const real alpha, __global const real *restrict p,
                        __global const real *restrict q, __global real *restrict x,
                        __global real *restrict r, __global acc_t *restrict partial,
                        __local acc_t *scratch)
{
    acc_t rr = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        x[i] += alpha * p[i];
        const real ri = r[i] - alpha * q[i];
        r[i] = ri;
        rr += (acc_t)ri * (acc_t)ri;
    }
    scratch[get_local_id(0)] = rr;
    cls_group_reduce(scratch);
    if (get_local_id(0) == 0)
        partial[get_group_id(0)] = scratch[0];
}

/* x += alpha p ; r -= alpha q ; z = d .* r ;
 * partial[g] = sum r'z, partial[ngroups + g] = sum r'r */
__kernel void pcg_update(const int n, const real alpha, __global const real *restrict p,
                         __global const real *restrict q, __global real *restrict x,
                         __global real *restrict r, __global const real *restrict d,
                         __global real *restrict z, __global acc_t *restrict partial,
                         __local acc_t *scratch)
{
    acc_t rz = 0, rr = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        x[i] += alpha * p[i];
        const real ri = r[i] - alpha * q[i];
        r[i] = ri;
        const real zi = d[i] * ri;
        z[i] = zi;
        rz += (acc_t)ri * (acc_t)zi;
        rr += (acc_t)ri * (acc_t)ri;
    }
    const int lid = (int)get_local_id(0);
    scratch[2 * lid] = rz;
    scratch[2 * lid + 1] = rr;
    cls_group_reduce2(scratch);
    if (lid == 0) {
        partial[get_group_id(0)] = scratch[0];
        partial[get_num_groups(0) + get_group_id(0)] = scratch[1];
    }
}
