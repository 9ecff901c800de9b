/*
 * test_csr.c: CSR assembly from triplets (csr_from_coo and its parallel,
 * mirroring and consuming variants).
 *
 * The expectation comes from a deliberately naive reference: qsort of all
 * entries by (row, column, value), then a left-to-right sum of each run of
 * equal (row, column). The contract is that duplicates are summed in
 * ascending value order, so the parallel assembly must match it bit for bit
 * under every thread count, input order and run.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "matrices/csr.h"

/* ------------------------------------------------------------------------ */
/* helpers                                                                   */

static void coo_make(coo_matrix *C, int64_t nrows, int64_t ncols, int64_t n)
{
    coo_init(C);
    C->nrows = nrows;
    C->ncols = ncols;
    C->nnz = n;
    C->cap = n;
    C->row = malloc((size_t)(n ? n : 1) * sizeof *C->row);
    C->col = malloc((size_t)(n ? n : 1) * sizeof *C->col);
    C->val = malloc((size_t)(n ? n : 1) * sizeof *C->val);
}

static void coo_copy(coo_matrix *D, const coo_matrix *C)
{
    coo_make(D, C->nrows, C->ncols, C->nnz);
    memcpy(D->row, C->row, (size_t)C->nnz * sizeof *D->row);
    memcpy(D->col, C->col, (size_t)C->nnz * sizeof *D->col);
    memcpy(D->val, C->val, (size_t)C->nnz * sizeof *D->val);
}

/* A value with a random sign and magnitude: sums of these depend on their
 * order, so a wrong summation order shows up in the bits. */
static double rand_val(void)
{
    unsigned r = (unsigned)check_rand();
    if (r % 11 == 0)
        return (r & 16) ? -0.0 : 0.0;
    double v = (check_uniform() + 0.1) * pow(10.0, (int)(check_rand() % 24) - 12);
    return (r & 1) ? -v : v;
}

/* n random entries of an nr x nr lower triangle (a fifth on the diagonal),
 * with duplicates, as a symmetric file stores them */
static void coo_random_lower(coo_matrix *C, int64_t n, int64_t nr)
{
    coo_make(C, nr, nr, n);
    for (int64_t k = 0; k < n; k++) {
        int32_t i = (int32_t)(check_rand() % (uint64_t)nr);
        int32_t j = (int32_t)(check_rand() % (uint64_t)nr);
        if (check_rand() % 5 == 0)
            j = i;
        if (j > i) {
            int32_t t = i;
            i = j;
            j = t;
        }
        C->row[k] = i;
        C->col[k] = j;
        C->val[k] = rand_val();
    }
}

static void shuffle(coo_matrix *C)
{
    for (int64_t k = C->nnz - 1; k > 0; k--) {
        int64_t m = (int64_t)(check_rand() % (uint64_t)(k + 1));
        int32_t r = C->row[k], c = C->col[k];
        double v = C->val[k];
        C->row[k] = C->row[m];
        C->col[k] = C->col[m];
        C->val[k] = C->val[m];
        C->row[m] = r;
        C->col[m] = c;
        C->val[m] = v;
    }
}

typedef struct trip {
    int32_t r, c;
    double v;
} trip;

static uint64_t key(double v) /* IEEE totalOrder on the bits */
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return (b >> 63) ? ~b : b | ((uint64_t)1 << 63);
}

static int trip_cmp(const void *a, const void *b)
{
    const trip *x = a, *y = b;
    if (x->r != y->r)
        return x->r < y->r ? -1 : 1;
    if (x->c != y->c)
        return x->c < y->c ? -1 : 1;
    uint64_t kx = key(x->v), ky = key(y->v);
    return kx < ky ? -1 : kx > ky;
}

