/*
 * dbcg.c: k right-hand sides of one matrix solved together, on one part or
 * many: k preconditioned CG iterations in lockstep that read the matrix once
 * per iteration for all of them (the block SpMM, la_spmm.h), with the
 * preconditioner built once and shared, and scalars, convergence and
 * restarts per column.
 *
 * Each column runs dpcg.c's recurrences exactly (preconditioned
 * Chronopoulos-Gear CG, one reduction per iteration: gamma = r'u,
 * delta = u'Au, r'r); the columns are independent systems that share the
 * costs that do not depend on the column: the matrix traffic of the SpMV,
 * the one MPI_Allreduce per iteration (4 sums per column), the launches'
 * fixed costs where they batch. This is not a block Krylov method (O'Leary,
 * "The block conjugate gradient algorithm and related methods", Linear
 * Algebra Appl. 29 (1980)): no search space is shared, so the iterations
 * of each column are those it takes alone and a column that converges is
 * frozen while the others go on (the SpMM then skips it). Per iteration,
 * per part (la_pcm.h per column):
 *
 *   every active column: exchange u's halo (one exchange per column)
 *   W = A U over the active columns (la_spmm; BCSR: one SpMV per column)
 *   per column: u'w, w'w (la_pcm_block_sums_begin) with the last r'u, r'r
 *   ONE MPI_Allreduce of 4 sums per column, the failure count, the cancel flag
 *   per column, on the host: the tests and alpha, beta (dpcg.c's order)
 *   per column: update; then u = M^-1 r of the updated columns together
 *   (pc_apply_block: amg's V-cycle as SpMMs); per column r'u, r'r
 *
 * The scalars live on the host for one part too (one read per iteration);
 * convergence is confirmed per column on b - Ax, with residual replacement,
 * as in the other loops.
 */
#include "dcg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"
#include "../../kernels/la_pcm.h"
#include "../../kernels/la_spmm.h"
#include "pcg_host.h"

typedef struct bcol {
    pcg_host h; /* the column's scalars and stopping state */
    int active, restart, update, rc;
    int64_t cap;
    cls_error err;
} bcol;

typedef struct dbcg {
    dsys *s;
    pc *pc;
    int k, nq;
    la_pcm *w;     /* [q * k + c] */
    la_spmmk *sk;  /* [q] */
    la_vec ***xs;  /* [c][q]: x of column c (ghosted) */
    la_vec ***us;  /* [c][q]: u of column c (ghosted) */
    dvec *rv, *uv; /* [c]: views of r and u over the parts */
    bcol *col;
} dbcg;

typedef struct restart_ctx {
    dbcg *B;
    int c;
} restart_ctx;

static int rows_restart(dsys *s, int q, int boundary, void *ctx, cls_error *err)
{
    (void)s;
    restart_ctx *r = ctx;
    return boundary ? la_pcm_restart(&r->B->w[q * r->B->k + r->c], 0, err) : CLS_OK;
}

static int rows_none(dsys *s, int q, int boundary, void *ctx, cls_error *err)
{
    (void)s, (void)q, (void)boundary, (void)ctx, (void)err;
    return CLS_OK;
}

/* column c from b - A x: r, p = s = 0, u = M^-1 r, r'u, r'r */
static void dbcg_restart(dbcg *B, int c)
{
    dsys *s = B->s;
    restart_ctx r = {B, c};
    dsys_spmv_halo(s, B->xs[c], rows_restart, &r);
    pc_apply(B->pc, &B->rv[c], &B->uv[c]);
    for (int q = 0; q < s->nmine; q++)
        DSYS_DO(s, la_pcm_dots(&B->w[q * B->k + c], DSYS_ERR));
    pcg_host_restarted(&B->col[c].h);
}

