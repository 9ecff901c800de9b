/*
 * test_la.c: the device linear algebra against host double/long double
 * references, in double and float storage, with the default configuration
 * and a small one that forces many grid-stride passes.
 *
 * Every write-only output is poisoned with NaN before the kernel runs (and
 * the reduction buffers before every dot), so a skipped element or a
 * partial never written shows up as NaN rather than as a stale right answer.
 * Inputs are fresh each run (seed printed; CLSOLVE_TEST_SEED replays).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "kernels/la.h"

static cls_error err;

#define OK(call)                                                                       \
    do {                                                                               \
        cls_error_clear(&err);                                                         \
        int rc_ = (call);                                                              \
        CHECK_MSG(rc_ == CLS_OK, "%s -> %d: %s", #call, rc_, err.msg);                 \
    } while (0)

static double uni(void) /* [-1, 1) */
{
    return 2.0 * check_uniform() - 1.0;
}
static int64_t rnd_int(int64_t lo, int64_t hi) /* [lo, hi] */
{
    return lo + (int64_t)(check_rand() % (unsigned long long)(hi - lo + 1));
}

/* value as the device stores it */
static double stored(const la_ctx *la, double v)
{
    return la->prec == LA_FLOAT ? (double)(float)v : v;
}
static double eps_of(const la_ctx *la)
{
    return la->prec == LA_FLOAT ? (double)FLT_EPSILON : DBL_EPSILON;
}

static double *vec_random(int64_t n)
{
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = uni();
    return v;
}

static void upload_nan(la_ctx *la, la_vec *v)
{
    double *h = malloc((size_t)(v->n ? v->n : 1) * sizeof *h);
    for (int64_t i = 0; i < v->n; i++)
        h[i] = NAN;
    OK(la_vec_upload(la, v, h, &err));
    free(h);
}

