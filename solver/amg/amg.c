/*
 * amg.c: smoothed-aggregation AMG set-up: the options, the level loop, the
 * description of a hierarchy.
 *
 * References (what is implemented where):
 *   P. Vanek, J. Mandel, M. Brezina, "Algebraic multigrid by smoothed
 *     aggregation for second and fourth order elliptic problems",
 *     Computing 56 (1996) 179-196: strength, aggregation, tentative and
 *     smoothed prolongator, omega = 4/3 / rho(D^-1 A).
 *   N. Bell, S. Dalton, L. Olson, "Exposing fine-grained parallelism in
 *     algebraic multigrid methods", SIAM J. Sci. Comput. 34(4), 2012: the
 *     aggregation by a parallel distance-2 maximal independent set.
 *   M. Adams, M. Brezina, J. Hu, R. Tuminaro, "Parallel multigrid smoothing:
 *     polynomial versus Gauss-Seidel", J. Comput. Phys. 188 (2003): the
 *     Chebyshev smoother in D^-1 A with an eigenvalue estimate (PETSc
 *     GAMG's default smoother; its interval [0.1, 1.1] * lambda_max).
 *   A. Baker, R. Falgout, T. Kolev, U. Yang, "Multigrid smoothers for
 *     ultraparallel computing", SIAM J. Sci. Comput. 33(5), 2011: the
 *     l1-Jacobi smoother, convergent without damping for any SPD matrix.
 *   PETSc src/ksp/pc/impls/gamg/ (gamg.c, agg.c): the defaults (threshold
 *     0, Chebyshev degree 2, coarse limit, one smoothing of P, Lanczos /
 *     CG eigenvalue estimates reused by the smoother).
 *
 * The level loop (amg_build), level l with operator A_l:
 *   D = diag(A_l)                     (must be positive: SPD)
 *   stop if rows <= coarse_size or l + 1 == max_levels
 *   lambda = lambda_max(D^-1 A_l)     (Lanczos, amg_prolong.c)
 *   S = strength(A_l, threshold)      (amg_strength.c)
 *   agg = aggregate(S)                (amg_aggregate.c); stop if it stalls
 *   P_l = (I - omega_scale/lambda D^-1 A_l) T(agg)
 *   R_l = P_l' ; A_{l+1} = R_l A_l P_l (amg_rap.c)
 * and on the coarsest level its dense inverse (amg_coarse.c), or, when it is
 * too large or not SPD to working precision, the smoother alone.
 */
#include "amg_priv.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../common/timer.h"

void amg_options_default(amg_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->threshold = 0.0;
    opt->smoother = AMG_SMOOTHER_CHEBYSHEV;
    opt->degree = 2;
    opt->cheb_lower = 0.1;
    opt->cheb_upper = 1.1;
    opt->omega_scale = 4.0 / 3.0;
    opt->lanczos_steps = 10;
    opt->coarse_size = 128;
    opt->max_levels = 10;
    opt->host_rows = AMG_DSETUP_HOST_ROWS;
}

int amg_smoother_parse(const char *name, amg_smoother *s)
{
    if (!strcasecmp(name, "chebyshev") || !strcasecmp(name, "cheby")) {
        *s = AMG_SMOOTHER_CHEBYSHEV;
        return 0;
    }
    if (!strcasecmp(name, "l1-jacobi") || !strcasecmp(name, "l1jacobi") ||
        !strcasecmp(name, "jacobi")) {
        *s = AMG_SMOOTHER_L1_JACOBI;
        return 0;
    }
    return -1;
}

const char *amg_smoother_name(amg_smoother s)
{
    return s == AMG_SMOOTHER_L1_JACOBI ? "l1-jacobi" : "chebyshev";
}

