/*
 * bcg.c: block conjugate gradients (O'Leary, "The block conjugate gradient
 * algorithm and related methods", Linear Algebra Appl. 29 (1980); the
 * Hestenes-Stiefel form of her Algorithm 1 with a preconditioner M): k
 * right-hand sides share ONE search space, so each column converges in the
 * block Krylov space of all k and needs fewer iterations than alone (the k
 * smallest eigenvalues stop mattering: 182 against 227 iterations at
 * poisson3d 64 with 8 columns, Jacobi), while an iteration reads the
 * matrix once for the k (the block SpMM) and moves each vector once.
 * --method bcg; dbcg.c is the other way to take k columns together (k
 * separate recurrences in lockstep), and what this one falls back to.
 *
 * With X, R, P, Q, Z n x k blocks and k x k matrices G, alpha, rho, beta:
 *   R = B - A X;  Z = M^-1 R;  rho = Z'R;  P = Z   (a start: la_spmm,
 *                                                  bcg_resid, bcg_gram)
 *   loop:
 *     Q = A P;  G = P'Q         (bcg_spmm_*, row-major; G fused two wide)
 *     alpha = G^-1 rho                                     (Cholesky, host)
 *     R -= Q alpha;  r_c'r_c                               (bcg_update_rr)
 *     Z = M^-1 R;  rho' = Z'R            (bcg_gram; Jacobi: (D^-1 R)'R, no Z)
 *     beta = rho^-1 rho';  rho = rho'                      (Cholesky, host)
 *     X += P alpha;  P = Z + P beta          (bcg_dir: the old P read once)
 *     stop when every column's ||r_c|| <= tol_c ||b_c||, confirmed on B - A X
 * (P'R = Z'R because P_old'R = 0, which is why alpha uses rho.)
 *
 * The k x k matrices are read to the host each iteration (two reads of 72
 * doubles) and solved there by Cholesky: 8 x 8 costs nothing beside an
 * iteration of 10^7 rows. G and rho are symmetric positive definite as
 * long as the block keeps rank k; a Cholesky pivot that vanishes against
 * its diagonal (columns that are, or became, dependent: b_2 = 3 b_1, or a
 * column that converged while others did not) ends the block, and the
 * columns finish one by one in dbcg.c from where the block left x, the
 * iterations of both counted. The same happens where the block has no
 * kernels: several parts, more than LA_BCG_MAXK columns, a BCSR matrix
 * (its SpMM is la_spmm's column by column), a zero or non-finite b.
 *
 * The stopping rules are ksp_stop.h's per column: the recurrence's
 * residuals reach tol, then the true residuals B - A X decide (converged,
 * restart from them, out of reach); maxiter and the monitor's cancel end
 * every column.
 */
#include "dcg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"
#include "../../common/trace.h"
#include "../../kernels/la_bcg.h"
#include "../../kernels/la_spmm.h"
#include "ksp_stop.h"

#define BK LA_BCG_MAXK
/* a Cholesky pivot under this fraction of its diagonal: the block lost rank */
#define BCG_RANK_TOL 1e-13

/* L L' = A (k x k, stride BK, symmetric: its lower triangle is read); 0
 * when the block has rank k, 1 when a pivot vanished, -1 when A is not
 * finite */
static int bcg_chol(const double *A, int k, double *L)
{
    memset(L, 0, BK * BK * sizeof *L);
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++)
            if (!isfinite(A[i * BK + j]))
                return -1;
    for (int j = 0; j < k; j++) {
        const double ajj = A[j * BK + j];
        double d = ajj;
        for (int m = 0; m < j; m++)
            d -= L[j * BK + m] * L[j * BK + m];
        if (!(ajj > 0.0) || !(d > BCG_RANK_TOL * ajj))
            return 1;
        L[j * BK + j] = sqrt(d);
        for (int i = j + 1; i < k; i++) {
            double s = A[i * BK + j];
            for (int m = 0; m < j; m++)
                s -= L[i * BK + m] * L[j * BK + m];
            L[i * BK + j] = s / L[j * BK + j];
        }
    }
    return 0;
}

/* X = (L L')^-1 Bm, k x k, stride BK */
static void bcg_chol_solve(const double *L, int k, const double *Bm, double *X)
{
    memset(X, 0, BK * BK * sizeof *X);
    for (int c = 0; c < k; c++) {
        double y[BK];
        for (int i = 0; i < k; i++) { /* L y = b_c */
            double s = Bm[i * BK + c];
            for (int m = 0; m < i; m++)
                s -= L[i * BK + m] * y[m];
            y[i] = s / L[i * BK + i];
        }
        for (int i = k - 1; i >= 0; i--) { /* L' x = y */
            double s = y[i];
            for (int m = i + 1; m < k; m++)
                s -= L[m * BK + i] * X[m * BK + c];
            X[i * BK + c] = s / L[i * BK + i];
        }
    }
}

