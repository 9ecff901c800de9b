/*
 * pipecg.c: pipelined conjugate gradients, one non-blocking reduction per
 * iteration, hidden behind the preconditioner and the SpMV.
 *
 * P. Ghysels and W. Vanroose, "Hiding global synchronization latency in the
 * preconditioned Conjugate Gradient algorithm", Parallel Computing 40 (2014)
 * 224-238, Algorithm 4 (as PETSc's KSPPIPECG, src/ksp/ksp/impls/cg/pipecg/).
 * Residual replacement: S. Cools, E. F. Yetkin, E. Agullo, L. Giraud and
 * W. Vanroose, "Analyzing the effect of local rounding error propagation on
 * the maximal attainable accuracy of the pipelined Conjugate Gradient
 * method", SIAM J. Matrix Anal. Appl. 39 (2018), and van der Vorst and Ye,
 * "Residual replacement strategies for Krylov subspace iterative methods for
 * the convergence of true residuals", SIAM J. Sci. Comput. 22 (2000).
 *
 * The recurrences carry, besides x, r and p, the auxiliary vectors
 * u = M r, w = A u, s = A p, q = M s, z = A q (M standing for the
 * preconditioner's inverse: the diagonal's, or any of pc.h's, whose
 * application pipecg_precond makes), so the two dots of an
 * iteration (gamma = r'u, delta = w'u) need only vectors already at hand:
 * they are computed in the fused update of iteration i - 1 and reduced with
 * one MPI_Iallreduce while iteration i computes m = M w and n = A m (halo
 * exchange included). Per iteration: one SpMV, one fused vector update
 * (pipecg.cl) and one reduction, against CG's two blocking ones. The host
 * waits for the update's sums only after it has enqueued m = M w and the
 * SpMV behind them, so the device goes from the update to the SpMV without
 * waiting for the host (the iteration profile showed 276 us of idle device
 * per iteration at poisson3d 320 on one H200 when it waited first).
 *
 * Accuracy. The extra recurrences let rounding errors grow faster than in
 * CG (Cools et al.), so the gap between the recurrence residual and b - Ax
 * widens. Every PIPECG_RR_PERIOD iterations the recurrence vectors r, u, w,
 * s, q, z are recomputed from x and p (PETSc's KSPPIPECGRR, Cools et al.
 * 2018, Algorithm 3: replacement without a restart, the search direction
 * and beta go on). As in cg.c, the stop is confirmed on the true residual: when the
 * recurrence reaches tol, r = b - Ax is computed, and if it is not below tol
 * the method restarts from it (u = M r, w = A u, beta = 0). That makes the
 * attained accuracy CG's, at the price of a few more iterations on hard
 * problems; the replacement count is bounded as in cg.c. On ill-conditioned
 * systems the recurrence's p'Ap = delta - beta gamma / alpha (a difference
 * of two nearly equal sums) can lose its sign long before the iterates go
 * wrong; that is taken as a loss of the recurrences, not as an indefinite
 * matrix: the method restarts from b - Ax, where p'Ap = w'u is computed from
 * w = A u directly, and only a non-positive value there is a breakdown.
 */
#include "dcg.h"
#include "ksp_stop.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Iterations between replacements of the recurrence vectors (PIPECGRR).
 * Measured on PoCL, tol 1e-10 (iterations; CG beside): 494_bus none 3167,
 * 50: 2234, 25: 1895 (CG 1500); 1138_bus 5095 / 3905 / 3149 (CG 2804);
 * LFAT5 114 / 84 / 487 (CG 27); poisson3d 40 116 at every period (CG
 * 116). 25 helps the bus matrices more but replaces LFAT5 at unlucky
 * points; 50 is better than none everywhere measured. Re-measured
 * 2026-11-24 at tol 1e-8 / 1e-10 (494_bus, 1138_bus, LFAT5): none 1396 /
 * 3167, 2560 / 5095, 34 / 114; 50: 1469 / 2234, 2497 / 3905, 34 / 84; 10:
 * 1429 / 1872, 2431 / 3078, 41 / 107; 5: 1387 / 1851, 2404 / 3106, 48 /
 * 110; CG 1201 / 1501, 2276 / 2815, 25 / 27. A replacement at every fall of
 * the residual by a factor f (f = 0.5 .. 0.03, instead of a period) was
 * worse on every matrix: the bus matrices' residuals are far from
 * monotone. Parity with CG on these needs more than replacement. */
#define PIPECG_RR_PERIOD 50

/* z = M^-1 x: the diagonal, or the general preconditioner (pc.h) */
static void pipecg_precond(dsys *s, pc *pc, const dvec *x, dvec *z)
{
    if (pc->type == PRECOND_JACOBI)
        dvec_pointwise(s, &pc->dinv, x, z);
    else
        pc_apply(pc, x, z);
}