void amg_cheb_coeffs(const amg_options *opt, double lmax, amg_cheb *c)
{
    /* interval [a, b] of D^-1 A's spectrum the polynomial damps */
    double a = opt->cheb_lower * lmax, b = opt->cheb_upper * lmax;
    double theta = 0.5 * (b + a), delta = 0.5 * (b - a), sigma = theta / delta;
    double rho_old = 1.0 / sigma;
    c->degree = opt->degree;
    c->c0 = 1.0 / theta; /* d_0 = D^-1 r_0 / theta */
    c->c1[0] = c->c2[0] = 0.0;
    for (int k = 1; k < opt->degree && k < 32; k++) {
        double rho = 1.0 / (2.0 * sigma - rho_old);
        c->c1[k] = rho * rho_old;     /* d_k = rho_k rho_{k-1} d_{k-1} */
        c->c2[k] = 2.0 * rho / delta; /*   + 2 rho_k / delta D^-1 r_k */
        rho_old = rho;
    }
}

int amg_options_check(const amg_options *o, cls_error *err)
{
    if (!(o->threshold >= 0.0 && o->threshold < 1.0))
        return cls_fail(err, CLS_EUSAGE, "amg: threshold %g must be in [0, 1)", o->threshold);
    if (o->degree < 1 || o->degree > 32)
        return cls_fail(err, CLS_EUSAGE, "amg: smoother degree %d must be in 1..32", o->degree);
    if (!(o->cheb_lower > 0.0 && o->cheb_upper > o->cheb_lower))
        return cls_fail(err, CLS_EUSAGE,
                        "amg: Chebyshev interval [%g, %g] * lambda_max must have 0 < lower < upper",
                        o->cheb_lower, o->cheb_upper);
    if (!(o->omega_scale >= 0.0 && o->omega_scale < 2.0))
        return cls_fail(err, CLS_EUSAGE, "amg: prolongator damping %g must be in [0, 2)",
                        o->omega_scale);
    if (o->coarse_size < 1 || o->max_levels < 1 || o->max_levels > AMG_MAX_LEVELS ||
        o->lanczos_steps < 1 || o->lanczos_steps > 64)
        return cls_fail(err, CLS_EUSAGE,
                        "amg: coarse size %lld (>= 1), max levels %d (1..%d) and Lanczos steps "
                        "%d (1..64) out of range",
                        (long long)o->coarse_size, o->max_levels, AMG_MAX_LEVELS, o->lanczos_steps);
    return CLS_OK;
}

typedef struct {
    const csr_matrix *A;
    const double *diag;
    double *d;
    int l1;
} dinv_ctx;

static void dinv_chunk(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    dinv_ctx *c = arg;
    for (int64_t i = b; i < e; i++) {
        double v = c->diag[i];
        if (c->l1) {
            v = 0.0;
            for (int64_t k = c->A->rowptr[i]; k < c->A->rowptr[i + 1]; k++)
                v += fabs(c->A->val[k]);
        }
        c->d[i] = 1.0 / v;
    }
}

/* 1: a and b have the same rows, columns and entries in the same places */
static int csr_same_pattern(const csr_matrix *a, const csr_matrix *b)
{
    return a->nrows == b->nrows && a->ncols == b->ncols && a->nnz == b->nnz && a->rowptr &&
           b->rowptr && !memcmp(a->rowptr, b->rowptr, (size_t)(a->nrows + 1) * sizeof *a->rowptr) &&
           !memcmp(a->col, b->col, (size_t)a->nnz * sizeof *a->col);
}

/* B = a's pattern (rows, columns), its values left to be made; 0 or -1 */
static int csr_pattern_of(const csr_matrix *a, csr_matrix *b)
{
    cls_error e;
    if (!a->rowptr || csr_alloc(b, a->nrows, a->ncols, a->nnz, &e))
        return -1;
    memcpy(b->rowptr, a->rowptr, (size_t)(a->nrows + 1) * sizeof *a->rowptr);
    memcpy(b->col, a->col, (size_t)a->nnz * sizeof *a->col);
    return 0;
}

/* the smoother's inverse diagonal: 1/a_ii, or 1/sum_j |a_ij| (l1) */
static double *smoother_dinv(const csr_matrix *A, const double *diag, amg_smoother s)
{
    double *d = malloc((size_t)(A->nrows ? A->nrows : 1) * sizeof *d);
    if (!d)
        return NULL;
    dinv_ctx c = {A, diag, d, s == AMG_SMOOTHER_L1_JACOBI};
    amg_par_chunks(A->nrows, AMG_GRAIN, dinv_chunk, &c);
    return d;
}

