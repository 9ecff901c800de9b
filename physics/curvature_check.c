/*
 * curvature_check.c: what the geometry itself says about curvature, to
 * check the estimators against (see curvature.h):
 *
 *   - topology, from the faces as the file gave them (a polygon is one
 *     face and its edges are its sides, whatever its triangulation): the
 *     edges at each vertex (an edge {i, j} once), the faces of each edge,
 *     boundary edges (one face), non-manifold edges (three or more), the
 *     fans of each vertex (its faces joined across interior edges: one for
 *     a manifold vertex, more where sheets touch at a point), the Euler
 *     characteristic chi = V - E + F over the vertices faces use and the
 *     surface's, with each fan a vertex. A proper triangulation of the
 *     polygons (physics/mesh_poly.c) has the same chi, fans and boundary,
 *     so the angle defect over its triangles still meets it;
 *   - boundary vertices: on a boundary edge. The estimators' 1-ring there
 *     is one-sided (only the faces that exist), so the value is flagged;
 *   - the angle defect (discrete Gauss curvature, Descartes / Meyer et al.
 *     2002): d_i = 2 pi per closed fan + pi per open fan (a boundary's
 *     half disk) - the sum of the corner angles at i. On a mesh with
 *     manifold edges sum_i d_i = 2 pi chi_surface exactly (discrete
 *     Gauss-Bonnet: each face's angles sum to pi, 2E = 3F + E_b, and an
 *     open fan has two boundary edges), so it checks the topology the
 *     estimators were given; d_i / A_i (A_i Meyer et al.'s mixed area,
 *     which for an obtuse triangle gives the obtuse corner half its area
 *     and the others a quarter) is a per-vertex K whose integral is exact
 *     by construction;
 *   - the estimator's integral sum_i K_i A_i on a closed mesh, against the
 *     same 2 pi chi: how far the least-squares K is from Gauss-Bonnet.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "curvature.h"

/* Union-find root over the incident faces of one vertex (path halving). */
static int32_t curv_root(int32_t *up, int32_t x)
{
    while (up[x] != x)
        x = up[x] = up[up[x]];
    return x;
}

/* The faces the topology counts, as rings of vertices: the polygons as
 * the file gave them (m->poly_off), or the triangles when every face was
 * one. A face that repeats a vertex is no face of the surface; a polygon
 * that does counts by its triangles that do not (the angle defect sees
 * those triangles, and the two must agree). */
typedef struct curv_faces {
    int64_t n;
    int64_t *off; /* n + 1 */
    int32_t *v;
} curv_faces;

static int curv_ring_simple(const int32_t *r, int64_t k)
{
    for (int64_t a = 0; a < k; a++)
        for (int64_t b = a + 1; b < k; b++)
            if (r[a] == r[b])
                return 0;
    return 1;
}

static int curv_faces_build(const mesh *m, curv_faces *F)
{
    memset(F, 0, sizeof *F);
    int64_t np = m->poly_off ? m->npolys : m->nfaces;
    /* two passes: count, then fill */
    for (int pass = 0; pass < 2; pass++) {
        int64_t nf = 0, nc = 0;
        for (int64_t p = 0; p < np; p++) {
            int64_t k = m->poly_off ? m->poly_off[p + 1] - m->poly_off[p] : 3;
            const int32_t *r = m->poly_off ? m->poly_v + m->poly_off[p] : m->tri + 3 * p;
            int64_t t0 = m->poly_off ? m->poly_off[p] - 2 * p : p, nt = k - 2;
            if (curv_ring_simple(r, k)) {
                if (pass) {
                    memcpy(F->v + nc, r, (size_t)k * sizeof *r);
                    F->off[nf + 1] = nc + k;
                }
                nf++, nc += k;
                continue;
            }
            for (int64_t t = t0; t < t0 + nt; t++) {
                const int32_t *tr = m->tri + 3 * t;
                if (!curv_ring_simple(tr, 3))
                    continue;
                if (pass) {
                    memcpy(F->v + nc, tr, 3 * sizeof *tr);
                    F->off[nf + 1] = nc + 3;
                }
                nf++, nc += 3;
            }
        }
        if (!pass) {
            F->n = nf;
            F->off = malloc((size_t)(nf + 1) * sizeof *F->off);
            F->v = malloc((size_t)(nc ? nc : 1) * sizeof *F->v);
            if (!F->off || !F->v)
                return -1;
            F->off[0] = 0;
        }
    }
    return 0;
}

