/*
 * tune.c: the work-group profiler (see tune.h).
 *
 * A sweep is a grid: local sizes (rows) x groups-per-CU ladder (columns),
 * each cell the median device time of `reps` launches after one warm-up,
 * measured lazily through a callback, so the exhaustive sweep and the
 * early-stop walk share one implementation: the exhaustive mode fills the
 * grid and then replays the walk over it; the early-stop mode measures only
 * the cells the walk visits. Cells whose launch is identical to the
 * previous rung's (the group cap no longer binds: groups = min(need, cap))
 * reuse its time instead of being measured again.
 *
 * Kernels tuned, per size class of the matrices given:
 *   dot         dot_partial + reduce_partials   (la_dot)
 *   cg_update   the classic fused update + reduce (la_cg_update)
 *   cgf_update  the fused CG's update (one launch of an la_cgf iteration)
 *   spmv_FORMAT every SpMV format that can hold the matrix, per parameter
 * and a "format" entry naming the fastest SpMV for the matrix's shape.
 */
#include "tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "../matrices/gen.h"

#define TUNE_MAX_LS 64
#define TUNE_MAX_LAD 64
#define TUNE_EARLY_TOL 0.02

typedef double (*tune_measure_fn)(void *ctx, size_t ls, size_t gpcu);
typedef size_t (*tune_groups_fn)(void *ctx, size_t ls, size_t gpcu);

typedef struct sweep {
    size_t ls[TUNE_MAX_LS];
    int nls;
    size_t lad[TUNE_MAX_LAD];
    int nlad;
    double t[TUNE_MAX_LS][TUNE_MAX_LAD]; /* < 0: not measured */
    tune_measure_fn fn;
    tune_groups_fn groups;
    void *ctx;
    int measured; /* cells actually timed */
    int failed;
} sweep;

/* the time of cell (i, j), measuring it if needed; a failed launch is +inf */
static double cell(sweep *s, int i, int j)
{
    if (s->t[i][j] >= 0)
        return s->t[i][j];
    double t;
    if (j > 0 && s->t[i][j - 1] >= 0 &&
        s->groups(s->ctx, s->ls[i], s->lad[j]) == s->groups(s->ctx, s->ls[i], s->lad[j - 1])) {
        t = s->t[i][j - 1]; /* the same launch: the cap no longer binds */
    } else {
        t = s->fn(s->ctx, s->ls[i], s->lad[j]);
        s->measured++;
    }
    if (!(t > 0))
        t = INFINITY, s->failed++;
    s->t[i][j] = t;
    return t;
}

/* Bueno's walk from (largest local size, 1 group per CU); returns the
 * cells it visited in *visited */
static void sweep_early(sweep *s, int *bi, int *bj, int *visited)
{
    double gbest = INFINITY;
    int gi = s->nls - 1, gj = 0, lfails = 0;
    static int seen[TUNE_MAX_LS][TUNE_MAX_LAD];
    memset(seen, 0, sizeof seen);
    *visited = 0;
    for (int i = s->nls - 1; i >= 0; i--) {
        double best = INFINITY;
        int bjj = 0, fails = 0;
        for (int j = 0; j < s->nlad; j++) {
            double t = cell(s, i, j);
            if (!seen[i][j]) {
                seen[i][j] = 1;
                (*visited)++;
            }
            if (t < best * (1.0 - TUNE_EARLY_TOL)) {
                best = t;
                bjj = j;
                fails = 0;
            } else {
                if (t < best)
                    best = t, bjj = j;
                if (++fails >= 2)
                    break;
            }
        }
        if (best < gbest * (1.0 - TUNE_EARLY_TOL)) {
            gbest = best;
            gi = i;
            gj = bjj;
            lfails = 0;
        } else {
            if (best < gbest)
                gbest = best, gi = i, gj = bjj;
            if (++lfails >= 2)
                break;
        }
    }
    *bi = gi;
    *bj = gj;
}

