/*
 * la_pc.h: the device operations of the preconditioners on one device
 * (pc.cl; the methods are solver/pc/pc_cheby.c's and solver/pc/pc_ic0.c's). The
 * kernels come from la's auxiliary program (la_aux_program), one private
 * kernel object each per la_pck, so several preconditioners can live on one
 * device without sharing argument state.
 *
 *   la_cheb_first   d = c0 D^-1 r ; z = d
 *   la_cheb_step    res = res_in - q ; d = c1 d + c2 D^-1 res ; z += d
 *   la_tri_*        a triangular factor L = D_L + N on the device (N
 *                   strictly triangular in CSR, dl = 1 / diag(L)) and the
 *                   two ways to apply L^-1: k Jacobi sweeps (la_tri_sweeps:
 *                   y = sum_{j<=k} (-D_L^-1 N)^j D_L^-1 b, a fixed linear
 *                   operator) or the exact level-scheduled solve
 *                   (la_tri_solve_levels)
 */
#ifndef CLS_KERNELS_LA_PC_H
#define CLS_KERNELS_LA_PC_H

#include <stdint.h>

#include "la.h"

typedef struct la_pck {
    la_ctx *la;
    cl_kernel cheb_first, cheb_step, ic0_sweep, ic0_level;
} la_pck;

int la_pck_create(la_ctx *la, la_pck *k, cls_error *err);
void la_pck_release(la_pck *k);

/* A Chebyshev preconditioner's recurrence (pc_cheby_coeffs): d_0 = c0 D^-1 r,
 * then for j = 1 .. degree-1: d_j = c1[j] d_{j-1} + c2[j] D^-1 res_j. What
 * the one-launch CG runs inside its kernel (la_cgs.h). */
typedef struct la_cheb_coef {
    int degree; /* 1..32 */
    double c0, c1[32], c2[32];
} la_cheb_coef;

int la_cheb_first(la_pck *k, double c0, const la_vec *dinv, const la_vec *r, la_vec *d, la_vec *z,
                  cls_error *err);
int la_cheb_step(la_pck *k, double c1, double c2, const la_vec *dinv, const la_vec *q,
                 const la_vec *res_in, la_vec *res, la_vec *d, la_vec *z, cls_error *err);

/* A triangular factor on the device. level[0..nlevels] (host) delimits the
 * rows of each level in `rows` (device), for the exact solve. */
typedef struct la_tri {
    int64_t n, nnz;
    cl_mem rowptr, col, val, dl, rows;
    int nlevels;
    int64_t *level;
} la_tri;

/* Uploads N (rowptr from 0, int32 columns, double values converted to the
 * vector precision), dl, and the level order (rows grouped by level,
 * level[] nlevels + 1 offsets; rows NULL: no exact solve). */
int la_tri_upload(la_ctx *la, int64_t n, const int32_t *rowptr, const int32_t *col,
                  const double *val, const double *dl, const int32_t *rows, const int64_t *level,
                  int nlevels, la_tri *t, cls_error *err);
void la_tri_release(la_tri *t);
/* y = (k sweeps) L^-1 b, k >= 1; t0, t1 scratch of n entries (y may be
 * either's buffer only if it is not also b) */
int la_tri_sweeps(la_pck *k, const la_tri *t, int sweeps, const la_vec *b, la_vec *t0, la_vec *y,
                  cls_error *err);
/* y = L^-1 b exactly, level by level (one launch per level) */
int la_tri_solve_levels(la_pck *k, const la_tri *t, const la_vec *b, la_vec *y, cls_error *err);

#endif
