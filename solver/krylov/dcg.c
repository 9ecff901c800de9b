/*
 * dcg.c: the conjugate gradient method over a partitioned system: ONE
 * algorithm for one part or many, on the fused kernels of the single-device
 * CG (cg.c, cg_fused.cl) in the tuned SpMV format of each part.
 *
 * Hestenes and Stiefel, J. Res. NBS 49 (1952); Saad, "Iterative Methods for
 * Sparse Linear Systems", 2nd ed., Algorithm 9.1; PETSc's KSPCG. The
 * iteration is the single-reduction CG of Chronopoulos and Gear (1989) in
 * the kernel-fused form of Rupp et al., ACM TOMS 43(2) (2016), with the
 * identity  r_{k+1}'W r_{k+1} = alpha_k^2 (Ap_k)'W(Ap_k) - r_k'W r_k,
 * W = D^-1 (Jacobi) or I, as cg.c explains.
 *
 * One part (the whole system on one device): cg_solve's fused loop, which
 * keeps even the scalars on the device (no host round trip inside an
 * iteration). More parts: per part (la_cgp.h), per iteration
 *   pack p's halo; q = A p on the interior rows while it travels
 *   p's ghosts in; q = A p on the boundary rows          (epilogue: p'q, q'Wq)
 *   cgf_fold: those and the last update's r'z, r'r       (compensated pairs)
 *   ONE MPI_Allreduce of the four sums (with the failure count and the cancel
 *   flag); the tests and alpha, beta on the host, from reduced values only,
 *   so identically on every rank, in cgf_scalars' order:
 *     r'r <= tol^2 b'b -> converged at k; p'q <= 0 -> indefinite;
 *     alpha = r'z / p'q; beta = (alpha^2 q'Wq - r'z) / r'z
 *   cgf_update: x += alpha p; r -= alpha q; z = D^-1 r; p = z + beta p
 * The sums are compensated on the device and across ranks, and every part
 * uses one SpMV format, so a solve on K parts follows the one-part solve
 * step for step. Convergence is confirmed on the true residual b - Ax
 * (restarting from it when the recurrence has drifted: residual
 * replacement, van der Vorst and Ye 2000), as in cg.c. A cancel asked for
 * by rank 0's monitor travels in the next reduction.
 */
#include "dcg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"
#include "../../kernels/la_cgp.h"
#include "ksp_stop.h"

/* The one-part case: the fused single-device loop on rank 0's part; the
 * other ranks (no part) learn its outcome. */
