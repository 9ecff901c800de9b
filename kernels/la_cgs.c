/*
 * la_cgs.c: the host side of the one-launch CG for small systems (la_cgs.h;
 * the kernels are cg_small.cl's, the recurrence solver/krylov/cg_small.c's).
 *
 * Its kernels come from la's small program (la_small_program: built on
 * first use, so a solve with another method never compiles them) and get
 * their arguments once; an enqueue sets only the iteration count, launches
 * one work-group and enqueues the reads of the records it will write on
 * la's second queue, after the launch's event (la_ring_read_n), so the main
 * queue never drains for a read. Design of the layer: la_priv.h.
 */
#include "la_cgs.h"

#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "la_priv.h"
#include "../common/trace.h"
#include "ocl_gate.h"

#define CGS_REC 8 /* accumulators per record (cls_fused_record) */

/*
 * GPUs run cgs_run_reg (cg_small_reg.cl) when the rows fit
 * LA_SMALL_RPW_MAX per work-item at LA_CGS_REG_LOCAL work-items (and
 * 16-bit columns), and p and q with the reductions' scratch fit in local
 * memory; shuffles want whole warps. Its program is the one built for the
 * rows per work-item needed (la_small_reg_program) and holds cgs_start
 * too, so such a solve loads no other. CPU devices keep cgs_run: the
 * registers buy nothing there (PoCL: 0.094 s against 0.095 for 1138_bus)
 * and PoCL compiles the unrolled kernel anew for each work-group size
 * (about 12 s on the 2-core VM). CLSOLVE_CGS_KERNEL=reg|global chooses,
 * CLSOLVE_CGS_REG_LOCAL another work-group size (tests, measurements).
 * Returns CLS_OK with w->reg 0 when the system does not fit.
 */
static int cgs_pick_reg(la_cgs *w, int64_t n, size_t as, size_t rs, size_t *scratch, cls_error *err)
{
    la_ctx *la = w->la;
    const char *kenv = getenv("CLSOLVE_CGS_KERNEL");
    const int gpu = (la->ocl->dev.type & CL_DEVICE_TYPE_GPU) != 0;
    if (!(kenv ? !strcmp(kenv, "reg") : gpu) || n > 65536)
        return CLS_OK;
    size_t lr = LA_CGS_REG_LOCAL;
    const char *lenv = getenv("CLSOLVE_CGS_REG_LOCAL");
    if (lenv && atoi(lenv) > 0)
        lr = (size_t)atoi(lenv);
    lr = lai_min_sz(lr, la->ocl->dev.max_work_group);
    lr = lai_min_sz(lr, lai_max_sz(32, (size_t)((n + 31) / 32 * 32)));
    const int64_t rpw = (n + (int64_t)lr - 1) / (int64_t)lr;
    if (rpw > LA_SMALL_RPW_MAX)
        return CLS_OK;
    cl_program prog;
    cl_kernel k = NULL, ks = NULL;
    int shuffle = 0, rc;
    if ((rc = la_small_reg_program(la, (int)rpw, &prog, &shuffle, err)) ||
        (rc = ocl_create_kernel(prog, "cgs_run_reg", &k, err)) ||
        (rc = ocl_create_kernel(prog, "cgs_start", &ks, err))) {
        if (k)
            clReleaseKernel(k);
        return rc;
    }
    const size_t scr = shuffle ? 2 * 4 * 32 * as : 4 * lr * as;
    const size_t lmem = (size_t)la->ocl->dev.local_mem;
    if (lr > lai_kernel_max(la, k, lr) || lr > lai_kernel_max(la, ks, lr) || (shuffle && lr % 32) ||
        (lmem && (scr + 2 * (size_t)n * rs > lmem || 4 * lr * as > lmem))) {
        clReleaseKernel(k);
        clReleaseKernel(ks);
        return CLS_OK;
    }
    w->k_run = k;
    w->k_start = ks;
    w->reg = 1;
    w->shuffle = shuffle;
    w->ls = lr;
    w->rpw = (int)rpw;
    *scratch = scr;
    return CLS_OK;
}