static void poison_reduction(la_ctx *la)
{
    double nan = NAN;
    clEnqueueFillBuffer(la->ocl->queue, la->partial, &nan, sizeof nan, 0,
                        la->ngroups * 2 * sizeof(double), 0, NULL, NULL);
    clEnqueueFillBuffer(la->ocl->queue, la->result, &nan, sizeof nan, 0, 2 * sizeof(double), 0,
                        NULL, NULL);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/*
 * A random CSR matrix with irregular rows: empty rows, short rows, rows of
 * length w-1, w, w+1 around every vector width, long rows, and one row of
 * min(5000, ncols) entries. Columns are sorted and unique within a row.
 */
static void random_csr(int64_t nrows, int64_t ncols, csr_matrix *A)
{
    int64_t *len = malloc((size_t)nrows * sizeof *len);
    int64_t nnz = 0;
    int64_t huge = nrows ? rnd_int(0, nrows - 1) : -1;
    for (int64_t i = 0; i < nrows; i++) {
        int64_t L;
        unsigned k = (unsigned)(check_rand() % 10);
        if (i == huge)
            L = 5000;
        else if (k == 0)
            L = 0;
        else if (k <= 4)
            L = rnd_int(1, 10);
        else if (k <= 8) {
            int64_t w = (int64_t)1 << rnd_int(1, 6); /* 2..64 */
            L = w + rnd_int(-1, 1);
        } else
            L = rnd_int(65, 300);
        if (L > ncols)
            L = ncols;
        len[i] = L;
        nnz += L;
    }
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
        /* partial Fisher-Yates: the first len[i] entries of perm are a
         * random subset (perm stays a permutation) */
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
    free(len);
}

/* y = A x on the device with the given variant/width vs csr_spmv_ref. */
static void check_spmv(la_ctx *la, const csr_matrix *A, la_spmv_variant var, size_t vw,
                       const char *what)
{
    la_csr dA;
    cls_error_clear(&err);
    int rc = la_csr_upload(la, A, var, &dA, &err);
    CHECK_MSG(rc == CLS_OK, "upload: %s", err.msg);
    if (rc)
        return;
    if (var != LA_SPMV_AUTO)
        CHECK(dA.variant == var);
    if (vw)
        dA.vector_width = vw;
    double *x = vec_random(A->ncols), *yref = malloc((size_t)(A->nrows + 1) * sizeof *yref);
    double *y = malloc((size_t)(A->nrows + 1) * sizeof *y);
    double *absr = malloc((size_t)(A->nrows + 1) * sizeof *absr);
    csr_spmv_ref(A, x, yref);
    for (int64_t i = 0; i < A->nrows; i++) {
        double s = 0;
        for (int64_t j = A->rowptr[i]; j < A->rowptr[i + 1]; j++)
            s += fabs(A->val[j] * x[A->col[j]]);
        absr[i] = s;
    }
    la_vec dx, dy;
    OK(la_vec_create(la, A->ncols, &dx, &err));
    OK(la_vec_create(la, A->nrows, &dy, &err));
    OK(la_vec_upload(la, &dx, x, &err));
    upload_nan(la, &dy);
    OK(la_spmv(la, &dA, &dx, &dy, &err));
    OK(la_vec_download(la, &dy, y, &err));

    double maxrel = 0, e2 = 0, r2 = 0;
    int64_t bad = -1;
    for (int64_t i = 0; i < A->nrows; i++) {
        double d = fabs(y[i] - yref[i]);
        if (!(d == d)) { /* NaN: row never written */
            bad = i;
            maxrel = INFINITY;
            continue;
        }
        double rel = absr[i] > 0 ? d / absr[i] : (d == 0 ? 0 : INFINITY);
        if (rel > maxrel) {
            maxrel = rel;
            bad = i;
        }
        e2 += d * d;
        r2 += yref[i] * yref[i];
    }
    if (la->prec == LA_DOUBLE) {
        CHECK_MSG(maxrel <= 1e-12,
                  "%s %s vw %zu: %lld x %lld nnz %lld: max relative error %.3g at row %lld",
                  what, la_spmv_variant_name(dA.variant), dA.vector_width,
                  (long long)A->nrows, (long long)A->ncols, (long long)A->nnz, maxrel,
                  (long long)bad);
    } else {
        double rel = r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
        CHECK_MSG(maxrel < 1e-3 && rel <= 1e-5,
                  "%s %s vw %zu (float): %lld rows: error/norm %.3g, max row %.3g at %lld",
                  what, la_spmv_variant_name(dA.variant), dA.vector_width,
                  (long long)A->nrows, rel, maxrel, (long long)bad);
    }
    la_vec_release(&dx);
    la_vec_release(&dy);
    la_csr_release(&dA);
    free(x);
    free(y);
    free(yref);
    free(absr);
}

static void test_spmv(la_ctx *la, const char *what)
{
    for (int m = 0; m < 3; m++) {
        int64_t nrows = m == 0 ? rnd_int(1, 300) : rnd_int(1000, 20000);
        int64_t ncols = m == 1 ? rnd_int(5000, 20000) : nrows; /* square and not */
        csr_matrix A;
        random_csr(nrows, ncols, &A);
        check_spmv(la, &A, LA_SPMV_SCALAR, 0, what);
        check_spmv(la, &A, LA_SPMV_AUTO, 0, what);
        for (size_t vw = 2; vw <= 64 && vw <= la->cfg.spmv_local_size; vw *= 2)
            check_spmv(la, &A, LA_SPMV_VECTOR, vw, what);
        csr_free(&A);
    }
    /* degenerate: no nonzeros at all, all rows empty */
    csr_matrix Z;
    cls_error e;
    if (csr_alloc(&Z, 37, 5, 0, &e) == 0) {
        check_spmv(la, &Z, LA_SPMV_SCALAR, 0, what);
        check_spmv(la, &Z, LA_SPMV_VECTOR, 4, what);
        csr_free(&Z);
    }
}

/* ------------------------------------------------------------- views */

/* every buffer of dA, as bytes (cl_mem NULL: size 0) */
static int buf_bytes(la_ctx *la, cl_mem m, unsigned char **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!m)
        return 0;
    if (clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof *n, n, NULL) != CL_SUCCESS)
        return -1;
    *out = malloc(*n ? *n : 1);
    if (!*out)
        return -1;
    return clEnqueueReadBuffer(la->ocl->queue, m, CL_TRUE, 0, *n, *out, 0, NULL, NULL) == CL_SUCCESS
               ? 0
               : -1;
}

/* dA and dB hold the same format, the same scalars and the same device
 * arrays, byte for byte */
static void check_same_upload(la_ctx *la, const la_csr *dA, const la_csr *dB, const char *what)
{
    CHECK_MSG(dA->variant == dB->variant && dA->nrows == dB->nrows && dA->ncols == dB->ncols &&
                  dA->nnz == dB->nnz && dA->stored == dB->stored && dA->naux == dB->naux &&
                  dA->sell_c == dB->sell_c && dA->sell_sigma == dB->sell_sigma &&
                  dA->block_k == dB->block_k && dA->vector_width == dB->vector_width &&
                  dA->local_size == dB->local_size,
              "%s: view %s (%lld entries, %lld stored) against the copy's %s (%lld, %lld)", what,
              la_spmv_variant_name(dA->variant), (long long)dA->nnz, (long long)dA->stored,
              la_spmv_variant_name(dB->variant), (long long)dB->nnz, (long long)dB->stored);
    const cl_mem a[] = {dA->rowptr, dA->col,  dA->val,  dA->aux,
                        dA->perm,   dA->fcol, dA->fval, dA->val_hi};
    const cl_mem b[] = {dB->rowptr, dB->col,  dB->val,  dB->aux,
                        dB->perm,   dB->fcol, dB->fval, dB->val_hi};
    static const char *const names[] = {"rowptr", "col",  "val",  "aux",
                                        "perm",   "fcol", "fval", "val_hi"};
    for (int q = 0; q < 8; q++) {
        unsigned char *x, *y;
        size_t nx, ny;
        int rx = buf_bytes(la, a[q], &x, &nx), ry = buf_bytes(la, b[q], &y, &ny);
        /* an empty array is a 1-byte buffer never written: sizes only */
        CHECK_MSG(!rx && !ry && nx == ny && (nx <= 1 || !memcmp(x, y, nx)),
                  "%s %s: the view's %s (%zu bytes) differs from the copy's (%zu bytes)", what,
                  la_spmv_variant_name(dA->variant), names[q], nx, ny);
        free(x);
        free(y);
    }
}

