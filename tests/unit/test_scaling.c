/*
 * test_scaling.c: solves whose magnitudes are far from 1, and the input
 * checks of b and x0 (docs/errors.md, problems found 4 and 5).
 *
 * CG forms b'b, r'r and p'Ap as plain sums of squares. Before dsolve_file
 * scaled the system, a matrix of entries 1e-170 gave b = A*1 with b'b = 0:
 * "converged after 0 iterations", x = 0, a wrong answer reported exact;
 * and b = 1e200 was refused as "NaN or Inf". Checked here, through
 * dsolve_file (one part and two parts of one device -- the one engine's
 * device-scalar loop and its host-reduced loop --, double and float) as
 * `clsolve solve` and the
 * daemon call it:
 *   1. the host norms: solve_nrm2 and solve_true_residual stay exact where
 *      plain sums of squares underflow or overflow; solve_scale_exponent's
 *      window;
 *   2. A = 1e-170 I (and 1e-170 times a tridiagonal SPD matrix), b = A*1:
 *      x = 1, converged with a true residual that is small but computed,
 *      the same iteration count as the unscaled system;
 *   3. b = (1e200, 1) on I: x = b; b = 0: x = 0 (x0 ignored, as before);
 *   4. a non-finite initial guess is bad input (CLS_EINPUT), as a
 *      non-finite b is; a solution beyond double's range is refused
 *      (CLS_EBREAKDOWN), never returned as infinities.
 * Files go to a fresh directory under $TMPDIR. Skips (77) without an
 * OpenCL device.
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "kernels/ocl.h"
#include "solver/dsolve.h"
#include "solver/dist/dvec.h"
#include "solver/solve.h"

static char dir[512];

/* Writes text to DIR/name; returns the path (static buffer per slot). */
static const char *put(int slot, const char *name, const char *text)
{
    static char paths[8][700];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", dir, name);
    FILE *f = fopen(paths[slot], "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", paths[slot]);
        exit(1);
    }
    return paths[slot];
}

/* A tridiagonal SPD matrix (4 on the diagonal, -1 beside it) times s. */
static const char *tridiag(int slot, const char *name, int n, double s)
{
    size_t cap = (size_t)n * 80 + 200;
    char *t = malloc(cap);
    if (!t)
        exit(1);
    size_t k = (size_t)snprintf(
        t, cap, "%%%%MatrixMarket matrix coordinate real symmetric\n%d %d %d\n", n, n, 2 * n - 1);
    for (int i = 1; i <= n; i++) {
        k += (size_t)snprintf(t + k, cap - k, "%d %d %.17g\n", i, i, 4.0 * s);
        if (i < n)
            k += (size_t)snprintf(t + k, cap - k, "%d %d %.17g\n", i + 1, i, -1.0 * s);
    }
    const char *p = put(slot, name, t);
    free(t);
    return p;
}

static void test_host_norms(void)
{
    double v[3] = {1e-170, 1e-170, 0.0};
    double n = solve_nrm2(v, 3);
    CHECK_MSG(fabs(n / (sqrt(2.0) * 1e-170) - 1.0) < 1e-15, "nrm2 of 1e-170s: %g", n);
    double w[2] = {1e200, 1e200};
    n = solve_nrm2(w, 2);
    CHECK_MSG(isfinite(n) && fabs(n / (sqrt(2.0) * 1e200) - 1.0) < 1e-15, "nrm2 of 1e200s: %g", n);
    CHECK(solve_nrm2(v + 2, 1) == 0.0);
    CHECK(solve_scale_exponent(0.0) == 0);
    CHECK(solve_scale_exponent(1.0) == 0);
    CHECK(solve_scale_exponent(ldexp(1.0, SOLVE_SCALE_WINDOW)) == 0);
    CHECK(solve_scale_exponent(ldexp(1.0, -SOLVE_SCALE_WINDOW)) == 0);
    int e = solve_scale_exponent(1e-170);
    CHECK_MSG(ldexp(1e-170, e) >= 0.5 && ldexp(1e-170, e) < 1.0, "exponent %d for 1e-170", e);
    e = solve_scale_exponent(1e200);
    CHECK_MSG(ldexp(1e200, e) >= 0.5 && ldexp(1e200, e) < 1.0, "exponent %d for 1e200", e);
    /* the true residual: r = 1e-170 (1, 1) against b = 1e-170 (2, 2) is 1/2,
     * not the 0/0 (or sqrt(r'r) = 0) of plain sums */
    csr_matrix A;
    csr_init(&A);
    cls_error err;
    if (csr_alloc(&A, 2, 2, 2, &err) != CLS_OK) {
        CHECK_MSG(0, "%s", err.msg);
        return;
    }
    A.rowptr[0] = 0, A.rowptr[1] = 1, A.rowptr[2] = 2;
    A.col[0] = 0, A.col[1] = 1;
    A.val[0] = A.val[1] = 1e-170;
    double b[2] = {2e-170, 2e-170}, x[2] = {1.0, 1.0};
    double t = solve_true_residual(&A, b, x);
    CHECK_MSG(fabs(t - 0.5) < 1e-15, "true residual %g, expected 0.5", t);
    csr_free(&A);
}

