/*
 * la.h: the device linear algebra the solvers are written in.
 *
 * A la_ctx is one device's compiled kernels at one precision: double,
 * float, or mixed (float matrix values, double vectors; dot products are
 * always returned in double). Vectors live in device buffers (la_vec); host
 * data is converted on upload and download, so a float solve still reads
 * and writes doubles on the host.
 *
 * Operations, one kernel family each (spmv_*.cl, dot.cl, blas1.cl,
 * cg_fused.cl):
 *   la_spmv        y = A x                (the matrix's format, below)
 *   la_dot         x'y                    (two-stage reduction)
 *   la_axpy        y = y + a x
 *   la_xpay        y = x + a y
 *   la_copy, la_fill
 *   la_pointwise   z = d .* r             (Jacobi)
 *   la_cg_update   x += a p ; r -= a q ; returns r'r        (fused)
 *   la_pcg_update  x += a p ; r -= a q ; z = d.*r ; returns r'z and r'r (fused)
 *   la_residual    r = b - A x ; returns r'r (A at full precision)
 *   la_cgf_*       the fused single-synchronisation CG iteration (below)
 * A dot product is the only thing the classic operations read back.
 *
 * SpMV formats (la_spmv_variant; chosen at upload from the matrix's row
 * statistics and the tuning database unless the caller names one):
 *   scalar    CSR, one work-item per row
 *   vector    CSR, a power-of-two group of work-items per row (width tuned)
 *   adaptive  CSR-Adaptive (Greathouse & Daga 2014): irregular rows
 *   sell      SELL-C-sigma (Kreutzer et al. 2014): regular rows
 *   bcsr      block CSR with k x k blocks detected automatically (k = 2..8)
 *
 * Configuration (work-group sizes and counts per kernel family, the format
 * parameters) sits in la_config. With cfg == NULL, la_init starts from
 * la_config_default and la_csr_upload overlays what `clsolve tune` stored
 * for this device and the matrix's size class (kernels/tunedb.h); la->cfg
 * then holds what the solve runs with and cfg.source says where it came
 * from. A cfg given to la_init is used as is ("user").
 */
#ifndef CLS_KERNELS_LA_H
#define CLS_KERNELS_LA_H

#include <math.h>
#include <stdint.h>

#include "../common/error.h"
#include "../matrices/csr.h"
#include "ocl.h"

/* LA_MIXED: matrix values in float, vectors and reductions in double; the
 * true residual (la_residual) uses a double copy of the values, so CG with
 * residual replacement still reaches a double-precision tolerance. */
typedef enum { LA_DOUBLE, LA_FLOAT, LA_MIXED } la_precision;

/* What runs a one-part CG's loop on a CPU device (kernels/cpu/la_cgn.h):
 * AUTO the native loops where they apply (a CPU device, double, no
 * preconditioner or Jacobi), else the OpenCL kernels; OPENCL always the
 * kernels; NATIVE the native loops or a CLS_EINPUT saying why not. */
typedef enum { LA_BACKEND_AUTO, LA_BACKEND_OPENCL, LA_BACKEND_NATIVE } la_backend;

typedef enum {
    LA_SPMV_AUTO,
    LA_SPMV_SCALAR,
    LA_SPMV_VECTOR,
    LA_SPMV_ADAPTIVE,
    LA_SPMV_SELL,
    LA_SPMV_BCSR,
    LA_SPMV_COUNT
} la_spmv_variant;

typedef struct la_config {
    size_t local_size;      /* BLAS-1 and reductions (a power of two) */
    size_t groups_per_cu;   /* reductions launch compute_units * this groups */
    size_t spmv_local_size; /* CSR scalar/vector SpMV (a power of two) */
    size_t vector_width;    /* work-items per row in the vector SpMV: 2..64; 0 derive */
    /* kernel issue; 0 in any field below means "the default" */
    size_t spmv_groups_per_cu; /* SpMV group cap per CU */
    size_t fmt_local_size;     /* adaptive / sell / bcsr SpMV work-group size */
    size_t cg_local_size;      /* fused CG update and init */
    size_t cg_groups_per_cu;
    size_t sell_c;          /* SELL chunk height */
    size_t sell_sigma;      /* SELL sorting window (1: no sorting) */
    size_t adaptive_nnz;    /* CSR-Adaptive: entries per row block */
    la_spmv_variant format; /* format of the last upload (for reports) */
    char source[32];        /* "default", "tuned", "tuned (nearest size)", "user" */
} la_config;

