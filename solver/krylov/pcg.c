/*
 * pcg.c: the preconditioned single-reduction CG on one device, for a
 * general symmetric positive-definite preconditioner M (Chebyshev,
 * incomplete Cholesky, AMG; Jacobi keeps cg.c's diagonal fast path).
 *
 * Chronopoulos and Gear, "s-step iterative methods for symmetric linear
 * systems", J. Comput. Appl. Math. 25 (1989); the preconditioned form as in
 * Saad, "Iterative Methods for Sparse Linear Systems", 2nd ed., Alg. 9.1
 * with the inner products rearranged so an iteration needs ONE reduction
 * (PETSc's KSPCG with -ksp_cg_single_reduction; Ghysels and Vanroose,
 * Parallel Computing 40 (2014), Alg. 2). With u = M^-1 r, w = A u:
 *
 *   gamma_k = r_k'u_k;  delta_k = u_k'w_k;  rr_k = r_k'r_k    (one reduction)
 *   beta_k  = gamma_k / gamma_{k-1}                            (0 at a start)
 *   p_k'Ap_k = delta_k - beta_k gamma_k / alpha_{k-1}          (delta_k at a start)
 *   alpha_k = gamma_k / p_k'Ap_k
 *   p_k = u_k + beta_k p_{k-1};  s_k = w_k + beta_k s_{k-1}    (s = A p)
 *   x_{k+1} = x_k + alpha_k p_k;  r_{k+1} = r_k - alpha_k s_k
 *   u_{k+1} = M^-1 r_{k+1};  w_{k+1} = A u_{k+1}
 *
 * As in cg.c's fused loop, the scalars and the stopping test run on the
 * device (pcgf_scalars) and the host only enqueues: an iteration is the
 * SpMV (its epilogue yields u'w), the scalars, the update, the
 * preconditioner's kernels (opt->apply) and the sums r'u, r'r. This file
 * binds those kernels (la_pcm, pcg_fused.cl) as ksp_device_ops; the loop
 * (records, confirmation on b - Ax, restarts) is ksp_device.c's, cg.c's
 * too.
 *
 * p'Ap from the recurrence is a difference of two sums; on ill-conditioned
 * systems rounding can take its sign before the iterates go wrong (as in
 * pipelined CG, pipecg.c). A non-positive value there is taken as a loss of
 * the recurrence and the method restarts from b - Ax, where p'Ap = u'Au is
 * computed directly (can_lose); only a non-positive value right after a
 * (re)start is reported as an indefinite matrix. gamma = r'M^-1 r <= 0 means M is not
 * positive definite: reported as such.
 */
#include <string.h>

#include "../../kernels/cpu/la_pcn.h"
#include "../../kernels/la_pcm.h"
#include "krylov.h"
#include "ksp_device.h"

/* the workspace of one preconditioned fused CG */
typedef struct pcm_work {
    la_pcm w;
    la_ctx *la;
    const la_csr *A;
    const la_vec *b;
    la_vec *x;
    const cg_options *opt; /* opt->apply: u = M^-1 r */
} pcm_work;

static int pcm_create(void *p, double bb, cls_error *err)
{
    pcm_work *c = p; /* the device stops when r'r <= tol^2 b'b */
    return la_pcm_create(c->la, c->A, NULL, 0, c->b, c->x, 1, c->opt->tol * c->opt->tol * bb, &c->w,
                         err);
}
/* (re)start at k: r = b - Ax, u = M^-1 r, then r'r and r'u (blocking) */
static int pcm_start(void *p, int64_t k, double *rr, double *ru, cls_error *err)
{
    pcm_work *c = p;
    int rc;
    if ((rc = la_pcm_restart(&c->w, k, err)) ||
        (rc = c->opt->apply(c->opt->apply_ctx, &c->w.r, &c->w.u, err)) ||
        (rc = la_pcm_dots(&c->w, err)))
        return rc;
    return la_pcm_last(&c->w, rr, ru, err);
}
/* the confirmation's true residual: r = b - Ax, then the sums (r'u of a
 * stale u, unused) and r'r (blocking); M^-1 only if it restarts */
static int pcm_residual(void *p, int64_t k, double *rr, cls_error *err)
{
    pcm_work *c = p;
    double ru;
    int rc;
    if ((rc = la_pcm_restart(&c->w, k, err)) || (rc = la_pcm_dots(&c->w, err)))
        return rc;
    return la_pcm_last(&c->w, rr, &ru, err);
}
/* one iteration: SpMV (u'w), scalars, update (la_pcm_enqueue), u = M^-1 r,
 * then r'u and r'r (la_pcm_dots) */