/* one level: its diagonal and, unless it is the last (or force_last: the
 * aggregation stalled), the next level. like: the same level of an earlier
 * hierarchy of a matrix with this pattern (amg_rebuild), whose aggregates
 * and depth are taken instead of the strength graph's and the stop test's;
 * everything numeric (the diagonal, lambda_max, P's values, R, RAP, the
 * coarsest inverse) is made anew from A's values. */
static int build_level(amg_hierarchy *h, int l, int force_last, const amg_hierarchy *lh, int *last,
                       cls_error *err)
{
    const amg_level *like = lh ? &lh->lev[l] : NULL;
    const int like_last = lh && l == lh->nlevels - 1;
    amg_level *L = &h->lev[l];
    const csr_matrix *A = &L->A;
    const amg_options *o = &h->opt;
    int64_t n = A->nrows;
    double *diag = malloc((size_t)(n ? n : 1) * sizeof *diag);
    int32_t *agg = NULL;
    amg_graph S = {0};
    int rc = CLS_OK;
    if (!diag)
        return cls_fail(err, CLS_EOTHER, "amg: out of memory (level %d, %lld rows)", l,
                        (long long)n);
    double t0 = cls_now();
    amg_par_diag(A, diag);
    for (int64_t i = 0; i < n; i++)
        if (!(diag[i] > 0.0)) {
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "amg: level %d row %lld has diagonal %g: AMG needs a symmetric "
                          "positive-definite matrix (positive diagonal)",
                          l, (long long)i, diag[i]);
            goto done;
        }
    *last = like ? like_last : force_last || n <= o->coarse_size || l + 1 >= o->max_levels;
    if (*last && n <= AMG_DENSE_MAX) {
        h->t_prolong += cls_now() - t0;
        double t1 = cls_now();
        int crc = amg_dense_inverse(A, &h->coarse_inv, err);
        h->t_coarse += cls_now() - t1;
        if (crc == CLS_OK) {
            h->coarse_direct = 1;
            goto done;
        }
        if (crc != CLS_EBREAKDOWN) {
            rc = crc;
            goto done;
        }
        cls_error_clear(err); /* not SPD to working precision: smooth it instead */
        t0 = cls_now();
    }
    if ((rc = amg_lambda_max(A, diag, o->lanczos_steps, &L->lmax, err)))
        goto done;
    if (!(L->dinv = smoother_dinv(A, diag, o->smoother))) {
        rc = cls_fail(err, CLS_EOTHER, "amg: out of memory (level %d)", l);
        goto done;
    }
    h->t_prolong += cls_now() - t0;
    if (*last)
        goto done;

    t0 = cls_now();
    if (!like && (rc = amg_strength(A, diag, o->threshold, &S, err)))
        goto done;
    double t1 = cls_now();
    h->t_strength += t1 - t0;
    if (!(agg = malloc((size_t)(n ? n : 1) * sizeof *agg))) {
        rc = cls_fail(err, CLS_EOTHER, "amg: out of memory (level %d)", l);
        goto done;
    }
    if (like) { /* the pattern is the same: so are the aggregates' rows */
        memcpy(agg, like->agg, (size_t)n * sizeof *agg);
        L->naggs = like->naggs;
    } else if ((rc = amg_aggregate(&S, agg, &L->naggs, err))) {
        goto done;
    }
    double t2 = cls_now();
    h->t_aggregate += t2 - t1;
    if (L->naggs == 0 || L->naggs >= n) { /* coarsening stalled: this level is the last */
        amg_graph_free(&S);
        free(agg);
        free(diag);
        free(L->dinv);
        L->dinv = NULL;
        L->naggs = 0;
        return build_level(h, l, 1, NULL, last, err);
    }
    if ((rc = amg_prolongator(A, diag, agg, L->naggs, o->omega_scale / L->lmax, &L->P, err)))
        goto done;
    amg_level *N = &h->lev[l + 1];
    /* a re-set-up whose P has the earlier P's pattern: R and A_{l+1} have
     * the earlier ones' too, and only their values are made */
    int values_only = like && csr_same_pattern(&L->P, &like->P) &&
                      !csr_pattern_of(&like->R, &L->R) && !csr_pattern_of(&lh->lev[l + 1].A, &N->A);
    if (values_only && amg_transpose_values(&L->P, &L->R, err) != CLS_OK)
        values_only = 0;
    double t3 = cls_now();
    if (values_only && amg_rap_values(A, &L->P, &L->R, &N->A, err) != CLS_OK)
        values_only = 0;
    if (like && !values_only) /* not the pattern after all: the levels below anew */
        h->rebuilt = 0;
    if (!values_only) { /* in full (a fit that failed leaves no trace) */
        cls_error_clear(err);
        csr_free(&L->R);
        csr_free(&N->A);
        if ((rc = amg_transpose(&L->P, &L->R, err)))
            goto done;
        t3 = cls_now();
        if ((rc = amg_rap(A, &L->P, &L->R, &N->A, err)))
            goto done;
    }
    h->t_prolong += t3 - t2;
    N->own_A = 1;
    h->t_rap += cls_now() - t3;
    L->agg = agg; /* kept: a re-set-up of the same pattern takes it */
    agg = NULL;
