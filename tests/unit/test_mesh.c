/*
 * test_mesh.c: the OBJ, OFF and ASCII PLY readers. Every mesh in
 * DATA/meshes loads with plausible counts; handcrafted good files give the
 * exact vertices, triangles and colours; handcrafted bad files fail with
 * CLS_EINPUT at the right line; a file declaring more than it holds fails
 * without allocating the declared count; truncations and byte flips of a
 * good file never crash. Without the data dir the handcrafted cases still
 * run (only the shared meshes are skipped). The writers refuse a mesh or
 * a value that is not finite, and the float-range check refuses a
 * coordinate a device could not hold.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "physics/mesh.h"
#include "physics/mesh_write.h"

static int read_str(const char *text, const char *name, mesh *m, cls_error *err)
{
    cls_error_clear(err);
    return mesh_read_buf(text, strlen(text), name, m, err);
}

/* A bad file: CLS_EINPUT, the given line, and "NAME:LINE:" in the message. */
static void expect_bad(const char *text, const char *name, long long line, const char *needle)
{
    mesh m;
    cls_error err;
    int rc = read_str(text, name, &m, &err);
    CHECK_MSG(rc == CLS_EINPUT, "%s: rc %d (%s)", name, rc, err.msg);
    CHECK_MSG(err.line == line, "%s: line %lld, expected %lld (%s)", name, err.line, line, err.msg);
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s:%lld: ", name, line);
    CHECK_MSG(strncmp(err.msg, prefix, strlen(prefix)) == 0, "%s: message '%s'", name, err.msg);
    if (needle)
        CHECK_MSG(strstr(err.msg, needle) != NULL, "%s: '%s' lacks '%s'", name, err.msg, needle);
    CHECK(m.v == NULL && m.tri == NULL && m.nverts == 0);
}

static void test_obj_good(void)
{
    mesh m;
    cls_error err;
    const char *obj = "# a quad, a triangle by negative indices, a pentagon\r\n"
                      "mtllib x.mtl\n"
                      "v 0 0 0\n"
                      "v 1 0 0\n"
                      "v 1 1 0\n"
                      "v 0 1 0\n"
                      "vt 0 0\nvn 0 0 1\n"
                      "g quad\n"
                      "f 1/1/1 2/1/1 3//1 4\n"
                      "f -1 -2 -3\n"
                      "v 2 0 0 1.0\n"
                      "f 1 2 5 3 4\n"
                      "l 1 2\n";
    CHECK(read_str(obj, "good.obj", &m, &err) == CLS_OK);
    CHECK(m.nverts == 5);
    CHECK(m.nfaces == 2 + 1 + 3);
    CHECK(m.color == NULL);
    if (m.nfaces == 6) {
        /* the quad as its fan; the pentagon (vertex 2 on the straight
         * edge 1-5) without a zero-area triangle and without the diagonals
         * 2-3 and 2-4, edges of the quad and the triangle already */
        int32_t want[18] = {0, 1, 2, 0, 2, 3, 3, 2, 1, 4, 2, 3, 3, 0, 1, 1, 4, 3};
        CHECK(memcmp(m.tri, want, sizeof want) == 0);
    }
    /* the faces as given */
    CHECK(m.npolys == 3 && m.poly_off && m.poly_v);
    if (m.npolys == 3) {
        int64_t off[4] = {0, 4, 7, 12};
        int32_t pv[12] = {0, 1, 2, 3, 3, 2, 1, 0, 1, 4, 2, 3};
        CHECK(memcmp(m.poly_off, off, sizeof off) == 0 && memcmp(m.poly_v, pv, sizeof pv) == 0);
    }
    CHECK(m.v[3 * 4] == 2.0 && m.v[3 * 2 + 1] == 1.0);
    mesh_free(&m);

    /* vertex colours; a vertex without one is white */
    const char *col = "v 0 0 0 0.5 0.25 1\nv 1 0 0\nv 0 1 0 0 0 0\nf 1 2 3\n";
    CHECK(read_str(col, "col.obj", &m, &err) == CLS_OK);
    CHECK(m.color != NULL);
    if (m.color) {
        CHECK(m.color[0] == 0.5f && m.color[1] == 0.25f && m.color[2] == 1.0f);
        CHECK(m.color[3] == 1.0f && m.color[4] == 1.0f && m.color[5] == 1.0f);
        CHECK(m.color[6] == 0.0f);
    }
    mesh_free(&m);

    /* white first, colour later: earlier vertices get white too */
    const char *col2 = "v 0 0 0\nv 1 0 0 0.1 0.2 0.3\nf 1 2 1\n";
    CHECK(read_str(col2, "col2.obj", &m, &err) == CLS_OK);
    CHECK(m.color && m.color[0] == 1.0f && m.color[3] == 0.1f);
    mesh_free(&m);

    /* vertices only, no final newline */
    CHECK(read_str("v 1 2 3\nv 4 5 6", "pts.obj", &m, &err) == CLS_OK);
    CHECK(m.nverts == 2 && m.nfaces == 0 && m.v[5] == 6.0);
    mesh_free(&m);
}

