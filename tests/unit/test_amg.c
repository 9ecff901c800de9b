/*
 * test_amg.c: smoothed-aggregation AMG (solver/amg/amg.h).
 *
 * 1. Set-up pieces against plain dense references on fresh random SPD
 *    matrices: strength graph, aggregation invariants, smoothed prolongator
 *    (I - w D^-1 A) T, transpose, Galerkin product R A P, coarsest inverse.
 * 2. The hierarchy is the same bits on 1, 2 and 3 threads.
 * 3. The device V-cycle against the host reference V-cycle (amg_apply_ref)
 *    with NaN-poisoned outputs, both smoothers, double and float, several
 *    levels; the device operator through amg_upload_fine agrees.
 * 4. The V-cycle is SPD: y'Mx = x'My within rounding and x'Mx > 0 on
 *    random vectors (host reference and device).
 * 5. PCG end to end (amg_pcg on PoCL): poisson3d 64 and 128 within 15
 *    iterations at 1e-8, poisson2d, 1138_bus and 494_bus in fewer than half
 *    of Jacobi-PCG's iterations, every SPD matrix of the shared data, and
 *    the ones that are not SPD refused or never reported converged wrongly.
 * 6. Bad options and shapes are refused with the right class.
 * 7. The numeric re-set-up (amg_rebuild): with the values scaled by a
 *    power of two it is the fresh build's hierarchy bit for bit (so every
 *    value was made anew, none kept); with other values of the same
 *    pattern it keeps the aggregates, its P and coarse operators are the
 *    set-up steps' own on the new values, and PCG with it takes about the
 *    fresh hierarchy's iterations; it outlives the hierarchy it came from;
 *    another pattern is refused.
 * Inputs are fresh each run (seed printed; CLSOLVE_TEST_SEED replays).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_amg_gen.h"
#include "matrices/gen.h"
#include "matrices/mm.h"
#include "solver/amg/amg.h"
#include "solver/amg/amg_priv.h"

static cls_error err;

#define OK(call)                                                                                   \
    do {                                                                                           \
        cls_error_clear(&err);                                                                     \
        int rc_ = (call);                                                                          \
        CHECK_MSG(rc_ == CLS_OK, "%s -> %d: %s", #call, rc_, err.msg);                             \
    } while (0)

static double uni(void) /* [-1, 1) */
{
    return 2.0 * check_uniform() - 1.0;
}

static double *to_dense(const csr_matrix *A)
{
    double *D = calloc((size_t)(A->nrows * A->ncols + 1), sizeof *D);
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            D[i * A->ncols + A->col[k]] += A->val[k];
    return D;
}

static int csr_sorted(const csr_matrix *A)
{
    for (int64_t i = 0; i < A->nrows; i++)
        for (int64_t k = A->rowptr[i] + 1; k < A->rowptr[i + 1]; k++)
            if (A->col[k] <= A->col[k - 1])
                return 0;
    return 1;
}

/* ------------------------------------------------------ 1. set-up pieces */

