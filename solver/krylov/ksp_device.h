/*
 * ksp_device.h: the loop of the methods whose scalars live on the device
 * (cg.c's fused CG, pcg.c's preconditioned single-reduction CG), written
 * once over a small kernel contract.
 *
 * Such a method never waits inside an iteration: alpha, beta and the
 * stopping test are computed on the device, which stops itself, and the
 * host only enqueues iterations and reads each one's record (residual,
 * scalars, stop code: la_cgf_record) while `lag` later ones are queued.
 * The queue hides the host's read and enqueue (tens of microseconds); its
 * price is the queued iterations after the stopping one, which still run
 * their preconditioner (the SpMV and updates see the stop flag, M^-1 does
 * not). So when iterations turn out slow (KSP_DEVICE_SLOW_S a record on
 * average, as an AMG V-cycle at 10^7 rows), one iteration queued is enough
 * and the loop keeps one (opt->lag, when set, is kept as given).
 * What the loop owns is everything but the recurrence: the queue depth, the
 * history and the monitor, maxiter, the confirmation on the true residual
 * and the restart (ksp_stop.h), the lost-recurrence restart, the breakdown
 * messages, and how many updates a cancel left applied. A method gives its
 * kernels as ksp_device_ops; the stop codes are la.h's LA_CGF_* (la_pcm.h
 * adds LA_PCM_PC_INDEFINITE with the same numbering). A method may also run
 * many iterations in one launch (cg_small.c): its enqueue then adds up to
 * `batch` records at once, and the loop is otherwise the same.
 */
#ifndef CLS_SOLVER_KRYLOV_KSP_DEVICE_H
#define CLS_SOLVER_KRYLOV_KSP_DEVICE_H

#include <stdint.h>

#include "krylov.h"

typedef struct ksp_device_ops {
    /* the workspace for b'b = bb (the device stops at r'r <= tol^2 bb) */
    int (*create)(void *w, double bb, cls_error *err);
    /* (re)start at update k: r = b - Ax, z = M^-1 r, p = z; blocks and
     * returns r'r and r'z */
    int (*start)(void *w, int64_t k, double *rr, double *rz, cls_error *err);
    /* more iterations, at most room (>= 1: maxiter is never passed): one
     * launch sequence of one iteration, or with batch > 1 one launch of up
     * to batch iterations, each writing its record */
    int (*enqueue)(void *w, int64_t room, cls_error *err);
    int (*next)(void *w, la_cgf_record *rec, cls_error *err);     /* the next record, blocking */
    int (*last)(void *w, double *rr, double *rz, cls_error *err); /* after the last update */
    int (*drain)(void *w, cls_error *err); /* wait for the queued (no-op) iterations */
    /* optional: r = b - Ax and r'r only (blocking), for the confirmation
     * on the true residual, which then applies no M^-1 (a V-cycle of AMG)
     * unless it restarts; NULL: start serves */
    int (*residual)(void *w, int64_t k, double *rr, cls_error *err);
    void (*release)(void *w);
    void (*counts)(void *w, int64_t *enq, int64_t *seen); /* iterations queued, records read */
    int with_pc;  /* messages name the preconditioner; LA_PCM_PC_INDEFINITE may come */
    int can_lose; /* an indefinite stop after an update (beta != 0) is a lost recurrence */
    /* the most records one enqueue adds (0 or 1: one; cg_small.c's one-launch
     * loop: LA_CGS_BATCH). The loop keeps enqueuing while fewer than
     * lag + batch records are unread, so with batch > 1 the next launch is
     * queued while the host reads the last one's records: two in flight. */
    int batch;
    /* the ops are the native CPU loops' (kernels/cpu/): b'b is summed on the
     * host too, so the solve launches no kernel */
    int native;
} ksp_device_ops;

/* Solves with x holding the initial guess; la for b'b and x = 0. w must
 * be zeroed by the caller (ops->release runs on it in every case). */
/* 1 when a one-part solve on la with A runs the native CPU loops
 * (kernels/cpu/: backend auto or native, and cpu_ws_usable); *rc is
 * CLS_EINPUT through err when native was asked for and cannot run. */
int ksp_device_native(la_ctx *la, const la_csr *A, la_backend backend, int *rc, cls_error *err);

int ksp_device_solve(la_ctx *la, const la_vec *b, la_vec *x, const ksp_device_ops *ops, void *w,
                     const cg_options *opt, cg_result *res, cls_error *err);

#endif