/* The reference: expand (mirror), qsort, sum runs left to right. */
static void naive_csr(const coo_matrix *C, int mirror, csr_matrix *A, int64_t *dups,
                      int64_t *expanded)
{
    int64_t n = 0;
    trip *t = malloc((size_t)(2 * C->nnz + 1) * sizeof *t);
    for (int64_t k = 0; k < C->nnz; k++) {
        t[n++] = (trip){C->row[k], C->col[k], C->val[k]};
        if (mirror && C->row[k] != C->col[k])
            t[n++] = (trip){C->col[k], C->row[k], mirror < 0 ? -C->val[k] : C->val[k]};
    }
    *expanded = n;
    qsort(t, (size_t)n, sizeof *t, trip_cmp);
    cls_error e;
    csr_alloc(A, C->nrows, C->ncols, n, &e);
    int64_t out = 0, d = 0;
    for (int64_t k = 0; k < n; k++) {
        if (out > 0 && k > 0 && t[k].r == t[k - 1].r && t[k].c == A->col[out - 1]) {
            A->val[out - 1] += t[k].v;
            d++;
        } else {
            A->col[out] = t[k].c;
            A->val[out] = t[k].v;
            A->rowptr[t[k].r + 1]++;
            out++;
        }
    }
    for (int64_t i = 0; i < C->nrows; i++)
        A->rowptr[i + 1] += A->rowptr[i];
    A->nnz = out;
    *dups = d;
    free(t);
}

static int csr_bits_equal(const csr_matrix *A, const csr_matrix *B)
{
    if (A->nrows != B->nrows || A->ncols != B->ncols || A->nnz != B->nnz)
        return 0;
    if (memcmp(A->rowptr, B->rowptr, (size_t)(A->nrows + 1) * sizeof *A->rowptr))
        return 0;
    if (A->nnz && memcmp(A->col, B->col, (size_t)A->nnz * sizeof *A->col))
        return 0;
    if (A->nnz && memcmp(A->val, B->val, (size_t)A->nnz * sizeof *A->val))
        return 0;
    return 1;
}

static const int thread_counts[] = {1, 2, 3, 8};
#define NTC ((int)(sizeof thread_counts / sizeof thread_counts[0]))

/* Every variant and thread count (twice each) against the reference. */
static void check_all(const char *what, const coo_matrix *C, int mirror)
{
    csr_matrix ref;
    int64_t rdups, rexp;
    naive_csr(C, mirror, &ref, &rdups, &rexp);
    cls_error e;
    for (int q = 0; q < NTC; q++) {
        for (int run = 0; run < 2; run++) {
            int nt = thread_counts[q];
            csr_matrix A;
            int64_t dups = -1, exp = -1;
            int rc = csr_from_coo_mt(C, mirror, nt, &A, &exp, &dups, &e);
            CHECK_MSG(rc == CLS_OK, "%s: mt rc %d", what, rc);
            if (rc)
                continue;
            CHECK_MSG(csr_bits_equal(&A, &ref), "%s: mt, %d threads, run %d differs", what, nt,
                      run);
            CHECK_MSG(dups == rdups && exp == rexp,
                      "%s: mt, %d threads: dups %lld/%lld, "
                      "expanded %lld/%lld",
                      what, nt, (long long)dups, (long long)rdups, (long long)exp, (long long)rexp);
            csr_free(&A);

            coo_matrix D;
            coo_copy(&D, C);
            rc = csr_from_coo_take(&D, mirror, nt, &A, &exp, &dups, &e);
            CHECK_MSG(rc == CLS_OK, "%s: take rc %d", what, rc);
            CHECK_MSG(D.row == NULL && D.col == NULL && D.val == NULL && D.nnz == 0,
                      "%s: take left C with arrays", what);
            if (rc)
                continue;
            CHECK_MSG(csr_bits_equal(&A, &ref), "%s: take, %d threads, run %d differs", what, nt,
                      run);
            CHECK_MSG(dups == rdups && exp == rexp, "%s: take, %d threads: dups %lld/%lld", what,
                      nt, (long long)dups, (long long)rdups);
            csr_free(&A);
        }
    }
    if (!mirror) { /* the plain entry point agrees, and C is left intact */
        coo_matrix D;
        coo_copy(&D, C);
        csr_matrix A;
        int64_t dups = -1;
        CHECK(csr_from_coo(&D, &A, &dups, &e) == CLS_OK);
        CHECK_MSG(csr_bits_equal(&A, &ref) && dups == rdups, "%s: csr_from_coo differs", what);
        CHECK(D.nnz == C->nnz && memcmp(D.row, C->row, (size_t)C->nnz * sizeof *C->row) == 0 &&
              memcmp(D.val, C->val, (size_t)C->nnz * sizeof *C->val) == 0);
        csr_free(&A);
        coo_free(&D);
    }
    csr_free(&ref);
}

/* ------------------------------------------------------------------------ */
/* cases                                                                     */

