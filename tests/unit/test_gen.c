/*
 * test_gen.c: the stencil generators against a naive builder.
 *
 * The naive builder visits every (dz, dy, dx) in {-1,0,1}^3 for every grid
 * point, keeps the stencil's offsets that stay inside the grid, and sorts the
 * row by column: no row-length formula, no parallel fill, nothing shared
 * with gen.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "matrices/gen.h"
#include "matrices/gen_rows.h"

/* Row i of the naive matrix into (col, val), sorted; returns its length. */
static int naive_row(gen_kind k, int64_t n, int64_t i, int64_t *col, double *val)
{
    int dims = k == GEN_POISSON2D ? 2 : 3;
    int64_t x = i % n, y = (i / n) % n, z = dims == 3 ? i / (n * n) : 0;
    double diag = k == GEN_POISSON2D ? 4 : k == GEN_POISSON3D ? 6 : 26;
    int len = 0;
    for (int dz = -1; dz <= 1; dz++)
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) {
                if (dims == 2 && dz != 0)
                    continue;
                int moved = (dx != 0) + (dy != 0) + (dz != 0);
                if (k != GEN_POISSON3D27 && moved > 1)
                    continue;
                int64_t xx = x + dx, yy = y + dy, zz = z + dz;
                if (xx < 0 || xx >= n || yy < 0 || yy >= n || zz < 0 || zz >= n)
                    continue;
                int64_t j = dims == 2 ? yy * n + xx : (zz * n + yy) * n + xx;
                /* insertion into sorted position */
                int p = len++;
                while (p > 0 && col[p - 1] > j) {
                    col[p] = col[p - 1];
                    val[p] = val[p - 1];
                    p--;
                }
                col[p] = j;
                val[p] = moved ? -1.0 : diag;
            }
    return len;
}

static void check_against_naive(gen_kind k, int64_t n)
{
    csr_matrix A;
    cls_error e;
    int rc = gen_matrix(k, n, &A, &e);
    CHECK_MSG(rc == CLS_OK, "%s %lld: %s", gen_kind_name(k), (long long)n, e.msg);
    if (rc)
        return;
    int64_t rows = k == GEN_POISSON2D ? n * n : n * n * n;
    int64_t nnz = k == GEN_POISSON2D   ? 5 * n * n - 4 * n
                  : k == GEN_POISSON3D ? 7 * n * n * n - 6 * n * n
                                       : (3 * n - 2) * (3 * n - 2) * (3 * n - 2);
    CHECK(A.nrows == rows && A.ncols == rows);
    CHECK_MSG(A.nnz == nnz && A.rowptr[rows] == nnz, "%s %lld: nnz %lld, formula %lld",
              gen_kind_name(k), (long long)n, (long long)A.nnz, (long long)nnz);
    CHECK(A.rowptr[0] == 0);
    int64_t col[27];
    double val[27];
    int bad = 0;
    double diag = k == GEN_POISSON2D ? 4 : k == GEN_POISSON3D ? 6 : 26;
    for (int64_t i = 0; i < rows && bad < 3; i++) {
        int len = naive_row(k, n, i, col, val);
        int64_t b = A.rowptr[i], rl = A.rowptr[i + 1] - b;
        int ok = rl == len;
        double sum = 0;
        for (int q = 0; ok && q < len; q++) {
            ok = A.col[b + q] == col[q] && A.val[b + q] == val[q];
            sum += A.val[b + q];
        }
        if (!ok) {
            bad++;
            CHECK_MSG(0, "%s %lld: row %lld differs from the naive builder", gen_kind_name(k),
                      (long long)n, (long long)i);
            continue;
        }
        /* interior rows (full stencil) sum to zero, boundary rows are positive */
        int full = len == (k == GEN_POISSON2D ? 5 : k == GEN_POISSON3D ? 7 : 27);
        if (full)
            CHECK_MSG(sum == 0.0, "row %lld sums to %g", (long long)i, sum);
        else
            CHECK_MSG(sum > 0.0, "boundary row %lld sums to %g", (long long)i, sum);
    }
    if (rows <= 100000) {
        csr_stats st;
        csr_compute_stats(&A, &st);
        CHECK_MSG(st.symmetric, "%s %lld not symmetric", gen_kind_name(k), (long long)n);
        CHECK(st.missing_diag == 0 && st.zero_diag == 0 && st.negative_diag == 0);
        double *d = malloc((size_t)rows * sizeof *d);
        csr_diagonal(&A, d);
        int dok = 1;
        for (int64_t i = 0; i < rows; i++)
            dok &= d[i] == diag;
        CHECK(dok);
        free(d);
    }
    csr_free(&A);
}

/* Rows [r0, r1) of a poisson3d or poisson3d27 block on an anisotropic
 * grid against the naive definition, split over `threads` ranges. */
