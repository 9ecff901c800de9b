/*
 * test_amg_dsetup.c: the AMG set-up on the device (amg_build_device)
 * against its host twin (amg_build), on PoCL here.
 *
 * 1. Level by level, on fresh random SPD matrices (test_amg_gen.h), the
 *    generated Poisson problems and the shared data's SPD matrices, with a
 *    tiny host_rows so that most levels are built by the kernels: the same
 *    number of levels; P, R and every coarse operator with the same pattern
 *    (row pointers and columns identical: the same aggregates), values
 *    within 1e-11 of the matrix's largest, widened by the lambda_max's own
 *    difference (omega = 4/3 / lambda_max); lambda_max within 1e-9. Both
 *    smoothers, thresholds 0 and 0.05.
 *    R's rows sorted in local memory and (CLSOLVE_AMGS_SORT_CAP=8) from
 *    global memory.
 *    Level 0 given to the set-up as the solve's copy in CSR (used as is) and
 *    in SELL (turned back into CSR on the device), or not given (uploaded).
 * 2. The V-cycles agree: device-built M r against amg_apply_ref of the host
 *    hierarchy within 1e-9 (relative to the largest entry).
 * 5. amg_apply_block on 2, 3, 5 and 8 columns: each column amg_apply's
 *    V-cycle within 1e-12 (device-built and uploaded hierarchies), on
 *    row-major blocks with each SpMM and its update fused (amg_spmm.cl;
 *    long CSR rows split over sub-lanes by their length, and every CSR row
 *    over 8 and over 2), with them apart (CLSOLVE_AMG_FUSE=0), and by the
 *    column-major twin (the launches' names say which ran); Chebyshev of
 *    degrees 1, 2 and 3 (the fused smoother's paths), also with a smoothed
 *    coarsest level (two levels: the smoother from 0 with no residual).
 * 3. PCG with the device-built hierarchy converges on poisson3d 48 in the
 *    host hierarchy's iterations (within 1), and the true residual is
 *    checked on the host.
 * 4. Refusals: a float context (CLS_EUSAGE), a non-positive diagonal
 *    (CLS_EBREAKDOWN with the row), a non-square matrix.
 * 6. The numeric re-set-up (amg_rebuild_device) of A + s diag(A) from A's
 *    kept aggregates against the host's amg_rebuild: as in 1 and 2; the
 *    kept aggregates are the host's; another row count builds afresh.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_dev.h"
#include "matrices/gen.h"
#include "matrices/mm.h"
#include "solver/amg/amg.h"
#include "solver/amg/amg_priv.h"
#include "test_amg_gen.h"

static cls_error err;

#define OK(call)                                                                                   \
    do {                                                                                           \
        cls_error_clear(&err);                                                                     \
        int rc_ = (call);                                                                          \
        CHECK_MSG(rc_ == CLS_OK, "%s -> %d: %s", #call, rc_, err.msg);                             \
    } while (0)

/* a device la_csr (CSR form) downloaded into a host csr_matrix */
static int download(la_ctx *la, const la_csr *M, csr_matrix *H)
{
    if (csr_alloc(H, M->nrows, M->ncols, M->nnz, &err))
        return -1;
    size_t n = (size_t)M->nrows, nnz = (size_t)M->nnz;
    int32_t *rp = malloc((n + 1) * sizeof *rp);
    cl_command_queue q = la->ocl->queue;
    cl_int st = clEnqueueReadBuffer(q, M->rowptr, CL_TRUE, 0, (n + 1) * 4, rp, 0, NULL, NULL);
    if (nnz && st == CL_SUCCESS)
        st = clEnqueueReadBuffer(q, M->col, CL_TRUE, 0, nnz * 4, H->col, 0, NULL, NULL);
    if (nnz && st == CL_SUCCESS)
        st = clEnqueueReadBuffer(q, M->val, CL_TRUE, 0, nnz * 8, H->val, 0, NULL, NULL);
    for (size_t i = 0; i <= n; i++)
        H->rowptr[i] = rp[i];
    free(rp);
    return st == CL_SUCCESS ? 0 : -1;
}

/* device matrix M against host matrix H: same pattern, values within tol
 * of the matrix's largest entry (R A P's sums cancel: within one row the
 * entries of a random graph with both signs span many magnitudes) */