int curv_topology_build(const mesh *m, unsigned char *flag, double *base, curv_topology *t,
                        cls_error *err)
{
    memset(t, 0, sizeof *t);
    int64_t nv = m->nverts;
    memset(flag, 0, (size_t)nv);
    curv_faces F;
    /* corners by vertex (CSR): the face of each and its place in the ring */
    int64_t *vptr = NULL;
    int64_t *vface = NULL;
    int32_t *cnt = NULL, *first = NULL, *up = NULL, *touched = NULL;
    int rc = CLS_OK;
    if (curv_faces_build(m, &F) || !(vptr = calloc((size_t)nv + 1, sizeof *vptr)) ||
        !(vface = malloc((size_t)(F.off[F.n] ? F.off[F.n] : 1) * sizeof *vface)) ||
        !(cnt = calloc((size_t)(nv ? nv : 1), sizeof *cnt)) ||
        !(first = malloc((size_t)(nv ? nv : 1) * sizeof *first))) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the mesh topology");
        goto done;
    }
    for (int64_t c = 0; c < F.off[F.n]; c++)
        vptr[F.v[c] + 1]++;
    int64_t maxdeg = 0;
    for (int64_t i = 0; i < nv; i++) {
        maxdeg = vptr[i + 1] > maxdeg ? vptr[i + 1] : maxdeg;
        vptr[i + 1] += vptr[i];
    }
    for (int64_t f = 0; f < F.n; f++)
        for (int64_t c = F.off[f]; c < F.off[f + 1]; c++)
            vface[vptr[F.v[c]] + cnt[F.v[c]]++] = c; /* the corner; its face found below */
    memset(cnt, 0, (size_t)(nv ? nv : 1) * sizeof *cnt);
    up = malloc((size_t)(maxdeg ? maxdeg : 1) * sizeof *up);
    touched = malloc((size_t)(2 * maxdeg + 1) * sizeof *touched);
    if (!up || !touched) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the mesh topology");
        goto done;
    }
    /* cnt[j]: faces on edge {i, j}, over i's corners (reset per vertex);
     * first[j]: the first of them, to join the two faces of an interior
     * edge into one fan */
    for (int64_t i = 0; i < nv; i++) {
        int64_t c0 = vptr[i], c1 = vptr[i + 1];
        base[i] = 0.0;
        if (c0 == c1)
            continue;
        int32_t ntouched = 0;
        for (int64_t q = c0; q < c1; q++) {
            int64_t c = vface[q];
            /* the face of corner c: the last offset not above it */
            int64_t lo = 0, hi = F.n;
            while (hi - lo > 1) {
                int64_t mid = (lo + hi) / 2;
                if (F.off[mid] <= c)
                    lo = mid;
                else
                    hi = mid;
            }
            int64_t k = F.off[lo + 1] - F.off[lo], pos = c - F.off[lo];
            int32_t nb[2] = {F.v[F.off[lo] + (pos + k - 1) % k], F.v[F.off[lo] + (pos + 1) % k]};
            int32_t local = (int32_t)(q - c0);
            up[local] = local;
            for (int s = 0; s < 2; s++) {
                int32_t j = nb[s];
                if (cnt[j]++ == 0) {
                    first[j] = local;
                    touched[ntouched++] = j;
                } else if (cnt[j] == 2) { /* join the two faces of the edge */
                    up[curv_root(up, local)] = curv_root(up, first[j]);
                }
            }
        }
        t->vertices++;
        int32_t bedges = 0;
        for (int32_t q = 0; q < ntouched; q++) {
            int32_t j = touched[q];
            int32_t c = cnt[j];
            cnt[j] = 0;
            if (c == 1)
                bedges++;
            if (c == 1 || c > 2)
                flag[i] |= c == 1 ? CURV_FLAG_BOUNDARY : CURV_FLAG_NONMANIFOLD;
            if (j < i)
                continue; /* counted at j */
            t->edges++;
            if (c == 1)
                t->boundary_edges++;
            else if (c > 2)
                t->nonmanifold_edges++;
        }
        /* fans: the incident faces joined across interior edges; an open
         * fan (a half disk) has two boundary edges, a closed one none */
        int32_t fans = 0;
        for (int32_t q = 0; q < (int32_t)(c1 - c0); q++)
            fans += curv_root(up, q) == q;
        int32_t open = bedges / 2, closed = fans - open > 0 ? fans - open : 0;
        base[i] = 2.0 * M_PI * closed + M_PI * open;
        t->surface_vertices += fans;
        if (fans > 1)
            t->nonmanifold_vertices++;
    }
    for (int64_t i = 0; i < nv; i++)
        if (flag[i] & CURV_FLAG_BOUNDARY)
            t->boundary_vertices++;
    t->faces = F.n;
    t->euler = t->vertices - t->edges + t->faces;
    t->surface_euler = t->surface_vertices - t->edges + t->faces;
    t->closed = t->boundary_edges == 0 && t->nonmanifold_edges == 0 && t->faces > 0;