static void check_block(gen_kind k, int64_t nx, int64_t ny, int64_t nz, int64_t r0, int64_t r1,
                        const char *threads)
{
    setenv("CLS_THREADS", threads, 1);
    gen_grid g = {k, nx, ny, nz};
    csr_matrix B;
    cls_error e;
    int rc = gen_grid_rows_csr(&g, r0, r1, &B, &e);
    unsetenv("CLS_THREADS");
    CHECK_MSG(rc == CLS_OK, "block: %s", e.msg);
    if (rc)
        return;
    CHECK(B.nrows == r1 - r0 && B.ncols == nx * ny * nz && B.rowptr[0] == 0);
    int bad = 0;
    double diag = k == GEN_POISSON3D ? 6 : 26;
    for (int64_t i = r0; i < r1 && bad < 3; i++) {
        int64_t x = i % nx, y = (i / nx) % ny, z = i / (nx * ny), o = B.rowptr[i - r0];
        int ok = 1, len = 0;
        for (int dz = -1; dz <= 1; dz++) /* (dz, dy, dx) ascending: ascending columns */
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int moved = (dx != 0) + (dy != 0) + (dz != 0);
                    if ((k == GEN_POISSON3D && moved > 1) || x + dx < 0 || x + dx >= nx ||
                        y + dy < 0 || y + dy >= ny || z + dz < 0 || z + dz >= nz)
                        continue;
                    int64_t j = ((z + dz) * ny + (y + dy)) * nx + (x + dx);
                    ok &= o + len < B.rowptr[i - r0 + 1] && B.col[o + len] == j &&
                          B.val[o + len] == (moved ? -1.0 : diag);
                    len++;
                }
        ok &= B.rowptr[i - r0 + 1] - o == len;
        if (!ok) {
            bad++;
            CHECK_MSG(0, "%lldx%lldx%lld block [%lld, %lld), %s threads: row %lld differs",
                      (long long)nx, (long long)ny, (long long)nz, (long long)r0, (long long)r1,
                      threads, (long long)i);
        }
    }
    CHECK(B.nnz == B.rowptr[B.nrows]);
    csr_free(&B);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    check_seed("test_gen");
    static const gen_kind kinds[] = {GEN_POISSON2D, GEN_POISSON3D, GEN_POISSON3D27};
    for (int t = 0; t < 3; t++) {
        for (int64_t n = 1; n <= 6; n++)
            check_against_naive(kinds[t], n);
        /* a random mid-size grid, big enough for several threads */
        int64_t n = kinds[t] == GEN_POISSON2D ? 300 + (int64_t)(check_rand() % 200)
                                              : 45 + (int64_t)(check_rand() % 20);
        check_against_naive(kinds[t], n);
    }

    /* row blocks of anisotropic grids, one and several ranges */
    check_block(GEN_POISSON3D, 90, 80, 70, 12345, 500000, "7");
    check_block(GEN_POISSON3D, 90, 80, 70, 12345, 500000, "1");
    check_block(GEN_POISSON3D27, 31, 77, 203, 0, 31 * 77 * 203, "5");
    check_block(GEN_POISSON3D27, 31, 77, 203, 4000, 4001, "5");

    gen_kind k;
    CHECK(gen_kind_parse("poisson2d", &k) == 0 && k == GEN_POISSON2D);
    CHECK(gen_kind_parse("poisson3d", &k) == 0 && k == GEN_POISSON3D);
    CHECK(gen_kind_parse("poisson3d27", &k) == 0 && k == GEN_POISSON3D27);
    CHECK(gen_kind_parse("poisson4d", &k) == -1);
    CHECK(strcmp(gen_kind_name(GEN_POISSON3D27), "poisson3d27") == 0);

    csr_matrix A;
    cls_error e;
    CHECK(gen_matrix(GEN_POISSON3D, 0, &A, &e) == CLS_EUSAGE);
    CHECK(gen_matrix(GEN_POISSON3D, -5, &A, &e) == CLS_EUSAGE);
    CHECK(gen_matrix(GEN_POISSON3D, 1291, &A, &e) == CLS_EUSAGE); /* 1291^3 > 2^31-1 */
    CHECK(strstr(e.msg, "2147483647") != NULL);
    CHECK(gen_matrix(GEN_POISSON3D27, 100000000, &A, &e) == CLS_EUSAGE);
    CHECK(gen_matrix(GEN_POISSON2D, 46341, &A, &e) == CLS_EUSAGE); /* 46341^2 > 2^31-1 */
    CHECK(gen_matrix(GEN_POISSON2D, INT64_MAX, &A, &e) == CLS_EUSAGE);
    CHECK(gen_matrix(GEN_POISSON3D, INT64_MAX, &A, &e) == CLS_EUSAGE);
    return check_done("test_gen");
}
