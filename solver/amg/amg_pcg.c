/*
 * amg_pcg.c: the AMG tests' and bench/amg_bench.c's solve: the reference
 * preconditioned CG (krylov/pcg_ref.c) with one V-cycle as M, or Jacobi
 * (dinv), or none, so a hierarchy is judged on the textbook loop.
 */
#include "amg.h"

/* the preconditioner pcg_ref_solve applies: z = M^-1 r */
typedef struct amg_pcg_m {
    la_ctx *la;
    amg_device *M;
    const la_vec *dinv;
} amg_pcg_m;

static int amg_pcg_apply(void *ctx, const la_vec *r, la_vec *z, cls_error *err)
{
    amg_pcg_m *m = ctx;
    if (m->M)
        return amg_apply(m->M, m->la, r, z, err);   /* one V-cycle */
    return la_pointwise(m->la, m->dinv, r, z, err); /* z = D^-1 r */
}

int amg_pcg(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, amg_device *M,
            const la_vec *dinv, double tol, int64_t maxiter, amg_pcg_result *res, cls_error *err)
{
    amg_pcg_m m = {la, M, dinv};
    return pcg_ref_solve(la, A, b, x, M || dinv ? amg_pcg_apply : NULL, &m, tol, maxiter, res, err);
}