#define LA_POOL_MAX 16
#define LA_CAPTURE_MAX 512 /* launches one capture records (la_capture_begin) */
#define LA_SMALL_RPW_MAX 8 /* cg_small_reg.cl's largest CGS_RPW */

typedef struct la_ctx {
    ocl_ctx *ocl;
    la_precision prec;
    size_t elem;  /* vector element: sizeof(double) or sizeof(float) */
    size_t melem; /* matrix value element (4 in LA_MIXED) */
    la_config cfg;
    int user_cfg;         /* cfg came from the caller: no database overlay */
    int serial_group_sum; /* CPU devices: the fused kernels' group sums are one
                           * barrier and a serial add (-DCLS_SERIAL_GROUP_SUM) */
    int plain_sums;       /* -DCLS_PLAIN_SUMS: uncompensated dot products (a
                           * one-part solve on a CPU device, la_init_flags) */
    cl_program prog;
    char build_opts[128];  /* the options prog was built with (la_aux_program) */
    cl_program aux_prog;   /* the preconditioners' kernels, built on first use */
    cl_program small_prog; /* cg_small.cl (--method cg-small), built on first use */
    cl_program small_reg[LA_SMALL_RPW_MAX + 1]; /* cg_small_reg.cl per rows per work-item */
    int small_shuffle[LA_SMALL_RPW_MAX + 1];    /* small_reg[i] has -DCLS_NV_SHFL (warp shuffles) */
    cl_kernel k_spmv_scalar, k_spmv_vector, k_dot_partial, k_dot2_partial, k_reduce, k_axpy, k_xpay,
        k_copy, k_fill, k_pointwise, k_cg_update, k_pcg_update;
    cl_kernel k_spmv_adaptive, k_spmv_sell, k_spmv_bcsr, k_spmv_hi, k_residual;
    cl_kernel k_sell_from_csr; /* SELL made on the device (la_format.c) */
    cl_mem partial;      /* per-group partial sums (2 per group for two dots) */
    cl_mem result;       /* final reduced values (2 doubles) */
    size_t ngroups;      /* reduction groups */
    size_t partial_cap;  /* groups the partial buffer holds */
    cl_command_queue rq; /* second queue: the fused CG's non-blocking reads */
    /* buffers set aside by la_pool_reserve (allocated and written once, at
     * set-up): la_vec_create takes one of the right size before it
     * allocates, la_vec_release of such a vector gives it back */
    struct la_pooled {
        cl_mem buf;
        size_t bytes;
    } pool[LA_POOL_MAX];
    int npool;
    /* page-locked staging for host -> GPU copies (la.c, write_device) */
    cl_mem stage[2];
    void *stage_ptr[2];
    cl_event stage_ev[2];
    /* profiling hook (kernels/tune.c, clsolve bench, bcg's profile): when
     * capture is set, every kernel launch records its event and kernel name
     * here (a tuned operation's few, or a block iteration's V-cycle) */
    int capture;
    int nev;
    cl_event ev[LA_CAPTURE_MAX];
    const char *evname[LA_CAPTURE_MAX];
    /* a profiling run's sink (solver/dist/dprof.c): while prof is set, the
     * commands of a distributed iteration (la's kernels and scalar writes,
     * ld's halo kernels and copies, the sums' reads) hand it their event,
     * tagged with the step the caller set in prof_step; the sink takes the
     * reference. NULL outside a profiling run: no event is even created. */
    void (*prof)(void *ctx, int step, cl_event ev);
    void *prof_ctx;
    int prof_step;
} la_ctx;

typedef struct la_vec {
    cl_mem buf;
    int64_t n;
    struct la_ctx *pool; /* the context whose pool the buffer returns to; NULL: freed */
} la_vec;

