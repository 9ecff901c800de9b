/*
 * test_cpu_cg.c: the native CPU CG loops (kernels/cpu/la_cgn.h) against
 * two references: the OpenCL kernels of the same recurrence on the same
 * device (cg_solve with backend opencl) and a plain double CG written
 * here (Hestenes-Stiefel, the textbook loop), on a generated Poisson
 * system split over a team of three threads (CLSOLVE_CPU_THREADS=3: an odd
 * count, uneven ranges) and on 1138_bus (small: one thread), for cg and
 * cg-single, without a preconditioner and with Jacobi. Then the loop's
 * contract: maxiter exactly, a monitor's cancel, breakdown on an
 * indefinite matrix, b = 0, the same bits on a second run and on one
 * thread beside a held team (the daemon's concurrent jobs), and the
 * refusals of backend native (float, cg-small).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ref_cg.h"
#include "kernels/cpu/la_cgn.h"
#include "kernels/la.h"
#include "matrices/gen.h"
#include "matrices/mm.h"
#include "solver/krylov/krylov.h"

static cls_error err;
#define OK(x) CHECK_MSG((x) == CLS_OK, "%s: %s", #x, err.msg)

static double true_rel(const csr_matrix *A, const double *b, const double *x)
{
    const int64_t n = A->nrows;
    double *ax = malloc(n * sizeof *ax), e = 0, bb = 0;
    csr_spmv_ref(A, x, ax);
    for (int64_t i = 0; i < n; i++) {
        e += (b[i] - ax[i]) * (b[i] - ax[i]);
        bb += b[i] * b[i];
    }
    free(ax);
    return sqrt(e / bb);
}

static int cancel_at;
static int monitor_cancel(void *ctx, int64_t k, double rel)
{
    (void)ctx;
    (void)rel;
    return k >= cancel_at;
}

typedef struct sys {
    const char *name;
    csr_matrix A;
    double *b, *d;
    la_csr dA;
    la_vec vb, vx, vd;
} sys;

static void sys_up(la_ctx *la, sys *s)
{
    const int64_t n = s->A.nrows;
    double *ones = calloc(n, sizeof *ones);
    s->b = calloc(n, sizeof *s->b);
    s->d = calloc(n, sizeof *s->d);
    if (!ones || !s->b || !s->d) {
        CHECK_MSG(0, "out of memory");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++)
        ones[i] = 1.0 + 0.5 * sin((double)i); /* b = A v, v not all ones */
    csr_spmv_ref(&s->A, ones, s->b);
    csr_diagonal(&s->A, s->d);
    for (int64_t i = 0; i < n; i++)
        s->d[i] = 1.0 / s->d[i];
    free(ones);
    OK(la_csr_upload(la, &s->A, LA_SPMV_AUTO, &s->dA, &err));
    OK(la_vec_create(la, n, &s->vb, &err));
    OK(la_vec_create(la, n, &s->vx, &err));
    OK(la_vec_create(la, n, &s->vd, &err));
    OK(la_vec_upload(la, &s->vb, s->b, &err));
    OK(la_vec_upload(la, &s->vd, s->d, &err));
}

static void sys_down(sys *s)
{
    la_vec_release(&s->vb);
    la_vec_release(&s->vx);
    la_vec_release(&s->vd);
    la_csr_release(&s->dA);
    free(s->b);
    free(s->d);
    csr_free(&s->A);
}

/* one solve from x = 0; x downloaded into out */
static int run(la_ctx *la, sys *s, la_backend be, int single, int jac, double tol, int64_t maxiter,
               cg_monitor_fn mon, cg_result *res, double *out)
{
    cg_options co = {.tol = tol,
                     .maxiter = maxiter,
                     .precond = jac ? PRECOND_JACOBI : PRECOND_NONE,
                     .single_reduction = single,
                     .backend = be,
                     .monitor = mon};
    OK(la_fill(la, 0.0, &s->vx, &err));
    cls_error_clear(&err);
    int rc = cg_solve(la, &s->dA, &s->vb, &s->vx, jac ? &s->vd : NULL, &co, res, &err);
    cls_error e2;
    if (la_vec_download(la, &s->vx, out, &e2))
        CHECK_MSG(0, "download: %s", e2.msg);
    return rc;
}

