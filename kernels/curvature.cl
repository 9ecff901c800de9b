/*
 * curvature.cl: per-vertex curvature tensors on the 1-ring (Rusinkiewicz
 * 2004), the device half of physics/curvature.c. The host reference
 * (curv_ref_normals, curv_ref_tensors) does the same arithmetic in double,
 * in the same order; keep the two in step.
 *
 * Design: pure gathers over CSR adjacency, one work-item per vertex, so the
 * result is deterministic and needs no float atomics (the blending of
 * Griffin et al. and the scatter of trimesh2 both sum in an arbitrary
 * order). Two launches per estimate:
 *   curv_normals  n_i = normalize(sum over incident faces of (a x b) /
 *                 (|a|^2 |b|^2)), a and b the face's edges from i: Max's
 *                 weights (Max 1999), what Rusinkiewicz's own trimesh2
 *                 uses; exact for vertices on a sphere, so the estimate
 *                 there is exact however irregular the triangles (a
 *                 folded face is left out of the sum);
 *   curv_face     for each incident face: the face tensor by least squares
 *                 over its three edges, the corner's area (the thesis's
 *                 Pseudocode 3.2: Voronoi, or in an obtuse triangle the
 *                 bisectors' split of Rusinkiewicz),
 *                 the tensor rotated into the vertex frame; area-weighted
 *                 mean; Jacobi diagonalisation;
 *   curv_vertex   least squares over the 1-ring edges in the vertex frame;
 *                 diagonalisation.
 * A face tensor is recomputed by each of its three corners: ~3x the
 * arithmetic of a scatter, but no per-face buffer and no second pass, and
 * the gather reads stay in cache (neighbouring vertices share faces).
 *
 * Precision: curvature is a second difference of positions (normals from
 * edges, then differences of normals along edges), so rounding the
 * positions to float costs eps / (h^2 k) relatively: 4e-3 on a 1M-face
 * saddle. Positions therefore go up as two floats, hi = (float)p and
 * lo = (float)(p - hi), and every edge is (hi_b - hi_a) + (lo_b - lo_a),
 * accurate to float rounding of the edge itself; the rest is float. No fp64
 * needed, and the result stays within ~1e-5 of the double reference.
 *
 * Layout: positions (hi, lo) and normals float4 (w unused) for aligned
 * 16-byte loads; triangles 3 ints per face; outputs curv = (k1, k2, H, K),
 * dir1 and dir2 float4 per vertex.
 */

/* p_b - p_a from the split positions. */
inline float3 curv_edge(__global const float4 *hi, __global const float4 *lo, int a, int b)
{
    return (hi[b].xyz - hi[a].xyz) + (lo[b].xyz - lo[a].xyz);
}

/* Vertex frame from the normal alone (no adjacency): the coordinate axis
 * least aligned with n, made orthogonal to n. */
inline void curv_frame(float3 n, float3 *u, float3 *v)
{
    float ax = fabs(n.x), ay = fabs(n.y), az = fabs(n.z);
    float3 a = (ax <= ay && ax <= az) ? (float3)(1.0f, 0.0f, 0.0f)
               : (ay <= az)           ? (float3)(0.0f, 1.0f, 0.0f)
                                      : (float3)(0.0f, 0.0f, 1.0f);
    float3 w = a - dot(a, n) * n;
    *u = w / sqrt(dot(w, w));
    *v = cross(n, *u);
}

/* Rotates the frame (ou, ov) about ou x ov so that its normal becomes nn
 * (Rusinkiewicz's rot_coord_sys). */
inline void curv_rot_frame(float3 ou, float3 ov, float3 nn, float3 *ru, float3 *rv)
{
    float3 on = cross(ou, ov);
    float nd = dot(on, nn);
    if (nd <= -1.0f) {
        *ru = -ou;
        *rv = -ov;
        return;
    }
    float3 perp = nn - nd * on;
    float3 dperp = (on + nn) / (1.0f + nd);
    *ru = ou - dperp * dot(ou, perp);
    *rv = ov - dperp * dot(ov, perp);
}

