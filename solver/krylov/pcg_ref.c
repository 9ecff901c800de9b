/*
 * pcg_ref.c: a plain preconditioned CG on la.h, the reference twin of the
 * preconditioned loops (pcg.c, dpcg.c): the AMG tests and
 * bench/amg_bench.c solve with it (amg_pcg: M = one V-cycle), so the
 * hierarchy is judged apart from the fused loops' restarts and records.
 *
 * Hestenes-Stiefel PCG (Saad, Iterative Methods, 2nd ed., Algorithm 9.1),
 * two synchronisations per iteration, stopping on the unpreconditioned
 * relative residual ||r|| / ||b|| <= tol of the recurrence:
 *   r = b - A x ; z = M r ; p = z
 *   loop: q = A p ; alpha = r'z / p'q ; x += alpha p ; r -= alpha q
 *         z = M r ; beta = r'z_new / r'z ; p = z + beta p
 */
#include <math.h>
#include <string.h>

#include "../../common/timer.h"
#include "krylov.h"

/* z = M^-1 r; without a preconditioner z = r */
static int pcg_ref_apply(la_ctx *la, cg_apply_fn apply, void *ctx, const la_vec *r, la_vec *z,
                         cls_error *err)
{
    return apply ? apply(ctx, r, z, err) : la_copy(la, r, z, err);
}

int pcg_ref_solve(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, cg_apply_fn apply,
                  void *apply_ctx, double tol, int64_t maxiter, pcg_ref_result *res, cls_error *err)
{
    memset(res, 0, sizeof *res);
    double t0 = cls_now();
    int64_t n = A->nrows;
    la_vec r = {0}, z = {0}, p = {0}, q = {0};
    int rc = CLS_OK;
    double bb, rr, rz, pq;
    CLS_TRY(la_vec_create(la, n, &r, err));
    CLS_TRY(la_vec_create(la, n, &z, err));
    CLS_TRY(la_vec_create(la, n, &p, err));
    CLS_TRY(la_vec_create(la, n, &q, err));
    CLS_TRY(la_dot(la, b, b, &bb, err));
    CLS_TRY(la_residual(la, A, b, x, &q, &r, &rr, err)); /* r = b - A x */
    if (bb == 0.0) {
        CLS_TRY(la_fill(la, 0.0, x, err));
        res->converged = 1;
        goto done;
    }
    res->rel_residual = sqrt(rr / bb);
    if (res->rel_residual <= tol) {
        res->converged = 1;
        goto done;
    }
    CLS_TRY(pcg_ref_apply(la, apply, apply_ctx, &r, &z, err)); /* z = M r */
    CLS_TRY(la_copy(la, &z, &p, err));                         /* p = z */
    CLS_TRY(la_dot(la, &r, &z, &rz, err));                     /* rz = r'z */
    while (res->iterations < maxiter) {
        CLS_TRY(la_spmv(la, A, &p, &q, err));  /* q = A p */
        CLS_TRY(la_dot(la, &p, &q, &pq, err)); /* pq = p'q */
        if (!(pq > 0.0) || !isfinite(pq) || !isfinite(rz) || !(rz > 0.0)) {
            res->breakdown = 1;
            break;
        }
        double alpha = rz / pq;                    /* alpha = r'z / p'q */
        CLS_TRY(la_axpy(la, alpha, &p, x, err));   /* x += alpha p */
        CLS_TRY(la_axpy(la, -alpha, &q, &r, err)); /* r -= alpha q */
        CLS_TRY(la_dot(la, &r, &r, &rr, err));     /* rr = r'r */
        res->iterations++;
        res->rel_residual = sqrt(rr / bb);
        if (res->rel_residual <= tol) {
            res->converged = 1;
            break;
        }
        CLS_TRY(pcg_ref_apply(la, apply, apply_ctx, &r, &z, err)); /* z = M r */
        double rz_new;
        CLS_TRY(la_dot(la, &r, &z, &rz_new, err));
        CLS_TRY(la_xpay(la, &z, rz_new / rz, &p, err)); /* p = z + beta p */
        rz = rz_new;
    }
    CLS_TRY(la_finish(la, err));
done:;
    la_vec *vs[] = {&r, &z, &p, &q};
    for (int i = 0; i < 4; i++)
        if (vs[i]->buf)
            la_vec_release(vs[i]);
    res->seconds = cls_now() - t0;
    return rc;
}
