/*
 * mesh_poly.c: polygons into triangles, once the whole file is read (see
 * mesh_priv.h: the readers reserve a polygon's triangle slots, filled with
 * its fan, and record the polygon here; this file then rewrites them).
 *
 * Why not the fan from the first corner: it folds non-convex polygons (a
 * dart, an L) over, makes zero-area triangles at a straight corner, and
 * where a vertex is shared by only two quads whose fans both take the
 * diagonal away from it, it makes the same triangle twice, opposite ways
 * round (a non-manifold edge, a normal that cancels, chi off by one per
 * such vertex). So:
 *
 *   - every polygon edge of the whole mesh, and every diagonal chosen so
 *     far, goes into one hash set of undirected edges;
 *   - a polygon of up to MESH_POLY_EAR corners is ear-clipped in the plane
 *     of its Newell normal (projected by dropping the normal's largest
 *     axis): an ear is a corner whose triangle with its two neighbours is
 *     strictly convex (its sine above 1e-12), has three distinct
 *     vertices, and holds no other corner, inside or on its edges (only
 *     the corners that are not strictly convex need testing). The scan
 *     starts at corner 1 and goes on from the last ear, so a convex
 *     polygon gives exactly the fan from corner 0 when no diagonal of
 *     that fan is taken: files that triangulated well before are read as
 *     before. Ears whose new diagonal is already an edge of the mesh are
 *     passed over while another ear exists: a diagonal that is new makes
 *     every triangle it closes new, so no triangle comes twice and no
 *     edge gets more than two triangles from one polygon;
 *   - a larger polygon (a CAD cap of a cylinder, convex in practice) is a
 *     fan from the first of its first MESH_POLY_FAN_TRIES corners whose
 *     fan is wound the polygon's way with new diagonals, else from the
 *     first whose fan is at least wound right, else from corner 0: this
 *     keeps the work linear in its corners;
 *   - a polygon with no area (all corners on a line, a repeated corner
 *     everywhere) keeps its fan: nothing better exists.
 *
 * Triangles keep the polygon's winding and its corners' texture and
 * normal indices. The work is O(k^2) per ear-clipped polygon of k corners
 * (O(k) for a convex one) and linear for the rest.
 */
#include "mesh.h"
#include "mesh_priv.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MESH_POLY_EAR 64       /* corners ear-clipped; larger polygons get a fan */
#define MESH_POLY_FAN_TRIES 16 /* fan corners tried for a larger polygon */

/* ---- a set of undirected edges (open addressing) -------------------------- */

typedef struct mesh_edges {
    uint64_t *key; /* (lo << 32 | hi) + 1; 0: empty */
    size_t mask;
} mesh_edges;

static uint64_t mesh_edge_key(int32_t a, int32_t b)
{
    uint32_t lo = (uint32_t)(a < b ? a : b), hi = (uint32_t)(a < b ? b : a);
    return ((uint64_t)lo << 32 | hi) + 1;
}

static size_t mesh_edge_slot(const mesh_edges *e, uint64_t k)
{
    size_t s = (size_t)((k * 0x9E3779B97F4A7C15ULL) >> 17) & e->mask;
    while (e->key[s] && e->key[s] != k)
        s = (s + 1) & e->mask;
    return s;
}

static int mesh_edge_has(const mesh_edges *e, int32_t a, int32_t b)
{
    uint64_t k = mesh_edge_key(a, b);
    return e->key[mesh_edge_slot(e, k)] == k;
}

static void mesh_edge_add(mesh_edges *e, int32_t a, int32_t b)
{
    uint64_t k = mesh_edge_key(a, b);
    e->key[mesh_edge_slot(e, k)] = k;
}

/* ---- one polygon ------------------------------------------------------------ */

/* A polygon being triangulated: its corners projected onto its plane, in
 * the orientation that makes it counter-clockwise. */
typedef struct mesh_ring {
    int k;
    const int32_t *v;    /* the corners' vertices */
    double *u, *w;       /* projected coordinates */
    int *live;           /* corner positions still in the ring */
    unsigned char *flat; /* 1: the corner is not strictly convex (tested for containment) */
    int32_t *out;        /* 3 (k - 2) corner positions */
    int nout;
} mesh_ring;

/* Twice the signed area of the corners a, b, c (positive: counter-clockwise). */
static double mesh_cross(const mesh_ring *r, int a, int b, int c)
{
    return (r->u[b] - r->u[a]) * (r->w[c] - r->w[a]) - (r->w[b] - r->w[a]) * (r->u[c] - r->u[a]);
}

/* Strictly convex: the sine of the turn at b above 1e-12 (scale-free). */
static int mesh_convex(const mesh_ring *r, int a, int b, int c)
{
    double ab = hypot(r->u[b] - r->u[a], r->w[b] - r->w[a]);
    double bc = hypot(r->u[c] - r->u[b], r->w[c] - r->w[b]);
    return mesh_cross(r, a, b, c) > 1e-12 * ab * bc;
}

/* Projects the ring onto the plane normal to its Newell normal's largest
 * axis; 0 when the polygon has no area. */
