/*
 * la.h: the device linear algebra the solvers are written in.
 *
 * A la_ctx is one device's compiled kernels at one precision (double or
 * float storage; dot products are always returned in double). Vectors live
 * in device buffers (la_vec); host data is converted on upload and download,
 * so a float solve still reads and writes doubles on the host.
 *
 * Operations, one kernel family each (one file each: spmv_csr.cl,
 * dot.cl, blas1.cl, cg_fused.cl):
 *   la_spmv        y = A x                (CSR, scalar or vector variant)
 *   la_dot         x'y                    (two-stage reduction)
 *   la_axpy        y = y + a x
 *   la_xpay        y = x + a y
 *   la_copy, la_fill
 *   la_pointwise   z = d .* r             (Jacobi)
 *   la_cg_update   x += a p ; r -= a q ; returns r'r        (fused)
 *   la_pcg_update  x += a p ; r -= a q ; z = d.*r ; returns r'z and r'r (fused)
 * A dot product is the only thing read back inside an iteration.
 *
 * Configuration (work-group size, groups per compute unit, SpMV variant and
 * its rows-per-group) sits in la_config so the profiler of the kernel issue can
 * fill it; la_config_default gives the untuned start.
 */
#ifndef CLS_KERNELS_LA_H
#define CLS_KERNELS_LA_H

#include <stdint.h>

#include "../common/error.h"
#include "../matrices/csr.h"
#include "ocl.h"

typedef enum { LA_DOUBLE, LA_FLOAT } la_precision;
typedef enum { LA_SPMV_AUTO, LA_SPMV_SCALAR, LA_SPMV_VECTOR } la_spmv_variant;

typedef struct la_config {
    size_t local_size;       /* work-group size for BLAS-1 and reductions */
    size_t groups_per_cu;    /* reductions launch compute_units * this groups */
    size_t spmv_local_size;  /* work-group size for SpMV */
    size_t vector_width;     /* work-items per row in the vector SpMV: 2..64 */
} la_config;

typedef struct la_ctx {
    ocl_ctx *ocl;
    la_precision prec;
    size_t elem; /* sizeof(double) or sizeof(float) */
    la_config cfg;
    cl_program prog;
    cl_kernel k_spmv_scalar, k_spmv_vector, k_dot_partial, k_dot2_partial, k_reduce,
        k_axpy, k_xpay, k_copy, k_fill, k_pointwise, k_cg_update, k_pcg_update;
    cl_mem partial; /* per-group partial sums (2 per group for two dots) */
    cl_mem result;  /* final reduced values (2 doubles) */
    size_t ngroups; /* reduction groups */
} la_ctx;

typedef struct la_vec {
    cl_mem buf;
    int64_t n;
} la_vec;

typedef struct la_csr {
    cl_mem rowptr, col, val; /* int32 row pointers, int32 columns */
    int64_t nrows, ncols, nnz;
    la_spmv_variant variant; /* resolved: SCALAR or VECTOR */
    size_t vector_width;     /* for VECTOR */
} la_csr;

void la_config_default(const ocl_device *dev, la_config *cfg);

/* Builds the kernels for dev at prec. A device without fp64 asked for
 * LA_DOUBLE fails with a message saying to use --precision float. cfg may be
 * NULL for the default. */
int la_init(la_ctx *la, ocl_ctx *ocl, la_precision prec, const la_config *cfg, cls_error *err);
void la_release(la_ctx *la);

int la_vec_create(la_ctx *la, int64_t n, la_vec *v, cls_error *err);
void la_vec_release(la_vec *v);
int la_vec_upload(la_ctx *la, la_vec *v, const double *host, cls_error *err);
int la_vec_download(la_ctx *la, const la_vec *v, double *host, cls_error *err);

/* Uploads A. variant AUTO picks VECTOR when the mean row length is large
 * enough to keep a sub-group busy (see la.c), SCALAR otherwise. Fails with a
 * clear message if nnz exceeds 32-bit indices or the device's max allocation. */
int la_csr_upload(la_ctx *la, const csr_matrix *A, la_spmv_variant variant, la_csr *dA,
                  cls_error *err);
void la_csr_release(la_csr *dA);
const char *la_spmv_variant_name(la_spmv_variant v);

int la_spmv(la_ctx *la, const la_csr *A, const la_vec *x, la_vec *y, cls_error *err);
int la_dot(la_ctx *la, const la_vec *x, const la_vec *y, double *out, cls_error *err);
/* out[0] = x'y, out[1] = x'z in one pass that reads x once (pipelined CG's
 * r'u and w'u; r'z and r'r). */
int la_dot2(la_ctx *la, const la_vec *x, const la_vec *y, const la_vec *z, double out[2],
            cls_error *err);
int la_axpy(la_ctx *la, double a, const la_vec *x, la_vec *y, cls_error *err);
int la_xpay(la_ctx *la, const la_vec *x, double a, la_vec *y, cls_error *err);
int la_copy(la_ctx *la, const la_vec *x, la_vec *y, cls_error *err);
int la_fill(la_ctx *la, double a, la_vec *y, cls_error *err);
int la_pointwise(la_ctx *la, const la_vec *d, const la_vec *r, la_vec *z, cls_error *err);
int la_cg_update(la_ctx *la, double alpha, const la_vec *p, const la_vec *q, la_vec *x,
                 la_vec *r, double *rr, cls_error *err);
int la_pcg_update(la_ctx *la, double alpha, const la_vec *p, const la_vec *q, la_vec *x,
                  la_vec *r, const la_vec *d, la_vec *z, double *rz, double *rr,
                  cls_error *err);

/* Waits for every queued command (for timing). */
int la_finish(la_ctx *la, cls_error *err);

#endif
