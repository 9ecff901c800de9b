/*
 * ksp_device.c: the device-scalar loop of cg.c and pcg.c (design in
 * ksp_device.h).
 *
 * The host keeps `lag` iterations queued beyond the record it awaits,
 * never beyond maxiter updates (a batch method: lag + batch records, up to
 * two launches). The device stops itself (converged,
 * indefinite, NaN), so the iterations queued past the stopping one leave x
 * as it was: the iteration count is exact and the host never waits inside
 * an iteration. Whatever stopped the device, the loop drains the queue
 * before it acts (a restart reads b - Ax, which needs x at rest).
 */
#include "ksp_device.h"

#include <math.h>
#include <string.h>

#include "../../common/timer.h"
#include "../../common/trace.h"
#include "../../kernels/cpu/cpu_ws.h"
#include "../../kernels/la_pcm.h"
#include "ksp_stop.h"

/* the mean time between records from which one queued iteration is kept
 * (ksp_device.h): an iteration this long covers the host's read and the
 * enqueue of the next, even of an AMG V-cycle's few dozen launches */
#define KSP_DEVICE_SLOW_S 1e-3

/* Updates applied after a cancel: the records still queued say which of
 * the queued iterations ran (a stopped device applies none). */
static int64_t ksp_device_applied(const ksp_device_ops *ops, void *w, int64_t kstart)
{
    int64_t enq, seen;
    ops->counts(w, &enq, &seen);
    int64_t applied = kstart + seen;
    la_cgf_record rec;
    while (seen < enq) {
        if (ops->next(w, &rec, NULL))
            break;
        if (rec.stop != LA_CGF_RUN)
            return rec.k;
        applied = rec.k + 1;
        ops->counts(w, &enq, &seen);
    }
    return applied;
}

/* The breakdown a stopped record says (the queue drained first). */
static int ksp_device_breakdown(const ksp_device_ops *ops, const la_cgf_record *rec, cg_result *res,
                                cls_error *err)
{
    res->iterations = rec->k;
    if (rec->stop == LA_CGF_INDEFINITE)
        return ksp_fail_indefinite(res, rec->pq, rec->k + 1, err);
    if (ops->with_pc && rec->stop == LA_PCM_PC_INDEFINITE)
        return ksp_fail_pc_indefinite(res, rec->rz, rec->k, err);
    return ksp_fail_residual(res, rec->k, ops->with_pc, err);
}

