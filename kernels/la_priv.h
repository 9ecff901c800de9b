/*
 * la_priv.h: what the files of the device linear-algebra layer share and
 * nobody else sees (la.h is the public contract). The layer is split by
 * operation, as HPCG's reference code is:
 *   la.c         the context: configuration and tuning overlay, program
 *                build, launch helpers, reductions' read-back, profiler hooks
 *   la_vec.c     device vectors, the buffer pool, page-locked staged uploads
 *   la_format.c  the SpMV formats: classification, choice, the SELL / BCSR /
 *                adaptive builds, la_csr_upload
 *   la_spmv.c    y = A x in every format (and the fused CG's epilogue binding)
 *   la_blas1.c   dots, axpy-like updates, the classic CG's fused updates, the
 *                true residual
 *   la_cgf.c     the single-device fused CG (device-side scalars)
 *   la_cgp.c     one part's fused iteration in the distributed CG
 *   cpu/         the native CPU twin of la_cgf (la_cgn.h): C loops on a
 *                thread team over a CPU device's mapped buffers
 *   la_dist.c    halo packing, compensated async reductions, pipelined CG's
 *                update, and the split-CSR SpMV twin the halo tests use
 * Each operation's plain reference is in tests/unit (csr_spmv_ref and the
 * host loops of test_la, test_formats, test_halo).
 */
#ifndef CLS_KERNELS_LA_PRIV_H
#define CLS_KERNELS_LA_PRIV_H

#include <stdint.h>

#include "la.h"
#include "tunedb.h"

/* kernel arguments as (size, pointer) pairs for lai_set_args */
#define A_MEM(m) sizeof(cl_mem), (const void *)&(m)
#define A_INT(v) sizeof(cl_int), (const void *)&(v)
#define A_LOCAL(bytes) (size_t)(bytes), (const void *)NULL
#define A_REAL(r) (r).size, (const void *)&(r).u

typedef struct {
    union {
        cl_double d;
        cl_float f;
    } u;
    size_t size;
} real_arg;

size_t lai_acc_size(const la_ctx *la);
/* a part's eight sums read back (la_vec.c): started, then waited for */
int lai_sums_read(la_ctx *la, cl_mem res, unsigned char *host, cl_event *ev, const char *who,
                  cls_error *err);
int lai_sums_wait(la_ctx *la, const unsigned char *host, cl_event *ev, double out[8],
                  const char *who, cls_error *err);
/* cgf_update's and cgf_init's arguments (la_cgf.c): the one-part fused CG
 * and the K-part one (la_cgp.c) run the same two kernels */
int lai_cgf_bind_update(la_ctx *la, cl_kernel k_upd, cl_kernel k_init, cl_int n, cl_mem sc,
                        cl_mem ctl, const la_vec *b, const la_vec *x, const la_vec *d,
                        const la_vec *r, const la_vec *p, const la_vec *q, cl_mem pu, size_t ls_upd,
                        cls_error *err);
/* waits for and drops a pending read of the sums (at release) */
void lai_sums_discard(cl_event *ev);
/* la's second, in-order queue for the record reads (la_ring.c), made once */
int lai_read_queue(la_ctx *la, cls_error *err);
/* a record ring's buffer zeroed (bytes) and the read-back queue made */
int lai_ring_open(la_ctx *la, cl_mem hist, size_t bytes, const char *what, cls_error *err);
/* A part's block SpMV x -> y with the fused epilogue (la_cgf.c): the
 * kernel, its geometry capped for the fused loops, its partial-pair buffer
 * (4 per group), then the arguments with d (W = D^-1, or NULL) and ctl */
int lai_fused_spmv_bind(la_ctx *la, const la_csr *A, cl_mem x, cl_mem y, cl_mem d, cl_mem ctl,
                        cl_kernel *k, cl_mem *part, size_t *g, size_t *ls, cls_error *err);
/* the interior rows' SpMV (boundary 0) or the boundary rows' (1, when kb) */
int lai_split_spmv(la_ctx *la, int boundary, const la_csr *Ai, cl_kernel ki, size_t gi, size_t ls_i,
                   cl_kernel kb, size_t gb, size_t ls_b, cls_error *err);
/* Page-locked host memory (CL_MEM_ALLOC_HOST_PTR, mapped once): copies
 * to and from it are the DMA alone, where a pageable buffer costs the
 * driver a staging pass and a host thread's wake-up on every copy. */
int lai_pinned_alloc(la_ctx *la, size_t bytes, cl_mem *mem, void **ptr, cls_error *err);
void lai_pinned_free(la_ctx *la, cl_mem mem, void *ptr);
/* a few bytes of pinned memory for a per-iteration read or write: 1 when
 * allocated; 0 leaves *mem, *ptr NULL and the caller on its pageable
 * buffer (no pinned memory, or CLSOLVE_PAGEABLE_SUMS=1's A/B) */
int lai_pinned_small(la_ctx *la, size_t bytes, cl_mem *mem, void **ptr);

/* A part's per-iteration host traffic (la_cgp, la_pcm): the eight sums
 * read back and alpha, beta written, in pinned memory where the device
 * allows (own: the fallback, and CLSOLVE_PAGEABLE_SUMS=1's A/B). */
typedef struct lai_iohost {
    unsigned char *host; /* 8 accumulators read back */
    double *scal;        /* alpha, beta as written (the host copy stays live) */
    float *scalf;
    cl_mem pin;
    void *pin_ptr;
    struct {
        unsigned char host[8 * sizeof(double)];
        double scal[2];
        float scalf[2];
    } own;
} lai_iohost;
void lai_iohost_init(la_ctx *la, lai_iohost *io);
void lai_iohost_free(la_ctx *la, lai_iohost *io);

