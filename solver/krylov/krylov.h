/*
 * krylov.h: the Krylov layer's one contract: options, result, reasons,
 * monitor and history, shared by every method in solver/krylov/, and the
 * table of methods (methods.def, methods.c).
 *
 * A method is one file holding only its recurrence (PETSc's
 * src/ksp/ksp/impls/cg/, Ginkgo's core/solver/): cg.c (CG, fused, scalars
 * on the device, one part), cg_small.c (CG in one launch per many
 * iterations, one work-group, small systems), pcg.c (preconditioned single-reduction CG, one
 * part), dcg.c / dpcg.c (the same two over K parts, scalars on the host, one
 * MPI reduction per iteration), pipecg.c (pipelined CG), dbcg.c (k
 * right-hand sides in lockstep); the textbook twins the tests compare
 * against are cg_ref.c (Hestenes-Stiefel, two synchronisations) and
 * pcg_ref.c (the plain preconditioned CG). The stopping test, the
 * confirm/restart rule and the failure messages are ksp_stop.h's, written
 * once; the device-scalar loop that cg.c and pcg.c share is ksp_device.h's;
 * the host-scalar step that dpcg.c and dbcg.c share is pcg_host.h's; ||b||
 * over parts is ksp_dist.c's.
 *
 * Every method stops on the unpreconditioned ||r||/||b|| <= tol (whatever
 * the preconditioner) confirmed on the true residual, or at maxiter; detects
 * breakdown (p'Ap <= 0, NaN/Inf) and keeps the residual history.
 */
#ifndef CLS_SOLVER_KRYLOV_KRYLOV_H
#define CLS_SOLVER_KRYLOV_KRYLOV_H

#include <stdint.h>

#include "../../kernels/la.h"
#include "../../kernels/la_pc.h"
#include "../pc/pc_options.h"

typedef enum {
#define KSP_METHOD(name, id, solve, solve_block, summary) id,
#include "methods.def"
#undef KSP_METHOD
    SOLVER_AUTO /* no method named (--method auto, the default): dsolve runs cg, or
                 * cg-small for a small one-part system on a GPU when the device's
                 * measured figures say it finishes first (solver/devfig.h) */
} solver_method;
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
/* The same M on host arrays, for the native CPU loops (kernels/cpu/,
 * la_pcn.h): z = M^-1 r with the workspace's team and row ranges (ws) and
 * the system's matrix as mapped (A: the kinds that apply A use it). */
struct cpu_ws;
struct cpu_csr;
typedef int (*cg_apply_host_fn)(void *ctx, const struct cpu_ws *ws, const struct cpu_csr *A,
                                const double *r, double *z, cls_error *err);

typedef struct cg_options {
    double tol;
    int64_t maxiter;
    solver_precond precond;
    cg_monitor_fn monitor;
    void *monitor_ctx;
    int classic;                 /* 1: the two-synchronisation Hestenes-Stiefel loop (reference);
                                  * 0: the fused single-synchronisation loop (default) */
    int single_reduction;        /* one device, no preconditioner or Jacobi: 1 takes beta from the
                                  * Chronopoulos-Gear identity (one reduction, three launches per
                                  * iteration, iterates that drift on ill-conditioned matrices);
                                  * 0 (default) the Hestenes-Stiefel beta (cg.c says why) */
    int one_launch;              /* one device, no preconditioner or Jacobi: the whole loop in one
                                  * work-group, many iterations per launch (cg_small.c,
                                  * --method cg-small) */
    int lag;                     /* fused: iterations the host may run ahead of the records it
                                  * has read (0: 2, and 1 once iterations prove slow:
                                  * ksp_device.h); convergence stops the device itself, so a
                                  * larger lag costs no-op launches, and with a preconditioner
                                  * its M^-1 of each queued iteration */
    const la_cheb_coef *cheby;   /* one_launch with --precond chebyshev: its recurrence, applied
                                  * inside the kernel with the diagonal passed as dinv */
    const la_tri *ic0_l, *ic0_u; /* one_launch with --precond ic0: its triangles, swept */
    int ic0_sweeps;              /* inside the kernel, ic0_sweeps each (1..32) */
    cg_apply_fn apply;           /* a general preconditioner (precond is then neither NONE
                                  * nor JACOBI): the preconditioned loop of pcg.c */
    void *apply_ctx;
    cg_apply_host_fn apply_host; /* the same M natively (NULL: it has none; pcg.c) */
    la_backend backend; /* one part on a CPU device: native loops or OpenCL kernels (la.h) */
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
    int cpu_threads;  /* the native CPU loops ran on this many threads (0: OpenCL kernels) */
    char kernel[96];  /* cg-small: the loop's kernel and its geometry ("" otherwise) */
} cg_result;

/* Solves A x = b with x holding the initial guess on entry. dinv is the
 * inverted diagonal (used when precond == PRECOND_JACOBI, may be NULL
 * otherwise); opt->apply a general preconditioner (pcg_fused, pcg.c). Returns CLS_OK when
 * converged, CLS_ENOTCONV at maxiter, CLS_EBREAKDOWN with a message on breakdown, CLS_EOTHER on a
 * device error. res is filled in every case. */
int cg_solve(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
             const cg_options *opt, cg_result *res, cls_error *err);

void cg_result_free(cg_result *res);

/* The one-launch CG for small systems (cg_small.c): cg_solve runs it for
 * opt->one_launch; no preconditioner or Jacobi (any other is CLS_EINPUT). */
int cg_small_solve(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
                   const cg_options *opt, cg_result *res, cls_error *err);
/* CLS_OK for the preconditioners cg-small runs (none, jacobi); else
 * CLS_EINPUT with a message naming the method and the preconditioner */
int cg_small_check_precond(solver_precond t, cls_error *err);

/* The preconditioned single-reduction CG on one device with a general
 * preconditioner opt->apply (pcg.c; the Jacobi and unpreconditioned loops
 * stay cg_fused's): cg_solve calls it. */
int pcg_fused(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const cg_options *opt,
              cg_result *res, cls_error *err);

/* The textbook twin (cg_ref.c): Hestenes-Stiefel with two host
 * synchronisations per iteration, any preconditioner (dinv with Jacobi,
 * opt->apply, or none); cg_solve runs it for opt->classic. */
int cg_ref_solve(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
                 const cg_options *opt, cg_result *res, cls_error *err);

/* The plain preconditioned CG (pcg_ref.c), the twin of the preconditioned
 * loops in the AMG tests and bench/amg_bench.c: z = M^-1 r by apply (NULL:
 * z = r), two synchronisations per iteration, stop on ||r||/||b|| <= tol
 * of the recurrence (no confirmation: the tests compute b - Ax themselves). */
typedef struct pcg_ref_result {
    int converged, breakdown;
    int64_t iterations;
    double rel_residual, seconds;
} pcg_ref_result;
int pcg_ref_solve(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, cg_apply_fn apply,
                  void *apply_ctx, double tol, int64_t maxiter, pcg_ref_result *res,
                  cls_error *err);

/* Appends v to res->history, growing it geometrically (*cap is the
 * capacity the caller tracks, 0 at first); shared by every Krylov method. */
int ksp_history_push(cg_result *res, int64_t *cap, double v, cls_error *err);
const char *cg_reason_name(cg_reason r);

#endif
