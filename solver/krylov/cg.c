/*
 * cg.c: the conjugate gradient method on one device, unpreconditioned or
 * with Jacobi, its scalars on the device; and cg_solve, which picks the
 * one-part method.
 *
 * Hestenes and Stiefel, "Methods of Conjugate Gradients for Solving Linear
 * Systems", J. Res. NBS 49 (1952); the preconditioned form as in Saad,
 * "Iterative Methods for Sparse Linear Systems", 2nd ed., Algorithm 9.1, and
 * PETSc's KSPCG (src/ksp/ksp/impls/cg/cg.c).
 *
 * Three loops compute the same iterates in exact arithmetic.
 *
 * The default (LA_CGF_CLASSIC, cg_classic.cl) is the Hestenes-Stiefel
 * recurrence itself with its scalars on the device: beta = r_{k+1}'z_{k+1} /
 * r_k'z_k from two computed dot products, so a second one-group reduction
 * and a separate pass for p = z + beta p per iteration (five launches, 11 n
 * vector traffic). Its iteration counts are the textbook's (1138_bus 2149
 * against scipy's 2204, 494_bus 1140 against 1149, on PoCL; issue 26).
 *
 * --method cg-single (cg_options.single_reduction, LA_CGF_FUSED) is the
 * single-reduction CG of Chronopoulos and
 * Gear, "s-step iterative methods for symmetric linear systems", J. Comput.
 * Appl. Math. 25 (1989), in the kernel-fused form of Rupp, Tillet, Rudolf,
 * Weinbub, Morhammer, Grasser, Juengel and Selberherr, "Pipelined Iterative
 * Solvers with Kernel Fusion for Graphics Processing Units", ACM TOMS 43(2)
 * (2016) (ViennaCL's pipelined CG). All the dot products of an iteration are
 * taken in two passes (the SpMV yields p'Ap and (Ap)'D^-1(Ap); the update
 * yields r'z and r'r) because beta comes from the identity
 *     r_{k+1}'z_{k+1} = alpha_k^2 (Ap_k)' D^-1 (Ap_k) - r_k'z_k,
 * so x, r and p are all updated in one pass. Unlike ViennaCL, alpha and
 * beta are computed on the device (la_cgf, cg_fused.cl) and never travel:
 * the host only enqueues, and reads each iteration's record (residual,
 * alpha, beta, stop reason) without blocking while later iterations run.
 * Convergence and breakdown are tested on the device too, which stops
 * itself, so the iterations queued past the stopping one leave x as it was:
 * the host waits for nothing inside an iteration, and the iteration count is
 * exact. Vector traffic: 9 n (11 n with Jacobi) per iteration, against
 * 8 n for the textbook minimum and 13 n for the host loop below. The price
 * of the identity: its iterates drift from the textbook's, and on
 * ill-conditioned matrices it needs 3-16% more iterations (1138_bus 2276,
 * 494_bus 1201); per iteration it is 8-25% faster on an H200 (Poisson 256^3
 * to 64^3, docs/benchmarks.md), which is where it pays: large,
 * well-conditioned systems.
 *
 * --method cg-small (cg_options.one_launch) is the default recurrence with
 * the whole loop in one work-group and many iterations per launch
 * (cg_small.c, cg_small.cl): small systems, where launches dominate.
 *
 * The textbook loop (cg_options.classic = 1: two host synchronisations per
 * iteration, any preconditioner) is cg_ref.c, the twin the fused loops are
 * tested against.
 *
 * A general preconditioner (Chebyshev, incomplete Cholesky, AMG: no
 * diagonal identity for r'z) runs pcg.c's preconditioned single-reduction
 * loop, the same device-side scheme with a different recurrence.
 *
 * What this file holds is the recurrence's kernels (la_cgf, cg_fused.cl)
 * bound as ksp_device_ops; the loop around them (queue, records, history,
 * monitor, maxiter, the confirmation on the true residual computed with A at
 * full precision, restarts, breakdowns) is ksp_device.c's, shared with
 * pcg.c, and its stopping rule ksp_stop.c's, shared with every method.
 */
#include <string.h>

#include "../../kernels/cpu/la_cgn.h"
#include "krylov.h"
#include "ksp_device.h"

/* the workspace of one fused CG: la_cgf and what its create needs */
typedef struct cgf_work {
    la_cgf w;
    la_ctx *la;
    const la_csr *A;
    const la_vec *b, *dinv;
    la_vec *x;
    double tol;
    la_cgf_recurrence recurrence;
} cgf_work;

static int cgf_create(void *p, double bb, cls_error *err)
{
    cgf_work *c = p; /* the device stops when r'r <= tol^2 b'b */
    return la_cgf_create(c->la, c->A, c->b, c->x, c->dinv, c->tol * c->tol * bb, c->recurrence,
                         &c->w, err);
}
static int cgf_start(void *p, int64_t k, double *rr, double *rz, cls_error *err)
{
    return la_cgf_start(&((cgf_work *)p)->w, k, rr, rz, err); /* r = b - Ax; z = D^-1 r; p = z */
}
/* one iteration, on the device:
 *   q = A p;  pq = p'q;  qq = q'D^{-1}q                (SpMV)
 *   rr <= tol^2 bb ? stop;  pq <= 0 ? stop;
 *   alpha = rz / pq;  beta = (alpha^2 qq - rz) / rz   (one group)
 *   x += alpha p;  r -= alpha q;  z = D^{-1} r;  p = z + beta p;
 *   rz = r'z;  rr = r'r                                (update) */