typedef struct run {
    int rc;
    double *x;
    dsolve_report rep;
    cls_error err;
} run;

/* x NULL: x not asked for (`clsolve solve` without -o) */
static void solve_x(run *r, const char *a, const char *b, const char *x0, int engine,
                    la_precision prec, double tol, double **x)
{
    dsolve_options o;
    dsolve_options_default(&o);
    if (engine) { /* two parts, on the one device if there is only one */
        o.devices_per_rank = 2;
        o.min_rows_per_part = 1;
    }
    o.solve.precision = prec;
    o.solve.tol = tol;
    o.solve.device = "auto";
    cls_error_clear(&r->err);
    r->x = NULL;
    r->rc = dsolve_file(MPI_COMM_WORLD, a, b, x0, &o, &r->rep, x, &r->err);
}

static void solve(run *r, const char *a, const char *b, const char *x0, int engine,
                  la_precision prec, double tol)
{
    solve_x(r, a, b, x0, engine, prec, tol, &r->x);
}

static void done(run *r)
{
    dsolve_report_free(&r->rep);
    free(r->x);
}

static double max_err(const double *x, int64_t n, const double *want)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(x[i] - want[i]) / (fabs(want[i]) > 0 ? fabs(want[i]) : 1.0);
        if (!(d <= m))
            m = d;
    }
    return m;
}