static void test_pieces(int kind)
{
    csr_matrix A;
    random_spd(kind, 400 + (int64_t)(check_rand() % 1200), &A);
    int64_t n = A.nrows;
    double *diag = malloc((size_t)n * sizeof *diag);
    amg_par_diag(&A, diag);
    double theta = kind == 2 ? 0.0 : 0.05 * check_uniform();

    /* strength: the plain test on every stored entry */
    amg_graph S;
    OK(amg_strength(&A, diag, theta, &S, &err));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t p = S.ptr[i];
        for (int64_t k = A.rowptr[i]; k < A.rowptr[i + 1]; k++) {
            int32_t j = A.col[k];
            int strong =
                j != i && fabs(A.val[k]) > theta * sqrt(diag[i] * diag[j]) && A.val[k] != 0.0;
            if (strong)
                bad += p >= S.ptr[i + 1] || S.adj[p++] != j;
        }
        bad += p != S.ptr[i + 1];
    }
    CHECK_MSG(bad == 0, "kind %d: %lld strength rows differ from the plain test", kind,
              (long long)bad);

    /* aggregation invariants */
    int32_t *agg = malloc((size_t)n * sizeof *agg);
    int64_t na = 0;
    OK(amg_aggregate(&S, agg, &na, &err));
    CHECK(na > 0 && na < n);
    int64_t *size = calloc((size_t)na + 1, sizeof *size);
    int64_t bad_id = 0, missed = 0, unconnected = 0;
    for (int64_t i = 0; i < n; i++) {
        if (agg[i] < -1 || agg[i] >= na)
            bad_id++;
        else if (agg[i] >= 0)
            size[agg[i]]++;
        if (agg[i] < 0 && S.ptr[i + 1] > S.ptr[i])
            missed++;
    }
    for (int64_t i = 0; i < n; i++) {
        if (agg[i] < 0 || size[agg[i]] == 1)
            continue;
        int found = 0; /* a member of a larger aggregate has a strong neighbour in it */
        for (int64_t k = S.ptr[i]; k < S.ptr[i + 1]; k++)
            found |= agg[S.adj[k]] == agg[i];
        unconnected += !found;
    }
    int64_t empty = 0;
    for (int64_t a = 0; a < na; a++)
        empty += size[a] == 0;
    CHECK_MSG(bad_id == 0 && missed == 0 && empty == 0 && unconnected == 0,
              "kind %d: aggregation: %lld bad ids, %lld connected rows left out, %lld empty, "
              "%lld members without a neighbour in their aggregate",
              kind, (long long)bad_id, (long long)missed, (long long)empty, (long long)unconnected);

    /* prolongator against (I - w D^-1 A) T, densely */
    double lmax = 0.0;
    OK(amg_lambda_max(&A, diag, 10, &lmax, &err));
    CHECK_MSG(lmax > 0.0 && lmax <= 2.0 + 1e-12, "kind %d: lambda_max(D^-1 A) %g", kind, lmax);
    double omega = (4.0 / 3.0) / lmax;
    csr_matrix P, R, Ac;
    OK(amg_prolongator(&A, diag, agg, na, omega, &P, &err));
    CHECK(P.nrows == n && P.ncols == na && csr_sorted(&P));
    double *Ad = to_dense(&A), *Pd = to_dense(&P);
    double *Pr = calloc((size_t)(n * na), sizeof *Pr);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            if (agg[j] < 0)
                continue;
            double sij = (i == j ? 1.0 : 0.0) - omega * Ad[i * n + j] / diag[i];
            Pr[i * na + agg[j]] += sij / sqrt((double)size[agg[j]]);
        }
    double dp = 0.0, mp = 0.0;
    for (int64_t k = 0; k < n * na; k++) {
        dp = fmax(dp, fabs(Pd[k] - Pr[k]));
        mp = fmax(mp, fabs(Pr[k]));
    }
    CHECK_MSG(dp <= 1e-13 * mp, "kind %d: prolongator differs by %g (max %g)", kind, dp, mp);

    /* transpose: exact */
    OK(amg_transpose(&P, &R, &err));
    CHECK(R.nrows == na && R.ncols == n && csr_sorted(&R) && R.nnz == P.nnz);
    double *Rd = to_dense(&R);
    int64_t tdiff = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t a = 0; a < na; a++)
            tdiff += Rd[a * n + i] != Pd[i * na + a];
    CHECK_MSG(tdiff == 0, "kind %d: transpose differs in %lld entries", kind, (long long)tdiff);

    /* RAP against the dense triple product */
    OK(amg_rap(&A, &P, &R, &Ac, &err));
    CHECK(Ac.nrows == na && Ac.ncols == na && csr_sorted(&Ac));
    double *Acd = to_dense(&Ac), *AP = calloc((size_t)(n * na), sizeof *AP);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < n; k++)
            if (Ad[i * n + k] != 0.0)
                for (int64_t a = 0; a < na; a++)
                    AP[i * na + a] += Ad[i * n + k] * Pd[k * na + a];
    double dr = 0.0, mr = 0.0, asym = 0.0;
    for (int64_t a = 0; a < na; a++)
        for (int64_t b = 0; b < na; b++) {
            double s = 0.0;
            for (int64_t i = 0; i < n; i++)
                s += Pd[i * na + a] * AP[i * na + b];
            dr = fmax(dr, fabs(s - Acd[a * na + b]));
            mr = fmax(mr, fabs(s));
            asym = fmax(asym, fabs(Acd[a * na + b] - Acd[b * na + a]));
        }
    CHECK_MSG(dr <= 1e-12 * mr, "kind %d: RAP differs by %g (max %g)", kind, dr, mr);
    CHECK_MSG(asym <= 1e-12 * mr, "kind %d: RAP is not symmetric (%g)", kind, asym);

    /* coarsest inverse: A X = I */
    double *X = NULL;
    OK(amg_dense_inverse(&Ac, &X, &err));
    if (X) {
        double e = 0.0;
        for (int64_t a = 0; a < na; a++)
            for (int64_t b = 0; b < na; b++) {
                double s = 0.0;
                for (int64_t c = 0; c < na; c++)
                    s += Acd[a * na + c] * X[c * na + b];
                e = fmax(e, fabs(s - (a == b ? 1.0 : 0.0)));
            }
        CHECK_MSG(e < 1e-8, "kind %d: coarse A X - I = %g", kind, e);
        int sym = 1;
        for (int64_t a = 0; a < na; a++)
            for (int64_t b = 0; b < na; b++)
                sym &= X[a * na + b] == X[b * na + a];
        CHECK(sym);
    }
    /* a matrix that is not positive definite is refused */
    csr_matrix N;
    OK(csr_alloc(&N, 2, 2, 4, &err));
    int64_t rp[3] = {0, 2, 4};
    memcpy(N.rowptr, rp, sizeof rp);
    N.col[0] = 0, N.col[1] = 1, N.col[2] = 0, N.col[3] = 1;
    N.val[0] = 1, N.val[1] = 2, N.val[2] = 2, N.val[3] = 1;
    double *Xn = NULL;
    CHECK(amg_dense_inverse(&N, &Xn, &err) == CLS_EBREAKDOWN && !Xn);
    csr_free(&N);

    free(X);
    free(Acd);
    free(AP);
    free(Rd);
    free(Pr);
    free(Pd);
    free(Ad);
    free(size);
    free(agg);
    free(diag);
    amg_graph_free(&S);
    csr_free(&P);
    csr_free(&R);
    csr_free(&Ac);
    csr_free(&A);
}

