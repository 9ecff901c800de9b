/*
 * test_sparse.c: the device's sparse building blocks (kernels/la_sparse.h)
 * against their plain host twins, on the OpenCL device (PoCL here).
 *
 * 1. la_scan_i32 against a serial prefix sum, for lengths around the
 *    block size (255..257), one and two blocks, several blocks
 *    (100000, 3000001) and none; the offsets poisoned first so an entry the
 *    scan skips shows. A total of exactly INT32_MAX passes; past it the
 *    scan fails and says so (the kernels' indices are 32-bit).
 * 2. la_spgemm against the host's amg_spgemm (sorted): random matrices of
 *    several shapes (rectangular, empty rows, explicit zeros, no rows, no
 *    entries, no columns), a row of thousands of distinct columns (the
 *    global tables), and the AMG products A P and R (A P) of poisson3d 16,
 *    R (A P) also from the device's own A P. Each at the device's hash
 *    table and at tiny ones (16 and 64 entries), so the short, long and
 *    global paths all run (checked: la_sparse's last_*_rows).
 *    The pattern must be the host's exactly; a value may differ from the
 *    host's by the rounding of a different order of addition:
 *    |c - c_host| <= 1e-13 * sum |a_ik b_kj| (that sum from the host's
 *    product of |A| and |B|).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_dev.h"
#include "kernels/la.h"
#include "kernels/la_sparse.h"
#include "matrices/gen.h"
#include "solver/amg/amg.h"
#include "solver/amg/amg_priv.h"

static cls_error err;

#define OK(call)                                                                                   \
    do {                                                                                           \
        cls_error_clear(&err);                                                                     \
        int rc_ = (call);                                                                          \
        CHECK_MSG(rc_ == CLS_OK, "%s -> %d: %s", #call, rc_, err.msg);                             \
    } while (0)

static cl_mem dev_buffer(la_ctx *la, size_t bytes, const void *host)
{
    static const double dummy = 0.0;
    cl_int st;
    const void *src = bytes && host ? host : !bytes ? (const void *)&dummy : NULL;
    cl_mem_flags fl = CL_MEM_READ_WRITE | (src ? CL_MEM_COPY_HOST_PTR : 0);
    cl_mem m = clCreateBuffer(la->ocl->context, fl, bytes ? bytes : sizeof dummy, (void *)src, &st);
    CHECK_MSG(st == CL_SUCCESS, "clCreateBuffer(%zu bytes): %d", bytes, (int)st);
    return m;
}

static void dev_read(la_ctx *la, cl_mem m, size_t off, size_t bytes, void *host)
{
    if (!bytes)
        return;
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, m, CL_TRUE, off, bytes, host, 0, NULL, NULL);
    CHECK_MSG(st == CL_SUCCESS, "clEnqueueReadBuffer(%zu bytes): %d", bytes, (int)st);
}

/* ------------------------------------------------------------------ 1. scan */

static void test_scan_case(la_ctx *la, la_sparse *k, int64_t n, int maxc)
{
    int32_t *cnt = malloc((size_t)(n ? n : 1) * sizeof *cnt);
    int32_t *off = malloc((size_t)(n + 1) * sizeof *off);
    for (int64_t i = 0; i < n; i++)
        cnt[i] = (int32_t)(check_rand() % (unsigned long long)(maxc + 1));
    for (int64_t i = 0; i <= n; i++)
        off[i] = -7;
    cl_mem dc = dev_buffer(la, (size_t)n * sizeof *cnt, cnt);
    cl_mem doff = dev_buffer(la, (size_t)(n + 1) * sizeof *off, off);
    int64_t total = -1;
    OK(la_scan_i32(la, k, dc, n, doff, &total, &err));
    dev_read(la, doff, 0, (size_t)(n + 1) * sizeof *off, off);
    int64_t s = 0, bad = 0, first = -1;
    for (int64_t i = 0; i <= n; i++) {
        if (off[i] != (int32_t)s && bad++ == 0)
            first = i;
        if (i < n)
            s += cnt[i];
    }
    CHECK_MSG(bad == 0, "scan of %lld counts: %lld offsets wrong, first at %lld", (long long)n,
              (long long)bad, (long long)first);
    CHECK_MSG(total == s, "scan of %lld counts: total %lld, want %lld", (long long)n,
              (long long)total, (long long)s);
    printf("  scan n=%lld: total %lld%s\n", (long long)n, (long long)total, bad ? " WRONG" : "");
    clReleaseMemObject(dc);
    clReleaseMemObject(doff);
    free(cnt);
    free(off);
}

