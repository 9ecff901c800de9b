/*
 * dcg.c: the (preconditioned) conjugate gradient method over a partitioned
 * system: cg.c's algorithm, line for line, with every vector split across
 * ranks and devices and every dot product a local sum then an MPI_Allreduce.
 *
 * Hestenes and Stiefel, J. Res. NBS 49 (1952); Saad, "Iterative Methods for
 * Sparse Linear Systems", 2nd ed., Algorithm 9.1; PETSc's KSPCG. The SpMV
 * overlaps its halo exchange with the interior rows (dvec_spmv).
 *
 * One iteration: one SpMV (one halo exchange), two reductions (p'Ap; then
 * r'r and r'z from the fused update), the xpay. The reductions carry the
 * failure count and rank 0's cancel flag (dvec.h), so a cancel requested
 * by the monitor after iteration k stops every rank in iteration k + 1.
 * Convergence is confirmed on the true residual with residual replacement
 * (van der Vorst and Ye 2000), exactly as in cg.c.
 */
#include "dcg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DCG_MAX_REPLACEMENTS 5

int dcg_history_push(cg_result *res, int64_t *cap, double v, cls_error *err)
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

#define DCG_TRY(call)                                                                  \
    do {                                                                               \
        int dcg_rc_ = (call);                                                          \
        if (dcg_rc_) {                                                                 \
            rc = dcg_rc_;                                                              \
            goto done;                                                                 \
        }                                                                              \
    } while (0)