done:
    amg_graph_free(&S);
    free(agg);
    free(diag);
    return rc;
}

/* like: NULL, or a hierarchy of a matrix with A's pattern (amg_rebuild) */
static int build(const csr_matrix *A, const amg_options *opt, const amg_hierarchy *like,
                 amg_hierarchy **out, cls_error *err)
{
    *out = NULL;
    if (A->nrows != A->ncols)
        return cls_fail(err, CLS_EINPUT, "amg: the matrix is %lld x %lld, not square",
                        (long long)A->nrows, (long long)A->ncols);
    amg_hierarchy *h = calloc(1, sizeof *h);
    if (!h)
        return cls_fail(err, CLS_EOTHER, "amg: out of memory");
    if (opt)
        h->opt = *opt;
    else
        amg_options_default(&h->opt);
    int rc = amg_options_check(&h->opt, err);
    if (rc) {
        free(h);
        return rc;
    }
    double t0 = cls_now();
    h->threads = amg_nthreads();
    h->lev[0].A = *A; /* borrowed */
    h->nlevels = 1;
    h->rebuilt = like != NULL;
    for (int l = 0;; l++) {
        int last = 0;
        /* the earlier level l, while it matches this one's rows (it does
         * for the same pattern: the same aggregates give the same coarse
         * sizes); from a mismatch on, the levels are set up afresh */
        if (like &&
            (!h->rebuilt || !(l < like->nlevels && like->lev[l].A.nrows == h->lev[l].A.nrows &&
                              (l == like->nlevels - 1 || like->lev[l].agg))))
            h->rebuilt = 0, like = NULL;
        if ((rc = build_level(h, l, 0, like, &last, err))) {
            h->nlevels = l + 2 <= AMG_MAX_LEVELS ? l + 2 : AMG_MAX_LEVELS;
            amg_free(h);
            return rc;
        }
        h->nlevels = l + 1;
        if (last)
            break;
    }
    h->t_build = cls_now() - t0;
    *out = h;
    return CLS_OK;
}

int amg_build(const csr_matrix *A, const amg_options *opt, amg_hierarchy **out, cls_error *err)
{
    return build(A, opt, NULL, out, err);
}

int amg_rebuild(const csr_matrix *A, const amg_hierarchy *like, amg_hierarchy **out, cls_error *err)
{
    if (!csr_same_pattern(&like->lev[0].A, A))
        return cls_fail(err, CLS_EUSAGE,
                        "amg: re-set-up of a %lld-row, %lld-entry matrix from a hierarchy of "
                        "%lld rows and %lld entries: the patterns differ",
                        (long long)A->nrows, (long long)A->nnz, (long long)like->lev[0].A.nrows,
                        (long long)like->lev[0].A.nnz);
    return build(A, &like->opt, like, out, err);
}

