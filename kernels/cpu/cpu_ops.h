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

/* Rows cut into `parts` ranges of about equal work (entries + 2 per row:
 * the matrix's bytes and the vectors'): bound[0] = 0 .. bound[parts] = n. */
void cpu_rows_split(const int32_t *rp, int64_t n, int parts, int64_t *bound);

#endif
