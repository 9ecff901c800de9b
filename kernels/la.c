/*
 * la.c: device linear algebra on one OpenCL device (see la.h).
 *
 * Launch geometry. BLAS-1 kernels, dots and the fused CG updates are
 * grid-stride loops over min(ngroups, ceil(n / local_size)) work-groups of
 * cfg.local_size, where ngroups = compute_units * groups_per_cu; dots then run
 * reduce_partials as one work-group of cfg.local_size over those partials,
 * and read back one or two accumulators (blocking). Everything else is
 * enqueued and returns at once: the queue is in order, so a dot's blocking
 * read is the only synchronisation an iteration needs.
 * SpMV uses cfg.spmv_local_size and the same group cap (rows beyond
 * groups * rows-per-group are handled by the grid-stride loop).
 *
 * Precision. LA_DOUBLE stores double; LA_FLOAT stores float and, when the
 * device has fp64, accumulates dots in double (-DCLS_ACC_DOUBLE). Host data
 * is always double; float vectors are converted on upload/download.
 */
#include "la.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ configuration */

static size_t pow2_floor(size_t v)
{
    size_t p = 1;
    while (p <= v / 2)
        p *= 2;
    return p;
}

static int is_pow2(size_t v)
{
    return v && (v & (v - 1)) == 0;
}

static size_t min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}

/*
 * Defaults (the untuned start; the profiler overwrites them per device).
 * GPU: 256 work-items (8 warps / 4 wavefronts) and 8 groups per compute
 *   unit: 2048 resident work-items per SM, enough to cover memory latency on
 *   current NVIDIA/AMD parts. To be swept on the H100/H200.
 * CPU (PoCL): measured on PoCL 2-core AVX-512 Xeon (medians, n = 2^21,
 *   double; see the kernels report). PoCL runs a work-group as a loop over
 *   its work-items and vectorises across them only when the body has no
 *   inner loop of its own; the grid-stride loop is such a loop, so each
 *   work-item walks its elements alone with a stride of the global size and
 *   a small grid thrashes the cache (axpy 12-33 ms with 2-32 groups of 64..
 *   1024). With about one element per work-item (global >= n/4) axpy fell
 *   to 0.9 ms and cg_update to 2.9 ms; dots preferred local 64..256 (their
 *   barriers split the work-group loop, so each group has a fixed cost).
 *   Hence local 64 with 4096 groups per core (a cap that rarely binds), and
 *   SpMV at 256 (scalar 64^3 Poisson: 1.6 ms at 64, 1.0 ms at 256..1024).
 * Others: the GPU choice.
 * vector_width 0 means "derive from the matrix" (la_csr_upload).
 */
void la_config_default(const ocl_device *dev, la_config *cfg)
{
    size_t maxwg = pow2_floor(dev->max_work_group ? dev->max_work_group : 1);
    memset(cfg, 0, sizeof *cfg);
    if (dev->type & CL_DEVICE_TYPE_CPU) {
        cfg->local_size = min_sz(64, maxwg);
        cfg->groups_per_cu = 4096;
        cfg->spmv_local_size = min_sz(256, maxwg);
    } else {
        cfg->local_size = min_sz(256, maxwg);
        cfg->groups_per_cu = 8;
        cfg->spmv_local_size = min_sz(256, maxwg);
    }
    cfg->vector_width = 0;
}

/* ------------------------------------------------------------------ helpers */

static size_t acc_size(const la_ctx *la)
{
    return (la->prec == LA_DOUBLE || la->ocl->dev.fp64) ? sizeof(double) : sizeof(float);
}

/* Sets kernel arguments from (size, pointer) pairs; a NULL pointer with a
 * size is a __local allocation. */
static int set_args(cl_kernel k, const char *kname, cls_error *err, int nargs, ...)
{
    va_list ap;
    va_start(ap, nargs);
    for (int i = 0; i < nargs; i++) {
        size_t size = va_arg(ap, size_t);
        const void *ptr = va_arg(ap, const void *);
        cl_int st = clSetKernelArg(k, (cl_uint)i, size, ptr);
        if (st != CL_SUCCESS) {
            va_end(ap);
            return cls_fail(err, CLS_EOTHER, "clSetKernelArg(%s, %d) failed: %s (%d)",
                            kname, i, ocl_errstr(st), (int)st);
        }
    }
    va_end(ap);
    return CLS_OK;
}
#define A_MEM(m) sizeof(cl_mem), (const void *)&(m)
#define A_INT(v) sizeof(cl_int), (const void *)&(v)
#define A_LOCAL(bytes) (size_t)(bytes), (const void *)NULL

