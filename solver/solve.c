/*
 * solve.c: what every solve shares around the engine (see solve.h): the
 * default options, names, input checks, scaled norms, the true residual.
 *
 * The checks run on the host before any device work, because a user who
 * sends a nonsymmetric or indefinite matrix deserves an answer that names
 * the entry at fault, not "p'Ap <= 0 at iteration 37". Symmetry is checked
 * to a relative 1e-12 so files written in general storage with rounding
 * still pass; positive definiteness beyond the diagonal is left to CG's own
 * breakdown test, the only affordable check.
 */
#include "solve.h"
#include "pc/pc_options.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/parallel.h"
#include "../common/timer.h"

void solve_options_default(solve_options *o)
{
    memset(o, 0, sizeof *o);
    o->tol = 1e-8;
    o->maxiter = 0;
    o->method = SOLVER_AUTO;
    o->precond = PRECOND_NONE;
    o->precision = LA_DOUBLE;
    o->spmv = LA_SPMV_AUTO;
    o->device = "auto";
    o->name = "matrix";
}

double solve_effective_tol(double tol, double atol, double bnorm)
{
    if (!(atol > 0.0) || !(bnorm > 0.0) || !isfinite(bnorm))
        return tol;
    double t = atol / bnorm; /* ||r|| <= atol  <=>  ||r||/||b|| <= atol/||b|| */
    return t > tol ? t : tol;
}

const char *solver_method_name(solver_method m)
{
    switch (m) {
#define KSP_METHOD(name, id, solve, solve_block, summary)                                          \
    case id:                                                                                       \
        return name;
#include "krylov/methods.def"
#undef KSP_METHOD
    case SOLVER_AUTO:
        return "auto";
    }
    return "cg";
}

const char *solver_precond_name(solver_precond p)
{
    return pc_name(p);
}

const char *la_precision_name(la_precision p)
{
    return la_precision_str(p);
}


/* The checks over row ranges in parallel: each range finds its first
 * non-finite value, its largest |a_ij|, and then its first row whose
 * diagonal is not positive or whose upper entries have no mirror within
 * 1e-12 max|a_ij| (for mirrored storage, with no symmetry to test, the
 * diagonal is found in the first pass: the rows are read once). The
 * smallest failing index over the ranges is the one a sequential scan
 * finds first, so the message does not depend on the thread count. */
typedef struct chk_range {
    int64_t bad_val;   /* first entry that is NaN or Inf, or -1 */
    double maxabs;     /* max |a_ij| of the range */
    int64_t bad_row;   /* first failing row, or -1 */
    int64_t bad_entry; /* the entry at fault in that row (-1: the diagonal) */
} chk_range;

typedef struct chk_ctx {
    const csr_matrix *A;
    chk_range *r;
    double maxabs; /* pass 2: over the whole matrix */
    int pass;
    int mirrored;          /* pass 2: the diagonal only (solve_check_input_stored) */
    double *rowsum, *dinv; /* solve_check_more's, or NULL */
} chk_ctx;

static void chk_rows(void *arg, int range, int64_t i0, int64_t i1)
{
    const chk_ctx *c = arg;
    const csr_matrix *A = c->A;
    chk_range *r = &c->r[range];
    if (c->pass == 1) {
        r->bad_val = -1;
        r->maxabs = 0.0;
        r->bad_row = -1;
        r->bad_entry = -1;
        const int diag = c->mirrored; /* pass 2's work here: no symmetry to test */
        for (int64_t i = i0; i < i1; i++) { /* row by row: each row's sum on the way */
            double s = 0.0;
            int64_t d = -1;
            for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
                if (!isfinite(A->val[k])) {
                    r->bad_val = k;
                    return;
                }
                if (fabs(A->val[k]) > r->maxabs)
                    r->maxabs = fabs(A->val[k]);
                s += A->val[k] * 1.0;
                if (diag && A->col[k] == i)
                    d = k;
            }
            if (c->rowsum)
                c->rowsum[i] = s;
            if (diag && r->bad_row < 0) { /* the first in the range; values still checked */
                if (!(d >= 0 && A->val[d] > 0.0))
                    r->bad_row = i;
                else if (c->dinv)
                    c->dinv[i] = 1.0 / A->val[d];
            }
        }
        return;
    }
    r->bad_row = -1;
    for (int64_t i = i0; i < i1; i++) {
        int64_t d = csr_find(A, i, i);
        if (!(d >= 0 && A->val[d] > 0.0)) {
            r->bad_row = i;
            r->bad_entry = -1;
            return;
        }
        if (c->dinv)
            c->dinv[i] = 1.0 / A->val[d];
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1] && !c->mirrored; k++) {
            int64_t j = A->col[k];
            if (j <= i)
                continue;
            int64_t t = csr_find(A, j, i);
            double aji = t < 0 ? 0.0 : A->val[t];
            if (fabs(A->val[k] - aji) > SOLVE_SYM_RTOL * c->maxabs) {
                r->bad_row = i;
                r->bad_entry = k;
                return;
            }
        }
    }
}

int solve_check_input(const csr_matrix *A, const double *b, int64_t nb, const char *name,
                      cls_error *err)
{
    return solve_check_input_stored(A, b, nb, name, 0, NULL, err);
}

