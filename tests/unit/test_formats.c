/*
 * test_formats.c: every SpMV format and every fused CG kernel against the
 * plain CSR reference (csr_spmv_ref) and host arithmetic, on PoCL.
 *
 * Matrices are random and fresh each run (seed printed; CLSOLVE_TEST_SEED
 * replays): irregular rows, empty rows, one huge row, k x k block structure
 * (with k = 3, elasticity's), banded stencils. Outputs are poisoned with NaN
 * first, so a row a format forgets shows up. Each format runs under several
 * of its own parameters (vector width, SELL chunk height and sorting
 * window, CSR-Adaptive block budget, work-group sizes that are not powers
 * of two) and in double, float and mixed precision.
 *
 * The fused CG: one iteration of la_cgf is checked value by value (p'Ap,
 * (Ap)'D^-1(Ap), alpha, beta, x, r, p) against the host; then whole solves,
 * fused against classic, reach the same true residual in about the same
 * number of iterations, and breakdown, maxiter and cancel end as they must.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/la.h"
#include "kernels/la_spmm.h"
#include "matrices/gen.h"
#include "solver/krylov/krylov.h"

static cls_error err;

#define OK(call)                                                                       \
    do {                                                                               \
        cls_error_clear(&err);                                                         \
        int rc_ = (call);                                                              \
        CHECK_MSG(rc_ == CLS_OK, "%s -> %d: %s", #call, rc_, err.msg);                 \
    } while (0)

static double uni(void)
{
    return 2.0 * check_uniform() - 1.0;
}
static int64_t rnd_int(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(check_rand() % (unsigned long long)(hi - lo + 1));
}
static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* value as the device's matrix stores it */
static double mstored(la_precision p, double v)
{
    return p == LA_DOUBLE ? v : (double)(float)v;
}
static double vstored(la_precision p, double v)
{
    return p == LA_FLOAT ? (double)(float)v : v;
}

/* random CSR from per-row lengths (sorted unique columns) */
static void csr_from_lengths(int64_t nrows, int64_t ncols, const int64_t *len, csr_matrix *A)
{
    int64_t nnz = 0;
    for (int64_t i = 0; i < nrows; i++)
        nnz += len[i];
    cls_error e;
    if (csr_alloc(A, nrows, ncols, nnz, &e)) {
        fprintf(stderr, "csr_alloc: %s\n", e.msg);
        exit(1);
    }
    int32_t *perm = malloc((size_t)(ncols ? ncols : 1) * sizeof *perm);
    for (int64_t j = 0; j < ncols; j++)
        perm[j] = (int32_t)j;
    int64_t pos = 0;
    A->rowptr[0] = 0;
    for (int64_t i = 0; i < nrows; i++) {
        for (int64_t t = 0; t < len[i]; t++) {
            int64_t s = rnd_int(t, ncols - 1);
            int32_t tmp = perm[t];
            perm[t] = perm[s];
            perm[s] = tmp;
        }
        memcpy(A->col + pos, perm, (size_t)len[i] * sizeof *perm);
        qsort(A->col + pos, (size_t)len[i], sizeof *A->col, cmp_i32);
        for (int64_t t = 0; t < len[i]; t++)
            A->val[pos + t] = uni();
        pos += len[i];
        A->rowptr[i + 1] = pos;
    }
    free(perm);
}

/* irregular: empty rows, short, around every power of two, long, one huge */
static void random_irregular(int64_t nrows, int64_t ncols, int64_t huge_len, csr_matrix *A)
{
    int64_t *len = malloc((size_t)nrows * sizeof *len);
    int64_t huge = rnd_int(0, nrows - 1);
    for (int64_t i = 0; i < nrows; i++) {
        unsigned k = (unsigned)(check_rand() % 10);
        int64_t L;
        if (i == huge)
            L = huge_len;
        else if (k <= 1)
            L = 0;
        else if (k <= 4)
            L = rnd_int(1, 10);
        else if (k <= 8)
            L = ((int64_t)1 << rnd_int(1, 6)) + rnd_int(-1, 1);
        else
            L = rnd_int(65, 300);
        len[i] = L > ncols ? ncols : L;
    }
    csr_from_lengths(nrows, ncols, len, A);
    free(len);
}

/* k x k blocks, dense, on a random block pattern (some block rows empty) */
static void random_blocks(int64_t nbr, int64_t nbc, int64_t k, csr_matrix *A)
{
    int64_t *blen = malloc((size_t)nbr * sizeof *blen);
    int32_t **bcols = malloc((size_t)nbr * sizeof *bcols);
    int64_t nnz = 0;
    int32_t *perm = malloc((size_t)nbc * sizeof *perm);
    for (int64_t j = 0; j < nbc; j++)
        perm[j] = (int32_t)j;
    for (int64_t br = 0; br < nbr; br++) {
        blen[br] = check_rand() % 8 == 0 ? 0 : rnd_int(1, nbc < 9 ? nbc : 9);
        bcols[br] = malloc((size_t)(blen[br] ? blen[br] : 1) * sizeof **bcols);
        for (int64_t t = 0; t < blen[br]; t++) {
            int64_t s = rnd_int(t, nbc - 1);
            int32_t tmp = perm[t];
            perm[t] = perm[s];
            perm[s] = tmp;
            bcols[br][t] = perm[t];
        }
        qsort(bcols[br], (size_t)blen[br], sizeof **bcols, cmp_i32);
        nnz += blen[br] * k * k;
    }
    cls_error e;
    csr_alloc(A, nbr * k, nbc * k, nnz, &e);
    int64_t pos = 0;
    A->rowptr[0] = 0;
    for (int64_t br = 0; br < nbr; br++) {
        for (int64_t i = 0; i < k; i++) {
            for (int64_t t = 0; t < blen[br]; t++)
                for (int64_t jj = 0; jj < k; jj++) {
                    A->col[pos] = (int32_t)(bcols[br][t] * k + jj);
                    A->val[pos++] = uni();
                }
            A->rowptr[br * k + i + 1] = pos;
        }
        free(bcols[br]);
    }
    free(bcols);
    free(blen);
    free(perm);
}