/* Many duplicates: 200k entries over 1500 x 300, ~3 per position on average;
 * shuffled, grouped by row (columns still shuffled: the adopting path with
 * sort and merge) and fully sorted inputs must all give the reference. */
static void test_random_dups(void)
{
    coo_matrix C;
    const int64_t n = 200000, nr = 1500, nc = 300;
    coo_make(&C, nr, nc, n);
    for (int64_t k = 0; k < n; k++) {
        C.row[k] = (int32_t)(check_rand() % (uint64_t)nr);
        C.col[k] = (int32_t)(check_rand() % (uint64_t)nc);
        C.val[k] = rand_val();
    }
    check_all("random", &C, 0);
    shuffle(&C);
    check_all("random, shuffled", &C, 0);

    /* grouped by ascending row, columns in random order within a row */
    coo_matrix G;
    coo_make(&G, nr, nc, n);
    int64_t *cnt = calloc((size_t)nr + 1, sizeof *cnt);
    for (int64_t k = 0; k < n; k++)
        cnt[C.row[k] + 1]++;
    for (int64_t i = 0; i < nr; i++)
        cnt[i + 1] += cnt[i];
    for (int64_t k = 0; k < n; k++) {
        int64_t d = cnt[C.row[k]]++;
        G.row[d] = C.row[k];
        G.col[d] = C.col[k];
        G.val[d] = C.val[k];
    }
    check_all("grouped by row", &G, 0);
    free(cnt);
    coo_free(&G);
    coo_free(&C);
}

/* Square, for symmetric (+1) and skew (-1) mirroring, with duplicates and
 * diagonal entries. */
static void test_mirror(void)
{
    coo_matrix C;
    coo_random_lower(&C, 100000, 700);
    check_all("symmetric", &C, 1);
    check_all("skew", &C, -1);
    shuffle(&C);
    check_all("symmetric, shuffled", &C, 1);
    coo_free(&C);
}

/* C's entries grouped by ascending row (a stable counting sort: the order
 * within a row is kept), into G. */
static void coo_group_rows(coo_matrix *G, const coo_matrix *C)
{
    coo_make(G, C->nrows, C->ncols, C->nnz);
    int64_t *cnt = calloc((size_t)C->nrows + 1, sizeof *cnt);
    for (int64_t k = 0; k < C->nnz; k++)
        cnt[C->row[k] + 1]++;
    for (int64_t i = 0; i < C->nrows; i++)
        cnt[i + 1] += cnt[i];
    for (int64_t k = 0; k < C->nnz; k++) {
        int64_t d = cnt[C->row[k]]++;
        G->row[d] = C->row[k];
        G->col[d] = C->col[k];
        G->val[d] = C->val[k];
    }
    free(cnt);
}

/* As check_all, and the assembly took the path named (thread count 3). */
static void check_path(const char *what, const coo_matrix *C, int mirror, const char *path)
{
    check_all(what, C, mirror);
    csr_matrix A;
    cls_error e;
    CHECK(csr_from_coo_mt(C, mirror, 3, &A, NULL, NULL, &e) == CLS_OK);
    CHECK_MSG(strcmp(csr_last_path(), path) == 0, "%s: took the %s path, not %s", what,
              csr_last_path(), path);
    csr_free(&A);
}

/* Symmetric storage grouped by row, as files are written: the grouped
 * mirror (per-thread row windows, no atomics) against the reference, for
 * the lower triangle with unsorted columns and duplicates, the upper
 * triangle (rows come out of order and are sorted after), a band (windows
 * that barely meet), leading and trailing empty rows, skew; and the
 * scatter path where it does not apply. */
