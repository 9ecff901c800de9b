/*
 * cg_ref.c: the textbook preconditioned conjugate gradient method, the
 * reference twin the fused loops (cg.c, pcg.c, dcg.c) are tested against.
 *
 * Hestenes and Stiefel, J. Res. NBS 49 (1952); Saad, "Iterative Methods
 * for Sparse Linear Systems", 2nd ed., Algorithm 9.1; PETSc's KSPCG
 * (src/ksp/ksp/impls/cg/cg.c). One SpMV, one dot (p'Ap), one fused update
 * that also returns the new r'r (and with Jacobi r'z), one xpay: two host
 * synchronisations per iteration, every scalar on the host. Any
 * preconditioner: the diagonal (dinv), a general one (opt->apply: z = M^-1 r
 * and a separate r'z), or none (z = r). The stop is ksp_stop.h's like every
 * method's: the recurrence's ||r||/||b|| <= tol confirmed on b - Ax,
 * restarting from it while that pays.
 */
#include <math.h>
#include <string.h>

#include "krylov.h"
#include "ksp_stop.h"

int cg_ref_solve(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
                 const cg_options *opt, cg_result *res, cls_error *err)
{
    const int general = opt->apply != NULL; /* z = M^-1 r by the caller's preconditioner */
    const int jacobi = opt->precond == PRECOND_JACOBI || general;
    const int64_t n = A->nrows;
    la_vec r = {0}, z = {0}, p = {0}, q = {0};
    int64_t cap = 0;
    int rc = CLS_EOTHER, zero;
    double bb, rr, rz, rz_old, pq, alpha, beta, bnorm, rnorm;
    ksp_stop st;

    ksp_stop_init(&st, opt->tol);
    CLS_TRY(la_vec_create(la, n, &r, err));
    CLS_TRY(la_vec_create(la, n, &p, err));
    CLS_TRY(la_vec_create(la, n, &q, err));
    if (jacobi)
        CLS_TRY(la_vec_create(la, n, &z, err));
    la_vec *zz = jacobi ? &z : &r; /* z = M^{-1} r; z is r without a preconditioner */

    CLS_TRY(ksp_stop_rhs_la(la, b, x, 0, res, &cap, &bb, &zero, err)); /* bb = b'b */
    bnorm = sqrt(bb);
    if (zero) { /* b = 0: x = 0 is exact */
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
    CLS_TRY(ksp_history_push(res, &cap, res->rel_residual, err));
    if (opt->monitor) /* iteration 0: the initial residual (no cancel here) */
        (void)opt->monitor(opt->monitor_ctx, 0, res->rel_residual);

    for (int64_t k = 0;;) { /* k: iterations done */
        if (!isfinite(rnorm) || !isfinite(rz)) {
            rc = ksp_fail_residual(res, k, 0, err);
            goto done;
        }
        if (res->rel_residual <= opt->tol) { /* ||r||/||b|| <= tol ? */
            double true_rr;
            CLS_TRY(la_residual(la, A, b, x, &q, &r, &true_rr, err)); /* r = b - A x; r'r */
            if ((rc = ksp_stop_confirm(&st, sqrt(true_rr) / bnorm, k, res, err)) != KSP_RESTART)
                goto done; /* converged, or out of reach */
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
            continue;
        }
        if (k >= opt->maxiter) {
            rc = ksp_fail_maxiter(res, k, res->rel_residual, opt->tol, err);
            goto done;
        }

        CLS_TRY(la_spmv(la, A, &p, &q, err));  /* q = A p */
        CLS_TRY(la_dot(la, &p, &q, &pq, err)); /* pq = p'Ap */
        if (!(pq > 0.0)) {
            rc = ksp_fail_curvature(res, pq, k + 1, 0, err);
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
        CLS_TRY(ksp_history_push(res, &cap, res->rel_residual, err));
        if (opt->monitor && opt->monitor(opt->monitor_ctx, k, res->rel_residual)) {
            rc = ksp_fail_cancelled(res, k, err);
            goto done;
        }
    }

done:
    la_vec_release(&r);
    la_vec_release(&z);
    la_vec_release(&p);
    la_vec_release(&q);
    if (rc == CLS_EOTHER && err && err->code == CLS_OK)
        cls_fail(err, CLS_EOTHER, "cg_ref_solve failed");
    return rc;
}