done:
    free(F.off);
    free(F.v);
    free(vptr);
    free(vface);
    free(cnt);
    free(first);
    free(up);
    free(touched);
    return rc;
}

/* Angle at p between p->a and p->b, in [0, pi]: atan2(|u x v|, u . v), the
 * form that stays accurate for angles near 0 and pi. */
static double curv_angle(const double *p, const double *a, const double *b)
{
    double u[3] = {a[0] - p[0], a[1] - p[1], a[2] - p[2]};
    double v[3] = {b[0] - p[0], b[1] - p[1], b[2] - p[2]};
    double c[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
    return atan2(sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]),
                 u[0] * v[0] + u[1] * v[1] + u[2] * v[2]);
}

/* Meyer, Desbrun, Schroeder and Barr's mixed area of a triangle's corners
 * (2003, "Discrete differential-geometry operators for triangulated
 * 2-manifolds", fig. 4), what K = angle defect / A_mixed is defined with:
 * the Voronoi (circumcentric) split when no angle is obtuse, else half
 * the area to the obtuse corner and a quarter to each other one. e_j is
 * the edge opposite corner j. (The face estimator weighs with the
 * thesis's rule instead, curv_corner_areas: the same for non-obtuse
 * triangles, not for obtuse ones.) */
static void curv_mixed_area(const double e[3][3], double tarea, double a[3])
{
    double l[3], bw[3];
    for (int j = 0; j < 3; j++)
        l[j] = e[j][0] * e[j][0] + e[j][1] * e[j][1] + e[j][2] * e[j][2];
    /* bw_j < 0: the angle at corner j is obtuse (l_j > l_k + l_m) */
    for (int j = 0; j < 3; j++)
        bw[j] = l[j] * (l[(j + 1) % 3] + l[(j + 2) % 3] - l[j]);
    for (int j = 0; j < 3; j++)
        if (bw[j] < 0.0) {
            for (int k = 0; k < 3; k++)
                a[k] = k == j ? 0.5 * tarea : 0.25 * tarea;
            return;
        }
    /* the circumcentre's barycentric weights are the bw_j: corner j's
     * Voronoi part is half the area times the two other weights */
    double sc = 0.5 * tarea / (bw[0] + bw[1] + bw[2]);
    for (int j = 0; j < 3; j++)
        a[j] = sc * (bw[(j + 1) % 3] + bw[(j + 2) % 3]);
}

