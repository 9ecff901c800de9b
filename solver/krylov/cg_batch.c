/*
 * cg_batch.c: the batched CG. Many small independent systems, of any sizes
 * and sparsity patterns, are solved by ONE kernel launch with one
 * work-group per system (kernels/cg_batch.cl, la_cgb.h).
 *
 * Why: a system of 10^3-10^4 rows is bound by latency on a GPU even in one
 * launch (cg-small: 1138_bus takes 8.2 ms on an H200 on one of its 132
 * multiprocessors). A thousand of them one after another take seconds; side
 * by side in one launch they take about as long as the slowest. Ginkgo's
 * batch::solver::Cg does this for systems of one pattern; here the batch
 * is one block-diagonal matrix, so the patterns may differ.
 *
 * The recurrence is cg-small's (Hestenes-Stiefel, Jacobi or none; Saad,
 * Algorithm 9.1), run per system inside the kernel to its own end. What
 * happens at the end is ksp_stop.h's, per system, as for any other solve:
 *   converged in the recurrence -> the true residual ||b - Ax||/||b||
 *       computed here in double from the host's matrix; under tol: done;
 *       otherwise ksp_stop_confirm says restart (the system goes into the
 *       next launch from its x, residual replacement, aiming at half the
 *       residual it stopped at) or out of reach;
 *   maxiter -> not converged (ksp_fail_maxiter);
 *   p'Ap <= 0, NaN or Inf -> a breakdown of that system alone.
 * b = 0 gives x = 0, converged at iteration 0 (r'r = 0 <= 0 in the kernel).
 * One system's failure never touches another's rows, so a batch with a
 * bad system solves the rest.
 */
#include "cg_batch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"
#include "../../kernels/la_cgb.h"
#include "../solve.h"
#include "ksp_stop.h"

/* the batch's block-diagonal matrix, b and inverted diagonal on the host */
static int batch_assemble(const cg_batch_system *sys, int k, csr_matrix *M, double *b, double *dinv,
                          int64_t *row0, cls_error *err)
{
    int64_t r = 0, z = 0;
    for (int s = 0; s < k; s++) {
        const csr_matrix *A = sys[s].A;
        row0[s] = r;
        for (int64_t i = 0; i < A->nrows; i++) {
            M->rowptr[r + i] = z + A->rowptr[i];
            b[r + i] = sys[s].b[i];
            double d = 0.0;
            for (int64_t j = A->rowptr[i]; j < A->rowptr[i + 1]; j++)
                if (A->col[j] == i)
                    d = A->val[j];
            if (dinv)
                dinv[r + i] = d > 0.0 ? 1.0 / d : 1.0; /* solve_check_input refused d <= 0 */
        }
        for (int64_t j = 0; j < A->nnz; j++) {
            M->col[z + j] = (int32_t)(A->col[j] + r); /* its own block of columns */
            M->val[z + j] = A->val[j];
        }
        r += A->nrows;
        z += A->nnz;
    }
    row0[k] = r;
    M->rowptr[r] = z;
    (void)err;
    return CLS_OK;
}