static void upload_nan(la_ctx *la, la_vec *v)
{
    double *h = malloc((size_t)(v->n ? v->n : 1) * sizeof *h);
    for (int64_t i = 0; i < v->n; i++)
        h[i] = NAN;
    OK(la_vec_upload(la, v, h, &err));
    free(h);
}

/* y = A x with dA (already uploaded) against the reference on the values
 * as stored */
static void check_spmv_dev(la_ctx *la, const csr_matrix *A, const la_csr *dA, const char *what)
{
    csr_matrix S = *A;
    double *sv = malloc((size_t)(A->nnz ? A->nnz : 1) * sizeof *sv);
    for (int64_t j = 0; j < A->nnz; j++)
        sv[j] = mstored(la->prec, A->val[j]);
    S.val = sv;
    double *x = malloc((size_t)(A->ncols ? A->ncols : 1) * sizeof *x);
    for (int64_t j = 0; j < A->ncols; j++)
        x[j] = vstored(la->prec, uni());
    double *yref = malloc((size_t)(A->nrows + 1) * sizeof *yref);
    double *y = malloc((size_t)(A->nrows + 1) * sizeof *y);
    csr_spmv_ref(&S, x, yref);
    la_vec dx, dy;
    OK(la_vec_create(la, A->ncols, &dx, &err));
    OK(la_vec_create(la, A->nrows, &dy, &err));
    OK(la_vec_upload(la, &dx, x, &err));
    upload_nan(la, &dy);
    OK(la_spmv(la, dA, &dx, &dy, &err));
    OK(la_vec_download(la, &dy, y, &err));
    double tol = la->prec == LA_FLOAT ? 1e-5 : 1e-12;
    int64_t bad = -1;
    double worst = 0;
    for (int64_t i = 0; i < A->nrows; i++) {
        double a = 0;
        for (int64_t j = A->rowptr[i]; j < A->rowptr[i + 1]; j++)
            a += fabs(sv[j] * x[A->col[j]]);
        double d = fabs(y[i] - yref[i]);
        double rel = a > 0 ? d / a : d;
        if (!(rel <= tol)) {
            if (bad < 0 || !(rel <= worst)) {
                bad = i;
                worst = rel;
            }
        }
    }
    CHECK_MSG(bad < 0,
              "%s %s (%s, C %zu sigma %zu k %zu local %zu groups %zu): %lld x %lld nnz %lld: "
              "row %lld off by %.3g (got %.17g want %.17g)",
              what, la_spmv_variant_name(dA->variant), la_precision_str(la->prec), dA->sell_c,
              dA->sell_sigma, dA->block_k, dA->local_size, dA->max_groups,
              (long long)A->nrows, (long long)A->ncols, (long long)A->nnz, (long long)bad,
              worst, bad >= 0 ? y[bad] : 0.0, bad >= 0 ? yref[bad] : 0.0);
    la_vec_release(&dx);
    la_vec_release(&dy);
    free(x);
    free(y);
    free(yref);
    free(sv);
}

/* la_spmm on k columns (8; 3 and 11 the first time: two launches) against the
 * host's SpMV of each column, as check_spmv_dev: every format's block
 * kernel (CSR's one work-item a row for the CSR family, SELL's; BCSR's
 * SpMV per column) */