static void test_grouped_mirror(void)
{
    coo_matrix C, G;
    coo_random_lower(&C, 100000, 700);
    coo_group_rows(&G, &C);
    check_path("grouped lower, symmetric", &G, 1, "grouped mirror");
    check_path("grouped lower, skew", &G, -1, "grouped mirror");
    coo_free(&G);
    for (int64_t k = 0; k < C.nnz; k++) { /* the upper triangle */
        int32_t t = C.row[k];
        C.row[k] = C.col[k];
        C.col[k] = t;
    }
    coo_group_rows(&G, &C);
    check_path("grouped upper, symmetric", &G, 1, "grouped mirror");
    coo_free(&G);
    coo_free(&C);

    /* a band of half-width 5 in rows 10..989 of 1000, columns sorted,
     * some entries twice */
    const int64_t nr = 1000;
    coo_make(&C, nr, nr, 8 * nr);
    int64_t n = 0;
    for (int32_t i = 10; i < nr - 10; i++)
        for (int32_t j = i - 5; j <= i; j++) {
            if (check_rand() % 3 == 0)
                continue;
            int reps = check_rand() % 7 == 0 ? 2 : 1;
            for (int r = 0; r < reps && n < C.cap; r++) {
                C.row[n] = i;
                C.col[n] = j;
                C.val[n++] = rand_val();
            }
        }
    C.nnz = n;
    check_path("grouped band, symmetric", &C, 1, "grouped mirror");
    check_path("grouped band, skew", &C, -1, "grouped mirror");
    /* the same, CLSOLVE_CSR_PATH=scatter: the atomic path, same bits */
    setenv("CLSOLVE_CSR_PATH", "scatter", 1);
    check_path("grouped band, scatter forced", &C, 1, "scatter");
    unsetenv("CLSOLVE_CSR_PATH");
    shuffle(&C);
    check_path("band, shuffled", &C, 1, "scatter");
    coo_free(&C);

    /* entries all over 600k rows: eight threads' windows cover 4.8 M rows,
     * past the cap (2 x 600k + 2^20), so eight take the scatter path, one
     * the windows; the same bits either way */
    coo_random_lower(&C, 50000, 600000);
    coo_group_rows(&G, &C);
    check_all("grouped, wide windows", &G, 1);
    csr_matrix A, B;
    cls_error e;
    CHECK(csr_from_coo_mt(&G, 1, 8, &A, NULL, NULL, &e) == CLS_OK);
    CHECK_MSG(strcmp(csr_last_path(), "scatter") == 0, "wide windows, 8 threads: %s",
              csr_last_path());
    CHECK(csr_from_coo_mt(&G, 1, 1, &B, NULL, NULL, &e) == CLS_OK);
    CHECK_MSG(strcmp(csr_last_path(), "grouped mirror") == 0, "wide windows, 1 thread: %s",
              csr_last_path());
    CHECK(csr_bits_equal(&A, &B));
    csr_free(&A);
    csr_free(&B);
    coo_free(&G);
    coo_free(&C);

    coo_make(&C, 5, 5, 0); /* no entries */
    check_path("grouped, empty", &C, 1, "grouped mirror");
    coo_free(&C);
}

/* Rows that come out in order skip the sort (csr_last_in_order): a band
 * stored as its lower triangle with strictly ascending columns, mirrored or
 * adopted, gives the reference's bits on every thread count; one repeated
 * entry, one pair of columns swapped or one entry above the diagonal each
 * bring the sort back, and the result is the reference's all the same. */
static void in_order_case(const char *what, const coo_matrix *C, int mirror, const char *path,
                          int expect)
{
    check_path(what, C, mirror, path);
    for (int q = 0; q < NTC; q++) {
        csr_matrix A;
        cls_error e;
        CHECK(csr_from_coo_mt(C, mirror, thread_counts[q], &A, NULL, NULL, &e) == CLS_OK);
        CHECK_MSG(csr_last_in_order() == expect, "%s, %d threads: in order %d, expected %d", what,
                  thread_counts[q], csr_last_in_order(), expect);
        csr_free(&A);
    }
}

static void test_in_order(void)
{
    const int64_t nr = 3000;
    coo_matrix C;
    coo_make(&C, nr, nr, 8 * nr);
    int64_t n = 0;
    for (int32_t i = 0; i < nr; i++)
        for (int32_t j = i - 6 < 0 ? 0 : i - 6; j <= i; j++)
            if (j == i || check_rand() % 4 != 0) {
                C.row[n] = i;
                C.col[n] = j;
                C.val[n++] = rand_val();
            }
    C.nnz = n;
    in_order_case("lower band, symmetric", &C, 1, "grouped mirror", 1);
    in_order_case("lower band, skew", &C, -1, "grouped mirror", 1);
    in_order_case("lower band, general", &C, 0, "copy", 1);
    /* CLSOLVE_CSR_PATH=scatter: the atomic path sorts */
    setenv("CLSOLVE_CSR_PATH", "scatter", 1);
    in_order_case("lower band, scatter forced", &C, 1, "scatter", 0);
    unsetenv("CLSOLVE_CSR_PATH");

    int64_t mid = n / 2; /* two entries of one row */
    while (C.row[mid] != C.row[mid + 1])
        mid++;
    const int32_t c0 = C.col[mid], c1 = C.col[mid + 1];
    C.col[mid] = c1; /* two columns of a row swapped */
    C.col[mid + 1] = c0;
    in_order_case("lower band, one pair swapped", &C, 1, "grouped mirror", 0);
    in_order_case("lower band, one pair swapped, general", &C, 0, "copy", 0);
    C.col[mid] = c0;
    C.col[mid + 1] = c0; /* an entry repeated (its value differs) */
    in_order_case("lower band, a repeated entry", &C, 1, "grouped mirror", 0);
    C.col[mid + 1] = c1;
    in_order_case("lower band, restored", &C, 1, "grouped mirror", 1);
    /* row 100's diagonal (its last entry) moved above it: columns still ascend */
    int64_t d = 0;
    while (!(C.row[d] == 100 && C.col[d] == 100))
        d++;
    C.col[d] = 101;
    in_order_case("lower band, one entry above the diagonal", &C, 1, "grouped mirror", 0);
    coo_free(&C);
}

