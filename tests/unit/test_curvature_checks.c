/*
 * test_curvature_checks.c: curvature checked from the geometry itself
 * (physics/curvature_check.c) and the estimators' accuracy where the
 * triangles are irregular, the kind of input a scan gives.
 *
 *  - topology: Euler characteristic of an icosphere (2), a torus (0), a
 *    saddle (1, its 4 (k - 1) boundary vertices flagged); two tetrahedra
 *    sharing a vertex (a pinch: one non-manifold vertex, chi 3 as a mesh,
 *    4 as a surface); an edge with three triangles (non-manifold);
 *  - discrete Gauss-Bonnet through the angle defect: sum d_i = 2 pi chi to
 *    1e-6 relative on every closed mesh (icosphere, torus, irregular
 *    sphere, the shared spot, fandisk, and the pinched cow) and on the
 *    meshes with a boundary (saddle, bunny, teapot); not claimed with a
 *    non-manifold edge; the run's JSON reports it;
 *  - accuracy against analytic values, stated bounds (docs/physics-
 *    curvature-deform.md):
 *      regular torus: rms error of H and K falls as h^2 (ratio above 3.5
 *        per halving of h);
 *      irregular sphere (vertices slid by up to 0.3 of an edge): exact to
 *        rounding (Max's normal weights are exact on a sphere) more than
 *        two rings from a triangle the slide folded over, within 5% (H)
 *        and 10% (K) rms over all vertices;
 *      irregular torus (the same slide): rms relative error of H below 8%
 *        and of K below 16%; irregular saddle: H below 25% (H is small
 *        there: the rms of H is 0.2) and K below 12%; neither shrinks
 *        with refinement (a 1-ring estimator's limit on irregular
 *        sampling);
 *      the saddle's boundary vertices (one-sided 1-ring): flagged, their
 *        error an order of magnitude above the interior's;
 *  - the device against the CPU double reference on the irregular meshes
 *    (away from folded triangles, where both estimates are meaningless and
 *    ill-conditioned);
 *  - closed polygon meshes (quads with valence-2 vertices, a pillow, a
 *    prism on an L): topology from the polygons, chi 2, Gauss-Bonnet;
 *  - K_defect's area is Meyer et al.'s mixed area (checked against the
 *    paper's cotangent form, written here), the face estimator's corner
 *    areas the thesis's bisector split of obtuse triangles;
 *  - a mesh beyond the float range is refused as input, nothing written.
 */
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "physics/curvature.h"

static const char *data_dir = "../shared/data";

typedef struct geo {
    curv_adjacency adj;
    curv_topology t;
    unsigned char *flag;
    double *base, *defect, *area;
} geo;

static int geo_build(const mesh *m, geo *g)
{
    cls_error err;
    memset(g, 0, sizeof *g);
    size_t n = (size_t)(m->nverts ? m->nverts : 1);
    g->flag = malloc(n);
    g->base = malloc(n * sizeof(double));
    g->defect = malloc(n * sizeof(double));
    g->area = malloc(n * sizeof(double));
    int rc = curv_adjacency_build(m, &g->adj, &err);
    if (!rc)
        rc = curv_topology_build(m, g->flag, g->base, &g->t, &err);
    if (!rc) {
        curv_flag_used(&g->adj, g->flag);
        curv_angle_defect(m, g->flag, g->base, g->defect, g->area);
    }
    CHECK_MSG(rc == CLS_OK, "%s", err.msg);
    return rc;
}

static void geo_free(geo *g)
{
    curv_adjacency_free(&g->adj);
    free(g->flag);
    free(g->base);
    free(g->defect);
    free(g->area);
}