int amg_is_rebuilt(const amg_hierarchy *h)
{
    return h->rebuilt;
}

void amg_free(amg_hierarchy *h)
{
    if (!h)
        return;
    for (int l = 0; l < h->nlevels && l < AMG_MAX_LEVELS; l++) {
        amg_level *L = &h->lev[l];
        if (L->own_A)
            csr_free(&L->A);
        csr_free(&L->P);
        csr_free(&L->R);
        free(L->dinv);
        free(L->agg);
    }
    free(h->coarse_inv);
    free(h);
}

void amg_get_info(const amg_hierarchy *h, amg_info *info)
{
    memset(info, 0, sizeof *info);
    info->levels = h->nlevels;
    double nnz = 0.0, rows = 0.0;
    for (int l = 0; l < h->nlevels; l++) {
        info->rows[l] = h->lev[l].A.nrows;
        info->nnz[l] = h->lev[l].A.nnz;
        info->lambda_max[l] = h->lev[l].lmax;
        nnz += (double)h->lev[l].A.nnz;
        rows += (double)h->lev[l].A.nrows;
    }
    info->operator_complexity = h->lev[0].A.nnz ? nnz / (double)h->lev[0].A.nnz : 1.0;
    info->grid_complexity = h->lev[0].A.nrows ? rows / (double)h->lev[0].A.nrows : 1.0;
    info->coarse_direct = h->coarse_direct;
    info->strength_s = h->t_strength;
    info->aggregate_s = h->t_aggregate;
    info->prolong_s = h->t_prolong;
    info->rap_s = h->t_rap;
    info->coarse_s = h->t_coarse;
    info->build_s = h->t_build;
    info->threads = h->threads;
}

/* One line of amg_describe: appended at *off when buf has room, counted in
 * *total always (snprintf's contract, so a caller can size the buffer). A
 * function, not a macro: gcc -O3 misreads the NULL-buffer case of an inline
 * snprintf as a format-truncation error. */
static void amg_put(char *buf, size_t len, size_t *off, int *total, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void amg_put(char *buf, size_t len, size_t *off, int *total, const char *fmt, ...)
{
    char scratch[1];
    va_list ap;
    va_start(ap, fmt);
    int n = *off < len && buf ? vsnprintf(buf + *off, len - *off, fmt, ap)
                              : vsnprintf(scratch, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        *total += n;
        *off = *off + (size_t)n < len ? *off + (size_t)n : (len ? len - 1 : 0);
    }
}

int amg_describe(const amg_hierarchy *h, char *buf, size_t len)
{
    amg_info in;
    amg_get_info(h, &in);
    size_t off = 0;
    int total = 0;
#define PUT(...) amg_put(buf, len, &off, &total, __VA_ARGS__)
    PUT("amg: %d levels, smoother %s degree %d, threshold %g\n", in.levels,
        amg_smoother_name(h->opt.smoother), h->opt.degree, h->opt.threshold);
    for (int l = 0; l < in.levels; l++)
        PUT("  level %d: %lld rows, %lld nnz (%.1f per row), lambda_max(D^-1 A) %.4g\n", l,
            (long long)in.rows[l], (long long)in.nnz[l],
            in.rows[l] ? (double)in.nnz[l] / (double)in.rows[l] : 0.0, in.lambda_max[l]);
    PUT("  coarsest: %s\n", in.coarse_direct ? "dense inverse" : "smoothed (no direct solve)");
    PUT("  operator complexity %.3f, grid complexity %.3f\n", in.operator_complexity,
        in.grid_complexity);
    PUT("  set-up %.3f s on %d threads: strength %.3f, aggregation %.3f, prolongator %.3f, "
        "RAP %.3f, coarsest %.3f\n",
        in.build_s, in.threads, in.strength_s, in.aggregate_s, in.prolong_s, in.rap_s, in.coarse_s);
#undef PUT
    return total;
}
