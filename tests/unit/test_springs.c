/*
 * test_springs.c: the mass-spring body (physics/springs.h).
 *
 *  - the thesis's "Plano": a 51 x 51 unit grid with minDist 0.5 and maxDist
 *    6.5 has exactly 157,858 springs; its colouring is a partition into
 *    matchings with max_degree <= colours <= 2 max_degree - 1;
 *  - the cell-list proximity search equals the O(n^2) definition on random
 *    points with random per-vertex k; edges-only springs of a grid;
 *  - one spring, one relaxation iteration per step, no damping, no gravity:
 *    the length error decays by sqrt(1 - S) per step with period
 *    2 pi / asin(sqrt(S)) steps (derivation at test_single_spring), for two
 *    free ends and for one pinned end;
 *  - the device (both launch plans) equals the CPU double reference over
 *    1000 steps of a pinned, falling, floor-clamped grid, to float rounding;
 *  - the job entry point writes its mesh and a JSON result.
 */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "check_ocl.h"
#include "physics/job.h"
#include "physics/springs.h"

/* Colour classes are matchings, offsets are consistent, bounds hold. */
static void check_coloring(const springs_model *s)
{
    CHECK(s->color_off[0] == 0 && s->color_off[s->ncolors] == s->ns);
    CHECK(s->ncolors >= s->max_degree);
    CHECK(s->ns == 0 || s->ncolors <= 2 * s->max_degree - 1);
    int32_t *seen = malloc((size_t)(s->np ? s->np : 1) * sizeof *seen);
    for (int64_t i = 0; i < s->np; i++)
        seen[i] = -1;
    int ok = 1;
    for (int c = 0; c < s->ncolors; c++) {
        CHECK(s->color_off[c + 1] >= s->color_off[c]);
        for (int64_t t = s->color_off[c]; t < s->color_off[c + 1]; t++) {
            int32_t i = s->ij[2 * t], j = s->ij[2 * t + 1];
            if (seen[i] == c || seen[j] == c || i == j)
                ok = 0;
            seen[i] = seen[j] = c;
        }
    }
    CHECK_MSG(ok, "a colour class is not a matching");
    free(seen);
}

static void test_plano(void)
{
    mesh m;
    springs_model s;
    cls_error err;
    CHECK(springs_grid_mesh(51, &m, &err) == CLS_OK);
    CHECK(m.nverts == 2601 && m.nfaces == 2 * 50 * 50);
    CHECK(springs_from_mesh_proximity(&m, 0.5, 6.5, &s, &err) == CLS_OK);
    CHECK_MSG(s.ns == 157858, "Plano: %lld springs, expected 157858", (long long)s.ns);
    CHECK(s.np == 2601);
    CHECK(springs_color(&s, &err) == CLS_OK);
    check_coloring(&s);
    /* an interior particle reaches every lattice point within 6.5 but itself */
    int deg = 0;
    for (int dx = -6; dx <= 6; dx++)
        for (int dy = -6; dy <= 6; dy++)
            if ((dx || dy) && dx * dx + dy * dy <= 42)
                deg++;
    CHECK(s.max_degree == deg);
    printf("Plano: %lld particles, %lld springs, %d colours, max degree %d\n", (long long)s.np,
           (long long)s.ns, s.ncolors, s.max_degree);
    /* rest lengths are the initial distances */
    double maxr = 0;
    for (int64_t t = 0; t < s.ns; t++)
        maxr = fmax(maxr, s.rest[t]);
    CHECK(maxr <= 6.5 && maxr > 6.4);
    springs_model_free(&s);
    mesh_free(&m);
}