/* rows `rows` (or first + i) of A, columns below nmap through cmap, copied
 * the plain way: what a view must upload as */
static void view_copy(const csr_matrix *A, const int32_t *rows, int64_t first, int64_t nrows,
                      const int32_t *cmap, int64_t nmap, csr_matrix *B)
{
    const int64_t base = A->rowptr[0];
    int64_t nnz = 0;
    for (int64_t i = 0; i < nrows; i++) {
        int64_t r = rows ? rows[i] : first + i;
        nnz += A->rowptr[r + 1] - A->rowptr[r];
    }
    cls_error e;
    if (csr_alloc(B, nrows, A->ncols, nnz, &e))
        abort();
    B->rowptr[0] = 0;
    int64_t j = 0;
    for (int64_t i = 0; i < nrows; i++) {
        int64_t r = rows ? rows[i] : first + i;
        for (int64_t k = A->rowptr[r] - base; k < A->rowptr[r + 1] - base; k++) {
            int32_t c = A->col[k];
            B->col[j] = cmap && c < nmap ? cmap[c] : c;
            B->val[j++] = A->val[k];
        }
        B->rowptr[i + 1] = j;
    }
}

static void check_view(la_ctx *la, const la_csr_view *v, la_spmv_variant var, const char *what)
{
    csr_matrix B;
    view_copy(v->A, v->rows, v->first, v->nrows, v->cmap, v->nmap, &B);
    la_csr dA, dB;
    cls_error_clear(&err);
    int ra = la_csr_upload_view(la, v, var, &dA, &err);
    CHECK_MSG(ra == CLS_OK, "%s: la_csr_upload_view: %s", what, err.msg);
    int rb = la_csr_upload(la, &B, var, &dB, &err);
    CHECK_MSG(rb == CLS_OK, "%s: la_csr_upload: %s", what, err.msg);
    if (!ra && !rb)
        check_same_upload(la, &dA, &dB, what);
    if (!ra)
        la_csr_release(&dA);
    if (!rb)
        la_csr_release(&dB);
    csr_free(&B);
}

static void shuffle(int32_t *p, int64_t n)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t s = rnd_int(0, i);
        int32_t t = p[i];
        p[i] = p[s];
        p[s] = t;
    }
}

/* A part's device order read through la_csr_view uploads as the copy
 * dpart once made: every format, row maps and none, a first row, row
 * pointers from 0 and from a base (a part of a ranged read), an empty
 * interior or boundary, columns past nmap (ghosts) left alone, rows with
 * no entries. A 2x2-blocked matrix permuted by block keeps its blocks, so
 * BCSR is built through the maps too. */