/* Twice the signed area of triangle t projected on the plane normal to n
 * (> 0: wound counter-clockwise about n). */
static double tri_area2(const mesh *m, int64_t t, const double n[3])
{
    const double *a = m->v + 3 * (int64_t)m->tri[3 * t], *b = m->v + 3 * (int64_t)m->tri[3 * t + 1],
                 *c = m->v + 3 * (int64_t)m->tri[3 * t + 2];
    double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]},
           w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double x[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]};
    return x[0] * n[0] + x[1] * n[1] + x[2] * n[2];
}

/* Every triangle of a planar polygon mesh in the plane z = 0 wound like
 * the polygon (no fold, no sliver) and their areas adding up to area. */
static void check_planar(const char *text, const char *name, int64_t ntri, double area)
{
    mesh m;
    cls_error err;
    CHECK_MSG(read_str(text, name, &m, &err) == CLS_OK, "%s: %s", name, err.msg);
    CHECK_MSG(m.nfaces == ntri, "%s: %lld triangles, expected %lld", name, (long long)m.nfaces,
              (long long)ntri);
    const double up[3] = {0, 0, 1};
    double sum = 0, smallest = INFINITY;
    for (int64_t t = 0; t < m.nfaces; t++) {
        double a = 0.5 * tri_area2(&m, t, up);
        sum += a;
        smallest = fmin(smallest, a);
    }
    CHECK_MSG(smallest > 1e-9 && fabs(sum - area) < 1e-12,
              "%s: smallest triangle %g (folded or degenerate), area %.15g of %g", name, smallest,
              sum, area);
    mesh_free(&m);
}

/* Issue 26 item 4: polygons triangulated without degenerate, folded or
 * duplicate triangles. The fan from each polygon's first corner gave a
 * dart and an L a folded triangle, a pentagon with a straight corner a
 * zero-area one, and two quads sharing a vertex of valence 2 the same
 * triangle twice, opposite ways round. */