static int launch(la_ctx *la, cl_kernel k, const char *kname, size_t groups, size_t ls,
                  cls_error *err)
{
    size_t global = groups * ls;
    cl_int st =
        clEnqueueNDRangeKernel(la->ocl->queue, k, 1, NULL, &global, &ls, 0, NULL, NULL);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER,
                        "clEnqueueNDRangeKernel(%s, global %zu, local %zu) failed: %s (%d)",
                        kname, global, ls, ocl_errstr(st), (int)st);
    return CLS_OK;
}

/* A `real` scalar as the kernel expects it. */
typedef struct {
    union {
        cl_double d;
        cl_float f;
    } u;
    size_t size;
} real_arg;
static real_arg mk_real(const la_ctx *la, double v)
{
    real_arg r;
    if (la->prec == LA_DOUBLE) {
        r.u.d = v;
        r.size = sizeof(cl_double);
    } else {
        r.u.f = (cl_float)v;
        r.size = sizeof(cl_float);
    }
    return r;
}
#define A_REAL(r) (r).size, (const void *)&(r).u

/* Work-groups for an n-element grid-stride kernel. */
static size_t groups_for(const la_ctx *la, int64_t n)
{
    size_t ls = la->cfg.local_size;
    size_t need = (size_t)((n + (int64_t)ls - 1) / (int64_t)ls);
    size_t g = min_sz(la->ngroups, need);
    return g ? g : 1;
}

static int check_len(const char *op, int64_t a, int64_t b, cls_error *err)
{
    if (a != b)
        return cls_fail(err, CLS_EOTHER, "%s: vector lengths differ (%lld vs %lld)", op,
                        (long long)a, (long long)b);
    return CLS_OK;
}

/* Stage 2 and the read-back: ncomp accumulators into out[]. */
static int reduce_and_read(la_ctx *la, size_t groups, int ncomp, double *out,
                           cls_error *err)
{
    cl_int g = (cl_int)groups, nc = ncomp;
    size_t ls = la->cfg.local_size;
    int rc = set_args(la->k_reduce, "reduce_partials", err, 5, A_INT(g), A_INT(nc),
                      A_MEM(la->partial), A_MEM(la->result),
                      A_LOCAL(2 * ls * acc_size(la)));
    if (rc)
        return rc;
    if ((rc = launch(la, la->k_reduce, "reduce_partials", 1, ls, err)))
        return rc;
    unsigned char buf[2 * sizeof(double)];
    size_t as = acc_size(la);
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, la->result, CL_TRUE, 0, as * (size_t)ncomp,
                                    buf, 0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(dot result)");
    for (int c = 0; c < ncomp; c++) {
        if (as == sizeof(double)) {
            double v;
            memcpy(&v, buf + c * as, sizeof v);
            out[c] = v;
        } else {
            float v;
            memcpy(&v, buf + c * as, sizeof v);
            out[c] = v;
        }
    }
    return CLS_OK;
}

/* ------------------------------------------------------------- init/release */

static const char *const la_sources[] = {"real.cl", "spmv_csr.cl", "dot.cl", "blas1.cl",
                                         "cg_fused.cl"};

