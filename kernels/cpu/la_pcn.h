/*
 * la_pcn.h: the native CPU twin of la_pcm's one-part form (la_pcm.h): the
 * preconditioned single-reduction CG (solver/krylov/pcg.c's recurrence,
 * Chronopoulos and Gear; pcg_fused.cl's kernels) computed by C loops on a
 * team of threads over the host memory of a CPU OpenCL device's buffers,
 * with a preconditioner whose apply is native too (pc.h's host apply).
 *
 * The same contract as la_pcm for one part: create, restart (r = b - Ax,
 * p = s = 0, gamma_old = 0), dots (r'u, r'r), enqueue (w = A u with u'w,
 * the scalars and the tests of pcgf_scalars, the record, the update), next,
 * last, release; the caller applies u = M^-1 r between enqueue and dots on
 * the workspace's r and u (la_pcn_r, la_pcn_u) with its team and ranges
 * (la_pcn_ws). An enqueue runs synchronously, one team call with one
 * barrier (the SpMV's sums, then every member takes the same scalars and
 * the same branch, then the update); past a stop it does nothing, as on
 * the device. A, b and x are the solve's buffers, mapped; r, u, w, p, s
 * device vectors from the pool, mapped the same way (cpu_ws.h), so the
 * native path holds no more memory than the kernels' path.
 */
#ifndef CLS_KERNELS_CPU_LA_PCN_H
#define CLS_KERNELS_CPU_LA_PCN_H

#include "../la.h"
#include "cpu_ops.h"
#include "cpu_ws.h"

typedef struct la_pcn {
    cpu_ws ws;
    cpu_csr A;
    const double *b;
    double *x;
    double *r, *u, *w, *p, *s;
    la_vec vr, vu, vw, vp, vs;
    double stop2;
    int64_t k;
    int stopped;
    double gamma, rr; /* r'u, r'r of the current r, u (la_pcn_dots) */
    double g0, a0;    /* gamma_{k-1}, alpha_{k-1} (0: a start) */
    la_cgf_record ring[LA_CGF_SLOTS];
    int64_t enq, seen;
} la_pcn;

/* la_cgn_usable's conditions (cpu_ws_usable). */
int la_pcn_create(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, double stop2, la_pcn *w,
                  cls_error *err);
int la_pcn_restart(la_pcn *w, int64_t k, cls_error *err);
int la_pcn_dots(la_pcn *w, cls_error *err);
int la_pcn_enqueue(la_pcn *w, cls_error *err);
int la_pcn_next(la_pcn *w, la_cgf_record *rec, cls_error *err);
int la_pcn_last(la_pcn *w, double *rr, double *ru, cls_error *err);
void la_pcn_release(la_pcn *w);

#endif