int solve_check_input_stored(const csr_matrix *A, const double *b, int64_t nb, const char *name,
                             int mirrored, solve_check_more *more, cls_error *err)
{
    int rc = solve_check_shape(A->nrows, A->ncols, name, err);
    if (rc)
        return rc;
    if (b && nb != A->nrows)
        return cls_fail(err, CLS_EINPUT,
                        "right-hand side has %lld entries but the matrix has %lld rows",
                        (long long)nb, (long long)A->nrows);
    const int64_t grain = 16384;
    int t = cls_parallel_ranges(A->nrows, grain);
    chk_ctx c = {A,
                 calloc((size_t)t, sizeof(chk_range)),
                 0.0,
                 1,
                 mirrored != 0,
                 more ? more->rowsum : NULL,
                 more ? more->dinv : NULL};
    if (!c.r)
        return cls_fail(err, CLS_EOTHER, "out of memory checking the matrix");
    cls_parallel_for(A->nrows, grain, chk_rows, &c);
    for (int q = 0; q < t; q++) {
        if (c.r[q].bad_val >= 0) {
            free(c.r);
            return solve_fail_nonfinite(name, err);
        }
        if (c.r[q].maxabs > c.maxabs)
            c.maxabs = c.r[q].maxabs;
    }
    if (b) {
        int rc = solve_check_vector(b, nb, "right-hand side", err);
        if (rc) {
            free(c.r);
            return rc;
        }
    }
    /* mirrored: pass 1 found the diagonals (one pass over the rows, not two) */
    if (!c.mirrored) {
        c.pass = 2;
        cls_parallel_for(A->nrows, grain, chk_rows, &c);
    }
    chk_range bad = {-1, 0.0, -1, -1};
    for (int q = 0; q < t && bad.bad_row < 0; q++) /* ranges in row order */
        if (c.r[q].bad_row >= 0)
            bad = c.r[q];
    free(c.r);
    if (bad.bad_row < 0) {
        if (more)
            more->amax = c.maxabs;
        return CLS_OK;
    }
    const int64_t i = bad.bad_row;
    if (bad.bad_entry < 0) {
        int64_t d = csr_find(A, i, i);
        return solve_fail_diagonal(name, i, d >= 0, d < 0 ? 0.0 : A->val[d], err);
    }
    const int64_t k = bad.bad_entry, j = A->col[k];
    int64_t tk = csr_find(A, j, i);
    return solve_fail_symmetry(name, i, j, A->val[k], tk < 0 ? 0.0 : A->val[tk], err);
}

int solve_check_shape(int64_t rows, int64_t cols, const char *name, cls_error *err)
{
    if (rows != cols)
        return cls_fail(err, CLS_EINPUT,
                        "%s: matrix is %lld x %lld; conjugate gradients needs a square matrix",
                        name, (long long)rows, (long long)cols);
    if (rows == 0) /* the checks below would find nothing and call it a bad value */
        return cls_fail(err, CLS_EINPUT, "%s: matrix is 0 x 0: there is no system to solve", name);
    return CLS_OK;
}

int solve_fail_nonfinite(const char *name, cls_error *err)
{
    return cls_fail(err, CLS_EINPUT, "%s: matrix holds a NaN or Inf value", name);
}

int solve_fail_diagonal(const char *name, int64_t i, int present, double aii, cls_error *err)
{
    return cls_fail(err, CLS_EBREAKDOWN,
                    "%s: matrix is not positive definite: diagonal entry (%lld,%lld) "
                    "is %s%.6g; conjugate gradients needs a symmetric "
                    "positive-definite matrix",
                    name, (long long)i + 1, (long long)i + 1, present ? "" : "missing, i.e. ",
                    aii);
}

int solve_fail_symmetry(const char *name, int64_t i, int64_t j, double aij, double aji,
                        cls_error *err)
{
    return cls_fail(err, CLS_EBREAKDOWN,
                    "%s: matrix is not symmetric: a(%lld,%lld) = %.17g but "
                    "a(%lld,%lld) = %.17g; conjugate gradients needs a "
                    "symmetric positive-definite matrix",
                    name, (long long)i + 1, (long long)j + 1, aij, (long long)j + 1,
                    (long long)i + 1, aji);
}

int solve_check_vector(const double *v, int64_t n, const char *what, cls_error *err)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return cls_fail(err, CLS_EINPUT, "%s entry %lld is NaN or Inf", what, (long long)i + 1);
    return CLS_OK;
}

void solve_ssq_add(double *scale, double *ssq, double v)
{
    double a = fabs(v);
    if (a == 0.0 || isnan(a))
        return;
    if (*scale < a) {
        double r = *scale / a;
        *ssq = 1.0 + *ssq * r * r;
        *scale = a;
    } else {
        double r = a / *scale;
        *ssq += r * r;
    }
}

double solve_nrm2(const double *v, int64_t n)
{
    double scale = 0.0, ssq = 1.0;
    for (int64_t i = 0; i < n; i++)
        solve_ssq_add(&scale, &ssq, v[i]);
    return scale * sqrt(ssq);
}

int solve_scale_exponent(double m)
{
    if (!(m > 0.0) || !isfinite(m))
        return 0;
    int e;
    frexp(m, &e); /* m = f 2^e, f in [0.5, 1) */
    if (e - 1 >= -SOLVE_SCALE_WINDOW && e - 1 <= SOLVE_SCALE_WINDOW)
        return 0;
    return -e;
}

double solve_true_residual(const csr_matrix *A, const double *b, const double *x)
{
    double rs = 0.0, rq = 1.0, bs = 0.0, bq = 1.0; /* ||r|| = rs sqrt(rq), ||b|| = bs sqrt(bq) */
    for (int64_t i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            s += A->val[k] * x[A->col[k]];
        solve_ssq_add(&rs, &rq, b[i] - s);
        solve_ssq_add(&bs, &bq, b[i]);
        if (!isfinite(b[i] - s))
            return NAN;
    }
    if (bs == 0.0)
        return rs * sqrt(rq);
    return (rs / bs) * sqrt(rq / bq);
}