int la_init(la_ctx *la, ocl_ctx *ocl, la_precision prec, const la_config *cfg, cls_error *err)
{
    memset(la, 0, sizeof *la);
    la->ocl = ocl;
    la->prec = prec;
    la->elem = prec == LA_DOUBLE ? sizeof(double) : sizeof(float);
    const ocl_device *dev = &ocl->dev;
    if (prec == LA_DOUBLE && !dev->fp64)
        return cls_fail(err, CLS_EOTHER,
                        "device %s has no double precision (fp64); use --precision float",
                        dev->name);
    if (cfg)
        la->cfg = *cfg;
    else
        la_config_default(dev, &la->cfg);
    la_config *c = &la->cfg;
    if (!is_pow2(c->local_size) || !is_pow2(c->spmv_local_size) || c->groups_per_cu == 0 ||
        (c->vector_width && (!is_pow2(c->vector_width) || c->vector_width < 2 ||
                             c->vector_width > 64)))
        return cls_fail(err, CLS_EUSAGE,
                        "bad work-group configuration: local %zu, spmv local %zu, groups/CU "
                        "%zu, vector width %zu (sizes must be powers of two, width 2..64)",
                        c->local_size, c->spmv_local_size, c->groups_per_cu,
                        c->vector_width);

    const char *opts = prec == LA_DOUBLE ? "-DCLS_REAL_DOUBLE"
                       : dev->fp64       ? "-DCLS_ACC_DOUBLE"
                                         : "";
    int rc = ocl_build_program(ocl, la_sources, (int)(sizeof la_sources / sizeof *la_sources),
                               opts, &la->prog, err);
    if (rc)
        return rc;

    struct {
        cl_kernel *k;
        const char *name;
        size_t *ls; /* config entry the kernel's limit clamps */
    } ks[] = {
        {&la->k_spmv_scalar, "spmv_csr_scalar", &c->spmv_local_size},
        {&la->k_spmv_vector, "spmv_csr_vector", &c->spmv_local_size},
        {&la->k_dot_partial, "dot_partial", &c->local_size},
        {&la->k_dot2_partial, "dot2_partial", &c->local_size},
        {&la->k_reduce, "reduce_partials", &c->local_size},
        {&la->k_axpy, "axpy", &c->local_size},
        {&la->k_xpay, "xpay", &c->local_size},
        {&la->k_copy, "copy", &c->local_size},
        {&la->k_fill, "fill", &c->local_size},
        {&la->k_pointwise, "pointwise", &c->local_size},
        {&la->k_cg_update, "cg_update", &c->local_size},
        {&la->k_pcg_update, "pcg_update", &c->local_size},
    };
    /* the device maximum first, then each kernel's own limit (register
     * pressure can make it smaller) */
    c->local_size = min_sz(c->local_size, pow2_floor(dev->max_work_group));
    c->spmv_local_size = min_sz(c->spmv_local_size, pow2_floor(dev->max_work_group));
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        if ((rc = ocl_create_kernel(la->prog, ks[i].name, ks[i].k, err))) {
            la_release(la);
            return rc;
        }
        size_t kmax = 0;
        if (clGetKernelWorkGroupInfo(*ks[i].k, dev->id, CL_KERNEL_WORK_GROUP_SIZE,
                                     sizeof kmax, &kmax, NULL) == CL_SUCCESS &&
            kmax > 0)
            *ks[i].ls = min_sz(*ks[i].ls, pow2_floor(kmax));
    }
    /* scratch for two-sum reductions: 2 accumulators per work-item */
    while (c->local_size > 1 && 2 * c->local_size * acc_size(la) > dev->local_mem / 2)
        c->local_size /= 2;
    while (c->spmv_local_size > 1 && c->spmv_local_size * la->elem > dev->local_mem / 2)
        c->spmv_local_size /= 2;

    la->ngroups = (size_t)dev->compute_units * c->groups_per_cu;
    if (la->ngroups == 0)
        la->ngroups = 1;
    cl_int st;
    la->partial = clCreateBuffer(ocl->context, CL_MEM_READ_WRITE,
                                 la->ngroups * 2 * sizeof(double), NULL, &st);
    if (st == CL_SUCCESS)
        la->result =
            clCreateBuffer(ocl->context, CL_MEM_READ_WRITE, 2 * sizeof(double), NULL, &st);
    if (st != CL_SUCCESS) {
        la_release(la);
        OCL_CHECK(err, st, "clCreateBuffer(reduction buffers)");
    }
    return CLS_OK;
}