/* The Gauss-Bonnet check of m; returns its relative error. */
static double gauss_bonnet(const mesh *m, const char *name, int64_t want_chi, int want_holds)
{
    geo g;
    if (geo_build(m, &g))
        return INFINITY;
    int holds = 0;
    json_t *o = curv_gauss_bonnet(m, &g.t, g.flag, g.defect, g.area, NULL, &holds);
    double rel = json_real_value(json_object_get(o, "angle_defect_rel_error"));
    printf("%-24s V %lld E %lld F %lld chi %lld (surface %lld), boundary %lld, non-manifold edges "
           "%lld vertices %lld: angle defect / 2 pi = %.15g, relative error %.2e\n",
           name, (long long)g.t.vertices, (long long)g.t.edges, (long long)g.t.faces,
           (long long)g.t.euler, (long long)g.t.surface_euler, (long long)g.t.boundary_vertices,
           (long long)g.t.nonmanifold_edges, (long long)g.t.nonmanifold_vertices,
           json_real_value(json_object_get(o, "angle_defect_over_2pi")), rel);
    if (want_chi != INT64_MIN)
        CHECK_MSG(g.t.surface_euler == want_chi, "%s: chi %lld, expected %lld", name,
                  (long long)g.t.surface_euler, (long long)want_chi);
    CHECK_MSG(holds == want_holds, "%s: holds %d", name, holds);
    if (want_holds)
        CHECK_MSG(rel < 1e-6, "%s: %g", name, rel);
    json_decref(o);
    geo_free(&g);
    return rel;
}

static mesh mesh_of(int nv, const double *v, int nf, const int32_t *t)
{
    mesh m;
    mesh_init(&m);
    m.nverts = nv;
    m.nfaces = nf;
    m.v = malloc((size_t)nv * 3 * sizeof(double));
    m.tri = malloc((size_t)nf * 3 * sizeof(int32_t));
    memcpy(m.v, v, (size_t)nv * 3 * sizeof(double));
    memcpy(m.tri, t, (size_t)nf * 3 * sizeof(int32_t));
    return m;
}

/* The torus with every vertex slid in its parameters by up to j of the
 * spacing (still exactly on the torus). */
static void torus_slide(mesh *m, int nu, int nv, double R, double r, double j)
{
    for (int i = 0; i < nu; i++)
        for (int k = 0; k < nv; k++) {
            double a = ((double)(check_rand() >> 11) / 9007199254740992.0 - 0.5) * 2 * j;
            double b = ((double)(check_rand() >> 11) / 9007199254740992.0 - 0.5) * 2 * j;
            double u = 2 * M_PI * (i + a) / nu, v = 2 * M_PI * (k + b) / nv;
            double *p = m->v + 3 * ((int64_t)i * nv + k);
            p[0] = (R + r * cos(v)) * cos(u);
            p[1] = (R + r * cos(v)) * sin(u);
            p[2] = r * sin(v);
        }
}

static void test_topology_and_gauss_bonnet(void)
{
    cls_error err;
    mesh m;
    CHECK(curv_mesh_icosphere(4, 1.0, &m, &err) == CLS_OK);
    gauss_bonnet(&m, "icosphere level 4", 2, 1);
    mesh_free(&m);
    CHECK(curv_mesh_torus(48, 24, 2.0, 0.5, &m, &err) == CLS_OK);
    gauss_bonnet(&m, "torus 48 x 24", 0, 1);
    torus_slide(&m, 48, 24, 2.0, 0.5, 0.3);
    gauss_bonnet(&m, "irregular torus", 0, 1);
    mesh_free(&m);
    CHECK(curv_mesh_sphere_irregular(4, 3.0, 0.3, check_rand(), &m, &err) == CLS_OK);
    gauss_bonnet(&m, "irregular sphere", 2, 1);
    mesh_free(&m);
    CHECK(curv_mesh_saddle(17, 1.0, &m, &err) == CLS_OK);
    {
        geo g;
        if (!geo_build(&m, &g)) {
            CHECK(g.t.boundary_vertices == 4 * 16 && g.t.boundary_edges == 4 * 16);
            int64_t k = 17, ok = 1;
            for (int64_t i = 0; i < m.nverts; i++) {
                int on = i % k == 0 || i % k == k - 1 || i / k == 0 || i / k == k - 1;
                ok &= !!(g.flag[i] & CURV_FLAG_BOUNDARY) == on;
            }
            CHECK_MSG(ok, "saddle: the boundary flags are not the grid's edge");
            geo_free(&g);
        }
    }
    gauss_bonnet(&m, "saddle 17 x 17", 1, 1);
    mesh_free(&m);

    /* two tetrahedra sharing vertex 0: a pinch */
    static const double v2[21] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, -1, 0, 0, 0, -1, 0, 0, 0, -1};
    static const int32_t t2[24] = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3,
                                   0, 4, 5, 0, 5, 6, 0, 6, 4, 4, 6, 5};
    m = mesh_of(7, v2, 8, t2);
    gauss_bonnet(&m, "two tetrahedra, a pinch", 4, 1);
    {
        geo g;
        if (!geo_build(&m, &g)) {
            CHECK(g.t.euler == 3 && g.t.nonmanifold_vertices == 1 && g.t.closed);
            geo_free(&g);
        }
    }
    mesh_free(&m);
    /* three triangles on the edge 0-1: non-manifold, no claim */
    static const double v3[15] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, -1, 0, 0, 0, 1};
    static const int32_t t3[9] = {0, 1, 2, 1, 0, 3, 0, 1, 4};
    m = mesh_of(5, v3, 3, t3);
    gauss_bonnet(&m, "three faces on an edge", INT64_MIN, 0);
    mesh_free(&m);

    /* the shared meshes: scanned (bunny), modelled (spot, cow, teapot), CAD
     * (fandisk); the cow has a pinched vertex, the teapot open seams */
    const char *names[5] = {"spot.obj", "fandisk.obj", "cow.obj", "stanford-bunny.obj",
                            "teapot.obj"};
    const int64_t chi[5] = {2, 2, 2, -3, 13};
    for (int q = 0; q < 5; q++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/meshes/%s", data_dir, names[q]);
        if (stat(path, &st) != 0) {
            printf("(no %s)\n", path);
            continue;
        }
        CHECK(mesh_read(path, &m, &err) == CLS_OK);
        gauss_bonnet(&m, names[q], chi[q], 1);
        mesh_free(&m);
    }
}