typedef struct bcg {
    dsys *s;
    dpart *p;
    pc *pc;
    la_bcg w;
    la_spmmk sk;
    int general;        /* a preconditioner's Z = M^-1 R is stored (not none or Jacobi) */
    const la_vec *dinv; /* Jacobi's D^-1, else NULL */
    int k;
    double rho[BK * BK], rr[BK];
} bcg;

/* the sums after R changed: rr from out, and rho = Z'R: R'R, (D^-1 R)'R,
 * or the preconditioner's Z = M^-1 R, then Z'R */
static int bcg_after_r(bcg *B, const double *out, cls_error *err)
{
    double g[LA_BCG_NSUM];
    for (int c = 0; c < B->k; c++)
        B->rr[c] = out[64 + c];
    int rc;
    if (!B->general && B->w.rho_fused) { /* the update's pass summed it */
        memcpy(g, out, sizeof g);
        rc = CLS_OK;
    } else if (!B->general) {
        rc = la_bcg_gram_cols(&B->w, B->w.R, B->w.R, B->dinv, g, err);
    } else {
        const dvec *rp[BK];
        dvec *zp[BK];
        dvec rv[BK], zv[BK];
        for (int c = 0; c < B->k; c++) {
            rv[c] = (dvec){&B->w.rv[c], 1, 0};
            zv[c] = (dvec){&B->w.zv[c], 1, 0};
            rp[c] = &rv[c];
            zp[c] = &zv[c];
        }
        pc_apply_block(B->pc, B->k, rp, zp); /* Z = M^-1 R */
        if (B->s->failed) {
            if (err)
                *err = B->s->ferr;
            return CLS_EOTHER;
        }
        rc = la_bcg_gram_cols(&B->w, B->w.Z, B->w.R, NULL, g, err);
    }
    if (!rc)
        memcpy(B->rho, g, sizeof B->rho);
    return rc;
}

/* R = B - A X with its sums, and P = Z: a start or a restart */
static int bcg_restart(bcg *B, cls_error *err)
{
    double out[LA_BCG_NSUM];
    int rc = la_bcg_ax(&B->w, &B->sk, &B->p->Ai, err); /* R = A X, then B - R */
    if (!rc)
        rc = la_bcg_resid(&B->w, out, err);
    if (!rc)
        rc = bcg_after_r(B, out, err);
    if (!rc)
        rc = la_bcg_dir(&B->w, B->general ? B->w.Z : B->w.R, B->dinv, NULL, 1, 0, err);
    return rc;
}

/* one iteration: Q = A P, alpha, the update and the new sums, beta, P.
 * 1: the block lost rank (the caller falls back); -1 not finite; else rc */
static int bcg_step(bcg *B, int *lost, cls_error *err)
{
    const int k = B->k;
    /* zeroed: the kernels' mixings may read past k (times P's zero columns) */
    double out[LA_BCG_NSUM], L[BK * BK], alpha[BK * BK] = {0}, beta[BK * BK] = {0};
    *lost = 0;
    /* G = P'Q in the SpMM where the width chose it (la_bcg.c), else bcg_gram, its twin */
    int rc = la_bcg_spmm(&B->w, &B->p->Ai, B->w.fused ? out : NULL, err); /* Q = A P */
    if (!rc && !B->w.fused)
        rc = la_bcg_gram_pq(&B->w, out, err); /* G = P'AP */
    if (rc)
        return rc;
    if ((*lost = bcg_chol(out, k, L)))
        return CLS_OK;
    bcg_chol_solve(L, k, B->rho, alpha); /* alpha = G^-1 rho */
    double rho_old[BK * BK];
    memcpy(rho_old, B->rho, sizeof rho_old);
    if ((rc = la_bcg_update(&B->w, alpha, out, err)) || (rc = bcg_after_r(B, out, err)))
        return rc;
    cl_mem zsrc = B->general ? B->w.Z : B->w.R;
    if ((*lost = bcg_chol(rho_old, k, L))) { /* X += P alpha still (P's new value unused) */
        memset(beta, 0, sizeof beta);
        rc = la_bcg_dir(&B->w, zsrc, B->dinv, beta, 0, 1, err);
        return rc;
    }
    bcg_chol_solve(L, k, B->rho, beta); /* beta = rho_old^-1 rho */
    return la_bcg_dir(&B->w, zsrc, B->dinv, beta, 0, 1, err); /* X += P alpha; P = Z + P beta */
}

