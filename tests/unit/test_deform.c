/*
 * test_deform.c: model-reduction deformers (physics/deform.h).
 *
 * - u = U q on the device against the CPU double reference,
 *   ||u - u_ref|| / ||u_ref|| < 1e-5: single domains with r = 1, 3, 4, 7,
 *   10, 30, 33 (r not a multiple of 4), r = 0, one vertex;
 * - several domains with mixed r (0 included), one-vertex domains;
 * - the vertex update of an unfolded triangle list with rotations and
 *   translations per domain, x = R (x0 + u) + p, n = R n0, t = R t0,
 *   against the reference and against a hand computation;
 * - the domains file: a valid file, transforms by frame, and errors with
 *   their line numbers;
 * - files end to end: basis as Matrix Market array, coordinate (block
 *   diagonal), raw .f32 / .f64; a q sequence of several frames; u.mtx
 *   read back;
 * - the float range the device computes in: inputs beyond it refused
 *   (exit 3), results that overflow it fail (exit 5), no file holds inf.
 * Device parts skip when there is no OpenCL device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "matrices/mm.h"
#include "physics/curvature.h"
#include "physics/deform.h"
#include "physics/job.h"

static int have_dev = 0;
static ocl_ctx ctx;
static char tmpdir[] = "/tmp/test_deform_XXXXXX";

static double urand(void)
{
    return 2.0 * check_uniform() - 1.0;
}

static void fill_random(deform_model *M)
{
    for (int64_t d = 0; d < M->ndomains; d++) {
        int64_t rows = 3 * (M->vert0[d + 1] - M->vert0[d]);
        for (int32_t j = 0; j < M->r[d]; j++)
            for (int64_t i = 0; i < rows; i++)
                *deform_U_at(M, d, i, j) = (float)urand();
    }
}

static void random_rotation(deform_xform *T, double scale_p)
{
    double q[4], l = 0;
    for (int k = 0; k < 4; k++)
        q[k] = urand(), l += q[k] * q[k];
    l = sqrt(l);
    for (int k = 0; k < 4; k++)
        q[k] /= l;
    double w = q[0], x = q[1], y = q[2], z = q[3];
    double R[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - z * w),     2 * (x * z + y * w),
                   2 * (x * y + z * w),     1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                   2 * (x * z - y * w),     2 * (y * z + x * w),     1 - 2 * (x * x + y * y)};
    memcpy(T->R, R, sizeof R);
    for (int k = 0; k < 3; k++)
        T->p[k] = scale_p * urand();
}

/* GPU u = U q against the reference for a model; returns the relative error. */
static double run_uq(const deform_model *M, const double *q)
{
    deform_gpu g;
    cls_error err;
    int rc = deform_gpu_setup(&g, &ctx, M, NULL, &err);
    CHECK_MSG(rc == CLS_OK, "%s", err.msg);
    if (rc)
        return INFINITY;
    double *u = malloc((size_t)(3 * M->nverts) * sizeof(double));
    double *ur = malloc((size_t)(3 * M->nverts) * sizeof(double));
    double ks;
    CHECK(deform_gpu_uq(&g, q, &ks, &err) == CLS_OK);
    CHECK(deform_gpu_read_u(&g, u, &err) == CLS_OK);
    deform_ref_uq(M, q, ur);
    double rel = deform_rel_diff(u, ur, 3 * M->nverts);
    /* r = 0 everywhere: u must be exactly zero */
    if (M->ncols == 0)
        for (int64_t i = 0; i < 3 * M->nverts; i++)
            CHECK(u[i] == 0.0);
    free(u);
    free(ur);
    deform_gpu_release(&g);
    return rel;
}