static int dcg_one_part(dsys *s, const dvec *b, dvec *x, const dvec *dinv, pc *pc,
                        const cg_options *opt, cg_result *res, cls_error *err)
{
    int rc = CLS_OK;
    if (s->nmine == 1) {
        dpart *p = &s->parts[0];
        la_vec vb = b->v[0], vx = x->v[0], vd;
        vb.n = vx.n = p->halo.nlocal;
        if (dinv) {
            vd = dinv->v[0];
            vd.n = p->halo.nlocal;
        }
        cg_options o = *opt;
        la_cheb_coef cheb;
        if (opt->one_launch && pc && pc->type == PRECOND_CHEBYSHEV) {
            /* cg-small runs Chebyshev inside its kernel: the coefficients and D^-1 */
            rc = pc_cheby_coef(pc, &cheb, err);
            o.cheby = &cheb;
            vd = pc->dinv.v[0];
            vd.n = p->halo.nlocal;
            dinv = &pc->dinv;
        } else if (opt->one_launch && pc && pc->type == PRECOND_IC0) {
            /* cg-small sweeps IC(0)'s triangles inside its kernel */
            rc = pc_ic0_tri(pc, &o.ic0_l, &o.ic0_u, &o.ic0_sweeps, err);
        } else if (pc && pc->type != PRECOND_NONE && pc->type != PRECOND_JACOBI) {
            o.apply = pc_apply_one; /* the preconditioned loop, pcg.c */
            o.apply_ctx = pc;
            o.apply_host = pc_has_host(pc) ? pc_apply_host : NULL; /* its native form */
        }
        dprof_iteration(s->prof); /* --profile: the whole loop, its start-up in it */
        if (rc == CLS_OK)
            rc = cg_solve(&p->la, &p->Ai, &vb, &vx, dinv ? &vd : NULL, &o, res, err);
        if (rc == CLS_EOTHER) /* a device error, or a cancel: not kept warm */
            dsys_fail(s, err);
    }
    /* the part is rank 0's (partition.h gives part 0 to rank 0) */
    double info[7] = {
        (double)rc,        (double)res->reason, (double)res->converged, (double)res->iterations,
        res->rel_residual, res->start_s,        res->confirm_s};
    if (MPI_Bcast(info, 7, MPI_DOUBLE, 0, s->comm) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Bcast(result) failed");
    if (s->rank != 0) {
        rc = (int)info[0];
        res->reason = (cg_reason)(int)info[1];
        res->converged = (int)info[2];
        res->iterations = (int64_t)info[3];
        res->rel_residual = info[4];
        res->start_s = info[5];
        res->confirm_s = info[6];
        if (rc)
            cls_fail(err, rc, "rank 0's solve failed");
    }
    return rc;
}

/* the row work of the start and of an iteration, for dsys_spmv_halo */
typedef struct dcg_ctx {
    la_cgp *w;
    int start, with_spmv;
} dcg_ctx;

static int dcg_rows(dsys *s, int k, int boundary, void *ctx, cls_error *err)
{
    dcg_ctx *c = ctx;
    la_cgp *w = &c->w[k];
    int rc;
    if (c->start) /* q = A x over every row, r = b - q, p = z: once x's ghosts are in */
        return boundary ? la_cgp_start(w, err) : CLS_OK;
    if (c->with_spmv && (rc = la_cgp_spmv(w, boundary, err)))
        return rc;
    if (!boundary)
        return CLS_OK;
    dprof_step_set(s->prof, k, DPROF_SUMS);
    return la_cgp_sums_begin(w, c->with_spmv, err);
}

/* the parts' sums of a round (dsys_reduce_sums) */
static int dcg_sums(void *ctx, int part, double out[8], cls_error *err)
{
    return la_cgp_sums_wait(&((dcg_ctx *)ctx)->w[part], out, err);
}

/* one exchange and SpMV (or the start), the parts' sums, the reduction:
 * v = {p'q, q'Wq, r'z, r'r} on every rank */
static int dcg_round(dsys *s, dcg_ctx *c, la_vec *const *vecs, double v[4], int cancel_in,
                     int *cancel_out, cls_error *err)
{
    dsys_spmv_halo(s, vecs, dcg_rows, c);
    return dsys_reduce_sums(s, dcg_sums, c, v, cancel_in, cancel_out, err);
}

/* the last update's r'z, r'r reduced, without an exchange or an SpMV:
 * v[2], v[3] on every rank */
static int dcg_sums_round(dsys *s, dcg_ctx *c, double v[4], int cancel_in, int *cancel_out,
                          cls_error *err)
{
    dprof_step_set(s->prof, -1, DPROF_SUMS);
    for (int q = 0; q < s->nmine; q++)
        DSYS_DO(s, la_cgp_sums_begin(&c->w[q], 0, DSYS_ERR));
    dprof_step_set(s->prof, -1, DPROF_OTHER);
    return dsys_reduce_sums(s, dcg_sums, c, v, cancel_in, cancel_out, err);
}

int dcg_solve(dsys *s, const dvec *b, dvec *x, pc *pc, const cg_options *opt, cg_result *res,
              cls_error *err)
{
    const int jacobi = pc && pc->type == PRECOND_JACOBI;
    const int general = pc && !jacobi && pc->type != PRECOND_NONE;
    const dvec *dinv = jacobi ? &pc->dinv : NULL;
    la_cgp *w = NULL;
    la_vec **xs = NULL, **ps = NULL;
    int64_t cap = 0;
    int rc = CLS_EOTHER, nw = 0;
    int cancel = 0, want_cancel = 0;
    double v[4], rr, rz, pq, qq, alpha, beta, bnorm, stop2;
    ksp_stop st;

    const double t0 = cls_now();
    memset(res, 0, sizeof *res);
    ksp_stop_init(&st, opt->tol);
    if (s->L->nparts == 1)
        return dcg_one_part(s, b, x, dinv, pc, opt, res, err);
    if (general)
        return dpcg_solve(s, b, x, pc, opt, res, err);

    int zero_rhs;
    CLS_TRY(ksp_dist_rhs_norm(s, b, x, res, &cap, &bnorm, &zero_rhs, err)); /* bnorm = ||b|| */
    if (zero_rhs) { /* b = 0: x = 0 is exact */
        rc = CLS_OK;
        goto done;
    }
    stop2 = opt->tol * opt->tol * bnorm * bnorm; /* stop when r'r <= tol^2 b'b */

    w = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *w);
    xs = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *xs);
    ps = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *ps);
    if (!w || !xs || !ps) {
        cls_error e;
        cls_fail(&e, CLS_EOTHER, "out of memory for the CG workspace");
        dsys_fail(s, &e);
    }
    for (int k = 0; w && k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        la_vec vb = b->v[0], vd;
        vb = b->v[k];
        vb.n = p->halo.nlocal;
        if (jacobi) {
            vd = dinv->v[k];
            vd.n = p->halo.nlocal;
        }
        DSYS_DO(s, la_cgp_create(&p->la, &p->Ai, p->have_Ab ? &p->Ab : NULL, p->halo.nghost, &vb,
                                 &x->v[k], jacobi ? &vd : NULL, &w[k], DSYS_ERR));
        if (!s->failed) {
            nw = k + 1;
            xs[k] = &x->v[k];
            ps[k] = &w[k].p;
        }
    }
    dcg_ctx c = {w, 1, 0};

    /* start: r = b - A x; p = z; rr = r'r; rz = r'z */
    CLS_TRY(dcg_round(s, &c, xs, v, 0, NULL, err));
    rz = v[2];
    rr = v[3];
    if (!isfinite(rr) || !isfinite(rz)) {
        rc = ksp_fail_residual(res, -1, 0, err);
        goto done;
    }
    res->rel_residual = sqrt(rr) / bnorm;
    CLS_TRY(ksp_history_push(res, &cap, res->rel_residual, err));
    if (s->rank == 0 && opt->monitor) /* iteration 0: the initial residual (no cancel here) */
        (void)opt->monitor(opt->monitor_ctx, 0, res->rel_residual);
    res->start_s = cls_now() - t0;

    int64_t k = 0, kstart = 0; /* k: updates applied; kstart: at the last (re)start */
    for (;;) {
        dprof_iteration(s->prof); /* --profile: the measured window starts here */
        /* q = A p with p'q, q'Wq; r_k'z_k and r_k'r_k of the last update */
        c.start = 0;
        c.with_spmv = k < opt->maxiter; /* at maxiter only r_k is needed */
        CLS_TRY(dcg_round(s, &c, ps, v, want_cancel, &cancel, err)); /* the one reduction */
        if (cancel)
            goto cancelled;
        pq = v[0];
        qq = v[1];
        rz = v[2];
        rr = v[3];
        if (k > kstart) { /* iteration k's entry */
            res->rel_residual = sqrt(rr) / bnorm;
            CLS_TRY(ksp_history_push(res, &cap, res->rel_residual, err));
            if (s->rank == 0 && opt->monitor &&                       /* rank 0 asks; the next */
                opt->monitor(opt->monitor_ctx, k, res->rel_residual)) /* reduction tells all */
                want_cancel = 1;
        }
        /* the tests and alpha (beta too with single) from the sums: la_cg_step */
        const int step = la_cg_step(rr, rz, pq, qq, stop2, opt->single_reduction, &alpha, &beta);
        if (step == LA_CGF_NANORINF && (!isfinite(rr) || !isfinite(rz))) {
            rc = ksp_fail_residual(res, k, 0, err);
            goto done;
        }
        if (step == LA_CGF_CONVERGED) { /* ||r_k|| <= tol ||b|| */
            /* confirm on the true residual; restart from it if the
             * recurrence has drifted (residual replacement) */
            c.start = 1;
            const double tc = cls_now();
            CLS_TRY(dcg_round(s, &c, xs, v, want_cancel, &cancel, err));
            res->confirm_s += cls_now() - tc;
            if (cancel)
                goto cancelled;
            rr = v[3];
            if ((rc = ksp_stop_confirm(&st, sqrt(rr) / bnorm, k, res, err)) != KSP_RESTART)
                goto done; /* converged, or out of reach */
            kstart = k;
            if (k >= opt->maxiter)
                goto maxiter;
            continue;
        }
        if (k >= opt->maxiter) /* (p'Ap was not computed: no SpMV at maxiter) */
            goto maxiter;
        if (step == LA_CGF_NANORINF) {
            rc = ksp_fail_curvature_nan(res, "p'Ap", pq, k + 1, 0, err);
            goto done;
        }
        if (step == LA_CGF_INDEFINITE) {
            rc = ksp_fail_indefinite(res, pq, k + 1, err);
            goto done;
        }
        dprof_step_set(s->prof, -1, DPROF_UPDATE);
        if (opt->single_reduction) {           /* beta from the identity (la_cg_step) */
            for (int q = 0; q < s->nmine; q++) /* x, r, p in one pass */
                DSYS_DO(s, la_cgp_update(&w[q], alpha, beta, DSYS_ERR));
        } else { /* Hestenes-Stiefel: beta from the computed r'z (cg.c says why) */
            for (int q = 0; q < s->nmine; q++) /* r -= alpha q */
                DSYS_DO(s, la_cgp_update_r(&w[q], alpha, DSYS_ERR));
            CLS_TRY(dcg_sums_round(s, &c, v, want_cancel, &cancel, err)); /* the second one */
            if (cancel)
                goto cancelled;
            beta = v[2] / rz; /* r_{k+1}'z_{k+1} / r_k'z_k; NaN stops at the next round */
            dprof_step_set(s->prof, -1, DPROF_UPDATE);
            for (int q = 0; q < s->nmine; q++) /* x += alpha p; p = z + beta p */
                DSYS_DO(s, la_cgp_direction(&w[q], alpha, beta, DSYS_ERR));
        }
        for (int q = 0; q < s->nmine; q++) /* submitted now: the device starts while the */
            DSYS_DO(s, ld_flush(&s->parts[q].ld, DSYS_ERR)); /* host enqueues the next round */
        dprof_step_set(s->prof, -1, DPROF_OTHER);
        k++;
        res->iterations = k;
    }