/* Chebyshev (--precond chebyshev): its vectors z, d0, d1, res and the
 * coefficients as `real`, coef[0] = c0, coef[j] = c1[j], coef[32 + j] =
 * c2[j] (cg_small.cl's cgs_cheb_rows) */
static int cgs_cheb_create(la_cgs *w, const la_cheb_coef *c, int64_t n, size_t rs, cls_error *err)
{
    la_ctx *la = w->la;
    double v[64] = {0};
    v[0] = c->c0;
    for (int j = 1; j < c->degree && j < 32; j++) {
        v[j] = c->c1[j];
        v[32 + j] = c->c2[j];
    }
    unsigned char host[64 * sizeof(double)];
    for (int i = 0; i < 64; i++) {
        if (rs == sizeof(cl_float)) {
            const cl_float f = (cl_float)v[i];
            memcpy(host + i * rs, &f, rs);
        } else {
            memcpy(host + i * rs, &v[i], rs);
        }
    }
    int rc;
    if ((rc = la_vec_create(la, n, &w->z, err)) || (rc = la_vec_create(la, n, &w->d0, err)) ||
        (rc = la_vec_create(la, n, &w->d1, err)) || (rc = la_vec_create(la, n, &w->res, err)) ||
        (rc = lai_upload_buf(la, "Chebyshev coefficients", 64 * rs, host, &w->coef, err)))
        return rc;
    return CLS_OK;
}

/* count buffers (NULL ones too) as arguments i, i+1, ... of k */
static int cgs_mems(cl_kernel k, cl_uint i, const cl_mem *m, cl_uint count, cls_error *err)
{
    for (cl_uint j = 0; j < count; j++)
        OCL_CHECK(err, clSetKernelArg(k, i + j, sizeof(cl_mem), &m[j]),
                  "clSetKernelArg(one-launch CG)");
    return CLS_OK;
}

/* The preconditioner inside the loop: Chebyshev's deg and coef from
 * argument i of k (deg 0: none), its vectors z, d0, d1, res from j, IC(0)'s
 * sweeps and triangles from l (0 and NULLs without). cgs_run: 16, 18, 22;
 * cgs_start: 10, 15, 19 (A's CSR arrays between). */
static int cgs_prec_args(const la_cgs *w, cl_kernel k, cl_uint i, cl_uint j, cl_uint l,
                         cls_error *err)
{
    const la_tri *lo = w->pc.l, *up = w->pc.u;
    cl_int deg = w->deg, sweeps = lo ? w->pc.sweeps : 0;
    const cl_mem v[4] = {w->z.buf, w->d0.buf, w->d1.buf, w->res.buf};
    const cl_mem t[8] = {lo ? lo->rowptr : NULL, lo ? lo->col : NULL,    lo ? lo->val : NULL,
                         lo ? lo->dl : NULL,     lo ? up->rowptr : NULL, lo ? up->col : NULL,
                         lo ? up->val : NULL,    lo ? up->dl : NULL};
    OCL_CHECK(err, clSetKernelArg(k, i, sizeof deg, &deg), "clSetKernelArg(one-launch CG)");
    OCL_CHECK(err, clSetKernelArg(k, l, sizeof sweeps, &sweeps), "clSetKernelArg(one-launch CG)");
    int rc;
    if ((rc = cgs_mems(k, i + 1, &w->coef, 1, err)) || (rc = cgs_mems(k, j, v, 4, err)))
        return rc;
    return cgs_mems(k, l + 1, t, 8, err);
}

/* cgs_run_reg's p and q in local memory (arguments 16, 17) */
static int cgs_reg_locals(cl_kernel k, size_t bytes, cls_error *err)
{
    for (cl_uint i = 16; i < 18; i++)
        OCL_CHECK(err, clSetKernelArg(k, i, bytes, NULL), "clSetKernelArg(cgs_run_reg)");
    return CLS_OK;
}