/* The in-order flag where the rows' order is decided across a block end, on
 * the scatter path after ph_window, and on a ranged read: row 0 holds (0,0),
 * row i >= 1 holds (i, i-1) and (i, i), so with 2 threads the first block
 * ends inside row nr / 2 (nr even); swapping that row's two columns is seen
 * only by the pair that straddles the blocks. Mirror destinations spread
 * over all rows (row i's second entry at a column hashed below i) make 8
 * threads' windows exceed the cap: the scatter path, not in order. */
static void test_in_order_edges(void)
{
    const int32_t nr = 1000; /* even */
    coo_matrix C;
    coo_make(&C, nr + 1, nr + 1, 2 * nr + 1);
    int64_t n = 0;
    C.row[n] = 0, C.col[n] = 0, C.val[n++] = 4.0;
    for (int32_t i = 1; i <= nr; i++) {
        C.row[n] = i, C.col[n] = i - 1, C.val[n++] = rand_val();
        C.row[n] = i, C.col[n] = i, C.val[n++] = 4.0 + rand_val();
    }
    C.nnz = n;
    CHECK(C.row[n / 2 - 1] == C.row[n / 2]); /* the pair at 2 threads' block end */
    in_order_case("pairs, symmetric", &C, 1, "grouped mirror", 1);
    const int32_t c0 = C.col[n / 2 - 1];
    C.col[n / 2 - 1] = C.col[n / 2];
    C.col[n / 2] = c0;
    in_order_case("pairs, the block end's pair swapped", &C, 1, "grouped mirror", 0);
    in_order_case("pairs, the block end's pair swapped, general", &C, 0, "copy", 0);
    C.col[n / 2] = C.col[n / 2 - 1];
    C.col[n / 2 - 1] = c0;

    /* a ranged read, no mirror, rows outside [rb, re): the scatter path */
    for (int nt = 1; nt <= 3; nt += 2) {
        coo_matrix D;
        coo_copy(&D, &C);
        csr_matrix A;
        cls_error e;
        CHECK(csr_from_coo_rows_take(&D, 0, 10, nr - 10, NULL, nt, &A, NULL, NULL, &e) == CLS_OK);
        CHECK_MSG(!csr_last_in_order() && strcmp(csr_last_path(), "scatter") == 0,
                  "ranged, %d threads: path %s, in order %d", nt, csr_last_path(),
                  csr_last_in_order());
        CHECK(A.nrows == nr - 20 && A.rowptr[A.nrows] == 2 * (nr - 20));
        csr_free(&A);
    }
    coo_free(&C);

    const int32_t nw = 600000;
    coo_make(&C, nw, nw, 2 * (int64_t)nw);
    n = 0;
    for (int32_t i = 0; i < nw; i++) {
        if (i > 0) /* a column anywhere below the diagonal */
            C.row[n] = i, C.col[n] = (int32_t)(check_rand() % (uint64_t)i), C.val[n++] = rand_val();
        C.row[n] = i, C.col[n] = i, C.val[n++] = 4.0;
    }
    C.nnz = n;
    csr_matrix A, B;
    cls_error e;
    CHECK(csr_from_coo_mt(&C, 1, 8, &A, NULL, NULL, &e) == CLS_OK);
    CHECK_MSG(strcmp(csr_last_path(), "scatter") == 0 && !csr_last_in_order(),
              "wide windows in order, 8 threads: %s, in order %d", csr_last_path(),
              csr_last_in_order());
    CHECK(csr_from_coo_mt(&C, 1, 1, &B, NULL, NULL, &e) == CLS_OK);
    CHECK_MSG(strcmp(csr_last_path(), "grouped mirror") == 0 && csr_last_in_order(),
              "wide windows in order, 1 thread: %s, in order %d", csr_last_path(),
              csr_last_in_order());
    CHECK(csr_bits_equal(&A, &B));
    csr_free(&A);
    csr_free(&B);
    coo_free(&C);
}