static void same_matrix(la_ctx *la, const char *what, int l, const la_csr *M, const csr_matrix *H,
                        double tol)
{
    csr_matrix D;
    csr_init(&D);
    CHECK_MSG(M->rowptr != NULL, "%s level %d: the device matrix is not in CSR form", what, l);
    if (!M->rowptr || download(la, M, &D)) {
        CHECK_MSG(0, "%s level %d: download failed", what, l);
        return;
    }
    int same = D.nrows == H->nrows && D.ncols == H->ncols && D.nnz == H->nnz;
    CHECK_MSG(same, "%s level %d: %lld x %lld (%lld nnz) on the device, %lld x %lld (%lld) host",
              what, l, (long long)D.nrows, (long long)D.ncols, (long long)D.nnz,
              (long long)H->nrows, (long long)H->ncols, (long long)H->nnz);
    if (same) {
        int64_t bad_rp = -1, bad_col = -1, bad_val = -1;
        double worst = 0.0;
        for (int64_t i = 0; i <= D.nrows && bad_rp < 0; i++)
            if (D.rowptr[i] != H->rowptr[i])
                bad_rp = i;
        double m = 0.0; /* the matrix's largest entry */
        for (int64_t k = 0; k < H->nnz; k++)
            m = fmax(m, fabs(H->val[k]));
        for (int64_t i = 0; i < D.nrows && bad_rp < 0; i++)
            for (int64_t k = H->rowptr[i]; k < H->rowptr[i + 1]; k++) {
                if (D.col[k] != H->col[k] && bad_col < 0)
                    bad_col = k;
                double e = fabs(D.val[k] - H->val[k]);
                if (!(e <= tol * m) && bad_val < 0)
                    bad_val = k;
                if (m > 0)
                    worst = fmax(worst, e / m);
            }
        CHECK_MSG(bad_rp < 0 && bad_col < 0 && bad_val < 0,
                  "%s level %d: row pointer %lld, column %lld, value %lld differ (worst %g)", what,
                  l, (long long)bad_rp, (long long)bad_col, (long long)bad_val, worst);
    }
    csr_free(&D);
}

/* z = M r with the device hierarchy, downloaded */
static void dev_apply(la_ctx *la, amg_device *d, const double *r, double *z, int64_t n)
{
    la_vec vr = {0}, vz = {0};
    OK(la_vec_create(la, n, &vr, &err));
    OK(la_vec_create(la, n, &vz, &err));
    OK(la_vec_upload(la, &vr, r, &err));
    OK(la_fill(la, NAN, &vz, &err));
    OK(amg_apply(d, la, &vr, &vz, &err));
    OK(la_vec_download(la, &vz, z, &err));
    la_vec_release(&vr);
    la_vec_release(&vz);
}

/* 5: amg_apply_block on k columns against amg_apply column by column;
 * fused: 1 when the fused SpMMs (amg_spmm.cl) must have run, 0 when they
 * must not have (the launches' names in the capture) */
static void block_apply(la_ctx *la, const char *what, amg_device *d, int64_t n, int k, int fused)
{
    la_vec vr[8], vz[8], v1 = {0};
    const la_vec *pr[8];
    la_vec *pz[8];
    double *r = malloc((size_t)n * k * sizeof *r), *zb = malloc((size_t)n * sizeof *zb);
    double *z1 = malloc((size_t)n * sizeof *z1);
    OK(la_vec_create(la, n, &v1, &err));
    for (int c = 0; c < k; c++) {
        OK(la_vec_create(la, n, &vr[c], &err));
        OK(la_vec_create(la, n, &vz[c], &err));
        for (int64_t i = 0; i < n; i++)
            r[c * n + i] = 2.0 * check_uniform() - 1.0;
        OK(la_vec_upload(la, &vr[c], r + c * n, &err));
        OK(la_fill(la, NAN, &vz[c], &err));
        pr[c] = &vr[c];
        pz[c] = &vz[c];
    }
    la_capture_begin(la);
    OK(amg_apply_block(d, la, k, pr, pz, &err));
    const char *names[LA_CAPTURE_MAX];
    int cnt = 0, smv = 0, rows = 0;
    la_capture_end_named(la, NULL, names, LA_CAPTURE_MAX, &cnt);
    for (int e = 0; e < cnt && e < LA_CAPTURE_MAX; e++) {
        smv += strncmp(names[e], "amg_smv_", 8) == 0;
        rows += strcmp(names[e], "amg_pack") == 0; /* the row-major V-cycle ran */
    }
    CHECK_MSG((smv > 0) == (fused && rows > 0),
              "%s: %d columns: %d fused SpMMs ran (%s expected, %s)", what, k, smv,
              fused && rows ? "some" : "none", rows ? "on blocks" : "columns apart");
    for (int c = 0; c < k; c++) {
        OK(la_vec_download(la, &vz[c], zb, &err));
        OK(amg_apply(d, la, &vr[c], &v1, &err));
        OK(la_vec_download(la, &v1, z1, &err));
        double e = 0.0, m = 0.0;
        for (int64_t i = 0; i < n; i++) {
            e = fmax(e, isnan(zb[i]) ? INFINITY : fabs(zb[i] - z1[i]));
            m = fmax(m, fabs(z1[i]));
        }
        CHECK_MSG(e <= 1e-12 * m, "%s: column %d of %d applied together differs by %g (max %g)",
                  what, c, k, e, m);
    }
    for (int c = 0; c < k; c++) {
        la_vec_release(&vr[c]);
        la_vec_release(&vz[c]);
    }
    la_vec_release(&v1);
    free(r);
    free(zb);
    free(z1);
}