int la_cgs_create(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
                  const la_cgs_prec *pc, double stop2, la_cgs *w, cls_error *err)
{
    memset(w, 0, sizeof *w);
    int rc;
    if ((rc = lai_check_len("la_cgs (b)", b->n, A->nrows, err)) ||
        (rc = lai_check_len("la_cgs (x)", x->n, A->nrows, err)) ||
        (rc = lai_check_len("la_cgs (square)", A->ncols, A->nrows, err)) ||
        (dinv && (rc = lai_check_len("la_cgs (diagonal)", dinv->n, A->nrows, err))))
        return rc;
    if (!A->rowptr || !A->col || !A->val)
        return cls_fail(err, CLS_EUSAGE,
                        "--method cg-small reads the matrix in CSR, but it was uploaded as %s "
                        "without its CSR arrays; use --format auto, csr or csr-vector",
                        la_spmv_variant_name(A->variant));
    const la_cheb_coef *cheb = pc ? pc->cheb : NULL;
    const int ic0 = pc && pc->l;
    if (ic0 && (!pc->u || pc->sweeps < 1 || pc->sweeps > 32 || pc->l->n != A->nrows))
        return cls_fail(err, CLS_EOTHER, "la_cgs_create: IC(0) with %d sweeps", pc->sweeps);
    if (cheb && (!dinv || cheb->degree < 1 || cheb->degree > 32))
        return cls_fail(err, CLS_EOTHER, "la_cgs_create: Chebyshev of degree %d%s", cheb->degree,
                        dinv ? "" : " without a diagonal");
    w->la = la;
    w->deg = cheb ? cheb->degree : 0;
    if (pc)
        w->pc = *pc;
    w->A = A;
    w->batch = LA_CGS_BATCH;
    const char *benv = getenv("CLSOLVE_CGS_BATCH");
    if (benv && atoi(benv) > 0 && atoi(benv) < LA_CGS_BATCH)
        w->batch = atoi(benv);
    w->b = *b;
    w->x = *x;
    if (dinv)
        w->d = *dinv;
    const int64_t n = A->nrows;
    const size_t as = lai_acc_size(la);
    const size_t rs = la->prec == LA_FLOAT ? sizeof(cl_float) : sizeof(cl_double); /* real */
    size_t scr_reg = 0;
    if ((rc = la_vec_create(la, n, &w->r, err)) || (rc = la_vec_create(la, n, &w->p, err)) ||
        (rc = la_vec_create(la, n, &w->q, err)) ||
        (cheb && (rc = cgs_cheb_create(w, cheb, n, rs, err))) ||
        (ic0 &&
         ((rc = la_vec_create(la, n, &w->z, err)) || (rc = la_vec_create(la, n, &w->d0, err)) ||
          (rc = la_vec_create(la, n, &w->d1, err)))) ||
        (!cheb && !ic0 && (rc = cgs_pick_reg(w, n, as, rs, &scr_reg, err))))
        goto fail;
    if (!w->reg) {
        cl_program prog;
        if ((rc = la_small_program(la, &prog, err)) ||
            (rc = ocl_create_kernel(prog, "cgs_run", &w->k_run, err)) ||
            (rc = ocl_create_kernel(prog, "cgs_start", &w->k_start, err)))
            goto fail;
        /* one work-group: the kernels' limit, LA_CGS_LOCAL, the rows rounded
         * up to 64, and the local memory (4 accumulators per work-item) */
        size_t want = LA_CGS_LOCAL; /* $CLSOLVE_CGS_LOCAL: another, for measuring */
        const char *env = getenv("CLSOLVE_CGS_LOCAL");
        if (env && atoi(env) > 0)
            want = (size_t)atoi(env);
        size_t ls = lai_kernel_max(la, w->k_run, lai_min_sz(want, la->ocl->dev.max_work_group));
        ls = lai_kernel_max(la, w->k_start, ls);
        ls = lai_min_sz(ls, lai_max_sz(64, (size_t)((n + 63) / 64 * 64)));
        if (la->ocl->dev.local_mem > 0)
            ls = lai_min_sz(ls, lai_max_sz(1, (size_t)(la->ocl->dev.local_mem / 2 / (4 * as))));
        w->ls = ls ? ls : 1;
    }
    cls_trace("la_cgs: program, vectors, kernels");
    {
        char msg[128];
        la_cgs_describe(w, msg, sizeof msg);
        cls_trace(msg);
    }

    if ((rc = lai_cgf_buffer(la, 4 * as, &w->sc, err)) || /* alpha, beta, r'z, r'r */
        (rc = lai_cgf_buffer(la, 2 * sizeof(cl_int), &w->ctl, err)) ||
        (rc = lai_cgf_buffer(la, LA_CGF_SLOTS * CGS_REC * as, &w->hist, err)))
        goto fail;
    cl_int cn = (cl_int)n, slots = LA_CGF_SLOTS, count = 1, k0 = 0;
    real_arg s2 = lai_mk_acc(la, stop2);
    if ((rc = lai_set_args(w->k_run, "cgs_run", err, 16, A_INT(cn), A_MEM(A->rowptr), A_MEM(A->col),
                           A_MEM(A->val), A_MEM(w->x.buf), A_MEM(w->r.buf), A_MEM(w->p.buf),
                           A_MEM(w->q.buf), A_MEM(w->d.buf), A_MEM(w->sc), A_MEM(w->ctl),
                           A_MEM(w->hist), A_INT(slots), A_REAL(s2), A_INT(count),
                           A_LOCAL(w->reg ? scr_reg : 4 * w->ls * as))) ||
        (w->reg && (rc = cgs_reg_locals(w->k_run, (size_t)n * rs, err))) ||
        (!w->reg && (rc = cgs_prec_args(w, w->k_run, 16, 18, 22, err))) ||
        (rc = lai_set_args(w->k_start, "cgs_start", err, 10, A_INT(cn), A_MEM(w->b.buf),
                           A_MEM(w->q.buf), A_MEM(w->r.buf), A_MEM(w->p.buf), A_MEM(w->d.buf),
                           A_MEM(w->sc), A_MEM(w->ctl), A_INT(k0), A_LOCAL(4 * w->ls * as))) ||
        (rc = cgs_prec_args(w, w->k_start, 10, 15, 19, err)) ||
        (rc = cgs_mems(w->k_start, 12, (const cl_mem[3]){A->rowptr, A->col, A->val}, 3, err)))
        goto fail;
    if ((rc = lai_ring_open(la, w->hist, LA_CGF_SLOTS * CGS_REC * as, "one-launch CG", err)))
        goto fail;
    return CLS_OK;
fail:
    la_cgs_release(w);
    return rc;
}