static void test_polygons(void)
{
    /* a dart (reflex corner 4), the fan from corner 1 folds */
    check_planar("v 0 0 0\nv 2 1 0\nv 0 2 0\nv 0.5 1 0\nf 1 2 3 4\n", "dart.obj", 2, 1.5);
    /* an L from a corner that does not see all of it, as OBJ and OFF */
    const char *L = "v 2 1 0\nv 1 1 0\nv 1 2 0\nv 0 2 0\nv 0 0 0\nv 2 0 0\nf 1 2 3 4 5 6\n";
    check_planar(L, "L.obj", 4, 3.0);
    check_planar("OFF\n6 1 0\n2 1 0\n1 1 0\n1 2 0\n0 2 0\n0 0 0\n2 0 0\n6 0 1 2 3 4 5\n", "L.off",
                 4, 3.0);
    /* a star of five points, every other corner reflex */
    char star[1024];
    int n = 0;
    for (int k = 0; k < 10; k++) {
        double r = k % 2 ? 0.4 : 1.0, th = M_PI / 2 + k * M_PI / 5;
        n += snprintf(star + n, sizeof star - (size_t)n, "v %.17g %.17g 0\n", r * cos(th),
                      r * sin(th));
    }
    /* from a tip, which does not see the other tips */
    snprintf(star + n, sizeof star - (size_t)n, "f 1 2 3 4 5 6 7 8 9 10\n");
    check_planar(star, "star.obj", 8, 5 * 1.0 * 0.4 * sin(M_PI / 5));
    /* a pentagon with a straight corner (vertex 2 on the edge 1-3) */
    check_planar("v 0 0 0\nv 1 0 0\nv 2 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4 5\n", "flat.obj", 3, 1.5);

    /* the unit cube with its faces y = 0 and y = 1 each split into two
     * quads at a raised centre vertex shared by only those two, written
     * from another corner: closed, manifold, no triangle twice */
    const char *cube = "v 0 0 0\nv 0 0 1\nv 0 1 0\nv 0 1 1\nv 1 0 0\nv 1 0 1\nv 1 1 0\nv 1 1 1\n"
                       "v 0.5 -0.2 0.5\nv 0.5 1.2 0.5\n"
                       "f 1 2 4 3\nf 5 7 8 6\nf 1 3 7 5\nf 2 6 8 4\n"
                       "f 1 5 6 9\nf 6 2 1 9\nf 3 4 8 10\nf 8 7 3 10\n";
    mesh m;
    cls_error err;
    CHECK(read_str(cube, "cube2.obj", &m, &err) == CLS_OK);
    CHECK(m.nfaces == 16 && m.npolys == 8);
    int dup = 0, open = 0;
    for (int64_t a = 0; a < m.nfaces; a++) {
        int32_t x[3] = {m.tri[3 * a], m.tri[3 * a + 1], m.tri[3 * a + 2]};
        for (int64_t b = a + 1; b < m.nfaces; b++) {
            int same = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    same += x[i] == m.tri[3 * b + j];
            dup += same == 3;
        }
        /* every directed edge has its opposite in exactly one other triangle */
        for (int i = 0; i < 3; i++) {
            int opp = 0;
            for (int64_t b = 0; b < m.nfaces; b++)
                for (int j = 0; j < 3; j++)
                    opp += m.tri[3 * b + j] == x[(i + 1) % 3] && m.tri[3 * b + (j + 1) % 3] == x[i];
            open += opp != 1;
        }
    }
    CHECK_MSG(dup == 0 && open == 0, "cube2.obj: %d duplicate triangles, %d edges not paired", dup,
              open);
    mesh_free(&m);

    /* random star-shaped polygons (3 to 80 corners at jittered angles,
     * radii from 0.2 to 1, so most are far from convex), turned in space and
     * read from a random first corner: k - 2 triangles, each wound the
     * polygon's way, covering its area exactly (above 64 corners a fan is
     * taken, from a corner that sees the whole polygon when one of the
     * first 16 does: the centre's neighbourhood is not a corner, so those
     * only need the right count and no fold when the fan exists) */
    char *buf = malloc(1 << 16);
    int folded = 0, wrong_area = 0;
    for (int trial = 0; trial < 300; trial++) {
        int k = 3 + (int)(check_rand() % (trial < 250 ? 62 : 78));
        double ang[80], rad[80], area = 0;
        /* in order round the centre, no two more than pi apart (else the
         * closing edge may cross the others: not a simple polygon) */
        for (int i = 0; i < k; i++)
            ang[i] = 2 * M_PI * (i + 0.9 * check_uniform()) / k;
        for (int i = 0; i < k; i++)
            rad[i] = 0.2 + 0.8 * check_uniform();
        /* a rotation: the plane's normal n, and u, w spanning the plane */
        double n[3] = {check_uniform() - 0.5, check_uniform() - 0.5, check_uniform() - 0.5};
        double ln = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        for (int c = 0; c < 3; c++)
            n[c] /= ln;
        double a[3] = {fabs(n[0]) < 0.9 ? 1 : 0, fabs(n[0]) < 0.9 ? 0 : 1, 0};
        double u[3] = {a[1] * n[2] - a[2] * n[1], a[2] * n[0] - a[0] * n[2],
                       a[0] * n[1] - a[1] * n[0]};
        double lu = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        for (int c = 0; c < 3; c++)
            u[c] /= lu;
        double w[3] = {n[1] * u[2] - n[2] * u[1], n[2] * u[0] - n[0] * u[2],
                       n[0] * u[1] - n[1] * u[0]};
        int len = 0;
        for (int i = 0; i < k; i++) {
            double x = rad[i] * cos(ang[i]), y = rad[i] * sin(ang[i]);
            int j = (i + 1) % k;
            area += 0.5 * (x * rad[j] * sin(ang[j]) - rad[j] * cos(ang[j]) * y);
            len += snprintf(buf + len, 65536 - (size_t)len, "v %.17g %.17g %.17g\n",
                            x * u[0] + y * w[0], x * u[1] + y * w[1], x * u[2] + y * w[2]);
        }
        int s0 = (int)(check_rand() % (unsigned)k);
        len += snprintf(buf + len, 65536 - (size_t)len, "f");
        for (int i = 0; i < k; i++)
            len += snprintf(buf + len, 65536 - (size_t)len, " %d", (s0 + i) % k + 1);
        snprintf(buf + len, 65536 - (size_t)len, "\n");
        if (!(area > 1e-3))
            continue; /* angles too close: a sliver of a polygon */
        CHECK(read_str(buf, "random.obj", &m, &err) == CLS_OK);
        CHECK(m.nfaces == k - 2);
        double sum = 0, least = INFINITY;
        for (int64_t t = 0; t < m.nfaces; t++) {
            double at = 0.5 * tri_area2(&m, t, n);
            sum += at;
            least = fmin(least, at);
        }
        if (k <= 64) {
            folded += !(least > 0);
            wrong_area += !(fabs(sum - area) < 1e-9);
        }
        mesh_free(&m);
    }
    free(buf);
    CHECK_MSG(folded == 0 && wrong_area == 0,
              "random polygons: %d with a folded or flat triangle, %d not covering their area",
              folded, wrong_area);
}