static void check_spmm_dev(la_ctx *la, const csr_matrix *A, const la_csr *dA, const char *what)
{
    static int first = 1;
    const int ks[] = {8, 3, 11};
    csr_matrix S = *A;
    double *sv = malloc((size_t)(A->nnz ? A->nnz : 1) * sizeof *sv);
    for (int64_t j = 0; j < A->nnz; j++)
        sv[j] = mstored(la->prec, A->val[j]);
    S.val = sv;
    la_spmmk sk;
    OK(la_spmm_create(la, &sk, &err));
    double *x = malloc((size_t)(A->ncols ? A->ncols : 1) * sizeof *x);
    double *yref = malloc((size_t)(A->nrows + 1) * sizeof *yref);
    double *y = malloc((size_t)(A->nrows + 1) * sizeof *y);
    const double tol = la->prec == LA_FLOAT ? 1e-5 : 1e-12;
    for (int q = 0; q < (first ? 3 : 1); q++) {
        const int k = ks[q];
        la_vec dx[11], dy[11];
        const la_vec *px[11];
        la_vec *py[11];
        double *xs = malloc((size_t)k * (size_t)(A->ncols ? A->ncols : 1) * sizeof *xs);
        for (int c = 0; c < k; c++) {
            for (int64_t j = 0; j < A->ncols; j++)
                xs[c * A->ncols + j] = vstored(la->prec, uni());
            OK(la_vec_create(la, A->ncols, &dx[c], &err));
            OK(la_vec_create(la, A->nrows, &dy[c], &err));
            OK(la_vec_upload(la, &dx[c], xs + c * A->ncols, &err));
            upload_nan(la, &dy[c]);
            px[c] = &dx[c];
            py[c] = &dy[c];
        }
        cls_error_clear(&err);
        int rc = la_spmm(&sk, dA, k, px, py, &err);
        CHECK_MSG(rc == CLS_OK, "%s %s spmm k %d: %s", what, la_spmv_variant_name(dA->variant), k,
                  err.msg);
        for (int c = 0; !rc && c < k; c++) {
            memcpy(x, xs + c * A->ncols, (size_t)A->ncols * sizeof *x);
            csr_spmv_ref(&S, x, yref);
            OK(la_vec_download(la, &dy[c], y, &err));
            int64_t bad = -1;
            for (int64_t i = 0; i < A->nrows && bad < 0; i++) {
                double a = 0;
                for (int64_t j = A->rowptr[i]; j < A->rowptr[i + 1]; j++)
                    a += fabs(sv[j] * x[A->col[j]]);
                const double d = fabs(y[i] - yref[i]);
                if (!((a > 0 ? d / a : d) <= tol))
                    bad = i;
            }
            CHECK_MSG(bad < 0,
                      "%s %s spmm (local %zu, width %zu): %lld x %lld, column %d of %d: row %lld "
                      "got %.17g want %.17g",
                      what, la_spmv_variant_name(dA->variant), dA->local_size, dA->vector_width,
                      (long long)A->nrows, (long long)A->ncols, c, k, (long long)bad,
                      bad >= 0 ? y[bad] : 0.0, bad >= 0 ? yref[bad] : 0.0);
        }
        for (int c = 0; c < k; c++) {
            la_vec_release(&dx[c]);
            la_vec_release(&dy[c]);
        }
        free(xs);
    }
    first = 0;
    la_spmm_release(&sk);
    free(x);
    free(y);
    free(yref);
    free(sv);
}

/* The bytes of a device buffer (NULL on failure; the caller frees). */
static void *read_buf(la_ctx *la, cl_mem m, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    if (h && bytes &&
        clEnqueueReadBuffer(la->ocl->queue, m, CL_TRUE, 0, bytes, h, 0, NULL, NULL) != CL_SUCCESS) {
        free(h);
        return NULL;
    }
    return h;
}

/* SELL made on the device from CSR (CLSOLVE_SELL_BUILD=device, la_format.c)
 * against the host's build hB of the same C and sigma: the same chunk
 * starts, columns and values byte for byte, padding included, and its
 * SpMV right. In double only (the device build's precision); there it must
 * have run: a switch that did nothing cannot pass. */
static void check_sell_on_device(la_ctx *la, const csr_matrix *A, const la_csr *hB,
                                 const char *what)
{
    CHECK_MSG(!hB->sell_on_device, "%s: SELL made on the device under CLSOLVE_SELL_BUILD=host",
              what);
    setenv("CLSOLVE_SELL_BUILD", "device", 1);
    la_csr dA;
    cls_error_clear(&err);
    int rc = la_csr_upload(la, A, LA_SPMV_SELL, &dA, &err);
    unsetenv("CLSOLVE_SELL_BUILD");
    CHECK_MSG(rc == CLS_OK, "%s sell upload on the device: %s", what, err.msg);
    if (rc)
        return;
    const int expect = la->prec == LA_DOUBLE && A->nnz > 0;
    CHECK_MSG(dA.sell_on_device == expect, "%s: SELL on the device %d, expected %d (%s)", what,
              dA.sell_on_device, expect, la_precision_str(la->prec));
    CHECK(dA.stored == hB->stored && dA.naux == hB->naux);
    const size_t ns = (size_t)(dA.naux + 1) * sizeof(cl_int);
    void *s1 = read_buf(la, dA.aux, ns), *s2 = read_buf(la, hB->aux, ns);
    CHECK_MSG(s1 && s2 && !memcmp(s1, s2, ns), "%s: SELL's chunk starts differ", what);
    free(s1);
    free(s2);
    const size_t nc = (size_t)dA.stored * sizeof(cl_int), nv = (size_t)dA.stored * la->melem;
    void *c1 = read_buf(la, dA.fcol, nc), *c2 = read_buf(la, hB->fcol, nc);
    void *v1 = read_buf(la, dA.fval, nv), *v2 = read_buf(la, hB->fval, nv);
    CHECK_MSG(c1 && c2 && v1 && v2, "%s: SELL arrays read back", what);
    if (c1 && c2 && v1 && v2)
        CHECK_MSG(!memcmp(c1, c2, nc) && !memcmp(v1, v2, nv),
                  "%s: SELL (C %zu, sigma %zu) made on the device differs from the host's", what,
                  dA.sell_c, dA.sell_sigma);
    free(c1);
    free(c2);
    free(v1);
    free(v2);
    check_spmv_dev(la, A, &dA, what);
    la_csr_release(&dA);
}