void curv_angle_defect(const mesh *m, const unsigned char *flag, const double *base, double *defect,
                       double *area)
{
    int64_t nv = m->nverts;
    for (int64_t i = 0; i < nv; i++) {
        defect[i] = base[i];
        area[i] = 0.0;
    }
    for (int64_t f = 0; f < m->nfaces; f++) {
        const int32_t *t = m->tri + 3 * f;
        if (t[0] == t[1] || t[1] == t[2] || t[0] == t[2])
            continue;
        const double *p[3] = {m->v + 3 * (int64_t)t[0], m->v + 3 * (int64_t)t[1],
                              m->v + 3 * (int64_t)t[2]};
        /* two angles measured, the third pi minus them: each face's angles
         * then sum to pi in every case, a sliver or a repeated point
         * included, which is what makes the total exact */
        double a0 = curv_angle(p[0], p[1], p[2]), a1 = curv_angle(p[1], p[2], p[0]);
        double a2 = M_PI - a0 - a1;
        defect[t[0]] -= a0;
        defect[t[1]] -= a1;
        defect[t[2]] -= a2;
        double e[3][3], cr[3];
        for (int j = 0; j < 3; j++)
            for (int c = 0; c < 3; c++)
                e[j][c] = p[(j + 2) % 3][c] - p[(j + 1) % 3][c];
        cr[0] = e[0][1] * e[1][2] - e[0][2] * e[1][1];
        cr[1] = e[0][2] * e[1][0] - e[0][0] * e[1][2];
        cr[2] = e[0][0] * e[1][1] - e[0][1] * e[1][0];
        double tarea = 0.5 * sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]);
        if (!(tarea > 0.0))
            continue;
        double a[3];
        curv_mixed_area((const double(*)[3])e, tarea, a);
        for (int j = 0; j < 3; j++)
            area[t[j]] += a[j];
    }
    (void)flag;
}

void curv_flag_used(const curv_adjacency *adj, unsigned char *flag)
{
    for (int64_t i = 0; i < adj->nverts; i++)
        if (adj->vf_ptr[i + 1] > adj->vf_ptr[i])
            flag[i] |= CURV_FLAG_USED;
}

json_t *curv_gauss_bonnet(const mesh *m, const curv_topology *t, const unsigned char *flag,
                          const double *defect, const double *area, const curv_result *res,
                          int *holds)
{
    double sd = 0.0, sk = 0.0, sa = 0.0;
    for (int64_t i = 0; i < m->nverts; i++) {
        if (!(flag[i] & CURV_FLAG_USED))
            continue;
        sd += defect[i];
        sa += area[i];
        if (res)
            sk += res->K[i] * area[i];
    }
    /* chi of the surface: a vertex where separate fans meet (a pinch)
     * counts once per fan */
    double chi = (double)t->surface_euler;
    double expect = 2.0 * M_PI * chi;
    /* relative to 2 pi max(|chi|, 1): a torus (chi = 0) gets the scale of
     * one sphere's total */
    double scale = 2.0 * M_PI * (chi != 0.0 ? fabs(chi) : 1.0);
    double rel_d = fabs(sd - expect) / scale;
    *holds = t->nonmanifold_edges == 0 && rel_d <= 1e-6;
    json_t *o =
        json_pack("{s:I, s:f, s:f, s:f, s:b, s:f}", "euler_characteristic",
                  (json_int_t)t->surface_euler, "expected_over_2pi", chi, "angle_defect_over_2pi",
                  sd / (2.0 * M_PI), "angle_defect_rel_error", rel_d, "holds", *holds, "area", sa);
    if (res && t->closed) {
        json_object_set_new(o, "estimator_over_2pi", json_real(sk / (2.0 * M_PI)));
        json_object_set_new(o, "estimator_rel_error", json_real(fabs(sk - expect) / scale));
    } else {
        /* with a boundary the estimator's integral lacks the boundary's
         * turning term, so it has no exact value to meet */
        json_object_set_new(o, "estimator_over_2pi", json_null());
        json_object_set_new(o, "estimator_rel_error", json_null());
    }
    return o;
}

json_t *curv_topology_json(const curv_topology *t)
{
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I}", "vertices", (json_int_t)t->vertices, "edges",
                          (json_int_t)t->edges, "faces", (json_int_t)t->faces,
                          "euler_characteristic", (json_int_t)t->euler,
                          "surface_euler_characteristic", (json_int_t)t->surface_euler);
    json_object_set_new(o, "boundary_edges", json_integer((json_int_t)t->boundary_edges));
    json_object_set_new(o, "boundary_vertices", json_integer((json_int_t)t->boundary_vertices));
    json_object_set_new(o, "nonmanifold_edges", json_integer((json_int_t)t->nonmanifold_edges));
    json_object_set_new(o, "nonmanifold_vertices",
                        json_integer((json_int_t)t->nonmanifold_vertices));
    json_object_set_new(o, "closed", json_boolean(t->closed));
    return o;
}