/* counts whose total is want (exactly representable by the chosen counts) */
static int scan_total_rc(la_ctx *la, la_sparse *k, const int32_t *cnt, int64_t n, int64_t *total)
{
    cl_mem dc = dev_buffer(la, (size_t)n * sizeof *cnt, cnt);
    cl_mem doff = dev_buffer(la, (size_t)(n + 1) * sizeof(int32_t), NULL);
    cls_error_clear(&err);
    int rc = la_scan_i32(la, k, dc, n, doff, total, &err);
    clReleaseMemObject(dc);
    clReleaseMemObject(doff);
    return rc;
}

static void test_scan(la_ctx *la, la_sparse *k)
{
    const int64_t ns[] = {0, 1, 2, 255, 256, 257, 2047, 2048, 2049, 100000, 3000001};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        test_scan_case(la, k, ns[i], 100);
    test_scan_case(la, k, 5000, 400000); /* large counts: a block's sum past 2^31 is fine */
    /* exactly INT32_MAX: fine */
    int32_t edge[2] = {INT32_MAX - 5, 5};
    int64_t total = -1;
    CHECK(scan_total_rc(la, k, edge, 2, &total) == CLS_OK && total == INT32_MAX);
    /* one past, in a short and a long array: an error that says why */
    int32_t past[2] = {INT32_MAX, 1};
    CHECK(scan_total_rc(la, k, past, 2, NULL) != CLS_OK && strstr(err.msg, "INT32_MAX"));
    int64_t n = 100000;
    int32_t *big = malloc((size_t)n * sizeof *big);
    for (int64_t i = 0; i < n; i++)
        big[i] = 30000; /* 3e9 in all */
    CHECK(scan_total_rc(la, k, big, n, &total) != CLS_OK && strstr(err.msg, "INT32_MAX"));
    printf("  scan past INT32_MAX: %s\n", err.msg);
    free(big);
}

/* -------------------------------------------------------------- 2. spgemm */

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* m x n, rows empty with probability pempty, else 1..maxk distinct sorted
 * columns; values in (-1, 1), one in 16 an explicit zero */
static void random_csr(int64_t m, int64_t n, double pempty, int maxk, csr_matrix *M)
{
    int64_t *len = malloc((size_t)(m ? m : 1) * sizeof *len), nnz = 0;
    for (int64_t i = 0; i < m; i++) {
        len[i] = (n == 0 || check_uniform() < pempty) ? 0 : 1 + (int64_t)(check_rand() % maxk);
        if (len[i] > n)
            len[i] = n;
        nnz += len[i];
    }
    OK(csr_alloc(M, m, n, nnz, &err));
    unsigned char *mark = calloc((size_t)(n ? n : 1), 1);
    M->rowptr[0] = 0;
    for (int64_t i = 0; i < m; i++) {
        int32_t *c = M->col + M->rowptr[i];
        int64_t got = 0;
        if (len[i] * 2 > n) { /* dense-ish: every column, then drop at random */
            for (int64_t j = 0; j < n; j++)
                mark[j] = 1;
            for (int64_t left = n; left > len[i];) {
                int64_t d = (int64_t)(check_rand() % (unsigned long long)n);
                if (mark[d]) {
                    mark[d] = 0;
                    left--;
                }
            }
            for (int64_t j = 0; j < n; j++)
                if (mark[j]) {
                    c[got++] = (int32_t)j;
                    mark[j] = 0;
                }
        } else {
            while (got < len[i]) {
                int32_t j = (int32_t)(check_rand() % (unsigned long long)n);
                if (!mark[j]) {
                    mark[j] = 1;
                    c[got++] = j;
                }
            }
            for (int64_t q = 0; q < got; q++)
                mark[c[q]] = 0;
        }
        qsort(c, (size_t)got, sizeof *c, cmp_i32);
        for (int64_t q = 0; q < got; q++)
            M->val[M->rowptr[i] + q] = check_rand() % 16 == 0 ? 0.0 : 2.0 * check_uniform() - 1.0;
        M->rowptr[i + 1] = M->rowptr[i] + got;
    }
    free(mark);
    free(len);
}