static int mesh_ring_project(mesh_ring *r, const double *pos)
{
    const double *o = pos + 3 * (int64_t)r->v[0];
    double n[3] = {0, 0, 0};
    for (int i = 0; i < r->k; i++) {
        const double *a = pos + 3 * (int64_t)r->v[i], *b = pos + 3 * (int64_t)r->v[(i + 1) % r->k];
        double pa[3] = {a[0] - o[0], a[1] - o[1], a[2] - o[2]};
        double pb[3] = {b[0] - o[0], b[1] - o[1], b[2] - o[2]};
        n[0] += pa[1] * pb[2] - pa[2] * pb[1];
        n[1] += pa[2] * pb[0] - pa[0] * pb[2];
        n[2] += pa[0] * pb[1] - pa[1] * pb[0];
    }
    int ax = fabs(n[0]) >= fabs(n[1]) && fabs(n[0]) >= fabs(n[2]) ? 0
             : fabs(n[1]) >= fabs(n[2])                           ? 1
                                                                  : 2;
    if (!(fabs(n[ax]) > 0.0) || !isfinite(n[ax]))
        return 0;
    /* (u, w) = the two other axes in cyclic order: counter-clockwise about
     * +axis; flipped when the normal points the other way */
    int iu = (ax + 1) % 3, iw = (ax + 2) % 3;
    double s = n[ax] > 0 ? 1.0 : -1.0;
    for (int i = 0; i < r->k; i++) {
        const double *a = pos + 3 * (int64_t)r->v[i];
        r->u[i] = a[iu] - o[iu];
        r->w[i] = s * (a[iw] - o[iw]);
    }
    return 1;
}

static void mesh_ring_emit(mesh_ring *r, int a, int b, int c)
{
    r->out[3 * r->nout] = a;
    r->out[3 * r->nout + 1] = b;
    r->out[3 * r->nout + 2] = c;
    r->nout++;
}

/* The fan from corner c (all k - 2 triangles). */
static void mesh_ring_fan(mesh_ring *r, int c)
{
    r->nout = 0;
    for (int i = 1; i + 1 < r->k; i++)
        mesh_ring_emit(r, c, (c + i) % r->k, (c + i + 1) % r->k);
}

/* Whether the live corner at ring position t is an ear (see the top). */
static int mesh_ring_ear(const mesh_ring *r, int n, int t, const mesh_edges *e, int strict)
{
    int a = r->live[(t + n - 1) % n], b = r->live[t], c = r->live[(t + 1) % n];
    int32_t va = r->v[a], vb = r->v[b], vc = r->v[c];
    if (va == vb || vb == vc || va == vc || !mesh_convex(r, a, b, c))
        return 0;
    if (strict && mesh_edge_has(e, va, vc))
        return 0;
    for (int q = 0; q < n; q++) {
        int o = r->live[q];
        if (o == a || o == b || o == c || !r->flat[o])
            continue;
        if (r->v[o] == va || r->v[o] == vb || r->v[o] == vc)
            continue; /* the same vertex again: it touches, it does not block */
        if (mesh_cross(r, a, b, o) >= 0 && mesh_cross(r, b, c, o) >= 0 &&
            mesh_cross(r, c, a, o) >= 0)
            return 0;
    }
    return 1;
}

static void mesh_ring_flat(mesh_ring *r, int n, int t)
{
    int a = r->live[(t + n - 1) % n], b = r->live[t], c = r->live[(t + 1) % n];
    r->flat[b] = !mesh_convex(r, a, b, c);
}

/* Ear clipping (k <= MESH_POLY_EAR). */
static void mesh_ring_clip(mesh_ring *r, mesh_edges *e)
{
    int n = r->k, cur = 1;
    for (int i = 0; i < n; i++)
        r->live[i] = i;
    for (int t = 0; t < n; t++)
        mesh_ring_flat(r, n, t);
    r->nout = 0;
    while (n > 3) {
        int at = -1;
        for (int strict = 1; strict >= 0 && at < 0; strict--)
            for (int s = 0; s < n && at < 0; s++)
                if (mesh_ring_ear(r, n, (cur + s) % n, e, strict))
                    at = (cur + s) % n;
        if (at < 0) { /* no ear: a self-intersecting polygon; the corner that turns most */
            double best = -INFINITY;
            for (int t = 0; t < n; t++) {
                double x =
                    mesh_cross(r, r->live[(t + n - 1) % n], r->live[t], r->live[(t + 1) % n]);
                if (x > best) {
                    best = x;
                    at = t;
                }
            }
        }
        int a = r->live[(at + n - 1) % n], b = r->live[at], c = r->live[(at + 1) % n];
        mesh_ring_emit(r, a, b, c);
        mesh_edge_add(e, r->v[a], r->v[c]);
        memmove(r->live + at, r->live + at + 1, (size_t)(n - at - 1) * sizeof *r->live);
        n--;
        cur = at % n;
        /* the two corners beside the ear turn differently now */
        mesh_ring_flat(r, n, (cur + n - 1) % n);
        mesh_ring_flat(r, n, cur);
    }
    mesh_ring_emit(r, r->live[0], r->live[1], r->live[2]);
}

