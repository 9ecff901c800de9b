/*
 * springs.cl: position-based mass-spring kernels (physics/springs.h has the
 * model, physics/springs_ref.c the CPU reference they follow). A particle
 * is a float4 (x, y, z, w) with w its inverse mass (0: pinned); a spring is
 * an int4 (i, j, rest, k) with rest and k stored as float bits, so one
 * 16-byte load brings the whole spring; a particle's rest offset from the
 * rest centre of mass and its mass are a float4 (qx, qy, qz, m).
 *
 * Springs are stored colour by colour; within a colour no two springs share
 * a particle, so projecting a colour in parallel has no race and gives the
 * same result as projecting it sequentially. Colours must follow each other
 * in order: either one launch per colour (springs_project_color; the
 * in-order queue orders them) or one work-group that loops over the colours
 * with a barrier between them (springs_step_wg). The thesis launched all
 * colours at once, letting blocks of different colours overlap: a race.
 *
 * springs_step_wg, the whole step in one launch: a colour is a dependent
 * round (positions written by one colour are read by the next), so the
 * time per colour is what a step costs. Per colour every work-item holds
 * two springs (the host balances the colours to at most two springs per
 * work-item where it can), issues their four position loads before any
 * arithmetic, and loads the next colour's springs (read-only data) before
 * the barrier, so only the position loads, the arithmetic and the barrier
 * are on the chain. Shape matching reduces in local memory in the order
 * the colour plan's launches use (blocks of `sblock` particles by a tree,
 * the block sums one after another), so the two plans give the same bits.
 * Non-finite states: every Verlet pass looks at the positions it starts
 * from (the state the previous step ended with) and records that step in
 * a one-int flag (atomic_min: the first wins), and springs_check_finite
 * looks at the state a run ends with; the host reads the flag after each
 * run, so a blow-up is reported with its step without reading the state
 * back between steps (physics/springs_gpu.c).
 * Contraction of a * b + c into fma is off: a compiler may contract one
 * kernel's copy of an expression and not another's, and the plans (and
 * runs) must agree to the bit.
 */
#pragma OPENCL FP_CONTRACT OFF

/* The barrier between two colours of springs_step_wg orders global memory
 * (the positions), which OpenCL 1.2 asks of CLK_GLOBAL_MEM_FENCE. A build
 * with -DSPRINGS_FENCE_LOCAL (the environment variable
 * CLSOLVE_SPRINGS_FENCE=local, for bench/physics-gpu.sh only) uses
 * CLK_LOCAL_MEM_FENCE instead, to measure what the global fence costs on a
 * device: not conformant, diagnostic only. */
#ifdef SPRINGS_FENCE_LOCAL
#define SPRINGS_COLOUR_FENCE CLK_LOCAL_MEM_FENCE
#else
#define SPRINGS_COLOUR_FENCE CLK_GLOBAL_MEM_FENCE
#endif

/* Verlet for one particle: x' = (2-d) x - (1-d) x_prev + a dt^2, evaluated
 * as x + (1-d)(x - x_prev) + a dt^2 (c2 = 1-d): the same number in exact
 * arithmetic, but in float (2-d) - (1-d) is not exactly 1, and that
 * difference times |x| acts as a spurious force; the velocity form has no
 * such term. */
inline void springs_verlet_one(__global float4 *pos, __global float4 *prev, int i, float c2,
                               float4 adt2, __global int *bad, int step)
{
    float4 p = pos[i];
    /* the state this step starts from is the one step - 1 ended with;
     * pinned particles too: a NaN correction times w = 0 is still NaN */
    if (!(isfinite(p.x) && isfinite(p.y) && isfinite(p.z)))
        atomic_min(bad, step - 1);
    if (p.w == 0.0f)
        return;
    float4 q = prev[i];
    float3 nx = p.xyz + c2 * (p.xyz - q.xyz) + adt2.xyz;
    prev[i] = p;
    pos[i] = (float4)(nx, p.w);
}

/* The correction of one spring from its ends' positions: c = S k diff D,
 * diff = (|D| - rest) / |D|; 0 when |D| = 0 or both ends are pinned. */
