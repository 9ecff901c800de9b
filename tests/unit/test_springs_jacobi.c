/*
 * test_springs_jacobi.c: the Jacobi projection of the mass-spring body
 * (physics/springs.h; kernels/springs.cl springs_jacobi):
 *
 *  - a three-particle chain, one sweep by hand: every correction from the
 *    sweep's start, averaged per particle, times omega (the middle one's
 *    two corrections cancel; Gauss-Seidel moves it);
 *  - one spring, two free ends, no damping or gravity: a particle has
 *    one spring, so a Jacobi sweep is a Gauss-Seidel sweep with stiffness
 *    omega S, and the length error follows e' = (1 - omega S)(2 e - e_prev)
 *    to rounding;
 *  - the order of the springs does not matter: the CPU reference with
 *    the spring list reversed gives the same positions to rounding (the
 *    same reversal moves Gauss-Seidel by far more);
 *  - the device equals the CPU double reference over 600 steps of a
 *    pinned, falling, floor-clamped grid with four sweeps per step, to
 *    float rounding, and gives the same bits twice: with the colliders
 *    fused into the sweep, with shape matching between them (separate
 *    launches), and with Chebyshev acceleration;
 *  - a plan made for one projection refuses the other; the run refuses
 *    omega * S >= 2 and a Gauss-Seidel launch plan with Jacobi; the job
 *    takes "projection" and "omega" and reports them.
 */
#include <string.h>

#include "check.h"
#include "check_ocl.h"
#include "physics/job.h"
#include "physics/springs.h"

/* n particles on the x axis at x_i, unit masses, springs (i, i+1) of rest
 * 1 and k 1; at rest (x_prev = x). */
static void chain(springs_model *s, int n, const double *x)
{
    springs_model_init(s);
    s->np = n;
    s->ns = n - 1;
    s->x = calloc(3 * (size_t)n, sizeof(double));
    s->xprev = calloc(3 * (size_t)n, sizeof(double));
    s->x0 = calloc(3 * (size_t)n, sizeof(double));
    s->w = malloc((size_t)n * sizeof(double));
    s->m = malloc((size_t)n * sizeof(double));
    s->ij = malloc(2 * (size_t)(n - 1) * sizeof(int32_t));
    s->rest = malloc((size_t)(n - 1) * sizeof(double));
    s->k = malloc((size_t)(n - 1) * sizeof(double));
    for (int i = 0; i < n; i++) {
        s->x[3 * i] = s->xprev[3 * i] = s->x0[3 * i] = x[i];
        s->w[i] = s->m[i] = 1.0;
    }
    for (int t = 0; t < n - 1; t++) {
        s->ij[2 * t] = t;
        s->ij[2 * t + 1] = t + 1;
        s->rest[t] = 1.0;
        s->k[t] = 1.0;
    }
    cls_error err;
    CHECK(springs_color(s, &err) == CLS_OK);
}

static void still_params(springs_params *p, double S, double omega)
{
    springs_params_default(p);
    p->S = S;
    p->d = 0.0;
    p->gravity = 0.0;
    p->iterations = 1;
    p->projection = SPRINGS_PROJECT_JACOBI;
    p->omega = omega;
}

static void test_chain_by_hand(void)
{
    const double x[3] = {0.0, 1.2, 2.4};
    for (int q = 0; q < 2; q++) {
        double omega = q ? 1.5 : 1.0;
        springs_model s;
        chain(&s, 3, x);
        springs_params p;
        still_params(&p, 1.0, omega);
        springs_step_ref(&s, &p);
        /* spring (0,1): D = 1.2, c = S k (1.2 - 1) / 1.2 D = 0.2, half to
         * each end; spring (1,2) the same. Particle 0: +0.1 omega; 2:
         * -0.1 omega; 1: (-0.1 + 0.1) / 2 = 0. */
        double want[3] = {0.1 * omega, 1.2, 2.4 - 0.1 * omega};
        for (int i = 0; i < 3; i++)
            CHECK_MSG(fabs(s.x[3 * i] - want[i]) < 1e-15, "omega %g: x_%d = %.17g, expected %.17g",
                      omega, i, s.x[3 * i], want[i]);
        springs_model_free(&s);
    }
    /* Gauss-Seidel in colour order moves the middle particle */
    springs_model s;
    chain(&s, 3, x);
    springs_params p;
    still_params(&p, 1.0, 1.0);
    p.projection = SPRINGS_PROJECT_GAUSS_SEIDEL;
    springs_step_ref(&s, &p);
    CHECK_MSG(fabs(s.x[3] - 1.2) > 0.05, "Gauss-Seidel left the middle at %g", s.x[3]);
    springs_model_free(&s);
}