/* every format under several of its parameters */
static void check_all_formats(la_ctx *la, const csr_matrix *A, const char *what)
{
    la_config saved = la->cfg;
    for (int v = LA_SPMV_AUTO; v < LA_SPMV_COUNT; v++) {
        if (v == LA_SPMV_SELL) {
            size_t Cs[] = {1, 4, 8, 32, 512}; /* 512: the fill's rows in pieces */
            for (size_t c = 0; c < 5; c++)
                for (int s = 0; s < 2; s++) {
                    la->cfg.sell_c = Cs[c];
                    la->cfg.sell_sigma = s ? 4 * Cs[c] : 1;
                    la_csr dA;
                    cls_error_clear(&err);
                    /* the host's build: the reference of check_sell_on_device
                     * (a GPU would make it on the device by default) */
                    setenv("CLSOLVE_SELL_BUILD", "host", 1);
                    int rc = la_csr_upload(la, A, LA_SPMV_SELL, &dA, &err);
                    unsetenv("CLSOLVE_SELL_BUILD");
                    CHECK_MSG(rc == CLS_OK, "%s sell upload: %s", what, err.msg);
                    if (rc)
                        continue;
                    CHECK(dA.variant == LA_SPMV_SELL && dA.sell_c == Cs[c]);
                    CHECK(dA.stored >= A->nnz);
                    check_spmv_dev(la, A, &dA, what);
                    check_sell_on_device(la, A, &dA, what);
                    la_csr_release(&dA);
                    la->cfg = saved;
                }
            continue;
        }
        if (v == LA_SPMV_ADAPTIVE) {
            size_t budgets[] = {7, 64, 1024};
            for (size_t b = 0; b < 3; b++) {
                la->cfg.adaptive_nnz = budgets[b];
                la_csr dA;
                cls_error_clear(&err);
                int rc = la_csr_upload(la, A, LA_SPMV_ADAPTIVE, &dA, &err);
                CHECK_MSG(rc == CLS_OK, "%s adaptive upload: %s", what, err.msg);
                if (rc)
                    continue;
                check_spmv_dev(la, A, &dA, what);
                check_spmm_dev(la, A, &dA, what);
                /* a work-group size that is not a power of two */
                dA.local_size = 96 <= la->ocl->dev.max_work_group ? 96 : dA.local_size;
                check_spmv_dev(la, A, &dA, what);
                check_spmm_dev(la, A, &dA, what);
                la_csr_release(&dA);
                la->cfg = saved;
            }
            continue;
        }
        la_csr dA;
        cls_error_clear(&err);
        int rc = la_csr_upload(la, A, (la_spmv_variant)v, &dA, &err);
        CHECK_MSG(rc == CLS_OK, "%s %s upload: %s", what, la_spmv_variant_name(v), err.msg);
        if (rc)
            continue;
        if (v != LA_SPMV_AUTO && v != LA_SPMV_BCSR)
            CHECK(dA.variant == (la_spmv_variant)v);
        if (v == LA_SPMV_VECTOR) {
            for (size_t vw = 2; vw <= 64 && vw <= dA.local_size; vw *= 2) {
                dA.vector_width = vw;
                check_spmv_dev(la, A, &dA, what);
                check_spmm_dev(la, A, &dA, what);
            }
        } else {
            check_spmv_dev(la, A, &dA, what);
            check_spmm_dev(la, A, &dA, what);
            if (dA.variant == LA_SPMV_SELL || dA.variant == LA_SPMV_BCSR) {
                size_t keep = dA.local_size, keepg = dA.max_groups;
                dA.local_size = 96 <= la->ocl->dev.max_work_group ? 96 : keep;
                dA.max_groups = 3; /* many grid-stride passes */
                check_spmv_dev(la, A, &dA, what);
                dA.local_size = keep;
                dA.max_groups = keepg;
            }
        }
        la_csr_release(&dA);
    }
    la->cfg = saved;
}