/* Issue 26 item 4: closed meshes of polygons, topology counted from the
 * polygons as given (faces and edges of the file, not of the
 * triangulation) and Gauss-Bonnet meeting chi = 2. The fan from each
 * polygon's first corner made the same triangle twice around a vertex
 * shared by only two quads: chi 4, 2 non-manifold edges, relative error
 * 0.5 on the cube below. */
static const char *cube2_obj =
    "v 0 0 0\nv 0 0 1\nv 0 1 0\nv 0 1 1\nv 1 0 0\nv 1 0 1\nv 1 1 0\nv 1 1 1\n"
    "v 0.5 -0.2 0.5\nv 0.5 1.2 0.5\n"
    "f 1 2 4 3\nf 5 7 8 6\nf 1 3 7 5\nf 2 6 8 4\n"
    "f 1 5 6 9\nf 6 2 1 9\nf 3 4 8 10\nf 8 7 3 10\n";

static void polygon_case(const char *text, const char *name, int64_t V, int64_t E, int64_t F)
{
    mesh m;
    cls_error err;
    CHECK_MSG(mesh_read_buf(text, strlen(text), name, &m, &err) == CLS_OK, "%s: %s", name, err.msg);
    gauss_bonnet(&m, name, 2, 1);
    geo g;
    if (!geo_build(&m, &g)) {
        CHECK_MSG(g.t.vertices == V && g.t.edges == E && g.t.faces == F && g.t.closed &&
                      g.t.nonmanifold_edges == 0 && g.t.nonmanifold_vertices == 0,
                  "%s: V %lld E %lld F %lld (want %lld %lld %lld), non-manifold edges %lld", name,
                  (long long)g.t.vertices, (long long)g.t.edges, (long long)g.t.faces, (long long)V,
                  (long long)E, (long long)F, (long long)g.t.nonmanifold_edges);
        geo_free(&g);
    }
    mesh_free(&m);
}