static void test_single_spring(void)
{
    const double x[2] = {0.0, 1.1};
    double S = 0.2, omega = 1.5;
    springs_model s;
    chain(&s, 2, x);
    springs_params p;
    still_params(&p, S, omega);
    double e[81];
    e[0] = 0.1;
    for (int n = 1; n <= 80; n++) {
        springs_step_ref(&s, &p);
        e[n] = (s.x[3] - s.x[0]) - 1.0;
    }
    double worst = 0, a = omega * S;
    for (int n = 1; n < 80; n++)
        worst = fmax(worst, fabs(e[n + 1] - (1 - a) * (2 * e[n] - e[n - 1])));
    CHECK_MSG(worst < 1e-13, "recurrence residual %g", worst);
    /* it oscillates and decays: not frozen, not growing */
    double peak = 0;
    for (int n = 60; n <= 80; n++)
        peak = fmax(peak, fabs(e[n]));
    CHECK_MSG(peak > 1e-6 && peak < 0.1, "late amplitude %g", peak);
    printf("jacobi single spring: e' = (1 - omega S)(2e - e_prev), residual %.1e\n", worst);
    springs_model_free(&s);
}

/* The falling grid of test_springs, pinned at two corners. */
static int grid_body(int N, springs_model *s, cls_error *err)
{
    mesh m;
    int rc = springs_grid_mesh(N, &m, err);
    if (!rc)
        rc = springs_from_mesh_proximity(&m, 0.5, 1.5, s, err);
    mesh_free(&m);
    if (!rc)
        rc = springs_pin(s, 0, err);
    if (!rc)
        rc = springs_pin(s, N - 1, err);
    return rc ? rc : springs_color(s, err);
}

static void grid_params(springs_params *p)
{
    springs_params_default(p);
    p->S = 0.8;
    p->iterations = 4;
    p->floor_on = 1;
    p->floor_y = -6.0;
    p->projection = SPRINGS_PROJECT_JACOBI;
    p->omega = 1.5;
}

static void reverse_springs(springs_model *b)
{
    for (int64_t lo = 0, hi = b->ns - 1; lo < hi; lo++, hi--) {
        int32_t i0 = b->ij[2 * lo], j0 = b->ij[2 * lo + 1];
        b->ij[2 * lo] = b->ij[2 * hi];
        b->ij[2 * lo + 1] = b->ij[2 * hi + 1];
        b->ij[2 * hi] = i0;
        b->ij[2 * hi + 1] = j0;
        double r0 = b->rest[lo], k0 = b->k[lo];
        b->rest[lo] = b->rest[hi];
        b->k[lo] = b->k[hi];
        b->rest[hi] = r0;
        b->k[hi] = k0;
    }
}

static double max_diff(const springs_model *a, const springs_model *b)
{
    double md = 0;
    for (int64_t i = 0; i < 3 * a->np; i++)
        md = fmax(md, fabs(a->x[i] - b->x[i]));
    return md;
}

