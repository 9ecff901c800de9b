/*
 * dpcg.c: the preconditioned single-reduction CG over several parts and
 * ranks, for a general preconditioner (pc.h): the recurrences of pcg.c
 * (Chronopoulos and Gear 1989; Saad, Alg. 9.1 with one reduction), with the
 * scalars on the host because they need every part's sums. Per iteration
 * and part (la_pcm.h):
 *
 *   pack u's halo; w = A u on the interior rows while it travels; u's
 *   ghosts in; w = A u on the boundary rows            (epilogue: u'w)
 *   cgf_fold: u'w and the last la_pcm_dots' r'u, r'r   (compensated pairs)
 *   ONE MPI_Allreduce of the sums (with the failure count and the cancel
 *   flag); on every rank, from reduced values only, in pcgf_scalars' order:
 *     r'r <= tol^2 b'b -> converged (confirmed on b - Ax);
 *     gamma = r'u <= 0 -> M is not positive definite;
 *     beta = gamma / gamma_old; p'Ap = delta - beta gamma / alpha_old;
 *     p'Ap <= 0 -> indefinite (after a restart) or a lost recurrence
 *     (restart); alpha = gamma / p'Ap
 *   pcgf_update: p = u + beta p; s = w + beta s; x += alpha p; r -= alpha s
 *   u = M^-1 r (pc_apply: per part for ic0 and amg, a global polynomial
 *   with its own halo exchanges for chebyshev); la_pcm_dots: r'u, r'r
 *
 * A (re)start computes r = b - Ax (x's halo exchanged first), u = M^-1 r
 * and the sums without a reduction of its own: the next iteration's
 * reduction carries r'r of the true residual, so confirming convergence
 * costs one SpMV round, and a restart after it goes on from there with
 * beta = 0 (residual replacement, van der Vorst and Ye 2000).
 */
#include "dcg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"
#include "../../kernels/la_pcm.h"

#define DPCG_MAX_REPLACEMENTS 5
#define DPCG_MAX_LOST 50

#define DPCG_DO(s, call)                                                                           \
    do {                                                                                           \
        if (!(s)->failed) {                                                                        \
            cls_error dpcg_e_;                                                                     \
            cls_error_clear(&dpcg_e_);                                                             \
            if ((call) != CLS_OK)                                                                  \
                dsys_fail((s), &dpcg_e_);                                                          \
        }                                                                                          \
    } while (0)
#define DPCG_ERR (&dpcg_e_)

typedef struct dpcg_ctx {
    la_pcm *w;
    int start;
} dpcg_ctx;

static int dpcg_rows(dsys *s, int k, int boundary, void *ctx, cls_error *err)
{
    (void)s;
    dpcg_ctx *c = ctx;
    la_pcm *w = &c->w[k];
    int rc;
    if (c->start) /* r = b - A x over every row, once x's ghosts are in */
        return boundary ? la_pcm_restart(w, 0, err) : CLS_OK;
    if ((rc = la_pcm_spmv(w, boundary, err)))
        return rc;
    return boundary ? la_pcm_sums_begin(w, 1, err) : CLS_OK;
}

/* restart: exchange x, r = b - Ax, p = s = 0, u = M^-1 r, the sums */
static void dpcg_restart(dsys *s, pc *pc, dpcg_ctx *c, la_vec *const *xs, dvec *rv, dvec *uv)
{
    c->start = 1;
    dsys_spmv_halo(s, xs, dpcg_rows, c);
    c->start = 0;
    pc_apply(pc, rv, uv);
    for (int k = 0; k < s->nmine; k++)
        DPCG_DO(s, la_pcm_dots(&c->w[k], DPCG_ERR));
}