/* Solves the symmetric system [w00 w01 0; w01 w00+w22 w01; 0 w01 w22] x = m
 * by LDL^T; returns 0 when a pivot is below CURV_PIVOT_TOL times the trace
 * w00 + w22 (degenerate geometry: a sliver face, a vertex with one
 * neighbour), where float rounding would otherwise decide the answer. */
#define CURV_PIVOT_TOL 1e-5f
inline int curv_solve(float w00, float w01, float w22, float3 m, float3 *x)
{
    const float tol = CURV_PIVOT_TOL * (w00 + w22);
    float d0 = w00;
    if (!(d0 > tol))
        return 0;
    float l10 = w01 / d0;
    float d1 = w00 + w22 - l10 * l10 * d0;
    if (!(d1 > tol))
        return 0;
    float l21 = w01 / d1;
    float d2 = w22 - l21 * l21 * d1;
    if (!(d2 > tol))
        return 0;
    float y0 = m.x;
    float y1 = m.y - l10 * y0;
    float y2 = m.z - l21 * y1;
    float x2 = y2 / d2;
    float x1 = y1 / d1 - l21 * x2;
    float x0 = y0 / d0 - l10 * x1;
    *x = (float3)(x0, x1, x2);
    return 1;
}

/* Diagonalises (ku, kuv, kv) in the frame (u, v) with normal n, writes
 * k1 >= k2, H, K and the principal directions. */
inline void curv_store(int i, float3 n, float3 u, float3 v, float ku, float kuv, float kv,
                       __global float4 *curv, __global float4 *dir1, __global float4 *dir2)
{
    float c = 1.0f, s = 0.0f, tt = 0.0f;
    if (kuv != 0.0f) {
        float h = 0.5f * (kv - ku) / kuv;
        tt = (h < 0.0f) ? 1.0f / (h - sqrt(1.0f + h * h)) : 1.0f / (h + sqrt(1.0f + h * h));
        c = 1.0f / sqrt(1.0f + tt * tt);
        s = tt * c;
    }
    float k1 = ku - tt * kuv;
    float k2 = kv + tt * kuv;
    float3 d1;
    if (k1 >= k2) {
        d1 = c * u - s * v;
    } else {
        float k = k1;
        k1 = k2;
        k2 = k;
        d1 = s * u + c * v;
    }
    float3 d2 = cross(n, d1);
    curv[i] = (float4)(k1, k2, 0.5f * (k1 + k2), k1 * k2);
    dir1[i] = (float4)(d1, 0.0f);
    dir2[i] = (float4)(d2, 0.0f);
}

inline void curv_zero(int i, __global float4 *curv, __global float4 *dir1,
                      __global float4 *dir2)
{
    curv[i] = (float4)(0.0f);
    dir1[i] = (float4)(0.0f);
    dir2[i] = (float4)(0.0f);
}

__kernel void curv_normals(const int nverts, __global const float4 *pos,
                           __global const float4 *plo, __global const int *tri, __global const int *vf_ptr,
                           __global const int *vf_idx, __global float4 *normal)
{
    const int i = (int)get_global_id(0);
    if (i >= nverts)
        return;
    /* Max's weights: n = sum over faces of (a x b) / (|a|^2 |b|^2), a and b
     * the face's two edges from i (in winding order). Every term scales as
     * length^-2, so the edges are first divided by one length of the
     * vertex, L (the sum's direction is unchanged), keeping the terms near
     * 1 in float whatever the mesh's units. A folded face (its normal more
     * than 120 degrees from the area-weighted one, sum of a x b) is left
     * out: its weight is the largest where its edges are shortest, and it
     * would turn the normal over (a sliver standing on edge, near 90
     * degrees, is kept: on a sphere it is part of the exact sum); with
     * every face folded or degenerate the area-weighted normal stands. */
    float3 s = (float3)(0.0f), sa = (float3)(0.0f);
    float L = 0.0f;
    const int beg = vf_ptr[i], end = vf_ptr[i + 1];
    for (int pass = 0; pass < 2; pass++)
        for (int k = beg; k < end; k++) {
            const int f = vf_idx[k];
            const int c0 = tri[3 * f], c1 = tri[3 * f + 1], c2 = tri[3 * f + 2];
            const int a = c0 == i ? c1 : c1 == i ? c2 : c0;
            const int b = c0 == i ? c2 : c1 == i ? c0 : c1;
            float3 ea = curv_edge(pos, plo, i, a), eb = curv_edge(pos, plo, i, b);
            if (L == 0.0f)
                L = sqrt(dot(ea, ea));
            if (!(L > 0.0f))
                continue;
            ea /= L;
            eb /= L;
            const float3 c = cross(ea, eb);
            if (pass == 0) {
                sa += c;
                continue;
            }
            const float la = dot(ea, ea), lb = dot(eb, eb);
            if (la > 0.0f && lb > 0.0f && dot(c, sa) > -0.5f * sqrt(dot(c, c) * dot(sa, sa)))
                s += c / (la * lb);
        }
    if (!(dot(s, s) > 0.0f))
        s = sa;
    const float l = sqrt(dot(s, s));
    normal[i] = l > 0.0f ? (float4)(s / l, 0.0f) : (float4)(0.0f);
}

