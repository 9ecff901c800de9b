/*
 * cg.c: the (preconditioned) conjugate gradient method.
 *
 * Hestenes and Stiefel, "Methods of Conjugate Gradients for Solving Linear
 * Systems", J. Res. NBS 49 (1952); the preconditioned form as in Saad,
 * "Iterative Methods for Sparse Linear Systems", 2nd ed., Algorithm 9.1, and
 * PETSc's KSPCG (src/ksp/ksp/impls/cg/cg.c).
 *
 * Two loops compute the same iterates in exact arithmetic.
 *
 * cg_fused (the default) is the single-reduction CG of Chronopoulos and
 * Gear, "s-step iterative methods for symmetric linear systems", J. Comput.
 * Appl. Math. 25 (1989), in the kernel-fused form of Rupp, Tillet, Rudolf,
 * Weinbub, Morhammer, Grasser, Juengel and Selberherr, "Pipelined Iterative
 * Solvers with Kernel Fusion for Graphics Processing Units", ACM TOMS 43(2)
 * (2016) (ViennaCL's pipelined CG). All the dot products of an iteration are
 * taken in two passes (the SpMV yields p'Ap and (Ap)'D^-1(Ap); the update
 * yields r'z and r'r) because beta comes from the identity
 *     r_{k+1}'z_{k+1} = alpha_k^2 (Ap_k)' D^-1 (Ap_k) - r_k'z_k,
 * so x, r and p are all updated in one pass. Unlike ViennaCL, alpha and
 * beta are computed on the device (la_cgf, cg_fused.cl) and never travel:
 * the host only enqueues, and reads each iteration's record (residual,
 * alpha, beta, stop reason) without blocking while later iterations run.
 * Convergence and breakdown are tested on the device too, which stops
 * itself, so the iterations queued past the stopping one leave x as it was:
 * the host waits for nothing inside an iteration, and the iteration count is
 * exact. Vector traffic: 9 n (11 n with Jacobi) per iteration, against
 * 8 n for the textbook minimum and 13 n for the classic loop below.
 *
 * cg_classic (cg_options.classic = 1) is the textbook loop: one SpMV, one
 * dot (p'Ap), one fused update that also returns the new r'z and r'r, and
 * one xpay: two host synchronisations per iteration. It stays as the
 * reference the fused loops are tested against, with any preconditioner
 * (cg_options.apply: z = M^-1 r and a separate r'z).
 *
 * A general preconditioner (Chebyshev, incomplete Cholesky, AMG: no
 * diagonal identity for r'z) runs pcg.c's preconditioned single-reduction
 * loop, the same device-side scheme with a different recurrence.
 *
 * Both declare convergence on the true residual ||b - Ax||/||b||, not only
 * the recurrence's: when the recurrence reaches tol, the true residual is
 * computed (with A at full precision, also under --precision mixed) and, if
 * it is still above tol, CG restarts from it (residual replacement, van der
 * Vorst and Ye 2000; for mixed precision this is iterative refinement with
 * CG on the float matrix as the inner solver). A tolerance the precision
 * cannot reach ends as "not converged" with the reason, not as a false
 * success.
 */
#include "../../common/trace.h"
#include "krylov.h"

/* Restarts from the true residual allowed before the solver concludes the
 * tolerance is out of reach. */
#define CG_MAX_REPLACEMENTS 5

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"

const char *cg_reason_name(cg_reason r)
{
    switch (r) {
    case CG_CONVERGED_RTOL:
        return "converged_rtol";
    case CG_CONVERGED_ZERO_RHS:
        return "converged_zero_rhs";
    case CG_DIVERGED_MAXITER:
        return "diverged_maxiter";
    case CG_DIVERGED_INDEFINITE:
        return "diverged_indefinite";
    case CG_DIVERGED_NANORINF:
        return "diverged_nan_or_inf";
    case CG_CANCELLED:
        return "cancelled";
    }
    return "unknown";
}

void cg_result_free(cg_result *res)
{
    if (res) {
        free(res->history);
        res->history = NULL;
        res->nhistory = 0;
    }
}

/* Appends to the residual history, growing geometrically. */
int cg_history_push(cg_result *res, int64_t *cap, double v, cls_error *err)
{
    if (res->nhistory == *cap) {
        int64_t ncap = *cap ? 2 * *cap : 256;
        double *h = realloc(res->history, (size_t)ncap * sizeof *h);
        if (!h)
            return cls_fail(err, CLS_EOTHER, "out of memory for the residual history");
        res->history = h;
        *cap = ncap;
    }
    res->history[res->nhistory++] = v;
    return CLS_OK;
}