void la_release(la_ctx *la)
{
    if (!la)
        return;
    cl_kernel *ks[] = {&la->k_spmv_scalar, &la->k_spmv_vector, &la->k_dot_partial,
                       &la->k_dot2_partial, &la->k_reduce, &la->k_axpy, &la->k_xpay,
                       &la->k_copy, &la->k_fill, &la->k_pointwise, &la->k_cg_update,
                       &la->k_pcg_update};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++)
        if (*ks[i]) {
            clReleaseKernel(*ks[i]);
            *ks[i] = NULL;
        }
    if (la->partial)
        clReleaseMemObject(la->partial);
    if (la->result)
        clReleaseMemObject(la->result);
    if (la->prog)
        clReleaseProgram(la->prog);
    la->partial = la->result = NULL;
    la->prog = NULL;
}

/* ------------------------------------------------------------------ vectors */

static int alloc_buffer(la_ctx *la, const char *what, size_t bytes, cl_mem_flags flags,
                        void *host, cl_mem *out, cls_error *err)
{
    const ocl_device *dev = &la->ocl->dev;
    if (bytes > dev->max_alloc)
        return cls_fail(err, CLS_EOTHER,
                        "%s needs %.1f MB per buffer but device %s allows %.1f MB", what,
                        (double)bytes / 1048576.0, dev->name,
                        (double)dev->max_alloc / 1048576.0);
    cl_int st;
    *out = clCreateBuffer(la->ocl->context, flags, bytes ? bytes : 1, host, &st);
    if (st != CL_SUCCESS) {
        *out = NULL;
        return cls_fail(err, CLS_EOTHER, "clCreateBuffer(%s, %zu bytes) failed: %s (%d)", what,
                        bytes, ocl_errstr(st), (int)st);
    }
    return CLS_OK;
}

int la_vec_create(la_ctx *la, int64_t n, la_vec *v, cls_error *err)
{
    v->buf = NULL;
    v->n = 0;
    if (n < 0 || n > INT_MAX)
        return cls_fail(err, CLS_EOTHER,
                        "vector of %lld entries exceeds the 32-bit indices of the kernels",
                        (long long)n);
    int rc = alloc_buffer(la, "vector", (size_t)(n ? n : 1) * la->elem, CL_MEM_READ_WRITE,
                          NULL, &v->buf, err);
    if (rc)
        return rc;
    v->n = n;
    return CLS_OK;
}

void la_vec_release(la_vec *v)
{
    if (v && v->buf) {
        clReleaseMemObject(v->buf);
        v->buf = NULL;
    }
}

int la_vec_upload(la_ctx *la, la_vec *v, const double *host, cls_error *err)
{
    if (v->n == 0)
        return CLS_OK;
    size_t n = (size_t)v->n;
    const void *src = host;
    float *tmp = NULL;
    if (la->prec == LA_FLOAT) {
        if (!(tmp = malloc(n * sizeof *tmp)))
            return cls_fail(err, CLS_EOTHER, "out of memory converting a vector to float");
        for (size_t i = 0; i < n; i++)
            tmp[i] = (float)host[i];
        src = tmp;
    }
    cl_int st = clEnqueueWriteBuffer(la->ocl->queue, v->buf, CL_TRUE, 0, n * la->elem, src, 0,
                                     NULL, NULL);
    free(tmp);
    OCL_CHECK(err, st, "clEnqueueWriteBuffer(vector)");
    return CLS_OK;
}

int la_vec_download(la_ctx *la, const la_vec *v, double *host, cls_error *err)
{
    if (v->n == 0)
        return CLS_OK;
    size_t n = (size_t)v->n;
    if (la->prec == LA_DOUBLE) {
        cl_int st = clEnqueueReadBuffer(la->ocl->queue, v->buf, CL_TRUE, 0, n * la->elem,
                                        host, 0, NULL, NULL);
        OCL_CHECK(err, st, "clEnqueueReadBuffer(vector)");
        return CLS_OK;
    }
    float *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return cls_fail(err, CLS_EOTHER, "out of memory converting a vector from float");
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, v->buf, CL_TRUE, 0, n * sizeof *tmp, tmp,
                                    0, NULL, NULL);
    if (st == CL_SUCCESS)
        for (size_t i = 0; i < n; i++)
            host[i] = tmp[i];
    free(tmp);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(vector)");
    return CLS_OK;
}

