/*
 * cg.h: conjugate gradients and Jacobi-preconditioned CG on one device.
 *
 * The solver is written against kernels/la.h only: it sees vectors, a
 * matrix and scalars, never OpenCL. It stops on ||r||/||b|| <= tol (the
 * unpreconditioned residual, whatever the preconditioner) or at maxiter,
 * detects breakdown (p'Ap <= 0, NaN/Inf) and keeps the residual history.
 */
#ifndef CLS_SOLVER_CG_H
#define CLS_SOLVER_CG_H

#include <stdint.h>

#include "../../kernels/la.h"
#include "../pc/pc_options.h"

typedef enum { SOLVER_CG, SOLVER_PIPECG } solver_method;
/* solver_precond: the preconditioners' types (pc_options.h) */

typedef enum {
    CG_CONVERGED_RTOL = 1, /* ||r||/||b|| <= tol */
    CG_CONVERGED_ZERO_RHS = 2,
    CG_DIVERGED_MAXITER = -1,
    CG_DIVERGED_INDEFINITE = -2, /* p'Ap <= 0 */
    CG_DIVERGED_NANORINF = -3,
    CG_CANCELLED = -4
} cg_reason;

/* Called once with iteration 0 and the initial residual (its return is
 * ignored then), then after every iteration with the relative residual, in
 * order; a non-zero return cancels the solve (the daemon's cancel). In the fused loop
 * the call for iteration k comes while iterations up to k + lag are queued,
 * so a cancel takes effect within lag iterations (res->iterations counts
 * every update applied to x). */
typedef int (*cg_monitor_fn)(void *ctx, int64_t iteration, double rel_residual);

/* z = M^-1 r for a general preconditioner (symmetric positive definite),
 * enqueued on la's queue without blocking where it can: the fused loop
 * calls it once per iteration while later iterations are queued. */
typedef int (*cg_apply_fn)(void *ctx, const la_vec *r, la_vec *z, cls_error *err);

typedef struct cg_options {
    double tol;
    int64_t maxiter;
    solver_precond precond;
    cg_monitor_fn monitor;
    void *monitor_ctx;
    int classic;       /* 1: the two-synchronisation Hestenes-Stiefel loop (reference);
                        * 0: the fused single-synchronisation loop (default) */
    int lag;           /* fused: iterations the host may run ahead of the records it
                        * has read (0: 2); convergence stops the device itself, so a
                        * larger lag costs only no-op launches */
    cg_apply_fn apply; /* a general preconditioner (precond is then neither NONE
                        * nor JACOBI): the preconditioned loop of pcg.c */
    void *apply_ctx;
    const double *tols; /* several right-hand sides together (dbcg_solve): column c's
                         * tolerance (an absolute one makes it differ); NULL: tol */
} cg_options;

typedef struct cg_result {
    cg_reason reason;
    int converged;
    int64_t iterations;
    double rel_residual; /* the recurrence's ||r||/||b|| at the end */
    double *history;     /* rel_residual per iteration, [0] the initial; malloc'ed */
    int64_t nhistory;
    double start_s;   /* of the solve: workspace and the initial residual */
    double confirm_s; /* of the solve: true-residual confirmations and restarts */
} cg_result;

/* Solves A x = b with x holding the initial guess on entry. dinv is the
 * inverted diagonal (used when precond == PRECOND_JACOBI, may be NULL
 * otherwise); opt->apply a general preconditioner (pcg_fused, pcg.c). Returns CLS_OK when
 * converged, CLS_ENOTCONV at maxiter, CLS_EBREAKDOWN with a message on breakdown, CLS_EOTHER on a
 * device error. res is filled in every case. */
int cg_solve(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
             const cg_options *opt, cg_result *res, cls_error *err);

void cg_result_free(cg_result *res);

/* The preconditioned single-reduction CG on one device with a general
 * preconditioner opt->apply (pcg.c; the Jacobi and unpreconditioned loops
 * stay cg_fused's): cg_solve calls it. */
int pcg_fused(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const cg_options *opt,
              cg_result *res, cls_error *err);

/* Appends v to res->history, growing it geometrically (*cap is the
 * capacity the caller tracks, 0 at first); shared by every Krylov method. */
int cg_history_push(cg_result *res, int64_t *cap, double v, cls_error *err);
const char *cg_reason_name(cg_reason r);

#endif