/* the device hierarchy d's levels against the host's h: as many, and
 * each device level's lambda_max, P, R and next operator the same */
static void same_levels(la_ctx *la, const char *what, const amg_hierarchy *h, amg_device *d)
{
    amg_info hi, di;
    amg_get_info(h, &hi);
    CHECK(amg_device_info(d, &di) == 0);
    CHECK_MSG(hi.levels == di.levels && d->nlevels == h->nlevels,
              "%s: %d levels on the host, %d on the device", what, hi.levels, di.levels);
    printf("  %s: %lld rows, %d levels (%d built on the device), set-up %.3f s\n", what,
           (long long)h->lev[0].A.nrows, di.levels, di.device_levels, di.build_s);
    for (int l = 0; l < di.device_levels && l + 1 < h->nlevels && l + 1 < d->nlevels; l++) {
        CHECK_MSG(fabs(di.lambda_max[l] - h->lev[l].lmax) <= 1e-9 * h->lev[l].lmax,
                  "%s level %d: lambda_max %.17g on the device, %.17g host", what, l,
                  di.lambda_max[l], h->lev[l].lmax);
        /* omega = 4/3 / lambda_max scales P's smoothing term, so the two
         * lambda_max's own difference (up to 1e-9) carries into P, R and
         * R A P and widens their 1e-11 (seed 1796095019, a random graph's
         * level 1: lambda_max 3.6e-13 apart, P 1.02e-11 apart, which
         * failed the bare 1e-11 in CI) */
        const double dl = fabs(di.lambda_max[l] - h->lev[l].lmax) / h->lev[l].lmax;
        const double tol = 1e-11 + 4.0 * dl;
        same_matrix(la, what, l, &d->lev[l].P, &h->lev[l].P, tol);
        same_matrix(la, what, l, &d->lev[l].R, &h->lev[l].R, tol);
        same_matrix(la, what, l + 1, &d->lev[l + 1].A, &h->lev[l + 1].A, tol);
    }
}

/* the two V-cycles on two random vectors: within 1e-9 of the largest */
static void same_vcycle(la_ctx *la, const char *what, const amg_hierarchy *h, amg_device *d,
                        double *r, double *zr, double *zd, int64_t n)
{
    for (int t = 0; t < 2; t++) {
        for (int64_t i = 0; i < n; i++)
            r[i] = 2.0 * check_uniform() - 1.0;
        OK(amg_apply_ref(h, r, zr, &err));
        dev_apply(la, d, r, zd, n);
        double e = 0.0, m = 0.0;
        for (int64_t i = 0; i < n; i++) {
            e = fmax(e, isnan(zd[i]) ? INFINITY : fabs(zd[i] - zr[i]));
            m = fmax(m, fabs(zr[i]));
        }
        CHECK_MSG(e <= 1e-9 * m, "%s: the device-built V-cycle differs by %g (max %g)", what, e, m);
    }
}

/* 1 and 2 on one matrix; fmt: level 0 lent to the set-up in this SpMV
 * format (a SELL copy is turned back into CSR on the device), or
 * LA_SPMV_AUTO: not lent (uploaded by the set-up) */
static void compare(la_ctx *la, const char *what, const csr_matrix *A, const amg_options *o,
                    la_spmv_variant fmt)
{
    amg_hierarchy *h = NULL;
    amg_device *d = NULL;
    la_csr dA = {0};
    OK(amg_build(A, o, &h, &err));
    if (fmt != LA_SPMV_AUTO) {
        OK(la_csr_upload(la, A, fmt, &dA, &err));
        CHECK_MSG(dA.variant == fmt, "%s: uploaded as %s", what, la_spmv_variant_name(dA.variant));
    }
    OK(amg_build_device(A, o, la, fmt != LA_SPMV_AUTO ? &dA : NULL, &d, &err));
    if (!h || !d) {
        amg_free(h);
        amg_device_release(d);
        return;
    }
    same_levels(la, what, h, d);
    int64_t n = A->nrows;
    double *r = malloc((size_t)n * sizeof *r), *zr = malloc((size_t)n * sizeof *zr);
    double *zd = malloc((size_t)n * sizeof *zd);
    same_vcycle(la, what, h, d, r, zr, zd, n);
    /* k columns at once, on the device-built hierarchy and an uploaded one:
     * the V-cycle on row-major blocks (2, 4 and 8 wide; a GPU's default)
     * with each SpMM and its update in one pass (amg_spmm.cl), the same
     * blocks with them apart, then the column-major twin (a CPU device's) */
    for (int twin = 0; twin < 5; twin++) { /* 1, 2: every CSR row over 8, 2 sub-lanes */
        setenv("CLSOLVE_AMG_BLOCK", twin == 4 ? "columns" : "rows", 1);
        setenv("CLSOLVE_AMG_FUSE", twin == 3 ? "0" : "1", 1);
        setenv("CLSOLVE_AMG_LANES", twin == 1 ? "8" : twin == 2 ? "2" : "0", 1);
        /* fused: the Chebyshev smoother on blocks (l1-Jacobi's updates stay
         * apart, but P's and R's SpMMs are fused on any smoother) */
        const int fused = twin < 3 && (d->nlevels > 1 || (!d->coarse_direct &&
                                                          d->smoother == AMG_SMOOTHER_CHEBYSHEV &&
                                                          d->lev[0].cheb.degree > 1));
        block_apply(la, what, d, n, 2, fused);
        block_apply(la, what, d, n, 3, fused);
        block_apply(la, what, d, n, 8, fused);
        amg_device *du = NULL;
        OK(amg_upload(h, la, &du, &err));
        if (du)
            block_apply(la, what, du, n, 5, fused);
        amg_device_release(du);
        unsetenv("CLSOLVE_AMG_BLOCK");
        unsetenv("CLSOLVE_AMG_FUSE");
        unsetenv("CLSOLVE_AMG_LANES");
    }
    free(r);
    free(zr);
    free(zd);
    amg_free(h);
    amg_device_release(d);
    la_csr_release(&dA);
}