typedef struct la_csr {
    cl_mem rowptr, col, val; /* CSR: int32 row pointers and columns, mat_t values */
    int64_t nrows, ncols, nnz;
    la_spmv_variant variant; /* resolved format */
    size_t vector_width;     /* for VECTOR */
    /* format data (NULL when unused) */
    cl_mem aux;        /* ADAPTIVE row blocks, SELL chunk starts, BCSR block row pointers */
    cl_mem perm;       /* SELL: original row of each stored row (sigma > 1) */
    cl_mem fcol, fval; /* SELL / BCSR columns and values */
    cl_mem val_hi;     /* LA_MIXED: double values in CSR order (exact residual) */
    int64_t naux;      /* row blocks / chunks / block rows */
    int64_t stored;    /* entries stored, padding and block fill included */
    size_t sell_c, sell_sigma, block_k, lds_size;
    int sell_on_device; /* SELL's columns and values were made on the device from CSR */
    size_t local_size;  /* SpMV work-group size of this format */
    size_t max_groups;  /* SpMV group cap */
    la_config cfg;      /* the configuration this matrix runs with */
    int64_t row_offset; /* y index of row 0 (a part's boundary block, solver/krylov/cg.c);
                         * 0 after la_csr_upload; y needs row_offset + nrows entries */
} la_csr;

/* Row statistics behind the automatic format choice (la.c, choose_format). */
typedef struct la_matrix_class {
    double mean_row, cv_row; /* mean row length, stddev / mean */
    int64_t max_row, empty_rows;
    size_t block_k;     /* natural block size found (0: none) */
    double block_fill;  /* stored / nnz with k x k blocks */
    double sell_fill;   /* stored / nnz in SELL-C-1 */
    size_t sell_fill_c; /* that C */
    int size_class;     /* tunedb size class of nrows */
    const char *shape;  /* "short", "long", "irregular", "blocked" */
} la_matrix_class;

void la_config_default(const ocl_device *dev, la_config *cfg);

/* Builds the kernels for dev at prec. A device without fp64 asked for
 * LA_DOUBLE or LA_MIXED fails with a message saying to use --precision
 * float. cfg may be NULL for the default (plus the tuning database). */
int la_init(la_ctx *la, ocl_ctx *ocl, la_precision prec, const la_config *cfg, cls_error *err);
/* la_init with flags: LA_FLAG_ONE_PART says the solve is not split, so on a
 * CPU device the dot products are plain sums (real.cl): nothing depends on
 * a partition, and compensation would cost ~30% of an iteration there. */
#define LA_FLAG_ONE_PART 1
int la_init_flags(la_ctx *la, ocl_ctx *ocl, la_precision prec, const la_config *cfg, int flags,
                  cls_error *err);
void la_release(la_ctx *la);
/* The two page-locked staging buffers of large uploads (la_vec.c), made now
 * when a copy of `bytes` to this device would go through them: the prewarm
 * makes them beside the parse, where they cost 20-26 ms of the upload of a
 * 1.3 GB file on an H200 host. Nothing to do on a device that does not
 * stage; later uploads make them on demand as before. */
int la_stage_prepare(la_ctx *la, size_t bytes, cls_error *err);

const char *la_precision_str(la_precision p); /* "double", "float", "mixed" */

int la_vec_create(la_ctx *la, int64_t n, la_vec *v, cls_error *err);
/* Sets `count` vectors of n entries aside, allocated and written (zeros)
 * now: a solve's set-up reserves its workspace so that the allocation and
 * the first touch of device memory (0.3 s for 400 MB on an H100) are not
 * paid inside the solve. The pool belongs to la and dies with it; vectors
 * taken from it must be released before la_release. */
int la_pool_reserve(la_ctx *la, int64_t n, int count, cls_error *err);
/* Releases every buffer of the pool (a warm context between two jobs keeps
 * no device memory of the last one). */
void la_pool_clear(la_ctx *la);
void la_vec_release(la_vec *v);
int la_vec_upload(la_ctx *la, la_vec *v, const double *host, cls_error *err);
int la_vec_download(la_ctx *la, const la_vec *v, double *host, cls_error *err);

