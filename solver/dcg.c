/*
 * dcg.c: the (preconditioned) conjugate gradient method over a partitioned
 * system: cg.c's algorithm, line for line, with every vector split across
 * ranks and devices and every dot product a local sum then an MPI_Allreduce.
 *
 * Hestenes and Stiefel, J. Res. NBS 49 (1952); Saad, "Iterative Methods for
 * Sparse Linear Systems", 2nd ed., Algorithm 9.1; PETSc's KSPCG. The SpMV
 * overlaps its halo exchange with the interior rows (dvec_spmv).
 *
 * One iteration is the single-reduction CG of cg.c's fused loop
 * (Chronopoulos and Gear 1989; the identity
 *     r_{k+1}'W r_{k+1} = alpha_k^2 (Ap_k)'W(Ap_k) - r_k'W r_k,  W = D^-1 or I):
 *   q = A p                       (one SpMV, one halo exchange)
 *   p'q, q'Wq, r'r                (one pass, dcg1_dots; compensated sums)
 *   ONE MPI_Allreduce of those three (with the failure count and cancel flag)
 *   alpha, beta, the stopping and breakdown tests: on the host, from reduced
 *   values only, so identically on every rank
 *   x += alpha p; r -= alpha q; p = W r + beta p   (one pass, dcg1_update)
 * r'r of r_k arrives with p_k'Ap_k, so the test "converged at k" comes after
 * the SpMV of iteration k + 1 has run (that SpMV is then discarded), and
 * the history entry of iteration k is written then too. A cancel requested
 * by the monitor after iteration k's entry travels in the next reduction and
 * stops every rank there. Convergence is confirmed on the true residual with
 * residual replacement (van der Vorst and Ye 2000), as in cg.c.
 * (Until 2026-11 this loop was the two-reduction Hestenes-Stiefel one.)
 */
#include "dcg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DCG_MAX_REPLACEMENTS 5

int dcg_rhs_norm(dsys *s, const dvec *b, dvec *x, cg_result *res, int64_t *cap, double *bnorm,
                 int *zero_rhs, cls_error *err)
{
    dsum ls;
    double v[4];
    const dvec *bv[1] = {b};
    *zero_rhs = 0;
    dvec_dots_local(s, 1, bv, bv, &ls);
    int rc = dsys_allreduce(s, &ls, v, 0, NULL, err);  /* b'b, one reduction */
    if (rc)
        return rc;
    *bnorm = sqrt(v[0]);
    if (!isfinite(*bnorm)) {
        res->reason = CG_DIVERGED_NANORINF;
        return cls_fail(err, CLS_EBREAKDOWN, "right-hand side contains NaN or Inf");
    }
    if (*bnorm == 0.0) {
        dvec_fill(s, 0.0, x);
        res->reason = CG_CONVERGED_ZERO_RHS;
        res->converged = 1;
        *zero_rhs = 1;
        return cg_history_push(res, cap, 0.0, err);
    }
    return CLS_OK;
}

