/*
 * cg_small.c: --method cg-small, the conjugate gradient method for small
 * systems with its whole loop in one kernel launch: one work-group per
 * system, barriers where the other device loops have launches.
 *
 * Hestenes and Stiefel, J. Res. NBS 49 (1952); Saad, "Iterative Methods
 * for Sparse Linear Systems", 2nd ed., Algorithm 9.1 (Jacobi or no
 * preconditioner): the recurrence of cg.c's default loop (cg_classic.cl),
 * so the iterates and iteration counts are --method cg's up to rounding.
 *
 * Why: between 10^3 and 10^5 rows a GPU iteration is bound by kernel
 * launches, not by memory traffic. cg.c's loop launches five kernels per
 * iteration (a 1138_bus solve: ~940 Jacobi iterations, ~40 ms of launch
 * latency on an H100 for 4,054 nonzeros), each busy for microseconds. Here
 * one launch of cg_small.cl's cgs_run runs up to LA_CGS_BATCH iterations in
 * one work-group: the SpMV over CSR rows (work-items stride over rows), the
 * two dot products per iteration as group tree reductions in local memory,
 * alpha, beta and the stopping test in every work-item's registers. It
 * pays on GPUs for systems one work-group can sweep quickly (a few 10^4
 * rows); it uses one compute unit, so large systems belong to cg / cg-single.
 * Not measured yet (bench/cg-small.sh is the measurement).
 *
 * The launch writes one record per iteration into the record ring exactly
 * as the fused kernels do (cls_fused_record, the LA_CGF_* stop codes), so
 * the loop around it is ksp_device.c's, unchanged but for one field:
 * ksp_device_ops.batch says one enqueue yields up to LA_CGS_BATCH records
 * (and enqueue is told how many iterations remain before maxiter). History,
 * monitor, maxiter, the confirmation on the true residual, restarts,
 * breakdown messages and cancel are that loop's (a cancel takes effect
 * within lag + 2 LA_CGS_BATCH iterations: the launches in flight finish).
 * The matrix is read in CSR: dsolve uploads it so when --format is auto, and
 * la_cgs_create refuses (CLS_EUSAGE) a format that keeps no CSR arrays.
 *
 * Scope, refused with CLS_EINPUT and a message naming the method: a system
 * split over several parts or ranks (one work-group is one device's; use
 * --method cg there) and any preconditioner but none, jacobi and
 * chebyshev. Chebyshev runs inside the launch (cg_small.cl's
 * cgs_cheb_rows: its polynomial's SpMVs with barriers where pc.cl has
 * launches; the coefficients and D^-1 come from the set-up pc through
 * cg_options.cheby, dcg.c); IC(0) and AMG would need their factors' and
 * levels' launches. Every precision runs: the kernel is written in real.cl's
 * real / mat_t / acc_t.
 */
#include <string.h>

#include "../../kernels/la_cgs.h"
#include "krylov.h"
#include "ksp_device.h"

/* the workspace: la_cgs and what its create needs */
typedef struct cgs_work {
    la_cgs w;
    la_ctx *la;
    const la_csr *A;
    const la_vec *b, *dinv;
    la_cgs_prec pc; /* Chebyshev or IC(0), applied in the kernel */
    la_vec *x;
    double tol;
    char *kernel; /* cg_result.kernel */
    size_t kernel_cap;
} cgs_work;

static int cgs_create(void *p, double bb, cls_error *err)
{
    cgs_work *c = p; /* the device stops when r'r <= tol^2 b'b */
    int rc =
        la_cgs_create(c->la, c->A, c->b, c->x, c->dinv, &c->pc, c->tol * c->tol * bb, &c->w, err);
    if (rc == CLS_OK)
        la_cgs_describe(&c->w, c->kernel, c->kernel_cap);
    return rc;
}
static int cgs_start(void *p, int64_t k, double *rr, double *rz, cls_error *err)
{
    return la_cgs_start(&((cgs_work *)p)->w, k, rr, rz, err); /* r = b - Ax; z = D^-1 r; p = z */
}
/* up to `room` iterations in one launch, each, in one work-group:
 *   q = A p;  pq = p'q;  qq = q'D^{-1}q              (reduction 1)
 *   rr <= tol^2 bb ? stop;  pq <= 0 ? stop;  record k
 *   alpha = rz / pq
 *   x += alpha p;  r -= alpha q;  z = D^{-1} r
 *   rz' = r'z;  rr' = r'r                             (reduction 2)
 *   beta = rz' / rz;  p = z + beta p */