static void test_obj_bad(void)
{
    expect_bad("v 0 0 0\nv 1 0\n", "a.obj", 2, "3 coordinates");
    expect_bad("v 0 0 0\nv 1 0 x\n", "b.obj", 2, "not a number");
    expect_bad("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2\n", "c.obj", 4, "at least 3");
    expect_bad("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n", "d.obj", 4, "not defined");
    expect_bad("v 0 0 0\nv 1 0 0\nv 0 1 0\n# c\nf 0 1 2\n", "e.obj", 5, "index 0");
    expect_bad("v 0 0 0\nv 1 0 0\nv 0 1 0\nf -4 -2 -1\n", "f.obj", 4, "before the first");
    expect_bad("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1/a 2 3\n", "g.obj", 4, "not an integer");
    expect_bad("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1/1/1/1 2 3\n", "h.obj", 4, "too many");
    expect_bad("v 0 0 0\nv 1 0 nan\n", "i.obj", 2, "finite");
    expect_bad("v 0 0 0 2 0 0\n", "j.obj", 1, "outside [0, 1]");
    expect_bad("v 0 0 0\nv 1\0 0 0\n", "k.obj", 2, NULL); /* strlen stops at the NUL */
    {
        /* an embedded NUL byte inside a line */
        const char text[] = "v 0 0 0\nv 1 0\0 0\nv 0 1 0\n";
        mesh m;
        cls_error err;
        cls_error_clear(&err);
        int rc = mesh_read_buf(text, sizeof text - 1, "nul.obj", &m, &err);
        CHECK(rc == CLS_EINPUT && err.line == 2 && strstr(err.msg, "NUL"));
    }
    expect_bad("", "empty.obj", 1, "no vertices");
    expect_bad("# nothing\n\n", "novert.obj", 2, "no vertices");
}

static void test_off(void)
{
    mesh m;
    cls_error err;
    const char *off = "OFF\n# a square as one quad and a triangle\n5 2 0\n"
                      "0 0 0\n1 0 0\n1 1 0\n0 1 0\n2 0 0\n"
                      "4 0 1 2 3\n3 1 4 2 255 0 0\n\n# trailing comment\n";
    CHECK(read_str(off, "sq.off", &m, &err) == CLS_OK);
    CHECK(m.nverts == 5 && m.nfaces == 3 && m.color == NULL);
    mesh_free(&m);
    /* counts on the header line, COFF integer colours */
    const char *coff = "COFF 3 1 3\n0 0 0 255 0 0 255\n1 0 0 0 255 0 255\n0 1 0 0 0 51 255\n"
                       "3 0 1 2\n";
    CHECK(read_str(coff, "c.off", &m, &err) == CLS_OK);
    CHECK(m.nverts == 3 && m.nfaces == 1 && m.color != NULL);
    if (m.color)
        CHECK(m.color[0] == 1.0f && m.color[1] == 0.0f && fabsf(m.color[8] - 0.2f) < 1e-6f);
    mesh_free(&m);
    /* content decides over the extension */
    CHECK(read_str("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", "really.obj", &m, &err) == CLS_OK);
    CHECK(m.nfaces == 1);
    mesh_free(&m);

    expect_bad("OFF\n3 1\n0 0 0\n1 0 0\n", "short.off", 4, "file ends after 2 of the 3");
    expect_bad("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n", "nof.off", 5, "file ends after 0 of the 1");
    expect_bad("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 3\n", "range.off", 6, "out of range");
    expect_bad("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n4 0 1 2\n", "decl.off", 6, "declares 4");
    expect_bad("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n3 0 1 2\n", "extra.off", 7,
               "unexpected content");
    expect_bad("OFF\n-3 1 0\n", "neg.off", 2, "negative");
    expect_bad("OFF\n3 x 0\n", "nan.off", 2, "not an integer");
    expect_bad("OFF\n3 1 0\n0 0\n", "v2.off", 3, "expected 3 numbers");
    expect_bad("COFF\n1 0 0\n0 0 0\n", "nocol.off", 3, "without a colour");
    expect_bad("OFF\n", "nocount.off", 1, "counts");
    expect_bad("junk\n", "x.off", 1, "OFF header");
    /* a huge declared count that the file does not back fails at its end,
     * having allocated only what it read */
    expect_bad("OFF\n2000000000 2000000000 0\n0 0 0\n", "huge.off", 3,
               "file ends after 1 of the 2000000000");
}