static void test_formats(la_ctx *la)
{
    /* irregular, square and not, one huge row, many empty rows */
    for (int m = 0; m < 3; m++) {
        int64_t nrows = m == 0 ? rnd_int(1, 200) : rnd_int(2000, 12000);
        int64_t ncols = m == 1 ? rnd_int(6000, 15000) : nrows;
        csr_matrix A;
        random_irregular(nrows, ncols, ncols < 5000 ? ncols : 5000, &A);
        check_all_formats(la, &A, "irregular");
        la_matrix_class mc;
        la_classify(la, &A, &mc);
        /* a small random matrix (m == 0: from 1 row) can be dense enough to
         * be honest k x k blocks (a 5 x 5 full matrix is one block), so the
         * "no blocks" verdict is checked on the large sparse ones only */
        if (m > 0)
            CHECK_MSG(mc.block_k == 0, "irregular matrix taken for %zu x %zu blocks",
                      mc.block_k, mc.block_k);
        csr_free(&A);
    }
    /* block structure: k = 3 (elasticity) and a random k */
    int64_t ks[2] = {3, rnd_int(2, 6)};
    for (int t = 0; t < 2; t++) {
        csr_matrix A;
        random_blocks(rnd_int(50, 700), rnd_int(50, 700), ks[t], &A);
        la_matrix_class mc;
        la_classify(la, &A, &mc);
        CHECK_MSG(mc.block_k == (size_t)ks[t] || (mc.block_k && mc.block_k % ks[t] == 0) ||
                      (ks[t] % 2 == 0 && mc.block_k && ks[t] % mc.block_k == 0),
                  "blocks of %lld detected as %zu", (long long)ks[t], mc.block_k);
        if (ks[t] == 3)
            CHECK_MSG(mc.block_k == 3, "3x3 blocks detected as %zu", mc.block_k);
        la_csr dA;
        OK(la_csr_upload(la, &A, LA_SPMV_BCSR, &dA, &err));
        CHECK(dA.variant == LA_SPMV_BCSR && dA.block_k == mc.block_k);
        la_csr_release(&dA);
        OK(la_csr_upload(la, &A, LA_SPMV_AUTO, &dA, &err));
        CHECK_MSG(dA.variant == LA_SPMV_BCSR, "AUTO chose %s for a block matrix",
                  la_spmv_variant_name(dA.variant));
        la_csr_release(&dA);
        check_all_formats(la, &A, "blocks");
        csr_free(&A);
    }
    /* a stencil: regular short rows */
    csr_matrix P;
    OK(gen_matrix(GEN_POISSON3D, rnd_int(5, 14), &P, &err));
    check_all_formats(la, &P, "poisson3d");
    la_matrix_class mc;
    la_classify(la, &P, &mc);
    CHECK_MSG(!strcmp(mc.shape, "short") && mc.block_k == 0, "poisson3d classified %s k %zu",
              mc.shape, mc.block_k);
    csr_free(&P);
    /* no nonzeros at all */
    csr_matrix Z;
    cls_error e;
    if (csr_alloc(&Z, 37, 37, 0, &e) == 0) {
        check_all_formats(la, &Z, "empty");
        csr_free(&Z);
    }
    /* BCSR asked of a matrix without blocks falls back */
    csr_matrix R;
    random_irregular(301, 301, 200, &R);
    la_csr dR;
    OK(la_csr_upload(la, &R, LA_SPMV_BCSR, &dR, &err));
    CHECK(dR.variant != LA_SPMV_BCSR);
    la_csr_release(&dR);
    csr_free(&R);

    la_spmv_variant v;
    CHECK(la_spmv_variant_parse("sell", &v) == 0 && v == LA_SPMV_SELL);
    CHECK(la_spmv_variant_parse("csr", &v) == 0 && v == LA_SPMV_SCALAR);
    CHECK(la_spmv_variant_parse("bcsr", &v) == 0 && v == LA_SPMV_BCSR);
    CHECK(la_spmv_variant_parse("adaptive", &v) == 0 && v == LA_SPMV_ADAPTIVE);
    CHECK(la_spmv_variant_parse("nope", &v) == -1);
}

/* A random SPD matrix: symmetric pattern from an irregular or block
 * matrix, values symmetric, diagonal dominant. */
static void random_spd(const csr_matrix *S, csr_matrix *A)
{
    /* B = S + S' + diag, with |diag| > row sums */
    int64_t n = S->nrows;
    coo_matrix C;
    coo_init(&C);
    int64_t cap = 2 * S->nnz + n + 1;
    C.row = malloc((size_t)cap * sizeof *C.row);
    C.col = malloc((size_t)cap * sizeof *C.col);
    C.val = malloc((size_t)cap * sizeof *C.val);
    C.cap = cap;
    C.nrows = C.ncols = n;
    double *rs = calloc((size_t)n, sizeof *rs);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = S->rowptr[i]; j < S->rowptr[i + 1]; j++) {
            int32_t c = S->col[j];
            if (c == i || c >= n)
                continue;
            double v = S->val[j] * 0.5;
            C.row[C.nnz] = (int32_t)i, C.col[C.nnz] = c, C.val[C.nnz++] = v;
            C.row[C.nnz] = c, C.col[C.nnz] = (int32_t)i, C.val[C.nnz++] = v;
            rs[i] += fabs(v);
            rs[c] += fabs(v);
        }
    for (int64_t i = 0; i < n; i++) {
        C.row[C.nnz] = (int32_t)i, C.col[C.nnz] = (int32_t)i;
        C.val[C.nnz++] = rs[i] * (1.05 + check_uniform()) + 0.01 + 10.0 * check_uniform();
    }
    cls_error e;
    if (csr_from_coo(&C, A, NULL, &e)) {
        fprintf(stderr, "csr_from_coo: %s\n", e.msg);
        exit(1);
    }
    coo_free(&C);
    free(rs);
}