/* --------------------------------------------------------------------- CSR */

const char *la_spmv_variant_name(la_spmv_variant v)
{
    switch (v) {
    case LA_SPMV_SCALAR:
        return "scalar";
    case LA_SPMV_VECTOR:
        return "vector";
    default:
        return "auto";
    }
}

/*
 * AUTO: VECTOR when the mean row length reaches LA_VECTOR_MIN_ROW on a GPU or
 * accelerator; always SCALAR on a CPU device.
 * Measured on PoCL (2-core AVX-512 Xeon, double, medians; banded matrices of
 * 4 M nonzeros, L entries per row; ms per SpMV, scalar vs best vector width):
 *   L = 4: 5.8 vs 21 (vw 2)    L = 12: 2.8 vs 6.8    L = 32: 2.3 vs 3.5
 *   L = 64: 11.1 vs 9.4 (noise: the run was shared)    L = 256: 9.4 vs 21
 * and Poisson 64^3 (7 per row): scalar 1.0 ms, vector 2.7 ms (vw 2) to
 * 18 ms (vw 16). PoCL turns each of the log2(vw) barriers into a fission of
 * the work-item loop, so the vector kernel never pays for itself there.
 * On GPUs the vector kernel's lanes coalesce val/col loads and its
 * barriers are cheap; Bell & Garland (2008) put the crossover near 8-16 per
 * row, hence 12. Revisit on the H100/H200: sweep L and vw with the profiler
 * and let the tuned choice replace this constant.
 */
#define LA_VECTOR_MIN_ROW 12.0

static size_t auto_width(double mean_row)
{
    size_t w = 2;
    while ((double)w < mean_row && w < 32)
        w *= 2;
    return w;
}

int la_csr_upload(la_ctx *la, const csr_matrix *A, la_spmv_variant variant, la_csr *dA,
                  cls_error *err)
{
    memset(dA, 0, sizeof *dA);
    if (A->nnz > INT32_MAX || A->nrows >= INT32_MAX || A->ncols > INT32_MAX)
        return cls_fail(err, CLS_EOTHER,
                        "matrix of %lld rows and %lld nonzeros exceeds the 32-bit indices of "
                        "the device kernels (at most %d); partition it across more devices",
                        (long long)A->nrows, (long long)A->nnz, INT32_MAX);
    size_t nr = (size_t)A->nrows, nnz = (size_t)A->nnz;
    size_t biggest = (nr + 1) * sizeof(cl_int);
    if (nnz * sizeof(cl_int) > biggest)
        biggest = nnz * sizeof(cl_int);
    if (nnz * la->elem > biggest)
        biggest = nnz * la->elem;
    if (biggest > la->ocl->dev.max_alloc)
        return cls_fail(err, CLS_EOTHER,
                        "matrix needs %.0f MB per buffer but device %s allows %.0f MB; "
                        "partition it across more devices",
                        (double)biggest / 1048576.0, la->ocl->dev.name,
                        (double)la->ocl->dev.max_alloc / 1048576.0);

    cl_int *rp = malloc((nr + 1) * sizeof *rp);
    void *vals = NULL;
    if (!rp)
        return cls_fail(err, CLS_EOTHER, "out of memory converting row pointers");
    for (size_t i = 0; i <= nr; i++)
        rp[i] = (cl_int)A->rowptr[i];
    if (la->prec == LA_FLOAT) {
        float *f = malloc((nnz ? nnz : 1) * sizeof *f);
        if (!f) {
            free(rp);
            return cls_fail(err, CLS_EOTHER, "out of memory converting values to float");
        }
        for (size_t j = 0; j < nnz; j++)
            f[j] = (float)A->val[j];
        vals = f;
    }
    cl_mem_flags fl = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
    int rc = alloc_buffer(la, "row pointers", (nr + 1) * sizeof(cl_int), fl, rp, &dA->rowptr,
                          err);
    if (!rc && nnz)
        rc = alloc_buffer(la, "column indices", nnz * sizeof(cl_int), fl, A->col, &dA->col,
                          err);
    else if (!rc)
        rc = alloc_buffer(la, "column indices", sizeof(cl_int), CL_MEM_READ_ONLY, NULL,
                          &dA->col, err);
    if (!rc && nnz)
        rc = alloc_buffer(la, "values", nnz * la->elem, fl, vals ? vals : (void *)A->val,
                          &dA->val, err);
    else if (!rc)
        rc = alloc_buffer(la, "values", la->elem, CL_MEM_READ_ONLY, NULL, &dA->val, err);
    free(rp);
    free(vals);
    if (rc) {
        la_csr_release(dA);
        return rc;
    }
    dA->nrows = A->nrows;
    dA->ncols = A->ncols;
    dA->nnz = A->nnz;

    double mean = A->nrows ? (double)A->nnz / (double)A->nrows : 0.0;
    if (variant == LA_SPMV_AUTO)
        variant = !(la->ocl->dev.type & CL_DEVICE_TYPE_CPU) && mean >= LA_VECTOR_MIN_ROW
                      ? LA_SPMV_VECTOR
                      : LA_SPMV_SCALAR;
    dA->variant = variant;
    dA->vector_width = la->cfg.vector_width ? la->cfg.vector_width : auto_width(mean);
    if (dA->vector_width > la->cfg.spmv_local_size)
        dA->vector_width = la->cfg.spmv_local_size;
    return CLS_OK;
}

