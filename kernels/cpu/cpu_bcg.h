/*
 * cpu_bcg.h: the block CG's passes as native loops on a CPU device, the
 * twins of bcg.cl's kernels behind la_bcg.h (la_bcg.c dispatches to them
 * once la_bcg_native has mapped the blocks; solver/krylov/bcg.c does not
 * know which ran).
 *
 * Why: PoCL runs bcg.cl's kernels, whose work-items keep 8 to 44 private
 * sums and fold them through local memory, as loops over work-items with
 * those arrays spilled; at poisson3d 64 with 8 columns an iteration took
 * about 110 ms there (the direction pass alone 40%), and block CG ran 5x
 * slower than eight CGs side by side. Here a row's kw entries are a short
 * inner loop the compiler vectorises, and each pass is one cls_team_run.
 *
 * The layouts are la_bcg.h's (X, R, Z, B column-major at ld; P, Q
 * row-major kw wide); the buffers are mapped for the workspace's life
 * (cpu_ws.h: on a CPU device the map is the buffer's own memory). Sums are
 * taken per block of CPU_WS_BLOCK rows and the blocks added in order, so
 * a solve gives the same bits on any number of threads.
 */
#ifndef CLS_KERNELS_CPU_CPU_BCG_H
#define CLS_KERNELS_CPU_CPU_BCG_H

#include "../la_bcg.h"

/* CLS_OK when the native passes can run block CG on la with A (a CPU
 * device, double precision, A one CSR block), else CLS_EINPUT and why */
int cpu_bcg_usable(const la_ctx *la, const la_csr *A, cls_error *err);
/* Maps w's blocks, A (one CSR block) and dinv (or NULL) and takes the
 * team: CLS_OK and w->cpu set, or CLS_EINPUT with the reason (the device
 * is not a CPU, single precision, A not CSR) and w unchanged. */
int cpu_bcg_create(la_bcg *w, const la_csr *A, const la_vec *dinv, cls_error *err);
void cpu_bcg_release(la_bcg *w);
/* the threads its passes run on (0 before cpu_bcg_create) */
int cpu_bcg_threads(const la_bcg *w);

/* la_bcg.h's operations (the same arguments; the sums as out[72]) */
int cpu_bcg_spmm(la_bcg *w, const la_csr *A, double *gram, cls_error *err);
int cpu_bcg_gram(la_bcg *w, cl_mem U, int ur, int uc, cl_mem V, int vr, int vc, const la_vec *wt,
                 double out[LA_BCG_NSUM], cls_error *err);
int cpu_bcg_update(la_bcg *w, const double *alpha, double out[LA_BCG_NSUM]);
int cpu_bcg_resid(la_bcg *w, double out[LA_BCG_NSUM]);
int cpu_bcg_dir(la_bcg *w, cl_mem zsrc, const la_vec *dinv, const double *beta, int fresh,
                int with_x, cls_error *err);
/* R = A X, column by column (the start's and the confirmation's product) */
int cpu_bcg_ax(la_bcg *w, const la_csr *A, cls_error *err);
/* column c of blk from / into a vector (a read or write of its buffer) */
int cpu_bcg_put(la_bcg *w, cl_mem blk, int c, const la_vec *v, cls_error *err);
int cpu_bcg_get(la_bcg *w, cl_mem blk, int c, la_vec *v, cls_error *err);

#endif