static int is_pow2(size_t v)
{
    return v && !(v & (v - 1));
}

/* best over measured cells; pow2 restricts to power-of-two local sizes */
static double sweep_best(const sweep *s, int pow2, int *bi, int *bj)
{
    double best = INFINITY;
    *bi = *bj = -1;
    for (int i = 0; i < s->nls; i++) {
        if (pow2 && !is_pow2(s->ls[i]))
            continue;
        for (int j = 0; j < s->nlad; j++)
            if (s->t[i][j] >= 0 && s->t[i][j] < best) {
                best = s->t[i][j];
                *bi = i;
                *bj = j;
            }
    }
    return best;
}

/* Local sizes: every multiple of m up to max when there are at most 32,
 * otherwise m, 2m, 3m, 4m, 6m, 8m, 12m, ... (steps of 1.5 and 4/3).
 * Only multiples of div are kept (the vector SpMV's width). */
static int local_candidates(size_t m, size_t max, size_t div, int cap, size_t *out)
{
    int n = 0;
    if (m == 0)
        m = 1;
    if (cap > 0 && (size_t)cap < max)
        max = (size_t)cap;
    if (max / m <= 32) {
        for (size_t l = m; l <= max && n < TUNE_MAX_LS; l += m)
            if (l % div == 0)
                out[n++] = l;
    } else {
        for (size_t l = m; l <= max && n < TUNE_MAX_LS; l *= 2) {
            if (l % div == 0)
                out[n++] = l;
            size_t h = l + l / 2;
            if (l >= 2 * m && h <= max && h % m == 0 && h % div == 0 && n < TUNE_MAX_LS)
                out[n++] = h;
        }
    }
    if (n == 0) /* nothing fits: the largest multiple of div */
        out[n++] = max >= div ? max / div * div : max;
    return n;
}

/* Groups per CU: 1, 2, 3, 4, 6, 8, 12, 16, ... until every element has a
 * work-item (cus * g >= need_groups at the smallest local size). */
static int ladder(size_t need_groups, size_t cus, int cap, size_t *out)
{
    int n = 0;
    size_t g = 1;
    while (n < TUNE_MAX_LAD && (cap <= 0 || n < cap)) {
        out[n++] = g;
        if (cus * g >= need_groups)
            break;
        g = g < 4 ? g + 1 : (g % 3 == 0 ? g / 3 * 4 : g / 2 * 3);
    }
    return n;
}

static double median(double *v, int n)
{
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && v[b - 1] > v[b]; b--) {
            double t = v[b];
            v[b] = v[b - 1];
            v[b - 1] = t;
        }
    return n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : -1;
}

/* ------------------------------------------------------------- measures */

typedef struct tctx {
    la_ctx *la;
    const tune_options *o;
    int64_t n; /* elements / rows */
    la_vec x, y, p, q, r;
    la_csr *A;
    la_cgf *w;
    int kind;  /* 0 dot, 1 cg_update, 2 cgf_update, 3 spmv */
    size_t per_item; /* SpMV work-items per row (vector width) */
} tctx;

static size_t need_groups(const tctx *c, size_t ls)
{
    if (c->kind == 3 && c->A->variant == LA_SPMV_ADAPTIVE)
        return (size_t)(c->A->naux ? c->A->naux : 1);
    size_t items = (size_t)c->n * (c->kind == 3 ? c->per_item : 1);
    return (items + ls - 1) / ls;
}

static size_t groups_of(void *vc, size_t ls, size_t g)
{
    tctx *c = vc;
    size_t cus = c->la->ocl->dev.compute_units;
    size_t groups = need_groups(c, ls);
    return cus * g < groups ? cus * g : groups;
}

