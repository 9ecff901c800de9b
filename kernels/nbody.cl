/*
 * nbody.cl: all-pairs gravity, tiled through local memory (Nyland, Harris
 * and Prins, GPU Gems 3, ch. 31). physics/nbody.h has the model.
 *
 * A body is a float4 (x, y, z, m); a velocity a float4 (vx, vy, vz, 0).
 * Each work-item owns body i; the work-group loads TILE bodies at a time
 * into local memory (one each), and every work-item sums their pull:
 *     a_i += m_j r_ij / (|r_ij|^2 + eps^2)^(3/2),   r_ij = x_j - x_i,
 * 20 flops per interaction by the usual count. The last tile is padded
 * with massless bodies at the origin, which add exactly nothing (eps > 0),
 * and so does a body's pull on itself (r = 0). TILE, the work-group size,
 * is a build option, chosen per device by a timed sweep (physics/nbody.c).
 *
 * Then v <- (v + a dt) damping, x <- x + v dt, into the other buffer pair
 * (every work-item reads all positions, so they cannot be updated in place).
 */
#ifndef TILE
#define TILE 256
#endif

__kernel __attribute__((reqd_work_group_size(TILE, 1, 1))) void
nbody_step(__global const float4 *pos_in, __global const float4 *vel_in,
           __global float4 *pos_out, __global float4 *vel_out, __global float4 *acc_out, int n,
           float eps2, float dt, float damping, int write_acc)
{
    __local float4 tile[TILE];
    int i = get_global_id(0);
    int lid = get_local_id(0);
    float4 pi = i < n ? pos_in[i] : (float4)(0.0f);
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int base = 0; base < n; base += TILE) {
        int j = base + lid;
        tile[lid] = j < n ? pos_in[j] : (float4)(0.0f);
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll 16
        for (int k = 0; k < TILE; k++) {
            float4 pj = tile[k];
            float rx = pj.x - pi.x, ry = pj.y - pi.y, rz = pj.z - pi.z;
            float d2 = fma(rx, rx, fma(ry, ry, fma(rz, rz, eps2)));
            float inv = rsqrt(d2);
            float s = pj.w * (inv * inv * inv);
            ax = fma(rx, s, ax);
            ay = fma(ry, s, ay);
            az = fma(rz, s, az);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i < n) {
        float4 v = vel_in[i];
        float vx = (v.x + ax * dt) * damping;
        float vy = (v.y + ay * dt) * damping;
        float vz = (v.z + az * dt) * damping;
        vel_out[i] = (float4)(vx, vy, vz, 0.0f);
        pos_out[i] = (float4)(pi.x + vx * dt, pi.y + vy * dt, pi.z + vz * dt, pi.w);
        if (write_acc)
            acc_out[i] = (float4)(ax, ay, az, 0.0f);
    }
}