/* ---------------------------------------------- 2. thread independence */

static int csr_same(const csr_matrix *a, const csr_matrix *b)
{
    return a->nrows == b->nrows && a->ncols == b->ncols && a->nnz == b->nnz &&
           !memcmp(a->rowptr, b->rowptr, (size_t)(a->nrows + 1) * sizeof *a->rowptr) &&
           !memcmp(a->col, b->col, (size_t)a->nnz * sizeof *a->col) &&
           !memcmp(a->val, b->val, (size_t)a->nnz * sizeof *a->val);
}

static void test_threads(void)
{
    csr_matrix A;
    random_spd((int)(check_rand() % 3), 40000 + (int64_t)(check_rand() % 20000), &A);
    amg_options o;
    amg_options_default(&o);
    o.coarse_size = 30;
    amg_hierarchy *h[3] = {NULL, NULL, NULL};
    const char *th[3] = {"1", "2", "3"};
    for (int t = 0; t < 3; t++) {
        setenv("CLS_THREADS", th[t], 1);
        OK(amg_build(&A, &o, &h[t], &err));
    }
    unsetenv("CLS_THREADS");
    if (h[0] && h[1] && h[2]) {
        CHECK(h[0]->nlevels > 2);
        for (int t = 1; t < 3; t++) {
            CHECK(h[t]->nlevels == h[0]->nlevels);
            for (int l = 0; l < h[0]->nlevels && l < h[t]->nlevels; l++) {
                CHECK_MSG(csr_same(&h[0]->lev[l].A, &h[t]->lev[l].A),
                          "level %d operator differs on %s threads", l, th[t]);
                CHECK_MSG(h[0]->lev[l].lmax == h[t]->lev[l].lmax,
                          "level %d lambda_max differs on %s threads", l, th[t]);
                if (l + 1 < h[0]->nlevels)
                    CHECK_MSG(csr_same(&h[0]->lev[l].P, &h[t]->lev[l].P),
                              "level %d prolongator differs on %s threads", l, th[t]);
            }
        }
    }
    for (int t = 0; t < 3; t++)
        amg_free(h[t]);
    csr_free(&A);
}