maxiter:
    rc = ksp_fail_maxiter(res, k, res->rel_residual, opt->tol, err);
    goto done;

cancelled:
    rc = ksp_fail_cancelled(res, res->iterations, err);

done:
    for (int q = 0; q < nw; q++)
        la_cgp_release(&w[q]);
    free(w);
    free(xs);
    free(ps);
    if (rc == CLS_EOTHER && err && err->code == CLS_OK)
        cls_fail(err, CLS_EOTHER, "dcg_solve failed");
    return rc;
}

int dcg_single_solve(dsys *s, const dvec *b, dvec *x, pc *pc, const cg_options *opt, cg_result *res,
                     cls_error *err)
{
    cg_options o = *opt;
    o.single_reduction = 1;
    return dcg_solve(s, b, x, pc, &o, res, err);
}

/* --method cg-small (cg_small.c): one part only, none or jacobi */
int dcg_small_solve(dsys *s, const dvec *b, dvec *x, pc *pc, const cg_options *opt, cg_result *res,
                    cls_error *err)
{
    memset(res, 0, sizeof *res);
    /* collective: every rank sees the same layout and preconditioner */
    int rc = cg_small_check_precond(pc ? pc->type : PRECOND_NONE, err);
    if (rc)
        return rc;
    if (s->L->nparts > 1)
        return cls_fail(err, CLS_EINPUT,
                        "--method cg-small solves a system on one device in one work-group, but "
                        "this one is split into %d parts; run it as one part (one rank, one "
                        "device, --min-rows-per-part at its default) or use --method cg",
                        s->L->nparts);
    cg_options o = *opt;
    o.one_launch = 1; /* dcg_solve's one-part case: cg_solve runs cg_small_solve */
    return dcg_solve(s, b, x, pc, &o, res, err);
}
