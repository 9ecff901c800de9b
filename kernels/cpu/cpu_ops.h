/*
 * cpu_ops.h: the native CPU CG's operations on one thread's row range
 * [lo, hi), in double: the twins of cg_fused.cl's and cg_classic.cl's
 * kernels (la_cgn.c runs them on a cls_team, one range per member).
 *
 * Why native loops beside the OpenCL kernels on a CPU device: PoCL runs a
 * work-group as a loop over its work-items and turns barriers and group
 * reductions into loops too, and every launch costs tens of microseconds;
 * on the 2-core machine that left clsolve's CG 1.3-2x behind PETSc's
 * KSPCG, whose loops are these (issue 29). Here a row is a plain loop the
 * compiler vectorises, a reduction is a per-thread sum added in member
 * order (the same bits for the same thread count), and an iteration is two
 * or three passes separated by barriers, not five launches.
 *
 * The sums each operation returns go into out[] (see each); d is the
 * inverted diagonal (Jacobi) or NULL (z = r).
 */
#ifndef CLS_KERNELS_CPU_CPU_OPS_H
#define CLS_KERNELS_CPU_CPU_OPS_H

#include <stdint.h>

/* A CSR matrix in the device kernels' layout (int32 row pointers and
 * columns, double values), as mapped from its OpenCL buffers. */
typedef struct cpu_csr {
    const int32_t *rp, *col;
    const double *val;
    int64_t n;
} cpu_csr;

/* q = A p on rows [lo, hi); out[0] = p'q, out[1] = q'Wq (W = D^-1 or I;
 * 0 unless with_qq: only the single-reduction recurrence uses it) over
 * those rows (cpu_spmv.c) */
void cpu_spmv_dots(const cpu_csr *A, const double *p, double *q, const double *d, int with_qq,
                   int64_t lo, int64_t hi, double out[2]);
/* r = b - A x; z = D^-1 r; p = z; out[0] = r'z, out[1] = r'r (the start:
 * one pass, no q stored) (cpu_spmv.c) */
void cpu_residual_start(const cpu_csr *A, const double *b, const double *x, double *r, double *p,
                        const double *d, int64_t lo, int64_t hi, double out[2]);

/* The Hestenes-Stiefel update in two passes (cpu_vec.c):
 * r -= alpha q; out[0] = r'z, out[1] = r'r of the new r */
void cpu_cgc_update(double alpha, const double *q, double *r, const double *d, int64_t lo,
                    int64_t hi, double out[2]);
/* x += alpha p; p = z + beta p */
void cpu_cgc_direction(double alpha, double beta, double *p, const double *r, const double *d,
                       double *x, int64_t lo, int64_t hi);
/* The single-reduction update in one pass (cpu_vec.c): x += alpha p;
 * r -= alpha q; z = D^-1 r; p = z + beta p; out[0] = r'z, out[1] = r'r */
void cpu_cgf_update(double alpha, double beta, double *p, const double *q, double *x, double *r,
                    const double *d, int64_t lo, int64_t hi, double out[2]);

/* The preconditioned single-reduction CG's passes (cpu_vec.c, cpu_spmv.c),
 * the twins of pcg_fused.cl's pcgf_init, pcgf_update and pcgf_dots:
 * r = b - A x; p = s = 0 */
void cpu_pcg_start(const cpu_csr *A, const double *b, const double *x, double *r, double *p,
                   double *s, int64_t lo, int64_t hi);
/* p = u + beta p; s = w + beta s; x += alpha p; r -= alpha s */
void cpu_pcg_update(double alpha, double beta, const double *u, const double *w, double *p,
                    double *s, double *x, double *r, int64_t lo, int64_t hi);
/* out[0] = r'u, out[1] = r'r */
void cpu_pcg_dots(const double *r, const double *u, int64_t lo, int64_t hi, double out[2]);

/* The preconditioners' passes (cpu_pc.c), the twins of pc.cl's kernels:
 * Chebyshev's first step, d = c0 D^-1 r; z = d; res = r */
void cpu_cheb_first(double c0, const double *dinv, const double *r, double *d, double *z,
                    double *res, int64_t lo, int64_t hi);
/* a later step with its SpMV fused: q = A d_in (not stored); res -= q;
 * d_out = c1 d_in + c2 D^-1 res; z += d_out (d_in, d_out two buffers: other
 * rows' products read d_in) */
void cpu_cheb_step(const cpu_csr *A, double c1, double c2, const double *dinv, const double *din,
                   double *dout, double *res, double *z, int64_t lo, int64_t hi);
/* One Jacobi sweep on a triangular system stored as N (strictly
 * triangular) and dl = 1 / diag: yout = dl .* (b - N yin); yin NULL means
 * yin = dl .* b (ic0_sweep) */
void cpu_tri_sweep(const cpu_csr *N, const double *dl, const double *b, const double *yin,
                   double *yout, int64_t lo, int64_t hi);
/* The exact solve, serially: y = dl .* (b - N y) row by row, forward for a
 * lower N, backward for an upper one (the order ic0_level's levels keep) */
void cpu_tri_solve(const cpu_csr *N, const double *dl, const double *b, double *y, int lower);

/* Rows cut into `parts` ranges of about equal work (entries + 2 per row:
 * the matrix's bytes and the vectors'): bound[0] = 0 .. bound[parts] = n. */
void cpu_rows_split(const int32_t *rp, int64_t n, int parts, int64_t *bound);

#endif
