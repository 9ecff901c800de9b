/*
 * la_dist.h: the device operations a distributed solve needs beyond la.h,
 * on one device (one ld_ctx per la_ctx):
 *
 *   ld_spmv        y = A x over all rows, the interior rows (no ghost column)
 *                  or the boundary rows of a part (spmv_split.cl), so the
 *                  interior runs while the halo is in flight
 *   ld_pack        buf = x[idx] (halo.cl): the entries neighbours need
 *   ld_read_async / ld_write_async
 *                  the halo's host-staged hops, non-blocking, with events
 *   ld_pinned_alloc
 *                  page-locked host staging memory (CL_MEM_ALLOC_HOST_PTR,
 *                  mapped once), so those hops run at full bus speed
 *   ld_dots_begin, ld_pipecg_update_begin
 *                  up to three dot products (alone or fused with pipelined
 *                  CG's vector update, dcg.cl and pipecg.cl),
 *                  reduced on the device and read back WITHOUT waiting;
 *   ld_result_wait waits for that read and returns the sums.
 * Sums are compensated (Ogita-Rump-Oishi Dot2, see dcg.cl) and returned as
 * (hi, lo) pairs, so they are as if accumulated in twice the precision and
 * their rounding does not depend on how the rows are split into parts.
 *
 * Splitting "begin" from "wait" is what lets one host thread drive several
 * devices: start the reduction on every device, then wait on each; and
 * what lets pipelined CG start the next SpMV before the sums arrive.
 *
 * Uses la_ctx's device, queue, precision and launch configuration; builds
 * its own program from real.cl, halo.cl, spmv_split.cl, dcg.cl, pipecg.cl
 * (ocl_build_program, binary cache included), so la.c is untouched.
 */
#ifndef CLS_KERNELS_LA_DIST_H
#define CLS_KERNELS_LA_DIST_H

#include <stdint.h>

#include "la.h"

typedef struct ld_ctx {
    la_ctx *la;
    cl_program prog;
    cl_kernel k_pack, k_spmv_scalar, k_spmv_vector, k_dots, k_pipecg, k_pipecg_jacobi, k_reduce;
    cl_mem partial; /* 3 (hi, lo) pairs per work-group */
    cl_mem result;  /* 3 (hi, lo) pairs */
    size_t acc;     /* bytes of an accumulator (double, or float without fp64) */
    /* the sums read back: into host_pin_ptr (pinned) where the device
     * allows, else host_own (a pageable read costs the driver a staging
     * pass); no pointer into the struct itself, which the warm set copies */
    unsigned char host_own[6 * sizeof(double)];
    cl_mem host_pin;
    void *host_pin_ptr;
    cl_event ev; /* the pending result read, NULL when none */
    int ncomp;   /* sums in the pending result */
    /* the halo's copy queue (GPUs): the read of the packed halo and the
     * write of the ghosts run on it, beside the interior rows' kernel on
     * the main queue; ev_mark is the main queue's point they wait for */
    cl_command_queue cq;
    cl_event ev_mark;
    int cq_tried;
} ld_ctx;

typedef struct ld_rows_set {
    cl_mem list;   /* int32 rows, when not a range */
    int64_t n;     /* rows in the set */
    int64_t first; /* first row, when a range */
    int is_range;
} ld_rows_set;

typedef struct ld_csr {
    cl_mem rowptr, col, val;
    int64_t nrows, ncols, nnz;
    ld_rows_set all, interior, boundary;
    size_t vector_width; /* 0: scalar kernel */
} ld_csr;

typedef enum { LD_ROWS_ALL, LD_ROWS_INTERIOR, LD_ROWS_BOUNDARY } ld_rows;

int ld_init(ld_ctx *ld, la_ctx *la, cls_error *err);
void ld_release(ld_ctx *ld);

/* Uploads a part's matrix (columns already local: ghosts after the local
 * entries; rowptr need not start at 0, col and val point at row 0's first
 * entry) with its interior and boundary row lists (ascending). variant AUTO
 * picks the vector kernel on GPUs for rows of 12 or more entries, as la.c,
 * and the vector width follows the mean row length too. mean_row is the
 * WHOLE matrix's mean, not the part's: every part then sums each row in the
 * same order, so the SpMV does not depend on the partition. */
int ld_csr_upload(ld_ctx *ld, const csr_matrix *A, const int32_t *interior, int64_t ninterior,
                  const int32_t *boundary, int64_t nboundary, la_spmv_variant variant,
                  double mean_row, ld_csr *dA, cls_error *err);
void ld_csr_release(ld_csr *dA);

/* y[rows] = (A x)[rows]; x has A->ncols entries (local then ghosts). */
int ld_spmv(ld_ctx *ld, const ld_csr *A, ld_rows which, const la_vec *x, la_vec *y, cls_error *err);

/* A device int32 buffer holding idx[0..n). */
int ld_index_upload(ld_ctx *ld, const int32_t *idx, int64_t n, cl_mem *out, cls_error *err);
/* A device buffer of n vector entries. */
int ld_buffer_create(ld_ctx *ld, int64_t n, cl_mem *out, cls_error *err);
/* buf[k] = x[idx[k]], k < n */
int ld_pack(ld_ctx *ld, cl_mem idx, int64_t n, const la_vec *x, cl_mem buf, cls_error *err);

/* Non-blocking copies between device buffers and host memory; *ev receives
 * the event (release with clReleaseEvent after waiting, or ld_event_wait). */
int ld_read_async(ld_ctx *ld, cl_mem buf, size_t offset, size_t bytes, void *host, cl_event *ev,
                  cls_error *err);
int ld_write_async(ld_ctx *ld, cl_mem buf, size_t offset, size_t bytes, const void *host,
                   cl_event *ev, cls_error *err);
/* Waits for *ev (if any) and releases it. */
/* The halo's copies on their own queue (GPUs; ld_ctx.cq): marks the main
 * queue after the pack; ld_read_async and ld_write_async then run on the
 * copy queue after that mark, and the main queue's next commands wait for
 * the write. Without a copy queue they run on the main queue, in order. */
int ld_halo_mark(ld_ctx *ld, cls_error *err);
int ld_event_wait(const ld_ctx *ld, cl_event *ev, cls_error *err);
/* Submits queued work to the device. */
int ld_flush(ld_ctx *ld, cls_error *err);

/* Page-locked host memory of `bytes`, mapped for the host at *ptr. */
int ld_pinned_alloc(ld_ctx *ld, size_t bytes, cl_mem *mem, void **ptr, cls_error *err);
void ld_pinned_free(ld_ctx *ld, cl_mem mem, void *ptr);

/* Reductions: each starts the partial sums, the device reduction and the
 * read-back, and returns; ld_result_wait returns them as pairs: sum c is
 * out[2c] + out[2c + 1] (c < ncomp; the rest 0).
 * One may be pending per ld_ctx. Vectors are the local entries (n equal). */
int ld_dots_begin(ld_ctx *ld, int ndots, const la_vec *const *x, const la_vec *const *y,
                  cls_error *err);
/* Pipelined CG's fused update (pipecg.cl); out = {r'u, w'u, r'r}. Without
 * Jacobi (m, q, u NULL) u = r, m = w, q = s. */
int ld_pipecg_update_begin(ld_ctx *ld, double alpha, double beta, const la_vec *nv, const la_vec *m,
                           la_vec *w, la_vec *z, la_vec *q, la_vec *s, la_vec *p, la_vec *x,
                           la_vec *r, la_vec *u, cls_error *err);
int ld_result_wait(ld_ctx *ld, double out[6], cls_error *err);

#endif
