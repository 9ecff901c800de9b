/*
 * la_cgp.h: one part's share of the distributed fused CG iteration
 * (solver/krylov/dcg.c holds the algorithm; cg_fused.cl and the SpMV format
 * kernels the device code).
 *
 * A part is a row block of the system, renumbered so that its interior rows
 * (no ghost column) come first and its boundary rows last; its matrix is
 * uploaded as two la_csr in the tuned format: Ai (rows 0..ni) and Ab (rows
 * ni..n, row_offset ni), so the interior SpMV runs while the halo travels
 * and the boundary SpMV writes its rows in place once the ghosts are in p.
 * The iteration is the single-device fused CG's (la_cgf) with the scalars
 * moved to the host because they need every part's sums:
 *
 *   la_cgp_spmv(interior)   q = A p on rows 0..ni, epilogue p'q, q'Wq pairs
 *   la_cgp_spmv(boundary)   the same on rows ni..n (after the ghosts of p)
 *   la_cgp_sums_begin       cgf_fold: those pairs and the last update's r'z,
 *                           r'r pairs into 8 values, read back without
 *                           blocking; la_cgp_sums_wait returns them
 *   (host: the rank's parts added, one MPI_Allreduce, alpha and beta)
 *   la_cgp_update_r,        the classic recurrence (cg_classic.cl): r and
 *   la_cgp_direction        the pairs, then x and p = z + beta p once beta
 *                           is reduced (a second reduction per iteration)
 *   la_cgp_update           cgf_update_args, alpha and beta its arguments:
 *                           x += alpha p; r -= alpha q; z = D^-1 r;
 *                           p = z + beta p, and the next r'z, r'r pairs
 *
 * Every sum is a compensated pair, so the reduced values, and the iterates,
 * do not depend on how the rows are split. The vectors: b, x (borrowed; x
 * has n + nghost entries, its ghosts filled by the caller before a start),
 * r, q (n) and p (n + nghost, owned).
 */
#ifndef CLS_KERNELS_LA_CGP_H
#define CLS_KERNELS_LA_CGP_H

#include "la.h"

typedef struct la_cgp {
    la_ctx *la;
    la_part_in in;       /* the blocks and vectors it borrows */
    la_vec d;            /* borrowed (d.buf NULL without Jacobi) */
    la_vec r, p, q;      /* owned */
    cl_mem psi, psb, pu; /* interior SpMV, boundary SpMV, update pairs */
    cl_mem res, sc, ctl;
    cl_kernel k_spmv_i, k_spmv_b, k_upd, k_init, k_fold;
    cl_kernel k_updc, k_dir; /* the classic recurrence (cg_classic.cl) */
    size_t gi, gb, gu, ls_i, ls_b, ls_upd, ls_fold;
    cl_int cn;             /* rows, as the update kernel takes them */
    struct lai_iohost *io; /* the sums read back, alpha and beta written: pinned (la_priv.h) */
    cl_event ev_res;
} la_cgp;

/* Sets the part's workspace up. Ai: the interior rows (or every row when
 * there are no ghosts); Ab: the boundary rows with row_offset = Ai->nrows,
 * or NULL. x has n + nghost entries. */
int la_cgp_create(la_ctx *la, const la_csr *Ai, const la_csr *Ab, int64_t nghost, const la_vec *b,
                  la_vec *x, const la_vec *dinv, la_cgp *w, cls_error *err);
void la_cgp_release(la_cgp *w);

/* q = A p over the interior (boundary = 0) or the boundary rows, with the
 * epilogue's pairs. */
int la_cgp_spmv(la_cgp *w, int boundary, cls_error *err);
/* The restart: q = A x at full precision over every row (x's ghosts must
 * be in place), then r = b - q, z = D^-1 r, p = z with the pairs r'z, r'r;
 * then la_cgp_sums_begin as for an iteration (its p'q, q'Wq are 0). */
int la_cgp_start(la_cgp *w, cls_error *err);
/* cgf_fold and the non-blocking read of its eight values. */
int la_cgp_sums_begin(la_cgp *w, int with_spmv, cls_error *err);
/* Waits for them: out = {p'q, q'Wq, r'z, r'r} as (hi, lo) pairs. */
int la_cgp_sums_wait(la_cgp *w, double out[8], cls_error *err);
/* x += alpha p; r -= alpha q; z = D^-1 r; p = z + beta p (cgf_update). */
int la_cgp_update(la_cgp *w, double alpha, double beta, cls_error *err);
/* The classic recurrence's two halves (cg_classic.cl): r -= alpha q and
 * the next r'z, r'r pairs (cgc_update), then, once beta is reduced from
 * them, x += alpha p; p = z + beta p (cgc_direction). */
int la_cgp_update_r(la_cgp *w, double alpha, cls_error *err);
int la_cgp_direction(la_cgp *w, double alpha, double beta, cls_error *err);

#endif