/* A fan for a polygon above MESH_POLY_EAR corners (see the top). */
static void mesh_ring_big(mesh_ring *r, mesh_edges *e)
{
    int tries = r->k < MESH_POLY_FAN_TRIES ? r->k : MESH_POLY_FAN_TRIES;
    int pick = -1;
    for (int strict = 1; strict >= 0 && pick < 0; strict--)
        for (int c = 0; c < tries && pick < 0; c++) {
            int good = 1;
            for (int i = 1; good && i + 1 < r->k; i++) {
                int b = (c + i) % r->k, d = (c + i + 1) % r->k;
                good = mesh_convex(r, c, b, d) && r->v[c] != r->v[b] && r->v[b] != r->v[d] &&
                       r->v[c] != r->v[d];
                if (good && strict && i + 1 < r->k - 1)
                    good = !mesh_edge_has(e, r->v[c], r->v[d]);
            }
            if (good)
                pick = c;
        }
    mesh_ring_fan(r, pick < 0 ? 0 : pick);
    /* its diagonals: from the fan's corner to the second corner of every
     * triangle but the first */
    for (int t = 1; t < r->nout; t++)
        mesh_edge_add(e, r->v[r->out[0]], r->v[r->out[3 * t + 1]]);
}

/* ---- all pending polygons ------------------------------------------------------ */

int mesh_poly_finish(mesh_parser *p)
{
    mesh *m = p->m;
    if (p->npend == 0)
        return 0;
    int64_t corners = m->poly_off[m->npolys], kmax = 3;
    for (int64_t q = 0; q < p->npend; q++) {
        int64_t f = p->pend_poly[q], k = m->poly_off[f + 1] - m->poly_off[f];
        if (k > kmax)
            kmax = k;
    }
    /* every polygon edge (at most one per corner, about half that on a
     * closed mesh, whose edges have two faces) and diagonal (k - 3 per
     * pending polygon): the table at most three quarters full, 8 bytes a
     * slot */
    size_t cap = 64, most = (size_t)(corners + p->ntn - 3 * p->npend);
    while (cap < most + most / 3)
        cap *= 2;
    mesh_edges e = {calloc(cap, sizeof(uint64_t)), cap - 1};
    mesh_ring r;
    memset(&r, 0, sizeof r);
    r.u = malloc((size_t)kmax * sizeof *r.u);
    r.w = malloc((size_t)kmax * sizeof *r.w);
    r.live = malloc((size_t)kmax * sizeof *r.live);
    r.flat = malloc((size_t)kmax);
    r.out = malloc(3 * (size_t)kmax * sizeof *r.out);
    int rc = 0;
    if (!e.key || !r.u || !r.w || !r.live || !r.flat || !r.out) {
        rc = mesh_oom(p);
        goto done;
    }
    for (int64_t f = 0; f < m->npolys; f++)
        for (int64_t c = m->poly_off[f]; c < m->poly_off[f + 1]; c++) {
            int64_t next = c + 1 < m->poly_off[f + 1] ? c + 1 : m->poly_off[f];
            if (m->poly_v[c] != m->poly_v[next])
                mesh_edge_add(&e, m->poly_v[c], m->poly_v[next]);
        }
    for (int64_t q = 0; q < p->npend; q++) {
        int64_t f = p->pend_poly[q];
        r.k = (int)(m->poly_off[f + 1] - m->poly_off[f]);
        r.v = m->poly_v + m->poly_off[f];
        if (!mesh_ring_project(&r, m->v))
            mesh_ring_fan(&r, 0); /* no area: keep the fan */
        else if (r.k <= MESH_POLY_EAR)
            mesh_ring_clip(&r, &e);
        else
            mesh_ring_big(&r, &e);
        int64_t t0 = m->poly_off[f] - 2 * f;
        const int32_t *pt = p->pend_t + p->pend_attr[q], *pn = p->pend_n + p->pend_attr[q];
        for (int t = 0; t < r.nout; t++)
            for (int j = 0; j < 3; j++) {
                int c = r.out[3 * t + j];
                m->tri[3 * (t0 + t) + j] = r.v[c];
                if (m->tri_uv)
                    m->tri_uv[3 * (t0 + t) + j] = pt[c];
                if (m->tri_n)
                    m->tri_n[3 * (t0 + t) + j] = pn[c];
            }
    }
done:
    free(e.key);
    free(r.u);
    free(r.w);
    free(r.live);
    free(r.flat);
    free(r.out);
    mesh_poly_free(p);
    return rc;
}

void mesh_poly_free(mesh_parser *p)
{
    free(p->pend_poly);
    free(p->pend_attr);
    free(p->pend_t);
    free(p->pend_n);
    p->pend_poly = p->pend_attr = NULL;
    p->pend_t = p->pend_n = NULL;
    p->npend = p->pendcap = p->ntn = p->tncap2 = 0;
}
