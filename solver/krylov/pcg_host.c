/*
 * pcg_host.c: the host-scalar step of the preconditioned single-reduction
 * CG (design and recurrence in pcg_host.h). The order of the tests is the
 * order pcgf_scalars (pcg_fused.cl) keeps on the device, so that one part
 * and K parts stop at the same iteration for the same reason.
 */
#include "pcg_host.h"

#include <math.h>

void pcg_host_init(pcg_host *h, double tol, double bb)
{
    ksp_stop_init(&h->stop, tol);
    h->fresh = h->confirming = 0;
    h->it = 0;
    h->bnorm = sqrt(bb);
    h->stop2 = tol * tol * bb; /* stop when r'r <= tol^2 b'b */
    h->gamma_old = h->alpha_old = h->alpha = h->beta = 0.0;
}

void pcg_host_restarted(pcg_host *h)
{
    h->fresh = 1;
    h->gamma_old = 0.0; /* beta = 0: p = u */
}

pcg_host_action pcg_host_step(pcg_host *h, const double v[4], int64_t maxiter, cg_result *res,
                              int *rc, cls_error *err)
{
    const double delta = v[0], gamma = v[2], rr = v[3];
    *rc = CLS_OK;
    if (!isfinite(rr) || !isfinite(gamma)) {
        *rc = ksp_fail_residual(res, h->it == 0 ? -1 : h->it, 1, err);
        return PCG_HOST_DONE;
    }
    if (rr <= h->stop2) { /* ||r_k|| <= tol ||b|| */
        if (h->fresh) {   /* r is b - Ax: done */
            res->rel_residual = sqrt(rr) / h->bnorm;
            res->reason = CG_CONVERGED_RTOL;
            res->converged = 1;
            return PCG_HOST_DONE;
        }
        h->confirming = 1; /* confirm on b - Ax: the next round's r'r is the true one */
        return PCG_HOST_RESTART;
    }
    if (h->fresh && h->confirming) { /* the recurrence said converged, b - Ax did not */
        if ((*rc = ksp_stop_confirm(&h->stop, sqrt(rr) / h->bnorm, h->it, res, err)) != KSP_RESTART)
            return PCG_HOST_DONE; /* converged, or out of reach */
        *rc = CLS_OK;             /* restarted already: go on from b - Ax */
    }
    h->fresh = h->confirming = 0;
    if (h->it >= maxiter) {
        *rc = ksp_fail_maxiter(res, h->it, res->rel_residual, h->stop.tol, err);
        return PCG_HOST_DONE;
    }
    if (!isfinite(delta)) {
        *rc = ksp_fail_curvature_nan(res, "u'Au", delta, h->it + 1, 1, err);
        return PCG_HOST_DONE;
    }
    if (!(gamma > 0.0)) {
        *rc = ksp_fail_pc_indefinite(res, gamma, h->it, err);
        return PCG_HOST_DONE;
    }
    const double beta = h->gamma_old > 0 ? gamma / h->gamma_old : 0;                   /* beta */
    const double pap = h->gamma_old > 0 ? delta - beta * gamma / h->alpha_old : delta; /* p'Ap */
    if (!(pap > 0.0)) {
        if (beta != 0.0 &&
            ksp_stop_lost_pap(&h->stop, pap, delta, res->rel_residual)) /* lost by rounding */
            return PCG_HOST_RESTART;
        *rc = ksp_fail_indefinite(res, pap, h->it + 1, err);
        return PCG_HOST_DONE;
    }
    h->alpha = gamma / pap; /* alpha = gamma / p'Ap */
    h->beta = beta;
    h->gamma_old = gamma;
    h->alpha_old = h->alpha;
    return PCG_HOST_UPDATE;
}