static int cg_classic(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
                      const cg_options *opt, cg_result *res, cls_error *err)
{
    const int general = opt->apply != NULL; /* z = M^-1 r by the caller's preconditioner */
    const int jacobi = opt->precond == PRECOND_JACOBI || general;
    const int64_t n = A->nrows;
    la_vec r = {0}, z = {0}, p = {0}, q = {0};
    int64_t cap = 0;
    int rc = CLS_EOTHER;
    double bb, rr, rz, rz_old, pq, alpha, beta, bnorm, rnorm;
    int replacements = 0;
    double last_true = INFINITY;

    CLS_TRY(la_vec_create(la, n, &r, err));
    CLS_TRY(la_vec_create(la, n, &p, err));
    CLS_TRY(la_vec_create(la, n, &q, err));
    if (jacobi)
        CLS_TRY(la_vec_create(la, n, &z, err));
    la_vec *zz = jacobi ? &z : &r; /* z = M^{-1} r; z is r without a preconditioner */

    CLS_TRY(la_dot(la, b, b, &bb, err)); /* bb = b'b */
    bnorm = sqrt(bb);
    if (!isfinite(bnorm)) {
        rc = cls_fail(err, CLS_EBREAKDOWN, "right-hand side contains NaN or Inf");
        res->reason = CG_DIVERGED_NANORINF;
        goto done;
    }
    if (bnorm == 0.0) { /* b = 0: x = 0 is exact */
        CLS_TRY(la_fill(la, 0.0, x, err));
        res->reason = CG_CONVERGED_ZERO_RHS;
        res->converged = 1;
        CLS_TRY(cg_history_push(res, &cap, 0.0, err));
        rc = CLS_OK;
        goto done;
    }

    CLS_TRY(la_residual(la, A, b, x, &q, &r, &rr, err)); /* r = b - A x0; rr = r'r */
    if (general)
        CLS_TRY(opt->apply(opt->apply_ctx, &r, &z, err)); /* z = M^-1 r */
    else if (jacobi)
        CLS_TRY(la_pointwise(la, dinv, &r, &z, err)); /* z = D^{-1} r */
    if (jacobi)
        CLS_TRY(la_dot(la, &r, &z, &rz, err)); /* rz = r'z */
    else
        rz = rr;
    CLS_TRY(la_copy(la, zz, &p, err)); /* p = z */

    rnorm = sqrt(rr);
    res->rel_residual = rnorm / bnorm;
    CLS_TRY(cg_history_push(res, &cap, res->rel_residual, err));
    if (opt->monitor) /* iteration 0: the initial residual (no cancel here) */
        (void)opt->monitor(opt->monitor_ctx, 0, res->rel_residual);

    for (int64_t k = 0;;) { /* k: iterations done */
        if (!isfinite(rnorm) || !isfinite(rz)) {
            res->reason = CG_DIVERGED_NANORINF;
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "the residual became NaN or Inf at iteration %lld: the matrix or "
                          "right-hand side holds values too large or invalid",
                          (long long)k);
            goto done;
        }
        if (res->rel_residual <= opt->tol) { /* ||r||/||b|| <= tol ? */
            /* The recurrence r -= alpha q drifts from b - Ax in finite
             * precision; confirm with the true residual before stopping,
             * and if it is not there yet, restart from it (residual
             * replacement, van der Vorst and Ye 2000). */
            double true_rr;
            CLS_TRY(la_residual(la, A, b, x, &q, &r, &true_rr, err)); /* r = b - A x; r'r */
            double true_rel = sqrt(true_rr) / bnorm;
            if (true_rel <= opt->tol) {
                res->reason = CG_CONVERGED_RTOL;
                res->converged = 1;
                res->rel_residual = true_rel;
                rc = CLS_OK;
                goto done;
            }
            if (replacements >= CG_MAX_REPLACEMENTS || !(true_rel < 0.5 * last_true)) {
                res->reason = CG_DIVERGED_MAXITER;
                rc = cls_fail(err, CLS_ENOTCONV,
                              "not converged: the true residual stays at %.3e > tol %.3e "
                              "(iteration %lld); the tolerance is below the accuracy this "
                              "precision and condition number allow",
                              true_rel, opt->tol, (long long)k);
                res->rel_residual = true_rel;
                goto done;
            }
            replacements++;
            last_true = true_rel;
            if (general)
                CLS_TRY(opt->apply(opt->apply_ctx, &r, &z, err)); /* z = M^-1 r */
            else if (jacobi)
                CLS_TRY(la_pointwise(la, dinv, &r, &z, err)); /* z = D^{-1} r */
            rr = true_rr;
            if (jacobi)
                CLS_TRY(la_dot(la, &r, &z, &rz, err)); /* rz = r'z */
            else
                rz = rr;
            CLS_TRY(la_copy(la, zz, &p, err)); /* p = z: restart */
            rnorm = sqrt(rr);
            res->rel_residual = true_rel;
            continue;
        }
        if (k >= opt->maxiter) {
            res->reason = CG_DIVERGED_MAXITER;
            rc = cls_fail(err, CLS_ENOTCONV,
                          "not converged after %lld iterations: relative residual %.3e > "
                          "tol %.3e",
                          (long long)k, res->rel_residual, opt->tol);
            goto done;
        }

        CLS_TRY(la_spmv(la, A, &p, &q, err));  /* q = A p */
        CLS_TRY(la_dot(la, &p, &q, &pq, err)); /* pq = p'Ap */
        if (!(pq > 0.0)) {
            res->reason = isfinite(pq) ? CG_DIVERGED_INDEFINITE : CG_DIVERGED_NANORINF;
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          isfinite(pq) ? "matrix is not positive definite (p'Ap = %.6g at "
                                         "iteration %lld)"
                                       : "p'Ap is %g at iteration %lld: NaN or Inf in the "
                                         "matrix or the iterates",
                          pq, (long long)k + 1);
            goto done;
        }
        alpha = rz / pq; /* alpha = r'z / p'Ap */
        rz_old = rz;
        if (general) { /* x += alpha p; r -= alpha q; rr = r'r; z = M^-1 r; rz = r'z */
            CLS_TRY(la_cg_update(la, alpha, &p, &q, x, &r, &rr, err));
            CLS_TRY(opt->apply(opt->apply_ctx, &r, &z, err));
            CLS_TRY(la_dot(la, &r, &z, &rz, err));
        } else if (jacobi)                              /* x += alpha p; r -= alpha q; */
            CLS_TRY(la_pcg_update(la, alpha, &p, &q, x, /* z = D^{-1} r; rz = r'z; rr = r'r */
                                  &r, dinv, &z, &rz, &rr, err));
        else {
            CLS_TRY(la_cg_update(la, alpha, &p, &q, x, &r, &rr, err));
            rz = rr; /* x += alpha p; r -= alpha q; rr = r'r */
        }
        beta = rz / rz_old;                      /* beta = r'z (new) / r'z (old) */
        CLS_TRY(la_xpay(la, zz, beta, &p, err)); /* p = z + beta p */

        rnorm = sqrt(rr);
        k++;
        res->iterations = k;
        res->rel_residual = rnorm / bnorm;
        CLS_TRY(cg_history_push(res, &cap, res->rel_residual, err));
        if (opt->monitor && opt->monitor(opt->monitor_ctx, k, res->rel_residual)) {
            res->reason = CG_CANCELLED;
            rc = cls_fail(err, CLS_EOTHER, "cancelled at iteration %lld", (long long)k);
            goto done;
        }
    }