static void test_ply(void)
{
    mesh m;
    cls_error err;
    const char *ply = "ply\nformat ascii 1.0\ncomment made by hand\n"
                      "element vertex 4\nproperty float x\nproperty float y\nproperty float z\n"
                      "property uchar red\nproperty uchar green\nproperty uchar blue\n"
                      "element face 2\nproperty list uchar int vertex_indices\n"
                      "element edge 1\nproperty int vertex1\nproperty int vertex2\n"
                      "end_header\n"
                      "0 0 0 255 0 0\n1 0 0 0 255 0\n1 1 0 0 0 255\n0 1 0 51 51 51\n"
                      "4 0 1 2 3\n3 0 2 3\n"
                      "0 1\n";
    CHECK(read_str(ply, "q.ply", &m, &err) == CLS_OK);
    CHECK(m.nverts == 4 && m.nfaces == 3);
    CHECK(m.color != NULL);
    if (m.color)
        CHECK(m.color[0] == 1.0f && m.color[4] == 1.0f && fabsf(m.color[9] - 0.2f) < 1e-6f);
    mesh_free(&m);
    /* float colours, no colour */
    const char *plyf = "ply\nformat ascii 1.0\nelement vertex 3\nproperty double x\n"
                       "property double y\nproperty double z\nproperty float red\n"
                       "property float green\nproperty float blue\nelement face 1\n"
                       "property list uchar uint vertex_index\nend_header\n"
                       "0 0 0 0.5 0.5 0.5\n1 0 0 1 1 1\n0 1 0 0 0 0\n3 0 1 2\n";
    CHECK(read_str(plyf, "f.ply", &m, &err) == CLS_OK);
    CHECK(m.nverts == 3 && m.nfaces == 1 && m.color && m.color[0] == 0.5f);
    mesh_free(&m);

    const char *hdr = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\n"
                      "property float y\nproperty float z\nelement face 1\n"
                      "property list uchar int vertex_indices\nend_header\n";
    char buf[1024];
    snprintf(buf, sizeof buf, "%s0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", hdr);
    CHECK(read_str(buf, "ok.ply", &m, &err) == CLS_OK);
    mesh_free(&m);
    snprintf(buf, sizeof buf, "%s0 0 0\n1 0 0\n", hdr);
    expect_bad(buf, "trunc.ply", 11, "file ends after 2 of the 3 'vertex'");
    snprintf(buf, sizeof buf, "%s0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n", hdr);
    expect_bad(buf, "range.ply", 13, "out of range");
    snprintf(buf, sizeof buf, "%s0 0 0\n1 0 0 9\n0 1 0\n3 0 1 2\n", hdr);
    expect_bad(buf, "extra.ply", 11, "has 4 values");
    snprintf(buf, sizeof buf, "%s0 0 0\n1 0 0\n0 1 0\n5 0 1 2\n", hdr);
    expect_bad(buf, "list.ply", 13, "declares 5");
    snprintf(buf, sizeof buf, "%s0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n3 0 1 2\n", hdr);
    expect_bad(buf, "more.ply", 14, "unexpected content");
    expect_bad("ply\nformat binary_little_endian 1.0\nend_header\n", "bin.ply", 2, "not supported");
    expect_bad("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n1\n",
               "nox.ply", 3, "lacks an x");
    expect_bad("ply\nformat ascii 1.0\nelement vertex 1\nproperty floaty x\n", "type.ply", 4,
               "not a PLY type");
    expect_bad("ply\nformat ascii 1.0\nelement vertex 1\n", "nohdr.ply", 3, "end_header");
    expect_bad("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
               "property float z\nproperty uchar red\nproperty uchar green\n"
               "property uchar blue\nend_header\n0 0 0 256 0 0\n",
               "col.ply", 11, "0..255");
    expect_bad("ply\nformat ascii 1.0\nelement vertex 3000000000\n", "big.ply", 3, "more than");
    expect_bad("ply\nformat ascii 1.0\nelement vertex 100000000\nproperty float x\n"
               "property float y\nproperty float z\nend_header\n0 0 0\n",
               "huge.ply", 8, "file ends after 1 of the 100000000");
}