static int cgf_enqueue(void *p, int64_t room, cls_error *err)
{
    (void)room; /* one iteration */
    return la_cgf_enqueue(&((cgf_work *)p)->w, err);
}
static int cgf_next(void *p, la_cgf_record *rec, cls_error *err)
{
    return la_cgf_next(&((cgf_work *)p)->w, rec, err);
}
static int cgf_last(void *p, double *rr, double *rz, cls_error *err)
{
    return la_cgf_last(&((cgf_work *)p)->w, rr, rz, err);
}
static int cgf_drain(void *p, cls_error *err)
{
    return la_cgf_drain(&((cgf_work *)p)->w, err);
}
static void cgf_release(void *p)
{
    la_cgf_release(&((cgf_work *)p)->w);
}
static void cgf_counts(void *p, int64_t *enq, int64_t *seen)
{
    const la_cgf *w = &((cgf_work *)p)->w;
    *enq = w->rg.enq;
    *seen = w->rg.seen;
}

static const ksp_device_ops cgf_ops = {
    .create = cgf_create,
    .start = cgf_start,
    .enqueue = cgf_enqueue,
    .next = cgf_next,
    .last = cgf_last,
    .drain = cgf_drain,
    .release = cgf_release,
    .counts = cgf_counts,
    .with_pc = 0,
    .can_lose = 0,
};

/* The same recurrences on a CPU device's memory by native loops
 * (kernels/cpu/la_cgn.h): the workspace is la_cgn instead of la_cgf, the
 * loop around it the same ksp_device_solve. */
typedef struct cgn_work {
    la_cgn w;
    cgf_work in; /* what create needs (its la_cgf unused) */
    int threads; /* the team the workspace ran on (for the report) */
} cgn_work;

static int cgn_create(void *p, double bb, cls_error *err)
{
    cgn_work *c = p;
    int rc = la_cgn_create(c->in.la, c->in.A, c->in.b, c->in.x, c->in.dinv,
                           c->in.tol * c->in.tol * bb, c->in.recurrence, &c->w, err);
    c->threads = c->w.ws.nt;
    return rc;
}
static int cgn_start(void *p, int64_t k, double *rr, double *rz, cls_error *err)
{
    return la_cgn_start(&((cgn_work *)p)->w, k, rr, rz, err);
}
static int cgn_enqueue(void *p, int64_t room, cls_error *err)
{
    (void)room; /* one iteration, run now */
    return la_cgn_enqueue(&((cgn_work *)p)->w, err);
}
static int cgn_next(void *p, la_cgf_record *rec, cls_error *err)
{
    return la_cgn_next(&((cgn_work *)p)->w, rec, err);
}
static int cgn_last(void *p, double *rr, double *rz, cls_error *err)
{
    return la_cgn_last(&((cgn_work *)p)->w, rr, rz, err);
}
static int cgn_drain(void *p, cls_error *err)
{
    (void)p; /* nothing runs behind the host's back */
    (void)err;
    return CLS_OK;
}
static void cgn_release(void *p)
{
    la_cgn_release(&((cgn_work *)p)->w);
}
static void cgn_counts(void *p, int64_t *enq, int64_t *seen)
{
    const la_cgn *w = &((cgn_work *)p)->w;
    *enq = w->enq;
    *seen = w->seen;
}

static const ksp_device_ops cgn_ops = {
    .create = cgn_create,
    .start = cgn_start,
    .enqueue = cgn_enqueue,
    .next = cgn_next,
    .last = cgn_last,
    .drain = cgn_drain,
    .release = cgn_release,
    .counts = cgn_counts,
    .with_pc = 0,
    .can_lose = 0,
    .native = 1,
};

int cg_solve(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
             const cg_options *opt, cg_result *res, cls_error *err)
{
    memset(res, 0, sizeof *res);
    if (opt->precond == PRECOND_JACOBI && !dinv && !opt->apply)
        return cls_fail(err, CLS_EOTHER, "cg_solve: Jacobi asked for without a diagonal");
    if (opt->precond != PRECOND_NONE && opt->precond != PRECOND_JACOBI && !opt->apply &&
        !(opt->one_launch && (opt->cheby || opt->ic0_l)))
        return cls_fail(err, CLS_EOTHER, "cg_solve: a preconditioner asked for without its apply");
    if (opt->backend == LA_BACKEND_NATIVE &&
        (opt->classic || opt->one_launch || (opt->apply && !opt->apply_host)))
        return cls_fail(err, CLS_EINPUT,
                        "backend native runs the cg and cg-single loops, and the preconditioners "
                        "with a native apply (chebyshev, ic0, amg) on one part (not %s)",
                        opt->apply        ? "this preconditioner"
                        : opt->one_launch ? "cg-small"
                                          : "the textbook twin");
    if (opt->classic || A->nrows != A->ncols)
        return cg_ref_solve(la, A, b, x, dinv, opt, res, err);
    if (opt->one_launch) /* --method cg-small */
        return cg_small_solve(la, A, b, x, dinv, opt, res, err);
    if (opt->apply)
        return pcg_fused(la, A, b, x, opt, res, err);
    cgf_work c;
    memset(&c, 0, sizeof c);
    c.la = la;
    c.A = A;
    c.b = b;
    c.x = x;
    c.dinv = opt->precond == PRECOND_JACOBI ? dinv : NULL;
    c.tol = opt->tol;
    c.recurrence = opt->single_reduction ? LA_CGF_FUSED : LA_CGF_CLASSIC;
    int rc;
    if (ksp_device_native(la, A, opt->backend, &rc, err)) {
        cgn_work n;
        memset(&n, 0, sizeof n);
        n.in = c;
        rc = ksp_device_solve(la, b, x, &cgn_ops, &n, opt, res, err);
        res->cpu_threads = n.threads;
        return rc;
    }
    if (rc)
        return rc;
    return ksp_device_solve(la, b, x, &cgf_ops, &c, opt, res, err);
}