static void test_system(la_ctx *la, sys *s, int want_threads)
{
    const int64_t n = s->A.nrows;
    double *xn = malloc(n * sizeof *xn), *xo = malloc(n * sizeof *xo), *xr = malloc(n * sizeof *xr);
    const double tol = 1e-10;
    for (int single = 0; single < 2; single++)
        for (int jac = 0; jac < 2; jac++) {
            cg_result rn, ro;
            int rcn = run(la, s, LA_BACKEND_NATIVE, single, jac, tol, 20 * n, NULL, &rn, xn);
            int rco = run(la, s, LA_BACKEND_OPENCL, single, jac, tol, 20 * n, NULL, &ro, xo);
            int64_t kr = ref_cg(&s->A, s->b, jac ? s->d : NULL, tol, 20 * n, xr);
            const double tn = true_rel(&s->A, s->b, xn);
            printf("  %s %s %s: native %lld it (%d threads, true %.2e), opencl %lld, reference "
                   "%lld; |x_native - x_ref| / |x_ref| %.2e\n",
                   s->name, single ? "cg-single" : "cg", jac ? "jacobi" : "none",
                   (long long)rn.iterations, rn.cpu_threads, tn, (long long)ro.iterations,
                   (long long)kr, ref_rel_diff(xn, xr, n));
            CHECK_MSG(rcn == CLS_OK && rn.converged, "%s native: rc %d %s", s->name, rcn, err.msg);
            CHECK(rco == CLS_OK);
            CHECK_MSG(rn.cpu_threads == want_threads, "%s: %d threads, want %d", s->name,
                      rn.cpu_threads, want_threads);
            CHECK(ro.cpu_threads == 0);
            CHECK_MSG(tn <= tol * 1.0001 + 1e3 * DBL_EPSILON, "%s: true residual %.3e", s->name,
                      tn);
            /* the same recurrence: the iteration counts differ only by the
             * sums' order (a few on an ill-conditioned matrix) */
            int64_t dn = rn.iterations - ro.iterations;
            CHECK_MSG(llabs(dn) <= 2 + ro.iterations / 50, "%s: native %lld vs opencl %lld",
                      s->name, (long long)rn.iterations, (long long)ro.iterations);
            if (!single) { /* the textbook's iterates */
                int64_t dr = rn.iterations - kr;
                CHECK_MSG(llabs(dr) <= 2 + kr / 50, "%s: native %lld vs reference %lld", s->name,
                          (long long)rn.iterations, (long long)kr);
            }
            CHECK_MSG(ref_rel_diff(xn, xr, n) < 1e-6 && ref_rel_diff(xn, xo, n) < 1e-6,
                      "%s: x differs: %.3e from the reference, %.3e from opencl", s->name,
                      ref_rel_diff(xn, xr, n), ref_rel_diff(xn, xo, n));
            /* a second run: the same bits (sums in member order) */
            cg_result r2;
            double *x2 = malloc(n * sizeof *x2);
            run(la, s, LA_BACKEND_NATIVE, single, jac, tol, 20 * n, NULL, &r2, x2);
            CHECK_MSG(r2.iterations == rn.iterations && memcmp(x2, xn, n * sizeof *xn) == 0,
                      "%s: a second run differs", s->name);
            /* the team held by another workspace (the daemon's concurrent
             * jobs): this solve runs on its own thread, and the sums in
             * fixed row blocks give the same bits as on the team */
            if (want_threads > 1) {
                la_cgn hold;
                la_vec hb, hx;
                OK(la_vec_create(la, n, &hb, &err));
                OK(la_vec_create(la, n, &hx, &err));
                OK(la_cgn_create(la, &s->dA, &hb, &hx, NULL, 0.0, LA_CGF_CLASSIC, &hold, &err));
                cg_result r3;
                run(la, s, LA_BACKEND_NATIVE, single, jac, tol, 20 * n, NULL, &r3, x2);
                CHECK_MSG(hold.ws.nt == want_threads && r3.cpu_threads == 1 &&
                              r3.iterations == rn.iterations && memcmp(x2, xn, n * sizeof *xn) == 0,
                          "%s: on one thread beside a held team (%d threads, %lld it): x differs "
                          "from the team's by %.3e",
                          s->name, r3.cpu_threads, (long long)r3.iterations, ref_rel_diff(x2, xn, n));
                cg_result_free(&r3);
                la_cgn_release(&hold);
                la_vec_release(&hb);
                la_vec_release(&hx);
            }
            free(x2);
            cg_result_free(&r2);
            cg_result_free(&rn);
            cg_result_free(&ro);
        }
    /* maxiter: exactly 7 updates, and the textbook's x after 7 */
    {
        cg_result r;
        int rc = run(la, s, LA_BACKEND_NATIVE, 0, 0, 1e-300, 7, NULL, &r, xn);
        ref_cg(&s->A, s->b, NULL, 1e-300, 7, xr);
        CHECK_MSG(rc == CLS_ENOTCONV && r.iterations == 7 && r.nhistory == 8 &&
                      r.reason == CG_DIVERGED_MAXITER && ref_rel_diff(xn, xr, n) < 1e-12,
                  "%s maxiter: rc %d iterations %lld history %lld, x %.3e from the reference",
                  s->name, rc, (long long)r.iterations, (long long)r.nhistory, ref_rel_diff(xn, xr, n));
        cg_result_free(&r);
    }
    /* a cancel from the monitor */
    {
        cg_result r;
        cancel_at = 3;
        int rc = run(la, s, LA_BACKEND_NATIVE, 0, 0, 1e-300, 1000, monitor_cancel, &r, xn);
        CHECK_MSG(rc == CLS_EOTHER && r.reason == CG_CANCELLED && r.iterations >= 3 &&
                      r.iterations <= 3 + LA_CGF_MAXLAG + 1,
                  "%s cancel: rc %d reason %d iterations %lld", s->name, rc, (int)r.reason,
                  (long long)r.iterations);
        cg_result_free(&r);
    }
    free(xn);
    free(xo);
    free(xr);
}