/* 6: the numeric re-set-up on the device. A's device hierarchy keeps its
 * aggregates; A2 = A + s diag(A) is rebuilt from them (the first hierarchy
 * released before, as the daemon does) and must be the host's amg_rebuild
 * of A2 from A's host hierarchy: the same aggregates (taken, then given),
 * levels, P, R and operators as in 1, and the V-cycle as in 2. host_rows
 * = coarse_size so that every aggregated level is a device one (the host
 * levels of a device set-up are set up afresh, amg_rebuild's keep theirs).
 * Then aggregates of another row count are not taken: a fresh build. */
static void test_rebuild(la_ctx *la, const char *what, const csr_matrix *A, double threshold)
{
    amg_options o;
    amg_options_default(&o);
    o.coarse_size = o.host_rows = 32;
    o.threshold = threshold;
    o.keep_aggregates = 1;
    amg_hierarchy *h = NULL, *hr = NULL, *hf = NULL;
    amg_device *d = NULL, *dr = NULL;
    csr_matrix A2;
    OK(csr_alloc(&A2, A->nrows, A->ncols, A->nnz, &err));
    memcpy(A2.rowptr, A->rowptr, (size_t)(A->nrows + 1) * sizeof *A2.rowptr);
    memcpy(A2.col, A->col, (size_t)A->nnz * sizeof *A2.col);
    const double sc = 0.05 + 0.95 * check_uniform();
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
            A2.val[e] = A->val[e] * (A->col[e] == i ? 1.0 + sc : 1.0);
    OK(amg_build(A, &o, &h, &err));
    OK(amg_build_device(A, &o, la, NULL, &d, &err));
    amg_dagg g;
    amg_device_take_aggregates(d, &g);
    amg_info di = {0};
    CHECK(!d || amg_device_info(d, &di) == 0);
    CHECK_MSG(g.levels == di.device_levels && g.levels > 0 && !amg_device_is_rebuilt(d),
              "%s: %d levels of aggregates kept, %d device levels", what, g.levels,
              di.device_levels);
    for (int l = 0; h && l < g.levels && l < h->nlevels; l++) { /* the kept ones are A's */
        int32_t *a = malloc((size_t)g.n[l] * sizeof *a);
        CHECK(clEnqueueReadBuffer(la->ocl->queue, g.agg[l], CL_TRUE, 0, (size_t)g.n[l] * 4, a, 0,
                                  NULL, NULL) == CL_SUCCESS);
        CHECK_MSG(g.n[l] == h->lev[l].A.nrows && g.naggs[l] == h->lev[l].naggs && h->lev[l].agg &&
                      !memcmp(a, h->lev[l].agg, (size_t)g.n[l] * sizeof *a),
                  "%s level %d: the kept aggregates are not the host's", what, l);
        free(a);
    }
    amg_device_release(d); /* before the re-set-up: it needs only g */
    OK(amg_rebuild_device(&A2, &o, la, NULL, &g, &dr, &err));
    CHECK_MSG(g.levels == 0 && !g.agg[0], "%s: the aggregates were not taken", what);
    OK(amg_rebuild(&A2, h, &hr, &err));
    OK(amg_build(&A2, &o, &hf, &err));
    if (dr && hr && hf) {
        char w[160];
        snprintf(w, sizeof w, "%s, re-set-up", what);
        CHECK_MSG(amg_device_is_rebuilt(dr) && amg_is_rebuilt(hr), "%s: rebuilt %d, host %d", w,
                  amg_device_is_rebuilt(dr), amg_is_rebuilt(hr));
        same_levels(la, w, hr, dr);
        int differ = hf->nlevels != hr->nlevels; /* A2's own aggregates, for the record */
        for (int l = 0; !differ && l + 1 < hr->nlevels; l++)
            differ = hf->lev[l].naggs != hr->lev[l].naggs ||
                     memcmp(hf->lev[l].agg, hr->lev[l].agg,
                            (size_t)hr->lev[l].A.nrows * sizeof(int32_t));
        printf("  %s: A2 = A + %.3f diag(A); its own aggregation %s\n", w, sc,
               differ ? "differs from A's" : "is A's");
        int64_t n = A->nrows;
        double *r = malloc((size_t)n * sizeof *r), *zr = malloc((size_t)n * sizeof *zr);
        double *zd = malloc((size_t)n * sizeof *zd);
        same_vcycle(la, w, hr, dr, r, zr, zd, n);
        free(r);
        free(zr);
        free(zd);
    }
    amg_device_release(dr);
    dr = NULL;
    /* aggregates of another matrix (A2's from dr... gone: take A's again
     * and give them to a matrix of other rows) */
    OK(amg_build_device(A, &o, la, NULL, &d, &err));
    amg_device_take_aggregates(d, &g);
    amg_device_release(d);
    csr_matrix B;
    OK(gen_matrix(GEN_POISSON2D, 30, &B, &err));
    if (B.nrows != A->nrows) {
        amg_hierarchy *hb = NULL;
        OK(amg_rebuild_device(&B, &o, la, NULL, &g, &dr, &err));
        OK(amg_build(&B, &o, &hb, &err));
        CHECK_MSG(dr && !amg_device_is_rebuilt(dr), "%s: another row count was re-set-up", what);
        if (dr && hb)
            same_levels(la, "poisson2d 30 given another matrix's aggregates", hb, dr);
        amg_free(hb);
    }
    amg_dagg_release(&g);
    amg_device_release(dr);
    csr_free(&B);
    amg_free(h);
    amg_free(hr);
    amg_free(hf);
    csr_free(&A2);
}