static int cmp_pair(const void *a, const void *b)
{
    const int32_t *x = a, *y = b;
    if (x[0] != y[0])
        return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

static void test_proximity_bruteforce(void)
{
    mesh m;
    mesh_init(&m);
    int n = 700;
    m.nverts = n;
    m.v = malloc(3 * (size_t)n * sizeof *m.v);
    m.color = malloc(3 * (size_t)n * sizeof *m.color);
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < 3; c++)
            m.v[3 * i + c] = 10.0 * check_uniform() * (c == 2 ? 0.2 : 1.0);
        m.color[3 * i] = (float)check_uniform();
        m.color[3 * i + 1] = m.color[3 * i + 2] = 0.0f;
    }
    double mind = 0.3, maxd = 2.0;
    springs_model s;
    cls_error err;
    CHECK(springs_from_mesh_proximity(&m, mind, maxd, &s, &err) == CLS_OK);
    int64_t cap = 1024, nb = 0;
    int32_t *bf = malloc(2 * (size_t)cap * sizeof *bf);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double d2 = 0;
            for (int c = 0; c < 3; c++)
                d2 += (m.v[3 * j + c] - m.v[3 * i + c]) * (m.v[3 * j + c] - m.v[3 * i + c]);
            double d = sqrt(d2);
            if (d >= mind && d <= maxd * ((double)m.color[3 * i] + (double)m.color[3 * j]) * 0.5) {
                if (nb == cap) {
                    cap *= 2;
                    bf = realloc(bf, 2 * (size_t)cap * sizeof *bf);
                }
                bf[2 * nb] = i;
                bf[2 * nb + 1] = j;
                nb++;
            }
        }
    CHECK_MSG(s.ns == nb, "cell list %lld springs, brute force %lld", (long long)s.ns,
              (long long)nb);
    if (s.ns == nb) {
        int32_t *mine = malloc(2 * (size_t)(nb ? nb : 1) * sizeof *mine);
        memcpy(mine, s.ij, 2 * (size_t)nb * sizeof *mine);
        qsort(mine, (size_t)nb, 2 * sizeof *mine, cmp_pair);
        CHECK(memcmp(mine, bf, 2 * (size_t)nb * sizeof *mine) == 0);
        free(mine);
    }
    /* k is the mean of the ends' red channels */
    int okk = 1;
    for (int64_t t = 0; t < s.ns; t++) {
        double want =
            0.5 * ((double)m.color[3 * s.ij[2 * t]] + (double)m.color[3 * s.ij[2 * t + 1]]);
        if (fabs(s.k[t] - want) > 1e-12)
            okk = 0;
    }
    CHECK(okk);
    CHECK(springs_color(&s, &err) == CLS_OK);
    check_coloring(&s);
    printf("random cloud: %lld springs, %d colours, max degree %d\n", (long long)s.ns, s.ncolors,
           s.max_degree);
    free(bf);
    springs_model_free(&s);
    mesh_free(&m);
}

static void test_edges(void)
{
    mesh m;
    springs_model s;
    cls_error err;
    CHECK(springs_grid_mesh(3, &m, &err) == CLS_OK);
    CHECK(springs_from_mesh_edges(&m, 0.0, &s, &err) == CLS_OK);
    /* 2 * 3 * 2 axis edges and 4 diagonals */
    CHECK(s.ns == 16);
    CHECK(springs_color(&s, &err) == CLS_OK);
    check_coloring(&s);
    CHECK(s.max_degree == 6);
    springs_model_free(&s);
    mesh_free(&m);
    /* the 2 x 2 grid: 4 sides and one diagonal */
    CHECK(springs_grid_mesh(2, &m, &err) == CLS_OK);
    CHECK(springs_from_mesh_edges(&m, 0.0, &s, &err) == CLS_OK);
    CHECK(s.ns == 5);
    springs_model_free(&s);
    mesh_free(&m);
}

/*
 * One spring along x, rest length 1, stretched by e0, one relaxation
 * iteration per step, d = 0, no gravity. Let e_n be the length error after
 * step n (after its projection). Verlet moves the relative coordinate to
 * 2 e_n - e_{n-1} (damping 0, x_prev the positions after the previous
 * projection); the projection then removes the fraction S of that error
 * (two free ends move S/2 each; with one end pinned the free end takes the
 * whole S, see springs.h), so
 *     e_{n+1} = (1 - S) (2 e_n - e_{n-1}).
 * The characteristic roots of l^2 - 2(1-S) l + (1-S) = 0 are
 *     l = (1-S) +- i sqrt(S (1-S)),   |l|^2 = (1-S)^2 + S(1-S) = 1 - S,
 * so |l| = sqrt(1 - S) and arg l = t with cos t = sqrt(1-S), sin t = sqrt(S):
 * e_n = sqrt(1-S)^n (A cos(n t) + B sin(n t)), t = asin(sqrt(S)), period
 * 2 pi / asin(sqrt(S)) steps. The check: for any such sequence the
 * quadratic form Q_n = e_n^2 - 2 r cos(t) e_n e_{n-1} + r^2 e_{n-1}^2
 * (r cos t = 1 - S, r^2 = 1 - S) equals r^{2n} sin^2(t) A'^2, so
 * Q_{n+1} / Q_n = 1 - S exactly: the amplitude ratio per step is
 * sqrt(1 - S). The period is measured from the zero crossings.
 */