/* ------------------------------------------ 4. the V-cycle is SPD (host) */

static double dot(const double *x, const double *y, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += x[i] * y[i];
    return s;
}

static void test_ref_spd(int kind, amg_smoother sm)
{
    csr_matrix A;
    random_spd(kind, 2000 + (int64_t)(check_rand() % 3000), &A);
    amg_options o;
    amg_options_default(&o);
    o.smoother = sm;
    o.degree = 1 + (int)(check_rand() % 3);
    o.coarse_size = 10 + (int64_t)(check_rand() % 40);
    amg_hierarchy *h = NULL;
    OK(amg_build(&A, &o, &h, &err));
    if (!h) {
        csr_free(&A);
        return;
    }
    CHECK_MSG(h->nlevels >= 3, "kind %d: %d levels", kind, h->nlevels);
    int64_t n = A.nrows;
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    double *Mx = malloc((size_t)n * sizeof *Mx), *My = malloc((size_t)n * sizeof *My);
    for (int t = 0; t < 4; t++) {
        for (int64_t i = 0; i < n; i++) {
            x[i] = uni();
            y[i] = uni();
        }
        OK(amg_apply_ref(h, x, Mx, &err));
        OK(amg_apply_ref(h, y, My, &err));
        double yMx = dot(y, Mx, n), xMy = dot(x, My, n), xMx = dot(x, Mx, n);
        double scale = sqrt(dot(y, y, n) * dot(Mx, Mx, n)) + sqrt(dot(x, x, n) * dot(My, My, n));
        CHECK_MSG(fabs(yMx - xMy) <= 1e-12 * scale, "kind %d %s degree %d: y'Mx %.17g x'My %.17g",
                  kind, amg_smoother_name(sm), o.degree, yMx, xMy);
        CHECK_MSG(xMx > 0.0, "kind %d %s: x'Mx = %g", kind, amg_smoother_name(sm), xMx);
    }
    free(x);
    free(y);
    free(Mx);
    free(My);
    amg_free(h);
    csr_free(&A);
}

/* ------------------------------------------- 7. the numeric re-set-up */