inline float3 springs_correction(float4 pi, float4 pj, int4 s, float S)
{
    float3 d = pj.xyz - pi.xyz;
    float len = sqrt(d.x * d.x + d.y * d.y + d.z * d.z);
    float wsum = pi.w + pj.w;
    if (!(len > 0.0f && wsum > 0.0f))
        return (float3)(0.0f);
    float diff = (len - as_float(s.z)) / len;
    return (S * as_float(s.w) * diff) * d;
}

/* Projects one spring towards its rest length, the correction split by
 * inverse mass (1/2 each for equal masses). */
inline void springs_project_one(__global float4 *pos, int4 s, float S)
{
    float4 pi = pos[s.x];
    float4 pj = pos[s.y];
    float wsum = pi.w + pj.w;
    float3 c = springs_correction(pi, pj, s, S);
    if (wsum > 0.0f) {
        pos[s.x] = (float4)(pi.xyz + c * (pi.w / wsum), pi.w);
        pos[s.y] = (float4)(pj.xyz - c * (pj.w / wsum), pj.w);
    }
}

/* Two springs of one colour (s.x < 0: none): the four loads first. */
inline void springs_project_two(__global float4 *pos, int4 a, int4 b, float S)
{
    int ha = a.x >= 0, hb = b.x >= 0;
    float4 ai = ha ? pos[a.x] : (float4)(0.0f), aj = ha ? pos[a.y] : (float4)(0.0f);
    float4 bi = hb ? pos[b.x] : (float4)(0.0f), bj = hb ? pos[b.y] : (float4)(0.0f);
    float3 ca = springs_correction(ai, aj, a, S), cb = springs_correction(bi, bj, b, S);
    float wa = ai.w + aj.w, wb = bi.w + bj.w;
    if (ha && wa > 0.0f) {
        pos[a.x] = (float4)(ai.xyz + ca * (ai.w / wa), ai.w);
        pos[a.y] = (float4)(aj.xyz - ca * (aj.w / wa), aj.w);
    }
    if (hb && wb > 0.0f) {
        pos[b.x] = (float4)(bi.xyz + cb * (bi.w / wb), bi.w);
        pos[b.y] = (float4)(bj.xyz - cb * (bj.w / wb), bj.w);
    }
}

/* Colliders: two float4 each, (a.xyz, type) and (b.xyz, 0): plane point
 * and unit normal (type 0), sphere centre and radius b.x (1), box min and
 * max (2). Every collider is solid; a free particle inside is moved out
 * along the contact normal n by the depth d, and with friction mu the
 * step's tangential motion t (x - x_prev without its normal part) is
 * removed when |t| <= mu d, else shortened by mu d. */
inline void springs_collide_one(__global float4 *pos, __global const float4 *prev, int i,
                                __global const float4 *col, int ncol, float mu)
{
    float4 p = pos[i];
    if (p.w == 0.0f || ncol == 0)
        return;
    float3 x = p.xyz;
    for (int c = 0; c < ncol; c++) {
        float4 a = col[2 * c], b = col[2 * c + 1];
        int type = (int)a.w;
        float depth = 0.0f;
        float3 n = (float3)(0.0f, 1.0f, 0.0f);
        if (type == 0) {
            float sd = dot(x - a.xyz, b.xyz);
            if (sd < 0.0f) {
                n = b.xyz;
                x -= sd * n;
                depth = -sd;
            }
        } else if (type == 1) {
            float3 d = x - a.xyz;
            float r = sqrt(d.x * d.x + d.y * d.y + d.z * d.z);
            if (r < b.x) {
                n = r > 0.0f ? d / r : (float3)(0.0f, 1.0f, 0.0f);
                x = a.xyz + b.x * n;
                depth = b.x - r;
            }
        } else if (x.x > a.x && x.x < b.x && x.y > a.y && x.y < b.y && x.z > a.z &&
                   x.z < b.z) {
            float dist[6] = {x.x - a.x, b.x - x.x, x.y - a.y, b.y - x.y, x.z - a.z, b.z - x.z};
            int face = 0;
            float best = dist[0];
            for (int f = 1; f < 6; f++)
                if (dist[f] < best) {
                    best = dist[f];
                    face = f;
                }
            int axis = face / 2;
            n = (float3)(0.0f);
            float sgn = face % 2 ? 1.0f : -1.0f;
            if (axis == 0) {
                n.x = sgn;
                x.x = face % 2 ? b.x : a.x;
            } else if (axis == 1) {
                n.y = sgn;
                x.y = face % 2 ? b.y : a.y;
            } else {
                n.z = sgn;
                x.z = face % 2 ? b.z : a.z;
            }
            depth = best;
        }
        if (depth > 0.0f && mu > 0.0f) {
            float3 v = x - prev[i].xyz;
            float3 t = v - dot(v, n) * n;
            float lt = sqrt(t.x * t.x + t.y * t.y + t.z * t.z);
            if (lt > 0.0f)
                x -= (lt <= mu * depth ? 1.0f : mu * depth / lt) * t;
        }
    }
    pos[i] = (float4)(x, p.w);
}

