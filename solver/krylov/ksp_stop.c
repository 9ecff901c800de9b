/*
 * ksp_stop.c: the stopping, confirm/restart and failure rules of every
 * Krylov method (design in ksp_stop.h).
 *
 * Why confirm at all: the recurrence r_{k+1} = r_k - alpha_k A p_k drifts
 * from b - A x_k in finite precision (Greenbaum, "Iterative Methods for
 * Solving Linear Systems", SIAM 1997, ch. 7), so a stop on the recurrence
 * alone can claim an accuracy x does not have. Why restart rather than
 * stop: a restart from the true residual (van der Vorst and Ye, SIAM J.
 * Sci. Comput. 22 (2000)) usually reaches the tolerance in a few more
 * iterations; under --precision mixed it is iterative refinement with CG on
 * the float matrix as the inner solver. Why give up: a tolerance below what
 * the precision and condition number allow would restart for ever, so a
 * restart must halve the true residual of the last one, at most
 * KSP_MAX_REPLACEMENTS times, and the end says why.
 */
#include "ksp_stop.h"
#include "../../kernels/cpu/cpu_ws.h"

#include <math.h>

void ksp_stop_init(ksp_stop *st, double tol)
{
    st->tol = tol;
    st->replacements = 0;
    st->last_true = INFINITY;
    st->lost = 0;
}

int ksp_stop_rhs(double bnorm, cg_result *res, int64_t *cap, int *zero, cls_error *err)
{
    *zero = 0;
    if (!isfinite(bnorm)) {
        res->reason = CG_DIVERGED_NANORINF;
        return cls_fail(err, CLS_EBREAKDOWN, "right-hand side contains NaN or Inf");
    }
    if (bnorm == 0.0) { /* b = 0: x = 0 is exact */
        res->reason = CG_CONVERGED_ZERO_RHS;
        res->converged = 1;
        *zero = 1;
        return ksp_history_push(res, cap, 0.0, err);
    }
    return CLS_OK;
}

int ksp_stop_rhs_la(la_ctx *la, const la_vec *b, la_vec *x, int native, cg_result *res,
                    int64_t *cap, double *bb, int *zero, cls_error *err)
{
    /* bb = b'b; natively, so that the native loops launch no kernel */
    int rc = native ? cpu_ws_dot(la, b, b, bb, err) : la_dot(la, b, b, bb, err);
    if (rc || (rc = ksp_stop_rhs(sqrt(*bb), res, cap, zero, err)))
        return rc;
    return *zero ? la_fill(la, 0.0, x, err) : CLS_OK; /* b = 0: x = 0 is exact */
}

int ksp_stop_confirm(ksp_stop *st, double true_rel, int64_t k, cg_result *res, cls_error *err)
{
    res->rel_residual = true_rel;
    if (true_rel <= st->tol) {
        res->reason = CG_CONVERGED_RTOL;
        res->converged = 1;
        return CLS_OK;
    }
    if (st->replacements >= KSP_MAX_REPLACEMENTS || !(true_rel < 0.5 * st->last_true)) {
        res->reason = CG_DIVERGED_MAXITER;
        return cls_fail(err, CLS_ENOTCONV,
                        "not converged: the true residual stays at %.3e > tol %.3e (iteration "
                        "%lld); the tolerance is below the accuracy this precision and condition "
                        "number allow",
                        true_rel, st->tol, (long long)k);
    }
    st->replacements++;
    st->last_true = true_rel;
    return KSP_RESTART;
}

int ksp_stop_lost(ksp_stop *st)
{
    if (st->lost >= KSP_MAX_LOST)
        return 0;
    st->lost++;
    return 1;
}

int ksp_stop_lost_pap(ksp_stop *st, double pap, double delta, double rel_residual)
{
    const double scale = fabs(delta) + fabs(delta - pap); /* |delta| + |t| */
    if (!isfinite(pap))
        return 0;
    /* the recurrence at its noise floor (a pipelined or single-reduction
     * loop near convergence: LFAT5 at 1e-10 read p'Ap = -1.1e-16 from two
     * terms of 1e-16), or a sign one rounding of its two terms explains */
    int noise = rel_residual <= KSP_LOST_NOISE;
    int rounding = delta > 0.0 && pap >= -KSP_LOST_REL * scale;
    if (!noise && !rounding)
        return 0; /* beyond rounding: the operator is not positive definite */
    return ksp_stop_lost(st);
}

int ksp_fail_maxiter(cg_result *res, int64_t k, double rel, double tol, cls_error *err)
{
    res->reason = CG_DIVERGED_MAXITER;
    res->iterations = k;
    return cls_fail(err, CLS_ENOTCONV,
                    "not converged after %lld iterations: relative residual %.3e > tol %.3e",
                    (long long)k, rel, tol);
}

int ksp_fail_cancelled(cg_result *res, int64_t k, cls_error *err)
{
    res->reason = CG_CANCELLED;
    return cls_fail(err, CLS_EOTHER, "cancelled at iteration %lld", (long long)k);
}

int ksp_fail_residual(cg_result *res, int64_t k, int with_pc, cls_error *err)
{
    res->reason = CG_DIVERGED_NANORINF;
    const char *who = with_pc ? "the matrix, the right-hand side or the preconditioner"
                              : "the matrix or right-hand side";
    if (k < 0)
        return cls_fail(err, CLS_EBREAKDOWN,
                        "the initial residual is NaN or Inf: %s holds values too large or "
                        "invalid",
                        with_pc ? "the matrix, the initial guess or the preconditioner"
                                : "the matrix or the initial guess");
    return cls_fail(err, CLS_EBREAKDOWN,
                    "the residual became NaN or Inf at iteration %lld: %s holds values too "
                    "large or invalid",
                    (long long)k, who);
}

int ksp_fail_curvature_nan(cg_result *res, const char *what, double value, int64_t k, int with_pc,
                           cls_error *err)
{
    res->reason = CG_DIVERGED_NANORINF;
    return cls_fail(err, CLS_EBREAKDOWN, "%s is %g at iteration %lld: NaN or Inf in %s", what,
                    value, (long long)k,
                    with_pc ? "the matrix, the preconditioner or the iterates"
                            : "the matrix or the iterates");
}

int ksp_fail_indefinite(cg_result *res, double pap, int64_t k, cls_error *err)
{
    res->reason = CG_DIVERGED_INDEFINITE;
    return cls_fail(err, CLS_EBREAKDOWN,
                    "matrix is not positive definite (p'Ap = %.6g at iteration %lld)", pap,
                    (long long)k);
}

int ksp_fail_pc_indefinite(cg_result *res, double rz, int64_t k, cls_error *err)
{
    res->reason = CG_DIVERGED_INDEFINITE;
    return cls_fail(err, CLS_EBREAKDOWN,
                    "r'M^-1 r = %.6g at iteration %lld: the preconditioner is not positive "
                    "definite on this matrix (the matrix itself may not be)",
                    rz, (long long)k);
}

int ksp_fail_curvature(cg_result *res, double pap, int64_t k, int with_pc, cls_error *err)
{
    return isfinite(pap) ? ksp_fail_indefinite(res, pap, k, err)
                         : ksp_fail_curvature_nan(res, "p'Ap", pap, k, with_pc, err);
}
