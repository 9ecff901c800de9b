/*
 * amg_pcg.c: a plain preconditioned CG on la.h, the stand-alone driver the
 * AMG tests and bench/amg_bench.c solve with until the engine's
 * preconditioner hook (solver/pc.h, another branch) calls amg_apply.
 *
 * Hestenes-Stiefel PCG (Saad, Iterative Methods, 2nd ed., Algorithm 9.1),
 * two synchronisations per iteration, stopping on the unpreconditioned
 * relative residual ||r|| / ||b|| <= tol as clsolve does:
 *   r = b - A x ; z = M r ; p = z
 *   loop: q = A p ; alpha = r'z / p'q ; x += alpha p ; r -= alpha q
 *         z = M r ; beta = r'z_new / r'z ; p = z + beta p
 * M: one AMG V-cycle, Jacobi (dinv .* r), or none.
 */
#include "amg.h"

#include <math.h>
#include <string.h>

#include "../../common/timer.h"

static int apply_m(la_ctx *la, amg_device *M, const la_vec *dinv, const la_vec *r, la_vec *z,
                   cls_error *err)
{
    if (M)
        return amg_apply(M, la, r, z, err);
    if (dinv)
        return la_pointwise(la, dinv, r, z, err);
    return la_copy(la, r, z, err);
}

int amg_pcg(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, amg_device *M,
            const la_vec *dinv, double tol, int64_t maxiter, amg_pcg_result *res, cls_error *err)
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
    CLS_TRY(apply_m(la, M, dinv, &r, &z, err));
    CLS_TRY(la_copy(la, &z, &p, err));
    CLS_TRY(la_dot(la, &r, &z, &rz, err));
    while (res->iterations < maxiter) {
        CLS_TRY(la_spmv(la, A, &p, &q, err));
        CLS_TRY(la_dot(la, &p, &q, &pq, err));
        if (!(pq > 0.0) || !isfinite(pq) || !isfinite(rz) || !(rz > 0.0)) {
            res->breakdown = 1;
            break;
        }
        double alpha = rz / pq;
        CLS_TRY(la_axpy(la, alpha, &p, x, err));
        CLS_TRY(la_axpy(la, -alpha, &q, &r, err));
        CLS_TRY(la_dot(la, &r, &r, &rr, err));
        res->iterations++;
        res->rel_residual = sqrt(rr / bb);
        if (res->rel_residual <= tol) {
            res->converged = 1;
            break;
        }
        CLS_TRY(apply_m(la, M, dinv, &r, &z, err));
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