static int cgs_enqueue(void *p, int64_t room, cls_error *err)
{
    return la_cgs_enqueue(&((cgs_work *)p)->w, room, err);
}
static int cgs_next(void *p, la_cgf_record *rec, cls_error *err)
{
    return la_cgs_next(&((cgs_work *)p)->w, rec, err);
}
static int cgs_last(void *p, double *rr, double *rz, cls_error *err)
{
    return la_cgs_last(&((cgs_work *)p)->w, rr, rz, err);
}
static int cgs_drain(void *p, cls_error *err)
{
    return la_cgs_drain(&((cgs_work *)p)->w, err);
}
static void cgs_release(void *p)
{
    la_cgs_release(&((cgs_work *)p)->w);
}
static void cgs_counts(void *p, int64_t *enq, int64_t *seen)
{
    const la_cgs *w = &((cgs_work *)p)->w;
    *enq = w->rg.enq;
    *seen = w->rg.seen;
}

static const ksp_device_ops cgs_ops = {
    .create = cgs_create,
    .start = cgs_start,
    .enqueue = cgs_enqueue,
    .next = cgs_next,
    .last = cgs_last,
    .drain = cgs_drain,
    .release = cgs_release,
    .counts = cgs_counts,
    .with_pc = 0,
    .can_lose = 0,
    .batch = LA_CGS_BATCH,
};

int cg_small_check_precond(solver_precond t, cls_error *err)
{
    if (t == PRECOND_NONE || t == PRECOND_JACOBI || t == PRECOND_CHEBYSHEV || t == PRECOND_IC0)
        return CLS_OK;
    return cls_fail(err, CLS_EINPUT,
                    "--method cg-small runs no preconditioner but none, jacobi, chebyshev or ic0, "
                    "not %s; use --method cg with --precond %s",
                    pc_name(t), pc_name(t));
}

int cg_small_solve(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
                   const cg_options *opt, cg_result *res, cls_error *err)
{
    memset(res, 0, sizeof *res);
    int rc = cg_small_check_precond(opt->precond, err);
    if (rc)
        return rc;
    if ((opt->precond == PRECOND_JACOBI || opt->precond == PRECOND_CHEBYSHEV) && !dinv)
        return cls_fail(err, CLS_EOTHER, "cg_small_solve: %s asked for without a diagonal",
                        pc_name(opt->precond));
    if (opt->precond == PRECOND_CHEBYSHEV && !opt->cheby)
        return cls_fail(err, CLS_EOTHER, "cg_small_solve: Chebyshev without its coefficients");
    if (opt->precond == PRECOND_IC0 && (!opt->ic0_l || !opt->ic0_u || opt->ic0_sweeps < 1))
        return cls_fail(err, CLS_EOTHER, "cg_small_solve: IC(0) without its swept triangles");
    cgs_work c;
    memset(&c, 0, sizeof c);
    c.la = la;
    c.A = A;
    c.b = b;
    c.x = x;
    c.dinv = opt->precond == PRECOND_JACOBI || opt->precond == PRECOND_CHEBYSHEV ? dinv : NULL;
    c.pc.cheb = opt->precond == PRECOND_CHEBYSHEV ? opt->cheby : NULL;
    if (opt->precond == PRECOND_IC0) {
        c.pc.l = opt->ic0_l;
        c.pc.u = opt->ic0_u;
        c.pc.sweeps = opt->ic0_sweeps;
    }
    c.tol = opt->tol;
    c.kernel = res->kernel;
    c.kernel_cap = sizeof res->kernel;
    return ksp_device_solve(la, b, x, &cgs_ops, &c, opt, res, err);
}