done:
    la_vec_release(&r);
    la_vec_release(&z);
    la_vec_release(&p);
    la_vec_release(&q);
    if (rc == CLS_EOTHER && err && err->code == CLS_OK)
        cls_fail(err, CLS_EOTHER, "cg_solve failed");
    return rc;
}

/* Applied updates after a cancel: the records still queued say which of the
 * queued iterations ran (a stopped device applies none). */
static int64_t cg_fused_applied(la_cgf *w, int64_t kstart)
{
    int64_t applied = kstart + w->seen;
    la_cgf_record rec;
    while (w->seen < w->enq) {
        if (la_cgf_next(w, &rec, NULL))
            break;
        if (rec.stop != LA_CGF_RUN)
            return rec.k;
        applied = rec.k + 1;
    }
    return applied;
}

static int cg_fused(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
                    const cg_options *opt, cg_result *res, cls_error *err)
{
    const int jacobi = opt->precond == PRECOND_JACOBI;
    const int lag = opt->lag > 0 ? (opt->lag < LA_CGF_MAXLAG ? opt->lag : LA_CGF_MAXLAG) : 2;
    la_cgf w;
    int64_t cap = 0, kstart = 0;
    int rc = CLS_EOTHER;
    double bb, rr, rz, bnorm, rel;
    int replacements = 0;
    double last_true = INFINITY;
    la_cgf_record rec;

    const double t0 = cls_now();
    memset(&w, 0, sizeof w);
    cls_trace("cg: start");
    CLS_TRY(la_dot(la, b, b, &bb, err)); /* bb = b'b */
    cls_trace("cg: b'b");
    bnorm = sqrt(bb);
    if (!isfinite(bnorm)) {
        rc = cls_fail(err, CLS_EBREAKDOWN, "right-hand side contains NaN or Inf");
        res->reason = CG_DIVERGED_NANORINF;
        goto done;
    }
    if (bnorm == 0.0) { /* b = 0: x = 0 is exact */
        CLS_TRY(la_fill(la, 0.0, x, err));
        res->reason = CG_CONVERGED_ZERO_RHS;
        res->converged = 1;
        CLS_TRY(cg_history_push(res, &cap, 0.0, err));
        rc = CLS_OK;
        goto done;
    }
    /* the device stops when r'r <= tol^2 b'b */
    CLS_TRY(la_cgf_create(la, A, b, x, jacobi ? dinv : NULL, opt->tol * opt->tol * bb, &w, err));
    cls_trace("cg: workspace");
    CLS_TRY(la_cgf_start(&w, 0, &rr, &rz, err)); /* r = b - A x0; z = D^{-1} r; p = z */
    cls_trace("cg: initial residual");
    if (!isfinite(rr) || !isfinite(rz)) { /* rr = r'r; rz = r'z */
        res->reason = CG_DIVERGED_NANORINF;
        rc = cls_fail(err, CLS_EBREAKDOWN,
                      "the initial residual is NaN or Inf: the matrix or the initial guess "
                      "holds values too large or invalid");
        goto done;
    }
    res->rel_residual = sqrt(rr) / bnorm;
    CLS_TRY(cg_history_push(res, &cap, res->rel_residual, err));
    if (opt->monitor) /* iteration 0: the initial residual (no cancel here) */
        (void)opt->monitor(opt->monitor_ctx, 0, res->rel_residual);
    res->start_s = cls_now() - t0;

    for (;;) {
        /* keep lag iterations queued beyond the record awaited, never
         * beyond maxiter updates. Each one is, on the device:
         *   q = A p;  pq = p'q;  qq = q'D^{-1}q                (SpMV)
         *   rr <= tol^2 bb ? stop;  pq <= 0 ? stop;
         *   alpha = rz / pq;  beta = (alpha^2 qq - rz) / rz   (one group)
         *   x += alpha p;  r -= alpha q;  z = D^{-1} r;  p = z + beta p;
         *   rz = r'z;  rr = r'r                                (update) */
        while (w.enq - w.seen <= lag && kstart + w.enq < opt->maxiter)
            CLS_TRY(la_cgf_enqueue(&w, err));
        if (w.seen == w.enq) {
            /* maxiter updates applied and every record read: x_maxiter */
            CLS_TRY(la_cgf_last(&w, &rr, &rz, err)); /* rr = r'r of the last update */
            res->iterations = opt->maxiter;
            rel = sqrt(rr) / bnorm;
            res->rel_residual = rel;
            if (opt->maxiter > kstart) {
                CLS_TRY(cg_history_push(res, &cap, rel, err));
                if (opt->monitor && opt->monitor(opt->monitor_ctx, opt->maxiter, rel)) {
                    res->reason = CG_CANCELLED;
                    rc = cls_fail(err, CLS_EOTHER, "cancelled at iteration %lld",
                                  (long long)opt->maxiter);
                    goto done;
                }
            }
            if (!isfinite(rr)) {
                rec.stop = LA_CGF_NANORINF;
                rec.k = opt->maxiter;
                rec.pq = rec.rr = rr;
                goto breakdown;
            }
            if (rel <= opt->tol) {
                rec.k = opt->maxiter;
                goto confirm;
            }
            res->reason = CG_DIVERGED_MAXITER;
            rc = cls_fail(err, CLS_ENOTCONV,
                          "not converged after %lld iterations: relative residual %.3e > "
                          "tol %.3e",
                          (long long)opt->maxiter, rel, opt->tol);
            goto done;
        }
        CLS_TRY(la_cgf_next(&w, &rec, err)); /* record k: rr, rz, pq, alpha, beta */
        rel = sqrt(rec.rr) / bnorm;          /* ||r_k|| / ||b|| */
        if (rec.k > kstart) {                /* (record kstart is the start) */
            res->iterations = rec.k;
            res->rel_residual = rel;
            CLS_TRY(cg_history_push(res, &cap, rel, err));
            if (opt->monitor && opt->monitor(opt->monitor_ctx, rec.k, rel)) {
                res->reason = CG_CANCELLED;
                res->iterations = cg_fused_applied(&w, kstart);
                rc = cls_fail(err, CLS_EOTHER, "cancelled at iteration %lld", (long long)rec.k);
                goto done;
            }
        }
        if (rec.stop == LA_CGF_RUN)
            continue;
        if (rec.stop != LA_CGF_CONVERGED)
            goto breakdown;

    confirm:
        /* The recurrence r -= alpha q drifts from b - Ax in finite
         * precision; confirm with the true residual before stopping, and if
         * it is not there yet, restart from it (residual replacement). */
        {
            const double tc = cls_now();
            CLS_TRY(la_cgf_drain(&w, err));                  /* queued iterations were no-ops */
            CLS_TRY(la_cgf_start(&w, rec.k, &rr, &rz, err)); /* r = b - A x; z = D^-1 r; p = z */
            res->confirm_s += cls_now() - tc;
        }
        {
            double true_rel = sqrt(rr) / bnorm;
            res->rel_residual = true_rel;
            if (true_rel <= opt->tol) {
                res->reason = CG_CONVERGED_RTOL;
                res->converged = 1;
                rc = CLS_OK;
                goto done;
            }
            if (replacements >= CG_MAX_REPLACEMENTS || !(true_rel < 0.5 * last_true)) {
                res->reason = CG_DIVERGED_MAXITER;
                rc = cls_fail(err, CLS_ENOTCONV,
                              "not converged: the true residual stays at %.3e > tol %.3e "
                              "(iteration %lld); the tolerance is below the accuracy this "
                              "precision and condition number allow",
                              true_rel, opt->tol, (long long)rec.k);
                goto done;
            }
            replacements++;
            last_true = true_rel;
            kstart = rec.k; /* restarted: p = z */
            if (kstart >= opt->maxiter) {
                res->reason = CG_DIVERGED_MAXITER;
                rc = cls_fail(err, CLS_ENOTCONV,
                              "not converged after %lld iterations: relative residual %.3e > "
                              "tol %.3e",
                              (long long)kstart, true_rel, opt->tol);
                goto done;
            }
        }
        continue;

    breakdown:
        CLS_TRY(la_cgf_drain(&w, err));
        res->iterations = rec.k;
        if (rec.stop == LA_CGF_INDEFINITE) {
            res->reason = CG_DIVERGED_INDEFINITE;
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "matrix is not positive definite (p'Ap = %.6g at iteration %lld)", rec.pq,
                          (long long)rec.k + 1);
        } else {
            res->reason = CG_DIVERGED_NANORINF;
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "the residual became NaN or Inf at iteration %lld: the matrix or "
                          "right-hand side holds values too large or invalid",
                          (long long)rec.k);
        }
        goto done;
    }

done:
    la_cgf_release(&w);
    if (rc == CLS_EOTHER && err && err->code == CLS_OK)
        cls_fail(err, CLS_EOTHER, "cg_solve failed");
    return rc;
}

int cg_solve(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
             const cg_options *opt, cg_result *res, cls_error *err)
{
    memset(res, 0, sizeof *res);
    if (opt->precond == PRECOND_JACOBI && !dinv && !opt->apply)
        return cls_fail(err, CLS_EOTHER, "cg_solve: Jacobi asked for without a diagonal");
    if (opt->precond != PRECOND_NONE && opt->precond != PRECOND_JACOBI && !opt->apply)
        return cls_fail(err, CLS_EOTHER, "cg_solve: a preconditioner asked for without its apply");
    if (opt->classic || A->nrows != A->ncols)
        return cg_classic(la, A, b, x, dinv, opt, res, err);
    if (opt->apply)
        return pcg_fused(la, A, b, x, opt, res, err);
    return cg_fused(la, A, b, x, dinv, opt, res, err);
}
