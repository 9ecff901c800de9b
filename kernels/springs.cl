/*
 * springs.cl: position-based mass-spring kernels (physics/springs.h has the
 * model). A particle is a float4 (x, y, z, w) with w its inverse mass (0:
 * pinned); a spring is an int4 (i, j, rest, k) with rest and k stored as
 * float bits, so one 16-byte load brings the whole spring.
 *
 * Springs are stored colour by colour; within a colour no two springs share
 * a particle, so projecting a colour in parallel has no race and gives the
 * same result as projecting it sequentially. Colours must follow each other
 * in order: either one launch per colour (springs_project_color; the
 * in-order queue orders them) or one work-group that loops over the colours
 * with a barrier between them (springs_step_wg). The thesis launched all
 * colours at once, letting blocks of different colours overlap: a race.
 */

/* Verlet for one particle: x' = (2-d) x - (1-d) x_prev + a dt^2, evaluated
 * as x + (1-d)(x - x_prev) + a dt^2 (c2 = 1-d): the same number in exact
 * arithmetic, but in float (2-d) - (1-d) is not exactly 1, and that
 * difference times |x| acts as a spurious force; the velocity form has no
 * such term. */
inline void springs_verlet_one(__global float4 *pos, __global float4 *prev, int i, float c2,
                               float4 adt2)
{
    float4 p = pos[i];
    if (p.w == 0.0f)
        return;
    float4 q = prev[i];
    float3 nx = p.xyz + c2 * (p.xyz - q.xyz) + adt2.xyz;
    prev[i] = p;
    pos[i] = (float4)(nx, p.w);
}

/* Projects one spring towards its rest length, the correction split by
 * inverse mass (1/2 each for equal masses). */
inline void springs_project_one(__global float4 *pos, int4 s, float S)
{
    float4 pi = pos[s.x];
    float4 pj = pos[s.y];
    float3 d = pj.xyz - pi.xyz;
    float len = sqrt(d.x * d.x + d.y * d.y + d.z * d.z);
    float wsum = pi.w + pj.w;
    if (len > 0.0f && wsum > 0.0f) {
        float diff = (len - as_float(s.z)) / len;
        float3 c = (S * as_float(s.w) * diff) * d;
        pos[s.x] = (float4)(pi.xyz + c * (pi.w / wsum), pi.w);
        pos[s.y] = (float4)(pj.xyz - c * (pj.w / wsum), pj.w);
    }
}

inline void springs_floor_one(__global float4 *pos, int i, float y0)
{
    float4 p = pos[i];
    if (p.w != 0.0f && p.y < y0) {
        p.y = y0;
        pos[i] = p;
    }
}

__kernel void springs_verlet(__global float4 *pos, __global float4 *prev, int n, float c2,
                             float4 adt2)
{
    int i = get_global_id(0);
    if (i < n)
        springs_verlet_one(pos, prev, i, c2, adt2);
}

__kernel void springs_project_color(__global float4 *pos, __global const int4 *spr, int first,
                                    int count, float S)
{
    int t = get_global_id(0);
    if (t < count)
        springs_project_one(pos, spr[first + t], S);
}

__kernel void springs_floor(__global float4 *pos, int n, float y0)
{
    int i = get_global_id(0);
    if (i < n)
        springs_floor_one(pos, i, y0);
}

/* nsteps whole steps in one work-group: Verlet, then `iterations` sweeps of
 * all colours (and the floor), a barrier after every phase so each colour
 * sees the previous one's writes. Launched with exactly one work-group. */
__kernel void springs_step_wg(__global float4 *pos, __global float4 *prev, int n,
                              __global const int4 *spr, __global const int *color_off,
                              int ncolors, int iterations, int nsteps, float c2,
                              float4 adt2, float S, int floor_on, float y0)
{
    int lid = get_local_id(0);
    int lsz = get_local_size(0);
    for (int step = 0; step < nsteps; step++) {
        for (int i = lid; i < n; i += lsz)
            springs_verlet_one(pos, prev, i, c2, adt2);
        barrier(CLK_GLOBAL_MEM_FENCE);
        for (int it = 0; it < iterations; it++) {
            for (int c = 0; c < ncolors; c++) {
                int end = color_off[c + 1];
                for (int s = color_off[c] + lid; s < end; s += lsz)
                    springs_project_one(pos, spr[s], S);
                barrier(CLK_GLOBAL_MEM_FENCE);
            }
            if (floor_on) {
                for (int i = lid; i < n; i += lsz)
                    springs_floor_one(pos, i, y0);
                barrier(CLK_GLOBAL_MEM_FENCE);
            }
        }
    }
}