static void test_polygon_topology(void)
{
    /* 6 faces of a cube, two of them split at a valence-2 vertex: 10
     * vertices, 16 edges, 8 quads */
    polygon_case(cube2_obj, "cube, two valence-2 vertices", 10, 16, 8);
    /* a pillow: two quads on the same four corners of a tetrahedron, the
     * second written from its third corner (its fan from there retraced
     * the first's diagonal); every vertex has valence 2 */
    polygon_case("v 1 1 1\nv 1 -1 -1\nv -1 1 -1\nv -1 -1 1\nf 1 2 3 4\nf 3 2 1 4\n",
                 "pillow of two quads", 4, 4, 2);
    /* a prism on an L (non-convex hexagons) written from a corner that
     * does not see the whole L, six side quads; as OFF */
    polygon_case("OFF\n12 8 0\n"
                 "2 1 0\n1 1 0\n1 2 0\n0 2 0\n0 0 0\n2 0 0\n"
                 "2 1 1\n1 1 1\n1 2 1\n0 2 1\n0 0 1\n2 0 1\n"
                 "6 5 4 3 2 1 0\n6 6 7 8 9 10 11\n"
                 "4 0 1 7 6\n4 1 2 8 7\n4 2 3 9 8\n4 3 4 10 9\n4 4 5 11 10\n4 5 0 6 11\n",
                 "L prism", 12, 18, 8);
    /* through the run: its JSON reports the polygons' topology */
    char dir[] = "/tmp/test_curv_poly_XXXXXX", path[300];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/cube2.obj", dir);
    FILE *f = fopen(path, "w");
    fputs(cube2_obj, f);
    fclose(f);
    curv_run_opts o = {.mesh_path = path, .est = CURV_FACE, .device = "auto", .color_range = NAN};
    json_t *js = NULL;
    cls_error err;
    int rc = curv_run_local(&o, &js, &err);
    CHECK_MSG(rc == CLS_OK, "%s", err.msg);
    json_t *gb = json_object_get(js, "gauss_bonnet"), *t = json_object_get(js, "topology");
    CHECK(gb && t && json_is_true(json_object_get(gb, "holds")));
    CHECK(json_integer_value(json_object_get(t, "euler_characteristic")) == 2 &&
          json_integer_value(json_object_get(t, "faces")) == 8 &&
          json_integer_value(json_object_get(t, "nonmanifold_edges")) == 0);
    CHECK(json_real_value(json_object_get(gb, "angle_defect_rel_error")) < 1e-12);
    json_decref(js);
    remove(path);
    rmdir(dir);
}

/* The angle at p of the triangle p, q, r. */
static double angle_at(const double *p, const double *q, const double *r)
{
    double u[3] = {q[0] - p[0], q[1] - p[1], q[2] - p[2]},
           v[3] = {r[0] - p[0], r[1] - p[1], r[2] - p[2]};
    double c[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
    return atan2(sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]),
                 u[0] * v[0] + u[1] * v[1] + u[2] * v[2]);
}

static double dist2(const double *p, const double *q)
{
    return (p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) +
           (p[2] - q[2]) * (p[2] - q[2]);
}

/* Issue 26 item 7: K_defect = angle defect / A_mixed, A_mixed Meyer,
 * Desbrun, Schroeder and Barr's (2003, fig. 4): per triangle, the
 * Voronoi area 1/8 (|PR|^2 cot Q + |PQ|^2 cot R) of corner P when no
 * angle is obtuse, else area/2 at the obtuse corner and area/4 at the
 * others; written here from the paper, with angles, apart from the code.
 * The code used Rusinkiewicz's obtuse rule (17-33% apart at corners of
 * obtuse triangles). The face estimator's weights are the thesis's
 * (Camillo 2018, Pseudocode 3.2 and Appendix B, after Rusinkiewicz): for
 * an obtuse triangle each acute corner gets the right triangle that the
 * perpendicular bisector of its edge to the obtuse corner cuts off, the
 * obtuse corner the rest; checked here against that geometry. */