/* The entries of C, mirrored, whose row is in [rb, re): what a rank of a
 * ranged read owns of them (rows kept global, no mirror left to apply). */
static void coo_rows_of(coo_matrix *E, const coo_matrix *C, int mirror, int64_t rb, int64_t re)
{
    coo_make(E, C->nrows, C->ncols, 2 * C->nnz);
    int64_t n = 0;
    for (int64_t k = 0; k < C->nnz; k++) {
        const int32_t i = C->row[k], j = C->col[k];
        if (i >= rb && i < re) {
            E->row[n] = i;
            E->col[n] = j;
            E->val[n++] = C->val[k];
        }
        if (mirror && i != j && j >= rb && j < re) {
            E->row[n] = j;
            E->col[n] = i;
            E->val[n++] = mirror < 0 ? -C->val[k] : C->val[k];
        }
    }
    E->nnz = n;
}

/* csr_from_coo_rows_take, as a ranged read uses it: the entries are split
 * between this rank's parse (C1) and the others' (C2); the rank keeps its
 * rows of C1 and receives its rows of C2, mirrored (X). The result must be
 * the reference of its rows of C1 + C2, bit for bit, with the same
 * duplicates and expanded count, for every thread count. */
static const char *want_path; /* check_rows: the path every assembly must take, or NULL */

static void check_rows(const char *what, const coo_matrix *C, int mirror, int64_t rb, int64_t re,
                       int split)
{
    coo_matrix C1, C2, all, X, ref_in;
    coo_make(&C1, C->nrows, C->ncols, C->nnz);
    coo_make(&C2, C->nrows, C->ncols, C->nnz);
    C1.nnz = C2.nnz = 0;
    for (int64_t k = 0; k < C->nnz; k++) {
        /* split 1: a third at random to the others; 2: the rows beyond
         * [rb - 2, re + 2) (a ranged read's span of a file written row by
         * row: the others send only the mirrors near the ends) */
        coo_matrix *D = split == 1 && check_rand() % 3 == 0                         ? &C2
                        : split == 2 && (C->row[k] < rb - 2 || C->row[k] >= re + 2) ? &C2
                                                                                    : &C1;
        D->row[D->nnz] = C->row[k];
        D->col[D->nnz] = C->col[k];
        D->val[D->nnz++] = C->val[k];
    }
    coo_rows_of(&X, &C2, mirror, rb, re);
    coo_rows_of(&all, C, mirror, rb, re);
    /* the reference: those rows renumbered from 0, assembled naively */
    coo_make(&ref_in, re - rb, C->ncols, all.nnz);
    for (int64_t k = 0; k < all.nnz; k++) {
        ref_in.row[k] = (int32_t)(all.row[k] - rb);
        ref_in.col[k] = all.col[k];
        ref_in.val[k] = all.val[k];
    }
    csr_matrix ref;
    int64_t rdups, rexp;
    naive_csr(&ref_in, 0, &ref, &rdups, &rexp);
    cls_error e;
    for (int q = 0; q < NTC; q++) {
        coo_matrix D, Y;
        coo_copy(&D, &C1);
        coo_copy(&Y, &X);
        csr_matrix A;
        int64_t dups = -1, exp = -1;
        int rc =
            csr_from_coo_rows_take(&D, mirror, rb, re, &Y, thread_counts[q], &A, &exp, &dups, &e);
        CHECK_MSG(rc == CLS_OK, "%s: rows take rc %d", what, rc);
        CHECK_MSG(D.row == NULL && Y.row == NULL, "%s: rows take left its inputs", what);
        if (rc)
            continue;
        CHECK_MSG(csr_bits_equal(&A, &ref), "%s: rows [%lld, %lld), %d threads differ (%s)", what,
                  (long long)rb, (long long)re, thread_counts[q], csr_last_path());
        if (want_path)
            CHECK_MSG(strcmp(csr_last_path(), want_path) == 0, "%s: %d threads took %s, not %s",
                      what, thread_counts[q], csr_last_path(), want_path);
        CHECK_MSG(dups == rdups && exp == rexp,
                  "%s: rows, %d threads: dups %lld/%lld, "
                  "expanded %lld/%lld",
                  what, thread_counts[q], (long long)dups, (long long)rdups, (long long)exp,
                  (long long)rexp);
        csr_free(&A);
    }
    csr_free(&ref);
    coo_free(&ref_in);
    coo_free(&all);
    coo_free(&X);
    coo_free(&C1);
    coo_free(&C2);
}