__kernel void curv_face(const int nverts, __global const float4 *pos,
                        __global const float4 *plo, __global const int *tri,
                        __global const int *vf_ptr, __global const int *vf_idx,
                        __global const float4 *normal, __global float4 *curv,
                        __global float4 *dir1, __global float4 *dir2)
{
    const int i = (int)get_global_id(0);
    if (i >= nverts)
        return;
    const float3 ni = normal[i].xyz;
    if (dot(ni, ni) == 0.0f) {
        curv_zero(i, curv, dir1, dir2);
        return;
    }
    float3 fu, fv;
    curv_frame(ni, &fu, &fv);
    float ku = 0.0f, kuv = 0.0f, kv = 0.0f, area = 0.0f;
    const int end = vf_ptr[i + 1];
    for (int k = vf_ptr[i]; k < end; k++) {
        const int f = vf_idx[k];
        const int ia = tri[3 * f], ib = tri[3 * f + 1], ic = tri[3 * f + 2];
        const float3 n0 = normal[ia].xyz, n1 = normal[ib].xyz, n2 = normal[ic].xyz;
        const int corner = (ia == i) ? 0 : (ib == i) ? 1 : 2;
        /* edges opposite each corner and the normal differences along them */
        const float3 e0 = curv_edge(pos, plo, ib, ic), e1 = curv_edge(pos, plo, ic, ia),
                     e2 = curv_edge(pos, plo, ia, ib);
        const float3 dn0 = n2 - n1, dn1 = n0 - n2, dn2 = n1 - n0;
        const float3 fn = cross(e0, e1);
        const float fnl = sqrt(dot(fn, fn));
        const float e0l = sqrt(dot(e0, e0));
        if (!(fnl > 0.0f) || !(e0l > 0.0f))
            continue;
        /* face frame (t, b), normal fn / |fn| */
        const float3 t = e0 / e0l;
        const float3 nf = fn / fnl;
        const float3 b = cross(nf, t);
        float w00 = 0.0f, w01 = 0.0f, w22 = 0.0f;
        float3 m = (float3)(0.0f);
        {
            float u = dot(e0, t), v = dot(e0, b), dnu = dot(dn0, t), dnv = dot(dn0, b);
            w00 += u * u; w01 += u * v; w22 += v * v;
            m += (float3)(dnu * u, dnu * v + dnv * u, dnv * v);
            u = dot(e1, t); v = dot(e1, b); dnu = dot(dn1, t); dnv = dot(dn1, b);
            w00 += u * u; w01 += u * v; w22 += v * v;
            m += (float3)(dnu * u, dnu * v + dnv * u, dnv * v);
            u = dot(e2, t); v = dot(e2, b); dnu = dot(dn2, t); dnv = dot(dn2, b);
            w00 += u * u; w01 += u * v; w22 += v * v;
            m += (float3)(dnu * u, dnu * v + dnv * u, dnv * v);
        }
        float3 sff;
        if (!curv_solve(w00, w01, w22, m, &sff))
            continue;
        /* this corner's area: Camillo's Pseudocode 3.2 (Voronoi; obtuse
         * triangles split by the bisectors, Rusinkiewicz) */
        const float tarea = 0.5f * fnl;
        const float l0 = dot(e0, e0), l1 = dot(e1, e1), l2 = dot(e2, e2);
        const float bw0 = l0 * (l1 + l2 - l0), bw1 = l1 * (l2 + l0 - l1),
                    bw2 = l2 * (l0 + l1 - l2);
        float a0, a1, a2;
        if (bw0 <= 0.0f) {
            a1 = -0.25f * tarea * l2 / dot(e0, e2);
            a2 = -0.25f * tarea * l1 / dot(e0, e1);
            a0 = tarea - a1 - a2;
        } else if (bw1 <= 0.0f) {
            a0 = -0.25f * tarea * l2 / dot(e1, e2);
            a2 = -0.25f * tarea * l0 / dot(e1, e0);
            a1 = tarea - a0 - a2;
        } else if (bw2 <= 0.0f) {
            a0 = -0.25f * tarea * l1 / dot(e2, e1);
            a1 = -0.25f * tarea * l0 / dot(e2, e0);
            a2 = tarea - a0 - a1;
        } else {
            const float sc = 0.5f * tarea / (bw0 + bw1 + bw2);
            a0 = sc * (bw1 + bw2);
            a1 = sc * (bw0 + bw2);
            a2 = sc * (bw0 + bw1);
        }
        const float wa = corner == 0 ? a0 : corner == 1 ? a1 : a2;
        /* the face tensor in the vertex frame rotated onto the face plane */
        float3 ru, rv;
        curv_rot_frame(fu, fv, nf, &ru, &rv);
        const float u1 = dot(ru, t), v1 = dot(ru, b), u2 = dot(rv, t), v2 = dot(rv, b);
        ku += wa * (sff.x * u1 * u1 + sff.y * (2.0f * u1 * v1) + sff.z * v1 * v1);
        kuv += wa * (sff.x * u1 * u2 + sff.y * (u1 * v2 + u2 * v1) + sff.z * v1 * v2);
        kv += wa * (sff.x * u2 * u2 + sff.y * (2.0f * u2 * v2) + sff.z * v2 * v2);
        area += wa;
    }
    if (!(area > 0.0f)) {
        curv_zero(i, curv, dir1, dir2);
        return;
    }
    curv_store(i, ni, fu, fv, ku / area, kuv / area, kv / area, curv, dir1, dir2);
}