/* 3: PCG iterations with either hierarchy */
static int64_t pcg_iters(la_ctx *la, const csr_matrix *A, amg_device *M, double *true_res)
{
    int64_t n = A->nrows;
    double *one = malloc((size_t)n * sizeof *one), *b = malloc((size_t)n * sizeof *b);
    double *x = malloc((size_t)n * sizeof *x), *ax = malloc((size_t)n * sizeof *ax);
    for (int64_t i = 0; i < n; i++)
        one[i] = 1.0;
    csr_spmv_ref(A, one, b);
    la_csr dA = {0};
    la_vec vb = {0}, vx = {0};
    amg_pcg_result res = {0};
    OK(la_csr_upload(la, A, LA_SPMV_AUTO, &dA, &err));
    OK(la_vec_create(la, n, &vb, &err));
    OK(la_vec_create(la, n, &vx, &err));
    OK(la_vec_upload(la, &vb, b, &err));
    OK(la_fill(la, 0.0, &vx, &err));
    OK(amg_pcg(la, &dA, &vb, &vx, M, NULL, 1e-8, 100, &res, &err));
    OK(la_vec_download(la, &vx, x, &err));
    csr_spmv_ref(A, x, ax);
    double rr = 0.0, bb = 0.0;
    for (int64_t i = 0; i < n; i++) {
        rr += (b[i] - ax[i]) * (b[i] - ax[i]);
        bb += b[i] * b[i];
    }
    *true_res = sqrt(rr / bb);
    la_vec_release(&vb);
    la_vec_release(&vx);
    la_csr_release(&dA);
    free(one);
    free(b);
    free(x);
    free(ax);
    return res.converged ? res.iterations : -1;
}

static void test_pcg(la_ctx *la)
{
    csr_matrix A;
    OK(gen_matrix(GEN_POISSON3D, 48, &A, &err));
    amg_options o;
    amg_options_default(&o);
    o.host_rows = 500;
    amg_hierarchy *h = NULL;
    amg_device *dh = NULL, *dd = NULL;
    la_csr dA = {0};
    OK(amg_build(&A, &o, &h, &err));
    if (h)
        OK(amg_upload(h, la, &dh, &err));
    OK(la_csr_upload(la, &A, LA_SPMV_AUTO, &dA, &err));
    OK(amg_build_device(&A, &o, la, &dA, &dd, &err)); /* level 0 lent, in whatever format */
    if (dh && dd) {
        double rh, rd;
        int64_t ih = pcg_iters(la, &A, dh, &rh), id = pcg_iters(la, &A, dd, &rd);
        printf("  poisson3d 48: PCG %lld iterations with the host set-up, %lld with the device's "
               "(true residuals %.2e, %.2e)\n",
               (long long)ih, (long long)id, rh, rd);
        CHECK_MSG(ih > 0 && id > 0 && llabs(ih - id) <= 1 && id <= 15,
                  "poisson3d 48: %lld iterations (host set-up %lld)", (long long)id, (long long)ih);
        CHECK_MSG(rd <= 1e-7, "poisson3d 48: true residual %g with the device set-up", rd);
    }
    amg_device_release(dd);
    amg_device_release(dh);
    la_csr_release(&dA);
    amg_free(h);
    csr_free(&A);
}

/* amg_device_aggregates (the coupled hierarchy's aggregation of a part's
 * block on a GPU) against amg_part_aggregates: the same aggregates */
