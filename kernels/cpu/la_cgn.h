/*
 * la_cgn.h: the native CPU twin of la_cgf (la.h): the same CG workspace
 * contract (create, start, enqueue, next, last, drain, release) and the
 * same two recurrences, computed by C loops on a team of threads over the
 * host memory of a CPU OpenCL device's buffers instead of by kernels.
 *
 * On PoCL's CPU device a buffer lives in host memory, and mapping it hands
 * that memory out without a copy: create maps A's CSR arrays, b, x and the
 * diagonal for the life of the workspace and release unmaps them, so the
 * vectors are the solve's own (x is read back by la_vec_download as
 * before) and nothing is stored twice. r, p and q are device vectors too
 * (la_vec_create: the buffers the solve's set-up reserved for the
 * workspace, la_pool_reserve), mapped the same way, so the native path
 * holds no more memory than the kernels' path.
 *
 * An iteration runs synchronously in enqueue (a CPU has no queue to keep
 * full): one or two barriers inside one team call, the stopping test and
 * the scalars computed by every member from the same ordered sums, and the
 * record appended to a ring that next reads back. The dot products are
 * summed in fixed row blocks (cpu_ws.h), so the iterates do not depend
 * on the thread count. Past a stop, enqueued
 * iterations do nothing, as on the device. solver/krylov/cg.c binds it as
 * ksp_device_ops and uses it where la_cgn_usable says it can.
 */
#ifndef CLS_KERNELS_CPU_LA_CGN_H
#define CLS_KERNELS_CPU_LA_CGN_H

#include "../la.h"
#include "cpu_ops.h"
#include "cpu_ws.h"

typedef struct la_cgn {
    cpu_ws ws; /* the mapped buffers, the team, the rows' ranges (cpu_ws.h) */
    cpu_csr A;
    const double *b, *d; /* d NULL without Jacobi */
    double *x;
    double *r, *p, *q;
    la_vec vr, vp, vq; /* their buffers */
    int recurrence;    /* la_cgf_recurrence */
    double stop2;
    /* the loop's state between iterations */
    int64_t k;
    int stopped;
    double rz, rr, beta_prev;
    la_cgf_record ring[LA_CGF_SLOTS];
    int64_t enq, seen;
} la_cgn;

/* CLS_OK when the native loop can run this solve (cpu_ws_usable: a CPU
 * device, double precision, A in CSR buffers with no row offset).
 * Otherwise CLS_EINPUT and the reason in err (why the OpenCL kernels run
 * instead). */
int la_cgn_usable(const la_ctx *la, const la_csr *A, cls_error *err);

int la_cgn_create(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
                  double stop2, la_cgf_recurrence recurrence, la_cgn *w, cls_error *err);
int la_cgn_start(la_cgn *w, int64_t k, double *rr, double *rz, cls_error *err);
int la_cgn_enqueue(la_cgn *w, cls_error *err);
int la_cgn_next(la_cgn *w, la_cgf_record *rec, cls_error *err);
int la_cgn_last(la_cgn *w, double *rr, double *rz, cls_error *err);
void la_cgn_release(la_cgn *w);

#endif