static void single_spring(double S, int pinned)
{
    springs_model s;
    springs_model_init(&s);
    s.np = 2;
    s.ns = 1;
    s.x = calloc(6, sizeof(double));
    s.xprev = calloc(6, sizeof(double));
    s.w = malloc(2 * sizeof(double));
    s.ij = malloc(2 * sizeof(int32_t));
    s.rest = malloc(sizeof(double));
    s.k = malloc(sizeof(double));
    double e0 = 0.1;
    s.x[3] = s.xprev[3] = 1.0 + e0;
    s.w[0] = pinned ? 0.0 : 1.0;
    s.w[1] = 1.0;
    s.ij[0] = 0;
    s.ij[1] = 1;
    s.rest[0] = 1.0;
    s.k[0] = 1.0;
    cls_error err;
    CHECK(springs_color(&s, &err) == CLS_OK);
    springs_params p;
    springs_params_default(&p);
    p.S = S;
    p.d = 0.0;
    p.gravity = 0.0;
    p.iterations = 1;
    int N = 160;
    double e[161];
    e[0] = e0;
    for (int n = 1; n <= N; n++) {
        springs_step_ref(&s, &p);
        e[n] = (s.x[3] - s.x[0]) - 1.0;
    }
    /* the recurrence itself */
    double maxrec = 0;
    for (int n = 1; n < N; n++)
        maxrec = fmax(maxrec, fabs(e[n + 1] - (1 - S) * (2 * e[n] - e[n - 1])));
    CHECK_MSG(maxrec < 1e-13, "S %g pinned %d: recurrence residual %g", S, pinned, maxrec);
    /* amplitude ratio per step from the invariant quadratic form */
    double worst = 0, r = sqrt(1 - S);
    int used = 0;
    for (int n = 1; n < N; n++) {
        double q0 = e[n] * e[n] - 2 * (1 - S) * e[n] * e[n - 1] + (1 - S) * e[n - 1] * e[n - 1];
        double q1 = e[n + 1] * e[n + 1] - 2 * (1 - S) * e[n + 1] * e[n] + (1 - S) * e[n] * e[n];
        if (q0 < 1e-20)
            break; /* down to rounding */
        worst = fmax(worst, fabs(sqrt(q1 / q0) - r));
        used++;
    }
    CHECK_MSG(used > 20 && worst < 1e-6, "S %g pinned %d: amplitude ratio off by %g over %d steps",
              S, pinned, worst, used);
    /* period from the zero crossings (linear interpolation) */
    double first = -1, last = -1;
    int crossings = 0;
    for (int n = 0; n < N; n++)
        if ((e[n] > 0) != (e[n + 1] > 0) && fabs(e[n]) > 1e-12) {
            double tc = n + e[n] / (e[n] - e[n + 1]);
            if (first < 0)
                first = tc;
            last = tc;
            crossings++;
        }
    double period = crossings > 1 ? 2.0 * (last - first) / (crossings - 1) : 0;
    double want = 2 * M_PI / asin(sqrt(S));
    CHECK_MSG(crossings > 4 && fabs(period - want) < 0.02 * want,
              "S %g pinned %d: period %g, expected %g (%d crossings)", S, pinned, period, want,
              crossings);
    printf("single spring S=%.2f %s: ratio sqrt(1-S)=%.6f (max dev %.1e), period %.3f vs "
           "2pi/asin(sqrt S)=%.3f\n",
           S, pinned ? "pinned end" : "free ends", r, worst, period, want);
    springs_model_free(&s);
}

static void test_single_spring(void)
{
    single_spring(0.05, 0);
    single_spring(0.05, 1);
    single_spring(0.2, 0);
    single_spring(0.2, 1);
}

/* A 12 x 12 grid with shear springs, two corners pinned, falling under
 * gravity onto a floor, 2 sweeps per step: device vs CPU reference. */