int cg_batch_solve(la_ctx *la, cg_batch_system *sys, int k, solver_precond precond,
                   double *device_s, cls_error *err)
{
    *device_s = 0.0;
    if (precond != PRECOND_NONE && precond != PRECOND_JACOBI)
        return cls_fail(err, CLS_EINPUT,
                        "a batch runs no preconditioner but none or jacobi, not %s",
                        pc_name(precond));
    int64_t n = 0, nnz = 0;
    for (int s = 0; s < k; s++) {
        n += sys[s].A->nrows;
        nnz += sys[s].A->nnz;
    }
    if (n >= INT32_MAX || nnz >= INT32_MAX)
        return cls_fail(err, CLS_EINPUT,
                        "a batch of %lld rows and %lld entries is over 32-bit indices; split it",
                        (long long)n, (long long)nnz);
    const int jac = precond == PRECOND_JACOBI;
    csr_matrix M;
    memset(&M, 0, sizeof M);
    la_csr dA;
    la_vec vb = {0}, vx = {0}, vd = {0};
    la_cgb w;
    memset(&w, 0, sizeof w);
    int have_dA = 0;
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x);
    double *dinv = jac ? malloc((size_t)n * sizeof *dinv) : NULL;
    int64_t *row0 = malloc((size_t)(k + 1) * sizeof *row0);
    double *stop2 = malloc((size_t)k * sizeof *stop2), *rr = malloc((size_t)k * sizeof *rr);
    double *pq = malloc((size_t)k * sizeof *pq), *bnorm = malloc((size_t)k * sizeof *bnorm);
    int *maxit = malloc((size_t)k * sizeof *maxit), *state = malloc((size_t)k * 2 * sizeof *state);
    ksp_stop *st = malloc((size_t)k * sizeof *st);
    int rc = b && x && (dinv || !jac) && row0 && stop2 && rr && pq && bnorm && maxit && state && st
                 ? csr_alloc(&M, n, n, nnz, err)
                 : cls_fail(err, CLS_EOTHER, "out of memory for a batch of %d systems", k);
    if (!rc)
        rc = batch_assemble(sys, k, &M, b, dinv, row0, err);
    for (int s = 0; s < k && !rc; s++) {
        cg_batch_system *q = &sys[s];
        memset(&q->res, 0, sizeof q->res);
        q->rc = CLS_OK;
        q->msg[0] = '\0';
        const int64_t ns = q->A->nrows;
        const int64_t mi = q->maxiter > 0 ? q->maxiter : (ns * 10 > 1000 ? ns * 10 : 1000);
        maxit[s] = (int)(mi < INT32_MAX ? mi : INT32_MAX);
        bnorm[s] = solve_nrm2(q->b, ns);
        stop2[s] = q->tol * q->tol * bnorm[s] * bnorm[s]; /* r'r <= tol^2 b'b */
        state[2 * s] = LA_CGF_RUN;
        state[2 * s + 1] = 0;
        ksp_stop_init(&st[s], q->tol);
        if (!isfinite(bnorm[s])) { /* ksp_stop_rhs's verdict, without a launch */
            q->res.reason = CG_DIVERGED_NANORINF;
            snprintf(q->msg, sizeof q->msg, "the right-hand side holds NaN or Inf");
            q->rc = CLS_EBREAKDOWN;
            state[2 * s] = LA_CGF_NANORINF;
        }
    }
    for (int64_t i = 0; i < n && !rc; i++)
        x[i] = 0.0;
    if (!rc && !(rc = la_csr_upload(la, &M, LA_SPMV_SCALAR, &dA, err)))
        have_dA = 1;
    if (!rc && !(rc = la_vec_create(la, n, &vb, err)) && !(rc = la_vec_create(la, n, &vx, err)) &&
        !(rc = la_vec_upload(la, &vb, b, err)) && !(rc = la_vec_upload(la, &vx, x, err)) && jac &&
        !(rc = la_vec_create(la, n, &vd, err)))
        rc = la_vec_upload(la, &vd, dinv, err);
    if (!rc)
        rc = la_cgb_create(la, &dA, row0, k, &vb, &vx, jac ? &vd : NULL, &w, err);
    /* launches: the first runs every system; a later one only the systems
     * the confirmation restarted (ksp_stop: at most KSP_MAX_REPLACEMENTS) */
    for (int again = 1; again && !rc;) {
        again = 0;
        int *was = malloc((size_t)k * sizeof *was);
        if (!was) {
            rc = cls_fail(err, CLS_EOTHER, "out of memory for a batch run");
            break;
        }
        for (int s = 0; s < k; s++)
            was[s] = state[2 * s] == LA_CGF_RUN;
        const double t0 = cls_now();
        rc = la_cgb_run(&w, stop2, maxit, state, rr, pq, err);
        if (!rc)
            rc = la_vec_download(la, &vx, x, err);
        *device_s += cls_now() - t0;
        for (int s = 0; s < k && !rc; s++) {
            if (!was[s])
                continue;
            cg_batch_system *q = &sys[s];
            const int64_t it = state[2 * s + 1];
            const double *xs = x + row0[s];
            cls_error e;
            cls_error_clear(&e);
            q->res.iterations = it;
            q->res.rel_residual = bnorm[s] > 0.0 ? sqrt(rr[s]) / bnorm[s] : 0.0;
            switch (state[2 * s]) {
            case LA_CGF_CONVERGED: {
                if (bnorm[s] == 0.0) { /* x = 0 is exact */
                    q->res.reason = CG_CONVERGED_ZERO_RHS;
                    q->res.converged = 1;
                    q->res.rel_residual = 0.0;
                    break;
                }
                int v =
                    ksp_stop_confirm(&st[s], solve_true_residual(q->A, q->b, xs), it, &q->res, &e);
                if (v == KSP_RESTART && it < maxit[s]) {
                    state[2 * s] = LA_CGF_RUN; /* from x, at iteration it */
                    /* and aiming at half the residual: the start's r = b - Ax,
                     * computed at the device's precision, may already read
                     * under the old target (float near its reach) */
                    stop2[s] *= 0.25;
                    again = 1;
                } else if (v == KSP_RESTART) {
                    q->rc = ksp_fail_maxiter(&q->res, it, q->res.rel_residual, q->tol, &e);
                } else {
                    q->rc = v;
                }
                break;
            }
            case LA_CGF_RUN: /* maxit came first */
                q->rc = ksp_fail_maxiter(&q->res, it, q->res.rel_residual, q->tol, &e);
                break;
            case LA_CGF_INDEFINITE:
                q->rc = ksp_fail_indefinite(&q->res, pq[s], it + 1, &e);
                break;
            default:
                q->rc = ksp_fail_residual(&q->res, it, jac, &e);
                break;
            }
            if (q->rc != CLS_OK)
                snprintf(q->msg, sizeof q->msg, "%.255s", e.msg);
        }
        free(was);
    }
    for (int s = 0; s < k && !rc; s++)
        memcpy(sys[s].x, x + row0[s], (size_t)sys[s].A->nrows * sizeof *x);
    if (w.la)
        la_cgb_release(&w);
    la_vec_release(&vb);
    la_vec_release(&vx);
    la_vec_release(&vd);
    if (have_dA)
        la_csr_release(&dA);
    csr_free(&M);
    free(b);
    free(x);
    free(dinv);
    free(row0);
    free(stop2);
    free(rr);
    free(pq);
    free(bnorm);
    free(maxit);
    free(state);
    free(st);
    return rc;
}