static void test_mixed_areas(void)
{
    cls_error err;
    mesh m;
    /* an irregular sphere (many obtuse triangles) and a fan of obtuse ones */
    CHECK(curv_mesh_sphere_irregular(2, 1.0, 0.45, check_rand(), &m, &err) == CLS_OK);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            static const double v[18] = {0,  0,   0.1, 3,    0,    0, 0.5, 0.6,  0,
                                         -2, 0.2, 0,   -0.3, -0.5, 0, 1.5, -0.4, 0};
            static const int32_t t[15] = {0, 1, 2, 0, 2, 3, 0, 3, 4, 0, 4, 5, 0, 5, 1};
            m = mesh_of(6, v, 5, t);
        }
        geo g;
        if (geo_build(&m, &g))
            break;
        double *want = calloc((size_t)m.nverts, sizeof *want);
        int obtuse = 0;
        for (int64_t f = 0; f < m.nfaces; f++) {
            const int32_t *tr = m.tri + 3 * f;
            const double *p[3] = {m.v + 3 * (int64_t)tr[0], m.v + 3 * (int64_t)tr[1],
                                  m.v + 3 * (int64_t)tr[2]};
            double ang[3], area;
            for (int j = 0; j < 3; j++)
                ang[j] = angle_at(p[j], p[(j + 1) % 3], p[(j + 2) % 3]);
            double u[3] = {p[1][0] - p[0][0], p[1][1] - p[0][1], p[1][2] - p[0][2]};
            double w[3] = {p[2][0] - p[0][0], p[2][1] - p[0][1], p[2][2] - p[0][2]};
            double c[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2],
                           u[0] * w[1] - u[1] * w[0]};
            area = 0.5 * sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
            int ob = -1;
            for (int j = 0; j < 3; j++)
                if (ang[j] > M_PI / 2)
                    ob = j;
            obtuse += ob >= 0;
            for (int j = 0; j < 3; j++) {
                const double *P = p[j], *Q = p[(j + 1) % 3], *R = p[(j + 2) % 3];
                double a = ob < 0 ? (dist2(P, R) / tan(ang[(j + 1) % 3]) +
                                     dist2(P, Q) / tan(ang[(j + 2) % 3])) /
                                        8.0
                           : ob == j ? area / 2
                                     : area / 4;
                want[tr[j]] += a;
            }
        }
        double worst = 0;
        for (int64_t i = 0; i < m.nverts; i++)
            worst = fmax(worst, fabs(g.area[i] - want[i]) / want[i]);
        printf("mixed areas (%s, %d obtuse triangles): largest relative difference from Meyer's "
               "%.2e\n",
               pass ? "obtuse fan" : "irregular sphere", obtuse, worst);
        CHECK_MSG(obtuse > 0 && worst < 1e-12, "A_mixed is not Meyer's: %g apart", worst);
        free(want);
        geo_free(&g);
        mesh_free(&m);
    }
    /* the estimator's corner areas for an obtuse triangle (obtuse at p1):
     * corner 0 gets the right triangle p0, E (the midpoint of p0 p1), G
     * (where the bisector of p0 p1 meets p0 p2), legs |p0 E| and |p0 E|
     * tan(angle at p0); corner 2 likewise; corner 1 the rest */
    const double p[3][3] = {{0, 0, 0}, {1.2, 0.4, 0}, {3, 0, 0}};
    double e[3][3];
    for (int j = 0; j < 3; j++)
        for (int c = 0; c < 3; c++)
            e[j][c] = p[(j + 2) % 3][c] - p[(j + 1) % 3][c];
    double A = 0.5 * 3 * 0.4, a[3];
    curv_corner_areas(e[0], e[1], e[2], A, a);
    double h0 = 0.5 * sqrt(dist2(p[0], p[1])), h2 = 0.5 * sqrt(dist2(p[2], p[1]));
    double w0 = 0.5 * h0 * h0 * tan(angle_at(p[0], p[1], p[2]));
    double w2 = 0.5 * h2 * h2 * tan(angle_at(p[2], p[0], p[1]));
    printf("estimator corner areas (obtuse): %.6f %.6f %.6f; the bisectors' %.6f %.6f %.6f; "
           "Meyer's %.6f %.6f %.6f\n",
           a[0], a[1], a[2], w0, A - w0 - w2, w2, A / 4, A / 2, A / 4);
    CHECK(fabs(a[0] - w0) < 1e-12 && fabs(a[2] - w2) < 1e-12 && fabs(a[1] - (A - w0 - w2)) < 1e-12);
}

/* rms relative errors of H and K against exact values, over the vertices
 * `use` admits (NULL: all); est's CPU reference. */
typedef void (*exact_fn)(const double *p, double *H, double *K);

static double torus_R = 2.0, torus_r = 0.5;
static void exact_torus(const double *p, double *H, double *K)
{
    curv_torus_exact(torus_R, torus_r, p, H, K);
}
static void exact_saddle(const double *p, double *H, double *K)
{
    curv_saddle_exact(p[0], p[1], H, K);
}
static void exact_sphere3(const double *p, double *H, double *K)
{
    (void)p;
    *H = 1.0 / 3.0;
    *K = 1.0 / 9.0;
}

