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
 *   flag); on every rank, from reduced values only, pcg_host_step (the
 *   scalars and the tests in pcgf_scalars' order, shared with dbcg.c):
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
#include "pcg_host.h"

typedef struct dpcg_ctx {
    la_pcm *w;
    int start;
} dpcg_ctx;

static int dpcg_rows(dsys *s, int k, int boundary, void *ctx, cls_error *err)
{
    dpcg_ctx *c = ctx;
    la_pcm *w = &c->w[k];
    int rc;
    if (c->start) /* r = b - A x over every row, once x's ghosts are in */
        return boundary ? la_pcm_restart(w, 0, err) : CLS_OK;
    if ((rc = la_pcm_spmv(w, boundary, err)))
        return rc;
    if (!boundary)
        return CLS_OK;
    dprof_step_set(s->prof, k, DPROF_SUMS);
    return la_pcm_sums_begin(w, 1, err);
}

/* restart: exchange x, r = b - Ax, p = s = 0, u = M^-1 r, the sums */
static void dpcg_restart(dsys *s, pc *pc, dpcg_ctx *c, la_vec *const *xs, dvec *rv, dvec *uv)
{
    c->start = 1;
    dsys_spmv_halo(s, xs, dpcg_rows, c);
    c->start = 0;
    pc_apply(pc, rv, uv);
    for (int k = 0; k < s->nmine; k++)
        DSYS_DO(s, la_pcm_dots(&c->w[k], DSYS_ERR));
}

/* the parts' sums of a round (dsys_reduce_sums) */
static int dpcg_sums(void *ctx, int part, double out[8], cls_error *err)
{
    return la_pcm_sums_wait(&((dpcg_ctx *)ctx)->w[part], out, err);
}

/* w = A u with its sums, the reduction: v = {u'w, w'w, r'u, r'r} */
static int dpcg_round(dsys *s, dpcg_ctx *c, la_vec *const *us, double v[4], int cancel_in,
                      int *cancel_out, cls_error *err)
{
    dsys_spmv_halo(s, us, dpcg_rows, c);
    return dsys_reduce_sums(s, dpcg_sums, c, v, cancel_in, cancel_out, err);
}

int dpcg_solve(dsys *s, const dvec *b, dvec *x, pc *pc, const cg_options *opt, cg_result *res,
               cls_error *err)
{
    const int n = s->nmine ? s->nmine : 1;
    la_pcm *w = calloc((size_t)n, sizeof *w);
    la_vec **xs = calloc((size_t)n, sizeof *xs), **us = calloc((size_t)n, sizeof *us);
    dvec rv = {calloc((size_t)n, sizeof(la_vec)), s->nmine, 0};
    dvec uv = {calloc((size_t)n, sizeof(la_vec)), s->nmine, 1};
    int64_t cap = 0, kstart = 0;
    int rc = CLS_EOTHER, nw = 0, cancel = 0, want_cancel = 0;
    double v[4], bnorm;
    pcg_host h;

    const double t0 = cls_now();
    memset(res, 0, sizeof *res);
    if (!w || !xs || !us || !rv.v || !uv.v) {
        cls_error e;
        cls_fail(&e, CLS_EOTHER, "out of memory for the CG workspace");
        dsys_fail(s, &e);
    }
    int zero_rhs;
    CLS_TRY(ksp_dist_rhs_norm(s, b, x, res, &cap, &bnorm, &zero_rhs, err)); /* bnorm = ||b|| */
    if (zero_rhs) {
        rc = CLS_OK;
        goto done;
    }
    pcg_host_init(&h, opt->tol, bnorm * bnorm);
    for (int q = 0; w && xs && us && rv.v && uv.v && q < s->nmine; q++) {
        dpart *p = &s->parts[q];
        la_vec vb = b->v[q];
        vb.n = p->halo.nlocal;
        DSYS_DO(s, la_pcm_create(&p->la, &p->Ai, p->have_Ab ? &p->Ab : NULL, p->halo.nghost, &vb,
                                 &x->v[q], 0, h.stop2, &w[q], DSYS_ERR));
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
    pcg_host_restarted(&h);

    for (;;) {
        dprof_iteration(s->prof); /* --profile: the measured window starts here */
        CLS_TRY(dpcg_round(s, &c, us, v, want_cancel, &cancel, err)); /* the one reduction */
        if (cancel)
            goto cancelled;
        const double rr = v[3];
        if (h.it == 0 && kstart == 0 && h.fresh && res->nhistory == 0) {
            res->rel_residual = sqrt(rr) / bnorm;
            res->start_s = cls_now() - t0;
            if (isfinite(rr))
                CLS_TRY(ksp_history_push(res, &cap, res->rel_residual, err));
            if (isfinite(rr) && s->rank == 0 && opt->monitor) /* iteration 0: no cancel here */
                (void)opt->monitor(opt->monitor_ctx, 0, res->rel_residual);
        } else if (!h.fresh) { /* iteration k's entry */
            res->rel_residual = sqrt(rr) / bnorm;
            CLS_TRY(ksp_history_push(res, &cap, res->rel_residual, err));
            if (s->rank == 0 && opt->monitor &&
                opt->monitor(opt->monitor_ctx, h.it, res->rel_residual))
                want_cancel = 1; /* the next reduction tells every rank */
        }
        switch (pcg_host_step(&h, v, opt->maxiter, res, &rc, err)) {
        case PCG_HOST_DONE:
            goto done;
        case PCG_HOST_RESTART: { /* to confirm on b - Ax, or after a lost recurrence */
            const double tc = cls_now();
            dpcg_restart(s, pc, &c, xs, &rv, &uv);
            if (h.confirming)
                res->confirm_s += cls_now() - tc;
            kstart = h.it;
            pcg_host_restarted(&h);
            continue;
        }
        case PCG_HOST_UPDATE:
            break;
        }
        dprof_step_set(s->prof, -1, DPROF_UPDATE);
        for (int q = 0; q < s->nmine; q++) /* p, s, x, r in one pass */
            DSYS_DO(s, la_pcm_update(&w[q], h.alpha, h.beta, DSYS_ERR));
        dprof_hold(s->prof, DPROF_PRECOND);
        pc_apply(pc, &rv, &uv); /* u = M^-1 r */
        dprof_release(s->prof);
        dprof_step_set(s->prof, -1, DPROF_SUMS);
        for (int q = 0; q < s->nmine; q++)
            DSYS_DO(s, la_pcm_dots(&w[q], DSYS_ERR));
        dprof_step_set(s->prof, -1, DPROF_OTHER);
        h.it++;
        res->iterations = h.it;
    }

cancelled:
    rc = ksp_fail_cancelled(res, res->iterations, err);

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