/* One fused iteration, value by value. */
static void test_fused_iteration(la_ctx *la, const csr_matrix *A, la_spmv_variant fmt,
                                 int jacobi)
{
    int64_t n = A->nrows;
    la_csr dA;
    OK(la_csr_upload(la, A, fmt, &dA, &err));
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x),
           *d = malloc((size_t)n * sizeof *d);
    double *diag = malloc((size_t)n * sizeof *diag);
    csr_diagonal(A, diag);
    for (int64_t i = 0; i < n; i++) {
        b[i] = vstored(la->prec, uni());
        x[i] = vstored(la->prec, uni());
        d[i] = vstored(la->prec, 1.0 / diag[i]);
    }
    la_vec db, dx, dd;
    OK(la_vec_create(la, n, &db, &err));
    OK(la_vec_create(la, n, &dx, &err));
    OK(la_vec_create(la, n, &dd, &err));
    OK(la_vec_upload(la, &db, b, &err));
    OK(la_vec_upload(la, &dx, x, &err));
    OK(la_vec_upload(la, &dd, d, &err));
    la_cgf w;
    cls_error_clear(&err);
    int rc = la_cgf_create(la, &dA, &db, &dx, jacobi ? &dd : NULL, 0.0, LA_CGF_FUSED, &w, &err);
    CHECK_MSG(rc == CLS_OK, "la_cgf_create: %s", err.msg);
    if (rc)
        goto out;
    /* poison the work vectors and partials */
    upload_nan(la, &w.r);
    upload_nan(la, &w.p);
    upload_nan(la, &w.q);
    double nan = NAN;
    clEnqueueFillBuffer(la->ocl->queue, w.ps, &nan, sizeof nan, 0, 2 * w.ns * sizeof(double), 0,
                        NULL, NULL);
    clEnqueueFillBuffer(la->ocl->queue, w.pu, &nan, sizeof nan, 0, 2 * w.nu * sizeof(double), 0,
                        NULL, NULL);

    /* host: the values the device works on (matrix as stored for the
     * iteration, full precision for the start's residual) */
    csr_matrix S = *A;
    double *sv = malloc((size_t)A->nnz * sizeof *sv);
    for (int64_t j = 0; j < A->nnz; j++)
        sv[j] = mstored(la->prec, A->val[j]);
    S.val = sv;
    double *q = malloc((size_t)n * sizeof *q), *r = malloc((size_t)n * sizeof *r),
           *p = malloc((size_t)n * sizeof *p);
    csr_spmv_ref(la->prec == LA_FLOAT ? &S : A, x, q);
    long double rr = 0, rz = 0;
    for (int64_t i = 0; i < n; i++) {
        r[i] = b[i] - q[i];
        p[i] = jacobi ? d[i] * r[i] : r[i];
        rr += (long double)r[i] * r[i];
        rz += (long double)r[i] * p[i];
    }
    double grr = NAN, grz = NAN;
    OK(la_cgf_start(&w, 0, &grr, &grz, &err));
    double tol = la->prec == LA_FLOAT ? 1e-4 : 1e-10;
    CHECK_MSG(fabs(grr - (double)rr) <= tol * (double)rr && fabs(grz - (double)rz) <= tol * fabs((double)rz),
              "%s start: r'r %.17g vs %.17g, r'z %.17g vs %.17g", la_spmv_variant_name(fmt),
              grr, (double)rr, grz, (double)rz);
    /* iteration 0 on the host */
    csr_spmv_ref(&S, p, q);
    long double pq = 0, qq = 0;
    for (int64_t i = 0; i < n; i++) {
        pq += (long double)p[i] * q[i];
        qq += (long double)q[i] * q[i] * (jacobi ? d[i] : 1.0);
    }
    double alpha = (double)(rz / pq);
    double beta = (double)((alpha * alpha * qq - rz) / rz);
    OK(la_cgf_enqueue(&w, &err));
    la_cgf_record rec;
    memset(&rec, 0, sizeof rec);
    OK(la_cgf_next(&w, &rec, &err));
    CHECK(rec.k == 0 && rec.stop == LA_CGF_RUN);
    CHECK_MSG(fabs(rec.pq - (double)pq) <= tol * fabs((double)pq) &&
                  fabs(rec.qq - (double)qq) <= tol * fabs((double)qq),
              "%s %s jacobi %d: p'Ap %.17g vs %.17g, q'Wq %.17g vs %.17g",
              la_spmv_variant_name(fmt), la_precision_str(la->prec), jacobi, rec.pq,
              (double)pq, rec.qq, (double)qq);
    CHECK_MSG(fabs(rec.alpha - alpha) <= tol * fabs(alpha) &&
                  fabs(rec.beta - beta) <= 1e3 * tol * fabs(beta) + 1e-12,
              "%s: alpha %.17g vs %.17g, beta %.17g vs %.17g", la_spmv_variant_name(fmt),
              rec.alpha, alpha, rec.beta, beta);
    double *gx = malloc((size_t)n * sizeof *gx), *gr = malloc((size_t)n * sizeof *gr),
           *gp = malloc((size_t)n * sizeof *gp);
    OK(la_finish(la, &err));
    OK(la_vec_download(la, &dx, gx, &err));
    OK(la_vec_download(la, &w.r, gr, &err));
    OK(la_vec_download(la, &w.p, gp, &err));
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        double xi = x[i] + rec.alpha * p[i];
        double ri = r[i] - rec.alpha * q[i];
        double pi = (jacobi ? d[i] * ri : ri) + rec.beta * p[i];
        double sc = 1.0 + fabs(x[i]) + fabs(r[i]) + fabs(p[i]) + fabs(rec.alpha * q[i]);
        if (!(fabs(gx[i] - xi) <= tol * sc && fabs(gr[i] - ri) <= tol * sc &&
              fabs(gp[i] - pi) <= 10 * tol * sc))
            bad = i;
    }
    CHECK_MSG(bad < 0, "%s %s jacobi %d: update wrong at %lld", la_spmv_variant_name(fmt),
              la_precision_str(la->prec), jacobi, (long long)bad);
    free(gx);
    free(gr);
    free(gp);
    free(q);
    free(r);
    free(p);
    free(sv);
    la_cgf_release(&w);
out:
    la_vec_release(&db);
    la_vec_release(&dx);
    la_vec_release(&dd);
    la_csr_release(&dA);
    free(b);
    free(x);
    free(d);
    free(diag);
}

static int cancel_at;
static int monitor_cancel(void *ctx, int64_t k, double rel)
{
    (void)ctx;
    (void)rel;
    return k >= cancel_at;
}
static int64_t monitor_last;
static int monitor_order_ok;
static int monitor_record(void *ctx, int64_t k, double rel)
{
    (void)ctx;
    (void)rel;
    if (k != monitor_last + 1)
        monitor_order_ok = 0;
    monitor_last = k;
    return 0;
}