static void test_views(la_ctx *la, const char *what)
{
    static const la_spmv_variant vars[] = {LA_SPMV_AUTO,     LA_SPMV_SCALAR, LA_SPMV_VECTOR,
                                           LA_SPMV_ADAPTIVE, LA_SPMV_SELL,   LA_SPMV_BCSR};
    const int nv = (int)(sizeof vars / sizeof *vars);
    for (int m = 0; m < 4; m++) {
        const int blocked = m == 2, empty = m == 3;
        int64_t n = blocked ? 2 * rnd_int(200, 3000)
                    : empty ? 37
                            : rnd_int(m ? 2000 : 1, m ? 8000 : 400);
        int64_t ncols = n + (blocked ? 2 * rnd_int(0, 500) : rnd_int(0, 3000)); /* ghosts */
        csr_matrix A;
        cls_error e;
        if (blocked) { /* dense 2x2 blocks, a few per block row */
            int64_t nb = n / 2, nbc = ncols / 2, per = 3, pos = 0;
            if (csr_alloc(&A, n, ncols, nb * per * 4, &e))
                abort();
            A.rowptr[0] = 0;
            for (int64_t br = 0; br < nb; br++) {
                int32_t bc[3];
                for (int t = 0; t < per; t++) {
                    int again;
                    do { /* distinct, sorted */
                        bc[t] = (int32_t)rnd_int(0, nbc - 1);
                        again = 0;
                        for (int u = 0; u < t; u++)
                            again |= bc[u] == bc[t];
                    } while (again);
                }
                qsort(bc, (size_t)per, sizeof *bc, cmp_i32);
                for (int rr = 0; rr < 2; rr++) {
                    for (int t = 0; t < per; t++)
                        for (int cc = 0; cc < 2; cc++) {
                            A.col[pos] = 2 * bc[t] + cc;
                            A.val[pos++] = uni();
                        }
                    A.rowptr[2 * br + rr + 1] = pos;
                }
            }
        } else if (empty) { /* rows, no entries */
            if (csr_alloc(&A, n, ncols, 0, &e))
                abort();
        } else {
            random_csr(n, ncols, &A);
        }
        int32_t *perm = malloc((size_t)n * sizeof *perm),
                *iperm = malloc((size_t)n * sizeof *iperm);
        if (blocked) { /* block rows shuffled, each block's rows kept in order */
            int64_t nb = n / 2;
            int32_t *bp = malloc((size_t)nb * sizeof *bp);
            for (int64_t b = 0; b < nb; b++)
                bp[b] = (int32_t)b;
            shuffle(bp, nb);
            for (int64_t b = 0; b < nb; b++)
                for (int rr = 0; rr < 2; rr++)
                    perm[2 * b + rr] = 2 * bp[b] + rr;
            free(bp);
        } else {
            for (int64_t i = 0; i < n; i++)
                perm[i] = (int32_t)i;
            shuffle(perm, n);
        }
        for (int64_t i = 0; i < n; i++)
            iperm[perm[i]] = (int32_t)i;
        char w[160];
        for (int pass = 0; pass < 2; pass++) {
            /* the same rows with row pointers from a base: a part of a ranged read */
            const int64_t base = pass ? rnd_int(1, 1000000) : 0;
            for (int64_t i = 0; i <= n; i++)
                A.rowptr[i] += base;
            for (int q = 0; q < nv; q++) {
                la_csr_view whole = {&A, NULL, 0, n, NULL, 0};
                snprintf(w, sizeof w, "%s view m%d base %lld whole", what, m, (long long)base);
                check_view(la, &whole, vars[q], w);
            }
            /* interior rows: none, some, all */
            const int64_t nis[3] = {0, blocked ? 2 * rnd_int(0, n / 2) : rnd_int(0, n), n};
            for (int c = 0; c < 3; c++) {
                const int64_t ni = nis[c];
                for (int q = 0; q < nv; q++) {
                    la_csr_view in = {&A, perm, 0, ni, iperm, n};
                    la_csr_view bd = {&A, perm + ni, 0, n - ni, iperm, n};
                    la_csr_view tail = {&A, NULL, ni, n - ni, NULL, 0};
                    snprintf(w, sizeof w, "%s view m%d base %lld interior %lld/%lld", what, m,
                             (long long)base, (long long)ni, (long long)n);
                    check_view(la, &in, vars[q], w);
                    snprintf(w, sizeof w, "%s view m%d base %lld boundary", what, m,
                             (long long)base);
                    check_view(la, &bd, vars[q], w);
                    snprintf(w, sizeof w, "%s view m%d base %lld rows from %lld", what, m,
                             (long long)base, (long long)ni);
                    check_view(la, &tail, vars[q], w);
                }
            }
            for (int64_t i = 0; i <= n; i++)
                A.rowptr[i] -= base;
        }
        /* the blocked matrix is read as BCSR through the maps */
        if (blocked) {
            la_csr_view all = {&A, perm, 0, n, iperm, n};
            la_csr d;
            cls_error_clear(&err);
            int rc = la_csr_upload_view(la, &all, LA_SPMV_BCSR, &d, &err);
            CHECK_MSG(rc == CLS_OK, "%s: a 2x2-blocked view: %s", what, err.msg);
            if (rc == CLS_OK) {
                CHECK_MSG(d.variant == LA_SPMV_BCSR && d.block_k == 2,
                          "%s: a 2x2-blocked view uploads as %s, k %zu", what,
                          la_spmv_variant_name(d.variant), d.block_k);
                la_csr_release(&d);
            }
        }
        free(perm);
        free(iperm);
        csr_free(&A);
    }
}

/* test_views again in a child of this program whose copies to the device
 * are all staged, in pieces of 4 KiB (CLSOLVE_STAGE, read once per
 * process): SELL's arrays then are built chunk by chunk into the staging
 * buffers (sell_stream), the path of a part of 10^8 rows. */
extern char **environ;

static void test_views_staged(void)
{
    const char *self = "/proc/self/exe";
    if (setenv("CLSOLVE_STAGE", "always", 1) || setenv("CLSOLVE_STAGE_PIECE", "4096", 1)) {
        CHECK_MSG(0, "setenv failed");
        return;
    }
    pid_t pid;
    char *const argv[] = {(char *)self, "--views", NULL};
    int rc = posix_spawn(&pid, self, NULL, NULL, argv, environ), st = 0;
    CHECK_MSG(rc == 0, "posix_spawn %s: %s", self, strerror(rc));
    if (rc == 0)
        CHECK_MSG(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "the staged views (%s --views) failed: status %d", self, st);
    unsetenv("CLSOLVE_STAGE");
    unsetenv("CLSOLVE_STAGE_PIECE");
}

/* sum x_i y_i in long double with Kahan compensation, plus sum |x_i y_i| */
static long double ref_dot(const la_ctx *la, const double *x, const double *y, int64_t n,
                           double *abssum)
{
    long double s = 0, c = 0, a = 0;
    for (int64_t i = 0; i < n; i++) {
        long double p = (long double)stored(la, x[i]) * (long double)stored(la, y[i]);
        long double t = p - c, u = s + t;
        c = (u - s) - t;
        s = u;
        a += fabsl(p);
    }
    *abssum = (double)a;
    return s;
}