static void test_order_free(void)
{
    cls_error err;
    springs_params p;
    grid_params(&p);
    for (int q = 0; q < 2; q++) {
        p.projection = q ? SPRINGS_PROJECT_GAUSS_SEIDEL : SPRINGS_PROJECT_JACOBI;
        springs_model a, b;
        CHECK(grid_body(12, &a, &err) == CLS_OK && grid_body(12, &b, &err) == CLS_OK);
        reverse_springs(&b);
        for (int t = 0; t < 300; t++) {
            springs_step_ref(&a, &p);
            springs_step_ref(&b, &p);
        }
        double md = max_diff(&a, &b);
        if (q)
            CHECK_MSG(md > 1e-3, "Gauss-Seidel reversed differs by only %g", md);
        else
            CHECK_MSG(md < 1e-9, "Jacobi reversed differs by %g", md);
        printf("%s with the spring order reversed: max |dx| = %.3g\n",
               springs_projection_name(p.projection), md);
        springs_model_free(&a);
        springs_model_free(&b);
    }
}

/* One body on the device and on the CPU: shape > 0 runs shape matching
 * between the projection and the colliders (separate launches), 0 fuses
 * the colliders into the sweep; rho > 0 the Chebyshev weights. */
static void gpu_vs_cpu(ocl_ctx *pctx, const ocl_device *pdev, double shape, double rho)
{
    cls_error err;
    ocl_ctx ctx = *pctx;
    ocl_device dev = *pdev;
    int N = 12, steps = 600;
    springs_params p;
    grid_params(&p);
    p.shape = shape;
    p.rho = rho;
    p.rho_delay = 2;
    springs_model s, ref, again;
    CHECK(grid_body(N, &s, &err) == CLS_OK && grid_body(N, &ref, &err) == CLS_OK &&
          grid_body(N, &again, &err) == CLS_OK);
    float *first = NULL;
    for (int run = 0; run < 2; run++) {
        springs_model *m = run ? &again : &s;
        springs_gpu *g = NULL;
        int rc = springs_gpu_create(&ctx, m, SPRINGS_LAUNCH_JACOBI, &g, &err);
        CHECK_MSG(rc == CLS_OK, "%s", err.msg);
        if (rc)
            break;
        CHECK(springs_gpu_mode(g) == SPRINGS_LAUNCH_JACOBI);
        /* two runs of 300 steps: the state carries across runs (the
         * buffers swap every sweep) */
        rc = springs_gpu_run(g, &p, steps / 2, &err);
        if (!rc)
            rc = springs_gpu_run(g, &p, steps - steps / 2, &err);
        CHECK_MSG(rc == CLS_OK, "%s", err.msg);
        CHECK(springs_gpu_download(g, m, &err) == CLS_OK);
        /* the plan refuses the other projection */
        springs_params gs = p;
        gs.projection = SPRINGS_PROJECT_GAUSS_SEIDEL;
        CHECK(springs_gpu_run(g, &gs, 1, &err) == CLS_EUSAGE);
        springs_gpu_free(g);
        if (run == 0) {
            first = malloc(3 * (size_t)s.np * sizeof *first);
            for (int64_t i = 0; i < 3 * s.np; i++)
                first[i] = (float)s.x[i];
        }
    }
    /* what float rounding alone does to this run: the reference with its
     * state rounded to float after every step */
    springs_model rounded;
    CHECK(grid_body(N, &rounded, &err) == CLS_OK);
    for (int t = 0; t < steps; t++) {
        springs_step_ref(&ref, &p);
        springs_step_ref(&rounded, &p);
        for (int64_t i = 0; i < 3 * rounded.np; i++) {
            rounded.x[i] = (float)rounded.x[i];
            rounded.xprev[i] = (float)rounded.xprev[i];
        }
    }
    double md = max_diff(&s, &ref), ymin = 1e300, md_round = max_diff(&rounded, &ref);
    springs_model_free(&rounded);
    for (int64_t i = 0; i < s.np; i++)
        ymin = fmin(ymin, s.x[3 * i + 1]);
    /* Tolerance: float rounding in a swinging cloth grows (the stored
     * state rounded to float moves the double run by md_round, 5e-4 on
     * PoCL, and the float device run differs by 4e-3), so 1e-2, 1e-3 of
     * the coordinate scale; the Gauss-Seidel run below is ~0.9 away, and
     * a dropped correction or a wrong omega far more. */
    CHECK_MSG(md < 1e-2, "jacobi: max |x_gpu - x_cpu| = %g (rounding alone: %g)", md, md_round);
    CHECK(ymin >= -6.0 - 1e-6);
    CHECK(s.x[0] == 0.0 && s.x[1] == 0.0 && s.x[3 * (N - 1)] == N - 1);
    CHECK(ref.x[3 * (N * N - 1) + 1] < -1.0);
    int same = first != NULL;
    for (int64_t i = 0; same && i < 3 * s.np; i++)
        same = first[i] == (float)again.x[i];
    CHECK_MSG(same, "two device runs differ");
    springs_model gsref;
    CHECK(grid_body(N, &gsref, &err) == CLS_OK);
    springs_params gs = p;
    gs.projection = SPRINGS_PROJECT_GAUSS_SEIDEL;
    for (int t = 0; t < steps; t++)
        springs_step_ref(&gsref, &gs);
    double off = max_diff(&gsref, &ref);
    /* the check tells the projections apart: Gauss-Seidel is far beyond
     * the device's distance (with shape matching on, both are held near
     * the rest shape and differ less) */
    CHECK_MSG(off > 10 * md, "Gauss-Seidel differs from Jacobi by only %g (device: %g)", off, md);
    printf("jacobi gpu vs cpu (shape %g, chebyshev %g, %d steps, %s): max |dx| = %.3g "
           "(float-rounded state: %.3g; Gauss-Seidel is %.3g away), lowest y %.3f\n",
           shape, rho, steps, dev.name, md, md_round, off, ymin);
    free(first);
    springs_model_free(&s);
    springs_model_free(&ref);
    springs_model_free(&again);
    springs_model_free(&gsref);
}