void la_cgs_describe(const la_cgs *w, char *buf, size_t cap)
{
    const int64_t n = w->A ? w->A->nrows : 0;
    snprintf(buf, cap, "%s, %zu work-items, %lld rows per work-item",
             !w->reg      ? "cgs_run (global memory)"
             : w->shuffle ? "cgs_run_reg (registers, warp shuffles)"
                          : "cgs_run_reg (registers)",
             w->ls, (long long)((n + (int64_t)w->ls - 1) / (int64_t)w->ls));
}

int la_cgs_drain(la_cgs *w, cls_error *err)
{
    return la_ring_drain(&w->rg, "one-launch CG", err);
}

/* sc's r'z, r'r (blocking) */
static int cgs_read_sums(la_cgs *w, double *rr, double *rz, cls_error *err)
{
    unsigned char host[4 * sizeof(double)];
    double v[4];
    cl_int st = clEnqueueReadBuffer(w->la->ocl->queue, w->sc, CL_TRUE, 0, 4 * lai_acc_size(w->la),
                                    host, 0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(one-launch CG scalars)");
    lai_acc_to_double(w->la, host, 4, v);
    *rz = v[2];
    *rr = v[3];
    return CLS_OK;
}

int la_cgs_start(la_cgs *w, int64_t k, double *rr, double *rz, cls_error *err)
{
    la_ctx *la = w->la;
    int rc = la_ring_reset(&w->rg, k, "one-launch CG", err);
    if (rc)
        return rc;
    /* q = A x at full precision; then one group: r = b - q; p = z; r'z, r'r */
    cl_int k0 = (cl_int)k;
    OCL_CHECK(err, clSetKernelArg(w->k_start, 8, sizeof k0, &k0), "clSetKernelArg(cgs_start)");
    if ((rc = la_spmv_full(la, w->A, &w->x, &w->q, err)) ||
        (rc = lai_launch(la, w->k_start, "cgs_start", 1, w->ls, err)))
        return rc;
    return cgs_read_sums(w, rr, rz, err);
}

int la_cgs_last(la_cgs *w, double *rr, double *rz, cls_error *err)
{
    return cgs_read_sums(w, rr, rz, err);
}

int la_cgs_enqueue(la_cgs *w, int64_t room, cls_error *err)
{
    la_ctx *la = w->la;
    const int64_t free_slots = LA_CGF_SLOTS - 1 - (w->rg.enq - w->rg.seen);
    int64_t m = room < w->batch ? room : w->batch;
    if (m > free_slots)
        m = free_slots;
    if (m < 1)
        return cls_fail(err, CLS_EOTHER, "la_cgs_enqueue: %lld records already in flight",
                        (long long)(w->rg.enq - w->rg.seen));
    cl_int count = (cl_int)m;
    OCL_CHECK(err, clSetKernelArg(w->k_run, 14, sizeof count, &count), "clSetKernelArg(cgs_run)");
    cl_event ev = NULL;
    size_t ls = w->ls;
    cl_int st = ocl_enqueue_kernel(la->ocl, w->k_run, ls, &ls, &ev); /* one work-group */
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER,
                        "clEnqueueNDRangeKernel(cgs_run, local %zu) failed: %s (%d)", ls,
                        ocl_errstr(st), (int)st);
    if (la->capture && la->nev < (int)(sizeof la->ev / sizeof *la->ev) &&
        clRetainEvent(ev) == CL_SUCCESS) {
        la->evname[la->nev] = "cgs_run";
        la->ev[la->nev++] = ev;
    }
    st = clFlush(la->ocl->queue);
    if (st != CL_SUCCESS) {
        clReleaseEvent(ev);
        OCL_CHECK(err, st, "clFlush");
    }
    /* the m records, once the launch is done */
    int rc = la_ring_read_n(la, &w->rg, w->hist, ev, count, "one-launch CG", err);
    clReleaseEvent(ev);
    return rc;
}

int la_cgs_next(la_cgs *w, la_cgf_record *rec, cls_error *err)
{
    return la_ring_next(w->la, &w->rg, rec, "one-launch CG", err);
}

void la_cgs_release(la_cgs *w)
{
    if (!w || !w->la)
        return;
    la_cgs_drain(w, NULL);
    cl_kernel *ks[] = {&w->k_run, &w->k_start};
    cl_mem *ms[] = {&w->sc, &w->ctl, &w->hist, &w->coef};
    lai_release_objects(ks, (int)(sizeof ks / sizeof *ks), ms, (int)(sizeof ms / sizeof *ms));
    la_vec *vs[] = {&w->r, &w->p, &w->q, &w->z, &w->d0, &w->d1, &w->res};
    for (size_t i = 0; i < sizeof vs / sizeof *vs; i++)
        la_vec_release(vs[i]);
}