void la_csr_release(la_csr *dA)
{
    if (!dA)
        return;
    if (dA->rowptr)
        clReleaseMemObject(dA->rowptr);
    if (dA->col)
        clReleaseMemObject(dA->col);
    if (dA->val)
        clReleaseMemObject(dA->val);
    dA->rowptr = dA->col = dA->val = NULL;
}

/* ------------------------------------------------------------------ kernels */

int la_spmv(la_ctx *la, const la_csr *A, const la_vec *x, la_vec *y, cls_error *err)
{
    int rc;
    if ((rc = check_len("la_spmv (x vs columns)", x->n, A->ncols, err)) ||
        (rc = check_len("la_spmv (y vs rows)", y->n, A->nrows, err)))
        return rc;
    if (x->buf == y->buf)
        return cls_fail(err, CLS_EOTHER, "la_spmv: x and y must be different vectors");
    if (A->nrows == 0)
        return CLS_OK;
    cl_int nrows = (cl_int)A->nrows;
    size_t ls = la->cfg.spmv_local_size;
    size_t cap = la->ngroups;
    if (A->variant == LA_SPMV_VECTOR) {
        size_t vw = A->vector_width;
        if (!is_pow2(vw) || vw < 2 || vw > 64 || vw > ls)
            return cls_fail(err, CLS_EOTHER,
                            "la_spmv: vector width %zu must be a power of two in 2..64 and "
                            "at most the SpMV work-group size %zu",
                            vw, ls);
        size_t rows_per_group = ls / vw;
        size_t need = ((size_t)nrows + rows_per_group - 1) / rows_per_group;
        cl_int cvw = (cl_int)vw;
        if ((rc = set_args(la->k_spmv_vector, "spmv_csr_vector", err, 8, A_INT(nrows),
                           A_INT(cvw), A_MEM(A->rowptr), A_MEM(A->col), A_MEM(A->val),
                           A_MEM(x->buf), A_MEM(y->buf), A_LOCAL(ls * la->elem))))
            return rc;
        return launch(la, la->k_spmv_vector, "spmv_csr_vector", min_sz(need, cap), ls, err);
    }
    size_t need = ((size_t)nrows + ls - 1) / ls;
    if ((rc = set_args(la->k_spmv_scalar, "spmv_csr_scalar", err, 6, A_INT(nrows),
                       A_MEM(A->rowptr), A_MEM(A->col), A_MEM(A->val), A_MEM(x->buf),
                       A_MEM(y->buf))))
        return rc;
    return launch(la, la->k_spmv_scalar, "spmv_csr_scalar", min_sz(need, cap), ls, err);
}