static int pcm_enqueue(void *p, int64_t room, cls_error *err)
{
    (void)room; /* one iteration */
    pcm_work *c = p;
    int rc;
    if ((rc = la_pcm_enqueue(&c->w, err)) ||
        (rc = c->opt->apply(c->opt->apply_ctx, &c->w.r, &c->w.u, err)))
        return rc;
    return la_pcm_dots(&c->w, err);
}
static int pcm_next(void *p, la_cgf_record *rec, cls_error *err)
{
    return la_pcm_next(&((pcm_work *)p)->w, rec, err);
}
static int pcm_last(void *p, double *rr, double *ru, cls_error *err)
{
    return la_pcm_last(&((pcm_work *)p)->w, rr, ru, err);
}
static int pcm_drain(void *p, cls_error *err)
{
    return la_pcm_drain(&((pcm_work *)p)->w, err);
}
static void pcm_release(void *p)
{
    la_pcm_release(&((pcm_work *)p)->w);
}
static void pcm_counts(void *p, int64_t *enq, int64_t *seen)
{
    const la_pcm *w = &((pcm_work *)p)->w;
    *enq = w->rg.enq;
    *seen = w->rg.seen;
}

static const ksp_device_ops pcm_ops = {
    .create = pcm_create,
    .start = pcm_start,
    .enqueue = pcm_enqueue,
    .next = pcm_next,
    .last = pcm_last,
    .drain = pcm_drain,
    .residual = pcm_residual,
    .release = pcm_release,
    .counts = pcm_counts,
    .with_pc = 1,
    .can_lose = 1,
};

/*
 * The native twin (kernels/cpu/la_pcn.h): on a CPU device, when the
 * preconditioner has a native apply (opt->apply_host), the same recurrence
 * and records as C loops on a team of threads, M applied natively on the
 * workspace's r and u.
 */
typedef struct pcn_work {
    la_pcn w;
    la_ctx *la;
    const la_csr *A;
    const la_vec *b;
    la_vec *x;
    const cg_options *opt;
    int threads; /* the team the workspace ran on (for the report) */
} pcn_work;

static int pcn_create(void *p, double bb, cls_error *err)
{
    pcn_work *c = p;
    int rc = la_pcn_create(c->la, c->A, c->b, c->x, c->opt->tol * c->opt->tol * bb, &c->w, err);
    c->threads = c->w.ws.nt;
    return rc;
}
/* u = M^-1 r, natively */
static int pcn_apply(pcn_work *c, cls_error *err)
{
    return c->opt->apply_host(c->opt->apply_ctx, &c->w.ws, &c->w.A, c->w.r, c->w.u, err);
}
static int pcn_start(void *p, int64_t k, double *rr, double *ru, cls_error *err)
{
    pcn_work *c = p;
    int rc;
    if ((rc = la_pcn_restart(&c->w, k, err)) || (rc = pcn_apply(c, err)) ||
        (rc = la_pcn_dots(&c->w, err)))
        return rc;
    return la_pcn_last(&c->w, rr, ru, err);
}
static int pcn_enqueue(void *p, int64_t room, cls_error *err)
{
    (void)room;
    pcn_work *c = p;
    int rc = la_pcn_enqueue(&c->w, err);
    if (rc || c->w.stopped) /* past a stop nothing moves: M is not applied */
        return rc;
    return (rc = pcn_apply(c, err)) ? rc : la_pcn_dots(&c->w, err);
}
static int pcn_next(void *p, la_cgf_record *rec, cls_error *err)
{
    return la_pcn_next(&((pcn_work *)p)->w, rec, err);
}
static int pcn_last(void *p, double *rr, double *ru, cls_error *err)
{
    return la_pcn_last(&((pcn_work *)p)->w, rr, ru, err);
}
static int pcn_drain(void *p, cls_error *err)
{
    (void)p; /* every iteration ended in its enqueue */
    (void)err;
    return CLS_OK;
}
static void pcn_release(void *p)
{
    la_pcn_release(&((pcn_work *)p)->w);
}
static void pcn_counts(void *p, int64_t *enq, int64_t *seen)
{
    const la_pcn *w = &((pcn_work *)p)->w;
    *enq = w->enq;
    *seen = w->seen;
}

static const ksp_device_ops pcn_ops = {
    .create = pcn_create,
    .start = pcn_start,
    .enqueue = pcn_enqueue,
    .next = pcn_next,
    .last = pcn_last,
    .drain = pcn_drain,
    .release = pcn_release,
    .counts = pcn_counts,
    .with_pc = 1,
    .can_lose = 1,
    .native = 1,
};

int pcg_fused(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const cg_options *opt,
              cg_result *res, cls_error *err)
{
    int rc = CLS_OK;
    if (opt->apply_host && ksp_device_native(la, A, opt->backend, &rc, err)) {
        pcn_work n;
        memset(&n, 0, sizeof n);
        n.la = la;
        n.A = A;
        n.b = b;
        n.x = x;
        n.opt = opt;
        rc = ksp_device_solve(la, b, x, &pcn_ops, &n, opt, res, err);
        res->cpu_threads = n.threads;
        return rc;
    }
    if (rc)
        return rc;
    pcm_work c;
    memset(&c, 0, sizeof c);
    c.la = la;
    c.A = A;
    c.b = b;
    c.x = x;
    c.opt = opt;
    return ksp_device_solve(la, b, x, &pcm_ops, &c, opt, res, err);
}