/* Truncations and single-byte corruptions of good files: the reader either
 * succeeds or fails with CLS_EINPUT and a line; it never crashes or leaks
 * (the sanitizer build checks the latter). */
static void test_fuzz(void)
{
    const char *good[] = {
        "v 0 0 0 0.5 0.5 0.5\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1/1 2/2 3/3 4/4\nf -1 -2 -3\n",
        "COFF\n4 2 0\n0 0 0 1 0 0 1\n1 0 0 0 1 0 1\n1 1 0 0 0 1 1\n0 1 0 1 1 1 1\n"
        "3 0 1 2\n4 0 1 2 3\n",
        "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
        "property float z\nproperty uchar red\nproperty uchar green\nproperty uchar blue\n"
        "element face 1\nproperty list uchar int vertex_indices\nend_header\n"
        "0 0 0 1 2 3\n1 0 0 4 5 6\n0 1 0 7 8 9\n3 0 1 2\n",
    };
    const char *names[] = {"fz.obj", "fz.off", "fz.ply"};
    const char flips[] = {'\0', '\n', ' ', '-', '9', '/', 'x', '#', '.', 'e'};
    int ok = 0, bad = 0, other = 0;
    for (int g = 0; g < 3; g++) {
        size_t len = strlen(good[g]);
        char *buf = malloc(len + 1);
        for (size_t cut = 0; cut <= len; cut++) {
            mesh m;
            cls_error err;
            cls_error_clear(&err);
            memcpy(buf, good[g], cut);
            int rc = mesh_read_buf(buf, cut, names[g], &m, &err);
            rc == CLS_OK ? ok++ : rc == CLS_EINPUT ? bad++ : other++;
            mesh_free(&m);
        }
        for (size_t pos = 0; pos < len; pos++)
            for (size_t f = 0; f < sizeof flips; f++) {
                mesh m;
                cls_error err;
                cls_error_clear(&err);
                memcpy(buf, good[g], len);
                buf[pos] = flips[f];
                int rc = mesh_read_buf(buf, len, names[g], &m, &err);
                rc == CLS_OK ? ok++ : rc == CLS_EINPUT ? bad++ : other++;
                if (rc == CLS_OK) {
                    for (int64_t t = 0; t < 3 * m.nfaces; t++)
                        if (m.tri[t] < 0 || m.tri[t] >= m.nverts) {
                            other++;
                            break;
                        }
                }
                mesh_free(&m);
            }
        free(buf);
    }
    printf("fuzz: %d read, %d refused, %d other\n", ok, bad, other);
    CHECK(other == 0);
    CHECK(ok > 0 && bad > 0);
}