static double measure(void *vc, size_t ls, size_t g)
{
    tctx *c = vc;
    la_ctx *la = c->la;
    cls_error e;
    size_t cus = la->ocl->dev.compute_units;
    size_t groups = groups_of(c, ls, g);
    int reps = c->o->reps < 5 ? 5 : c->o->reps;
    double v[64];
    if (reps > 64)
        reps = 64;
    double dv;
    if (c->kind <= 1 && la_set_vector_geometry(la, ls, g, &e))
        return -1;
    if (c->kind == 2) {
        double rr, rz;
        /* x = 0: b = A x would be solved already and stop the device */
        if (la_cgf_set_update_geometry(c->w, ls, groups, &e) || la_fill(la, 0.0, &c->x, &e) ||
            la_cgf_start(c->w, 0, &rr, &rz, &e))
            return -1;
    }
    if (c->kind == 3) {
        c->A->local_size = ls;
        c->A->max_groups = cus * g;
    }
    for (int r = -1; r < reps; r++) {
        la_capture_begin(la);
        int rc = 0;
        double each[8];
        int cnt = 0;
        switch (c->kind) {
        case 0: rc = la_dot(la, &c->x, &c->y, &dv, &e); break;
        case 1: rc = la_cg_update(la, 1e-30, &c->p, &c->q, &c->x, &c->r, &dv, &e); break;
        case 2: {
            la_cgf_record rec;
            rc = la_cgf_enqueue(c->w, &e);
            if (!rc)
                rc = la_cgf_next(c->w, &rec, &e);
            break;
        }
        default: rc = la_spmv(la, c->A, &c->x, &c->y, &e); break;
        }
        if (!rc)
            rc = la_finish(la, &e);
        double s = la_capture_end(la, each, 8, &cnt);
        if (rc)
            return -1;
        if (c->kind == 2)
            s = cnt >= 3 ? each[2] : -1;
        if (r >= 0)
            v[r] = s;
    }
    return median(v, reps);
}

/* ------------------------------------------------------------- driver */

static int report_add(tune_report *rep, const tunedb_entry *e, const char *matrix)
{
    tunedb_entry *ne = realloc(rep->e, (size_t)(rep->n + 1) * sizeof *ne);
    if (!ne)
        return -1;
    rep->e = ne;
    char(*nm)[48] = realloc(rep->matrix, (size_t)(rep->n + 1) * sizeof *nm);
    if (!nm)
        return -1;
    rep->matrix = nm;
    rep->e[rep->n] = *e;
    snprintf(rep->matrix[rep->n], 48, "%s", matrix);
    rep->n++;
    return 0;
}

void tune_report_free(tune_report *rep)
{
    if (rep) {
        free(rep->e);
        free(rep->matrix);
        rep->e = NULL;
        rep->matrix = NULL;
        rep->n = 0;
    }
}

/* Runs one grid and fills the entry's measured fields. */
static void run_sweep(tctx *c, const char *kname, size_t dflt_ls, size_t dflt_g, size_t div,
                      tunedb_entry *e)
{
    const tune_options *o = c->o;
    la_ctx *la = c->la;
    size_t m = 1, kmax = la->ocl->dev.max_work_group;
    la_kernel_limits(la, kname, &m, &kmax);
    static sweep s; /* large: keep off the stack */
    memset(&s, 0, sizeof s);
    s.fn = measure;
    s.groups = groups_of;
    s.ctx = c;
    s.nls = local_candidates(m, kmax, div, o->max_local, s.ls);
    size_t cus = la->ocl->dev.compute_units;
    s.nlad = ladder(need_groups(c, s.ls[0]), cus, o->max_ladder, s.lad);
    for (int i = 0; i < TUNE_MAX_LS; i++)
        for (int j = 0; j < TUNE_MAX_LAD; j++)
            s.t[i][j] = -1;
    if (o->exhaustive)
        for (int i = 0; i < s.nls; i++)
            for (int j = 0; j < s.nlad; j++)
                cell(&s, i, j);
    int ei, ej, visited;
    sweep_early(&s, &ei, &ej, &visited);
    int bi, bj, pi, pj;
    double best = sweep_best(&s, 0, &bi, &bj);
    double pbest = sweep_best(&s, 1, &pi, &pj);
    if (pi < 0) {
        pi = bi;
        pj = bj;
        pbest = best;
    }
    e->local_size = s.ls[bi];
    e->groups_per_cu = s.lad[bj];
    e->pow2_local_size = is_pow2(s.ls[pi]) ? s.ls[pi] : 0;
    e->pow2_groups_per_cu = s.lad[pj];
    if (!e->pow2_local_size) { /* no power of two swept: the default's */
        e->pow2_local_size = dflt_ls;
        e->pow2_groups_per_cu = dflt_g;
    }
    (void)pbest;
    e->ms = 1e3 * best;
    e->early_local_size = s.ls[ei];
    e->early_groups_per_cu = s.lad[ej];
    e->early_ms = 1e3 * s.t[ei][ej];
    e->bueno_ms = 1e3 * cell(&s, s.nls - 1, 0);
    double d = measure(c, dflt_ls, dflt_g);
    e->default_ms = d > 0 ? 1e3 * d : 0;
    e->points = s.nls * s.nlad;
    e->early_points = visited;
    e->exhaustive = o->exhaustive;
}