/* diag(1, 2, ..., -1 at the end): symmetric, indefinite */
static void test_indefinite(la_ctx *la)
{
    sys s = {.name = "indefinite"};
    const int64_t n = 50;
    cls_error_clear(&err);
    OK(csr_alloc(&s.A, n, n, n, &err));
    for (int64_t i = 0; i < n; i++) {
        s.A.rowptr[i] = i;
        s.A.col[i] = i;
        s.A.val[i] = i == n - 1 ? -100.0 : (double)(i + 1);
    }
    s.A.rowptr[n] = n;
    sys_up(la, &s);
    cg_result r;
    double *x = malloc(n * sizeof *x);
    int rc = run(la, &s, LA_BACKEND_NATIVE, 0, 0, 1e-12, 1000, NULL, &r, x);
    CHECK_MSG(rc == CLS_EBREAKDOWN && r.reason == CG_DIVERGED_INDEFINITE,
              "indefinite: rc %d reason %d (%s)", rc, (int)r.reason, err.msg);
    cg_result_free(&r);
    /* b = 0: x = 0 and converged, without an iteration */
    double *z = calloc(n, sizeof *z);
    OK(la_vec_upload(la, &s.vb, z, &err));
    rc = run(la, &s, LA_BACKEND_NATIVE, 0, 0, 1e-12, 1000, NULL, &r, x);
    CHECK_MSG(rc == CLS_OK && r.iterations == 0 && x[0] == 0.0 && x[n - 1] == 0.0,
              "b = 0: rc %d iterations %lld", rc, (long long)r.iterations);
    cg_result_free(&r);
    free(z);
    free(x);
    sys_down(&s);
}