int dcg_solve(dsys *s, const dvec *b, dvec *x, const dvec *dinv, const cg_options *opt,
              cg_result *res, cls_error *err)
{
    const int jacobi = opt->precond == PRECOND_JACOBI;
    dvec r = {0}, z = {0}, p = {0}, q = {0};
    int64_t cap = 0;
    int rc = CLS_EOTHER;
    int cancel = 0, want_cancel = 0;
    dsum ls;
    double v[3], bb, rr, rz, rz_old, pq, alpha, beta, bnorm, rnorm;
    int replacements = 0;
    double last_true = INFINITY;

    memset(res, 0, sizeof *res);
    if (jacobi && !dinv)
        return cls_fail(err, CLS_EOTHER, "dcg_solve: Jacobi asked for without a diagonal");
    DCG_TRY(dvec_create(s, 0, &r, err));
    DCG_TRY(dvec_create(s, 1, &p, err));                 /* p is the x of an SpMV */
    DCG_TRY(dvec_create(s, 0, &q, err));
    if (jacobi)
        DCG_TRY(dvec_create(s, 0, &z, err));
    dvec *zz = jacobi ? &z : &r; /* z = M^{-1} r; z is r without a preconditioner */

    const dvec *bv[1] = {b};
    dvec_dots_local(s, 1, bv, bv, &ls);
    DCG_TRY(dsys_allreduce(s, &ls, v, 0, NULL, err));    /* bb = b'b */
    bb = v[0];
    bnorm = sqrt(bb);
    if (!isfinite(bnorm)) {
        res->reason = CG_DIVERGED_NANORINF;
        rc = cls_fail(err, CLS_EBREAKDOWN, "right-hand side contains NaN or Inf");
        goto done;
    }
    if (bnorm == 0.0) {                                  /* b = 0: x = 0 is exact */
        dvec_fill(s, 0.0, x);
        res->reason = CG_CONVERGED_ZERO_RHS;
        res->converged = 1;
        DCG_TRY(dcg_history_push(res, &cap, 0.0, err));
        rc = CLS_OK;
        goto done;
    }

    dvec_spmv(s, x, &q);                                 /* q = A x0 */
    dvec_copy(s, b, &r);                                 /* r = b */
    dvec_axpy(s, -1.0, &q, &r);                          /* r = b - A x0 */
    if (jacobi)
        dvec_pointwise(s, dinv, &r, &z);                 /* z = D^{-1} r */
    {
        const dvec *xs[2] = {&r, &r}, *ys[2] = {&r, zz};
        dvec_dots_local(s, jacobi ? 2 : 1, xs, ys, &ls);
    }
    DCG_TRY(dsys_allreduce(s, &ls, v, 0, NULL, err));
    rr = v[0];                                           /* rr = r'r */
    rz = jacobi ? v[1] : rr;                             /* rz = r'z */
    dvec_copy(s, zz, &p);                                /* p = z */

    rnorm = sqrt(rr);
    res->rel_residual = rnorm / bnorm;
    DCG_TRY(dcg_history_push(res, &cap, res->rel_residual, err));

    for (int64_t k = 0;;) { /* k: iterations done */
        if (!isfinite(rnorm) || !isfinite(rz)) {
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
            dvec_spmv(s, x, &q);                         /* q = A x */
            dvec_copy(s, b, &r);                         /* r = b */
            dvec_axpy(s, -1.0, &q, &r);                  /* r = b - A x */
            if (jacobi)
                dvec_pointwise(s, dinv, &r, &z);         /* z = D^{-1} r */
            const dvec *xs[2] = {&r, &r}, *ys[2] = {&r, zz};
            dvec_dots_local(s, jacobi ? 2 : 1, xs, ys, &ls);
            DCG_TRY(dsys_allreduce(s, &ls, v, want_cancel, &cancel, err));
            double true_rr = v[0];                       /* rr = r'r */
            double true_rel = sqrt(true_rr) / bnorm;
            if (cancel)
                goto cancelled;
            if (true_rel <= opt->tol) {
                res->reason = CG_CONVERGED_RTOL;
                res->converged = 1;
                res->rel_residual = true_rel;
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
                res->rel_residual = true_rel;
                goto done;
            }
            replacements++;
            last_true = true_rel;
            rr = true_rr;
            rz = jacobi ? v[1] : rr;                     /* rz = r'z */
            dvec_copy(s, zz, &p);                        /* p = z: restart */
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

        dvec_spmv(s, &p, &q);                            /* q = A p */
        {
            const dvec *xs[1] = {&p}, *ys[1] = {&q};
            dvec_dots_local(s, 1, xs, ys, &ls);
        }
        DCG_TRY(dsys_allreduce(s, &ls, v, want_cancel, &cancel, err));
        pq = v[0];                                       /* pq = p'Ap */
        if (cancel)
            goto cancelled;
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
        rz_old = rz;
        if (jacobi) {                                    /* x += alpha p; r -= alpha q; */
            dvec_pcg_update_local(s, alpha, &p, &q, x,   /* z = D^{-1} r; */
                                  &r, dinv, &z, &ls);
            DCG_TRY(dsys_allreduce(s, &ls, v, 0, NULL, err));
            rz = v[0];                                   /* rz = r'z */
            rr = v[1];                                   /* rr = r'r */
        } else {
            dvec_cg_update_local(s, alpha, &p, &q, x, &r, &ls);
            DCG_TRY(dsys_allreduce(s, &ls, v, 0, NULL, err));
            rr = rz = v[0];                              /* x += alpha p; r -= alpha q; rr = r'r */
        }
        beta = rz / rz_old;                              /* beta = r'z (new) / r'z (old) */
        dvec_xpay(s, zz, beta, &p);                      /* p = z + beta p */

        rnorm = sqrt(rr);
        k++;
        res->iterations = k;
        res->rel_residual = rnorm / bnorm;
        DCG_TRY(dcg_history_push(res, &cap, res->rel_residual, err));
        if (s->rank == 0 && opt->monitor &&              /* rank 0 asks; the next */
            opt->monitor(opt->monitor_ctx, k, res->rel_residual)) /* reduction tells all */
            want_cancel = 1;
    }

cancelled:
    res->reason = CG_CANCELLED;
    rc = cls_fail(err, CLS_EOTHER, "cancelled at iteration %lld", (long long)res->iterations);

done:
    dvec_release(&r);
    dvec_release(&z);
    dvec_release(&p);
    dvec_release(&q);
    if (rc == CLS_EOTHER && err && err->code == CLS_OK)
        cls_fail(err, CLS_EOTHER, "dcg_solve failed");
    return rc;
}