/* W = A U over the active columns; their sums; one reduction into v[4c..] */
static int dbcg_round(dbcg *B, double *v, int cancel_in, int *cancel_out, cls_error *err)
{
    dsys *s = B->s;
    const int k = B->k;
    int act[DSOLVE_MAX_RHS_BLOCK], na = 0;
    for (int c = 0; c < k; c++)
        if (B->col[c].active)
            act[na++] = c;
    for (int a = 0; a < na; a++) /* u's ghosts, column by column */
        dsys_spmv_halo(s, B->us[act[a]], rows_none, NULL);
    for (int q = 0; q < s->nmine; q++) {
        dpart *p = &s->parts[q];
        const la_vec *u[DSOLVE_MAX_RHS_BLOCK];
        la_vec *wv[DSOLVE_MAX_RHS_BLOCK];
        for (int a = 0; a < na; a++) {
            u[a] = &B->w[q * k + act[a]].u;
            wv[a] = &B->w[q * k + act[a]].w;
        }
        if (p->have_Ai && p->Ai.nrows > 0)
            DSYS_DO(s, la_spmm(&B->sk[q], &p->Ai, na, u, wv, DSYS_ERR));
        if (p->have_Ab && p->Ab.nrows > 0)
            DSYS_DO(s, la_spmm(&B->sk[q], &p->Ab, na, u, wv, DSYS_ERR));
        for (int a = 0; a < na; a++)
            DSYS_DO(s, la_pcm_block_sums_begin(&B->w[q * k + act[a]], DSYS_ERR));
    }
    double *hi = calloc((size_t)(4 * k), sizeof *hi), *lo = calloc((size_t)(4 * k), sizeof *lo);
    if (!hi || !lo) {
        cls_error e;
        cls_fail(&e, CLS_EOTHER, "out of memory for the sums");
        dsys_fail(s, &e);
    }
    for (int q = 0; q < s->nmine; q++)
        for (int a = 0; a < na; a++) {
            double o[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (!s->failed) {
                cls_error e;
                if (la_pcm_sums_wait(&B->w[q * k + act[a]], o, &e))
                    dsys_fail(s, &e);
            }
            for (int j = 0; hi && lo && j < 4; j++)
                dsum_pair_add(&hi[4 * act[a] + j], &lo[4 * act[a] + j], o[2 * j], o[2 * j + 1]);
        }
    double zero[4] = {0, 0, 0, 0};
    int rc =
        dsys_allreduce_n(s, 4 * k, hi ? hi : zero, lo ? lo : zero, v, cancel_in, cancel_out, err);
    free(hi);
    free(lo);
    return rc;
}

/* one column after the reduction: its history, then pcg_host_step */
static void dbcg_scalars(dbcg *B, int c, const double *v, const cg_options *opt, cg_result *res)
{
    bcol *b = &B->col[c];
    const double rr = v[3];
    cls_error e;
    if (!b->h.fresh || res[c].nhistory == 0) {
        res[c].rel_residual = sqrt(rr) / b->h.bnorm;
        if ((!b->h.fresh || isfinite(rr)) &&
            ksp_history_push(&res[c], &b->cap, res[c].rel_residual, &e)) {
            b->rc = cls_fail(&b->err, CLS_EOTHER, "%s", e.msg);
            b->active = 0;
            return;
        }
    }
    switch (pcg_host_step(&b->h, v, opt->maxiter, &res[c], &b->rc, &b->err)) {
    case PCG_HOST_DONE: /* converged, or failed: the others go on */
        b->active = 0;
        break;
    case PCG_HOST_RESTART:
        b->restart = 1;
        break;
    case PCG_HOST_UPDATE:
        b->update = 1;
        break;
    }
}

static void dbcg_free(dbcg *B)
{
    dsys *s = B->s;
    for (int q = 0; B->w && q < s->nmine; q++)
        for (int c = 0; c < B->k; c++)
            la_pcm_release(&B->w[q * B->k + c]);
    for (int q = 0; B->sk && q < s->nmine; q++)
        la_spmm_release(&B->sk[q]);
    for (int c = 0; c < B->k; c++) {
        if (B->xs)
            free(B->xs[c]);
        if (B->us)
            free(B->us[c]);
        if (B->rv)
            free(B->rv[c].v);
        if (B->uv)
            free(B->uv[c].v);
    }
    free(B->w);
    free(B->sk);
    free(B->xs);
    free(B->us);
    free(B->rv);
    free(B->uv);
    free(B->col);
}

int dbcg_solve(dsys *s, const dvec *b, dvec *x, int k, pc *pc, const cg_options *opt,
               cg_result *res, cls_error *err)
{
    dbcg B;
    memset(&B, 0, sizeof B);
    B.s = s;
    B.pc = pc;
    B.k = k;
    const int nq = s->nmine ? s->nmine : 1;
    int rc = CLS_OK, cancel = 0, want_cancel = 0;
    const double t0 = cls_now();
    cls_error e;
    for (int c = 0; c < k; c++)
        memset(&res[c], 0, sizeof res[c]);
    if (k < 1 || k > DSOLVE_MAX_RHS_BLOCK)
        return cls_fail(err, CLS_EUSAGE, "dbcg_solve: %d right-hand sides (1..%d)", k,
                        DSOLVE_MAX_RHS_BLOCK);
    B.w = calloc((size_t)nq * (size_t)k, sizeof *B.w);
    B.sk = calloc((size_t)nq, sizeof *B.sk);
    B.xs = calloc((size_t)k, sizeof *B.xs);
    B.us = calloc((size_t)k, sizeof *B.us);
    B.rv = calloc((size_t)k, sizeof *B.rv);
    B.uv = calloc((size_t)k, sizeof *B.uv);
    B.col = calloc((size_t)k, sizeof *B.col);
    int ok = B.w && B.sk && B.xs && B.us && B.rv && B.uv && B.col;
    for (int c = 0; ok && c < k; c++) {
        B.xs[c] = calloc((size_t)nq, sizeof **B.xs);
        B.us[c] = calloc((size_t)nq, sizeof **B.us);
        B.rv[c] = (dvec){calloc((size_t)nq, sizeof(la_vec)), s->nmine, 0};
        B.uv[c] = (dvec){calloc((size_t)nq, sizeof(la_vec)), s->nmine, 1};
        ok = B.xs[c] && B.us[c] && B.rv[c].v && B.uv[c].v;
    }
    if (!ok) {
        cls_fail(&e, CLS_EOTHER, "out of memory for the block CG workspace");
        dsys_fail(s, &e);
    }

    /* ||b_c|| for every column in one reduction */
    double *v = calloc((size_t)(4 * k + 4), sizeof *v);
    double *hi = calloc((size_t)(k + 1), sizeof *hi), *lo = calloc((size_t)(k + 1), sizeof *lo);
    if (!v || !hi || !lo) {
        free(v), free(hi), free(lo);
        dbcg_free(&B);
        return cls_fail(err, CLS_EOTHER, "out of memory for the block CG sums");
    }
    for (int c = 0; c < k; c++) {
        dsum ls;
        const dvec *bv[1] = {&b[c]};
        dvec_dots_local(s, 1, bv, bv, &ls);
        hi[c] = ls.hi[0];
        lo[c] = ls.lo[0];
    }
    if ((rc = dsys_allreduce_n(s, k, hi, lo, v, 0, NULL, err)))
        goto done;
    for (int c = 0; c < k; c++) {
        bcol *bc = &B.col[c];
        int zero;
        pcg_host_init(&bc->h, opt->tols ? opt->tols[c] : opt->tol, v[c]);
        bc->active = 1;
        bc->rc = ksp_stop_rhs(bc->h.bnorm, &res[c], &bc->cap, &zero, &bc->err);
        if (zero) { /* b = 0: x = 0 is exact */
            dvec_fill(s, 0.0, &x[c]);
            bc->active = 0;
            if (bc->rc) /* the history's memory: not the column's failure */
                dsys_fail(s, &bc->err), bc->rc = CLS_OK;
        } else if (bc->rc) {
            bc->active = 0;
        }
    }

    for (int q = 0; q < s->nmine && !s->failed; q++) {
        dpart *p = &s->parts[q];
        DSYS_DO(s, la_spmm_create(&p->la, &B.sk[q], DSYS_ERR));
        for (int c = 0; c < k && !s->failed; c++) {
            la_vec vb = b[c].v[q];
            vb.n = p->halo.nlocal;
            la_pcm *w = &B.w[q * k + c];
            DSYS_DO(s, la_pcm_create(&p->la, &p->Ai, p->have_Ab ? &p->Ab : NULL, p->halo.nghost,
                                     &vb, &x[c].v[q], 0, 0.0, w, DSYS_ERR));
            if (!s->failed) {
                B.xs[c][q] = &x[c].v[q];
                B.us[c][q] = &w->u;
                B.rv[c].v[q] = w->r;
                B.uv[c].v[q] = w->u;
            }
        }
    }
    for (int c = 0; c < k; c++)
        if (B.col[c].active)
            dbcg_restart(&B, c); /* r = b - A x0; u = M^-1 r */
    for (int c = 0; c < k; c++)
        res[c].start_s = cls_now() - t0;

    for (int64_t it = 0;; it++) {
        int any = 0;
        for (int c = 0; c < k; c++)
            any |= B.col[c].active;
        if (!any)
            break;
        CLS_TRY(dbcg_round(&B, v, want_cancel, &cancel, err)); /* the one reduction */
        if (cancel) {
            for (int c = 0; c < k; c++)
                rc = ksp_fail_cancelled(&res[c], it, err);
            goto done;
        }
        double worst = 0.0;
        for (int c = 0; c < k; c++) {
            bcol *bc = &B.col[c];
            if (!bc->active)
                continue;
            bc->restart = bc->update = 0;
            dbcg_scalars(&B, c, v + 4 * c, opt, res);
            /* the columns this round read, those it just ended included */
            if (res[c].rel_residual > worst)
                worst = res[c].rel_residual;
        }
        /* round it reads iteration it's residuals: the monitor hears 0 (the
         * initial ones) first, as from the one-column loops */
        if (s->rank == 0 && opt->monitor && opt->monitor(opt->monitor_ctx, it, worst))
            want_cancel = 1; /* the next reduction tells every rank */
        /* the updated columns' M^-1 r go together (pc_apply_block: one
         * V-cycle of SpMMs for amg); each column's steps are its own */
        const dvec *ur[DSOLVE_MAX_RHS_BLOCK];
        dvec *uu[DSOLVE_MAX_RHS_BLOCK];
        int upd[DSOLVE_MAX_RHS_BLOCK], nu = 0;
        for (int c = 0; c < k; c++) {
            bcol *bc = &B.col[c];
            if (!bc->active)
                continue;
            if (bc->restart) { /* to confirm on b - Ax, or after a lost recurrence */
                const double tc = cls_now();
                dbcg_restart(&B, c);
                res[c].confirm_s += cls_now() - tc;
                continue;
            }
            if (!bc->update)
                continue;
            for (int q = 0; q < s->nmine; q++) /* p, s, x, r */
                DSYS_DO(s, la_pcm_update(&B.w[q * k + c], bc->h.alpha, bc->h.beta, DSYS_ERR));
            ur[nu] = &B.rv[c];
            uu[nu] = &B.uv[c];
            upd[nu++] = c;
        }
        pc_apply_block(pc, nu, ur, uu); /* u = M^-1 r */
        for (int a = 0; a < nu; a++) {
            int c = upd[a];
            for (int q = 0; q < s->nmine; q++)
                DSYS_DO(s, la_pcm_dots(&B.w[q * k + c], DSYS_ERR));
            B.col[c].h.it++;
            res[c].iterations = B.col[c].h.it;
        }
    }
    /* the outcome: the first failing column's class and message */
    for (int c = 0; c < k && !rc; c++)
        if (B.col[c].rc) {
            rc = B.col[c].rc;
            cls_fail(err, rc, "right-hand side %d: %s", c + 1, B.col[c].err.msg);
        }

done:
    free(v);
    free(hi);
    free(lo);
    dbcg_free(&B);
    if (rc == CLS_EOTHER && err && err->code == CLS_OK)
        cls_fail(err, CLS_EOTHER, "dbcg_solve failed");
    return rc;
}