static void test_tiny_and_huge(void)
{
    const char *tiny = put(0, "tiny.mtx",
                           "%%MatrixMarket matrix coordinate real general\n2 2 2\n"
                           "1 1 1e-170\n2 2 1e-170\n");
    const char *eye =
        put(1, "eye.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 1\n");
    const char *big =
        put(2, "big.mtx", "%%MatrixMarket matrix array real general\n2 1\n1e200\n1\n");
    const char *zero = put(3, "zero.mtx", "%%MatrixMarket matrix array real general\n2 1\n0\n0\n");
    const char *ones = put(4, "ones.mtx", "%%MatrixMarket matrix array real general\n2 1\n1\n1\n");
    const char *t1 = tridiag(5, "t1.mtx", 50, 1.0);
    const char *tlo = tridiag(6, "tlo.mtx", 50, ldexp(1.0, -565)); /* about 1e-170, a power of 2 */
    const char *thi = tridiag(7, "thi.mtx", 50, ldexp(1.0, 664));  /* about 1e200 */
    const double one[50] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                            1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                            1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    for (int engine = 0; engine < 2; engine++)
        for (int p = 0; p < 2; p++) {
            la_precision prec = p ? LA_FLOAT : LA_DOUBLE;
            double tol = p ? 1e-5 : 1e-10;
            const char *what = p ? "float" : "double";
            run r;
            solve(&r, tiny, NULL, NULL, engine, prec, tol);
            CHECK_MSG(r.rc == CLS_OK && r.x && r.rep.cg.converged, "tiny %s/%d: rc %d: %s", what,
                      engine, r.rc, r.err.msg);
            if (r.x)
                CHECK_MSG(max_err(r.x, 2, one) < 1e-6, "tiny %s/%d: x = (%g, %g), not 1", what,
                          engine, r.x[0], r.x[1]);
            CHECK_MSG(isfinite(r.rep.true_rel_residual) && r.rep.true_rel_residual <= tol,
                      "tiny: true residual %g", r.rep.true_rel_residual);
            CHECK_MSG(r.rep.cg.reason != CG_CONVERGED_ZERO_RHS, "tiny %s/%d: b taken for 0", what,
                      engine);
            done(&r);

            /* the same system, unscaled and scaled by 2^-565 and 2^664: the
             * same iterations (powers of two change no digit) */
            run u, lo, hi;
            solve(&u, t1, NULL, NULL, engine, prec, tol);
            solve(&lo, tlo, NULL, NULL, engine, prec, tol);
            solve(&hi, thi, NULL, NULL, engine, prec, tol);
            CHECK_MSG(u.rc == CLS_OK && lo.rc == CLS_OK && hi.rc == CLS_OK,
                      "tridiag %s/%d: rc %d %d %d: %s / %s", what, engine, u.rc, lo.rc, hi.rc,
                      lo.err.msg, hi.err.msg);
            CHECK_MSG(u.rep.cg.iterations == lo.rep.cg.iterations &&
                          u.rep.cg.iterations == hi.rep.cg.iterations,
                      "tridiag %s/%d: %lld, %lld, %lld iterations", what, engine,
                      (long long)u.rep.cg.iterations, (long long)lo.rep.cg.iterations,
                      (long long)hi.rep.cg.iterations);
            if (u.x && lo.x && hi.x) {
                CHECK_MSG(max_err(lo.x, 50, u.x) == 0.0 && max_err(hi.x, 50, u.x) == 0.0,
                          "tridiag %s/%d: scaled solutions differ from the unscaled one", what,
                          engine);
                CHECK_MSG(max_err(lo.x, 50, one) < (p ? 1e-3 : 1e-8), "tridiag %s/%d: x not 1",
                          what, engine);
                /* b = A*1: the error against 1, measured where each part's
                 * rows are, is the gathered x's to the bit, scaled or not */
                const run *rs[3] = {&u, &lo, &hi};
                for (int q = 0; q < 3; q++)
                    CHECK_MSG(rs[q]->rep.max_err_ones == max_err(rs[q]->x, 50, one),
                              "tridiag %s/%d/%d: max |x - 1| reported %.17g, of x %.17g", what,
                              engine, q, rs[q]->rep.max_err_ones, max_err(rs[q]->x, 50, one));
                /* and the same when x is not asked for (no gather) */
                run nx;
                solve_x(&nx, thi, NULL, NULL, engine, prec, tol, NULL);
                CHECK_MSG(nx.rc == CLS_OK && nx.rep.max_err_ones == hi.rep.max_err_ones &&
                              nx.rep.cg.iterations == hi.rep.cg.iterations,
                          "tridiag %s/%d, x not asked for: rc %d, max |x - 1| %.17g against %.17g",
                          what, engine, nx.rc, nx.rep.max_err_ones, hi.rep.max_err_ones);
                done(&nx);
            }
            done(&u);
            done(&lo);
            done(&hi);

            solve(&r, eye, big, NULL, engine, prec, tol);
            double want[2] = {1e200, 1};
            CHECK_MSG(r.rc == CLS_OK && r.x, "b = 1e200 %s/%d: rc %d: %s", what, engine, r.rc,
                      r.err.msg);
            /* in float, the 1 beside 1e200 is below the precision of the
             * scaled b: only x_1 is checked there */
            if (r.x)
                CHECK_MSG(max_err(r.x, p ? 1 : 2, want) < 1e-6, "b = 1e200 %s/%d: x = (%g, %g)",
                          what, engine, r.x[0], r.x[1]);
            done(&r);

            solve(&r, eye, zero, ones, engine, prec, tol);
            CHECK_MSG(r.rc == CLS_OK && r.x && r.x[0] == 0.0 && r.x[1] == 0.0,
                      "b = 0 %s/%d: rc %d: %s", what, engine, r.rc, r.err.msg);
            CHECK(r.rep.cg.reason == CG_CONVERGED_ZERO_RHS);
            done(&r);
        }
}

/* Warm devices (dvec.h): a second solve in the same process reuses the
 * first one's device state and must give the same bits; a different
 * system in between (other size, other tuning class) must not change that;
 * dsys_warm_release_all empties the set (the next solve is cold again). */