static void upload(la_ctx *la, const csr_matrix *M, la_dcsr *D)
{
    int32_t *rp = malloc((size_t)(M->nrows + 1) * sizeof *rp);
    for (int64_t i = 0; i <= M->nrows; i++)
        rp[i] = (int32_t)M->rowptr[i];
    D->nrows = M->nrows;
    D->ncols = M->ncols;
    D->nnz = M->nnz;
    D->rowptr = dev_buffer(la, (size_t)(M->nrows + 1) * sizeof *rp, rp);
    D->col = dev_buffer(la, (size_t)M->nnz * sizeof *M->col, M->col);
    D->val = dev_buffer(la, (size_t)M->nnz * sizeof *M->val, M->val);
    free(rp);
}

static void download(la_ctx *la, const la_dcsr *D, csr_matrix *M)
{
    OK(csr_alloc(M, D->nrows, D->ncols, D->nnz, &err));
    int32_t *rp = malloc((size_t)(D->nrows + 1) * sizeof *rp);
    dev_read(la, D->rowptr, 0, (size_t)(D->nrows + 1) * sizeof *rp, rp);
    for (int64_t i = 0; i <= D->nrows; i++)
        M->rowptr[i] = rp[i];
    dev_read(la, D->col, 0, (size_t)D->nnz * sizeof *M->col, M->col);
    dev_read(la, D->val, 0, (size_t)D->nnz * sizeof *M->val, M->val);
    free(rp);
}

static void abs_copy(const csr_matrix *M, csr_matrix *T)
{
    OK(csr_alloc(T, M->nrows, M->ncols, M->nnz, &err));
    memcpy(T->rowptr, M->rowptr, (size_t)(M->nrows + 1) * sizeof *M->rowptr);
    memcpy(T->col, M->col, (size_t)M->nnz * sizeof *M->col);
    for (int64_t q = 0; q < M->nnz; q++)
        T->val[q] = fabs(M->val[q]);
}

/* the device's C (downloaded) against the host's product of A and B */
static void compare_product(const char *what, const csr_matrix *A, const csr_matrix *B,
                            const csr_matrix *C)
{
    csr_matrix H, S, Aa, Ba;
    OK(amg_spgemm(A, B, 1, &H, &err));
    abs_copy(A, &Aa);
    abs_copy(B, &Ba);
    OK(amg_spgemm(&Aa, &Ba, 1, &S, &err));
    CHECK_MSG(C->nrows == H.nrows && C->ncols == H.ncols && C->nnz == H.nnz,
              "%s: %lld x %lld, %lld nonzeros; host %lld x %lld, %lld", what, (long long)C->nrows,
              (long long)C->ncols, (long long)C->nnz, (long long)H.nrows, (long long)H.ncols,
              (long long)H.nnz);
    if (C->nrows == H.nrows && C->nnz == H.nnz) {
        int64_t badp = 0, badc = 0, badv = 0;
        double worst = 0.0;
        for (int64_t i = 0; i <= H.nrows; i++)
            if (C->rowptr[i] != H.rowptr[i] && badp++ == 0)
                fprintf(stderr, "%s: rowptr[%lld] %lld, host %lld\n", what, (long long)i,
                        (long long)C->rowptr[i], (long long)H.rowptr[i]);
        for (int64_t q = 0; q < H.nnz && !badp; q++) {
            if (C->col[q] != H.col[q]) {
                if (badc++ == 0)
                    fprintf(stderr, "%s: col[%lld] %d, host %d\n", what, (long long)q,
                            (int)C->col[q], (int)H.col[q]);
                continue;
            }
            double d = fabs(C->val[q] - H.val[q]), b = 1e-13 * S.val[q];
            if (S.val[q] > 0.0 && d / S.val[q] > worst)
                worst = d / S.val[q];
            if (d > b && badv++ == 0)
                fprintf(stderr, "%s: val[%lld] %.17g, host %.17g (bound %.3g)\n", what,
                        (long long)q, C->val[q], H.val[q], b);
        }
        CHECK_MSG(!badp && !badc && !badv, "%s: %lld row pointers, %lld columns, %lld values wrong",
                  what, (long long)badp, (long long)badc, (long long)badv);
        printf("  %-34s %6lld x %-6lld nnz %-8lld worst %.2g\n", what, (long long)H.nrows,
               (long long)H.ncols, (long long)H.nnz, worst);
    }
    csr_free(&H);
    csr_free(&S);
    csr_free(&Aa);
    csr_free(&Ba);
}