static double dot_tol(const la_ctx *la)
{
    /* acc in double (products of floats are exact in double) unless the
     * device has no fp64 at all */
    return (la->prec == LA_DOUBLE || la->ocl->dev.fp64) ? 1e-12 : 1e-5;
}

static void test_dot(la_ctx *la)
{
    int64_t sizes[] = {0, 1, 255, 256, 257, 100003, rnd_int(2, 50000)};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int64_t n = sizes[s];
        double *x = vec_random(n), *y = vec_random(n), *z = vec_random(n);
        la_vec dx, dy, dz;
        OK(la_vec_create(la, n, &dx, &err));
        OK(la_vec_create(la, n, &dy, &err));
        OK(la_vec_create(la, n, &dz, &err));
        OK(la_vec_upload(la, &dx, x, &err));
        OK(la_vec_upload(la, &dy, y, &err));
        OK(la_vec_upload(la, &dz, z, &err));
        double a, b, out = NAN, out2[2] = {NAN, NAN};
        double ref = (double)ref_dot(la, x, y, n, &a);
        poison_reduction(la);
        OK(la_dot(la, &dx, &dy, &out, &err));
        CHECK_MSG(fabs(out - ref) <= dot_tol(la) * a, "dot n=%lld: %.17g vs %.17g",
                  (long long)n, out, ref);
        if (n == 0)
            CHECK(out == 0.0);
        /* x'x, the vector aliased with itself */
        double refxx = (double)ref_dot(la, x, x, n, &b);
        poison_reduction(la);
        OK(la_dot(la, &dx, &dx, &out, &err));
        CHECK_MSG(fabs(out - refxx) <= dot_tol(la) * b, "x'x n=%lld: %.17g vs %.17g",
                  (long long)n, out, refxx);
        /* two dots sharing x */
        double refxz = (double)ref_dot(la, x, z, n, &b);
        poison_reduction(la);
        OK(la_dot2(la, &dx, &dy, &dz, out2, &err));
        CHECK_MSG(fabs(out2[0] - ref) <= dot_tol(la) * a &&
                      fabs(out2[1] - refxz) <= dot_tol(la) * b,
                  "dot2 n=%lld: %.17g %.17g vs %.17g %.17g", (long long)n, out2[0], out2[1],
                  ref, refxz);
        la_vec_release(&dx);
        la_vec_release(&dy);
        la_vec_release(&dz);
        free(x);
        free(y);
        free(z);
    }
    la_vec a1, a2;
    OK(la_vec_create(la, 10, &a1, &err));
    OK(la_vec_create(la, 11, &a2, &err));
    double out;
    cls_error_clear(&err);
    CHECK(la_dot(la, &a1, &a2, &out, &err) != CLS_OK && strstr(err.msg, "differ"));
    la_vec_release(&a1);
    la_vec_release(&a2);
}

/* |got - want| <= k eps scale, elementwise; returns the first bad index or -1 */
static int64_t close_all(const double *got, const double *want, const double *scale, int64_t n,
                         double tol)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * scale[i]))
            return i;
    return -1;
}

static void test_blas1(la_ctx *la)
{
    int64_t sizes[] = {1, 257, 100003, rnd_int(2, 30000)};
    double eps = eps_of(la);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int64_t n = sizes[s];
        size_t bytes = (size_t)n * sizeof(double);
        double *x = vec_random(n), *y = vec_random(n), *d = vec_random(n);
        double *out = malloc(bytes), *want = malloc(bytes), *scale = malloc(bytes);
        double a = stored(la, uni() * 3);
        la_vec dx, dy, dd, dz;
        OK(la_vec_create(la, n, &dx, &err));
        OK(la_vec_create(la, n, &dy, &err));
        OK(la_vec_create(la, n, &dd, &err));
        OK(la_vec_create(la, n, &dz, &err));
        OK(la_vec_upload(la, &dx, x, &err));
        OK(la_vec_upload(la, &dd, d, &err));
        int64_t bad;

        /* axpy: y + a x */
        OK(la_vec_upload(la, &dy, y, &err));
        OK(la_axpy(la, a, &dx, &dy, &err));
        OK(la_vec_download(la, &dy, out, &err));
        for (int64_t i = 0; i < n; i++) {
            want[i] = stored(la, y[i]) + a * stored(la, x[i]);
            scale[i] = fabs(stored(la, y[i])) + fabs(a * stored(la, x[i])) + 1e-300;
        }
        bad = close_all(out, want, scale, n, 2 * eps);
        CHECK_MSG(bad < 0, "axpy n=%lld at %lld: %.17g vs %.17g", (long long)n,
                  (long long)bad, bad >= 0 ? out[bad] : 0, bad >= 0 ? want[bad] : 0);

        /* xpay: x + a y */
        OK(la_vec_upload(la, &dy, y, &err));
        OK(la_xpay(la, &dx, a, &dy, &err));
        OK(la_vec_download(la, &dy, out, &err));
        for (int64_t i = 0; i < n; i++) {
            want[i] = stored(la, x[i]) + a * stored(la, y[i]);
            scale[i] = fabs(stored(la, x[i])) + fabs(a * stored(la, y[i])) + 1e-300;
        }
        bad = close_all(out, want, scale, n, 2 * eps);
        CHECK_MSG(bad < 0, "xpay n=%lld at %lld", (long long)n, (long long)bad);

        /* copy: exact */
        upload_nan(la, &dz);
        OK(la_copy(la, &dx, &dz, &err));
        OK(la_vec_download(la, &dz, out, &err));
        bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (out[i] != stored(la, x[i]))
                bad = i;
        CHECK_MSG(bad < 0, "copy n=%lld at %lld", (long long)n, (long long)bad);

        /* fill: exact */
        upload_nan(la, &dz);
        OK(la_fill(la, a, &dz, &err));
        OK(la_vec_download(la, &dz, out, &err));
        bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (out[i] != a)
                bad = i;
        CHECK_MSG(bad < 0, "fill n=%lld at %lld", (long long)n, (long long)bad);

        /* pointwise: one rounding */
        upload_nan(la, &dz);
        OK(la_vec_upload(la, &dy, y, &err));
        OK(la_pointwise(la, &dd, &dy, &dz, &err));
        OK(la_vec_download(la, &dz, out, &err));
        for (int64_t i = 0; i < n; i++) {
            want[i] = stored(la, d[i]) * stored(la, y[i]);
            scale[i] = fabs(want[i]) + 1e-300;
        }
        bad = close_all(out, want, scale, n, eps);
        CHECK_MSG(bad < 0, "pointwise n=%lld at %lld", (long long)n, (long long)bad);

        la_vec_release(&dx);
        la_vec_release(&dy);
        la_vec_release(&dd);
        la_vec_release(&dz);
        free(x);
        free(y);
        free(d);
        free(out);
        free(want);
        free(scale);
    }
}