int la_dot(la_ctx *la, const la_vec *x, const la_vec *y, double *out, cls_error *err)
{
    int rc;
    *out = 0.0;
    if ((rc = check_len("la_dot", x->n, y->n, err)))
        return rc;
    if (x->n == 0)
        return CLS_OK;
    cl_int n = (cl_int)x->n;
    size_t g = groups_for(la, x->n);
    if ((rc = set_args(la->k_dot_partial, "dot_partial", err, 5, A_INT(n), A_MEM(x->buf),
                       A_MEM(y->buf), A_MEM(la->partial),
                       A_LOCAL(la->cfg.local_size * acc_size(la)))) ||
        (rc = launch(la, la->k_dot_partial, "dot_partial", g, la->cfg.local_size, err)))
        return rc;
    return reduce_and_read(la, g, 1, out, err);
}

int la_dot2(la_ctx *la, const la_vec *x, const la_vec *y, const la_vec *z, double out[2],
            cls_error *err)
{
    int rc;
    out[0] = out[1] = 0.0;
    if ((rc = check_len("la_dot2", x->n, y->n, err)) ||
        (rc = check_len("la_dot2", x->n, z->n, err)))
        return rc;
    if (x->n == 0)
        return CLS_OK;
    cl_int n = (cl_int)x->n;
    size_t g = groups_for(la, x->n);
    if ((rc = set_args(la->k_dot2_partial, "dot2_partial", err, 6, A_INT(n), A_MEM(x->buf),
                       A_MEM(y->buf), A_MEM(z->buf), A_MEM(la->partial),
                       A_LOCAL(2 * la->cfg.local_size * acc_size(la)))) ||
        (rc = launch(la, la->k_dot2_partial, "dot2_partial", g, la->cfg.local_size, err)))
        return rc;
    return reduce_and_read(la, g, 2, out, err);
}

int la_axpy(la_ctx *la, double a, const la_vec *x, la_vec *y, cls_error *err)
{
    int rc;
    if ((rc = check_len("la_axpy", x->n, y->n, err)) || x->n == 0)
        return rc;
    cl_int n = (cl_int)x->n;
    real_arg ra = mk_real(la, a);
    if ((rc = set_args(la->k_axpy, "axpy", err, 4, A_INT(n), A_REAL(ra), A_MEM(x->buf),
                       A_MEM(y->buf))))
        return rc;
    return launch(la, la->k_axpy, "axpy", groups_for(la, x->n), la->cfg.local_size, err);
}

int la_xpay(la_ctx *la, const la_vec *x, double a, la_vec *y, cls_error *err)
{
    int rc;
    if ((rc = check_len("la_xpay", x->n, y->n, err)) || x->n == 0)
        return rc;
    cl_int n = (cl_int)x->n;
    real_arg ra = mk_real(la, a);
    if ((rc = set_args(la->k_xpay, "xpay", err, 4, A_INT(n), A_MEM(x->buf), A_REAL(ra),
                       A_MEM(y->buf))))
        return rc;
    return launch(la, la->k_xpay, "xpay", groups_for(la, x->n), la->cfg.local_size, err);
}

int la_copy(la_ctx *la, const la_vec *x, la_vec *y, cls_error *err)
{
    int rc;
    if ((rc = check_len("la_copy", x->n, y->n, err)) || x->n == 0 || x->buf == y->buf)
        return rc;
    cl_int n = (cl_int)x->n;
    if ((rc = set_args(la->k_copy, "copy", err, 3, A_INT(n), A_MEM(x->buf), A_MEM(y->buf))))
        return rc;
    return launch(la, la->k_copy, "copy", groups_for(la, x->n), la->cfg.local_size, err);
}

int la_fill(la_ctx *la, double a, la_vec *y, cls_error *err)
{
    int rc;
    if (y->n == 0)
        return CLS_OK;
    cl_int n = (cl_int)y->n;
    real_arg ra = mk_real(la, a);
    if ((rc = set_args(la->k_fill, "fill", err, 3, A_INT(n), A_REAL(ra), A_MEM(y->buf))))
        return rc;
    return launch(la, la->k_fill, "fill", groups_for(la, y->n), la->cfg.local_size, err);
}

