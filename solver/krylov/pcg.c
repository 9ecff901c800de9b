/*
 * pcg.c: the preconditioned single-reduction CG on one device, for a
 * general symmetric positive-definite preconditioner M (Chebyshev,
 * incomplete Cholesky, AMG; Jacobi keeps cg.c's diagonal fast path).
 *
 * Chronopoulos and Gear, "s-step iterative methods for symmetric linear
 * systems", J. Comput. Appl. Math. 25 (1989); the preconditioned form as in
 * Saad, "Iterative Methods for Sparse Linear Systems", 2nd ed., Alg. 9.1
 * with the inner products rearranged so an iteration needs ONE reduction
 * (PETSc's KSPCG with -ksp_cg_single_reduction; Ghysels and Vanroose,
 * Parallel Computing 40 (2014), Alg. 2). With u = M^-1 r, w = A u:
 *
 *   gamma_k = r_k'u_k;  delta_k = u_k'w_k;  rr_k = r_k'r_k    (one reduction)
 *   beta_k  = gamma_k / gamma_{k-1}                            (0 at a start)
 *   p_k'Ap_k = delta_k - beta_k gamma_k / alpha_{k-1}          (delta_k at a start)
 *   alpha_k = gamma_k / p_k'Ap_k
 *   p_k = u_k + beta_k p_{k-1};  s_k = w_k + beta_k s_{k-1}    (s = A p)
 *   x_{k+1} = x_k + alpha_k p_k;  r_{k+1} = r_k - alpha_k s_k
 *   u_{k+1} = M^-1 r_{k+1};  w_{k+1} = A u_{k+1}
 *
 * As in cg.c's fused loop, the scalars and the stopping test run on the
 * device (pcgf_scalars) and the host only enqueues: an iteration is the
 * SpMV (its epilogue yields u'w), the scalars, the update, the
 * preconditioner's kernels (opt->apply) and the sums r'u, r'r; the host
 * reads each iteration's record without blocking while `lag` later ones are
 * queued, and a stopped device turns the queued ones into no-ops. The stop
 * is confirmed on the true residual b - Ax and the method restarts from it
 * when the recurrence has drifted (residual replacement, van der Vorst and
 * Ye 2000), as cg.c does.
 *
 * p'Ap from the recurrence is a difference of two sums; on ill-conditioned
 * systems rounding can take its sign before the iterates go wrong (as in
 * pipelined CG, pipecg.c). A non-positive value there is taken as a loss of
 * the recurrence and the method restarts from b - Ax, where p'Ap = u'Au is
 * computed directly; only a non-positive value right after a (re)start is
 * reported as an indefinite matrix. gamma = r'M^-1 r <= 0 means M is not
 * positive definite: reported as such.
 */
#include "../../common/trace.h"
#include "krylov.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"
#include "../../kernels/la_pcm.h"

#define PCG_MAX_REPLACEMENTS 5 /* restarts for accuracy (cg.c's rule) */
#define PCG_MAX_LOST 50        /* restarts after the recurrence's p'Ap lost its sign */

/* one iteration: SpMV, scalars, update (la_pcm_enqueue), u = M^-1 r, sums */
static int pcg_enqueue(la_pcm *w, const cg_options *opt, cls_error *err)
{
    int rc;
    if ((rc = la_pcm_enqueue(w, err)) || (rc = opt->apply(opt->apply_ctx, &w->r, &w->u, err)))
        return rc;
    return la_pcm_dots(w, err);
}

/* (re)start at k: r = b - Ax, u = M^-1 r, then r'r and r'u (blocking) */
static int pcg_start(la_pcm *w, const cg_options *opt, int64_t k, double *rr, double *ru,
                     cls_error *err)
{
    int rc;
    if ((rc = la_pcm_restart(w, k, err)) || (rc = opt->apply(opt->apply_ctx, &w->r, &w->u, err)) ||
        (rc = la_pcm_dots(w, err)))
        return rc;
    return la_pcm_last(w, rr, ru, err);
}

/* updates applied after a cancel (the records still queued say which ran) */
static int64_t pcg_applied(la_pcm *w, int64_t kstart)
{
    int64_t applied = kstart + w->seen;
    la_cgf_record rec;
    while (w->seen < w->enq) {
        if (la_pcm_next(w, &rec, NULL))
            break;
        if (rec.stop != LA_PCM_RUN)
            return rec.k;
        applied = rec.k + 1;
    }
    return applied;
}

