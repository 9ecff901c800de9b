/*
 * solve.h: what every solve shares around the engine (dsolve.h): the
 * options a user sets (tol, atol, maxiter, method, preconditioner,
 * precision, device), the input checks that refuse what CG cannot solve,
 * the scaled norms and the true residual recomputed in double on the host.
 */
#ifndef CLS_SOLVER_SOLVE_H
#define CLS_SOLVER_SOLVE_H

#include <stdint.h>

#include "../kernels/la.h"
#include "../matrices/csr.h"
#include "krylov/krylov.h"

typedef struct solve_options {
    double tol;      /* relative residual, default 1e-8 */
    double atol;     /* absolute: stop when ||r|| <= max(tol ||b||, atol); default 0 */
    int64_t maxiter; /* <= 0: max(1000, 10 n) as scipy */
    solver_method method;
    solver_precond precond;
    la_precision precision;
    la_spmv_variant spmv; /* AUTO unless overridden */
    la_backend backend;   /* a one-part CG on a CPU device: native loops or OpenCL (la.h) */
    const char *device;   /* "auto", "cpu", "gpu", "accelerator" or an index */
    const char *name;     /* the matrix's name for messages (its path) */
    cg_monitor_fn monitor;
    void *monitor_ctx;
} solve_options;

void solve_options_default(solve_options *o);
const char *solver_method_name(solver_method m);
const char *solver_precond_name(solver_precond p);
const char *la_precision_name(la_precision p);

/* The relative tolerance the solver runs with for a relative tol and an
 * absolute atol, scipy's rule ||r|| <= max(tol ||b||, atol):
 * max(tol, atol / ||b||); tol when atol is 0 or b = 0. */
double solve_effective_tol(double tol, double atol, double bnorm);

/* Checks that A can be solved by CG: square, finite values, symmetric, and a
 * positive diagonal (a symmetric matrix with a_ii <= 0 is not positive
 * definite). Fails with CLS_EINPUT (not square, wrong rhs length) or
 * CLS_EBREAKDOWN (not SPD), naming the offending entry. */
int solve_check_input(const csr_matrix *A, const double *b, int64_t nb, const char *name,
                      cls_error *err);
/* The same for a matrix whose reader mirrored every entry (Matrix Market
 * symmetric or skew-symmetric storage, mirrored = 1): a_ji is a_ij's own
 * copy (or its negative, whose zero diagonal fails the diagonal check
 * first), so the symmetry test, a binary search per upper entry (40-50 ms
 * of 10^8 entries on 16 cores), is left out; the rest is checked.
 * `more`, when not NULL, takes what the check's passes over the values
 * find anyway, for a caller that would otherwise read them again (dsolve
 * on one rank: its scaling, b = A*1, Jacobi's D^-1; 40-60 ms of poisson3d
 * 256's set-up on 16 cores). */
typedef struct solve_check_more {
    double amax;    /* out: max |a_ij| (on success) */
    double *rowsum; /* n, or NULL: b = A*1, each row's sum in entry order
                     * (dsolve_row_sums' bits) */
    double *dinv;   /* n, or NULL: 1 / a_ii (pc.c's diagonal's bits) */
} solve_check_more;
int solve_check_input_stored(const csr_matrix *A, const double *b, int64_t nb, const char *name,
                             int mirrored, solve_check_more *more, cls_error *err);

/* "WHAT entry I is NaN or Inf" (CLS_EINPUT) for the first non-finite entry
 * of v (a right-hand side, an initial guess), 1-based; CLS_OK otherwise. */
int solve_check_vector(const double *v, int64_t n, const char *what, cls_error *err);
/* The pieces of solve_check_input, for checks spread over ranks
 * (dist/dcheck.c) that must say what it says: the shape; then the
 * messages for a NaN or Inf, a diagonal entry (i,i) that is not positive
 * (present: stored at all), and a(i,j) != a(j,i) beyond SOLVE_SYM_RTOL
 * max |a_ij| (i, j 0-based). Each returns its error class. */
#define SOLVE_SYM_RTOL 1e-12
int solve_check_shape(int64_t rows, int64_t cols, const char *name, cls_error *err);
int solve_fail_nonfinite(const char *name, cls_error *err);
int solve_fail_diagonal(const char *name, int64_t i, int present, double aii, cls_error *err);
int solve_fail_symmetry(const char *name, int64_t i, int64_t j, double aij, double aji,
                        cls_error *err);

/* Norms without overflow or underflow, as LAPACK's dlassq/dnrm2: the sum of
 * squares is kept as scale^2 * ssq (start with scale = 0, ssq = 1). */
void solve_ssq_add(double *scale, double *ssq, double v);
/* sqrt(sum of v_i^2), exact in range for any finite entries. */
double solve_nrm2(const double *v, int64_t n);

/* The scaling dsolve applies before a solve: a factor 2^e that brings a
 * magnitude m (max |a_ij|, ||b||) into [0.5, 1) when m lies outside
 * [2^-SOLVE_SCALE_WINDOW, 2^SOLVE_SCALE_WINDOW]; e = 0 inside the window and
 * for m = 0. Powers of two change no digit, so CG's iterates are those of
 * the unscaled system, without the squares (b'b, r'r, p'Ap) that underflow
 * or overflow in double, or in float, far from 1. */
#define SOLVE_SCALE_WINDOW 20
int solve_scale_exponent(double m);

/* ||b - A x|| / ||b|| in double, both norms scaled (solve_ssq_add) so that
 * neither underflows nor overflows (||b - A x|| when b = 0). */
double solve_true_residual(const csr_matrix *A, const double *b, const double *x);

#endif