int la_pointwise(la_ctx *la, const la_vec *d, const la_vec *r, la_vec *z, cls_error *err)
{
    int rc;
    if ((rc = check_len("la_pointwise", d->n, r->n, err)) ||
        (rc = check_len("la_pointwise", d->n, z->n, err)) || d->n == 0)
        return rc;
    cl_int n = (cl_int)d->n;
    if ((rc = set_args(la->k_pointwise, "pointwise", err, 4, A_INT(n), A_MEM(d->buf),
                       A_MEM(r->buf), A_MEM(z->buf))))
        return rc;
    return launch(la, la->k_pointwise, "pointwise", groups_for(la, d->n), la->cfg.local_size,
                  err);
}

int la_cg_update(la_ctx *la, double alpha, const la_vec *p, const la_vec *q, la_vec *x,
                 la_vec *r, double *rr, cls_error *err)
{
    int rc;
    *rr = 0.0;
    if ((rc = check_len("la_cg_update", p->n, q->n, err)) ||
        (rc = check_len("la_cg_update", p->n, x->n, err)) ||
        (rc = check_len("la_cg_update", p->n, r->n, err)))
        return rc;
    if (x->buf == r->buf || x->buf == p->buf || x->buf == q->buf || r->buf == p->buf ||
        r->buf == q->buf)
        return cls_fail(err, CLS_EOTHER, "la_cg_update: x and r must not alias p, q or each other");
    if (p->n == 0)
        return CLS_OK;
    cl_int n = (cl_int)p->n;
    real_arg ra = mk_real(la, alpha);
    size_t g = groups_for(la, p->n);
    if ((rc = set_args(la->k_cg_update, "cg_update", err, 8, A_INT(n), A_REAL(ra),
                       A_MEM(p->buf), A_MEM(q->buf), A_MEM(x->buf), A_MEM(r->buf),
                       A_MEM(la->partial), A_LOCAL(la->cfg.local_size * acc_size(la)))) ||
        (rc = launch(la, la->k_cg_update, "cg_update", g, la->cfg.local_size, err)))
        return rc;
    return reduce_and_read(la, g, 1, rr, err);
}

int la_pcg_update(la_ctx *la, double alpha, const la_vec *p, const la_vec *q, la_vec *x,
                  la_vec *r, const la_vec *d, la_vec *z, double *rz, double *rr,
                  cls_error *err)
{
    int rc;
    *rz = *rr = 0.0;
    if ((rc = check_len("la_pcg_update", p->n, q->n, err)) ||
        (rc = check_len("la_pcg_update", p->n, x->n, err)) ||
        (rc = check_len("la_pcg_update", p->n, r->n, err)) ||
        (rc = check_len("la_pcg_update", p->n, d->n, err)) ||
        (rc = check_len("la_pcg_update", p->n, z->n, err)))
        return rc;
    cl_mem outs[3] = {x->buf, r->buf, z->buf};
    cl_mem all[6] = {x->buf, r->buf, z->buf, p->buf, q->buf, d->buf};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 6; j++)
            if (i != j && outs[i] == all[j])
                return cls_fail(err, CLS_EOTHER,
                                "la_pcg_update: x, r and z must not alias each other or "
                                "p, q, d");
    if (p->n == 0)
        return CLS_OK;
    cl_int n = (cl_int)p->n;
    real_arg ra = mk_real(la, alpha);
    size_t g = groups_for(la, p->n);
    if ((rc = set_args(la->k_pcg_update, "pcg_update", err, 10, A_INT(n), A_REAL(ra),
                       A_MEM(p->buf), A_MEM(q->buf), A_MEM(x->buf), A_MEM(r->buf),
                       A_MEM(d->buf), A_MEM(z->buf), A_MEM(la->partial),
                       A_LOCAL(2 * la->cfg.local_size * acc_size(la)))) ||
        (rc = launch(la, la->k_pcg_update, "pcg_update", g, la->cfg.local_size, err)))
        return rc;
    double out[2] = {0.0, 0.0};
    if ((rc = reduce_and_read(la, g, 2, out, err)))
        return rc;
    *rz = out[0];
    *rr = out[1];
    return CLS_OK;
}

int la_finish(la_ctx *la, cls_error *err)
{
    OCL_CHECK(err, clFinish(la->ocl->queue), "clFinish");
    return CLS_OK;
}