static void same_aggregates(la_ctx *la, const char *what, const csr_matrix *A, double threshold)
{
    amg_options o;
    amg_options_default(&o);
    o.threshold = threshold;
    const int64_t n = A->nrows;
    int32_t *h = malloc((size_t)(n + 1) * sizeof *h), *d = malloc((size_t)(n + 1) * sizeof *d);
    int64_t nh = -1, nd = -2;
    OK(amg_part_aggregates(A, &o, h, &nh, &err));
    OK(amg_device_aggregates(A, &o, la, d, &nd, &err));
    int64_t diff = 0;
    for (int64_t i = 0; i < n; i++)
        diff += h[i] != d[i];
    CHECK_MSG(nh == nd && diff == 0, "%s: device aggregates %lld (%lld nodes differ), host %lld",
              what, (long long)nd, (long long)diff, (long long)nh);
    free(h);
    free(d);
}

/* H and D: the same shape and pattern, values within tol of H's largest */
static void same_csr(const char *what, const char *which, const csr_matrix *H, const csr_matrix *D,
                     double tol)
{
    int same = H->nrows == D->nrows && H->ncols == D->ncols && H->nnz == D->nnz;
    double mx = 0.0, d = 0.0;
    for (int64_t i = 0; same && i <= H->nrows; i++)
        same = H->rowptr[i] == D->rowptr[i];
    for (int64_t e = 0; same && e < H->nnz; e++) {
        same = H->col[e] == D->col[e];
        mx = fmax(mx, fabs(H->val[e]));
        d = fmax(d, fabs(H->val[e] - D->val[e]));
    }
    CHECK_MSG(same && d <= tol * mx, "%s: %s differs (pattern %d, %g of %g)", what, which, same, d,
              mx);
}

/* amg_device_coupled_rows against amg_coupled_rows: the share of P'AP of
 * rows [r0, n) of A (the columns below r0 ghosts), P from the whole
 * matrix's aggregates; the same pattern, values within 1e-12 */
static void same_share(la_ctx *la, const char *what, const csr_matrix *A, int64_t r0)
{
    const int64_t n = A->nrows, nl = n - r0;
    int32_t *agg = malloc((size_t)n * sizeof *agg);
    double *t = malloc((size_t)n * sizeof *t), *diag = malloc((size_t)n * sizeof *diag);
    int64_t na = 0;
    OK(amg_part_aggregates(A, NULL, agg, &na, &err));
    amg_tentative_values(agg, n, na, t);
    amg_par_diag(A, diag);
    csr_matrix Pg, Ak, Pk, G, Ch, Cd;
    csr_init(&Pg), csr_init(&Ak), csr_init(&Pk), csr_init(&G), csr_init(&Ch), csr_init(&Cd);
    OK(amg_prolongator(A, diag, agg, na, 0.7, &Pg, &err));
    /* rows [r0, n): local columns j - r0, ghosts (j < r0) after them in order */
    int32_t *gi = malloc((size_t)(r0 + 1) * sizeof *gi);
    int64_t ng = 0;
    for (int64_t j = 0; j < r0; j++)
        gi[j] = -1;
    for (int64_t e = A->rowptr[r0]; e < A->rowptr[n]; e++)
        if (A->col[e] < r0)
            gi[A->col[e]] = 0;
    for (int64_t j = 0; j < r0; j++)
        if (gi[j] == 0)
            gi[j] = (int32_t)ng++;
    OK(csr_alloc(&Ak, nl, nl + ng, A->rowptr[n] - A->rowptr[r0], &err));
    int64_t q = 0;
    Ak.rowptr[0] = 0;
    for (int64_t i = r0; i < n; i++) {
        for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
            const int64_t j = A->col[e];
            Ak.col[q] = (int32_t)(j >= r0 ? j - r0 : nl + gi[j]);
            Ak.val[q++] = A->val[e];
        }
        Ak.rowptr[i - r0 + 1] = q;
    }
    OK(csr_alloc(&Pk, nl, na, Pg.rowptr[n] - Pg.rowptr[r0], &err));
    for (int64_t i = 0; i <= nl; i++)
        Pk.rowptr[i] = Pg.rowptr[r0 + i] - Pg.rowptr[r0];
    memcpy(Pk.col, Pg.col + Pg.rowptr[r0], (size_t)Pk.nnz * sizeof *Pk.col);
    memcpy(Pk.val, Pg.val + Pg.rowptr[r0], (size_t)Pk.nnz * sizeof *Pk.val);
    int64_t gn = 0;
    for (int64_t j = 0; j < r0; j++)
        if (gi[j] >= 0)
            gn += Pg.rowptr[j + 1] - Pg.rowptr[j];
    OK(csr_alloc(&G, ng, na, gn, &err));
    G.rowptr[0] = 0;
    q = 0;
    for (int64_t j = 0, g = 0; j < r0; j++) {
        if (gi[j] < 0)
            continue;
        for (int64_t e = Pg.rowptr[j]; e < Pg.rowptr[j + 1]; e++) {
            G.col[q] = Pg.col[e];
            G.val[q++] = Pg.val[e];
        }
        G.rowptr[++g] = q;
    }
    /* the part's rows of P by the device's kernel, from the columns'
     * aggregates and T values, against the host's */
    int32_t *ae = malloc((size_t)(nl + ng + 1) * sizeof *ae);
    double *te = malloc((size_t)(nl + ng + 1) * sizeof *te);
    for (int64_t i = 0; i < nl; i++)
        ae[i] = agg[r0 + i], te[i] = t[r0 + i];
    for (int64_t j = 0; j < r0; j++)
        if (gi[j] >= 0)
            ae[nl + gi[j]] = agg[j], te[nl + gi[j]] = t[j];
    csr_matrix Ph, Pd;
    csr_init(&Ph), csr_init(&Pd);
    OK(amg_part_prolongator(&Ak, ae, te, na, 0.7, &Ph, &err));
    OK(amg_device_prolongator(la, &Ak, ae, te, na, 0.7, &Pd, &err));
    same_csr(what, "the device's P", &Ph, &Pd, 1e-14);
    /* and the host's rows are the global P's (bits) */
    int gsame = Ph.nnz == Pk.nnz;
    for (int64_t e = 0; gsame && e < Ph.nnz; e++)
        gsame = Ph.col[e] == Pk.col[e] && Ph.val[e] == Pk.val[e];
    CHECK_MSG(gsame, "%s: the part's P is not the global P's rows", what);
    free(ae), free(te);
    csr_free(&Ph), csr_free(&Pd);
    OK(amg_coupled_rows(&Ak, &Pk, &G, &Ch, &err));
    OK(amg_device_coupled_rows(la, &Ak, &Pk, &G, &Cd, &err));
    same_csr(what, "the device share", &Ch, &Cd, 1e-12);
    free(agg), free(t), free(diag), free(gi);
    csr_free(&Pg), csr_free(&Ak), csr_free(&Pk), csr_free(&G), csr_free(&Ch), csr_free(&Cd);
}

