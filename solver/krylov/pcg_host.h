/*
 * pcg_host.h: one step of the preconditioned single-reduction CG with its
 * scalars on the host, after the iteration's one reduction: written once
 * for dpcg.c (one right-hand side over K parts) and dbcg.c (k columns in
 * lockstep, one pcg_host each).
 *
 * The recurrence (Chronopoulos and Gear 1989; Ghysels and Vanroose 2014,
 * Alg. 2; PETSc's KSPCG with -ksp_cg_single_reduction), u = M^-1 r, w = A u:
 *   gamma_k = r_k'u_k;  delta_k = u_k'w_k;  rr_k = r_k'r_k      (the reduction)
 *   beta_k  = gamma_k / gamma_{k-1}                              (0 at a start)
 *   p_k'Ap_k = delta_k - beta_k gamma_k / alpha_{k-1}            (delta_k at a start)
 *   alpha_k = gamma_k / p_k'Ap_k
 * and the method then applies p = u + beta p, s = w + beta s, x += alpha p,
 * r -= alpha s (la_pcm_update), u = M^-1 r, and the sums of the next round.
 * The decisions around it are ksp_stop.h's: the stop confirmed on b - Ax, a
 * p'Ap that lost its sign after an update taken as a lost recurrence
 * (restart), gamma <= 0 as a preconditioner that is not positive definite.
 */
#ifndef CLS_SOLVER_KRYLOV_PCG_HOST_H
#define CLS_SOLVER_KRYLOV_PCG_HOST_H

#include <stdint.h>

#include "krylov.h"
#include "ksp_stop.h"

typedef struct pcg_host {
    ksp_stop stop;
    int fresh;      /* this round's sums are of a (re)start: r = b - Ax */
    int confirming; /* that restart confirms a stop of the recurrence */
    int64_t it;     /* updates applied (the caller counts them) */
    double bnorm, stop2, gamma_old, alpha_old;
    double alpha, beta; /* after PCG_HOST_UPDATE: the update's scalars */
} pcg_host;

/* tol relative, bb = b'b (finite, non-zero) */
void pcg_host_init(pcg_host *h, double tol, double bb);
/* the method has restarted from b - Ax: the next round is fresh */
void pcg_host_restarted(pcg_host *h);

typedef enum {
    PCG_HOST_UPDATE,  /* apply h->alpha, h->beta; then u = M^-1 r and the sums */
    PCG_HOST_RESTART, /* restart from b - Ax (then pcg_host_restarted) */
    PCG_HOST_DONE     /* *rc says how: CLS_OK converged, else err and res->reason */
} pcg_host_action;

/* v = {u'Au, (unused), r'u, r'r} of the round. res->rel_residual is the
 * caller's (it keeps the history); the step sets reason, converged and, at a
 * confirmation, the true residual. */
pcg_host_action pcg_host_step(pcg_host *h, const double v[4], int64_t maxiter, cg_result *res,
                              int *rc, cls_error *err);

#endif
