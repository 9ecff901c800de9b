/*
 * la_cgb.h: the host side of the batched CG (cg_batch.cl): many small
 * systems, of any sizes and patterns, solved by one kernel launch with one
 * work-group each (solver/krylov/cg_batch.c is the driver and says when it
 * pays).
 *
 * The batch is one block-diagonal matrix uploaded in CSR (la_csr_upload,
 * scalar CSR): system s owns rows [row0[s], row0[s+1]) and its columns lie
 * in the same range. b, x and the diagonal are the batch's vectors; r, p
 * and q are owned here. Per system: stop2 (r'r at which it stops), maxit
 * (the iteration it stops at), and the state the launch leaves: the stop
 * code (LA_CGF_*, LA_CGF_RUN when maxit came first), the iterations and
 * the last r'r. la_cgb_run launches once and waits: a batch is not
 * monitored per iteration. Systems whose state is not LA_CGF_RUN on entry
 * are left alone, so a driver restarts just the ones it chooses.
 *
 * The work-group size is one for the batch: the largest system's rows
 * rounded up to 64, at most LA_CGB_LOCAL (or $CLSOLVE_CGB_LOCAL), the
 * kernel's limit and what the local memory holds.
 */
#ifndef CLS_KERNELS_LA_CGB_H
#define CLS_KERNELS_LA_CGB_H

#include "la.h"

#define LA_CGB_LOCAL 256

typedef struct la_cgb {
    la_ctx *la;
    int nsys;
    la_vec r, p, q;
    cl_mem row0, stop2, maxit, state, sums;
    cl_kernel k_run;
    size_t ls;
} la_cgb;

/* Sets the batch up: A the block-diagonal matrix (CSR arrays kept), row0
 * its nsys + 1 system offsets (host), b and x its vectors (x updated in
 * place), dinv its inverted diagonal or NULL (no preconditioner). */
int la_cgb_create(la_ctx *la, const la_csr *A, const int64_t *row0, int nsys, const la_vec *b,
                  la_vec *x, const la_vec *dinv, la_cgb *w, cls_error *err);
/* One launch: systems whose state[2s] is LA_CGF_RUN start from x at
 * iteration state[2s+1] and run to their end (stop2[s], maxit[s]); state
 * and rr[s], pq[s] (their last r'r and p'Ap) come back. Blocking. */
int la_cgb_run(la_cgb *w, const double *stop2, const int *maxit, int *state, double *rr,
               double *pq, cls_error *err);
void la_cgb_release(la_cgb *w);

#endif