/* alpha, beta of a host-scalar CG loop into sc (la_vec.c) */
int lai_write_scalars(la_ctx *la, cl_mem sc, double alpha, double beta, double scal[2],
                      float scalf[2], cls_error *err);
void lai_acc_to_double(const la_ctx *la, const void *buf, int n, double *out);
int lai_check_len(const char *op, int64_t a, int64_t b, cls_error *err);
/* One launch of bcg.cl's row-major SpMM kernel kn (its SELL or CSR form, by
 * A's format) of X into Y, lanes work-items a row: the format's group size
 * (a multiple of 8) and lanes times its group cap, at most gcap groups
 * (the partial sums' records, for the fused forms); sums: local memory for
 * 8 sums a work-item (else a token 8 values); *groups: the launch's
 * (la_spmm.c; la_bcg_spmm and la_spmm_rm) */
int lai_spmm_rm_launch(la_ctx *la, cl_kernel kn, const char *name, const la_csr *A, size_t lanes,
                       cl_mem X, cl_mem Y, cl_mem partial, int sums, size_t gcap, size_t *groups,
                       cls_error *err);
/* its grid: groups (the return) and group size *ls (given, or 0 on entry:
 * the format's); and the columns a work-item sums unfused for a block of
 * kw (la_spmm_rm, la_amg_smv) */
size_t lai_spmm_rm_grid(const la_ctx *la, const la_csr *A, size_t lanes, size_t gcap, size_t *ls);
int lai_spmm_rm_cw(const la_csr *A, int kw);
void lai_clamp_config(la_ctx *la);
void *lai_convert_vals(const double *v, int64_t n, size_t melem);
/* a profiling run (la_ctx.prof): lai_prof_take hands the sink a command's
 * event (its reference with it); lai_prof_share hands it one the caller
 * keeps too (a new reference). Both do nothing outside a profiling run. */
void lai_prof_take(la_ctx *la, cl_event ev);
void lai_prof_share(la_ctx *la, cl_event ev);
int lai_enqueue(la_ctx *la, cl_kernel k, const char *kname, size_t groups, size_t ls,
                cls_error *err);
int lai_ensure_partial(la_ctx *la, size_t groups, cls_error *err);
size_t lai_groups_for(const la_ctx *la, int64_t n);
int lai_is_pow2(size_t v);
const char *lai_kernel_of(la_spmv_variant v);
int lai_launch(la_ctx *la, cl_kernel k, const char *kname, size_t groups, size_t ls,
               cls_error *err);
size_t lai_max_sz(size_t a, size_t b);
size_t lai_min_sz(size_t a, size_t b);
real_arg lai_mk_acc(const la_ctx *la, double v);
real_arg lai_mk_real(const la_ctx *la, double v);
int lai_overlay(const la_ctx *la, const tunedb *db, const char *kernel, int cls, const char *shape,
                int pow2, size_t *ls, size_t *gpcu, size_t *param, int *exact);
size_t lai_pow2_floor(size_t v);
const char *lai_prec_key(la_precision p);
int lai_reduce_and_read(la_ctx *la, size_t groups, int ncomp, double *out, cls_error *err);
int lai_set_args(cl_kernel k, const char *kname, cls_error *err, int nargs, ...);
int lai_spmv_setup(la_ctx *la, cl_kernel k, const la_csr *A, cl_mem x, cl_mem y, cl_mem partial,
                   cl_mem w, cl_mem ctl, size_t *groups, size_t *lsz, cls_error *err);
void lai_tuned_vector_config(la_ctx *la, int64_t rows);
int lai_upload_buf(la_ctx *la, const char *what, size_t bytes, const void *host, cl_mem *out,
                   cls_error *err);
/* staged writes with the bytes made in place (la_vec.c) */
typedef size_t (*lai_piece_fn)(void *ctx, size_t done, size_t max);
typedef void (*lai_fill_fn)(void *ctx, void *stage, size_t done, size_t len);
int lai_write_staged(la_ctx *la, cl_mem dst, size_t off, size_t bytes, lai_piece_fn next,
                     lai_fill_fn fill, void *ctx, cls_error *err);
int lai_stage_in_use(const la_ctx *la, size_t bytes); /* 1: lai_write_device stages */
size_t lai_stage_piece(void);                         /* the bytes of one staged piece */
int lai_read_device(la_ctx *la, cl_mem src, size_t off, size_t bytes, void *host, cls_error *err);
int lai_write_device(la_ctx *la, cl_mem dst, size_t off, size_t bytes, const void *src,
                     cls_error *err);

/* la_cgf.c: a read-write buffer of the fused loop */
int lai_cgf_buffer(la_ctx *la, size_t bytes, cl_mem *m, cls_error *err);
/* a device buffer of bytes (at least 1) with flags, checked against the
 * device's largest allocation; the message names `what` */
int lai_alloc_buffer(la_ctx *la, const char *what, size_t bytes, cl_mem_flags flags, void *host,
                     cl_mem *out, cls_error *err);
/* la.c: a kernel's work-group size limit on the device, or want when that
 * is smaller; the non-NULL kernels and buffers released and set NULL */
size_t lai_kernel_max(const la_ctx *la, cl_kernel k, size_t want);
void lai_release_objects(cl_kernel **ks, int nk, cl_mem **ms, int nm);

#endif