/* The rotation of A (row-major, 9 floats) as a quaternion (w, x, y, z),
 * refined from q: Mueller et al. 2016, as springs_rotation_of in
 * physics/springs_ref.c, with a float tolerance. */
inline float4 springs_rotation(const float *A, float4 q)
{
    for (int it = 0; it < 20; it++) {
        float w = q.x, x = q.y, y = q.z, z = q.w;
        float R[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
                      2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                      2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
        float3 om = (float3)(0.0f);
        float dt = 0.0f;
        for (int k = 0; k < 3; k++) {
            float3 r = (float3)(R[k], R[3 + k], R[6 + k]), a = (float3)(A[k], A[3 + k], A[6 + k]);
            om += cross(r, a);
            dt += dot(r, a);
        }
        om *= 1.0f / (fabs(dt) + 1e-9f);
        float wn = sqrt(dot(om, om));
        if (wn < 2e-7f) /* float: about the rounding of omega itself */
            break;
        float h = 0.5f * wn, s = sin(h) / wn;
        float4 p = (float4)(cos(h), om.x * s, om.y * s, om.z * s);
        float4 n = (float4)(p.x * q.x - p.y * q.y - p.z * q.z - p.w * q.w,
                            p.x * q.y + p.y * q.x + p.z * q.w - p.w * q.z,
                            p.x * q.z - p.y * q.w + p.z * q.x + p.w * q.y,
                            p.x * q.w + p.y * q.z - p.z * q.y + p.w * q.x);
        q = n / sqrt(dot(n, n));
    }
    return q;
}

/* shape buffer: [0] centre (c, M), [1..3] the rows of R, [4] the quaternion */
inline void springs_shape_goal(__global const float4 *rest, int i, float4 c, float4 r0,
                               float4 r1, float4 r2, __global float4 *pos, float alpha)
{
    float4 p = pos[i];
    if (p.w == 0.0f)
        return;
    float3 q = rest[i].xyz;
    float3 g = (float3)(dot(r0.xyz, q), dot(r1.xyz, q), dot(r2.xyz, q)) + c.xyz;
    pos[i] = (float4)(p.xyz + alpha * (g - p.xyz), p.w);
}

__kernel void springs_verlet(__global float4 *pos, __global float4 *prev, int n, float c2,
                             float4 adt2, __global int *bad, int step)
{
    int i = get_global_id(0);
    if (i < n)
        springs_verlet_one(pos, prev, i, c2, adt2, bad, step);
}

/* The state after the last step of a run, which no Verlet launch of the
 * run reads: its step into *bad when a position is not finite. */
__kernel void springs_check_finite(__global const float4 *pos, int n, __global int *bad,
                                   int step)
{
    int i = get_global_id(0);
    if (i < n) {
        float4 p = pos[i];
        if (!(isfinite(p.x) && isfinite(p.y) && isfinite(p.z)))
            atomic_min(bad, step);
    }
}

__kernel void springs_project_color(__global float4 *pos, __global const int4 *spr, int first,
                                    int count, float S)
{
    int t = get_global_id(0);
    if (t < count)
        springs_project_one(pos, spr[first + t], S);
}

/* One Jacobi sweep (physics/springs.h): every free particle i moves by
 * omega / n_i times the sum of its springs' corrections, all computed from
 * the positions the sweep starts from (pin = q^k), into pio. With the
 * Chebyshev weight cw != 1 the result is cw (y - q^(k-1)) + q^(k-1), and
 * pio holds q^(k-1) on entry (the host swaps the buffers every sweep, so
 * the one written is the iterate before the one read). A particle's
 * springs are its row of a CSR adjacency (adj_off, adj: int4 (j, i, rest
 * bits, k bits), a spring seen from i), built on the host from the coloured springs; a team
 * of `team` work-items (a power of two dividing the work-group) strides
 * over the row, and the team's sums meet in local memory by a fixed tree,
 * so a sweep is deterministic. Pinned particles and particles without
 * springs are copied. Seen from j, spring (i, j)'s correction is -c
 * (D = x_i - x_j), so both ends use springs_correction with themselves
 * first. No order between particles: the whole device works at once, one
 * launch per sweep, where Gauss-Seidel needs one dependent round per
 * colour. */
__kernel void springs_jacobi(__global const float4 *restrict pin, __global float4 *restrict pio,
                             __global const int *restrict adj_off,
                             __global const int4 *restrict adj, int n, float S, float omega,
                             float cw, int team, __local float4 *red,
                             __global const float4 *restrict prev, __global const float4 *col,
                             int ncol, float mu)
{
    int lid = get_local_id(0);
    int lane = lid & (team - 1);
    int i = get_group_id(0) * (get_local_size(0) / team) + lid / team;
    float3 sum = (float3)(0.0f);
    float4 pi = (float4)(0.0f);
    int a0 = 0, a1 = 0;
    if (i < n) {
        pi = pin[i];
        a0 = adj_off[i];
        a1 = adj_off[i + 1];
    }
    /* four springs per round, their loads before any arithmetic: the
     * chain is two dependent loads (the list entry, then the other end)
     * per round instead of per spring; the sum still runs e, e + team,
     * e + 2 team, ... as a plain strided loop would */
    if (pi.w > 0.0f)
        for (int e = a0 + lane; e < a1; e += 4 * team) {
            int e1 = e + team, e2 = e1 + team, e3 = e2 + team;
            int4 s0 = adj[e], s1 = e1 < a1 ? adj[e1] : (int4)(i, i, 0, 0),
                 s2 = e2 < a1 ? adj[e2] : (int4)(i, i, 0, 0),
                 s3 = e3 < a1 ? adj[e3] : (int4)(i, i, 0, 0);
            float4 p0 = pin[s0.x], p1 = pin[s1.x], p2 = pin[s2.x], p3 = pin[s3.x];
            sum += springs_correction(pi, p0, s0, S) * (pi.w / (pi.w + p0.w));
            if (e1 < a1)
                sum += springs_correction(pi, p1, s1, S) * (pi.w / (pi.w + p1.w));
            if (e2 < a1)
                sum += springs_correction(pi, p2, s2, S) * (pi.w / (pi.w + p2.w));
            if (e3 < a1)
                sum += springs_correction(pi, p3, s3, S) * (pi.w / (pi.w + p3.w));
        }
    red[lid] = (float4)(sum, 0.0f);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = team / 2; s > 0; s >>= 1) {
        if (lane < s)
            red[lid] += red[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane == 0 && i < n) {
        int deg = a1 - a0;
        float4 y = pi;
        if (pi.w > 0.0f && deg > 0)
            y = (float4)(pi.xyz + (omega / (float)deg) * red[lid].xyz, pi.w);
        if (cw != 1.0f && pi.w > 0.0f) {
            float4 q = pio[i]; /* q^(k-1): read and overwritten by this work-item only */
            y = (float4)(cw * (y.xyz - q.xyz) + q.xyz, pi.w);
        }
        pio[i] = y;
        /* the colliders fused into the sweep (the host passes ncol = 0
         * when shape matching runs between the two and launches them) */
        if (ncol > 0)
            springs_collide_one(pio, prev, i, col, ncol, mu);
    }
}

__kernel void springs_collide(__global float4 *pos, __global const float4 *prev, int n,
                              __global const float4 *col, int ncol, float mu)
{
    int i = get_global_id(0);
    if (i < n)
        springs_collide_one(pos, prev, i, col, ncol, mu);
}

/* What a particle adds to the shape-matching sums: stage 0 (m x, m), stage
 * 1 row r: m (x_r - c_r) q; 0 beyond n. */
inline float4 springs_shape_value(__global const float4 *pos, __global const float4 *rest, int i,
                                  int n, int stage, int row, float4 c)
{
    if (i >= n)
        return (float4)(0.0f);
    float4 p = pos[i], r = rest[i];
    if (stage == 0)
        return (float4)(r.w * p.xyz, r.w);
    float d = row == 0 ? p.x - c.x : row == 1 ? p.y - c.y : p.z - c.z;
    return (float4)(r.w * d * r.xyz, 0.0f);
}

/* Shape matching across work-groups (the colour plan), in fixed order:
 * stage 0 sums (m x, m) per work-group, stage 1 m (x - c) q^T (three
 * float4 rows); springs_shape_finish (one work-group) adds the groups'
 * partial sums in order and, after stage 1, finds the rotation. */
__kernel void springs_shape_partial(__global const float4 *pos, __global const float4 *rest,
                                    int n, int stage, __global float4 *shape,
                                    __global float4 *partial, __local float4 *red)
{
    int lid = get_local_id(0), lsz = get_local_size(0), g = get_group_id(0);
    int i = get_global_id(0);
    float4 c = shape[0];
    int rows = stage == 0 ? 1 : 3;
    for (int row = 0; row < rows; row++) {
        red[lid] = springs_shape_value(pos, rest, i, n, stage, row, c);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = lsz / 2; s > 0; s >>= 1) {
            if (lid < s)
                red[lid] += red[lid + s];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0)
            partial[3 * g + row] = red[0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

__kernel void springs_shape_finish(__global const float4 *partial, int ngroups, int stage,
                                   __global float4 *shape)
{
    if (get_global_id(0) != 0)
        return;
    if (stage == 0) {
        float4 s = (float4)(0.0f);
        for (int g = 0; g < ngroups; g++)
            s += partial[3 * g];
        shape[0] = s.w > 0.0f ? (float4)(s.xyz / s.w, s.w) : (float4)(0.0f);
        return;
    }
    float4 r0 = (float4)(0.0f), r1 = (float4)(0.0f), r2 = (float4)(0.0f);
    for (int g = 0; g < ngroups; g++) {
        r0 += partial[3 * g];
        r1 += partial[3 * g + 1];
        r2 += partial[3 * g + 2];
    }
    float A[9] = {r0.x, r0.y, r0.z, r1.x, r1.y, r1.z, r2.x, r2.y, r2.z};
    float4 q = springs_rotation(A, shape[4]);
    float w = q.x, x = q.y, y = q.z, z = q.w;
    shape[1] = (float4)(1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y), 0.0f);
    shape[2] = (float4)(2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x), 0.0f);
    shape[3] = (float4)(2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y), 0.0f);
    shape[4] = q;
}