static void test_refusals(la_ctx *la, ocl_ctx *ocl)
{
    csr_matrix A;
    OK(gen_matrix(GEN_POISSON2D, 40, &A, &err));
    amg_options o;
    amg_options_default(&o);
    o.host_rows = 10;
    amg_device *d = NULL;
    /* a negative diagonal in row 777 */
    for (int64_t k = A.rowptr[777]; k < A.rowptr[778]; k++)
        if (A.col[k] == 777)
            A.val[k] = -1.0;
    cls_error_clear(&err);
    int rc = amg_build_device(&A, &o, la, NULL, &d, &err);
    CHECK_MSG(rc == CLS_EBREAKDOWN && strstr(err.msg, "row 777") && !d,
              "a negative diagonal: rc %d (%s)", rc, err.msg);
    csr_free(&A);
    la_ctx lf;
    OK(la_init(&lf, ocl, LA_FLOAT, NULL, &err));
    OK(gen_matrix(GEN_POISSON2D, 20, &A, &err));
    cls_error_clear(&err);
    rc = amg_build_device(&A, &o, &lf, NULL, &d, &err);
    CHECK_MSG(rc == CLS_EUSAGE && !d, "float: rc %d (%s)", rc, err.msg);
    la_release(&lf);
    A.ncols = A.nrows + 1;
    cls_error_clear(&err);
    rc = amg_build_device(&A, &o, la, NULL, &d, &err);
    CHECK_MSG(rc == CLS_EINPUT && !d, "not square: rc %d (%s)", rc, err.msg);
    A.ncols = A.nrows;
    csr_free(&A);
}