int ksp_device_solve(la_ctx *la, const la_vec *b, la_vec *x, const ksp_device_ops *ops, void *w,
                     const cg_options *opt, cg_result *res, cls_error *err)
{
    int lag = opt->lag > 0 ? (opt->lag < LA_CGF_MAXLAG ? opt->lag : LA_CGF_MAXLAG) : 2;
    const int lag_adapts = opt->lag <= 0;
    double t_rec0 = 0.0; /* the first record's arrival */
    int64_t nrec = 0;    /* records read since it (the adaptation's evidence) */
    const int batch = ops->batch > 1 ? ops->batch : 1; /* records one enqueue may add */
    int64_t cap = 0, kstart = 0, enq, seen;
    int rc = CLS_EOTHER, zero;
    double bb, rr, rz, bnorm, rel;
    ksp_stop st;
    la_cgf_record rec;

    const double t0 = cls_now();
    ksp_stop_init(&st, opt->tol);
    CLS_TRY(ksp_stop_rhs_la(la, b, x, ops->native, res, &cap, &bb, &zero, err)); /* bb = b'b */
    cls_trace("ksp: b'b");
    bnorm = sqrt(bb);
    if (zero) { /* b = 0: x = 0 is exact */
        rc = CLS_OK;
        goto done;
    }
    CLS_TRY(ops->create(w, bb, err)); /* the device stops when r'r <= tol^2 b'b */
    cls_trace("ksp: workspace");
    CLS_TRY(ops->start(w, 0, &rr, &rz, err)); /* r = b - A x0; z = M^-1 r; p = z */
    cls_trace("ksp: initial residual");
    if (!isfinite(rr) || !isfinite(rz)) { /* rr = r'r; rz = r'z */
        rc = ksp_fail_residual(res, -1, ops->with_pc, err);
        goto done;
    }
    res->rel_residual = sqrt(rr) / bnorm;
    CLS_TRY(ksp_history_push(res, &cap, res->rel_residual, err));
    if (opt->monitor) /* iteration 0: the initial residual (no cancel here) */
        (void)opt->monitor(opt->monitor_ctx, 0, res->rel_residual);
    res->start_s = cls_now() - t0;

    for (;;) {
        ops->counts(w, &enq, &seen);
        while (enq - seen < lag + batch && kstart + enq < opt->maxiter) {
            CLS_TRY(ops->enqueue(w, opt->maxiter - kstart - enq, err));
            ops->counts(w, &enq, &seen);
        }
        if (seen == enq) {
            /* maxiter updates applied and every record read: x_maxiter */
            CLS_TRY(ops->last(w, &rr, &rz, err)); /* rr = r'r of the last update */
            res->iterations = opt->maxiter;
            rel = sqrt(rr) / bnorm;
            res->rel_residual = rel;
            if (opt->maxiter > kstart) {
                CLS_TRY(ksp_history_push(res, &cap, rel, err));
                if (opt->monitor && opt->monitor(opt->monitor_ctx, opt->maxiter, rel)) {
                    rc = ksp_fail_cancelled(res, opt->maxiter, err);
                    goto done;
                }
            }
            if (!isfinite(rr)) {
                memset(&rec, 0, sizeof rec);
                rec.stop = LA_CGF_NANORINF;
                rec.k = opt->maxiter;
                goto breakdown;
            }
            if (rel <= opt->tol) {
                rec.k = opt->maxiter;
                goto confirm;
            }
            rc = ksp_fail_maxiter(res, opt->maxiter, rel, opt->tol, err);
            goto done;
        }
        CLS_TRY(ops->next(w, &rec, err)); /* record k: rr, rz, pq, alpha, beta */
        if (lag_adapts && lag > 1) {      /* slow iterations: one queued (ksp_device.h) */
            const double now = cls_now();
            if (nrec++ == 0)
                t_rec0 = now;
            else if (nrec >= 3 && (now - t_rec0) / (double)(nrec - 1) >= KSP_DEVICE_SLOW_S)
                lag = 1;
        }
        rel = sqrt(rec.rr) / bnorm;       /* ||r_k|| / ||b|| */
        if (rec.k > kstart) {             /* (record kstart is the start) */
            res->iterations = rec.k;
            res->rel_residual = rel;
            CLS_TRY(ksp_history_push(res, &cap, rel, err));
            if (opt->monitor && opt->monitor(opt->monitor_ctx, rec.k, rel)) {
                rc = ksp_fail_cancelled(res, rec.k, err);
                res->iterations = ksp_device_applied(ops, w, kstart);
                goto done;
            }
        }
        if (rec.stop == LA_CGF_RUN)
            continue;
        if (ops->can_lose && rec.stop == LA_CGF_INDEFINITE && rec.beta != 0.0 &&
            ksp_stop_lost_pap(&st, rec.pq, rec.qq,
                              res->rel_residual)) { /* record: p'Ap, delta = u'Au */
            /* p'Ap of the recurrence lost its sign: restart from b - Ax */
            CLS_TRY(ops->drain(w, err));
            CLS_TRY(ops->start(w, rec.k, &rr, &rz, err));
            kstart = rec.k;
            continue;
        }
        if (rec.stop != LA_CGF_CONVERGED)
            goto breakdown;

    confirm:
        /* confirm on the true residual; restart from it if the recurrence
         * has drifted (ksp_stop.h) */
        {
            const double tc = cls_now();
            CLS_TRY(ops->drain(w, err)); /* queued iterations were no-ops */
            if (ops->residual)
                CLS_TRY(ops->residual(w, rec.k, &rr, err)); /* r = b - A x; r'r */
            else
                CLS_TRY(ops->start(w, rec.k, &rr, &rz, err)); /* and z = M^-1 r; p = z */
            res->confirm_s += cls_now() - tc;
        }
        if ((rc = ksp_stop_confirm(&st, sqrt(rr) / bnorm, rec.k, res, err)) != KSP_RESTART)
            goto done;  /* converged, or out of reach */
        kstart = rec.k; /* restarted: p = z */
        if (kstart >= opt->maxiter) {
            rc = ksp_fail_maxiter(res, kstart, res->rel_residual, opt->tol, err);
            goto done;
        }
        if (ops->residual) /* the restart's state: z = M^-1 r, p = z */
            CLS_TRY(ops->start(w, rec.k, &rr, &rz, err));
        continue;

    breakdown:
        CLS_TRY(ops->drain(w, err));
        rc = ksp_device_breakdown(ops, &rec, res, err);
        goto done;
    }

done:
    ops->release(w); /* w was zeroed by the caller: a release before create is a no-op */
    if (rc == CLS_EOTHER && err && err->code == CLS_OK)
        cls_fail(err, CLS_EOTHER, "the Krylov solve failed");
    return rc;
}

int ksp_device_native(la_ctx *la, const la_csr *A, la_backend backend, int *rc, cls_error *err)
{
    *rc = CLS_OK;
    if (backend == LA_BACKEND_OPENCL)
        return 0;
    cls_error why = {0};
    if (cpu_ws_usable(la, A, &why) == CLS_OK)
        return 1;
    if (backend == LA_BACKEND_NATIVE)
        *rc = cls_fail(err, CLS_EINPUT, "backend native: %s", why.msg);
    return 0;
}