int dcg_solve(dsys *s, const dvec *b, dvec *x, const dvec *dinv, const cg_options *opt,
              cg_result *res, cls_error *err)
{
    const int jacobi = opt->precond == PRECOND_JACOBI;
    dvec r = {0}, p = {0}, q = {0};
    int64_t cap = 0;
    int rc = CLS_EOTHER;
    int cancel = 0, want_cancel = 0;
    dsum ls;
    double v[4], rr, rz, pq, qq, alpha, beta, bnorm;
    int replacements = 0;
    double last_true = INFINITY;
    const dvec *W = jacobi ? dinv : NULL;

    memset(res, 0, sizeof *res);
    if (jacobi && !dinv)
        return cls_fail(err, CLS_EOTHER, "dcg_solve: Jacobi asked for without a diagonal");
    CLS_TRY(dvec_create(s, 0, &r, err));
    CLS_TRY(dvec_create(s, 1, &p, err));                 /* p is the x of an SpMV */
    CLS_TRY(dvec_create(s, 0, &q, err));

    int zero_rhs;
    CLS_TRY(dcg_rhs_norm(s, b, x, res, &cap, &bnorm, &zero_rhs, err)); /* bnorm = ||b|| */
    if (zero_rhs) {                                      /* b = 0: x = 0 is exact */
        rc = CLS_OK;
        goto done;
    }

    /* (re)start: r = b - A x; p = W r; rr = r'r; rz = r'p */
#define DCG_START(cin)                                                                 \
    do {                                                                               \
        dvec_spmv(s, x, &q);                                                           \
        dvec_copy(s, b, &r);                                                           \
        dvec_axpy(s, -1.0, &q, &r);                                                    \
        if (jacobi)                                                                    \
            dvec_pointwise(s, dinv, &r, &p);                                           \
        else                                                                           \
            dvec_copy(s, &r, &p);                                                      \
        const dvec *xs_[2] = {&r, &r}, *ys_[2] = {&r, &p};                            \
        dvec_dots_local(s, jacobi ? 2 : 1, xs_, ys_, &ls);                             \
        CLS_TRY(dsys_allreduce(s, &ls, v, (cin), &cancel, err));                       \
        rr = v[0];                                                                     \
        rz = jacobi ? v[1] : rr;                                                       \
    } while (0)

    DCG_START(0);
    res->rel_residual = sqrt(rr) / bnorm;
    CLS_TRY(cg_history_push(res, &cap, res->rel_residual, err));

    int64_t k = 0, kstart = 0; /* k: updates applied; kstart: at the last (re)start */
    for (;;) {
        if (!isfinite(rr) || !isfinite(rz)) {
            res->reason = CG_DIVERGED_NANORINF;
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "the residual became NaN or Inf at iteration %lld: the matrix or "
                          "right-hand side holds values too large or invalid",
                          (long long)k);
            goto done;
        }
        if (res->rel_residual <= opt->tol) {             /* ||r||/||b|| <= tol ? */
            /* confirm on the true residual; restart from it if the
             * recurrence has drifted (residual replacement) */
            DCG_START(want_cancel);
            double true_rel = sqrt(rr) / bnorm;
            if (cancel)
                goto cancelled;
            res->rel_residual = true_rel;
            if (true_rel <= opt->tol) {
                res->reason = CG_CONVERGED_RTOL;
                res->converged = 1;
                rc = CLS_OK;
                goto done;
            }
            if (replacements >= DCG_MAX_REPLACEMENTS || !(true_rel < 0.5 * last_true)) {
                res->reason = CG_DIVERGED_MAXITER;
                rc = cls_fail(err, CLS_ENOTCONV,
                              "not converged: the true residual stays at %.3e > tol %.3e "
                              "(iteration %lld); the tolerance is below the accuracy this "
                              "precision and condition number allow",
                              true_rel, opt->tol, (long long)k);
                goto done;
            }
            replacements++;
            last_true = true_rel;
            kstart = k;
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

        dvec_spmv(s, &p, &q);                            /* q = A p */
        dvec_dcg1_dots_local(s, &p, &q, &r, W, &ls);     /* p'q, q'Wq, r'r: one pass */
        CLS_TRY(dsys_allreduce(s, &ls, v, want_cancel, &cancel, err)); /* the one reduction */
        if (cancel)
            goto cancelled;
        pq = v[0];
        qq = v[1];
        if (k > kstart) {                                /* r_k'r_k: iteration k's entry */
            rr = v[2];
            rz = jacobi ? v[3] : rr; /* fresh r'z: the identity only gives beta */
            res->rel_residual = sqrt(rr) / bnorm;
            CLS_TRY(cg_history_push(res, &cap, res->rel_residual, err));
            if (s->rank == 0 && opt->monitor &&          /* rank 0 asks; the next */
                opt->monitor(opt->monitor_ctx, k, res->rel_residual)) /* reduction tells all */
                want_cancel = 1;
            if (!isfinite(rr) || res->rel_residual <= opt->tol || k >= opt->maxiter)
                continue;                                /* decided above; q is discarded */
        }
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
        alpha = rz / pq;                                 /* alpha = r'z / p'Ap */
        double rz_new = alpha * alpha * qq - rz;         /* r'z after the update (identity) */
        beta = rz_new / rz;
        rz = rz_new;
        dvec_dcg1_update(s, alpha, beta, &p, &q, x, &r, W); /* x, r, p in one pass */
        k++;
        res->iterations = k;
    }

cancelled:
    res->reason = CG_CANCELLED;
    rc = cls_fail(err, CLS_EOTHER, "cancelled at iteration %lld", (long long)res->iterations);

done:
#undef DCG_START
    dvec_release(&r);
    dvec_release(&p);
    dvec_release(&q);
    if (rc == CLS_EOTHER && err && err->code == CLS_OK)
        cls_fail(err, CLS_EOTHER, "dcg_solve failed");
    return rc;
}