/* the block's x into the columns' x (before a fall back, and at the end) */
static int bcg_x_out(bcg *B, dvec *x, cls_error *err)
{
    for (int c = 0; c < B->k; c++) {
        la_vec v = x[c].v[0];
        int rc = la_bcg_get(&B->w, B->w.X, c, &v, err);
        if (rc)
            return rc;
    }
    return CLS_OK;
}

int bcg_solve(dsys *s, const dvec *b, dvec *x, int k, pc *pc, const cg_options *opt, cg_result *res,
              cls_error *err)
{
    if (k < 2 || k > BK || s->size != 1 || s->nmine != 1 || !s->parts[0].have_Ai ||
        s->parts[0].have_Ab || s->parts[0].halo.nghost > 0 || !la_bcg_supports(&s->parts[0].Ai))
        return dbcg_solve(s, b, x, k, pc, opt, res, err);
    const double t0 = cls_now();
    bcg B;
    memset(&B, 0, sizeof B);
    B.s = s;
    B.p = &s->parts[0];
    B.pc = pc;
    B.k = k;
    const int jac = pc && pc->type == PRECOND_JACOBI;
    const int general = pc && !jac && pc->type != PRECOND_NONE;
    B.general = general;
    la_vec dv;
    if (jac) {
        dv = pc->dinv.v[0];
        dv.n = B.p->halo.nlocal;
        B.dinv = &dv;
    }
    la_ctx *la = &B.p->la;
    const int64_t n = B.p->halo.nlocal;
    double bn[BK], stop2[BK], g[LA_BCG_NSUM];
    ksp_stop st[BK];
    int64_t cap[BK];
    int rc = la_bcg_create(la, n, k, general, &B.w, err);
    /* on a CPU, native loops (a general M^-1 runs kernels on Z), unless
     * --backend opencl asks for the kernels */
    if (!rc && !general && opt->backend != LA_BACKEND_OPENCL)
        la_bcg_native(&B.w, &B.p->Ai, B.dinv);
    if (!rc && !B.w.cpu) /* R = A X's kernels: the native loops have their own */
        rc = la_spmm_create(la, &B.sk, err);
    for (int c = 0; c < k && !rc; c++) {
        la_vec vb = b[c].v[0], vx = x[c].v[0];
        vb.n = vx.n = n;
        if (!(rc = la_bcg_put(&B.w, B.w.B, c, &vb, err)))
            rc = la_bcg_put(&B.w, B.w.X, c, &vx, err);
    }
    if (!rc)
        rc = la_bcg_gram_cols(&B.w, B.w.B, B.w.B, NULL, g, err); /* b_c'b_c on the diagonal */
    int plain = 1;
    for (int c = 0; c < k && !rc; c++) {
        bn[c] = sqrt(g[c * BK + c]);
        plain = plain && isfinite(bn[c]) && bn[c] > 0.0;
    }
    if (!rc && !plain) { /* zero or non-finite columns: dbcg.c ends each on its own */
        la_spmm_release(&B.sk);
        la_bcg_release(&B.w);
        return dbcg_solve(s, b, x, k, pc, opt, res, err);
    }
    for (int c = 0; c < k; c++) {
        memset(&res[c], 0, sizeof res[c]);
        cap[c] = 0;
        const double tol = opt->tols ? opt->tols[c] : opt->tol;
        ksp_stop_init(&st[c], tol);
        stop2[c] = tol * tol * bn[c] * bn[c];
    }
    if (!rc)
        rc = bcg_restart(&B, err);
    for (int c = 0; c < k; c++)
        res[c].start_s = cls_now() - t0;
    int64_t it = 0;
    int done = 0, lost = 0, cancelled = 0;
    while (!rc && !done) {
        double worst = 0.0;
        int all = 1, finite = 1;
        for (int c = 0; c < k && !rc; c++) {
            res[c].rel_residual = sqrt(B.rr[c]) / bn[c];
            res[c].iterations = it;
            finite = finite && isfinite(B.rr[c]);
            all = all && B.rr[c] <= stop2[c];
            if (res[c].rel_residual > worst || !isfinite(res[c].rel_residual))
                worst = res[c].rel_residual;
            rc = ksp_history_push(&res[c], &cap[c], res[c].rel_residual, err);
        }
        if (rc)
            break;
        if (!finite) { /* every column shares the space: all end */
            for (int c = 0; c < k; c++)
                rc = ksp_fail_residual(&res[c], it, general, err);
            break;
        }
        if (opt->monitor && opt->monitor(opt->monitor_ctx, it, worst)) {
            for (int c = 0; c < k; c++)
                rc = ksp_fail_cancelled(&res[c], it, err);
            cancelled = 1; /* not a device's failure: its state stays warm */
            break;
        }
        if (all) { /* confirm on B - A X, every column */
            const double tc = cls_now();
            if ((rc = bcg_restart(&B, err)))
                break;
            int again = 0, verdict = CLS_OK;
            for (int c = 0; c < k; c++) {
                cls_error e;
                int v = ksp_stop_confirm(&st[c], sqrt(B.rr[c]) / bn[c], it, &res[c], &e);
                if (v == KSP_RESTART)
                    again = 1;
                else if (v != CLS_OK && verdict == CLS_OK) {
                    verdict = v;
                    cls_fail(err, v, "right-hand side %d: %s", c + 1, e.msg);
                }
            }
            res[0].confirm_s += cls_now() - tc; /* the columns' one confirmation (summed) */
            if (!again) {
                rc = verdict;
                done = 1;
            }
            continue; /* restarted from B - A X: P = Z */
        }
        if (it >= opt->maxiter) {
            for (int c = 0; c < k; c++) {
                cls_error e;
                int v = CLS_OK;
                if (B.rr[c] <= stop2[c]) /* this one is there (unconfirmed) */
                    res[c].converged = 1, res[c].reason = CG_CONVERGED_RTOL;
                else
                    v = ksp_fail_maxiter(&res[c], it, res[c].rel_residual,
                                         opt->tols ? opt->tols[c] : opt->tol, &e);
                if (v && !rc) {
                    rc = v;
                    cls_fail(err, v, "right-hand side %d: %s", c + 1, e.msg);
                }
            }
            if (!rc)
                rc = CLS_ENOTCONV;
            break;
        }
        const int prof = it == 5 && getenv("CLSOLVE_BCG_PROFILE");
        if (prof)
            la_capture_begin(la);
        rc = bcg_step(&B, &lost, err);
        if (prof) { /* one iteration's launches, in order, then by kernel, to stderr */
            double each[LA_CAPTURE_MAX];
            const char *names[LA_CAPTURE_MAX];
            int cnt = 0;
            double tot = la_capture_end_named(la, each, names, LA_CAPTURE_MAX, &cnt);
            fprintf(stderr, "bcg profile: %d launches, %.3f ms:", cnt, 1e3 * tot);
            for (int e = 0; e < cnt && e < 64; e++)
                fprintf(stderr, " %.3f", 1e3 * each[e]);
            fprintf(stderr, "\nbcg profile by kernel:");
            for (int e = 0; e < cnt; e++) { /* each name once, at its first launch */
                int seen = 0, m = 0;
                double ms = 0.0;
                for (int f = 0; f < cnt && !seen; f++)
                    seen = f < e && strcmp(names[f], names[e]) == 0;
                for (int f = e; f < cnt && !seen; f++)
                    if (strcmp(names[f], names[e]) == 0)
                        m++, ms += 1e3 * each[f];
                if (!seen)
                    fprintf(stderr, " %s x%d %.3f;", names[e], m, ms);
            }
            fprintf(stderr, "\n");
        }
        if (rc)
            break;
        if (lost)
            break;
        it++;
    }
    int xrc = B.w.la ? bcg_x_out(&B, x, rc ? NULL : err) : CLS_OK;
    if (!rc && xrc)
        rc = xrc;
    la_spmm_release(&B.sk);
    la_bcg_release(&B.w);
    if (rc == CLS_EOTHER && !cancelled)
        dsys_fail(s, err);
    if (!rc && lost) { /* the columns on their own from here (dbcg.c) */
        char msg[160];
        snprintf(msg, sizeof msg,
                 "bcg: the block lost rank at iteration %lld (%s); columns go on "
                 "one by one",
                 (long long)it, lost < 0 ? "not finite" : "dependent columns");
        cls_trace(msg);
        cg_result keep[BK];
        memcpy(keep, res, (size_t)k * sizeof *res);
        rc = dbcg_solve(s, b, x, k, pc, opt, res, err);
        for (int c = 0; c < k; c++) {
            res[c].iterations += it;
            res[c].start_s += keep[c].start_s;
            res[c].confirm_s += keep[c].confirm_s;
            cg_result_free(&keep[c]);
        }
    }
    return rc;
}