static void test_single(void)
{
    const int rs[] = {0, 1, 3, 4, 7, 10, 30, 33};
    const int64_t ns[] = {1, 2, 1000, 4099};
    for (size_t a = 0; a < sizeof rs / sizeof rs[0]; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            deform_model M;
            cls_error err;
            int32_t r = rs[a];
            int64_t n = ns[b];
            CHECK(deform_model_alloc(&M, 1, &n, &r, &err) == CLS_OK);
            CHECK(M.ulen % 4 == 0 && M.ulen >= 3 * n);
            fill_random(&M);
            double *q = malloc((size_t)(r ? r : 1) * sizeof(double));
            for (int j = 0; j < r; j++)
                q[j] = urand();
            double rel = run_uq(&M, q);
            CHECK_MSG(rel < 1e-5, "single domain n=%lld r=%d: rel err %g", (long long)n, r, rel);
            if (n == 4099)
                printf("single n=%lld r=%2d: rel err %.2e\n", (long long)n, r, rel);
            free(q);
            deform_model_free(&M);
        }
}

static void test_multi(void)
{
    /* mixed sizes: one-vertex domains, r = 0 domains, r not a multiple of 4 */
    const int64_t nv[] = {1, 5, 1000, 1, 77, 3, 2048, 1};
    const int32_t r[] = {3, 0, 13, 0, 8, 1, 30, 7};
    deform_model M;
    cls_error err;
    CHECK(deform_model_alloc(&M, 8, nv, r, &err) == CLS_OK);
    CHECK(M.ncols == 3 + 13 + 8 + 1 + 30 + 7);
    CHECK(deform_domain_of(&M, 0) == 0 && deform_domain_of(&M, 1) == 1 &&
          deform_domain_of(&M, 6) == 2 && deform_domain_of(&M, 1006) == 3 &&
          deform_domain_of(&M, M.nverts - 1) == 7);
    fill_random(&M);
    double *q = malloc((size_t)M.ncols * sizeof(double));
    for (int64_t j = 0; j < M.ncols; j++)
        q[j] = urand();
    double rel = run_uq(&M, q);
    printf("multi-domain (8 domains, R = %lld): rel err %.2e\n", (long long)M.ncols, rel);
    CHECK_MSG(rel < 1e-5, "multi-domain rel err %g", rel);
    /* per-domain: an r = 0 domain has u = 0; check on the device result */
    deform_gpu g;
    CHECK(deform_gpu_setup(&g, &ctx, &M, NULL, &err) == CLS_OK);
    double *u = malloc((size_t)(3 * M.nverts) * sizeof(double));
    double *ur = malloc((size_t)(3 * M.nverts) * sizeof(double));
    CHECK(deform_gpu_uq(&g, q, NULL, &err) == CLS_OK);
    CHECK(deform_gpu_read_u(&g, u, &err) == CLS_OK);
    deform_ref_uq(&M, q, ur);
    for (int64_t d = 0; d < M.ndomains; d++) {
        int64_t a = 3 * M.vert0[d], b = 3 * M.vert0[d + 1];
        if (M.r[d] == 0) {
            for (int64_t i = a; i < b; i++)
                CHECK(u[i] == 0.0);
        } else {
            double e = deform_rel_diff(u + a, ur + a, b - a);
            CHECK_MSG(e < 1e-5, "domain %lld: %g", (long long)d, e);
        }
    }
    free(u);
    free(ur);
    deform_gpu_release(&g);
    free(q);
    deform_model_free(&M);
}