static void rms_error(const mesh *m, curv_estimator est, exact_fn f, const unsigned char *use,
                      double *eH, double *eK)
{
    curv_adjacency adj;
    curv_result res;
    cls_error err;
    CHECK(curv_adjacency_build(m, &adj, &err) == CLS_OK);
    CHECK(curv_result_alloc(&res, m->nverts, &err) == CLS_OK);
    curv_reference(m, &adj, est, &res);
    double sh = 0, sk = 0, nh = 0, nk = 0;
    for (int64_t i = 0; i < m->nverts; i++) {
        if (use && !use[i])
            continue;
        double H, K;
        f(m->v + 3 * i, &H, &K);
        sh += (res.H[i] - H) * (res.H[i] - H);
        sk += (res.K[i] - K) * (res.K[i] - K);
        nh += H * H;
        nk += K * K;
    }
    *eH = sqrt(sh / nh);
    *eK = sqrt(sk / nk);
    curv_result_free(&res);
    curv_adjacency_free(&adj);
}

/* 1 for the vertices more than two rings away from a folded triangle (its
 * normal pointing into the sphere, centred at the origin). */
static unsigned char *far_from_folds(const mesh *m)
{
    unsigned char *bad = calloc((size_t)m->nverts, 1), *use = malloc((size_t)m->nverts);
    for (int64_t f = 0; f < m->nfaces; f++) {
        const int32_t *t = m->tri + 3 * f;
        const double *a = m->v + 3 * (int64_t)t[0], *b = m->v + 3 * (int64_t)t[1],
                     *c = m->v + 3 * (int64_t)t[2];
        double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        double e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                       e1[0] * e2[1] - e1[1] * e2[0]};
        if (n[0] * a[0] + n[1] * a[1] + n[2] * a[2] <= 0)
            bad[t[0]] = bad[t[1]] = bad[t[2]] = 1;
    }
    for (int ring = 0; ring < 2; ring++) { /* grow by one ring */
        unsigned char *next = malloc((size_t)m->nverts);
        memcpy(next, bad, (size_t)m->nverts);
        for (int64_t f = 0; f < m->nfaces; f++) {
            const int32_t *t = m->tri + 3 * f;
            if (bad[t[0]] || bad[t[1]] || bad[t[2]])
                next[t[0]] = next[t[1]] = next[t[2]] = 1;
        }
        free(bad);
        bad = next;
    }
    for (int64_t i = 0; i < m->nverts; i++)
        use[i] = !bad[i];
    free(bad);
    return use;
}