/* Uploads A (its row pointers from any base) in the given format. AUTO chooses from the row
 * statistics and the tuning database (la_classify, choose_format in la.c); a format that cannot
 * hold A (BCSR without blocks) falls back to AUTO's choice. Fails with a clear message if nnz
 * exceeds 32-bit indices or the device's max allocation. Unless the caller gave la_init a cfg,
 * la->cfg is replaced by the tuned configuration for A's size class (dA->cfg keeps a copy). */
int la_csr_upload(la_ctx *la, const csr_matrix *A, la_spmv_variant variant, la_csr *dA,
                  cls_error *err);
/* Rows of a host CSR matrix as a matrix of their own, without a copy: row
 * i is A's row rows[i] (rows NULL: row first + i), and a column c < nmap
 * is cmap[c] (cmap NULL: columns as stored, nmap unused). A part's device
 * order (interior rows first, local columns renumbered) is such a view of
 * the part. Each row keeps its entries in their stored order; the view
 * has A's ncols. A's row pointers may start at any base (its col and val
 * then count from it). Unchecked, the caller's to keep: every row named
 * is one of A's, and every cmap[c] < A->ncols. */
typedef struct la_csr_view {
    const csr_matrix *A;
    const int32_t *rows;
    int64_t first, nrows;
    const int32_t *cmap;
    int64_t nmap;
} la_csr_view;
/* la_csr_upload of a view: the formats are built from A's arrays through
 * the maps, as they would be from a copy of the rows (the same device
 * arrays, bit for bit). */
int la_csr_upload_view(la_ctx *la, const la_csr_view *v, la_spmv_variant variant, la_csr *dA,
                       cls_error *err);
/* Wraps CSR arrays already on the device (int32 row pointers and columns,
 * double values; la_sparse.h builds them) as an la_csr in CSR-scalar or
 * CSR-vector form by the mean row length, tuned as la_csr_upload tunes;
 * dA takes the three buffers over (la_csr_release releases them). Double
 * precision only. */
int la_csr_adopt(la_ctx *la, cl_mem rowptr, cl_mem col, cl_mem val, int64_t nrows, int64_t ncols,
                 int64_t nnz, la_csr *dA, cls_error *err);
void la_csr_release(la_csr *dA);
const char *la_spmv_variant_name(la_spmv_variant v);
/* "auto", "scalar"|"csr", "vector"|"csr-vector", "adaptive", "sell", "bcsr";
 * returns 0 on success, -1 for an unknown name. */
int la_spmv_variant_parse(const char *name, la_spmv_variant *v);
void la_classify(const la_ctx *la, const csr_matrix *A, la_matrix_class *mc);
/* The CSR-vector width (lanes per row) for rows of mean length mean_row:
 * what la_csr_upload derives when no width is configured. */
size_t la_auto_vector_width(double mean_row);

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
int la_cg_update(la_ctx *la, double alpha, const la_vec *p, const la_vec *q, la_vec *x, la_vec *r,
                 double *rr, cls_error *err);
int la_pcg_update(la_ctx *la, double alpha, const la_vec *p, const la_vec *q, la_vec *x, la_vec *r,
                  const la_vec *d, la_vec *z, double *rz, double *rr, cls_error *err);
/* y = A x with A's values at full precision (LA_MIXED: the double copy,
 * plain CSR; otherwise la_spmv). */
int la_spmv_full(la_ctx *la, const la_csr *A, const la_vec *x, la_vec *y, cls_error *err);
/* r = b - A x with A's values at full precision (LA_MIXED: the double
 * copy), q as scratch for A x; returns r'r (blocking). */
int la_residual(la_ctx *la, const la_csr *A, const la_vec *b, const la_vec *x, la_vec *q, la_vec *r,
                double *rr, cls_error *err);

/*
 * The fused single-synchronisation CG (solver/krylov/cg.c holds the algorithm;
 * cg_fused.cl the kernels). An iteration is three launches with fixed
 * arguments (SpMV with p'q and q'Wq, the one-group scalar kernel, the fused
 * update); the scalar kernel tests convergence on the device and appends a
 * record that is read on a second queue without blocking, so the host
 * learns iteration k's residual while later iterations run. Once the device
 * has stopped (converged, breakdown) queued iterations do nothing.
 */