/* Whole solves: fused vs classic on the same system. */
static void test_solves(la_ctx *la, const csr_matrix *A, la_spmv_variant fmt, const char *what)
{
    int64_t n = A->nrows;
    la_csr dA;
    OK(la_csr_upload(la, A, fmt, &dA, &err));
    double *ones = malloc((size_t)n * sizeof *ones), *b = malloc((size_t)n * sizeof *b);
    double *diag = malloc((size_t)n * sizeof *diag), *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        ones[i] = 1.0;
    csr_spmv_ref(A, ones, b);
    csr_diagonal(A, diag);
    for (int64_t i = 0; i < n; i++)
        diag[i] = 1.0 / diag[i];
    la_vec db, dx, dd;
    OK(la_vec_create(la, n, &db, &err));
    OK(la_vec_create(la, n, &dx, &err));
    OK(la_vec_create(la, n, &dd, &err));
    OK(la_vec_upload(la, &db, b, &err));
    OK(la_vec_upload(la, &dd, diag, &err));
    double tol = la->prec == LA_FLOAT ? 1e-5 : 1e-10;
    for (int jac = 0; jac < 2; jac++) {
        int64_t its[2] = {0, 0};
        for (int classic = 0; classic < 2; classic++) {
            cg_options co = {
                .tol = tol,
                .maxiter = 20 * n + 100,
                .precond = jac ? PRECOND_JACOBI : PRECOND_NONE,
                .classic = classic,
                .monitor = monitor_record,
                .backend = LA_BACKEND_OPENCL}; /* the kernels: test_cpu_cg has the native loops */
            cg_result res;
            monitor_last = -1; /* iteration 0 (the initial residual) first, then 1, 2, ... */
            monitor_order_ok = 1;
            OK(la_fill(la, 0.0, &dx, &err));
            cls_error_clear(&err);
            int rc = cg_solve(la, &dA, &db, &dx, &dd, &co, &res, &err);
            CHECK_MSG(rc == CLS_OK && res.converged,
                      "%s %s %s jacobi %d classic %d: rc %d: %s", what,
                      la_spmv_variant_name(dA.variant), la_precision_str(la->prec), jac,
                      classic, rc, err.msg);
            OK(la_vec_download(la, &dx, x, &err));
            /* the true residual on the host in double */
            double *ax = malloc((size_t)n * sizeof *ax);
            csr_spmv_ref(A, x, ax);
            double e2 = 0, b2 = 0, m2 = 0; /* m = |A| |x| + |b| */
            for (int64_t i = 0; i < n; i++) {
                e2 += (b[i] - ax[i]) * (b[i] - ax[i]);
                b2 += b[i] * b[i];
                double m = fabs(b[i]);
                for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
                    m += fabs(A->val[k] * x[A->col[k]]);
                m2 += m * m;
            }
            free(ax);
            double trel = sqrt(e2 / b2);
            /* the solver confirms ||b - Ax|| <= tol ||b|| with b - Ax
             * evaluated in its working precision, a cancellation whose
             * rounding scales with |A||x| + |b|, not with the residual: one
             * unit of it (float, seed 1795533006: 1.0001e-5 against tol
             * 1e-5; the unit there is 1.6e-6, in double 3e-15) */
            const double ulp = la->prec == LA_FLOAT ? FLT_EPSILON : DBL_EPSILON;
            const double slack = ulp * sqrt(m2 / b2);
                    CHECK_MSG(trel <= tol * 1.0001 + slack,
                      "%s %s jacobi %d classic %d: true residual %.9e (slack %.3e)", what,
                      la_precision_str(la->prec), jac, classic, trel, slack);
            CHECK(res.nhistory == res.iterations + 1 || res.nhistory >= res.iterations);
            CHECK_MSG(monitor_order_ok && monitor_last == res.iterations,
                      "monitor saw up to %lld of %lld, in order %d", (long long)monitor_last,
                      (long long)res.iterations, monitor_order_ok);
            its[classic] = res.iterations;
            cg_result_free(&res);
        }
        int64_t diff = its[0] > its[1] ? its[0] - its[1] : its[1] - its[0];
        CHECK_MSG(diff <= 3 + its[1] / 10, "%s %s jacobi %d: fused %lld vs classic %lld iterations",
                  what, la_precision_str(la->prec), jac, (long long)its[0], (long long)its[1]);
    }
    /* maxiter: exactly that many updates, not converged */
    {
        cg_options co = {
            .tol = 1e-300, .maxiter = 7, .precond = PRECOND_NONE, .backend = LA_BACKEND_OPENCL};
        cg_result res;
        OK(la_fill(la, 0.0, &dx, &err));
        cls_error_clear(&err);
        int rc = cg_solve(la, &dA, &db, &dx, NULL, &co, &res, &err);
        CHECK_MSG(rc == CLS_ENOTCONV && res.iterations == 7 && res.nhistory == 8 &&
                      res.reason == CG_DIVERGED_MAXITER,
                  "maxiter: rc %d iterations %lld history %lld", rc, (long long)res.iterations,
                  (long long)res.nhistory);
        cg_result_free(&res);
    }
    /* cancel from the monitor */
    {
        cancel_at = 3;
        cg_options co = {.tol = 1e-300,
                         .maxiter = 1000,
                         .monitor = monitor_cancel,
                         .backend = LA_BACKEND_OPENCL};
        cg_result res;
        OK(la_fill(la, 0.0, &dx, &err));
        cls_error_clear(&err);
        int rc = cg_solve(la, &dA, &db, &dx, NULL, &co, &res, &err);
        CHECK_MSG(rc == CLS_EOTHER && res.reason == CG_CANCELLED && res.iterations >= 3 &&
                      res.iterations <= 3 + LA_CGF_MAXLAG + 1,
                  "cancel: rc %d reason %d iterations %lld", rc, (int)res.reason,
                  (long long)res.iterations);
        cg_result_free(&res);
    }
    la_vec_release(&db);
    la_vec_release(&dx);
    la_vec_release(&dd);
    la_csr_release(&dA);
    free(ones);
    free(b);
    free(diag);
    free(x);
}