/* C = A B on the device, checked; dC (when not NULL) keeps the device's C */
static void check_product(la_ctx *la, la_sparse *k, const char *what, const csr_matrix *A,
                          const csr_matrix *B, la_dcsr *dC, int64_t *long_rows,
                          int64_t *global_rows)
{
    la_dcsr dA, dB, C;
    upload(la, A, &dA);
    upload(la, B, &dB);
    OK(la_spgemm(la, k, &dA, &dB, &C, &err));
    if (long_rows)
        *long_rows += k->last_long_rows;
    if (global_rows)
        *global_rows += k->last_global_rows;
    char name[128];
    snprintf(name, sizeof name, "%s (cap %zu)", what, k->hash_cap);
    if (C.rowptr) {
        csr_matrix Ch;
        download(la, &C, &Ch);
        compare_product(name, A, B, &Ch);
        csr_free(&Ch);
    }
    if (dC)
        *dC = C;
    else
        la_dcsr_release(&C);
    la_dcsr_release(&dA);
    la_dcsr_release(&dB);
}

static void test_random(la_ctx *la, la_sparse *k, size_t cap)
{
    k->hash_cap = cap;
    int64_t nl = 0, ng = 0;
    struct {
        const char *name;
        int64_t m, n, p;
        double pe;
        int ka, kb;
    } cs[] = {{"random 50x70 * 70x40", 50, 70, 40, 0.2, 8, 6},
              {"random 2000x1500 * 1500x2500", 2000, 1500, 2500, 0.1, 20, 30},
              {"random 300x5 * 5x800", 300, 5, 800, 0.3, 5, 400},
              {"random 1x1 * 1x1", 1, 1, 1, 0.0, 1, 1},
              {"random 0x10 * 10x5", 0, 10, 5, 0.0, 3, 3},
              {"random empty 30x10 * 10x20", 30, 10, 20, 1.0, 1, 3},
              {"random 5x10 * 10x0", 5, 10, 0, 0.0, 4, 1},
              {"random 400x400 * 400x400 dense-ish", 400, 400, 400, 0.0, 300, 200}};
    for (size_t c = 0; c < sizeof cs / sizeof *cs; c++) {
        csr_matrix A, B;
        random_csr(cs[c].m, cs[c].n, cs[c].pe, cs[c].ka, &A);
        random_csr(cs[c].n, cs[c].p, cs[c].pe, cs[c].kb, &B);
        check_product(la, k, cs[c].name, &A, &B, NULL, &nl, &ng);
        csr_free(&A);
        csr_free(&B);
    }
    /* one full row of A times B rows of 30 of 6000 columns: a row of about
     * 4700 distinct columns, past any local table */
    csr_matrix A, B;
    random_csr(64, 300, 0.3, 10, &A);
    random_csr(300, 6000, 0.0, 60, &B);
    csr_matrix F;
    OK(csr_alloc(&F, A.nrows, A.ncols, A.nnz - (A.rowptr[6] - A.rowptr[5]) + 300, &err));
    int64_t q = 0;
    for (int64_t i = 0; i < A.nrows; i++) {
        F.rowptr[i] = q;
        if (i == 5) {
            for (int32_t j = 0; j < 300; j++) {
                F.col[q] = j;
                F.val[q++] = 2.0 * check_uniform() - 1.0;
            }
        } else {
            for (int64_t p = A.rowptr[i]; p < A.rowptr[i + 1]; p++) {
                F.col[q] = A.col[p];
                F.val[q++] = A.val[p];
            }
        }
    }
    F.rowptr[A.nrows] = q;
    int64_t ng0 = ng;
    check_product(la, k, "random, one row of 4700 columns", &F, &B, NULL, &nl, &ng);
    CHECK_MSG(ng > ng0, "the 4700-column row did not go to the global tables (cap %zu)", cap);
    csr_free(&A);
    csr_free(&B);
    csr_free(&F);
    CHECK_MSG(nl > 0, "no long rows ran at cap %zu", cap);
    printf("  cap %zu: %lld long rows, %lld in global tables\n", cap, (long long)nl, (long long)ng);
}