/* Windows at the start, the middle and the end, empty ones, with and
 * without entries from other ranks; grouped input whose rows all lie in
 * the window takes the adopting path with a shifted row numbering. */
/* A ranged read's assembly of symmetric storage grouped by row: the rows
 * of a window of a band matrix from the rank's span (rows a little beyond
 * the window on both sides, skipped) and the mirrors the next rank sends
 * (X): the grouped mirror, against the reference. */
static void test_rows_grouped(void)
{
    coo_matrix C;
    const int64_t nr = 1000;
    coo_make(&C, nr, nr, 6 * nr);
    int64_t n = 0;
    for (int32_t i = 0; i < nr; i++)
        for (int32_t j = i - 5 < 0 ? 0 : i - 5; j <= i; j++)
            if (check_rand() % 4 != 0) {
                C.row[n] = i;
                C.col[n] = j;
                C.val[n++] = rand_val();
            }
    C.nnz = n;
    static const int64_t win[][2] = {{0, 300}, {300, 650}, {650, 1000}, {0, 1000}, {400, 400}};
    want_path = "grouped mirror";
    for (int m = -1; m <= 1; m += 2)
        for (int w = 0; w < 5; w++)
            for (int split = 0; split <= 2; split += 2)
                check_rows(m > 0 ? "rows grouped, symmetric" : "rows grouped, skew", &C, m,
                           win[w][0], win[w][1], split);
    want_path = NULL;
    coo_free(&C);
}

static void test_rows_window(void)
{
    coo_matrix C;
    const int64_t nr = 900;
    coo_random_lower(&C, 60000, nr);
    static const int64_t win[][2] = {{0, 300}, {300, 650}, {650, 900}, {0, 900}, {400, 400}};
    for (int m = -1; m <= 1; m++)
        for (int w = 0; w < 5; w++)
            for (int split = 0; split <= 1; split++)
                check_rows(m ? (m > 0 ? "rows, symmetric" : "rows, skew") : "rows, general", &C, m,
                           win[w][0], win[w][1], split);
    /* grouped by row and inside the window: adopted, rows renumbered */
    coo_matrix G;
    coo_make(&G, nr, nr, 0);
    G.nnz = 0;
    free(G.row);
    free(G.col);
    free(G.val);
    G.row = malloc(3 * 200 * sizeof *G.row);
    G.col = malloc(3 * 200 * sizeof *G.col);
    G.val = malloc(3 * 200 * sizeof *G.val);
    for (int32_t i = 500; i < 700; i++)
        for (int r = 0; r < 3; r++) {
            G.row[G.nnz] = i;
            G.col[G.nnz] = (int32_t)(check_rand() % (uint64_t)nr);
            G.val[G.nnz++] = rand_val();
        }
    G.cap = G.nnz;
    check_rows("rows, grouped", &G, 0, 450, 750, 0);
    check_rows("rows, grouped, others", &G, 0, 450, 750, 1);
    coo_free(&G);
    coo_free(&C);
}

/* Sorted and unique: the adopting path without merge; every row a few
 * entries, many rows empty (including the first and the last). */
