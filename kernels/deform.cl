/*
 * deform.cl: u = U q and the rigid vertex update of model-reduction
 * deformers (after Wang 2015), the device half of physics/deform.c.
 *
 * Design: U is column-major with a leading dimension ld that is a multiple
 * of 4 (physics/deform.h), and each work-item owns 4 consecutive rows of u
 * (one float4). For every column j a work-group reads one contiguous run of
 * U: coalesced, each element of U read once, no cross-work-item reduction,
 * any r (0 included) handled by the same loop. The column loop is unrolled
 * by 4 with the four loads issued before the multiply-adds, so every
 * work-item has several 16-byte loads in flight: the kernel is a stream and
 * is judged against the copy bandwidth (bytes: U once, q, u written).
 * q is read by every work-item at the same address: a broadcast from cache.
 *
 * Multi-domain: the same loop, with the domain of each row group from a
 * table (one int per 4 rows) and the domain's (r, q offset, ld, first row
 * group, U offset) from small per-domain tables.
 *
 * Vertex update: one work-item per corner of the unfolded triangle list,
 * x = R (x0 + u_k) + p, n = R n0, t = R t0, R and p from a 12-float record
 * per domain (row-major R, then p).
 */

/* acc += sum_j U[j] q[j] over r columns of stride ld4 (in float4) */
inline float4 deform_dot(__global const float4 *p, const long ld4, __global const float *q,
                         const int r)
{
    float4 acc = (float4)(0.0f);
    int j = 0;
    for (; j + 4 <= r; j += 4) {
        const float4 a0 = p[0];
        const float4 a1 = p[ld4];
        const float4 a2 = p[2 * ld4];
        const float4 a3 = p[3 * ld4];
        acc = mad(a0, (float4)(q[j]), acc);
        acc = mad(a1, (float4)(q[j + 1]), acc);
        acc = mad(a2, (float4)(q[j + 2]), acc);
        acc = mad(a3, (float4)(q[j + 3]), acc);
        p += 4 * ld4;
    }
    for (; j < r; j++) {
        acc = mad(p[0], (float4)(q[j]), acc);
        p += ld4;
    }
    return acc;
}

/* Single domain: nquads = ld / 4 row groups. */
__kernel void deform_uq(const int nquads, const int r, const int ld4,
                        __global const float4 *U, __global const float *q,
                        __global float4 *u)
{
    const int i = (int)get_global_id(0);
    if (i >= nquads)
        return;
    u[i] = deform_dot(U + i, (long)ld4, q, r);
}

/* Multi-domain: info[d] = (r, first q entry, ld / 4, first row group);
 * uoff4[d] = first float4 of U_d. */
__kernel void deform_uq_multi(const int nquads, __global const int *quad_dom,
                              __global const int4 *info, __global const long *uoff4,
                              __global const float4 *U, __global const float *q,
                              __global float4 *u)
{
    const int i = (int)get_global_id(0);
    if (i >= nquads)
        return;
    const int d = quad_dom[i];
    const int4 di = info[d];
    u[i] = deform_dot(U + uoff4[d] + (i - di.w), (long)di.z, q + di.y, di.x);
}

/* corner[c] = (domain, first row of the vertex in the packed u). */
__kernel void deform_update(const int ncorners, __global const int2 *corner,
                            __global const float4 *x0, __global const float4 *n0,
                            __global const float4 *t0, __global const float *u,
                            __global const float *T, __global float4 *x,
                            __global float4 *n, __global float4 *t)
{
    const int c = (int)get_global_id(0);
    if (c >= ncorners)
        return;
    const int2 cd = corner[c];
    __global const float *tr = T + 12 * cd.x;
    const float3 r0 = (float3)(tr[0], tr[1], tr[2]);
    const float3 r1 = (float3)(tr[3], tr[4], tr[5]);
    const float3 r2 = (float3)(tr[6], tr[7], tr[8]);
    const float3 p = (float3)(tr[9], tr[10], tr[11]);
    const float3 xd = x0[c].xyz + (float3)(u[cd.y], u[cd.y + 1], u[cd.y + 2]);
    const float3 nr = n0[c].xyz, tg = t0[c].xyz;
    x[c] = (float4)(dot(r0, xd) + p.x, dot(r1, xd) + p.y, dot(r2, xd) + p.z, 1.0f);
    n[c] = (float4)(dot(r0, nr), dot(r1, nr), dot(r2, nr), 0.0f);
    t[c] = (float4)(dot(r0, tg), dot(r1, tg), dot(r2, tg), 0.0f);
}