static void test_update(void)
{
    /* a 20 x 20 grid mesh (saddle) split into domains of 1, 99, 150, 150
     * vertices, each with a random rotation and translation */
    mesh m;
    cls_error err;
    CHECK(curv_mesh_saddle(20, 1.0, &m, &err) == CLS_OK);
    const int64_t nv[] = {1, 99, 150, 150};
    const int32_t r[] = {2, 0, 5, 9};
    deform_model M;
    CHECK(deform_model_alloc(&M, 4, nv, r, &err) == CLS_OK);
    CHECK(M.nverts == m.nverts);
    fill_random(&M);
    for (int64_t k = 0; k < M.Ulen; k++)
        M.U[k] *= 0.05f;
    deform_unfolded uf;
    CHECK(deform_unfold(&m, &uf, &err) == CLS_OK);
    CHECK(uf.ncorners == 3 * m.nfaces);
    /* rest frames: unit normals and tangents, tangents orthogonal to normals */
    for (int64_t c = 0; c < uf.ncorners; c++) {
        const double *n = uf.n0 + 3 * c, *t = uf.t0 + 3 * c;
        CHECK(fabs(n[0] * n[0] + n[1] * n[1] + n[2] * n[2] - 1) < 1e-12);
        CHECK(fabs(t[0] * t[0] + t[1] * t[1] + t[2] * t[2] - 1) < 1e-12);
        CHECK(fabs(n[0] * t[0] + n[1] * t[1] + n[2] * t[2]) < 1e-12);
        CHECK(n[2] > 0); /* saddle wound counter-clockwise from +z */
    }
    double *q = malloc((size_t)M.ncols * sizeof(double));
    for (int64_t j = 0; j < M.ncols; j++)
        q[j] = urand();
    deform_xform T[4];
    for (int d = 0; d < 4; d++)
        random_rotation(&T[d], 10.0);
    deform_gpu g;
    int rc = deform_gpu_setup(&g, &ctx, &M, &uf, &err);
    CHECK_MSG(rc == CLS_OK, "%s", err.msg);
    if (!rc) {
        size_t nc3 = (size_t)uf.ncorners * 3;
        double *x = malloc(nc3 * sizeof(double)), *n = malloc(nc3 * sizeof(double)),
               *t = malloc(nc3 * sizeof(double)), *xr = malloc(nc3 * sizeof(double)),
               *nr = malloc(nc3 * sizeof(double)), *tr = malloc(nc3 * sizeof(double)),
               *ur = malloc((size_t)(3 * M.nverts) * sizeof(double));
        CHECK(deform_gpu_uq(&g, q, NULL, &err) == CLS_OK);
        CHECK(deform_gpu_update(&g, T, NULL, &err) == CLS_OK);
        CHECK(deform_gpu_read_vertices(&g, x, n, t, &err) == CLS_OK);
        deform_ref_uq(&M, q, ur);
        deform_ref_update(&M, &uf, ur, T, xr, nr, tr);
        double ex = deform_rel_diff(x, xr, (int64_t)nc3), en = deform_rel_diff(n, nr, (int64_t)nc3),
               et = deform_rel_diff(t, tr, (int64_t)nc3);
        printf("vertex update (%lld corners, 4 domains): rel err x %.2e n %.2e t %.2e\n",
               (long long)uf.ncorners, ex, en, et);
        CHECK(ex < 1e-5 && en < 1e-5 && et < 1e-5);
        /* one corner by hand: corner 0 is vertex 0 (domain 0) */
        CHECK(uf.vertex[0] == 0);
        double xd[3], want[3];
        for (int k = 0; k < 3; k++)
            xd[k] = m.v[k] + ur[k];
        for (int a = 0; a < 3; a++)
            want[a] = T[0].R[3 * a] * xd[0] + T[0].R[3 * a + 1] * xd[1] +
                      T[0].R[3 * a + 2] * xd[2] + T[0].p[a];
        for (int a = 0; a < 3; a++)
            CHECK_MSG(fabs(x[a] - want[a]) < 1e-4 * (1 + fabs(want[a])), "x[%d] %g vs %g", a, x[a],
                      want[a]);
        /* lengths preserved by the rotation */
        for (int64_t c = 0; c < uf.ncorners; c++)
            CHECK(fabs(n[3 * c] * n[3 * c] + n[3 * c + 1] * n[3 * c + 1] +
                       n[3 * c + 2] * n[3 * c + 2] - 1) < 1e-5);
        free(x), free(n), free(t), free(xr), free(nr), free(tr), free(ur);
        deform_gpu_release(&g);
    }
    free(q);
    deform_unfolded_free(&uf);
    deform_model_free(&M);
    mesh_free(&m);
}