static void progress(const tune_options *o, const tunedb_entry *e, const char *matrix)
{
    if (!o->progress)
        return;
    char line[512];
    snprintf(line, sizeof line,
             "%-14s %-10s %-6s %-9s best %4zu x %-4zu %9.4f ms  start %9.4f ms (x%.2f)  early "
             "%4zu x %-4zu %9.4f ms (%.3f of best, %d/%d points)",
             e->kernel, matrix, tunedb_class_name(e->size_class), e->shape, e->local_size,
             e->groups_per_cu, e->ms, e->bueno_ms, e->ms > 0 ? e->bueno_ms / e->ms : 0,
             e->early_local_size, e->early_groups_per_cu, e->early_ms,
             e->ms > 0 ? e->early_ms / e->ms : 0, e->early_points, e->points);
    o->progress(o->progress_ctx, line);
}

static int tune_matrix(la_ctx *la, const tune_options *o, const csr_matrix *A,
                       const char *matrix, tunedb *db, tune_report *rep, cls_error *err)
{
    const char *prec = la_precision_str(o->prec);
    int64_t n = A->nrows;
    tctx c;
    memset(&c, 0, sizeof c);
    c.la = la;
    c.o = o;
    c.n = n;
    la_matrix_class mc;
    la_classify(la, A, &mc);
    int cls = mc.size_class;
    la_config d0 = la->cfg;
    int rc;
    double *h = malloc((size_t)n * sizeof *h);
    if (!h)
        return cls_fail(err, CLS_EOTHER, "out of memory");
    for (int64_t i = 0; i < n; i++)
        h[i] = 1.0 / (double)(1 + i % 97);
    la_vec *vs[] = {&c.x, &c.y, &c.p, &c.q, &c.r};
    for (int i = 0; i < 5; i++)
        if ((rc = la_vec_create(la, n, vs[i], err)) || (rc = la_vec_upload(la, vs[i], h, err))) {
            free(h);
            goto out;
        }
    free(h);

    /* vector kernels */
    const char *vk[] = {"dot", "cg_update"};
    const char *vkn[] = {"dot_partial", "cg_update"};
    for (int k = 0; k < 2; k++) {
        tunedb_entry e;
        memset(&e, 0, sizeof e);
        snprintf(e.kernel, sizeof e.kernel, "%s", vk[k]);
        snprintf(e.precision, sizeof e.precision, "%s", prec);
        e.size_class = cls;
        c.kind = k;
        run_sweep(&c, vkn[k], d0.local_size, d0.groups_per_cu, 1, &e);
        la_set_vector_geometry(la, d0.local_size, d0.groups_per_cu, err);
        tunedb_put(db, &e);
        report_add(rep, &e, matrix);
        progress(o, &e, matrix);
    }

    /* SpMV formats, and the fused update on the chosen one */
    la_spmv_variant best_fmt = LA_SPMV_SCALAR;
    double best_ms = INFINITY;
    for (int f = LA_SPMV_SCALAR; f < LA_SPMV_COUNT && o->formats; f++) {
        if (f == LA_SPMV_BCSR && !mc.block_k)
            continue;
        size_t params[8];
        int np = 0;
        int cpu = (la->ocl->dev.type & CL_DEVICE_TYPE_CPU) != 0;
        if (f == LA_SPMV_VECTOR) {
            /* widths around the mean row length: half, the power of two
             * that covers it, double (2..32) */
            size_t w = 2;
            while ((double)w < mc.mean_row && w < 32)
                w *= 2;
            for (size_t v = w / 2; v <= 2 * w && v <= 32; v *= 2)
                if (v >= 2)
                    params[np++] = v;
        } else if (f == LA_SPMV_SELL) {
            /* chunk heights around the SIMD width: a warp on GPUs, an
             * AVX-512 register of doubles on CPUs */
            size_t Cs[3] = {cpu ? 4 : 16, cpu ? 8 : 32, cpu ? 16 : 64};
            for (int i = 0; i < 3; i++)
                params[np++] = Cs[i];
        } else
            params[np++] = 0;
        tunedb_entry fbest;
        memset(&fbest, 0, sizeof fbest);
        fbest.ms = INFINITY;
        for (int pi = 0; pi < np; pi++) {
            la_csr dA;
            la->cfg = d0;
            if (f == LA_SPMV_SELL)
                la->cfg.sell_c = params[pi];
            if ((rc = la_csr_upload(la, A, (la_spmv_variant)f, &dA, err)))
                goto out;
            if (dA.variant != (la_spmv_variant)f) {
                la_csr_release(&dA);
                continue;
            }
            if (f == LA_SPMV_VECTOR)
                dA.vector_width = params[pi];
            c.kind = 3;
            c.A = &dA;
            c.per_item = f == LA_SPMV_VECTOR ? params[pi] : 1;
            tunedb_entry e;
            memset(&e, 0, sizeof e);
            snprintf(e.kernel, sizeof e.kernel, "spmv_%s", la_spmv_variant_name(f));
            snprintf(e.precision, sizeof e.precision, "%s", prec);
            snprintf(e.shape, sizeof e.shape, "%s", mc.shape);
            e.size_class = cls;
            int csrf = f == LA_SPMV_SCALAR || f == LA_SPMV_VECTOR;
            run_sweep(&c, f == LA_SPMV_SCALAR   ? "spmv_csr_scalar"
                          : f == LA_SPMV_VECTOR ? "spmv_csr_vector"
                          : f == LA_SPMV_ADAPTIVE ? "spmv_adaptive"
                          : f == LA_SPMV_SELL     ? "spmv_sell"
                                                  : "spmv_bcsr",
                      csrf ? d0.spmv_local_size : d0.fmt_local_size, d0.spmv_groups_per_cu,
                      f == LA_SPMV_VECTOR ? params[pi] : 1, &e);
            e.param = params[pi];
            la_csr_release(&dA);
            if (e.ms < fbest.ms)
                fbest = e;
        }
        if (fbest.ms < INFINITY) {
            tunedb_put(db, &fbest);
            report_add(rep, &fbest, matrix);
            progress(o, &fbest, matrix);
            if (fbest.ms < best_ms) {
                best_ms = fbest.ms;
                best_fmt = (la_spmv_variant)f;
            }
        }
    }
    if (o->formats && best_ms < INFINITY) {
        tunedb_entry e;
        memset(&e, 0, sizeof e);
        snprintf(e.kernel, sizeof e.kernel, "format");
        snprintf(e.precision, sizeof e.precision, "%s", prec);
        snprintf(e.shape, sizeof e.shape, "%s", mc.shape);
        snprintf(e.format, sizeof e.format, "%s", la_spmv_variant_name(best_fmt));
        e.size_class = cls;
        e.ms = best_ms;
        tunedb_put(db, &e);
        report_add(rep, &e, matrix);
        if (o->progress) {
            char line[256];
            snprintf(line, sizeof line, "%-14s %-10s %-6s %-9s %s (%.4f ms per SpMV)", "format",
                     matrix, tunedb_class_name(cls), mc.shape, e.format, best_ms);
            o->progress(o->progress_ctx, line);
        }
    }

    /* the fused CG update, on the matrix in the chosen format */
    {
        la->cfg = d0;
        la_csr dA;
        if ((rc = la_csr_upload(la, A, best_fmt, &dA, err)))
            goto out;
        la_cgf w;
        rc = la_cgf_create(la, &dA, &c.y, &c.x, NULL, 0.0, LA_CGF_FUSED, &w, err);
        if (rc) {
            la_csr_release(&dA);
            goto out;
        }
        c.kind = 2;
        c.w = &w;
        tunedb_entry e;
        memset(&e, 0, sizeof e);
        snprintf(e.kernel, sizeof e.kernel, "cgf_update");
        snprintf(e.precision, sizeof e.precision, "%s", prec);
        e.size_class = cls;
        run_sweep(&c, "cgf_update", d0.cg_local_size, d0.cg_groups_per_cu, 1, &e);
        la_cgf_release(&w);
        la_csr_release(&dA);
        tunedb_put(db, &e);
        report_add(rep, &e, matrix);
        progress(o, &e, matrix);
    }
    rc = CLS_OK;
out:
    for (int i = 0; i < 5; i++)
        la_vec_release(vs[i]);
    la->cfg = d0;
    return rc;
}