__kernel void springs_shape_apply(__global float4 *pos, __global const float4 *rest, int n,
                                  __global const float4 *shape, float alpha)
{
    int i = get_global_id(0);
    if (i < n)
        springs_shape_goal(rest, i, shape[0], shape[1], shape[2], shape[3], pos, alpha);
}

/* The colour plan's sum inside one work-group: blocks of sblock particles
 * (a power of two dividing lsz) each reduced by the same tree, the block
 * sums added in order, from 0. The total is in red[0] afterwards (read it
 * before the next call). */
inline void springs_block_sum(__global const float4 *pos, __global const float4 *rest, int n,
                              int stage, int row, float4 c, int sblock, __local float4 *red,
                              int lid, int lsz)
{
    int span = (n + sblock - 1) / sblock * sblock;
    float4 run = (float4)(0.0f);
    for (int base = 0; base < span; base += lsz) {
        red[lid] = springs_shape_value(pos, rest, base + lid, n, stage, row, c);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = sblock / 2; s > 0; s >>= 1) {
            if ((lid & (sblock - 1)) < s)
                red[lid] += red[lid + s];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0)
            for (int b = 0; b < lsz && base + b < span; b += sblock)
                run += red[b];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        red[0] = run;
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Shape matching inside the one work-group of springs_step_wg: the same
 * sums, rotation and goals as the colour plan's four launches. */
inline void springs_shape_wg(__global float4 *pos, __global const float4 *rest, int n,
                             __global float4 *shape, float alpha, int sblock, __local float4 *red,
                             int lid, int lsz)
{
    springs_block_sum(pos, rest, n, 0, 0, (float4)(0.0f), sblock, red, lid, lsz);
    float4 s = red[0];
    float4 c = s.w > 0.0f ? (float4)(s.xyz / s.w, s.w) : (float4)(0.0f);
    barrier(CLK_LOCAL_MEM_FENCE);
    float4 r[3];
    for (int row = 0; row < 3; row++) {
        springs_block_sum(pos, rest, n, 1, row, c, sblock, red, lid, lsz);
        r[row] = red[0];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        float A[9] = {r[0].x, r[0].y, r[0].z, r[1].x, r[1].y, r[1].z, r[2].x, r[2].y, r[2].z};
        float4 q = springs_rotation(A, shape[4]);
        float w = q.x, x = q.y, y = q.z, z = q.w;
        red[0] = (float4)(1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y), 0.0f);
        red[1] = (float4)(2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x), 0.0f);
        red[2] = (float4)(2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y), 0.0f);
        shape[4] = q;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float4 R0 = red[0], R1 = red[1], R2 = red[2];
    for (int i = lid; i < n; i += lsz)
        springs_shape_goal(rest, i, c, R0, R1, R2, pos, alpha);
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
}

