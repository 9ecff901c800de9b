/*
 * ksp_stop.h: the stopping, confirm/restart and failure rules every Krylov
 * method of clsolve shares, written once (PETSc's KSPConvergedDefault and
 * KSPConvergedReason play this part beside its methods; Ginkgo's stop::
 * criteria).
 *
 * A method owns its recurrence and nothing else of the decision. It asks:
 *   - ksp_stop_rhs: is b usable (finite), is it zero (then x = 0 is exact);
 *   - ksp_stop_confirm, once the recurrence's ||r||/||b|| has reached tol and
 *     the method has computed the true residual b - Ax: converged, restart
 *     from b - Ax (residual replacement, van der Vorst and Ye 2000), or give
 *     up because the tolerance is out of this precision's reach;
 *   - ksp_stop_lost: may the method restart after its recurrence's p'Ap lost
 *     its sign (pipelined and single-reduction forms, where p'Ap is a
 *     difference of two sums), or is it a breakdown;
 * and it reports its ends through the ksp_fail_* calls, which set the
 * result's reason and write the one message each end has (docs/errors.md
 * lists them). The limits are here and nowhere else.
 */
#ifndef CLS_SOLVER_KRYLOV_KSP_STOP_H
#define CLS_SOLVER_KRYLOV_KSP_STOP_H

#include <stdint.h>

#include "krylov.h"

/* Restarts from the true residual allowed before the tolerance is taken as
 * out of reach; each must also halve the true residual of the last one. */
#define KSP_MAX_REPLACEMENTS 5
/* Restarts after a recurrence's p'Ap lost its sign (a loss of the
 * recurrence, not of the matrix, when it comes after a start). */
#define KSP_MAX_LOST 50

typedef struct ksp_stop {
    double tol; /* relative: ||b - Ax|| <= tol ||b|| */
    int replacements;
    double last_true; /* the true relative residual at the last replacement */
    int lost;
} ksp_stop;

void ksp_stop_init(ksp_stop *st, double tol);

/* b's norm: CLS_OK with *zero = 0 when finite and non-zero; *zero = 1 when
 * b = 0 (res: converged, zero right-hand side, history [0]; the caller sets
 * x = 0); CLS_EBREAKDOWN when not finite. *cap: the history's capacity. */
int ksp_stop_rhs(double bnorm, cg_result *res, int64_t *cap, int *zero, cls_error *err);
/* the same on one device: *bb = b'b, and x = 0 when b = 0; native: b'b
 * summed on the host (a CPU device's buffers, the native loops) */
int ksp_stop_rhs_la(la_ctx *la, const la_vec *b, la_vec *x, int native, cg_result *res,
                    int64_t *cap, double *bb, int *zero, cls_error *err);

/* The verdict on the true residual true_rel at iteration k after the
 * recurrence reached tol: KSP_RESTART (restart the recurrence from b - Ax:
 * residual replacement), or the exit class to end with: CLS_OK (res
 * converged) or CLS_ENOTCONV (out of this precision's reach; err says so).
 * res->rel_residual becomes true_rel in every case. */
#define KSP_RESTART (-1)
int ksp_stop_confirm(ksp_stop *st, double true_rel, int64_t k, cg_result *res, cls_error *err);

/* 1 (and counted) when a lost recurrence may restart; 0: a breakdown */
int ksp_stop_lost(ksp_stop *st);

/* The same for the recurrence p'Ap = delta - t (t = beta gamma / alpha_old,
 * delta = u'Au): a restart only when rounding explains the sign, i.e.
 * delta > 0 and p'Ap >= -KSP_LOST_REL (|delta| + |t|), or when the
 * recurrence has reached its noise floor (the relative residual at or
 * below KSP_LOST_NOISE, where its terms are rounding themselves). Any other
 * non-positive p'Ap is the matrix's (or the preconditioner's) and a
 * breakdown at that iteration: restarting it only hid an indefinite matrix
 * for 50 restarts (issue 26: dwt_992 with 4 columns stopped at iteration 52
 * with p'Ap = -2e37 instead of at 2, its ratio p'Ap / (|delta| + |t|) -0.43
 * at a residual of 0.04). */
#define KSP_LOST_REL 1e-6
#define KSP_LOST_NOISE 1e-6
int ksp_stop_lost_pap(ksp_stop *st, double pap, double delta, double rel_residual);

/* The ends. Each sets res->reason (and res->iterations where given) and
 * returns the exit class. */
int ksp_fail_maxiter(cg_result *res, int64_t k, double rel, double tol, cls_error *err);
int ksp_fail_cancelled(cg_result *res, int64_t k, cls_error *err);
/* the residual is NaN or Inf: at the start (k < 0) or at iteration k;
 * with_pc names the preconditioner among the suspects */
int ksp_fail_residual(cg_result *res, int64_t k, int with_pc, cls_error *err);
/* a curvature (p'Ap, or u'Au) that is NaN or Inf, at iteration k (1-based) */
int ksp_fail_curvature_nan(cg_result *res, const char *what, double value, int64_t k, int with_pc,
                           cls_error *err);
/* p'Ap <= 0 at iteration k (1-based): not positive definite */
int ksp_fail_indefinite(cg_result *res, double pap, int64_t k, cls_error *err);
/* r'M^-1 r <= 0 at iteration k: the preconditioner is not positive definite */
int ksp_fail_pc_indefinite(cg_result *res, double rz, int64_t k, cls_error *err);
/* p'Ap <= 0 or NaN, whichever it is (the two above, by the value) */
int ksp_fail_curvature(cg_result *res, double pap, int64_t k, int with_pc, cls_error *err);

#endif
