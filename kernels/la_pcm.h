/*
 * la_pcm.h: one part's share of the preconditioned single-reduction CG
 * with a general preconditioner (pcg_fused.cl holds the kernels and the
 * recurrences; solver/krylov/pcg.c the one-part loop, solver/krylov/dpcg.c the loop over
 * parts and ranks).
 *
 * A part is uploaded as la_cgp.h describes (interior block Ai, boundary
 * block Ab at row_offset ni); the vectors are b, x (borrowed, x with
 * n + nghost entries) and r, u (n + nghost: the SpMV's input), w, p, s
 * (owned). An iteration, with the preconditioner's own kernels between
 * the update and the sums:
 *
 *   la_pcm_spmv(interior, boundary)   w = A u, epilogue u'w, w'w pairs
 *   one part:  la_pcm_enqueue         the same, then pcgf_scalars (alpha,
 *                                     beta and the stopping test on the
 *                                     device, a record read without
 *                                     blocking) and pcgf_update
 *   K parts:   la_pcm_sums_begin/wait cgf_fold of u'w, w'w, r'u, r'r
 *              (host: one MPI_Allreduce, the scalars) la_pcm_update
 *   (caller)                          u = M^-1 r
 *   la_pcm_dots                       the pairs r'u, r'r for the next sums
 *
 * la_pcm_restart computes r = b - A x at full precision (x's ghosts in
 * place) and clears p and s; the caller then applies M and la_pcm_dots.
 * One-part records reuse la_cgf_record (pq is p'Ap, rz is gamma = r'u,
 * qq is delta = u'Au, stop one of LA_PCM_*).
 */
#ifndef CLS_KERNELS_LA_PCM_H
#define CLS_KERNELS_LA_PCM_H

#include "la.h"

enum {
    LA_PCM_RUN = 0,
    LA_PCM_CONVERGED = 1,
    LA_PCM_INDEFINITE = 2,
    LA_PCM_NANORINF = 3,
    LA_PCM_PC_INDEFINITE = 4
};

typedef struct la_pcm {
    la_ctx *la;
    la_part_in in;        /* the blocks and vectors it borrows */
    la_vec r, u, w, p, s; /* owned; u has n + nghost entries */
    cl_mem psi, psb, pu;  /* SpMV pairs (interior, boundary), r'u / r'r pairs */
    cl_mem res, sc, ctl, hist;
    cl_kernel k_spmv_i, k_spmv_b, k_upd, k_dots, k_init, k_fold, k_scal;
    cl_kernel k_wdots; /* several right-hand sides: u'w, w'w after the block SpMM */
    cl_mem pw;
    size_t gi, gb, gu, ls_i, ls_b, ls_upd, ls_fold;
    int one_part; /* device scalars and the record ring */
    double stop2;
    struct lai_iohost *io; /* the sums read back, alpha and beta written: pinned (la_priv.h) */
    cl_event ev_res;
    la_ring rg; /* one part: the records of the queued iterations (as la_cgf) */
} la_pcm;

/* Ai: the interior rows (every row when there are no ghosts); Ab the
 * boundary rows at row_offset Ai->nrows, or NULL. one_part: the scalars
 * live on the device (stop when r'r <= stop2); else the host computes them
 * from la_pcm_sums_wait's values and hands them to la_pcm_update. */
int la_pcm_create(la_ctx *la, const la_csr *Ai, const la_csr *Ab, int64_t nghost, const la_vec *b,
                  la_vec *x, int one_part, double stop2, la_pcm *w, cls_error *err);
void la_pcm_release(la_pcm *w);

/* r = b - A x (A at full precision, x's ghosts in place); p = s = 0; the
 * device's scalar state reset (gamma_old = 0: the next beta is 0) and, one
 * part, its iteration counter set to k. */
int la_pcm_restart(la_pcm *w, int64_t k, cls_error *err);
/* pairs r'u, r'r of the current r and u */
int la_pcm_dots(la_pcm *w, cls_error *err);
/* w = A u over the interior (boundary = 0) or boundary rows, with pairs */
int la_pcm_spmv(la_pcm *w, int boundary, cls_error *err);
/* K parts: cgf_fold of the SpMV's and la_pcm_dots' pairs, read back
 * without blocking; _wait: out = {u'w, w'w, r'u, r'r} as (hi, lo) pairs.
 * with_spmv = 0: the SpMV pairs are left out (read as 0). */
int la_pcm_sums_begin(la_pcm *w, int with_spmv, cls_error *err);
int la_pcm_sums_wait(la_pcm *w, double out[8], cls_error *err);
/* Several right-hand sides (solver/krylov/dbcg.c): w = A u came from the block
 * SpMM, so its pairs u'w, w'w are taken by a pass of their own; then as
 * la_pcm_sums_begin (with_spmv = 1), read with la_pcm_sums_wait. */
int la_pcm_block_sums_begin(la_pcm *w, cls_error *err);
/* K parts: the update with the host's alpha and beta */
int la_pcm_update(la_pcm *w, double alpha, double beta, cls_error *err);

/* One part: enqueues the SpMV, the scalars (record read queued without
 * blocking) and the update; the caller then enqueues M and la_pcm_dots. */
int la_pcm_enqueue(la_pcm *w, cls_error *err);
/* One part: the next record in order (waits for it). */
int la_pcm_next(la_pcm *w, la_cgf_record *rec, cls_error *err);
/* One part: waits for every queued record read. */
int la_pcm_drain(la_pcm *w, cls_error *err);
/* One part: r'u and r'r of the current r, u (blocking: la_pcm_dots must
 * have run): folds pu alone. */
int la_pcm_last(la_pcm *w, double *rr, double *ru, cls_error *err);

#endif