__kernel void curv_vertex(const int nverts, __global const float4 *pos,
                          __global const float4 *plo, __global const int *vv_ptr, __global const int *vv_idx,
                          __global const float4 *normal, __global float4 *curv,
                          __global float4 *dir1, __global float4 *dir2)
{
    const int i = (int)get_global_id(0);
    if (i >= nverts)
        return;
    const float3 ni = normal[i].xyz;
    if (dot(ni, ni) == 0.0f) {
        curv_zero(i, curv, dir1, dir2);
        return;
    }
    float3 fu, fv;
    curv_frame(ni, &fu, &fv);
    float w00 = 0.0f, w01 = 0.0f, w22 = 0.0f;
    float3 m = (float3)(0.0f);
    const int end = vv_ptr[i + 1];
    for (int k = vv_ptr[i]; k < end; k++) {
        const int j = vv_idx[k];
        const float3 e = curv_edge(pos, plo, i, j);
        const float3 dn = normal[j].xyz - ni;
        const float u = dot(e, fu), v = dot(e, fv), dnu = dot(dn, fu), dnv = dot(dn, fv);
        w00 += u * u;
        w01 += u * v;
        w22 += v * v;
        m += (float3)(dnu * u, dnu * v + dnv * u, dnv * v);
    }
    float3 sff;
    if (!curv_solve(w00, w01, w22, m, &sff)) {
        curv_zero(i, curv, dir1, dir2);
        return;
    }
    curv_store(i, ni, fu, fv, sff.x, sff.y, sff.z, curv, dir1, dir2);
}