enum { LA_CGF_RUN = 0, LA_CGF_CONVERGED = 1, LA_CGF_INDEFINITE = 2, LA_CGF_NANORINF = 3 };

/* One iteration's tests and scalars on the host, from its reduced sums
 * rr = r_k'r_k, rz = r_k'z_k, pq = p_k'Ap_k, qq = (Ap_k)'W(Ap_k), in the
 * order every loop applies them (cgc_scalars and cgf_scalars are the
 * kernels' copies): NaN or Inf in r -> NANORINF; rr <= stop2 -> CONVERGED;
 * NaN or Inf in p'Ap (or q'Wq with single) -> NANORINF; p'Ap <= 0 ->
 * INDEFINITE; else RUN with alpha = r'z / p'Ap and, with single, beta from
 * the Chronopoulos-Gear identity (r_{k+1}'z_{k+1} = alpha^2 q'Wq - r'z,
 * 0 at the noise level); without single *beta is 0 (Hestenes-Stiefel's
 * comes from the next reduction). The native loops (kernels/cpu/la_cgn.c)
 * and the distributed loop (solver/krylov/dcg.c) ask this one function. */
static inline int la_cg_step(double rr, double rz, double pq, double qq, double stop2, int single,
                             double *alpha, double *beta)
{
    *alpha = *beta = 0.0;
    if (!isfinite(rr) || !isfinite(rz))
        return LA_CGF_NANORINF;
    if (rr <= stop2) /* ||r_k|| <= tol ||b|| */
        return LA_CGF_CONVERGED;
    if (!isfinite(pq) || (single && !isfinite(qq)))
        return LA_CGF_NANORINF;
    if (!(pq > 0.0)) /* p'Ap <= 0 */
        return LA_CGF_INDEFINITE;
    *alpha = rz / pq; /* alpha = r'z / p'Ap */
    if (single) {
        const double rz_next = *alpha * *alpha * qq - rz; /* r_{k+1}'z_{k+1} (identity) */
        *beta = rz_next > 0.0 ? rz_next / rz : 0.0;
    }
    return LA_CGF_RUN;
}

typedef struct la_cgf_record {
    int64_t k; /* iterations done when the record was made */
    double rr; /* r_k'r_k (recurrence residual) */
    double rz; /* r_k'z_k */
    double pq; /* p_k'A p_k */
    double qq; /* (A p_k)' W (A p_k) */
    double alpha, beta;
    int stop; /* LA_CGF_* */
} la_cgf_record;

#define LA_CGF_SLOTS 256
#define LA_CGF_MAXLAG 8

/* What a part's CG workspace borrows (la_cgp, la_pcm): Ai the interior rows
 * (every row when there are no ghosts), Ab the boundary rows at row_offset
 * Ai->nrows or NULL, n their rows, b (n entries) and x (n + nghost). */
typedef struct la_part_in {
    const la_csr *Ai, *Ab;
    int64_t n, nghost;
    la_vec b, x;
} la_part_in;

/* fills in and checks the sizes agree (who names the caller in the message) */
int la_part_in_set(const la_csr *Ai, const la_csr *Ab, int64_t nghost, const la_vec *b,
                   const la_vec *x, const char *who, la_part_in *in, cls_error *err);

/* The record ring of a device-scalar CG loop (la_cgf, la_pcm; la_ring.c):
 * each queued iteration's record (8 accumulators of hist's slot) is read on
 * la's second queue without blocking; records are consumed in order. */
typedef struct la_ring {
    int64_t k_dev;     /* iterations the device has done or been given */
    int64_t enq, seen; /* records enqueued / consumed since the last start */
    cl_event rev[LA_CGF_SLOTS];
    double ring[LA_CGF_SLOTS][8];
} la_ring;

/* (re)start at iteration k: every pending read waited for first */
int la_ring_reset(la_ring *r, int64_t k, const char *what, cls_error *err);
/* enqueues the read of the next record once `after` (the iteration's last
 * kernel) is done; what names the loop in messages */