static void test_gpu_vs_cpu(void)
{
    cls_error err;
    ocl_device dev;
    ocl_ctx ctx;
    if (check_ocl_open(&dev, &ctx))
        return;
    printf("device: %s (%s)\n", dev.name, dev.platform_name);
    int N = 12;
    mesh m;
    CHECK(springs_grid_mesh(N, &m, &err) == CLS_OK);
    springs_model s, ref;
    CHECK(springs_from_mesh_proximity(&m, 0.5, 1.5, &s, &err) == CLS_OK);
    CHECK(s.ns == 2 * N * (N - 1) + 2 * (N - 1) * (N - 1));
    CHECK(springs_pin(&s, 0, &err) == CLS_OK);
    CHECK(springs_pin(&s, N - 1, &err) == CLS_OK);
    CHECK(springs_pin(&s, N * N, &err) == CLS_EUSAGE);
    CHECK(springs_color(&s, &err) == CLS_OK);
    springs_params p;
    springs_params_default(&p);
    p.S = 0.8;
    p.d = 0.01;
    p.dt = 0.01;
    p.gravity = 9.81;
    p.iterations = 2;
    p.floor_on = 1;
    p.floor_y = -6.0;
    int steps = 1000;
    springs_launch modes[2] = {SPRINGS_LAUNCH_COLOR, SPRINGS_LAUNCH_WORKGROUP};
    for (int mi = 0; mi < 2; mi++) {
        /* same start on both sides: the grid's integer coordinates are floats exactly */
        mesh_free(&m);
        springs_model_free(&s);
        CHECK(springs_grid_mesh(N, &m, &err) == CLS_OK);
        CHECK(springs_from_mesh_proximity(&m, 0.5, 1.5, &s, &err) == CLS_OK);
        springs_pin(&s, 0, &err);
        springs_pin(&s, N - 1, &err);
        springs_color(&s, &err);
        springs_model_init(&ref);
        /* the reference: an independent copy of the same body */
        {
            springs_model t;
            CHECK(springs_from_mesh_proximity(&m, 0.5, 1.5, &t, &err) == CLS_OK);
            springs_pin(&t, 0, &err);
            springs_pin(&t, N - 1, &err);
            springs_color(&t, &err);
            ref = t;
        }
        springs_gpu *g = NULL;
        int rc = springs_gpu_create(&ctx, &s, modes[mi], &g, &err);
        CHECK_MSG(rc == CLS_OK, "%s", err.msg);
        if (rc)
            break;
        rc = springs_gpu_run(g, &p, steps, &err);
        CHECK_MSG(rc == CLS_OK, "%s", err.msg);
        CHECK(springs_gpu_download(g, &s, &err) == CLS_OK);
        for (int t = 0; t < steps; t++)
            springs_step_ref(&ref, &p);
        double md = 0, ymin = 1e300, ext = 0;
        for (int64_t i = 0; i < 3 * s.np; i++) {
            md = fmax(md, fabs(s.x[i] - ref.x[i]));
            ext = fmax(ext, fabs(ref.x[i]));
        }
        for (int64_t i = 0; i < s.np; i++)
            ymin = fmin(ymin, s.x[3 * i + 1]);
        /* Tolerance. The device computes in float (24 bits, 6e-8 relative),
         * the reference in double; coordinates reach 11, so one rounding is
         * ~1e-6 and a step does tens of roundings per particle. The swinging
         * cloth amplifies perturbations (measured on PoCL: rounding only the
         * stored state to float each step already moves the double run by
         * 1e-5, and the float device run differs by 2e-4 to 5e-4 over the
         * 1000 steps), so "equal to float rounding" here is 2e-3 absolute,
         * 2e-4 of the coordinate scale. The same reference with the spring
         * order reversed differs by ~0.4 (checked below), so the tolerance
         * separates rounding from a wrong order or a race by two orders of
         * magnitude. */
        CHECK_MSG(md < 2e-3, "%s: max |x_gpu - x_cpu| = %g", springs_launch_name(modes[mi]), md);
        CHECK(ymin >= -6.0 - 1e-6);
        /* the pinned corners did not move */
        CHECK(s.x[0] == 0.0 && s.x[1] == 0.0 && s.x[3 * (N - 1)] == N - 1);
        /* it did move: the free corner fell */
        CHECK(ref.x[3 * (N * N - 1) + 1] < -1.0);
        printf(
            "gpu vs cpu (%s, %d steps): max |dx| = %.3g, coordinates up to %.3g, lowest y %.3f\n",
            springs_launch_name(modes[mi]), steps, md, ext, ymin);
        springs_gpu_free(g);
        springs_model_free(&ref);
    }
    /* what a wrong order does: the reference with every colour class and
     * spring in reverse order */
    {
        springs_model a, b;
        springs_from_mesh_proximity(&m, 0.5, 1.5, &a, &err);
        springs_from_mesh_proximity(&m, 0.5, 1.5, &b, &err);
        springs_model *ab[2] = {&a, &b};
        for (int q = 0; q < 2; q++) {
            springs_pin(ab[q], 0, &err);
            springs_pin(ab[q], N - 1, &err);
            springs_color(ab[q], &err);
        }
        for (int64_t lo = 0, hi = b.ns - 1; lo < hi; lo++, hi--) {
            int32_t i0 = b.ij[2 * lo], j0 = b.ij[2 * lo + 1];
            b.ij[2 * lo] = b.ij[2 * hi];
            b.ij[2 * lo + 1] = b.ij[2 * hi + 1];
            b.ij[2 * hi] = i0;
            b.ij[2 * hi + 1] = j0;
            double r0 = b.rest[lo], k0 = b.k[lo];
            b.rest[lo] = b.rest[hi];
            b.k[lo] = b.k[hi];
            b.rest[hi] = r0;
            b.k[hi] = k0;
        }
        for (int t = 0; t < steps; t++) {
            springs_step_ref(&a, &p);
            springs_step_ref(&b, &p);
        }
        double md = 0;
        for (int64_t i = 0; i < 3 * a.np; i++)
            md = fmax(md, fabs(a.x[i] - b.x[i]));
        CHECK_MSG(md > 2e-2, "reversed order differs by only %g", md);
        printf("cpu with the spring order reversed: max |dx| = %.3g\n", md);
        springs_model_free(&a);
        springs_model_free(&b);
    }
    /* AUTO picks one of the two and gives the same answer */
    {
        springs_model a;
        springs_from_mesh_proximity(&m, 0.5, 1.5, &a, &err);
        springs_pin(&a, 0, &err);
        springs_color(&a, &err);
        springs_gpu *g = NULL;
        CHECK(springs_gpu_create(&ctx, &a, SPRINGS_LAUNCH_AUTO, &g, &err) == CLS_OK);
        if (g) {
            CHECK(springs_gpu_run(g, &p, 0, &err) == CLS_OK);
            CHECK(springs_gpu_mode(g) != SPRINGS_LAUNCH_AUTO);
            /* the trial steps were undone */
            CHECK(springs_gpu_download(g, &a, &err) == CLS_OK);
            CHECK(a.x[3 * (N * N - 1) + 1] == 0.0);
            springs_gpu_free(g);
        }
        springs_model_free(&a);
    }
    springs_model_free(&s);
    mesh_free(&m);
    ocl_ctx_release(&ctx);
}

