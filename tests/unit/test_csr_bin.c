/*
 * test_csr_bin.c: the binary CSR form (matrices/csr_bin.h) on fresh random
 * matrices (seeded from the clock, CLSOLVE_TEST_SEED replays): written by
 * csr_bin_write and read back through mm_read_csr and mm_read_header (the
 * magic decides), every array equal to the original and the header's sizes
 * right; then every refusal, each naming its file and what is wrong: a file
 * cut short or too long, a header shorter than 32 bytes, negative sizes,
 * row pointers that do not start at 0, decrease or do not end at nnz,
 * a column out of range, columns not increasing within a row, and a
 * memory limit below the arrays' size. A text file beside it still reads
 * as Matrix Market.
 */
#define _GNU_SOURCE /* mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "matrices/csr_bin.h"
#include "matrices/mm.h"

static char dir[256];

static void path_of(const char *name, char *out)
{
    snprintf(out, 512, "%s/%s", dir, name);
}

/* a random n x m matrix, about k entries per row, columns sorted, unique */
static void random_csr(int64_t n, int64_t m, int k, csr_matrix *A)
{
    cls_error e;
    CHECK(csr_alloc(A, n, m, n * k, &e) == CLS_OK);
    int64_t z = 0;
    A->rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t c = (int64_t)(check_rand() % 3);
        for (int j = 0; j < k && c < m; j++) {
            A->col[z] = (int32_t)c;
            A->val[z++] = 2.0 * check_uniform() - 1.0;
            c += 1 + (int64_t)(check_rand() % 4);
        }
        A->rowptr[i + 1] = z;
    }
    A->nnz = z;
}

/* the bytes of the file at p, with `patch` bytes written at `off` (or the
 * file cut at `cut` bytes when cut >= 0), as a new file named name */
static void variant(const char *src, const char *name, long off, const void *patch, size_t n,
                    long cut, char *out)
{
    FILE *f = fopen(src, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)size + 16);
    CHECK(fread(buf, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    if (patch)
        memcpy(buf + off, patch, n);
    long len = cut >= 0 ? cut : size;
    path_of(name, out);
    f = fopen(out, "wb");
    fwrite(buf, 1, (size_t)len, f);
    if (cut < -1) /* a trailing extra byte */
        fputc(0, f);
    fclose(f);
    free(buf);
}

static void refused(const char *p, const char *want)
{
    csr_matrix A;
    cls_error e;
    cls_error_clear(&e);
    int rc = mm_read_csr(p, NULL, &A, NULL, NULL, &e);
    CHECK_MSG(rc == CLS_EINPUT && strstr(e.msg, want) && strstr(e.msg, p),
              "%s: rc %d, message '%s' (wanted '%s')", p, rc, e.msg, want);
    if (rc == CLS_OK)
        csr_free(&A);
}

int main(void)
{
    check_seed("test_csr_bin");
    snprintf(dir, sizeof dir, "/tmp/test_csr_bin.XXXXXX");
    if (!mkdtemp(dir))
        CHECK_SKIP("mkdtemp failed");
    char p[512], q[512];
    cls_error e;
    for (int trial = 0; trial < 6; trial++) {
        csr_matrix A, B;
        const int64_t n = 1 + (int64_t)(check_rand() % 3000), m = trial % 2 ? n : n + 7;
        random_csr(n, m, 1 + trial, &A);
        path_of("a.bin", p);
        CHECK(csr_bin_write(p, &A, &e) == CLS_OK);
        mm_header h;
        mm_read_stats st;
        CHECK_MSG(mm_read_csr(p, NULL, &B, &h, &st, &e) == CLS_OK, "read: %s", e.msg);
        CHECK(B.nrows == n && B.ncols == m && B.nnz == A.nnz && h.entries == A.nnz &&
              st.stored_entries == A.nnz);
        CHECK(!memcmp(A.rowptr, B.rowptr, (size_t)(n + 1) * 8) &&
              !memcmp(A.col, B.col, (size_t)A.nnz * 4) && !memcmp(A.val, B.val, (size_t)A.nnz * 8));
        mm_header hh;
        CHECK(mm_read_header(p, &hh, &e) == CLS_OK && hh.rows == n && hh.cols == m &&
              hh.entries == A.nnz && hh.symmetry == MM_GENERAL);
        csr_free(&B);
        mm_read_options ro = {.max_memory = 64};
        CHECK(mm_read_csr(p, &ro, &B, NULL, NULL, &e) == CLS_EOTHER && strstr(e.msg, "MB"));
        csr_free(&B);
        csr_free(&A);
    }
    /* the refusals, on a 3 x 3 with rows {0, 2}, {1}, {2} */
    csr_matrix A;
    CHECK(csr_alloc(&A, 3, 3, 4, &e) == CLS_OK);
    int64_t rp[4] = {0, 2, 3, 4};
    int32_t col[4] = {0, 2, 1, 2};
    double val[4] = {4, 1, 5, 6};
    memcpy(A.rowptr, rp, sizeof rp);
    memcpy(A.col, col, sizeof col);
    memcpy(A.val, val, sizeof val);
    path_of("ok.bin", p);
    CHECK(csr_bin_write(p, &A, &e) == CLS_OK);
    csr_free(&A);
    variant(p, "cut.bin", 0, NULL, 0, 80, q);
    refused(q, "bytes but its header");
    variant(p, "long.bin", 0, NULL, 0, -2, q);
    refused(q, "bytes but its header");
    variant(p, "short.bin", 0, NULL, 0, 20, q);
    refused(q, "shorter than the 32-byte header");
    const int64_t neg = -3;
    variant(p, "neg.bin", 8, &neg, 8, -1, q);
    refused(q, "not a matrix this reader takes");
    const int64_t one = 1, two = 2, five = 5;
    variant(p, "start.bin", 32, &one, 8, -1, q);
    refused(q, "row 1: row pointers 1 .. 2");
    variant(p, "over.bin", 40, &five, 8, -1, q);
    refused(q, "row 1: row pointers 0 .. 5");
    variant(p, "down.bin", 48, &one, 8, -1, q);
    refused(q, "row 2: row pointers 2 .. 1");
    variant(p, "end.bin", 56, &two, 8, -1, q);
    refused(q, "row 3: row pointers 3 .. 2");
    const int32_t big = 3, back = 0;
    variant(p, "range.bin", 64 + 4, &big, 4, -1, q);
    refused(q, "row 1: column 4 out of range 1..3");
    variant(p, "order.bin", 64 + 4, &back, 4, -1, q);
    refused(q, "row 1: column 1 after 1 (columns must increase");
    /* a text file beside it: Matrix Market as before */
    path_of("t.mtx", q);
    FILE *f = fopen(q, "w");
    fputs("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 3\n", f);
    fclose(f);
    csr_matrix T;
    CHECK(mm_read_csr(q, NULL, &T, NULL, NULL, &e) == CLS_OK && T.nnz == 2);
    csr_free(&T);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_done("test_csr_bin");
}