int la_ring_read(la_ctx *la, la_ring *r, cl_mem hist, cl_event after, const char *what,
                 cls_error *err);
/* the same for `count` consecutive records that one launch writes (a
 * one-launch loop, la_cgs.h): one read per contiguous run of slots */
int la_ring_read_n(la_ctx *la, la_ring *r, cl_mem hist, cl_event after, int count, const char *what,
                   cls_error *err);
/* the next record in order (waits for it); CLS_EOTHER if none is queued */
int la_ring_next(la_ctx *la, la_ring *r, la_cgf_record *rec, const char *what, cls_error *err);
/* waits for every queued read */
int la_ring_drain(la_ring *r, const char *what, cls_error *err);
/* 1 when another iteration fits in the ring */
int la_ring_room(const la_ring *r);
/* the end of one queued iteration (its SpMV enqueued): the scalars kernel
 * (one group of ls_scal), the update (gu groups of ls_upd), a flush, and
 * the read of the record the scalars kernel wrote */
int la_ring_step(la_ctx *la, la_ring *r, cl_kernel k_scal, size_t ls_scal, cl_kernel k_upd,
                 const char *upd_name, size_t gu, size_t ls_upd, cl_mem hist, const char *what,
                 cls_error *err);

typedef struct la_cgf {
    la_ctx *la;
    const la_csr *A;
    la_vec b, x, d; /* borrowed handles (d.buf NULL without Jacobi) */
    la_vec r, p, q; /* owned work vectors */
    cl_mem ps, pu;  /* SpMV and update partials: compensated pairs (4 per group) */
    cl_mem sc, ctl, hist;
    cl_mem res; /* cgf_fold's eight sums */
    cl_kernel k_spmv, k_scal, k_upd, k_init, k_fold;
    cl_kernel k_beta, k_dir;                 /* LA_CGF_CLASSIC only: cgc_beta, cgc_direction */
    int recurrence;                          /* la_cgf_recurrence */
    size_t gs, gu, ls_spmv, ls_upd, ls_scal; /* groups and work-group sizes */
    size_t ns, nu;                           /* partials per component (one per group) */
    double stop2;
    la_ring rg; /* the records of the queued iterations */
} la_cgf;

/* The recurrence of a device-scalar CG loop (solver/krylov/cg.c says why
 * there are two): CLASSIC the Hestenes-Stiefel one (cg_classic.cl: two
 * reductions, five launches per iteration, the textbook's iterates); FUSED
 * the single-reduction one with beta from the Chronopoulos-Gear identity
 * (cg_fused.cl: three launches, a pass less, but iterates that drift from
 * the textbook's on ill-conditioned matrices). */
typedef enum { LA_CGF_CLASSIC, LA_CGF_FUSED } la_cgf_recurrence;

/* Sets the workspace up for A x = b (x updated in place, dinv NULL without
 * Jacobi); stop when ||r||^2 <= stop2 (tol^2 b'b). */
int la_cgf_create(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
                  double stop2, la_cgf_recurrence recurrence, la_cgf *w, cls_error *err);
/* (Re)starts from the current x: r = b - A x (A at full precision), z, p = z,
 * device counter = k. Returns r'r and r'z (blocking: start-up only). */
int la_cgf_start(la_cgf *w, int64_t k, double *rr, double *rz, cls_error *err);
/* Enqueues one iteration and the non-blocking read of its record. */
int la_cgf_enqueue(la_cgf *w, cls_error *err);
/* The next record in order (waits for it); CLS_EOTHER if none is queued. */
int la_cgf_next(la_cgf *w, la_cgf_record *rec, cls_error *err);
/* r'z and r'r of the last update's residual (blocking; once every queued
 * iteration ran, e.g. at maxiter). */
int la_cgf_last(la_cgf *w, double *rr, double *rz, cls_error *err);
/* Waits for every queued read (before a restart or the end). */
int la_cgf_drain(la_cgf *w, cls_error *err);
void la_cgf_release(la_cgf *w);