static void test_job(void)
{
    char dir[] = "/tmp/test_springs_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *res = NULL;
    cls_error err;
    cls_error_clear(&err);
    int rc = springs_job_run("{\"grid\": 8, \"max_dist\": 1.5, \"steps\": 20, \"pin\": [0, 7], "
                             "\"cpu\": true}",
                             NULL, dir, "auto", &res, &err);
    CHECK_MSG(rc == CLS_OK, "%s", err.msg);
    if (res) {
        CHECK(strstr(res, "\"particles\": 64") || strstr(res, "\"particles\":64"));
        CHECK(strstr(res, "springs.obj") != NULL);
        CHECK(strstr(res, "ms_per_step") != NULL);
        free(res);
    }
    char path[256];
    snprintf(path, sizeof path, "%s/springs.obj", dir);
    mesh m;
    CHECK(mesh_read(path, &m, &err) == CLS_OK);
    CHECK(m.nverts == 64 && m.nfaces == 2 * 49);
    mesh_free(&m);
    remove(path);
    rmdir(dir);
    res = NULL;
    CHECK(springs_job_run("{\"grid\": 8, \"S\": 2}", NULL, NULL, "auto", &res, &err) == CLS_EUSAGE);
    CHECK(strstr(err.msg, "S must be") != NULL);
    CHECK(springs_job_run("{\"grid\": 8, \"bogus\": 1}", NULL, NULL, "auto", &res, &err) ==
          CLS_EUSAGE);
    CHECK(springs_job_run("[1]", NULL, NULL, "auto", &res, &err) == CLS_EUSAGE);
    CHECK(springs_job_run("{\"pin\": [100]}", "/nonexistent.obj", NULL, "auto", &res, &err) ==
          CLS_EOTHER);
    CHECK(res == NULL);
}