/* An indefinite matrix: the device sees p'Ap <= 0 and stops. */
static void test_breakdown(la_ctx *la)
{
    csr_matrix A;
    cls_error e;
    int64_t n = 50;
    csr_alloc(&A, n, n, n, &e);
    for (int64_t i = 0; i < n; i++) {
        A.rowptr[i + 1] = i + 1;
        A.col[i] = (int32_t)i;
        A.val[i] = i % 2 ? 1.0 : -1.0;
    }
    la_csr dA;
    OK(la_csr_upload(la, &A, LA_SPMV_AUTO, &dA, &err));
    double *b = malloc((size_t)n * sizeof *b);
    for (int64_t i = 0; i < n; i++)
        b[i] = 1.0;
    la_vec db, dx;
    OK(la_vec_create(la, n, &db, &err));
    OK(la_vec_create(la, n, &dx, &err));
    OK(la_vec_upload(la, &db, b, &err));
    OK(la_fill(la, 0.0, &dx, &err));
    cg_options co = {.tol = 1e-8, .maxiter = 100};
    cg_result res;
    cls_error_clear(&err);
    int rc = cg_solve(la, &dA, &db, &dx, NULL, &co, &res, &err);
    CHECK_MSG(rc == CLS_EBREAKDOWN && res.reason == CG_DIVERGED_INDEFINITE &&
                  strstr(err.msg, "not positive definite"),
              "indefinite: rc %d reason %d: %s", rc, (int)res.reason, err.msg);
    cg_result_free(&res);
    /* a zero right-hand side converges at once to x = 0 */
    OK(la_fill(la, 0.0, &db, &err));
    OK(la_fill(la, 3.0, &dx, &err));
    rc = cg_solve(la, &dA, &db, &dx, NULL, &co, &res, &err);
    CHECK(rc == CLS_OK && res.reason == CG_CONVERGED_ZERO_RHS);
    cg_result_free(&res);
    la_vec_release(&db);
    la_vec_release(&dx);
    la_csr_release(&dA);
    csr_free(&A);
    free(b);
}

static void run_prec(ocl_ctx *ocl, la_precision prec)
{
    la_ctx la;
    cls_error_clear(&err);
    int rc = la_init(&la, ocl, prec, NULL, &err);
    CHECK_MSG(rc == CLS_OK, "la_init %s: %s", la_precision_str(prec), err.msg);
    if (rc)
        return;
    int before = check_failures;
    test_formats(&la);

    /* SPD systems: irregular and block-structured patterns, and Poisson */
    csr_matrix S, A, B, P;
    int64_t n = rnd_int(300, 1500);
    random_irregular(n, n, n < 400 ? n : 400, &S);
    random_spd(&S, &A);
    csr_free(&S);
    int64_t nb = rnd_int(100, 400);
    random_blocks(nb, nb, 3, &S);
    random_spd(&S, &B);
    csr_free(&S);
    OK(gen_matrix(GEN_POISSON3D, 10, &P, &err));
    for (int v = LA_SPMV_SCALAR; v < LA_SPMV_COUNT; v++) {
        test_fused_iteration(&la, &A, (la_spmv_variant)v, 0);
        test_fused_iteration(&la, &A, (la_spmv_variant)v, 1);
        test_fused_iteration(&la, &B, (la_spmv_variant)v, 1);
    }
    test_solves(&la, &A, LA_SPMV_AUTO, "irregular SPD");
    test_solves(&la, &B, LA_SPMV_BCSR, "block SPD");
    test_solves(&la, &P, LA_SPMV_SELL, "poisson3d");
    test_solves(&la, &P, LA_SPMV_ADAPTIVE, "poisson3d");
    test_breakdown(&la);
    csr_free(&A);
    csr_free(&B);
    csr_free(&P);
    printf("%s: %s\n", la_precision_str(prec), check_failures == before ? "ok" : "FAILED");
    la_release(&la);
}

int main(void)
{
    check_seed("test_formats");
    /* the tests must not pick up a tuned database from the home directory */
    setenv("CLSOLVE_TUNE_DIR", "/nonexistent/clsolve-test-tuning", 1);
    ocl_device dev;
    cls_error_clear(&err);
    if (ocl_pick_device("auto", &dev, &err))
        CHECK_SKIP("no OpenCL device: %s", err.msg);
    ocl_ctx ocl;
    if (ocl_ctx_create(&dev, &ocl, &err)) {
        fprintf(stderr, "ocl_ctx_create: %s\n", err.msg);
        return 1;
    }
    printf("device: %s %s (%s), fp64 %d\n", ocl_type_name(dev.type), dev.name,
           dev.platform_name, dev.fp64);
    if (dev.fp64) {
        run_prec(&ocl, LA_DOUBLE);
        run_prec(&ocl, LA_MIXED);
    }
    run_prec(&ocl, LA_FLOAT);
    ocl_ctx_release(&ocl);
    return check_done("test_formats");
}