/* backend native refuses what it cannot run, and says why */
static void test_refusals(ocl_ctx *ocl, la_ctx *la)
{
    sys s = {.name = "refusal"};
    cls_error_clear(&err);
    OK(gen_matrix(GEN_POISSON3D, 6, &s.A, &err));
    sys_up(la, &s);
    double *x = malloc(s.A.nrows * sizeof *x);
    cg_result r;
    cg_options co = {.tol = 1e-8,
                     .maxiter = 100,
                     .precond = PRECOND_NONE,
                     .one_launch = 1,
                     .backend = LA_BACKEND_NATIVE};
    int rc = cg_solve(la, &s.dA, &s.vb, &s.vx, NULL, &co, &r, &err);
    CHECK_MSG(rc == CLS_EINPUT && strstr(err.msg, "cg-small"), "cg-small: rc %d %s", rc, err.msg);
    cg_result_free(&r);
    free(x);
    sys_down(&s);

    la_ctx lf;
    cls_error_clear(&err);
    OK(la_init(&lf, ocl, LA_FLOAT, NULL, &err));
    sys f = {.name = "float"};
    OK(gen_matrix(GEN_POISSON3D, 6, &f.A, &err));
    sys_up(&lf, &f);
    x = malloc(f.A.nrows * sizeof *x);
    rc = run(&lf, &f, LA_BACKEND_NATIVE, 0, 0, 1e-5, 100, NULL, &r, x);
    CHECK_MSG(rc == CLS_EINPUT && strstr(err.msg, "float"), "float: rc %d %s", rc, err.msg);
    cg_result_free(&r);
    /* auto on float: the OpenCL kernels, converged */
    rc = run(&lf, &f, LA_BACKEND_AUTO, 0, 0, 1e-5, 100, NULL, &r, x);
    CHECK_MSG(rc == CLS_OK && r.cpu_threads == 0, "float auto: rc %d threads %d", rc,
              r.cpu_threads);
    cg_result_free(&r);
    free(x);
    sys_down(&f);
    la_release(&lf);
}

int main(int argc, char **argv)
{
    check_seed("test_cpu_cg");
    setenv("CLSOLVE_TUNE_DIR", "/nonexistent/clsolve-test-tuning", 1);
    setenv("CLSOLVE_CPU_THREADS", "3", 1); /* before the team starts: odd, uneven ranges */
    const char *dir = argc > 1 ? argv[1] : NULL;
    ocl_device dev;
    cls_error_clear(&err);
    if (ocl_pick_device("cpu", &dev, &err))
        CHECK_SKIP("no CPU OpenCL device (the native loops run on one): %s", err.msg);
    ocl_ctx ocl;
    if (ocl_ctx_create(&dev, &ocl, &err)) {
        fprintf(stderr, "ocl_ctx_create: %s\n", err.msg);
        return 1;
    }
    if (!dev.fp64)
        CHECK_SKIP("the CPU device has no fp64");
    la_ctx la;
    OK(la_init(&la, &ocl, LA_DOUBLE, NULL, &err));

    sys p = {.name = "poisson3d 24"};
    OK(gen_matrix(GEN_POISSON3D, 24, &p.A, &err)); /* 13,824 rows: 3 ranges of >= 4,096 */
    sys_up(&la, &p);
    test_system(&la, &p, 3);
    sys_down(&p);

    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/matrices/1138_bus.mtx", dir);
        sys m = {.name = "1138_bus"};
        if (mm_read_csr(path, NULL, &m.A, NULL, NULL, &err) == CLS_OK) {
            sys_up(&la, &m);
            test_system(&la, &m, 1); /* 1,138 rows: too small to share */
            sys_down(&m);
        } else
            CHECK_MSG(0, "1138_bus: %s", err.msg);
    }
    test_indefinite(&la);
    test_refusals(&ocl, &la);
    la_release(&la);
    ocl_ctx_release(&ocl);
    return check_done("test_cpu_cg");
}