/* One blown-up run: the failure, its message and the step it names (-1
 * when there is none); the output, when asked, must not exist. */
static int blowup_run(double dt, int64_t steps, springs_launch launch, int64_t every,
                      int64_t energy_every, const char *out, cls_error *err)
{
    springs_options o;
    springs_options_default(&o);
    o.grid = 10;
    o.params.dt = dt;
    o.steps = steps;
    o.launch = launch;
    o.every = every;
    o.energy_every = energy_every;
    o.out_path = out;
    springs_report r;
    cls_error_clear(err);
    int rc = springs_run(&o, &r, err);
    springs_report_free(&r);
    const char *at = strstr(err->msg, "from step ");
    int step = at ? atoi(at + strlen("from step ")) : -1;
    CHECK_MSG(rc == CLS_EBREAKDOWN, "dt %g, %s: rc %d (%s)", dt, springs_launch_name(launch), rc,
              err->msg);
    CHECK_MSG(strstr(err->msg, "not finite") != NULL && step >= 1 && step <= steps,
              "dt %g: message '%s'", dt, err->msg);
    if (out)
        CHECK_MSG(access(out, F_OK) != 0, "%s was written with a non-finite state", out);
    return step;
}

/* Issue 26 item 3: a state that stops being finite fails with
 * CLS_EBREAKDOWN (exit 5) naming its first step, on both launch plans,
 * whether or not the host reads the state between steps, and no output
 * holds NaN: dt 1e20 overflows at once (a dt^2 beyond float), dt 1e17
 * after a few dozen steps of free fall. Frames before the step are
 * written, none after. */
static void test_blowup(void)
{
    char dir[] = "/tmp/test_springs_blow_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char out[256], frame[300];
    snprintf(out, sizeof out, "%s/blow.obj", dir);
    cls_error err;
    for (int plan = 0; plan < 2; plan++) {
        springs_launch l = plan ? SPRINGS_LAUNCH_WORKGROUP : SPRINGS_LAUNCH_COLOR;
        CHECK(blowup_run(1e20, 5, l, 0, -1, out, &err) == 1);
        int late = blowup_run(1e17, 400, l, 0, 0, out, &err);
        CHECK_MSG(late > 1, "dt 1e17: step %d", late);
        /* the same step whether the state is read every step or never */
        CHECK(blowup_run(1e17, 400, l, 0, 1, NULL, &err) == late);
        printf("springs %s: dt 1e20 fails at step 1, dt 1e17 at step %d\n", springs_launch_name(l),
               late);
        /* frames every 10 steps: those before the failure are written */
        int s = blowup_run(1e17, 400, l, 10, 0, out, &err);
        CHECK(s == late);
        for (int f = 0; f <= 400; f += 10) {
            snprintf(frame, sizeof frame, "%s/blow_%06d.obj", dir, f);
            int exists = access(frame, F_OK) == 0;
            CHECK_MSG(exists == (f < late), "frame %d: %s", f, exists ? "written" : "missing");
            if (exists) {
                mesh m;
                CHECK_MSG(mesh_read(frame, &m, &err) == CLS_OK, "%s", err.msg);
                mesh_free(&m);
                remove(frame);
            }
        }
    }
    /* a job fails the same way and leaves no file */
    char *res = NULL;
    cls_error_clear(&err);
    int rc = springs_job_run("{\"grid\": 10, \"dt\": 1e20, \"steps\": 5}", NULL, dir, "auto", &res,
                             &err);
    CHECK_MSG(rc == CLS_EBREAKDOWN && strstr(err.msg, "not finite from step 1"), "job: %d %s", rc,
              err.msg);
    free(res);
    snprintf(out, sizeof out, "%s/springs.obj", dir);
    CHECK(access(out, F_OK) != 0);
    CHECK(rmdir(dir) == 0);
}

int main(int argc, char **argv)
{
    check_seed("test_springs");
    test_plano();
    test_proximity_bruteforce();
    test_edges();
    test_single_spring();
    test_gpu_vs_cpu();
    test_job();
    test_blowup();
    return check_done("test_springs");
}