static void test_accuracy(void)
{
    cls_error err;
    mesh m;
    for (int e = 0; e < 2; e++) {
        curv_estimator est = e ? CURV_VERTEX : CURV_FACE;
        const char *en = curv_estimator_name(est);
        double h[3], k[3];
        for (int q = 0; q < 3; q++) {
            int nu = 32 << q, nv = 16 << q;
            CHECK(curv_mesh_torus(nu, nv, 2.0, 0.5, &m, &err) == CLS_OK);
            rms_error(&m, est, exact_torus, NULL, &h[q], &k[q]);
            printf("torus %3d x %2d  %-6s rms relative error H %.3e K %.3e\n", nu, nv, en, h[q],
                   k[q]);
            mesh_free(&m);
        }
        for (int q = 1; q < 3; q++)
            CHECK_MSG(h[q - 1] / h[q] > 3.5 && k[q - 1] / k[q] > 3.5,
                      "%s torus: not second order (%g %g -> %g %g)", en, h[q - 1], k[q - 1], h[q],
                      k[q]);

        CHECK(curv_mesh_sphere_irregular(4, 3.0, 0.3, check_rand(), &m, &err) == CLS_OK);
        double sh, sk;
        /* exact away from folded triangles (the slide folds a few thin
         * ones: their normals point in): every vertex more than two rings
         * from a fold; all vertices within 5% */
        unsigned char *use = far_from_folds(&m);
        int64_t near = 0;
        for (int64_t i = 0; i < m.nverts; i++)
            near += !use[i];
        rms_error(&m, est, exact_sphere3, use, &sh, &sk);
        printf("irregular sphere %-6s rms relative error H %.3e K %.3e (%lld of %lld vertices "
               "near a folded triangle left out)",
               en, sh, sk, (long long)near, (long long)m.nverts);
        CHECK(sh < 1e-10 && sk < 1e-10);
        rms_error(&m, est, exact_sphere3, NULL, &sh, &sk);
        printf("; all: H %.3e K %.3e\n", sh, sk);
        CHECK(sh < 0.05 && sk < 0.1);
        free(use);
        mesh_free(&m);

        for (int q = 0; q < 2; q++) {
            int nu = 64 << q, nv = 32 << q;
            CHECK(curv_mesh_torus(nu, nv, 2.0, 0.5, &m, &err) == CLS_OK);
            torus_slide(&m, nu, nv, 2.0, 0.5, 0.3);
            rms_error(&m, est, exact_torus, NULL, &sh, &sk);
            printf("irregular torus %3d x %2d %-6s rms relative error H %.3e K %.3e\n", nu, nv, en,
                   sh, sk);
            CHECK_MSG(sh < 0.1 && sk < 0.16, "%s irregular torus: %g %g", en, sh, sk);
            mesh_free(&m);
        }

        /* the saddle, vertices slid in x and y by up to 0.3 of the spacing
         * (the boundary stays), z on the surface; then its boundary */
        int ks = 64;
        CHECK(curv_mesh_saddle(ks, 1.0, &m, &err) == CLS_OK);
        double hs = 2.0 / (ks - 1);
        unsigned char *inner = calloc((size_t)m.nverts, 1), *edge = calloc((size_t)m.nverts, 1);
        for (int64_t i = 0; i < m.nverts; i++) {
            int ix = (int)(i % ks), iy = (int)(i / ks);
            inner[i] = ix >= 2 && iy >= 2 && ix < ks - 2 && iy < ks - 2;
            edge[i] = ix == 0 || iy == 0 || ix == ks - 1 || iy == ks - 1;
        }
        double rh, rk, bh, bk;
        rms_error(&m, est, exact_saddle, inner, &rh, &rk);
        rms_error(&m, est, exact_saddle, edge, &bh, &bk);
        printf("saddle %-6s interior rms relative error H %.3e K %.3e; boundary (one-sided) H "
               "%.3e K %.3e\n",
               en, rh, rk, bh, bk);
        CHECK(bk > 10 * rk);
        for (int64_t i = 0; i < m.nverts; i++) {
            if (edge[i])
                continue;
            double *p = m.v + 3 * i;
            p[0] += ((double)(check_rand() >> 11) / 9007199254740992.0 - 0.5) * 0.6 * hs;
            p[1] += ((double)(check_rand() >> 11) / 9007199254740992.0 - 0.5) * 0.6 * hs;
            p[2] = p[0] * p[0] - p[1] * p[1];
        }
        rms_error(&m, est, exact_saddle, inner, &rh, &rk);
        printf("irregular saddle %-6s interior rms relative error H %.3e K %.3e\n", en, rh, rk);
        CHECK_MSG(rh < 0.25 && rk < 0.12, "%s irregular saddle: %g %g", en, rh, rk);
        free(inner);
        free(edge);
        mesh_free(&m);
    }
}

static void test_device(void)
{
    cls_error err;
    ocl_device dev;
    ocl_ctx ctx;
    if (ocl_pick_device("auto", &dev, &err) || ocl_ctx_create(&dev, &ctx, &err)) {
        CHECK_MSG(0, "no OpenCL device: %s", err.msg);
        return;
    }
    mesh ms[2];
    CHECK(curv_mesh_sphere_irregular(4, 3.0, 0.3, check_rand(), &ms[0], &err) == CLS_OK);
    CHECK(curv_mesh_torus(96, 48, 2.0, 0.5, &ms[1], &err) == CLS_OK);
    torus_slide(&ms[1], 96, 48, 2.0, 0.5, 0.3);
    const char *names[2] = {"irregular sphere", "irregular torus"};
    for (int q = 0; q < 2; q++)
        for (int e = 0; e < 2; e++) {
            curv_estimator est = e ? CURV_VERTEX : CURV_FACE;
            curv_adjacency adj;
            curv_gpu g;
            curv_result res, ref;
            CHECK(curv_adjacency_build(&ms[q], &adj, &err) == CLS_OK);
            CHECK(curv_result_alloc(&res, ms[q].nverts, &err) == CLS_OK);
            CHECK(curv_result_alloc(&ref, ms[q].nverts, &err) == CLS_OK);
            int rc = curv_gpu_setup(&g, &ctx, &ms[q], &adj, &err);
            if (!rc)
                rc = curv_gpu_run(&g, est, NULL, &err);
            if (!rc)
                rc = curv_gpu_read(&g, &res, &err);
            CHECK_MSG(rc == CLS_OK, "%s", err.msg);
            curv_reference(&ms[q], &adj, est, &ref);
            /* norm-wise over the vertices away from folded triangles (on
             * the sphere; the torus's slide in its parameters folds none
             * here): next to a fold the estimate is meaningless in double
             * as in float, and ill-conditioned, so the two part there */
            unsigned char *use = q == 0 ? far_from_folds(&ms[q]) : NULL;
            double num[4] = {0}, den[4] = {0}, d = 0, dall = curv_rel_diff(&res, &ref);
            for (int64_t i = 0; i < ms[q].nverts; i++) {
                if (use && !use[i])
                    continue;
                const double a[4] = {res.k1[i], res.k2[i], res.H[i], res.K[i]};
                const double b[4] = {ref.k1[i], ref.k2[i], ref.H[i], ref.K[i]};
                for (int c = 0; c < 4; c++) {
                    num[c] += (a[c] - b[c]) * (a[c] - b[c]);
                    den[c] += b[c] * b[c];
                }
            }
            for (int c = 0; c < 4; c++)
                d = fmax(d, sqrt(num[c] / den[c]));
            printf("device %-6s %s: relative difference vs CPU double %.2e (all vertices "
                   "%.2e)\n",
                   curv_estimator_name(est), names[q], d, dall);
            CHECK(d < 1e-4);
            free(use);
            curv_gpu_release(&g);
            curv_result_free(&res);
            curv_result_free(&ref);
            curv_adjacency_free(&adj);
        }
    mesh_free(&ms[0]);
    mesh_free(&ms[1]);
    ocl_ctx_release(&ctx);
}