int pcg_fused(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const cg_options *opt,
              cg_result *res, cls_error *err)
{
    const int lag = opt->lag > 0 ? (opt->lag < LA_CGF_MAXLAG ? opt->lag : LA_CGF_MAXLAG) : 2;
    la_pcm w;
    int64_t cap = 0, kstart = 0;
    int rc = CLS_EOTHER, replacements = 0, lost = 0;
    double bb, rr, ru, bnorm, rel, last_true = INFINITY;
    la_cgf_record rec;

    const double t0 = cls_now();
    memset(&w, 0, sizeof w);
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
    /* the device stops when r'r <= tol^2 b'b */
    CLS_TRY(la_pcm_create(la, A, NULL, 0, b, x, 1, opt->tol * opt->tol * bb, &w, err));
    CLS_TRY(pcg_start(&w, opt, 0, &rr, &ru, err)); /* r = b - A x0; u = M^-1 r */
    cls_trace("pcg: initial residual");
    if (!isfinite(rr) || !isfinite(ru)) {
        res->reason = CG_DIVERGED_NANORINF;
        rc = cls_fail(err, CLS_EBREAKDOWN,
                      "the initial residual is NaN or Inf: the matrix, the initial guess or "
                      "the preconditioner holds values too large or invalid");
        goto done;
    }
    res->rel_residual = sqrt(rr) / bnorm;
    CLS_TRY(cg_history_push(res, &cap, res->rel_residual, err));
    if (opt->monitor) /* iteration 0: the initial residual (no cancel here) */
        (void)opt->monitor(opt->monitor_ctx, 0, res->rel_residual);
    res->start_s = cls_now() - t0;

    for (;;) {
        /* keep lag iterations queued beyond the record awaited, never
         * beyond maxiter updates */
        while (w.enq - w.seen <= lag && kstart + w.enq < opt->maxiter)
            CLS_TRY(pcg_enqueue(&w, opt, err));
        if (w.seen == w.enq) {
            /* maxiter updates applied and every record read: x_maxiter */
            CLS_TRY(la_pcm_last(&w, &rr, &ru, err)); /* r'r of the last update */
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
                rec.stop = LA_PCM_NANORINF;
                rec.k = opt->maxiter;
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
        CLS_TRY(la_pcm_next(&w, &rec, err)); /* record k: rr, gamma, p'Ap, alpha, beta */
        rel = sqrt(rec.rr) / bnorm;          /* ||r_k|| / ||b|| */
        if (rec.k > kstart) {
            res->iterations = rec.k;
            res->rel_residual = rel;
            CLS_TRY(cg_history_push(res, &cap, rel, err));
            if (opt->monitor && opt->monitor(opt->monitor_ctx, rec.k, rel)) {
                res->reason = CG_CANCELLED;
                res->iterations = pcg_applied(&w, kstart);
                rc = cls_fail(err, CLS_EOTHER, "cancelled at iteration %lld", (long long)rec.k);
                goto done;
            }
        }
        if (rec.stop == LA_PCM_RUN)
            continue;
        if (rec.stop == LA_PCM_INDEFINITE && rec.beta != 0.0 && lost < PCG_MAX_LOST) {
            /* p'Ap of the recurrence lost its sign: restart from b - Ax */
            lost++;
            CLS_TRY(la_pcm_drain(&w, err));
            CLS_TRY(pcg_start(&w, opt, rec.k, &rr, &ru, err));
            kstart = rec.k;
            continue;
        }
        if (rec.stop != LA_PCM_CONVERGED)
            goto breakdown;

    confirm:
        /* the recurrence drifts from b - Ax in finite precision: confirm
         * on the true residual, restart from it if it is not there yet */
        {
            const double tc = cls_now();
            CLS_TRY(la_pcm_drain(&w, err)); /* queued iterations were no-ops */
            CLS_TRY(pcg_start(&w, opt, rec.k, &rr, &ru, err));
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
            if (replacements >= PCG_MAX_REPLACEMENTS || !(true_rel < 0.5 * last_true)) {
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
            kstart = rec.k;
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
        CLS_TRY(la_pcm_drain(&w, err));
        res->iterations = rec.k;
        if (rec.stop == LA_PCM_INDEFINITE) {
            res->reason = CG_DIVERGED_INDEFINITE;
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "matrix is not positive definite (p'Ap = %.6g at iteration %lld)", rec.pq,
                          (long long)rec.k + 1);
        } else if (rec.stop == LA_PCM_PC_INDEFINITE) {
            res->reason = CG_DIVERGED_INDEFINITE;
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "r'M^-1 r = %.6g at iteration %lld: the preconditioner is not "
                          "positive definite on this matrix (the matrix itself may not be)",
                          rec.rz, (long long)rec.k);
        } else {
            res->reason = CG_DIVERGED_NANORINF;
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "the residual became NaN or Inf at iteration %lld: the matrix, the "
                          "right-hand side or the preconditioner holds values too large or "
                          "invalid",
                          (long long)rec.k);
        }
        goto done;
    }

done:
    la_pcm_release(&w);
    if (rc == CLS_EOTHER && err && err->code == CLS_OK)
        cls_fail(err, CLS_EOTHER, "pcg_fused failed");
    return rc;
}