int main(int argc, char **argv)
{
    check_seed("test_amg_dsetup");
    const char *dir = argc > 1 ? argv[1] : NULL;
    ocl_ctx ocl;
    la_ctx la;
    test_dev_open(&ocl, &la);
    amg_options o;
    amg_options_default(&o);
    o.host_rows = 64;
    o.coarse_size = 32;
    char what[96];
    for (int kind = 0; kind < 3; kind++)
        for (int v = 0; v < 2; v++) {
            csr_matrix A;
            random_spd(kind, 2000 + (int64_t)(check_rand() % 8000), &A);
            amg_options ov = o;
            ov.smoother = v ? AMG_SMOOTHER_L1_JACOBI : AMG_SMOOTHER_CHEBYSHEV;
            ov.threshold = v ? 0.05 : 0.0;
            snprintf(what, sizeof what, "random kind %d, %s, threshold %g", kind,
                     amg_smoother_name(ov.smoother), ov.threshold);
            compare(&la, what, &A, &ov, LA_SPMV_AUTO);
            if (v == 0) { /* level 0 lent as SELL (sigma > 1 on kind 2's rows) */
                snprintf(what, sizeof what, "random kind %d, level 0 in SELL", kind);
                compare(&la, what, &A, &ov, LA_SPMV_SELL);
            }
            csr_free(&A);
        }
    csr_matrix A;
    OK(gen_matrix(GEN_POISSON3D, 24, &A, &err));
    compare(&la, "poisson3d 24", &A, &o, LA_SPMV_AUTO);
    compare(&la, "poisson3d 24, level 0 in SELL", &A, &o, LA_SPMV_SELL);
    compare(&la, "poisson3d 24, level 0 in CSR", &A, &o, LA_SPMV_SCALAR);
    for (int deg = 1; deg <= 3; deg += 2) { /* the fused smoother's other paths (default 2) */
        amg_options od = o;
        od.degree = deg;
        snprintf(what, sizeof what, "poisson3d 24, Chebyshev of degree %d", deg);
        compare(&la, what, &A, &od, LA_SPMV_AUTO);
    }
    csr_free(&A);
    /* a smoothed coarsest level (two levels, the second above AMG_DENSE_MAX
     * rows): the smoother from x = 0 without the residual after it */
    OK(gen_matrix(GEN_POISSON3D, 36, &A, &err));
    for (int deg = 1; deg <= 3; deg++) {
        amg_options od = o;
        od.degree = deg;
        od.max_levels = 2;
        snprintf(what, sizeof what, "poisson3d 36, two levels, Chebyshev of degree %d", deg);
        compare(&la, what, &A, &od, LA_SPMV_AUTO);
    }
    csr_free(&A);
    OK(gen_matrix(GEN_POISSON3D, 24, &A, &err));
    setenv("CLSOLVE_AMGS_SORT_CAP", "8", 1); /* R's rows sorted from global memory */
    compare(&la, "poisson3d 24, long rows of R", &A, &o, LA_SPMV_AUTO);
    unsetenv("CLSOLVE_AMGS_SORT_CAP");
    csr_free(&A);
    OK(gen_matrix(GEN_POISSON2D, 120, &A, &err));
    compare(&la, "poisson2d 120", &A, &o, LA_SPMV_AUTO);
    csr_free(&A);
    int data_missing = 1;
    const char *spd[] = {"1138_bus.mtx", "494_bus.mtx", "ani1.mtx"};
    for (size_t m = 0; dir && m < sizeof spd / sizeof *spd; m++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/matrices/%s", dir, spd[m]);
        cls_error e;
        cls_error_clear(&e);
        if (mm_read_csr(path, NULL, &A, NULL, NULL, &e))
            continue;
        data_missing = 0;
        compare(&la, spd[m], &A, &o, LA_SPMV_AUTO);
        csr_free(&A);
    }
    /* the MIS rounds both ways: one work-item a row, and a team a row
     * (la_amgs.h; by default a team from 6 entries a row on: the Poisson
     * hierarchies above on every level, the _bus matrices' fine level
     * one work-item a row) */
    for (int team = 0; team < 2; team++) {
        setenv("CLSOLVE_AMGS_TEAM", team ? "1" : "0", 1);
        for (int kind = 0; kind < 3; kind++) {
            random_spd(kind, 1000 + (int64_t)(check_rand() % 4000), &A);
            snprintf(what, sizeof what, "aggregates, random kind %d, team %d", kind, team);
            same_aggregates(&la, what, &A, kind == 1 ? 0.05 : 0.0);
            csr_free(&A);
        }
        OK(gen_matrix(GEN_POISSON3D, 20, &A, &err));
        snprintf(what, sizeof what, "aggregates, poisson3d 20, team %d", team);
        same_aggregates(&la, what, &A, 0.0);
        if (!team)
            csr_free(&A); /* the last is kept for the shares below */
    }
    unsetenv("CLSOLVE_AMGS_TEAM");
    same_share(&la, "share of P'AP, poisson3d 20, one part", &A, 0);
    same_share(&la, "share of P'AP, poisson3d 20, rows from 3000", &A, 3000);
    csr_free(&A);
    random_spd(2, 3000, &A);
    same_share(&la, "share of P'AP, random graph, rows from 1234", &A, 1234);
    csr_free(&A);
    for (int kind = 0; kind < 3; kind++) { /* 6 */
        random_spd(kind, 2000 + (int64_t)(check_rand() % 6000), &A);
        snprintf(what, sizeof what, "random kind %d, threshold %g", kind, kind ? 0.05 : 0.0);
        test_rebuild(&la, what, &A, kind ? 0.05 : 0.0);
        csr_free(&A);
    }
    OK(gen_matrix(GEN_POISSON3D, 24, &A, &err));
    test_rebuild(&la, "poisson3d 24, threshold 0.05", &A, 0.05);
    csr_free(&A);
    test_pcg(&la);
    test_refusals(&la, &ocl);
    la_release(&la);
    ocl_ctx_release(&ocl);
    int rc = check_done("test_amg_dsetup");
    if (rc == 0 && data_missing)
        CHECK_SKIP("shared data not found under %s: its matrices were not tested",
                   dir ? dir : "(none)");
    return rc;
}