static void test_domains_file(void)
{
    cls_error err;
    deform_domains D;
    const char *ok = "# two domains\n"
                     "domains 2\n"
                     "domain 0 10 3\n"
                     "domain 1 1 0   # one vertex, rigid\n"
                     "\n"
                     "transform 2 1  0 -1 0  1 0 0  0 0 1  5 6 7\n"
                     "transform 0 1  1 0 0  0 1 0  0 0 1  1 2 3\n";
    CHECK(deform_domains_parse(ok, strlen(ok), "ok", &D, &err) == CLS_OK);
    CHECK(D.ndomains == 2 && D.nv[0] == 10 && D.r[0] == 3 && D.nv[1] == 1 && D.r[1] == 0);
    CHECK(D.ntransforms == 2 && D.tf_frame[0] == 0 && D.tf_frame[1] == 2);
    deform_xform T[2];
    deform_domains_transforms(&D, 0, T);
    CHECK(T[0].R[0] == 1 && T[0].p[0] == 0 && T[1].p[0] == 1);
    deform_domains_transforms(&D, 1, T);
    CHECK(T[1].p[2] == 3);
    deform_domains_transforms(&D, 5, T);
    CHECK(T[1].p[0] == 5 && T[1].R[1] == -1);
    deform_domains_free(&D);

    static const struct {
        const char *text;
        long long line;
        const char *needle;
    } bad[] = {
        {"domain 0 1 1\n", 1, "before"},
        {"domains 2\ndomain 0 1 1\n", 2, "2 domains declared, 1 given"},
        {"domains 2\ndomain 1 1 1\n", 2, "out of order"},
        {"domains 1\ndomain 0 0 1\n", 2, "NVERTS"},
        {"domains 1\ndomain 0 4 -1\n", 2, "R must"},
        {"domains 1\ndomain 0 4 2\nfoo\n", 3, "unknown keyword"},
        {"domains 1\ndomain 0 4 2\ntransform 0 0 2 0 0 0 1 0 0 0 1 0 0 0\n", 3, "not a rotation"},
        {"domains 1\ndomain 0 4 2\ntransform 0 0 1 0 0 0 1 0 0 0 -1 0 0 0\n", 3, "not a rotation"},
        {"domains 1\ndomain 0 4 2\ntransform 0 3 1 0 0 0 1 0 0 0 1 0 0 0\n", 3, "unknown domain"},
        {"domains 1\ndomain 0 4 2\ntransform 0 0 1 0 0\n", 3, "12 numbers"},
        {"domains 99999999\n", 1, "declared"},
        {"# nothing\n", 1, "no 'domains D'"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int rc = deform_domains_parse(bad[k].text, strlen(bad[k].text), "f.dom", &D, &err);
        CHECK_MSG(rc == CLS_EINPUT, "case %zu: rc %d", k, rc);
        CHECK_MSG(err.line == bad[k].line, "case %zu: line %lld, want %lld (%s)", k, err.line,
                  bad[k].line, err.msg);
        CHECK_MSG(strstr(err.msg, bad[k].needle) != NULL, "case %zu: '%s' lacks '%s'", k, err.msg,
                  bad[k].needle);
        CHECK(strncmp(err.msg, "f.dom:", 6) == 0);
    }
}

/* ---------------------------------------------------------- files end to end */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_files(void)
{
    char p_arr[512], p_coo[512], p_f32[512], p_f64[512], p_q[512], p_dom[512], p_u[512],
        p_mesh[512], p_csv[512], p_bad[512];
    snprintf(p_arr, sizeof p_arr, "%s/U_array.mtx", tmpdir);
    snprintf(p_coo, sizeof p_coo, "%s/U_coo.mtx", tmpdir);
    snprintf(p_f32, sizeof p_f32, "%s/U.f32", tmpdir);
    snprintf(p_f64, sizeof p_f64, "%s/U.f64", tmpdir);
    snprintf(p_q, sizeof p_q, "%s/q.mtx", tmpdir);
    snprintf(p_dom, sizeof p_dom, "%s/d.dom", tmpdir);
    snprintf(p_u, sizeof p_u, "%s/u.mtx", tmpdir);
    snprintf(p_mesh, sizeof p_mesh, "%s/m.obj", tmpdir);
    snprintf(p_csv, sizeof p_csv, "%s/unfolded.csv", tmpdir);
    snprintf(p_bad, sizeof p_bad, "%s/U_bad.mtx", tmpdir);

    /* single domain, n = 5 vertices (15 rows), r = 3, as a dense array */
    const int n = 5, r = 3, F = 4;
    double U[15][3];
    for (int i = 0; i < 15; i++)
        for (int j = 0; j < r; j++)
            U[i][j] = (double)(float)urand();
    FILE *f = fopen(p_arr, "w");
    fprintf(f, "%%%%MatrixMarket matrix array real general\n15 3\n");
    for (int j = 0; j < r; j++)
        for (int i = 0; i < 15; i++)
            fprintf(f, "%.9g\n", U[i][j]);
    fclose(f);
    f = fopen(p_f32, "wb");
    for (int j = 0; j < r; j++)
        for (int i = 0; i < 15; i++) {
            float v = (float)U[i][j];
            fwrite(&v, 4, 1, f);
        }
    fclose(f);
    f = fopen(p_f64, "wb");
    for (int j = 0; j < r; j++)
        for (int i = 0; i < 15; i++)
            fwrite(&U[i][j], 8, 1, f);
    fclose(f);
    double q[4][3];
    f = fopen(p_q, "w");
    fprintf(f, "%%%%MatrixMarket matrix array real general\n%d %d\n", r, F);
    for (int fr = 0; fr < F; fr++)
        for (int j = 0; j < r; j++) {
            q[fr][j] = urand();
            fprintf(f, "%.17g\n", q[fr][j]);
        }
    fclose(f);

    const char *bases[3] = {p_arr, p_f32, p_f64};
    for (int b = 0; b < 3; b++) {
        deform_run_opts o;
        memset(&o, 0, sizeof o);
        o.basis = bases[b];
        o.q = p_q;
        o.rank = 3;
        o.device = "auto";
        o.out_u = p_u;
        o.check = 1;
        json_t *js = NULL;
        cls_error err;
        int rc = deform_run_local(&o, &js, &err);
        CHECK_MSG(rc == CLS_OK, "%s: %s", bases[b], err.msg);
        CHECK(js != NULL);
        if (!rc) {
            CHECK(json_integer_value(json_object_get(js, "frames")) == F);
            CHECK(json_real_value(json_object_get(js, "max_rel_err_u")) < 1e-5);
            /* read u back: 15 x F, column fr = U q_fr */
            csr_matrix A;
            csr_init(&A);
            mm_header h;
            CHECK(mm_read_csr(p_u, NULL, &A, &h, NULL, &err) == CLS_OK);
            CHECK(A.nrows == 15 && A.ncols == F);
            double worst = 0;
            for (int64_t i = 0; i < A.nrows; i++)
                for (int64_t k = A.rowptr[i]; k < A.rowptr[i + 1]; k++) {
                    double want = 0;
                    for (int j = 0; j < r; j++)
                        want += U[i][j] * q[A.col[k]][j];
                    worst = fmax(worst, fabs(A.val[k] - want));
                }
            CHECK_MSG(worst < 1e-5, "%s: u read back differs by %g", bases[b], worst);
            csr_free(&A);
        }
        json_decref(js);
    }
    (void)n;

    /* two domains, block-diagonal coordinate basis, mesh and transforms */
    /* mesh: two triangles sharing nothing: vertices 0-2 domain 0, 3-5 domain 1 */
    write_text(p_mesh, "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 2 0 0\nv 3 0 0\nv 2 1 0\nf 1 2 3\nf 4 5 6\n");
    write_text(p_dom, "domains 2\ndomain 0 3 2\ndomain 1 3 0\n"
                      "transform 0 1  0 -1 0  1 0 0  0 0 1  10 0 0\n");
    f = fopen(p_coo, "w");
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n18 2 %d\n", 9 * 2);
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < 2; j++)
            fprintf(f, "%d %d %.9g\n", i + 1, j + 1, 0.1 * (i + 1) * (j ? -1 : 1));
    fclose(f);
    write_text(p_q, "%%MatrixMarket matrix array real general\n2 2\n1\n0\n0\n1\n");
    {
        deform_run_opts o;
        memset(&o, 0, sizeof o);
        o.basis = p_coo;
        o.q = p_q;
        o.domains = p_dom;
        o.mesh = p_mesh;
        o.device = "auto";
        o.out_u = p_u;
        o.out_unfolded = p_csv;
        o.check = 1;
        json_t *js = NULL;
        cls_error err;
        int rc = deform_run_local(&o, &js, &err);
        CHECK_MSG(rc == CLS_OK, "%s", err.msg);
        if (!rc) {
            CHECK(json_integer_value(json_object_get(js, "domains")) == 2);
            CHECK(json_integer_value(json_object_get(js, "corners")) == 6);
            CHECK(json_real_value(json_object_get(js, "max_rel_err_u")) < 1e-5);
            CHECK(json_real_value(json_object_get(js, "max_rel_err_vertices")) < 1e-5);
            /* frame 1, corner 3 = vertex 3 (domain 1, rigid): R (2,0,0) + (10,0,0)
             * = (0, 2, 0) + (10, 0, 0) */
            FILE *c = fopen(p_csv, "r");
            char line[512];
            int found = 0, lines = 0;
            while (c && fgets(line, sizeof line, c)) {
                lines++;
                long long fr, corner, vtx, dom;
                double x, y, z;
                if (sscanf(line, "%lld,%lld,%lld,%lld,%lf,%lf,%lf", &fr, &corner, &vtx, &dom, &x,
                           &y, &z) == 7 &&
                    fr == 1 && corner == 3) {
                    found = 1;
                    CHECK(vtx == 3 && dom == 1);
                    CHECK(fabs(x - 10) < 1e-5 && fabs(y - 2) < 1e-5 && fabs(z) < 1e-6);
                }
            }
            if (c)
                fclose(c);
            CHECK(found);
            CHECK(lines == 1 + 2 * 6);
        }
        json_decref(js);
    }
    /* an entry outside its domain's block is bad input */
    f = fopen(p_bad, "w");
    fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n18 2 1\n12 1 1.0\n");
    fclose(f);
    deform_domains D;
    deform_model M;
    cls_error err;
    CHECK(deform_domains_read(p_dom, &D, &err) == CLS_OK);
    CHECK(deform_read_basis(p_bad, &D, 0, &M, &err) == CLS_EINPUT);
    CHECK(strstr(err.msg, "outside the block") != NULL);
    /* a raw basis of the wrong size */
    CHECK(deform_read_basis(p_f32, &D, 0, &M, &err) == CLS_EINPUT);
    /* a raw basis without rank or domains */
    CHECK(deform_read_basis(p_f32, NULL, 0, &M, &err) == CLS_EUSAGE);
    deform_domains_free(&D);
    /* q with the wrong number of rows */
    double *qq;
    int64_t fr;
    CHECK(deform_read_q(p_q, 3, &qq, &fr, &err) == CLS_EINPUT);
    CHECK_MSG(strstr(err.msg, "q is 2 x 2, expected 3 rows") != NULL, "%s", err.msg);
    /* the job entry point: basis file, q inline (two frames) */
    {
        char *res_json = NULL;
        int jrc = deform_job_run("{\"q\": [[1, 0, 0], [0.5, -1, 2]], \"check\": true}", p_arr,
                                 tmpdir, "auto", &res_json, &err);
        CHECK_MSG(jrc == CLS_OK, "%s", err.msg);
        CHECK(res_json && strstr(res_json, "\"frames\":2") && strstr(res_json, "\"u.mtx\""));
        printf("job: %s\n", res_json ? res_json : "(null)");
        free(res_json);
        /* q of the wrong length for the basis (3 columns) */
        CHECK(deform_job_run("{\"q\": [1, 2]}", p_arr, NULL, "auto", &res_json, &err) ==
              CLS_EUSAGE);
        free(res_json);
        res_json = NULL;
        CHECK(deform_job_run("{\"q\": [1, 2, 3], \"nope\": 1}", p_arr, NULL, "auto", &res_json,
                             &err) == CLS_EUSAGE);
        CHECK(deform_job_run("{\"q\": [[1, 2, 3], [1]]}", p_arr, NULL, "auto", &res_json, &err) ==
              CLS_EUSAGE);
    }
    const char *files[] = {p_arr, p_coo, p_f32, p_f64, p_q, p_dom, p_u, p_mesh, p_csv, p_bad};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++)
        remove(files[k]);
}