/* PCG on the host with the reference V-cycle: iterations to rtol (b = A 1) */
static int pcg_ref_iters(const amg_hierarchy *h, const csr_matrix *A, double rtol)
{
    int64_t n = A->nrows;
    double *x = calloc((size_t)n, sizeof *x), *r = calloc((size_t)n, sizeof *r);
    double *z = malloc((size_t)n * sizeof *z), *p = malloc((size_t)n * sizeof *p);
    double *q = malloc((size_t)n * sizeof *q);
    int it = -1;
    for (int64_t i = 0; i < n; i++) {
        r[i] = 0.0;
        for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
            r[i] += A->val[e];
    }
    double rr0 = dot(r, r, n), rz = 0.0;
    if (amg_apply_ref(h, r, z, &err) != CLS_OK)
        goto out;
    memcpy(p, z, (size_t)n * sizeof *p);
    rz = dot(r, z, n);
    for (int k = 1; k <= 500; k++) {
        for (int64_t i = 0; i < n; i++) {
            q[i] = 0.0;
            for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
                q[i] += A->val[e] * p[A->col[e]];
        }
        double alpha = rz / dot(p, q, n);
        for (int64_t i = 0; i < n; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        if (dot(r, r, n) <= rtol * rtol * rr0) {
            it = k;
            break;
        }
        if (amg_apply_ref(h, r, z, &err) != CLS_OK)
            break;
        double rz1 = dot(r, z, n);
        for (int64_t i = 0; i < n; i++)
            p[i] = z[i] + rz1 / rz * p[i];
        rz = rz1;
    }
out:
    free(x);
    free(r);
    free(z);
    free(p);
    free(q);
    return it;
}

static int copy_csr(const csr_matrix *A, csr_matrix *B, cls_error *e)
{
    int rc = csr_alloc(B, A->nrows, A->ncols, A->nnz, e);
    if (rc)
        return rc;
    memcpy(B->rowptr, A->rowptr, (size_t)(A->nrows + 1) * sizeof *A->rowptr);
    memcpy(B->col, A->col, (size_t)A->nnz * sizeof *A->col);
    memcpy(B->val, A->val, (size_t)A->nnz * sizeof *A->val);
    return CLS_OK;
}

static void test_rebuild(int kind)
{
    csr_matrix A, A4, A2;
    random_spd(kind, 20000 + (int64_t)(check_rand() % 20000), &A);
    amg_options o;
    amg_options_default(&o);
    o.coarse_size = 30;
    amg_hierarchy *h = NULL, *fresh = NULL, *re = NULL;
    OK(amg_build(&A, &o, &h, &err));
    if (!h) {
        csr_free(&A);
        return;
    }
    CHECK_MSG(h->nlevels > 2 && !amg_is_rebuilt(h), "kind %d: %d levels", kind, h->nlevels);

    /* (a) 4 A: the same aggregates, every value 4x (D^-1 A the same bits):
     * the re-set-up must be the fresh build of 4 A exactly */
    OK(copy_csr(&A, &A4, &err));
    for (int64_t e = 0; e < A4.nnz; e++)
        A4.val[e] *= 4.0;
    OK(amg_build(&A4, &o, &fresh, &err));
    OK(amg_rebuild(&A4, h, &re, &err));
    if (fresh && re) {
        CHECK_MSG(amg_is_rebuilt(re) && re->nlevels == fresh->nlevels,
                  "kind %d: rebuilt %d, %d levels against %d", kind, amg_is_rebuilt(re),
                  re->nlevels, fresh->nlevels);
        for (int l = 0; l < re->nlevels && l < fresh->nlevels; l++) {
            CHECK_MSG(
                csr_same(&re->lev[l].A, &fresh->lev[l].A) && re->lev[l].lmax == fresh->lev[l].lmax,
                "kind %d: level %d operator or lambda_max differs from the fresh build's", kind, l);
            if (l + 1 < re->nlevels)
                CHECK_MSG(csr_same(&re->lev[l].P, &fresh->lev[l].P) &&
                              csr_same(&re->lev[l].R, &fresh->lev[l].R) &&
                              !memcmp(re->lev[l].agg, fresh->lev[l].agg,
                                      (size_t)re->lev[l].A.nrows * sizeof(int32_t)),
                          "kind %d: level %d P, R or aggregates differ from the fresh build's",
                          kind, l);
        }
        /* and not the old values: level 1 is 4x h's */
        CHECK(re->lev[1].A.nnz == h->lev[1].A.nnz &&
              re->lev[1].A.val[0] == 4.0 * h->lev[1].A.val[0]);
        CHECK(re->coarse_direct == fresh->coarse_direct);
        if (re->coarse_direct && fresh->coarse_direct) {
            int64_t nc = re->lev[re->nlevels - 1].A.nrows;
            CHECK(!memcmp(re->coarse_inv, fresh->coarse_inv, (size_t)(nc * nc) * sizeof(double)));
        }
    }
    amg_free(fresh);
    amg_free(re);
    fresh = re = NULL;

    /* (b) other values, same pattern: A + s diag(A), s in [0.05, 1] */
    OK(copy_csr(&A, &A2, &err));
    double s = 0.05 + 0.95 * check_uniform();
    for (int64_t i = 0; i < A2.nrows; i++)
        for (int64_t e = A2.rowptr[i]; e < A2.rowptr[i + 1]; e++)
            if (A2.col[e] == i)
                A2.val[e] *= 1.0 + s;
    OK(amg_rebuild(&A2, h, &re, &err));
    OK(amg_build(&A2, &o, &fresh, &err));
    if (re)
        for (int l = 0; l + 1 < re->nlevels && l + 1 < h->nlevels; l++)
            CHECK_MSG(re->lev[l].naggs == h->lev[l].naggs &&
                          !memcmp(re->lev[l].agg, h->lev[l].agg,
                                  (size_t)h->lev[l].A.nrows * sizeof(int32_t)),
                      "kind %d: level %d's aggregates are not the earlier hierarchy's", kind, l);
    amg_free(h); /* the re-set-up owns what it holds */
    h = NULL;
    if (re && fresh) {
        CHECK(amg_is_rebuilt(re));
        amg_level *L0 = &re->lev[0];
        int64_t n = L0->A.nrows;
        double *d = malloc((size_t)n * sizeof *d);
        csr_matrix P, R, Ac;
        amg_par_diag(&A2, d);
        OK(amg_prolongator(&A2, d, L0->agg, L0->naggs, o.omega_scale / L0->lmax, &P, &err));
        OK(amg_transpose(&P, &R, &err));
        OK(amg_rap(&A2, &P, &R, &Ac, &err));
        CHECK_MSG(csr_same(&P, &L0->P) && csr_same(&R, &L0->R) && csr_same(&Ac, &re->lev[1].A),
                  "kind %d: the re-set-up's P, R or A_1 are not the steps' own on the new values",
                  kind);
        /* the values-only steps into the right patterns, values zeroed:
         * the full steps' bits (the path taken, not only its fallback) */
        csr_matrix Cv, Tv;
        if (copy_csr(&Ac, &Cv, &err) == CLS_OK && copy_csr(&R, &Tv, &err) == CLS_OK) {
            memset(Cv.val, 0, (size_t)Cv.nnz * sizeof *Cv.val);
            memset(Tv.val, 0, (size_t)Tv.nnz * sizeof *Tv.val);
            CHECK(amg_transpose_values(&P, &Tv, &err) == CLS_OK && csr_same(&Tv, &R));
            CHECK(amg_rap_values(&A2, &P, &R, &Cv, &err) == CLS_OK && csr_same(&Cv, &Ac));
            /* a repeated column in a row of the right length: refused */
            int64_t r0 = -1;
            for (int64_t i = 0; i < Cv.nrows && r0 < 0; i++)
                if (Cv.rowptr[i + 1] - Cv.rowptr[i] >= 2)
                    r0 = i;
            if (r0 >= 0) {
                Cv.col[Cv.rowptr[r0] + 1] = Cv.col[Cv.rowptr[r0]];
                CHECK(amg_rap_values(&A2, &P, &R, &Cv, &err) == CLS_EOTHER);
                Cv.col[Cv.rowptr[r0] + 1] = (int32_t)Cv.ncols; /* out of range */
                CHECK(amg_rap_values(&A2, &P, &R, &Cv, &err) == CLS_EOTHER);
            }
        }
        csr_free(&Cv);
        csr_free(&Tv);
        /* the values-only steps refuse a pattern that does not fit */
        csr_matrix Cb, Tb;
        if (Ac.nnz > 1 && copy_csr(&Ac, &Cb, &err) == CLS_OK) {
            Cb.rowptr[Cb.nrows]--; /* the last row one entry short */
            Cb.nnz--;
            CHECK(amg_rap_values(&A2, &P, &R, &Cb, &err) == CLS_EOTHER &&
                  strstr(err.msg, "pattern"));
            Cb.rowptr[Cb.nrows]++; /* one entry no product reaches */
            Cb.nnz++;
            Cb.col[Cb.nnz - 1] = Cb.col[Cb.nnz - 1] == 0 ? 1 : 0;
            csr_sort_row_by_col(Cb.col + Cb.rowptr[Cb.nrows - 1], Cb.val + Cb.rowptr[Cb.nrows - 1],
                                Cb.rowptr[Cb.nrows] - Cb.rowptr[Cb.nrows - 1]);
            int dup = 0;
            for (int64_t q = Cb.rowptr[Cb.nrows - 1] + 1; q < Cb.nnz; q++)
                dup |= Cb.col[q] == Cb.col[q - 1];
            CHECK(dup || amg_rap_values(&A2, &P, &R, &Cb, &err) == CLS_EOTHER);
            csr_free(&Cb);
        }
        if (copy_csr(&R, &Tb, &err) == CLS_OK) {
            Tb.col[Tb.rowptr[1] - 1] = (int32_t)Tb.ncols; /* out of every row's reach */
            CHECK(amg_transpose_values(&P, &Tb, &err) == CLS_EOTHER);
            csr_free(&Tb);
        }
        csr_free(&P);
        csr_free(&R);
        csr_free(&Ac);
        free(d);
        int it_re = pcg_ref_iters(re, &A2, 1e-8), it_fresh = pcg_ref_iters(fresh, &A2, 1e-8);
        CHECK_MSG(it_re > 0 && it_fresh > 0 && it_re <= it_fresh + 2 + it_fresh / 5,
                  "kind %d (s %.3f): PCG took %d iterations with the re-set-up, %d fresh", kind, s,
                  it_re, it_fresh);
        printf("re-set-up, kind %d, %lld rows, %d levels: PCG %d iterations (fresh %d)\n", kind,
               (long long)n, re->nlevels, it_re, it_fresh);
        /* (c) another pattern of the same size (the rows reversed:
         * P' A P, the same rows and entries): refused; and of another size */
        csr_matrix Q;
        if (copy_csr(&A2, &Q, &err) == CLS_OK) {
            int64_t z = 0;
            for (int64_t i = 0; i < n; i++) { /* row i of Q = row n-1-i of A2, columns mirrored */
                int64_t s0 = A2.rowptr[n - 1 - i], s1 = A2.rowptr[n - i];
                Q.rowptr[i] = z;
                for (int64_t e = s1 - 1; e >= s0; e--, z++) {
                    Q.col[z] = (int32_t)(n - 1 - A2.col[e]);
                    Q.val[z] = A2.val[e];
                }
            }
            Q.rowptr[n] = z;
            amg_hierarchy *bq = NULL;
            cls_error_clear(&err);
            int same = !memcmp(Q.rowptr, A2.rowptr, (size_t)(n + 1) * sizeof *Q.rowptr) &&
                       !memcmp(Q.col, A2.col, (size_t)Q.nnz * sizeof *Q.col);
            CHECK(same || (amg_rebuild(&Q, re, &bq, &err) == CLS_EUSAGE && !bq));
            amg_free(bq);
            csr_free(&Q);
        }
        csr_matrix B;
        random_spd(kind, n / 2, &B);
        amg_hierarchy *bad = NULL;
        cls_error_clear(&err);
        CHECK(amg_rebuild(&B, re, &bad, &err) == CLS_EUSAGE && !bad && strstr(err.msg, "patterns"));
        csr_free(&B);
    }
    amg_free(re);
    amg_free(fresh);
    amg_free(h);
    csr_free(&A2);
    csr_free(&A4);
    csr_free(&A);
}

/* ------------------------------------------------------------ 6. refusals */

static void test_refusals(void)
{
    csr_matrix A;
    random_spd(0, 400, &A);
    amg_hierarchy *h = NULL;
    amg_options o;
    amg_options_default(&o);
    o.threshold = -0.5;
    CHECK(amg_build(&A, &o, &h, &err) == CLS_EUSAGE && !h);
    amg_options_default(&o);
    o.degree = 0;
    CHECK(amg_build(&A, &o, &h, &err) == CLS_EUSAGE && !h);
    amg_options_default(&o);
    o.cheb_lower = 2.0;
    CHECK(amg_build(&A, &o, &h, &err) == CLS_EUSAGE && !h);
    amg_options_default(&o);
    o.omega_scale = 2.5;
    CHECK(amg_build(&A, &o, &h, &err) == CLS_EUSAGE && !h);
    amg_options_default(&o);
    o.max_levels = AMG_MAX_LEVELS + 1;
    CHECK(amg_build(&A, &o, &h, &err) == CLS_EUSAGE && !h);
    amg_options_default(&o);
    o.coarse_size = 0;
    CHECK(amg_build(&A, &o, &h, &err) == CLS_EUSAGE && !h);
    /* not square */
    csr_matrix R = A;
    R.ncols = A.ncols + 1;
    CHECK(amg_build(&R, NULL, &h, &err) == CLS_EINPUT && !h);
    /* a non-positive diagonal entry: not SPD */
    double keep = 0.0;
    for (int64_t k = A.rowptr[7]; k < A.rowptr[8]; k++)
        if (A.col[k] == 7) {
            keep = A.val[k];
            A.val[k] = -1.0;
        }
    cls_error_clear(&err);
    CHECK(amg_build(&A, NULL, &h, &err) == CLS_EBREAKDOWN && !h && strstr(err.msg, "row 7"));
    for (int64_t k = A.rowptr[7]; k < A.rowptr[8]; k++)
        if (A.col[k] == 7)
            A.val[k] = keep;
    /* names */
    amg_smoother s;
    CHECK(amg_smoother_parse("chebyshev", &s) == 0 && s == AMG_SMOOTHER_CHEBYSHEV);
    CHECK(amg_smoother_parse("l1-jacobi", &s) == 0 && s == AMG_SMOOTHER_L1_JACOBI);
    CHECK(amg_smoother_parse("gauss-seidel", &s) == -1);
    /* an empty matrix is one level with nothing to do */
    csr_matrix E;
    OK(csr_alloc(&E, 0, 0, 0, &err));
    OK(amg_build(&E, NULL, &h, &err));
    if (h) {
        double z = 0.0;
        OK(amg_apply_ref(h, &z, &z, &err));
        CHECK(h->nlevels == 1);
        amg_free(h);
    }
    csr_free(&E);
    /* describe: every level and the totals; the length is what snprintf says */
    OK(amg_build(&A, NULL, &h, &err));
    if (h) {
        char buf[4096], small[16];
        int len = amg_describe(h, buf, sizeof buf);
        CHECK(len > 0 && (size_t)len == strlen(buf) && strstr(buf, "level 0") &&
              strstr(buf, "operator complexity"));
        CHECK(amg_describe(h, small, sizeof small) == len && strlen(small) == sizeof small - 1);
        amg_info in;
        amg_get_info(h, &in);
        CHECK(in.levels == h->nlevels && in.rows[0] == A.nrows && in.nnz[0] == A.nnz &&
              in.operator_complexity >= 1.0 && in.build_s > 0.0);
        amg_free(h);
    }
    csr_free(&A);
}

int main(int argc, char **argv)
{
    check_seed("test_amg");
    for (int rep = 0; rep < 2; rep++)
        for (int kind = 0; kind < 3; kind++)
            test_pieces(kind);
    test_threads();
    for (int kind = 0; kind < 3; kind++) {
        test_ref_spd(kind, AMG_SMOOTHER_CHEBYSHEV);
        test_ref_spd(kind, AMG_SMOOTHER_L1_JACOBI);
    }
    test_refusals();
    for (int kind = 0; kind < 3; kind++)
        test_rebuild(kind);
    return check_done("test_amg");
}