/* nsteps whole steps in one work-group: Verlet, then `iterations` sweeps of
 * all colours, shape matching and the colliders, a barrier after every
 * phase so each colour sees the previous one's writes. Launched with
 * exactly one work-group of a power-of-two size; red holds one float4 per
 * work-item; sblock is the colour plan's work-group size (a power of two
 * no larger), whose reduction order the shape sums repeat. */
__kernel void springs_step_wg(__global float4 *pos, __global float4 *prev, int n,
                              __global const int4 *spr, __global const int *color_off,
                              int ncolors, int iterations, int nsteps, float c2, float4 adt2,
                              float S, __global const float4 *col, int ncol, float mu,
                              __global const float4 *rest, __global float4 *shape, float alpha,
                              int sblock, __local float4 *red, __global int *bad,
                              int first_step)
{
    int lid = get_local_id(0);
    int lsz = get_local_size(0);
    const int4 none = (int4)(-1);
    for (int step = 0; step < nsteps; step++) {
        for (int i = lid; i < n; i += lsz)
            springs_verlet_one(pos, prev, i, c2, adt2, bad, first_step + step);
        barrier(CLK_GLOBAL_MEM_FENCE);
        for (int it = 0; it < iterations; it++) {
            /* the first colour's springs; later ones are loaded a colour ahead */
            int end = ncolors > 0 ? color_off[1] : 0;
            int s0 = (ncolors > 0 ? color_off[0] : 0) + lid;
            int4 a = s0 < end ? spr[s0] : none, b = s0 + lsz < end ? spr[s0 + lsz] : none;
            for (int c = 0; c < ncolors; c++) {
                int first = color_off[c];
                end = color_off[c + 1];
                int nend = c + 1 < ncolors ? color_off[c + 2] : end;
                int t0 = end + lid;
                int4 na = t0 < nend ? spr[t0] : none, nb = t0 + lsz < nend ? spr[t0 + lsz] : none;
                springs_project_two(pos, a, b, S);
                for (int s = first + lid + 2 * lsz; s < end; s += lsz)
                    springs_project_one(pos, spr[s], S);
                barrier(SPRINGS_COLOUR_FENCE);
                a = na;
                b = nb;
            }
            if (alpha > 0.0f)
                springs_shape_wg(pos, rest, n, shape, alpha, sblock, red, lid, lsz);
            if (ncol > 0) {
                for (int i = lid; i < n; i += lsz)
                    springs_collide_one(pos, prev, i, col, ncol, mu);
                barrier(CLK_GLOBAL_MEM_FENCE);
            }
        }
    }
}