static void test_cg_updates(la_ctx *la)
{
    int64_t sizes[] = {0, 1, 256, 100003, rnd_int(2, 30000)};
    double eps = eps_of(la);
    double dtol = la->prec == LA_DOUBLE ? 1e-12 : (la->ocl->dev.fp64 ? 1e-6 : 1e-5);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int64_t n = sizes[s];
        size_t bytes = (size_t)(n ? n : 1) * sizeof(double);
        double *p = vec_random(n), *q = vec_random(n), *x = vec_random(n), *r = vec_random(n),
               *d = vec_random(n);
        double *xo = malloc(bytes), *ro = malloc(bytes), *zo = malloc(bytes);
        double *xw = malloc(bytes), *rw = malloc(bytes), *zw = malloc(bytes);
        double *xs = malloc(bytes), *rs = malloc(bytes), *zs = malloc(bytes);
        double alpha = stored(la, uni() * 2);
        long double rr = 0, rz = 0, arr = 0, arz = 0;
        for (int64_t i = 0; i < n; i++) {
            double P = stored(la, p[i]), Q = stored(la, q[i]), X = stored(la, x[i]),
                   R = stored(la, r[i]), D = stored(la, d[i]);
            xw[i] = X + alpha * P;
            xs[i] = fabs(X) + fabs(alpha * P) + 1e-300;
            rw[i] = R - alpha * Q;
            rs[i] = fabs(R) + fabs(alpha * Q) + 1e-300;
            zw[i] = D * rw[i];
            zs[i] = fabs(D) * rs[i] + 1e-300;
            rr += (long double)rw[i] * rw[i];
            rz += (long double)rw[i] * zw[i];
            arr += (long double)rw[i] * rw[i];
            arz += fabsl((long double)rw[i] * zw[i]);
        }
        la_vec dp, dq, dx, dr, dd, dz;
        OK(la_vec_create(la, n, &dp, &err));
        OK(la_vec_create(la, n, &dq, &err));
        OK(la_vec_create(la, n, &dx, &err));
        OK(la_vec_create(la, n, &dr, &err));
        OK(la_vec_create(la, n, &dd, &err));
        OK(la_vec_create(la, n, &dz, &err));
        OK(la_vec_upload(la, &dp, p, &err));
        OK(la_vec_upload(la, &dq, q, &err));
        OK(la_vec_upload(la, &dd, d, &err));

        /* cg_update */
        OK(la_vec_upload(la, &dx, x, &err));
        OK(la_vec_upload(la, &dr, r, &err));
        poison_reduction(la);
        double got_rr = NAN, got_rz = NAN;
        OK(la_cg_update(la, alpha, &dp, &dq, &dx, &dr, &got_rr, &err));
        OK(la_vec_download(la, &dx, xo, &err));
        OK(la_vec_download(la, &dr, ro, &err));
        int64_t bx = close_all(xo, xw, xs, n, 2 * eps), br = close_all(ro, rw, rs, n, 2 * eps);
        CHECK_MSG(bx < 0 && br < 0, "cg_update n=%lld: x bad at %lld, r bad at %lld",
                  (long long)n, (long long)bx, (long long)br);
        CHECK_MSG(fabs(got_rr - (double)rr) <= dtol * (double)arr,
                  "cg_update n=%lld: r'r %.17g vs %.17g", (long long)n, got_rr, (double)rr);
        if (n == 0)
            CHECK(got_rr == 0.0);

        /* pcg_update, from the same x and r */
        OK(la_vec_upload(la, &dx, x, &err));
        OK(la_vec_upload(la, &dr, r, &err));
        upload_nan(la, &dz);
        poison_reduction(la);
        got_rr = got_rz = NAN;
        OK(la_pcg_update(la, alpha, &dp, &dq, &dx, &dr, &dd, &dz, &got_rz, &got_rr, &err));
        OK(la_vec_download(la, &dx, xo, &err));
        OK(la_vec_download(la, &dr, ro, &err));
        OK(la_vec_download(la, &dz, zo, &err));
        bx = close_all(xo, xw, xs, n, 2 * eps);
        br = close_all(ro, rw, rs, n, 2 * eps);
        int64_t bz = close_all(zo, zw, zs, n, 4 * eps);
        CHECK_MSG(bx < 0 && br < 0 && bz < 0,
                  "pcg_update n=%lld: x bad at %lld, r at %lld, z at %lld", (long long)n,
                  (long long)bx, (long long)br, (long long)bz);
        CHECK_MSG(fabs(got_rr - (double)rr) <= dtol * (double)arr,
                  "pcg_update n=%lld: r'r %.17g vs %.17g", (long long)n, got_rr, (double)rr);
        CHECK_MSG(fabs(got_rz - (double)rz) <= dtol * (double)arz,
                  "pcg_update n=%lld: r'z %.17g vs %.17g", (long long)n, got_rz, (double)rz);

        /* aliasing outputs is refused */
        if (n > 0) {
            cls_error_clear(&err);
            CHECK(la_cg_update(la, alpha, &dp, &dq, &dx, &dx, &got_rr, &err) != CLS_OK);
            cls_error_clear(&err);
            CHECK(la_pcg_update(la, alpha, &dp, &dq, &dx, &dr, &dd, &dr, &got_rz, &got_rr,
                                &err) != CLS_OK);
        }

        la_vec *vs[] = {&dp, &dq, &dx, &dr, &dd, &dz};
        for (int i = 0; i < 6; i++)
            la_vec_release(vs[i]);
        double *hs[] = {p, q, x, r, d, xo, ro, zo, xw, rw, zw, xs, rs, zs};
        for (int i = 0; i < 14; i++)
            free(hs[i]);
    }
}