/* w = A u with its sums, the reduction: v = {u'w, w'w, r'u, r'r} */
static int dpcg_round(dsys *s, dpcg_ctx *c, la_vec *const *us, double v[4], int cancel_in,
                      int *cancel_out, cls_error *err)
{
    dsys_spmv_halo(s, us, dpcg_rows, c);
    dsum ls;
    memset(&ls, 0, sizeof ls);
    ls.n = 4;
    for (int k = 0; k < s->nmine; k++) {
        double o[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (!s->failed) {
            cls_error e;
            if (la_pcm_sums_wait(&c->w[k], o, &e))
                dsys_fail(s, &e);
        }
        for (int q = 0; q < 4; q++)
            dsum_pair_add(&ls.hi[q], &ls.lo[q], o[2 * q], o[2 * q + 1]);
    }
    return dsys_allreduce(s, &ls, v, cancel_in, cancel_out, err);
}

int dpcg_solve(dsys *s, const dvec *b, dvec *x, pc *pc, const cg_options *opt, cg_result *res,
               cls_error *err)
{
    const int n = s->nmine ? s->nmine : 1;
    la_pcm *w = calloc((size_t)n, sizeof *w);
    la_vec **xs = calloc((size_t)n, sizeof *xs), **us = calloc((size_t)n, sizeof *us);
    dvec rv = {calloc((size_t)n, sizeof(la_vec)), s->nmine, 0};
    dvec uv = {calloc((size_t)n, sizeof(la_vec)), s->nmine, 1};
    int64_t cap = 0, k = 0, kstart = 0;
    int rc = CLS_EOTHER, nw = 0, cancel = 0, want_cancel = 0;
    int fresh = 0, confirming = 0, replacements = 0, lost = 0;
    double v[4], bnorm, stop2, gamma_old = 0.0, alpha_old = 0.0, last_true = INFINITY;

    const double t0 = cls_now();
    memset(res, 0, sizeof *res);
    if (!w || !xs || !us || !rv.v || !uv.v) {
        cls_error e;
        cls_fail(&e, CLS_EOTHER, "out of memory for the CG workspace");
        dsys_fail(s, &e);
    }
    int zero_rhs;
    CLS_TRY(dcg_rhs_norm(s, b, x, res, &cap, &bnorm, &zero_rhs, err)); /* bnorm = ||b|| */
    if (zero_rhs) {
        rc = CLS_OK;
        goto done;
    }
    stop2 = opt->tol * opt->tol * bnorm * bnorm; /* stop when r'r <= tol^2 b'b */
    for (int q = 0; w && xs && us && rv.v && uv.v && q < s->nmine; q++) {
        dpart *p = &s->parts[q];
        la_vec vb = b->v[q];
        vb.n = p->halo.nlocal;
        DPCG_DO(s, la_pcm_create(&p->la, &p->Ai, p->have_Ab ? &p->Ab : NULL, p->halo.nghost, &vb,
                                 &x->v[q], 0, stop2, &w[q], DPCG_ERR));
        if (!s->failed) {
            nw = q + 1;
            xs[q] = &x->v[q];
            us[q] = &w[q].u;
            rv.v[q] = w[q].r;
            uv.v[q] = w[q].u;
        }
    }
    dpcg_ctx c = {w, 0};
    dpcg_restart(s, pc, &c, xs, &rv, &uv); /* r = b - A x0; u = M^-1 r */
    fresh = 1;

    for (;;) {
        CLS_TRY(dpcg_round(s, &c, us, v, want_cancel, &cancel, err)); /* the one reduction */
        if (cancel)
            goto cancelled;
        const double delta = v[0], gamma = v[2], rr = v[3];
        if (k == 0 && kstart == 0 && fresh && res->nhistory == 0) {
            res->rel_residual = sqrt(rr) / bnorm;
            res->start_s = cls_now() - t0;
            if (isfinite(rr))
                CLS_TRY(ksp_history_push(res, &cap, res->rel_residual, err));
            if (isfinite(rr) && s->rank == 0 && opt->monitor) /* iteration 0: no cancel here */
                (void)opt->monitor(opt->monitor_ctx, 0, res->rel_residual);
        } else if (!fresh) { /* iteration k's entry */
            res->rel_residual = sqrt(rr) / bnorm;
            CLS_TRY(ksp_history_push(res, &cap, res->rel_residual, err));
            if (s->rank == 0 && opt->monitor &&
                opt->monitor(opt->monitor_ctx, k, res->rel_residual))
                want_cancel = 1; /* the next reduction tells every rank */
        }
        if (!isfinite(rr) || !isfinite(gamma)) {
            res->reason = CG_DIVERGED_NANORINF;
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          k == 0 ? "the initial residual is NaN or Inf: the matrix, the initial "
                                   "guess or the preconditioner holds values too large or "
                                   "invalid"
                                 : "the residual became NaN or Inf at iteration %lld: the "
                                   "matrix, the right-hand side or the preconditioner holds "
                                   "values too large or invalid",
                          (long long)k);
            goto done;
        }
        if (rr <= stop2) { /* ||r_k|| <= tol ||b|| */
            if (fresh) {   /* the true residual: done */
                res->rel_residual = sqrt(rr) / bnorm;
                res->reason = CG_CONVERGED_RTOL;
                res->converged = 1;
                rc = CLS_OK;
                goto done;
            }
            /* confirm on b - Ax: the next round's r'r is the true one */
            const double tc = cls_now();
            dpcg_restart(s, pc, &c, xs, &rv, &uv);
            res->confirm_s += cls_now() - tc;
            kstart = k;
            fresh = confirming = 1;
            gamma_old = 0.0;
            continue;
        }
        if (fresh && confirming) { /* the recurrence said converged, b - Ax did not */
            double true_rel = sqrt(rr) / bnorm;
            res->rel_residual = true_rel;
            if (replacements >= DPCG_MAX_REPLACEMENTS || !(true_rel < 0.5 * last_true)) {
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
        }
        fresh = confirming = 0;
        if (k >= opt->maxiter) {
            res->reason = CG_DIVERGED_MAXITER;
            res->iterations = k;
            rc = cls_fail(err, CLS_ENOTCONV,
                          "not converged after %lld iterations: relative residual %.3e > tol "
                          "%.3e",
                          (long long)k, res->rel_residual, opt->tol);
            goto done;
        }
        if (!isfinite(delta)) {
            res->reason = CG_DIVERGED_NANORINF;
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "u'Au is %g at iteration %lld: NaN or Inf in the matrix, the "
                          "preconditioner or the iterates",
                          delta, (long long)k + 1);
            goto done;
        }
        if (!(gamma > 0.0)) {
            res->reason = CG_DIVERGED_INDEFINITE;
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "r'M^-1 r = %.6g at iteration %lld: the preconditioner is not "
                          "positive definite on this matrix (the matrix itself may not be)",
                          gamma, (long long)k);
            goto done;
        }
        /* the scalars, as pcgf_scalars computes them */
        const double beta = gamma_old > 0 ? gamma / gamma_old : 0;                   /* beta */
        const double pap = gamma_old > 0 ? delta - beta * gamma / alpha_old : delta; /* p'Ap */
        if (!(pap > 0.0)) {
            if (beta != 0.0 && lost < DPCG_MAX_LOST) { /* a lost recurrence: restart */
                lost++;
                dpcg_restart(s, pc, &c, xs, &rv, &uv);
                kstart = k;
                fresh = 1;
                gamma_old = 0.0;
                continue;
            }
            res->reason = CG_DIVERGED_INDEFINITE;
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "matrix is not positive definite (p'Ap = %.6g at iteration %lld)", pap,
                          (long long)k + 1);
            goto done;
        }
        const double alpha = gamma / pap;  /* alpha = gamma / p'Ap */
        for (int q = 0; q < s->nmine; q++) /* p, s, x, r in one pass */
            DPCG_DO(s, la_pcm_update(&w[q], alpha, beta, DPCG_ERR));
        pc_apply(pc, &rv, &uv); /* u = M^-1 r */
        for (int q = 0; q < s->nmine; q++)
            DPCG_DO(s, la_pcm_dots(&w[q], DPCG_ERR));
        gamma_old = gamma;
        alpha_old = alpha;
        k++;
        res->iterations = k;
    }

cancelled:
    res->reason = CG_CANCELLED;
    rc = cls_fail(err, CLS_EOTHER, "cancelled at iteration %lld", (long long)res->iterations);

done:
    for (int q = 0; q < nw; q++)
        la_pcm_release(&w[q]);
    free(w);
    free(xs);
    free(us);
    free(rv.v);
    free(uv.v);
    if (rc == CLS_EOTHER && err && err->code == CLS_OK)
        cls_fail(err, CLS_EOTHER, "dpcg_solve failed");
    return rc;
}