/* A mesh beyond the float range the device computes in is bad input
 * (exit 3) and writes nothing (issue 26, item 3): with a vertex at 1e39
 * the kernels saw inf and the run wrote zeros with exit 0. */
static void test_run_float_range(void)
{
    char dir[] = "/tmp/test_curv_range_XXXXXX", mpath[300], out[300];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(mpath, sizeof mpath, "%s/big.obj", dir);
    snprintf(out, sizeof out, "%s/k.csv", dir);
    FILE *f = fopen(mpath, "w");
    fputs("v 0 0 0\nv 1e39 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 3 4\nf 1 4 2\nf 2 4 3\n", f);
    fclose(f);
    curv_run_opts o = {.mesh_path = mpath,
                       .est = CURV_FACE,
                       .device = "auto",
                       .out_path = out,
                       .color_range = NAN};
    json_t *js = NULL;
    cls_error err;
    cls_error_clear(&err);
    int rc = curv_run_local(&o, &js, &err);
    CHECK_MSG(rc == CLS_EINPUT && strstr(err.msg, "beyond the float range"), "rc %d: %s", rc,
              err.msg);
    CHECK(json_integer_value(json_object_get(js, "exit_code")) == CLS_EINPUT);
    CHECK(access(out, F_OK) != 0);
    json_decref(js);
    remove(mpath);
    rmdir(dir);
}

static void test_run_json(void)
{
    /* the run's JSON: topology and the Gauss-Bonnet check, the estimator's
     * integral on a closed mesh */
    char path[4096];
    snprintf(path, sizeof path, "%s/meshes/spot.obj", data_dir);
    struct stat st;
    if (stat(path, &st) != 0)
        return;
    curv_run_opts o = {.mesh_path = path, .est = CURV_FACE, .device = "auto", .color_range = NAN};
    json_t *js = NULL;
    cls_error err;
    int rc = curv_run_local(&o, &js, &err);
    CHECK_MSG(rc == CLS_OK, "%s", err.msg);
    json_t *gb = json_object_get(js, "gauss_bonnet"), *t = json_object_get(js, "topology");
    CHECK(gb && t && json_is_true(json_object_get(gb, "holds")));
    CHECK(json_integer_value(json_object_get(t, "euler_characteristic")) == 2);
    double est = json_real_value(json_object_get(gb, "estimator_over_2pi"));
    printf("spot: the estimator's integral of K / 2 pi = %.4f (Gauss-Bonnet: 2)\n", est);
    CHECK(isfinite(est) && est > 0);
    json_decref(js);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        data_dir = argv[1];
    check_seed("test_curvature_checks");
    test_topology_and_gauss_bonnet();
    test_polygon_topology();
    test_mixed_areas();
    test_accuracy();
    test_device();
    test_run_json();
    test_run_float_range();
    return check_done("test_curvature_checks");
}