/* One run that must fail with `want` and a message holding `needle`,
 * writing neither u nor the deformed mesh. */
static void float_range_case(const char *what, const char *basis, const char *q,
                             const char *mesh_path, const char *domains, int want,
                             const char *needle)
{
    char p_u[300], p_obj[300];
    snprintf(p_u, sizeof p_u, "%s/range_u.mtx", tmpdir);
    snprintf(p_obj, sizeof p_obj, "%s/range.obj", tmpdir);
    deform_run_opts o;
    memset(&o, 0, sizeof o);
    o.basis = basis;
    o.q = q;
    o.mesh = mesh_path;
    o.domains = domains;
    o.device = "auto";
    o.out_u = p_u;
    o.out_mesh = mesh_path ? p_obj : NULL;
    json_t *js = NULL;
    cls_error err;
    cls_error_clear(&err);
    int rc = deform_run_local(&o, &js, &err);
    CHECK_MSG(rc == want && strstr(err.msg, needle), "%s: rc %d, wanted %d; '%s' lacks '%s'", what,
              rc, want, err.msg, needle);
    CHECK_MSG(access(p_u, F_OK) != 0, "%s: u.mtx written", what);
    CHECK_MSG(access(p_obj, F_OK) != 0, "%s: mesh written", what);
    printf("%s: exit %d, %s\n", what, rc, err.msg);
    json_decref(js);
    remove(p_u);
    remove(p_obj);
}