static void test_gpu_vs_cpu(void)
{
    ocl_device dev;
    ocl_ctx ctx;
    if (check_ocl_open(&dev, &ctx))
        return;
    gpu_vs_cpu(&ctx, &dev, 0.0, 0.0);
    gpu_vs_cpu(&ctx, &dev, 0.3, 0.0);
    gpu_vs_cpu(&ctx, &dev, 0.0, 0.9);
    ocl_ctx_release(&ctx);
}

static void test_options(void)
{
    cls_error err;
    char *res = NULL;
    CHECK(springs_job_run("{\"grid\": 6, \"max_dist\": 1.5, \"steps\": 10, \"projection\": "
                          "\"jacobi\", \"omega\": 1.5, \"iterations\": 3, \"cpu\": true}",
                          NULL, NULL, "auto", &res, &err) == CLS_OK);
    if (res) {
        CHECK(strstr(res, "\"projection\":\"jacobi\"") != NULL);
        CHECK(strstr(res, "\"launch\":\"jacobi\"") != NULL);
        CHECK(strstr(res, "\"omega\":1.5") != NULL);
        free(res);
        res = NULL;
    }
    CHECK(springs_job_run("{\"grid\": 6, \"projection\": \"gauss\"}", NULL, NULL, "auto", &res,
                          &err) == CLS_EUSAGE);
    CHECK(strstr(err.msg, "gauss-seidel or jacobi") != NULL);
    /* omega S = 2: the sweep's fastest mode no longer decays */
    CHECK(springs_job_run("{\"grid\": 6, \"projection\": \"jacobi\", \"S\": 0.5, \"omega\": 4}",
                          NULL, NULL, "auto", &res, &err) == CLS_EUSAGE);
    CHECK(strstr(err.msg, "omega") != NULL);
    CHECK(springs_job_run("{\"grid\": 6, \"projection\": \"jacobi\", \"launch\": \"workgroup\"}",
                          NULL, NULL, "auto", &res, &err) == CLS_EUSAGE);
    CHECK(strstr(err.msg, "Gauss-Seidel") != NULL);
    CHECK(res == NULL);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    check_seed("test_springs_jacobi");
    test_chain_by_hand();
    test_single_spring();
    test_order_free();
    test_gpu_vs_cpu();
    test_options();
    return check_done("test_springs_jacobi");
}