/* cgf_fold (cg_fused.cl) on kernel k: folds the pairs of gi interior-SpMV
 * groups (pi), gb boundary-SpMV groups (pb, may be NULL with gb = 0) and gu
 * update groups (pu) into res = {p'q, q'Wq, r'z, r'r} as (hi, lo) pairs, in
 * one work-group of ls. _set only sets the arguments; _read also launches
 * and reads the eight values back (blocking) as doubles. */
int la_cgf_fold_set(la_ctx *la, cl_kernel k, cl_mem res, size_t gi, cl_mem pi, size_t gb, cl_mem pb,
                    size_t gu, cl_mem pu, size_t ls, cls_error *err);
int la_cgf_fold_read(la_ctx *la, cl_kernel k, cl_mem res, size_t gi, cl_mem pi, size_t gb,
                     cl_mem pb, size_t gu, cl_mem pu, size_t ls, double out[8], cls_error *err);

/* The pieces the distributed fused iteration (la_cgp.c) is built from:
 * la_spmv_bind sets a format kernel's arguments for y = A x with the
 * fused epilogue (partial, w, ctl may be NULL) and returns its geometry;
 * la_spmv_kernel_create makes a private kernel object for A's format;
 * la_launch enqueues (profiling capture included); la_acc_size is the
 * bytes of one accumulator; la_cgf_grid_cap the cap on the fused loop's
 * grids (GPUs: 16 groups per CU, see la_cgf_create). */
int la_spmv_bind(la_ctx *la, cl_kernel k, const la_csr *A, cl_mem x, cl_mem y, cl_mem partial,
                 cl_mem w, cl_mem ctl, size_t *groups, size_t *lsz, cls_error *err);
int la_spmv_kernel_create(la_ctx *la, const la_csr *A, cl_kernel *k, cls_error *err);
int la_launch(la_ctx *la, cl_kernel k, const char *kname, size_t groups, size_t ls, cls_error *err);
size_t la_acc_size(const la_ctx *la);
size_t la_cgf_grid_cap(const la_ctx *la);

/* The program of the preconditioned CG's and the preconditioners' kernels
 * and of the block SpMM (real.cl, pcg_fused.cl, pc.cl, spmm.cl), built with la's options on first
 * use and kept with la (so a warm device keeps it too): a solve without a general preconditioner
 * never compiles it. */
int la_aux_program(la_ctx *la, cl_program *out, cls_error *err);
/* The same for the one-launch CG's kernels (real.cl, cg_small.cl; la_cgs.h). */
int la_small_program(la_ctx *la, cl_program *out, cls_error *err);
/* cg_small_reg.cl's program for rpw (1..LA_SMALL_RPW_MAX) rows per
 * work-item, built on first use; *shuffle says whether its reductions are
 * warp shuffles (NVIDIA GPUs) or trees. */
int la_small_reg_program(la_ctx *la, int rpw, cl_program *out, int *shuffle, cls_error *err);

/* Waits for every queued command (for timing). */
int la_finish(la_ctx *la, cls_error *err);

/* Profiling hook: starts capturing launch events / returns the summed
 * device seconds of the captured kernels (each one's in each[0..max) when
 * each is not NULL; *count gets how many) and releases them. */
void la_capture_begin(la_ctx *la);
double la_capture_end(la_ctx *la, double *each, int max, int *count);
/* the same, with each launch's kernel name in names[0..max) */
double la_capture_end_named(la_ctx *la, double *each, const char **names, int max, int *count);

/* For the profiler: BLAS-1/reduction work-group size and groups per CU
 * (any multiple of the preferred multiple; the reductions handle any
 * size), and the fused update's geometry. */
int la_set_vector_geometry(la_ctx *la, size_t local_size, size_t groups_per_cu, cls_error *err);
int la_cgf_set_update_geometry(la_cgf *w, size_t local_size, size_t groups, cls_error *err);
/* CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE and CL_KERNEL_WORK_GROUP_SIZE
 * of one of la's kernels by name (0 when unknown). */
int la_kernel_limits(const la_ctx *la, const char *kernel, size_t *multiple, size_t *max);

/* Work-groups a size-n BLAS-1 / reduction launch uses (for byte counts). */
size_t la_groups_for(const la_ctx *la, int64_t n);

#endif
