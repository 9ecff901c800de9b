/*
 * nbody.cl: all-pairs gravity, tiled through local memory (Nyland, Harris
 * and Prins, GPU Gems 3, ch. 31). physics/nbody.h has the model.
 *
 * A body is a float4 (x, y, z, m); a velocity a float4 (vx, vy, vz, 0).
 * Each work-item owns body i; the work-group loads TILE bodies at a time
 * into local memory (one each), and every work-item sums their pull:
 *     a_i += m_j r_ij / (|r_ij|^2 + eps2)^(3/2),   r_ij = x_j - x_i,
 * 20 flops per interaction by the usual count. eps2 is what is added to
 * |r|^2 (eps^2 for a Plummer softening length eps; the thesis's epsilon
 * itself in Camillo's eq. 4.2). The last tile is padded with massless
 * bodies at the origin, which add exactly nothing (eps2 > 0), and so does
 * a body's pull on itself (r = 0). TILE, the work-group size, is a build
 * option, chosen per device by a timed sweep (physics/nbody_gpu.c).
 *
 * Then one update, into the other buffer pair (every work-item reads all
 * positions, so they cannot be updated in place):
 *     v' = (v + a kick) damping,   x' = x + v' drift.
 * kick = drift = dt is the thesis's semi-implicit Euler; leapfrog
 * (kick-drift-kick) is kick = dt/2 then dt, dt, ..., drift = dt, and a
 * closing kick dt/2 with drift 0 where velocities must be synchronous.
 * A non-finite new state records `step` in *bad (the smallest wins), so
 * the host learns the first step that went wrong without reading the
 * state back every step.
 *
 * The energy of the state a launch reads, in the same pass (eslot >= 0):
 * the potential phi_i = -sum_{j != i} m_j / sqrt(|r_ij|^2 + eps2) comes
 * from the rsqrt the force already takes (one fma more per interaction),
 * each tile's sum added into a compensated (Kahan) total, since a float
 * sum of n terms loses about n eps and the drift it must show is 1e-5 or
 * less; a body's own term (r = 0: m_i / sqrt(eps2), the very value the
 * loop added) is taken out of its own tile's sum. The velocity in step
 * with the positions is v + a sync (sync = dt/2 for leapfrog's merged
 * kicks, whose v is half a step behind; 0 where v is in step already).
 * Each work-group reduces (1/2 m v^2, 1/2 m phi) over its bodies in local
 * memory and writes the pair to epart[eslot * groups + group]; the host
 * adds the groups in double (physics/nbody_gpu.c). So the drift is
 * measured at every step for one fma per interaction and a reduction
 * per launch, instead of a second O(n^2) pass.
 */
#ifndef TILE
#define TILE 256
#endif

__kernel __attribute__((reqd_work_group_size(TILE, 1, 1))) void
nbody_step(__global const float4 *pos_in, __global const float4 *vel_in,
           __global float4 *pos_out, __global float4 *vel_out, __global float4 *acc_out, int n,
           float eps2, float kick, float drift, float damping, int write_acc,
           __global int *bad, int step, __global float2 *epart, int eslot, float sync)
{
    __local float4 tile[TILE];
    int i = get_global_id(0);
    int lid = get_local_id(0);
    int own = get_group_id(0) * TILE; /* the tile that holds body i itself */
    float4 pi = i < n ? pos_in[i] : (float4)(0.0f);
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    float phi = 0.0f, phic = 0.0f;
    for (int base = 0; base < n; base += TILE) {
        int j = base + lid;
        tile[lid] = j < n ? pos_in[j] : (float4)(0.0f);
        barrier(CLK_LOCAL_MEM_FENCE);
        float pt = 0.0f;
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
            pt = fma(pj.w, inv, pt);
        }
        if (base == own)
            pt -= pi.w * rsqrt(eps2);
        float y = pt - phic, t = phi + y;
        phic = (t - phi) - y;
        phi = t;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (eslot >= 0) {
        /* 1/2 m v^2 and 1/2 m phi of body i (0 beyond n), summed over
         * the work-group in the local tile (free again after the loop) */
        float2 e = (float2)(0.0f);
        if (i < n) {
            float4 v = vel_in[i];
            float vx = v.x + ax * sync, vy = v.y + ay * sync, vz = v.z + az * sync;
            e = (float2)(0.5f * pi.w * (vx * vx + vy * vy + vz * vz), -0.5f * pi.w * phi);
        }
        __local float2 *red = (__local float2 *)tile;
        red[lid] = e;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int h = TILE / 2; h > 0; h >>= 1) {
            if (lid < h)
                red[lid] += red[lid + h];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0)
            epart[eslot * get_num_groups(0) + get_group_id(0)] = red[0];
    }
    if (i < n) {
        float4 v = vel_in[i];
        float vx = (v.x + ax * kick) * damping;
        float vy = (v.y + ay * kick) * damping;
        float vz = (v.z + az * kick) * damping;
        float4 x = (float4)(pi.x + vx * drift, pi.y + vy * drift, pi.z + vz * drift, pi.w);
        vel_out[i] = (float4)(vx, vy, vz, 0.0f);
        pos_out[i] = x;
        if (write_acc)
            acc_out[i] = (float4)(ax, ay, az, 0.0f);
        if (!(isfinite(x.x) && isfinite(x.y) && isfinite(x.z) && isfinite(vx) &&
              isfinite(vy) && isfinite(vz)))
            atomic_min(bad, step);
    }
}

/* The potential of every body, phi_i = -sum_{j != i} m_j / sqrt(|r_ij|^2 +
 * eps2), for the energy W = 1/2 sum m_i phi_i: the same tiling, each sum
 * compensated (Kahan), since an energy drift of 1e-6 is what it must
 * resolve and a plain float sum of n terms loses about n eps. */
__kernel __attribute__((reqd_work_group_size(TILE, 1, 1))) void
nbody_potential(__global const float4 *pos, int n, float eps2, __global float *phi)
{
    __local float4 tile[TILE];
    int i = get_global_id(0);
    int lid = get_local_id(0);
    float4 pi = i < n ? pos[i] : (float4)(0.0f);
    float sum = 0.0f, comp = 0.0f;
    for (int base = 0; base < n; base += TILE) {
        int j = base + lid;
        tile[lid] = j < n ? pos[j] : (float4)(0.0f);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; k++) {
            float4 pj = tile[k];
            float rx = pj.x - pi.x, ry = pj.y - pi.y, rz = pj.z - pi.z;
            float d2 = rx * rx + ry * ry + rz * rz + eps2;
            float term = base + k == i ? 0.0f : pj.w / sqrt(d2);
            float y = term - comp;
            float t = sum + y;
            comp = (t - sum) - y;
            sum = t;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i < n)
        phi[i] = -sum;
}