int pipecg_solve(dsys *s, const dvec *b, dvec *x, pc *pc, const cg_options *opt, cg_result *res,
                 cls_error *err)
{
    /* with any preconditioner the recurrences carry u = M r, m = M w and
     * q = M s (PIPECG's Algorithm 4 as written); without one they drop */
    const int jacobi = pc && pc->type != PRECOND_NONE;
    dvec r = {0}, u = {0}, w = {0}, m = {0}, nv = {0}, z = {0}, q = {0}, sv = {0}, p = {0};
    int64_t cap = 0, k = 0;
    int rc = CLS_EOTHER, cancel = 0, want_cancel = 0, restart = 1, lost = 0;
    ksp_stop st;
    dsum ls;
    double v[3], bnorm, gamma, delta, rr, gamma_old = 0.0, alpha_old = 0.0, alpha, beta;
    const int64_t period = PIPECG_RR_PERIOD;

    memset(res, 0, sizeof *res);
    ksp_stop_init(&st, opt->tol);
    /* ghosted: the vectors that are the x of an SpMV */
    CLS_TRY(dvec_create(s, 1, &r, err)); /* w = A r without a preconditioner */
    CLS_TRY(dvec_create(s, 1, &w, err)); /* n = A w without a preconditioner */
    CLS_TRY(dvec_create(s, 0, &nv, err));
    CLS_TRY(dvec_create(s, 0, &z, err));
    CLS_TRY(dvec_create(s, !jacobi, &sv, err)); /* replacement: z = A s (no preconditioner) */
    CLS_TRY(dvec_create(s, 1, &p, err));        /* replacement: s = A p */
    if (jacobi) {
        CLS_TRY(dvec_create(s, 1, &u, err)); /* w = A u */
        CLS_TRY(dvec_create(s, 1, &m, err)); /* n = A m */
        CLS_TRY(dvec_create(s, 1, &q, err)); /* replacement: z = A q */
    }
    dvec *uu = jacobi ? &u : &r; /* u = M r; u is r without a preconditioner */
    dvec *mm = jacobi ? &m : &w; /* m = M w */

    int zero_rhs;
    CLS_TRY(ksp_dist_rhs_norm(s, b, x, res, &cap, &bnorm, &zero_rhs, err)); /* bnorm = ||b|| */
    if (zero_rhs) { /* b = 0: x = 0 is exact */
        rc = CLS_OK;
        goto done;
    }
    /* z, q, s, p enter the first update as beta * (old) with beta = 0:
     * they must hold numbers, not whatever the buffers held */
    dvec_fill(s, 0.0, &z);
    dvec_fill(s, 0.0, &sv);
    dvec_fill(s, 0.0, &p);
    if (jacobi)
        dvec_fill(s, 0.0, &q);

    /* start (and restart): r = b - A x, u = M r, w = A u, and the dots */
    for (;;) {
        dvec_spmv(s, x, &nv);        /* n = A x (scratch) */
        dvec_copy(s, b, &r);         /* r = b */
        dvec_axpy(s, -1.0, &nv, &r); /* r = b - A x */
        if (jacobi)
            pipecg_precond(s, pc, &r, &u); /* u = M r */
        dvec_spmv(s, uu, &w);              /* w = A u */
        {
            const dvec *xs[3] = {&r, &w, &r}, *ys[3] = {uu, uu, &r};
            dvec_dots_local(s, 3, xs, ys, &ls); /* gamma = r'u, delta = w'u, rr */
        }
        CLS_TRY(dsys_iallreduce_begin(s, &ls, want_cancel, err));
        restart = 1;
        int sums_queued = 0; /* the last update's sums still on the devices */

        for (;;) {
            dprof_iteration(s->prof); /* --profile: the measured window starts here */
            dprof_hold(s->prof, DPROF_PRECOND);
            if (jacobi)
                pipecg_precond(s, pc, &w, &m); /* m = M w */
            dprof_release(s->prof);
            dvec_spmv(s, mm, &nv); /* n = A m, while the sums fly */
            if (sums_queued) {     /* queued behind the update: the device runs on */
                dvec_sums_wait(s, 3, &ls);
                CLS_TRY(dsys_iallreduce_begin(s, &ls, want_cancel, err));
                sums_queued = 0;
            }
            CLS_TRY(dsys_iallreduce_end(s, v, &cancel, err));
            gamma = v[0]; /* gamma = r'u */
            delta = v[1]; /* delta = w'u */
            rr = v[2];    /* rr = r'r */
            if (cancel)
                goto cancelled;
            res->rel_residual = sqrt(rr) / bnorm; /* ||r||/||b|| of x_k */
            if (!restart || k == 0)
                CLS_TRY(ksp_history_push(res, &cap, res->rel_residual, err));
            if (k == 0 && restart && s->rank == 0 && opt->monitor) /* the initial residual */
                (void)opt->monitor(opt->monitor_ctx, 0, res->rel_residual);
            if (k > 0 && !restart && s->rank == 0 && opt->monitor &&
                opt->monitor(opt->monitor_ctx, k, res->rel_residual))
                want_cancel = 1; /* told to all by the next sums */
            if (!isfinite(rr) || !isfinite(gamma) || !isfinite(delta)) {
                rc = ksp_fail_residual(res, k, 0, err);
                goto done;
            }
            lost = 0;
            if (res->rel_residual <= opt->tol)
                break; /* confirm on b - A x below */
            if (k >= opt->maxiter) {
                rc = ksp_fail_maxiter(res, k, res->rel_residual, opt->tol, err);
                goto done;
            }
            double pap; /* p'Ap, for the breakdown test */
            if (restart) {
                beta = 0.0;  /* beta = 0 */
                pap = delta; /* p = u: p'Ap = u'Au = w'u */
            } else {
                beta = gamma / gamma_old;               /* beta = gamma_i / gamma_{i-1} */
                pap = delta - beta * gamma / alpha_old; /* delta - beta gamma / alpha_{i-1} */
            }
            if (!(pap > 0.0) && !restart && ksp_stop_lost_pap(&st, pap, delta, res->rel_residual)) {
                /* p'Ap from the recurrence (a difference of two sums) has
                 * lost its accuracy: a loss of the pipelined recurrences,
                 * not of the matrix; restart from b - A x, where p'Ap = w'u
                 * is computed directly */
                lost = 1;
                break;
            }
            if (!(pap > 0.0)) {
                rc = ksp_fail_curvature(res, pap, k + 1, 0, err);
                goto done;
            }
            alpha = gamma / pap; /* alpha = gamma / p'Ap */
            /* z = n + beta z; q = m + beta q; s = w + beta s; p = u + beta p;
             * x += alpha p; r -= alpha s; u -= alpha q; w -= alpha z;
             * and the next gamma, delta, rr */
            dprof_step_set(s->prof, -1, DPROF_UPDATE); /* the updates and their dots */
            dvec_pipecg_update_begin(s, alpha, beta, &nv, jacobi ? &m : NULL, &w, &z,
                                     jacobi ? &q : NULL, &sv, &p, x, &r, jacobi ? &u : NULL);
            dprof_step_set(s->prof, -1, DPROF_OTHER);
            sums_queued = 1; /* waited for after the next SpMV is enqueued */
            if ((k + 1) % period == 0) {
                dvec_sums_wait(s, 3, &ls); /* drained: the sums below replace them */
                sums_queued = 0;
                /* residual replacement without a restart (PIPECGRR, Cools et
                 * al. 2018, Alg. 3): the recurrence vectors are recomputed
                 * from x and p, which are kept, so the Krylov directions
                 * (and beta) go on; 4 SpMVs every `period` iterations */
                dvec_spmv(s, x, &nv); /* r = b - A x */
                dvec_copy(s, b, &r);
                dvec_axpy(s, -1.0, &nv, &r);
                if (jacobi)
                    pipecg_precond(s, pc, &r, &u); /* u = M r */
                dvec_spmv(s, uu, &w);              /* w = A u */
                dvec_spmv(s, &p, &sv);             /* s = A p */
                if (jacobi)
                    pipecg_precond(s, pc, &sv, &q);  /* q = M s */
                dvec_spmv(s, jacobi ? &q : &sv, &z); /* z = A q */
                const dvec *xs[3] = {&r, &w, &r}, *ys[3] = {uu, uu, &r};
                dvec_dots_local(s, 3, xs, ys, &ls); /* gamma, delta, rr afresh */
            }
            if (!sums_queued)
                CLS_TRY(dsys_iallreduce_begin(s, &ls, want_cancel, err));
            gamma_old = gamma;
            alpha_old = alpha;
            restart = 0;
            k++;
            res->iterations = k;
        }

        /* the recurrence says converged: check b - A x (blocking) */
        dvec_spmv(s, x, &nv);        /* n = A x */
        dvec_copy(s, b, &r);         /* r = b */
        dvec_axpy(s, -1.0, &nv, &r); /* r = b - A x */
        {
            const dvec *xs[1] = {&r};
            dvec_dots_local(s, 1, xs, xs, &ls);
        }
        CLS_TRY(dsys_allreduce(s, &ls, v, want_cancel, &cancel, err));
        double true_rel = sqrt(v[0]) / bnorm;
        if (cancel)
            goto cancelled;
        if (lost && !(true_rel <= opt->tol))
            continue; /* restart, whatever the residual */
        if ((rc = ksp_stop_confirm(&st, true_rel, k, res, err)) != KSP_RESTART)
            goto done; /* converged, or out of reach */
    }

cancelled:
    rc = ksp_fail_cancelled(res, res->iterations, err);

done:
    if (s->pending) { /* a reduction left in flight by an early exit */
        cls_error e;
        double tmp[3];
        dsys_iallreduce_end(s, tmp, NULL, &e);
    }
    dvec_release(&r);
    dvec_release(&u);
    dvec_release(&w);
    dvec_release(&m);
    dvec_release(&nv);
    dvec_release(&z);
    dvec_release(&q);
    dvec_release(&sv);
    dvec_release(&p);
    if (rc == CLS_EOTHER && err && err->code == CLS_OK)
        cls_fail(err, CLS_EOTHER, "pipecg_solve failed");
    return rc;
}