int tune_run(const tune_options *o, tune_report *rep, cls_error *err)
{
    memset(rep, 0, sizeof *rep);
    double t0 = cls_now();
    ocl_ctx ocl;
    la_ctx la;
    int rc = ocl_pick_device(o->device ? o->device : "auto", &rep->dev, err);
    if (rc || (rc = ocl_ctx_create(&rep->dev, &ocl, err)))
        return rc;
    la_config def;
    la_config_default(&rep->dev, &def);
    /* a user configuration: the database must not steer what is measured */
    if ((rc = la_init(&la, &ocl, o->prec, &def, err))) {
        ocl_ctx_release(&ocl);
        return rc;
    }
    gen_kind kind;
    if (gen_kind_parse(o->stencil ? o->stencil : "poisson3d", &kind) != 0) {
        rc = cls_fail(err, CLS_EUSAGE, "unknown stencil '%s'", o->stencil);
        goto done;
    }
    tunedb db;
    char warn[1200];
    int have_path = tunedb_path(&rep->dev, rep->path, sizeof rep->path);
    if (!have_path || tunedb_load(rep->path, &rep->dev, &db, warn, sizeof warn) != 0)
        tunedb_init(&db, &rep->dev); /* absent or ignored: start afresh */
    int done_class[TUNEDB_NCLASSES] = {0};
    for (int s = 0; s < o->nsizes; s++) {
        csr_matrix A;
        if ((rc = gen_matrix(kind, o->sizes[s], &A, err)))
            break;
        int cls = tunedb_size_class(A.nrows);
        if (done_class[cls]) {
            csr_free(&A);
            continue;
        }
        done_class[cls] = 1;
        char name[48];
        snprintf(name, sizeof name, "%s%s %lld", kind == GEN_POISSON3D ? "p3d" : "",
                 kind == GEN_POISSON3D ? "" : gen_kind_name(kind), (long long)o->sizes[s]);
        rc = tune_matrix(&la, o, &A, name, &db, rep, err);
        csr_free(&A);
        if (rc)
            break;
    }
    if (!rc && o->save && have_path) {
        rc = tunedb_save(rep->path, &db, err);
        rep->saved = rc == CLS_OK;
    }
    tunedb_free(&db);
done:
    la_release(&la);
    ocl_ctx_release(&ocl);
    rep->seconds = cls_now() - t0;
    return rc;
}