static void test_write_roundtrip(void)
{
    mesh m, r;
    cls_error err;
    CHECK(read_str("v 0 0 0 1 0 0\nv 1.5 0 0 0 1 0\nv 0 1 0.25 0 0 1\nf 1 2 3\n", "w.obj", &m,
                   &err) == CLS_OK);
    const char *path = "test_mesh_roundtrip.obj";
    CHECK(mesh_write_obj(path, &m, &err) == CLS_OK);
    CHECK(mesh_read(path, &r, &err) == CLS_OK);
    CHECK(r.nverts == 3 && r.nfaces == 1 && r.color != NULL);
    if (r.nverts == 3 && r.color) {
        CHECK(r.v[3] == 1.5 && r.v[8] == 0.25 && r.color[4] == 1.0f);
        CHECK(memcmp(r.tri, m.tri, 3 * sizeof(int32_t)) == 0);
    }
    remove(path);
    /* a mesh or a value that is not finite is never written (issue 26,
     * item 3): CLS_EBREAKDOWN, no file, in every format */
    static const phys_format fmts[3] = {PHYS_FMT_OBJ, PHYS_FMT_PLY, PHYS_FMT_VTK};
    static const char *const names[3] = {"test_mesh_nan.obj", "test_mesh_nan.ply",
                                         "test_mesh_nan.vtk"};
    double val[3] = {1, 2, 3};
    mesh_field fld = {"value", val, 1};
    for (int f = 0; f < 3; f++) {
        m.v[4] = NAN;
        mesh_out o = {.m = &m};
        cls_error_clear(&err);
        CHECK_MSG(mesh_write(names[f], fmts[f], &o, &err) == CLS_EBREAKDOWN &&
                      strstr(err.msg, "not written") && strstr(err.msg, "item 1"),
                  "%s: %s", names[f], err.msg);
        CHECK(access(names[f], F_OK) != 0);
        m.v[4] = 0.0;
        val[2] = INFINITY;
        mesh_out o2 = {.m = &m, .fields = &fld, .nfields = 1};
        CHECK(mesh_write(names[f], fmts[f], &o2, &err) == CLS_EBREAKDOWN &&
              strstr(err.msg, "value of item 2"));
        CHECK(access(names[f], F_OK) != 0);
        val[2] = 3.0;
        CHECK(mesh_write(names[f], fmts[f], &o2, &err) == CLS_OK);
        remove(names[f]);
    }
    /* a coordinate beyond float (what the device kernels hold) is bad input */
    CHECK(mesh_check_float_range(&m, "w.obj", &err) == CLS_OK);
    m.v[5] = -1e39;
    CHECK(mesh_check_float_range(&m, "w.obj", &err) == CLS_EINPUT &&
          strstr(err.msg, "w.obj: vertex 1: coordinate -1e+39 is beyond the float range"));
    mesh_free(&m);
    mesh_free(&r);
    CHECK(mesh_read("/nonexistent/x.obj", &m, &err) == CLS_EOTHER);
}

/* Every shared mesh loads: vertices and faces match the OBJ's own v and f
 * line counts (all triangles there), indices in range, coordinates finite. */
static void test_shared(const char *datadir)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/meshes", datadir);
    DIR *d = opendir(dir);
    if (!d) {
        printf("no %s: shared meshes skipped\n", dir);
        return;
    }
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        /* independent counts: v and f lines */
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        char line[4096];
        long long nv = 0, nf = 0;
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "v ", 2))
                nv++;
            else if (!strncmp(line, "f ", 2))
                nf++;
        }
        fclose(f);
        mesh m;
        cls_error err;
        cls_error_clear(&err);
        int rc = mesh_read(path, &m, &err);
        CHECK_MSG(rc == CLS_OK, "%s: %s", path, err.msg);
        if (rc)
            continue;
        printf("%-22s %7lld vertices %7lld triangles%s\n", e->d_name, (long long)m.nverts,
               (long long)m.nfaces, m.color ? " (colours)" : "");
        CHECK_MSG(m.nverts == nv, "%s: %lld vertices, %lld v lines", path, (long long)m.nverts, nv);
        CHECK_MSG(m.nfaces >= nf && m.nfaces <= 4 * nf, "%s: %lld triangles from %lld faces", path,
                  (long long)m.nfaces, nf);
        CHECK(m.nverts > 100 && m.nfaces > 100);
        int okidx = 1, okv = 1;
        for (int64_t t = 0; t < 3 * m.nfaces; t++)
            if (m.tri[t] < 0 || m.tri[t] >= m.nverts)
                okidx = 0;
        for (int64_t i = 0; i < 3 * m.nverts; i++)
            if (!isfinite(m.v[i]))
                okv = 0;
        CHECK(okidx && okv);
        CHECK(m.npolys == 0 && !m.poly_off && !m.poly_v); /* all triangles: no face list */
        mesh_free(&m);
        n++;
    }
    closedir(d);
    CHECK(n >= 5);
}

int main(int argc, char **argv)
{
    check_seed("test_mesh");
    test_obj_good();
    test_polygons();
    test_obj_bad();
    test_off();
    test_ply();
    test_fuzz();
    test_write_roundtrip();
    if (argc > 1)
        test_shared(argv[1]);
    return check_done("test_mesh");
}
