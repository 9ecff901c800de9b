/*
 * test_solve_check.c: solve_check_input (solver/solve.c) runs its checks
 * over row ranges in parallel; the entry it names must be the one a
 * sequential scan finds first, whatever the thread count. Faults are
 * planted at random rows of a generated 7-point system large enough for
 * several ranges, two at a time, and the message must name the earlier.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "matrices/gen.h"
#include "solver/solve.h"

static int64_t find(const csr_matrix *A, int64_t i, int64_t j)
{
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
        if (A->col[k] == j)
            return k;
    return -1;
}

/* runs the check with each thread count; all must give rc and a message
 * containing want */
static void expect(const csr_matrix *A, int rc_want, const char *want, const char *what)
{
    static const char *threads[] = {"1", "2", "5", "16"};
    for (int t = 0; t < 4; t++) {
        setenv("CLS_THREADS", threads[t], 1);
        cls_error e;
        cls_error_clear(&e);
        int rc = solve_check_input(A, NULL, 0, "m.mtx", &e);
        CHECK_MSG(rc == rc_want, "%s, %s threads: rc %d, want %d (%s)", what, threads[t], rc,
                  rc_want, e.msg);
        if (want)
            CHECK_MSG(strstr(e.msg, want) != NULL, "%s, %s threads: '%s' lacks '%s'", what,
                      threads[t], e.msg, want);
    }
    unsetenv("CLS_THREADS");
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    check_seed("test_solve_check");
    csr_matrix A;
    cls_error e;
    CHECK(gen_matrix(GEN_POISSON3D, 48, &A, &e) == CLS_OK); /* 110,592 rows */
    const int64_t n = A.nrows;
    expect(&A, CLS_OK, NULL, "clean");

    char want[64];
    for (int trial = 0; trial < 6; trial++) {
        int64_t r1 = 1 + (int64_t)(check_rand() % (uint64_t)(n - 2));
        int64_t r2 = 1 + (int64_t)(check_rand() % (uint64_t)(n - 2));
        if (r1 == r2)
            continue;
        int64_t first = r1 < r2 ? r1 : r2;
        /* an asymmetric upper entry in each row: a(i, i+1) changed */
        int64_t k1 = find(&A, r1, r1 + 1), k2 = find(&A, r2, r2 + 1);
        if (k1 < 0 || k2 < 0)
            continue;
        double v1 = A.val[k1], v2 = A.val[k2];
        A.val[k1] = v1 * 1.5;
        A.val[k2] = v2 * 0.5;
        snprintf(want, sizeof want, "a(%lld,%lld)", (long long)first + 1, (long long)first + 2);
        expect(&A, CLS_EBREAKDOWN, want, "two asymmetries");
        A.val[k1] = v1;
        A.val[k2] = v2;

        /* a zero diagonal in one row and an asymmetry in the other */
        int64_t d1 = find(&A, r1, r1);
        double dv = A.val[d1];
        A.val[d1] = 0.0;
        A.val[k2] = v2 * 3.0;
        if (r1 < r2)
            snprintf(want, sizeof want, "diagonal entry (%lld,%lld)", (long long)r1 + 1,
                     (long long)r1 + 1);
        else
            snprintf(want, sizeof want, "a(%lld,%lld)", (long long)r2 + 1, (long long)r2 + 2);
        expect(&A, CLS_EBREAKDOWN, want, "diagonal and asymmetry");
        A.val[d1] = dv;
        A.val[k2] = v2;
    }
    /* mirrored storage (solve_check_input_stored): the symmetry test is
     * left out, the diagonal and the values are still checked */
    {
        int64_t r; /* a row with both x-neighbours (not at a grid line's end) */
        do
            r = 1 + (int64_t)(check_rand() % (uint64_t)(n - 2));
        while (find(&A, r, r + 1) < 0 || find(&A, r, r - 1) < 0);
        int64_t k = find(&A, r, r + 1), d = find(&A, r, r);
        double v = A.val[k], dv = A.val[d];
        A.val[k] = v * 1.5;
        cls_error_clear(&e);
        CHECK_MSG(solve_check_input_stored(&A, NULL, 0, "m.mtx", 1, NULL, &e) == CLS_OK,
                  "mirrored: the symmetry test ran (%s)", e.msg);
        CHECK(solve_check_input_stored(&A, NULL, 0, "m.mtx", 0, NULL, &e) == CLS_EBREAKDOWN);
        A.val[k] = v;
        A.val[d] = -2.0;
        cls_error_clear(&e);
        snprintf(want, sizeof want, "diagonal entry (%lld,%lld)", (long long)r + 1,
                 (long long)r + 1);
        CHECK_MSG(solve_check_input_stored(&A, NULL, 0, "m.mtx", 1, NULL, &e) == CLS_EBREAKDOWN &&
                      strstr(e.msg, want),
                  "mirrored, bad diagonal: %s", e.msg);
        A.val[d] = dv;
        A.val[find(&A, r, r - 1)] = 1.0 / 0.0;
        CHECK(solve_check_input_stored(&A, NULL, 0, "m.mtx", 1, NULL, &e) == CLS_EINPUT);
        A.val[find(&A, r, r - 1)] = A.val[find(&A, r - 1, r)];
        expect(&A, CLS_OK, NULL, "restored");
    }
    /* what the passes give on the way (solve_check_more: dsolve's scaling,
     * b = A*1 and D^-1 on one rank): against sequential sums in entry
     * order, bit for bit, on fresh random values kept symmetric */
    {
        double *keep = malloc((size_t)A.nnz * sizeof *keep);
        double *rs = malloc((size_t)n * sizeof *rs), *di = malloc((size_t)n * sizeof *di);
        CHECK(keep && rs && di);
        memcpy(keep, A.val, (size_t)A.nnz * sizeof *keep);
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = A.rowptr[i]; k < A.rowptr[i + 1]; k++) {
                const int64_t j = A.col[k];
                if (j < i)
                    A.val[k] = A.val[find(&A, j, i)]; /* a_ij = a_ji, drawn for j < i */
                else if (j > i)
                    A.val[k] = -(double)(check_rand() % 1000000) * 1e-6;
                else
                    A.val[k] = 7.0 + (double)(check_rand() % 1000) * 1e-3 * (double)(i % 7);
            }
        static const char *threads[] = {"1", "3", "16"};
        for (int t = 0; t < 3; t++) {
            setenv("CLS_THREADS", threads[t], 1);
            solve_check_more more = {-1.0, rs, di};
            cls_error_clear(&e);
            CHECK_MSG(solve_check_input_stored(&A, NULL, 0, "m.mtx", t & 1, &more, &e) == CLS_OK,
                      "more, %s threads: %s", threads[t], e.msg);
            double amax = 0.0;
            int64_t bad_sum = -1, bad_inv = -1;
            for (int64_t i = 0; i < n; i++) {
                double s = 0.0;
                for (int64_t k = A.rowptr[i]; k < A.rowptr[i + 1]; k++) {
                    s += A.val[k];
                    amax = fabs(A.val[k]) > amax ? fabs(A.val[k]) : amax;
                }
                if (rs[i] != s && bad_sum < 0)
                    bad_sum = i;
                if (di[i] != 1.0 / A.val[find(&A, i, i)] && bad_inv < 0)
                    bad_inv = i;
            }
            CHECK_MSG(bad_sum < 0, "%s threads: row %lld's sum differs", threads[t],
                      (long long)bad_sum);
            CHECK_MSG(bad_inv < 0, "%s threads: row %lld's 1/a_ii differs", threads[t],
                      (long long)bad_inv);
            CHECK_MSG(more.amax == amax, "%s threads: max |a| %g, want %g", threads[t], more.amax,
                      amax);
        }
        unsetenv("CLS_THREADS");
        memcpy(A.val, keep, (size_t)A.nnz * sizeof *keep);
        free(keep);
        free(rs);
        free(di);
    }
    /* a NaN anywhere outranks a bad row before it */
    A.val[find(&A, 5, 5)] = -1.0;
    A.val[A.nnz - 3] = 0.0 / 0.0;
    expect(&A, CLS_EINPUT, "NaN or Inf", "NaN");
    /* mirrored storage finds the diagonals in the values' pass: the NaN
     * still outranks the bad row, and without it the first bad row over
     * the ranges is the one named, whatever the thread count */
    static const char *mthreads[] = {"1", "3", "16"};
    for (int t = 0; t < 3; t++) {
        setenv("CLS_THREADS", mthreads[t], 1);
        cls_error_clear(&e);
        CHECK_MSG(solve_check_input_stored(&A, NULL, 0, "m.mtx", 1, NULL, &e) == CLS_EINPUT &&
                      strstr(e.msg, "NaN or Inf"),
                  "mirrored, %s threads: the NaN after a bad row: %s", mthreads[t], e.msg);
        const double keep_nan = A.val[A.nnz - 3];
        A.val[A.nnz - 3] = 0.0;
        const int64_t late = n - 7, dl = find(&A, late, late);
        const double keep_late = A.val[dl];
        A.val[dl] = 0.0;
        cls_error_clear(&e);
        snprintf(want, sizeof want, "diagonal entry (6,6)");
        CHECK_MSG(solve_check_input_stored(&A, NULL, 0, "m.mtx", 1, NULL, &e) == CLS_EBREAKDOWN &&
                      strstr(e.msg, want),
                  "mirrored, %s threads, rows 6 and %lld bad: %s", mthreads[t], (long long)late + 1,
                  e.msg);
        A.val[dl] = keep_late;
        A.val[A.nnz - 3] = keep_nan;
    }
    unsetenv("CLS_THREADS");
    csr_free(&A);
    return check_done("test_solve_check");
}