static void test_amg(la_ctx *la, la_sparse *k, size_t cap)
{
    k->hash_cap = cap;
    csr_matrix A;
    OK(gen_matrix(GEN_POISSON3D, 16, &A, &err));
    amg_hierarchy *h = NULL;
    OK(amg_build(&A, NULL, &h, &err));
    int64_t nl = 0, ng = 0;
    for (int l = 0; h && l + 1 < h->nlevels && l < 2; l++) {
        const amg_level *lv = &h->lev[l];
        char what[64];
        la_dcsr dAP;
        snprintf(what, sizeof what, "poisson3d 16 level %d: A P", l);
        check_product(la, k, what, &lv->A, &lv->P, &dAP, &nl, &ng);
        csr_matrix AP;
        OK(amg_spgemm(&lv->A, &lv->P, 1, &AP, &err));
        snprintf(what, sizeof what, "poisson3d 16 level %d: R (A P)", l);
        check_product(la, k, what, &lv->R, &AP, NULL, &nl, &ng);
        /* R times the device's own A P */
        if (dAP.rowptr) {
            la_dcsr dR, C;
            upload(la, &lv->R, &dR);
            OK(la_spgemm(la, k, &dR, &dAP, &C, &err));
            if (C.rowptr) {
                csr_matrix Ch;
                download(la, &C, &Ch);
                snprintf(what, sizeof what, "level %d: R (A P), A P on device", l);
                compare_product(what, &lv->R, &AP, &Ch);
                csr_free(&Ch);
                la_dcsr_release(&C);
            }
            la_dcsr_release(&dR);
            la_dcsr_release(&dAP);
        }
        csr_free(&AP);
    }
    if (cap <= 64)
        CHECK_MSG(nl > 0, "AMG products at cap %zu ran no long rows", cap);
    if (cap <= 16)
        CHECK_MSG(ng > 0, "AMG products at cap %zu ran no global tables", cap);
    printf("  AMG products, cap %zu: %lld long rows, %lld in global tables\n", cap, (long long)nl,
           (long long)ng);
    amg_free(h);
    csr_free(&A);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    check_seed("test_sparse");
    ocl_ctx ocl;
    la_ctx la;
    test_dev_open(&ocl, &la);
    la_sparse k;
    OK(la_sparse_init(&la, &k, &err));
    if (k.prog) {
        const size_t dcap = k.hash_cap;
        printf("hash_cap %zu, %zu work-items a group\n", dcap, k.sg_ls);
        test_scan(&la, &k);
        const size_t caps[] = {dcap, 64, 16};
        for (size_t c = 0; c < 3; c++) {
            test_random(&la, &k, caps[c]);
            test_amg(&la, &k, caps[c]);
        }
        la_sparse_release(&k);
    }
    la_release(&la);
    ocl_ctx_release(&ocl);
    return check_done("test_sparse");
}