/* AUTO choice, refusals and the fp64 message */
static void test_upload_rules(la_ctx *la)
{
    csr_matrix A;
    cls_error e;
    /* short rows: scalar */
    csr_alloc(&A, 100, 100, 300, &e);
    for (int64_t i = 0; i < 100; i++) {
        A.rowptr[i + 1] = 3 * (i + 1);
        for (int t = 0; t < 3; t++) {
            A.col[3 * i + t] = (int32_t)((i + t) % 100);
            A.val[3 * i + t] = 1.0;
        }
        qsort(A.col + 3 * i, 3, sizeof *A.col, cmp_i32);
    }
    la_csr dA;
    OK(la_csr_upload(la, &A, LA_SPMV_AUTO, &dA, &err));
    CHECK(dA.variant == LA_SPMV_SCALAR);
    la_csr_release(&dA);
    /* and the device refuses what exceeds max_alloc */
    ocl_ctx small = *la->ocl;
    small.dev.max_alloc = 1000;
    la_ctx la2 = *la;
    la2.ocl = &small;
    cls_error_clear(&err);
    CHECK(la_csr_upload(&la2, &A, LA_SPMV_AUTO, &dA, &err) == CLS_EOTHER);
    CHECK_MSG(strstr(err.msg, "matrix needs") && strstr(err.msg, "MB"), "%s", err.msg);
    csr_free(&A);

    /* long rows: vector on GPUs, width the next power of two of the mean, <= 32 */
    csr_matrix B;
    csr_alloc(&B, 64, 64, 64 * 40, &e);
    for (int64_t i = 0; i < 64; i++) {
        B.rowptr[i + 1] = 40 * (i + 1);
        for (int t = 0; t < 40; t++) {
            B.col[40 * i + t] = t;
            B.val[40 * i + t] = 1.0;
        }
    }
    la_config saved = la->cfg;
    la->cfg.vector_width = 0;
    OK(la_csr_upload(la, &B, LA_SPMV_AUTO, &dA, &err));
    /* a dense 64 x 40 block is block-structured, so BCSR may win (la.c,
     * choose_format); what must hold: no vector kernel on a CPU, no
     * one-work-item-per-row CSR for long rows on a GPU */
    if (la->ocl->dev.type & CL_DEVICE_TYPE_CPU) {
        CHECK(dA.variant != LA_SPMV_VECTOR); /* vector never pays on CPUs (la.c) */
    } else {
        CHECK(dA.variant != LA_SPMV_SCALAR);
    }
    CHECK(dA.vector_width == (la->cfg.spmv_local_size < 32 ? la->cfg.spmv_local_size : 32));
    la_csr_release(&dA);
    la->cfg = saved;
    csr_free(&B);

    /* 32-bit index overflow is refused before touching the arrays */
    csr_matrix H;
    memset(&H, 0, sizeof H);
    H.nrows = 10;
    H.ncols = 10;
    H.nnz = (int64_t)INT32_MAX + 10;
    cls_error_clear(&err);
    CHECK(la_csr_upload(la, &H, LA_SPMV_AUTO, &dA, &err) == CLS_EOTHER);
    CHECK_MSG(strstr(err.msg, "32-bit") != NULL, "%s", err.msg);

    /* a device without fp64 asked for double */
    ocl_ctx nofp = *la->ocl;
    nofp.dev.fp64 = 0;
    la_ctx la3;
    cls_error_clear(&err);
    CHECK(la_init(&la3, &nofp, LA_DOUBLE, NULL, &err) == CLS_EOTHER);
    CHECK_MSG(strstr(err.msg, "fp64") && strstr(err.msg, "--precision float"), "%s", err.msg);

    /* a bad configuration is refused */
    la_config bad = la->cfg;
    bad.local_size = 100;
    cls_error_clear(&err);
    CHECK(la_init(&la3, la->ocl, la->prec, &bad, &err) == CLS_EUSAGE);

    CHECK(strcmp(la_spmv_variant_name(LA_SPMV_SCALAR), "scalar") == 0);
    CHECK(strcmp(la_spmv_variant_name(LA_SPMV_VECTOR), "vector") == 0);
}