static void test_warm(void)
{
    char a[600], big[600];
    snprintf(a, sizeof a, "%s/warm.mtx", dir);
    snprintf(big, sizeof big, "%s/warm-big.mtx", dir);
    FILE *f = fopen(a, "w"), *g = fopen(big, "w");
    CHECK_MSG(f && g, "cannot write %s", a);
    if (!f || !g)
        return;
    /* a 1-D Laplacian (SPD) of 300 and of 5000 rows */
    fprintf(f, "%%%%MatrixMarket matrix coordinate real symmetric\n300 300 599\n");
    for (int i = 1; i <= 300; i++)
        fprintf(f, "%d %d 2.5\n", i, i);
    for (int i = 1; i < 300; i++)
        fprintf(f, "%d %d -1\n", i + 1, i);
    fprintf(g, "%%%%MatrixMarket matrix coordinate real symmetric\n5000 5000 9999\n");
    for (int i = 1; i <= 5000; i++)
        fprintf(g, "%d %d 3\n", i, i);
    for (int i = 1; i < 5000; i++)
        fprintf(g, "%d %d -1\n", i + 1, i);
    fclose(f);
    fclose(g);
    for (int engine = 0; engine < 2; engine++) {
        dsys_warm_release_all();
        run r1, r2, r3, rb;
        solve(&r1, a, NULL, NULL, engine, LA_DOUBLE, 1e-10);
        solve(&rb, big, NULL, NULL, engine, LA_DOUBLE, 1e-10);
        solve(&r2, a, NULL, NULL, engine, LA_DOUBLE, 1e-10);
        dsys_warm_release_all();
        solve(&r3, a, NULL, NULL, engine, LA_DOUBLE, 1e-10);
        CHECK_MSG(r1.rc == CLS_OK && r2.rc == CLS_OK && r3.rc == CLS_OK && rb.rc == CLS_OK,
                  "warm/%d: rc %d %d %d %d", engine, r1.rc, r2.rc, r3.rc, rb.rc);
        CHECK_MSG(r1.rep.warm_parts == 0, "warm/%d: the first solve found %d warm parts", engine,
                  r1.rep.warm_parts);
        CHECK_MSG(r2.rep.warm_parts == r2.rep.nparts && r2.rep.nparts >= 1,
                  "warm/%d: the repeated solve found %d of %d parts warm", engine,
                  r2.rep.warm_parts, r2.rep.nparts);
        CHECK_MSG(r3.rep.warm_parts == 0, "warm/%d: warm parts after the release: %d", engine,
                  r3.rep.warm_parts);
        if (r1.x && r2.x && r3.x) {
            CHECK_MSG(!memcmp(r1.x, r2.x, 300 * sizeof *r1.x) &&
                          !memcmp(r1.x, r3.x, 300 * sizeof *r1.x),
                      "warm/%d: the same system solved cold and warm differs", engine);
            CHECK_MSG(r1.rep.cg.iterations == r2.rep.cg.iterations,
                      "warm/%d: %lld vs %lld iterations", engine, (long long)r1.rep.cg.iterations,
                      (long long)r2.rep.cg.iterations);
        }
        done(&r1);
        done(&r2);
        done(&r3);
        done(&rb);
    }
}

static void test_refusals(void)
{
    const char *eye =
        put(0, "eye.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 1\n");
    const char *x0 = put(1, "x0inf.mtx",
                         "%%MatrixMarket matrix coordinate real general\n2 1 3\n"
                         "1 1 1e308\n1 1 1e308\n2 1 1\n");
    const char *a300 = put(2, "a300.mtx",
                           "%%MatrixMarket matrix coordinate real general\n2 2 2\n"
                           "1 1 1e-300\n2 2 1e-300\n");
    const char *b300 =
        put(3, "b300.mtx", "%%MatrixMarket matrix array real general\n2 1\n1e300\n1e300\n");
    for (int engine = 0; engine < 2; engine++) {
        run r;
        solve(&r, eye, NULL, x0, engine, LA_DOUBLE, 1e-8);
        CHECK_MSG(r.rc == CLS_EINPUT && strstr(r.err.msg, "initial guess entry 1 is NaN or Inf"),
                  "x0 = inf: rc %d: %s", r.rc, r.err.msg);
        done(&r);
        solve(&r, a300, b300, NULL, engine, LA_DOUBLE, 1e-8);
        CHECK_MSG(r.rc == CLS_EBREAKDOWN && !r.x &&
                      strstr(r.err.msg, "beyond the range of double precision"),
                  "x = 1e600: rc %d: %s", r.rc, r.err.msg);
        done(&r);
        /* the same refusal when x is not asked for: each rank checks its rows */
        solve_x(&r, a300, b300, NULL, engine, LA_DOUBLE, 1e-8, NULL);
        CHECK_MSG(r.rc == CLS_EBREAKDOWN && !r.rep.cg.converged &&
                      strstr(r.err.msg, "beyond the range of double precision"),
                  "x = 1e600, x not asked for: rc %d: %s", r.rc, r.err.msg);
        done(&r);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
        return 1;
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 1) {
        MPI_Finalize();
        CHECK_SKIP("test_scaling runs as one process");
    }
    test_host_norms();
    ocl_device dev;
    cls_error err;
    if (ocl_pick_device("auto", &dev, &err) != CLS_OK) {
        MPI_Finalize();
        CHECK_SKIP("no OpenCL device: %s", err.msg);
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/test_scaling_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_tiny_and_huge();
    test_refusals();
    test_warm();
    dsys_warm_release_all();
    int rc = check_done("test_scaling");
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    MPI_Finalize();
    return rc;
}