static void test_sorted_empty_rows(void)
{
    coo_matrix C;
    const int64_t nr = 50000, nc = 1000;
    coo_make(&C, nr, nc, 0);
    free(C.row);
    free(C.col);
    free(C.val);
    int64_t cap = 60000, n = 0;
    C.row = malloc((size_t)cap * sizeof *C.row);
    C.col = malloc((size_t)cap * sizeof *C.col);
    C.val = malloc((size_t)cap * sizeof *C.val);
    for (int64_t i = 1; i < nr - 1 && n + 8 < cap; i++) {
        if (check_rand() % 3)
            continue; /* two rows in three are empty */
        int32_t c = (int32_t)(check_rand() % 50);
        for (int k = 0; k < 4 && c < nc; k++) {
            C.row[n] = (int32_t)i;
            C.col[n] = c;
            C.val[n++] = rand_val();
            c += 1 + (int32_t)(check_rand() % 100);
        }
    }
    C.nnz = n;
    C.cap = cap;
    check_all("sorted, empty rows", &C, 0);

    csr_matrix A;
    cls_error e;
    int64_t dups = -1;
    CHECK(csr_from_coo_mt(&C, 0, 3, &A, NULL, &dups, &e) == CLS_OK);
    CHECK(dups == 0 && A.nnz == n && A.rowptr[0] == 0 && A.rowptr[1] == 0 && A.rowptr[nr] == n &&
          A.rowptr[nr - 1] == n);
    csr_free(&A);
    coo_free(&C);
}

/* One huge row among empty ones: the heap sort, one thread owning it. */
static void test_huge_row(void)
{
    coo_matrix C;
    const int64_t n = 150000, nr = 10, nc = 40000;
    coo_make(&C, nr, nc, n);
    for (int64_t k = 0; k < n; k++) {
        C.row[k] = 6;
        C.col[k] = (int32_t)(check_rand() % (uint64_t)nc);
        C.val[k] = rand_val();
    }
    check_all("huge row", &C, 0);
    /* and a few entries elsewhere, after it */
    C.row[n - 1] = 9;
    C.row[n - 2] = 0;
    check_all("huge row + others", &C, 0);
    coo_free(&C);
}

/* Degenerate shapes: no entries (with and without arrays), no rows, more
 * threads than entries. */
static void test_small(void)
{
    cls_error e;
    csr_matrix A;
    int64_t dups = -1, exp = -1;
    coo_matrix C;
    coo_init(&C);
    C.nrows = 4;
    C.ncols = 3;
    for (int q = 0; q < NTC; q++) {
        CHECK(csr_from_coo_mt(&C, 0, thread_counts[q], &A, &exp, &dups, &e) == CLS_OK);
        CHECK(A.nrows == 4 && A.nnz == 0 && A.rowptr[4] == 0 && dups == 0 && exp == 0);
        csr_free(&A);
        coo_matrix D = C; /* no arrays at all */
        CHECK(csr_from_coo_take(&D, 0, thread_counts[q], &A, &exp, &dups, &e) == CLS_OK);
        CHECK(A.nnz == 0 && A.col && A.val && A.rowptr[4] == 0);
        csr_free(&A);
    }
    coo_make(&C, 0, 0, 0);
    CHECK(csr_from_coo_mt(&C, 1, 8, &A, &exp, &dups, &e) == CLS_OK);
    CHECK(A.nrows == 0 && A.nnz == 0 && A.rowptr[0] == 0);
    csr_free(&A);
    coo_free(&C);

    coo_make(&C, 3, 3, 3);
    int32_t r[3] = {2, 0, 2}, c[3] = {1, 0, 1};
    double v[3] = {1.5, 2.0, 0.25};
    memcpy(C.row, r, sizeof r);
    memcpy(C.col, c, sizeof c);
    memcpy(C.val, v, sizeof v);
    check_all("three entries", &C, 0);
    check_all("three entries, symmetric", &C, 1);
    CHECK(csr_from_coo_mt(&C, 1, 8, &A, &exp, &dups, &e) == CLS_OK);
    /* (0,0)=2, (1,2)=1.75 mirrored from (2,1) twice, (2,1)=1.75 */
    CHECK(A.nnz == 3 && dups == 2 && exp == 5);
    CHECK(A.rowptr[1] == 1 && A.rowptr[2] == 2 && A.col[1] == 2 && A.val[1] == 1.75);
    csr_free(&A);
    coo_free(&C);
}

int main(void)
{
    check_seed("test_csr");
    csr_set_parallel_min(1); /* small inputs run in parallel too */
    test_small();
    test_random_dups();
    test_mirror();
    test_grouped_mirror();
    test_in_order();
    test_in_order_edges();
    test_rows_window();
    test_rows_grouped();
    test_sorted_empty_rows();
    test_huge_row();
    csr_set_parallel_min(0);
    test_random_dups(); /* the default threshold: one thread below 65536 */
    return check_done("test_csr");
}