static void run_all(ocl_ctx *ocl, la_precision prec, const la_config *cfg, const char *what)
{
    la_ctx la;
    cls_error_clear(&err);
    int rc = la_init(&la, ocl, prec, cfg, &err);
    CHECK_MSG(rc == CLS_OK, "la_init %s: %s", what, err.msg);
    if (rc)
        return;
    printf("%s: local %zu, groups/CU %zu (%zu groups), spmv local %zu\n", what,
           la.cfg.local_size, la.cfg.groups_per_cu, la.ngroups, la.cfg.spmv_local_size);
    int before = check_failures;
    test_spmv(&la, what);
    test_views(&la, what);
    test_dot(&la);
    test_blas1(&la);
    test_cg_updates(&la);
    test_upload_rules(&la);
    OK(la_finish(&la, &err));
    printf("%s: %s\n", what, check_failures == before ? "ok" : "FAILED");
    la_release(&la);
}

int main(int argc, char **argv)
{
    const int views_only = argc > 1 && !strcmp(argv[1], "--views");
    check_seed(views_only ? "test_la --views" : "test_la");
    ocl_device dev;
    cls_error_clear(&err);
    if (ocl_pick_device("auto", &dev, &err))
        CHECK_SKIP("no OpenCL device: %s", err.msg);
    ocl_ctx ocl;
    if (ocl_ctx_create(&dev, &ocl, &err)) {
        fprintf(stderr, "ocl_ctx_create: %s\n", err.msg);
        return 1;
    }
    printf("device: %s %s (%s), fp64 %d\n", ocl_type_name(dev.type), dev.name, dev.platform_name,
           dev.fp64);

    la_config def;
    la_config_default(&dev, &def);
    CHECK(def.local_size >= 1 && def.local_size <= dev.max_work_group);
    CHECK((def.local_size & (def.local_size - 1)) == 0);
    CHECK(def.groups_per_cu >= 1);

    /* small groups and one group per CU: many grid-stride passes */
    la_config tiny = def;
    tiny.local_size = 32;
    tiny.spmv_local_size = 64;
    tiny.groups_per_cu = 1;

    if (views_only) { /* test_views_staged's child */
        const la_precision precs[2] = {LA_DOUBLE, LA_FLOAT};
        for (int q = dev.fp64 ? 0 : 1; q < 2; q++) {
            la_ctx l;
            cls_error_clear(&err);
            int rc = la_init(&l, &ocl, precs[q], NULL, &err);
            CHECK_MSG(rc == CLS_OK, "la_init: %s", err.msg);
            if (!rc) {
                test_views(&l, q ? "float, staged" : "double, staged");
                la_release(&l);
            }
        }
        ocl_ctx_release(&ocl);
        return check_done("test_la --views");
    }
    if (dev.fp64) {
        run_all(&ocl, LA_DOUBLE, NULL, "double/default");
        run_all(&ocl, LA_DOUBLE, &tiny, "double/tiny");
    }
    run_all(&ocl, LA_FLOAT, NULL, "float/default");
    run_all(&ocl, LA_FLOAT, &tiny, "float/tiny");
    if (dev.fp64) { /* mixed precision uploads the values twice: both through the view */
        la_ctx lm;
        cls_error_clear(&err);
        int rc = la_init(&lm, &ocl, LA_MIXED, NULL, &err);
        CHECK_MSG(rc == CLS_OK, "la_init mixed: %s", err.msg);
        if (!rc) {
            test_views(&lm, "mixed");
            la_release(&lm);
        }
    }

    ocl_ctx_release(&ocl);
    test_views_staged();
    return check_done("test_la");
}