/* Issue 26 item 5: the device computes u = U q and the vertices in float.
 * An input beyond the float range (basis 1e39, q 1e39, a mesh coordinate,
 * a translation) is bad input (exit 3) and a result that overflows float
 * (basis 1e38 times q 10; a translation 3e38 on top of a coordinate 3e38)
 * is a numerical failure (exit 5); neither writes a file holding inf,
 * which clsolve's own reader would refuse. A job fails the same way. */
static void test_float_range(void)
{
    char p_big[300], p_edge[300], p_q1[300], p_q10[300], p_qbig[300], p_mesh[300], p_mbig[300],
        p_dom[300], p_dbig[300], p_mhuge[300];
    const char *names[] = {"big.mtx", "edge.mtx",  "q1.mtx",  "q10.mtx",    "qbig.mtx",
                           "tri.obj", "trbig.obj", "dom.txt", "dombig.txt", "trhuge.obj"};
    char *paths[] = {p_big, p_edge, p_q1, p_q10, p_qbig, p_mesh, p_mbig, p_dom, p_dbig, p_mhuge};
    for (int k = 0; k < 10; k++)
        snprintf(paths[k], 300, "%s/%s", tmpdir, names[k]);
    const char *hdr = "%%MatrixMarket matrix array real general\n";
    char text[512];
    snprintf(text, sizeof text, "%s9 1\n1e39\n0\n0\n0\n0\n0\n0\n0\n0\n", hdr);
    write_text(p_big, text);
    snprintf(text, sizeof text, "%s9 1\n1e38\n0\n0\n0\n0\n0\n0\n0\n1\n", hdr);
    write_text(p_edge, text);
    snprintf(text, sizeof text, "%s1 1\n1\n", hdr);
    write_text(p_q1, text);
    snprintf(text, sizeof text, "%s1 2\n1\n10\n", hdr);
    write_text(p_q10, text);
    snprintf(text, sizeof text, "%s1 1\n1e39\n", hdr);
    write_text(p_qbig, text);
    write_text(p_mesh, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    write_text(p_mbig, "v 0 0 0\nv 1e39 0 0\nv 0 1 0\nf 1 2 3\n");
    write_text(p_mhuge, "v 0 0 0\nv 3e38 0 0\nv 0 1 0\nf 1 2 3\n");
    write_text(p_dom, "domains 1\ndomain 0 3 1\ntransform 0 0 1 0 0 0 1 0 0 0 1 3e38 0 0\n");
    write_text(p_dbig, "domains 1\ndomain 0 3 1\ntransform 0 0 1 0 0 0 1 0 0 0 1 1e39 0 0\n");

    float_range_case("basis 1e39", p_big, p_q1, NULL, NULL, CLS_EINPUT, "beyond the float range");
    float_range_case("q 1e39", p_edge, p_qbig, NULL, NULL, CLS_EINPUT, "beyond the float range");
    float_range_case("mesh coordinate 1e39", p_edge, p_q1, p_mbig, NULL, CLS_EINPUT,
                     "beyond the float range");
    float_range_case("translation 1e39", p_edge, p_q1, p_mesh, p_dbig, CLS_EINPUT,
                     "beyond the float range");
    /* u(0) = 1e38 * 10 overflows in frame 1 (frame 0, q = 1, is fine) */
    float_range_case("u = 1e38 * 10", p_edge, p_q10, NULL, NULL, CLS_EBREAKDOWN, "frame 1");
    /* u fits, x = x0 + u + p = 3e38 + 3e38 does not */
    float_range_case("x = 3e38 + 3e38", p_edge, p_q1, p_mhuge, p_dom, CLS_EBREAKDOWN, "frame 0");
    /* a job: the basis uploaded, q inline */
    char *res = NULL;
    cls_error err;
    cls_error_clear(&err);
    int rc = deform_job_run("{\"q\": [1]}", p_big, tmpdir, "auto", &res, &err);
    CHECK_MSG(rc == CLS_EINPUT && strstr(err.msg, "beyond the float range"), "job: %d %s", rc,
              err.msg);
    free(res);
    res = NULL;
    rc = deform_job_run("{\"q\": [[1], [10]]}", p_edge, tmpdir, "auto", &res, &err);
    CHECK_MSG(rc == CLS_EBREAKDOWN && strstr(err.msg, "not finite"), "job: %d %s", rc, err.msg);
    free(res);
    res = NULL;
    rc = deform_job_run("{\"q\": [1e39]}", p_edge, tmpdir, "auto", &res, &err);
    CHECK_MSG(rc == CLS_EUSAGE && strstr(err.msg, "beyond the float range"), "job: %d %s", rc,
              err.msg);
    free(res);
    char p_u[300];
    snprintf(p_u, sizeof p_u, "%s/u.mtx", tmpdir);
    CHECK(access(p_u, F_OK) != 0);
    for (int k = 0; k < 10; k++)
        remove(paths[k]);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    check_seed("test_deform");
    test_domains_file();
    ocl_device dev;
    cls_error err;
    if (ocl_pick_device("auto", &dev, &err) || ocl_ctx_create(&dev, &ctx, &err)) {
        printf("no OpenCL device (%s): device checks skipped\n", err.msg);
        return check_failures ? check_done("test_deform") : 77;
    }
    have_dev = 1;
    printf("device: %s\n", dev.name);
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_single();
    test_multi();
    test_update();
    test_files();
    test_float_range();
    rmdir(tmpdir);
    ocl_ctx_release(&ctx);
    return check_done("test_deform");
}
