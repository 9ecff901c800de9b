/*
 * la.c: device linear algebra on one OpenCL device (see la.h).
 *
 * Launch geometry. BLAS-1 kernels, dots and the classic fused CG updates
 * are grid-stride loops over min(ngroups, ceil(n / local_size)) work-groups
 * of cfg.local_size, where ngroups = compute_units * groups_per_cu; dots then
 * run reduce_partials as one work-group of cfg.local_size over those
 * partials, and read back one or two accumulators (blocking). Everything
 * else is enqueued and returns at once: the queue is in order.
 * Each SpMV format launches at most compute_units * spmv_groups_per_cu
 * groups of its own work-group size (dA->local_size, dA->max_groups),
 * grid-stride over rows (or row blocks). The fused CG (la_cgf_*) uses
 * cg_local_size / cg_groups_per_cu for its update.
 *
 * Formats. la_csr_upload converts the host CSR into the chosen format:
 * CSR-Adaptive row blocks (adaptive_blocks), SELL-C-sigma chunks
 * (sell_build), k x k blocks (bcsr_detect, bcsr_build). The choice
 * (choose_format) follows the matrix's shape (la_classify) unless the tuning
 * database recorded a measured winner for that shape and size class.
 *
 * Precision. LA_DOUBLE stores double; LA_FLOAT stores float and, when the
 * device has fp64, accumulates dots in double (-DCLS_ACC_DOUBLE); LA_MIXED
 * stores vectors in double and matrix values in float (-DCLS_MAT_FLOAT),
 * plus a double copy of the CSR values for the true residual. Host data is
 * always double.
 *
 * The fused CG (la_cgf_*). Its kernels get their arguments once; an
 * iteration is three clEnqueueNDRangeKernel calls and one non-blocking read
 * of a 64-byte record on a second in-order queue (la->rq) that waits on the
 * scalar kernel's event, so the main queue never drains for a read.
 */
#include "../common/parallel.h"
#include "../common/trace.h"
#include "la.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunedb.h"

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

static size_t max_sz(size_t a, size_t b)
{
    return a > b ? a : b;
}

/*
 * Defaults (the untuned start; the profiler overwrites them per device).
 * GPU: 256 work-items (8 warps / 4 wavefronts) and 8 groups per compute
 *   unit: 2048 resident work-items per SM, enough to cover memory latency on
 *   current NVIDIA/AMD parts. SELL chunks of 32 rows: one warp reads 32
 *   consecutive values per step.
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
 *   SELL chunks of 8 rows: one AVX-512 register of doubles.
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
        cfg->sell_c = 8;
    } else {
        cfg->local_size = min_sz(256, maxwg);
        cfg->groups_per_cu = 8;
        cfg->spmv_local_size = min_sz(256, maxwg);
        cfg->sell_c = 32;
    }
    cfg->vector_width = 0;
    cfg->spmv_groups_per_cu = cfg->groups_per_cu;
    cfg->fmt_local_size = cfg->spmv_local_size;
    cfg->cg_local_size = cfg->local_size;
    cfg->cg_groups_per_cu = cfg->groups_per_cu;
    cfg->sell_sigma = 0;
    cfg->adaptive_nnz = 1024;
    cfg->format = LA_SPMV_AUTO;
    snprintf(cfg->source, sizeof cfg->source, "default");
}

/* fills the fields a caller's config left 0 (configs written before the
 * kernel issue) from the defaults */
static void config_complete(const ocl_device *dev, la_config *c)
{
    la_config d;
    la_config_default(dev, &d);
    if (!c->spmv_groups_per_cu)
        c->spmv_groups_per_cu = c->groups_per_cu;
    if (!c->fmt_local_size)
        c->fmt_local_size = c->spmv_local_size;
    if (!c->cg_local_size)
        c->cg_local_size = c->local_size;
    if (!c->cg_groups_per_cu)
        c->cg_groups_per_cu = c->groups_per_cu;
    if (!c->sell_c)
        c->sell_c = d.sell_c;
    if (!c->adaptive_nnz)
        c->adaptive_nnz = d.adaptive_nnz;
}

const char *la_precision_str(la_precision p)
{
    return p == LA_FLOAT ? "float" : p == LA_MIXED ? "mixed" : "double";
}

/* ------------------------------------------------------------------ helpers */

static size_t acc_size(const la_ctx *la)
{
    return (la->prec != LA_FLOAT || la->ocl->dev.fp64) ? sizeof(double) : sizeof(float);
}

static void stage_release(la_ctx *la);
static int write_device(la_ctx *la, cl_mem dst, size_t off, size_t bytes, const void *src,
                        cls_error *err);

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

static int enqueue(la_ctx *la, cl_kernel k, const char *kname, size_t groups, size_t ls,
                   cls_error *err)
{
    size_t global = groups * ls;
    cl_event ev = NULL;
    int want = la->capture && la->nev < (int)(sizeof la->ev / sizeof *la->ev);
    cl_int st = clEnqueueNDRangeKernel(la->ocl->queue, k, 1, NULL, &global, &ls, 0, NULL,
                                       want ? &ev : NULL);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER,
                        "clEnqueueNDRangeKernel(%s, global %zu, local %zu) failed: %s (%d)",
                        kname, global, ls, ocl_errstr(st), (int)st);
    if (want)
        la->ev[la->nev++] = ev;
    return CLS_OK;
}

static int launch(la_ctx *la, cl_kernel k, const char *kname, size_t groups, size_t ls,
                  cls_error *err)
{
    return enqueue(la, k, kname, groups, ls, err);
}

void la_capture_begin(la_ctx *la)
{
    for (int i = 0; i < la->nev; i++)
        clReleaseEvent(la->ev[i]);
    la->nev = 0;
    la->capture = 1;
}

double la_capture_end(la_ctx *la, double *each, int max, int *count)
{
    double s = 0.0;
    for (int i = 0; i < la->nev; i++) {
        double t = ocl_event_seconds(la->ev[i]);
        if (t > 0)
            s += t;
        if (each && i < max)
            each[i] = t;
        clReleaseEvent(la->ev[i]);
    }
    if (count)
        *count = la->nev;
    la->nev = 0;
    la->capture = 0;
    return s;
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
    if (la->prec != LA_FLOAT) {
        r.u.d = v;
        r.size = sizeof(cl_double);
    } else {
        r.u.f = (cl_float)v;
        r.size = sizeof(cl_float);
    }
    return r;
}
static real_arg mk_acc(const la_ctx *la, double v)
{
    real_arg r;
    if (acc_size(la) == sizeof(double)) {
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

size_t la_groups_for(const la_ctx *la, int64_t n)
{
    return groups_for(la, n);
}

static int check_len(const char *op, int64_t a, int64_t b, cls_error *err)
{
    if (a != b)
        return cls_fail(err, CLS_EOTHER, "%s: vector lengths differ (%lld vs %lld)", op,
                        (long long)a, (long long)b);
    return CLS_OK;
}

/* Makes la->partial hold 2 * groups accumulators. */
static int ensure_partial(la_ctx *la, size_t groups, cls_error *err)
{
    if (groups <= la->partial_cap && la->partial)
        return CLS_OK;
    cl_int st;
    cl_mem m = clCreateBuffer(la->ocl->context, CL_MEM_READ_WRITE, groups * 2 * sizeof(double),
                              NULL, &st);
    OCL_CHECK(err, st, "clCreateBuffer(reduction partials)");
    if (la->partial)
        clReleaseMemObject(la->partial);
    la->partial = m;
    la->partial_cap = groups;
    return CLS_OK;
}

/* Converts n accumulators read from the device (acc_size each) to double. */
static void acc_to_double(const la_ctx *la, const void *buf, int n, double *out)
{
    size_t as = acc_size(la);
    for (int c = 0; c < n; c++) {
        if (as == sizeof(double)) {
            double v;
            memcpy(&v, (const unsigned char *)buf + c * as, sizeof v);
            out[c] = v;
        } else {
            float v;
            memcpy(&v, (const unsigned char *)buf + c * as, sizeof v);
            out[c] = v;
        }
    }
}

/* Stage 2 over `part` (ncomp sums of `groups` partials) and the read-back. */
static int reduce_buf_and_read(la_ctx *la, cl_mem part, size_t groups, int ncomp, double *out,
                               cls_error *err)
{
    cl_int g = (cl_int)groups, nc = ncomp;
    size_t ls = la->cfg.local_size;
    int rc = set_args(la->k_reduce, "reduce_partials", err, 5, A_INT(g), A_INT(nc), A_MEM(part),
                      A_MEM(la->result), A_LOCAL(2 * ls * acc_size(la)));
    if (rc)
        return rc;
    if ((rc = launch(la, la->k_reduce, "reduce_partials", 1, ls, err)))
        return rc;
    unsigned char buf[2 * sizeof(double)];
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, la->result, CL_TRUE, 0,
                                    acc_size(la) * (size_t)ncomp, buf, 0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(dot result)");
    acc_to_double(la, buf, ncomp, out);
    return CLS_OK;
}

static int reduce_and_read(la_ctx *la, size_t groups, int ncomp, double *out, cls_error *err)
{
    return reduce_buf_and_read(la, la->partial, groups, ncomp, out, err);
}

/* ------------------------------------------------------------- init/release */

static const char *const la_sources[] = {"real.cl",      "spmv_csr.cl", "spmv_adaptive.cl",
                                         "spmv_sell.cl", "spmv_bcsr.cl", "dot.cl",
                                         "blas1.cl",     "cg_fused.cl"};

static const char *prec_key(la_precision p)
{
    return la_precision_str(p);
}

/* Overlays the database's entries for `kernel` on the given config fields.
 * pow2: the field is shared with kernels that need powers of two (la_dist),
 * so the best power-of-two configuration is taken. Returns 1 if an entry
 * was applied (*exact = 0 if from another size class). */
static int overlay(const la_ctx *la, const tunedb *db, const char *kernel, int cls,
                   const char *shape, int pow2, size_t *ls, size_t *gpcu, size_t *param,
                   int *exact)
{
    if (!db)
        return 0;
    int ex = 1;
    const tunedb_entry *e = tunedb_find(db, kernel, prec_key(la->prec), cls, shape, &ex);
    if (!e)
        return 0;
    size_t l = pow2 ? e->pow2_local_size : e->local_size;
    size_t g = pow2 ? e->pow2_groups_per_cu : e->groups_per_cu;
    if (!l || !g)
        return 0;
    *ls = l;
    *gpcu = g;
    if (param && e->param)
        *param = e->param;
    if (!ex)
        *exact = 0;
    return 1;
}

/* The configuration for a problem of `rows` rows (BLAS-1, dots, fused CG):
 * the database's entries for its size class overlaid on la->cfg (fields
 * without an entry keep their value). */
static void tuned_vector_config(la_ctx *la, int64_t rows)
{
    if (la->user_cfg)
        return;
    const tunedb *db = tunedb_for_device(&la->ocl->dev);
    la_config *c = &la->cfg;
    int cls = tunedb_size_class(rows), exact = 1, any = 0;
    any |= overlay(la, db, "dot", cls, "", 1, &c->local_size, &c->groups_per_cu, NULL, &exact);
    any |= overlay(la, db, "cgf_update", cls, "", 0, &c->cg_local_size, &c->cg_groups_per_cu,
                   NULL, &exact);
    snprintf(c->source, sizeof c->source, "%s",
             any ? (exact ? "tuned" : "tuned (nearest size)") : "default");
}

/* Clamps a configuration to the device and to each kernel's limits. */
static void clamp_config(la_ctx *la)
{
    const ocl_device *dev = &la->ocl->dev;
    la_config *c = &la->cfg;
    struct {
        cl_kernel k;
        size_t *ls;
        int pow2;
    } ks[] = {
        {la->k_spmv_scalar, &c->spmv_local_size, 1}, {la->k_spmv_vector, &c->spmv_local_size, 1},
        {la->k_dot_partial, &c->local_size, 1},      {la->k_dot2_partial, &c->local_size, 1},
        {la->k_reduce, &c->local_size, 1},           {la->k_axpy, &c->local_size, 1},
        {la->k_xpay, &c->local_size, 1},             {la->k_copy, &c->local_size, 1},
        {la->k_fill, &c->local_size, 1},             {la->k_pointwise, &c->local_size, 1},
        {la->k_cg_update, &c->local_size, 1},        {la->k_pcg_update, &c->local_size, 1},
        {la->k_spmv_adaptive, &c->fmt_local_size, 0}, {la->k_spmv_sell, &c->fmt_local_size, 0},
        {la->k_spmv_bcsr, &c->fmt_local_size, 0},    {la->k_residual, &c->local_size, 1},
    };
    c->local_size = min_sz(c->local_size, pow2_floor(dev->max_work_group));
    c->spmv_local_size = min_sz(c->spmv_local_size, pow2_floor(dev->max_work_group));
    c->fmt_local_size = min_sz(c->fmt_local_size, dev->max_work_group);
    c->cg_local_size = min_sz(c->cg_local_size, dev->max_work_group);
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        size_t kmax = 0;
        if (ks[i].k &&
            clGetKernelWorkGroupInfo(ks[i].k, dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax,
                                     &kmax, NULL) == CL_SUCCESS &&
            kmax > 0)
            *ks[i].ls = min_sz(*ks[i].ls, ks[i].pow2 ? pow2_floor(kmax) : kmax);
    }
    /* scratch for two-sum reductions: 2 accumulators per work-item */
    while (c->local_size > 1 && 2 * c->local_size * acc_size(la) > dev->local_mem / 2)
        c->local_size /= 2;
    while (c->spmv_local_size > 1 &&
           c->spmv_local_size * (la->elem + 2 * acc_size(la)) > dev->local_mem / 2)
        c->spmv_local_size /= 2;
    while (c->cg_local_size > 1 && 2 * c->cg_local_size * acc_size(la) > dev->local_mem / 2)
        c->cg_local_size /= 2;
    while (c->fmt_local_size > 1 && 2 * c->fmt_local_size * acc_size(la) > dev->local_mem / 4)
        c->fmt_local_size /= 2;
    if (c->groups_per_cu == 0)
        c->groups_per_cu = 1;
    la->ngroups = (size_t)dev->compute_units * c->groups_per_cu;
    if (la->ngroups == 0)
        la->ngroups = 1;
}

int la_init(la_ctx *la, ocl_ctx *ocl, la_precision prec, const la_config *cfg, cls_error *err)
{
    return la_init_flags(la, ocl, prec, cfg, 0, err);
}

int la_init_flags(la_ctx *la, ocl_ctx *ocl, la_precision prec, const la_config *cfg, int flags,
                  cls_error *err)
{
    memset(la, 0, sizeof *la);
    la->ocl = ocl;
    la->prec = prec;
    la->elem = prec == LA_FLOAT ? sizeof(float) : sizeof(double);
    la->melem = prec == LA_DOUBLE ? sizeof(double) : sizeof(float);
    const ocl_device *dev = &ocl->dev;
    if (prec != LA_FLOAT && !dev->fp64)
        return cls_fail(err, CLS_EOTHER,
                        "device %s has no double precision (fp64); use --precision float",
                        dev->name);
    if (cfg) {
        la->cfg = *cfg;
        la->user_cfg = 1;
        config_complete(dev, &la->cfg);
        snprintf(la->cfg.source, sizeof la->cfg.source, "user");
    } else {
        la_config_default(dev, &la->cfg);
    }
    la_config *c = &la->cfg;
    if (!is_pow2(c->local_size) || !is_pow2(c->spmv_local_size) || c->groups_per_cu == 0 ||
        (c->vector_width && (!is_pow2(c->vector_width) || c->vector_width < 2 ||
                             c->vector_width > 64)) ||
        c->cg_local_size == 0 || c->fmt_local_size == 0 || !is_pow2(c->sell_c) ||
        c->sell_c > 1024)
        return cls_fail(err, CLS_EUSAGE,
                        "bad work-group configuration: local %zu, spmv local %zu, groups/CU "
                        "%zu, vector width %zu, SELL chunk %zu (local and SpMV sizes must be "
                        "powers of two, width 2..64, chunk a power of two)",
                        c->local_size, c->spmv_local_size, c->groups_per_cu,
                        c->vector_width, c->sell_c);

    const char *popts = prec == LA_DOUBLE  ? "-DCLS_REAL_DOUBLE"
                        : prec == LA_MIXED ? "-DCLS_REAL_DOUBLE -DCLS_MAT_FLOAT"
                        : dev->fp64        ? "-DCLS_ACC_DOUBLE"
                                           : "";
    la->serial_group_sum = (dev->type & CL_DEVICE_TYPE_CPU) != 0;
    /* compensated sums cost a GPU nothing (memory-bound) and a CPU device
     * about 30% of a fused CG iteration; on one CPU part they buy nothing */
    la->plain_sums = (flags & LA_FLAG_ONE_PART) && (dev->type & CL_DEVICE_TYPE_CPU);
    char opts[128];
    snprintf(opts, sizeof opts, "%s%s%s", popts,
             la->serial_group_sum ? " -DCLS_SERIAL_GROUP_SUM" : "",
             la->plain_sums ? " -DCLS_PLAIN_SUMS" : "");
    int rc = ocl_build_program(ocl, la_sources, (int)(sizeof la_sources / sizeof *la_sources),
                               opts, &la->prog, err);
    if (rc)
        return rc;

    struct {
        cl_kernel *k;
        const char *name;
    } ks[] = {
        {&la->k_spmv_scalar, "spmv_csr_scalar"}, {&la->k_spmv_vector, "spmv_csr_vector"},
        {&la->k_dot_partial, "dot_partial"},     {&la->k_dot2_partial, "dot2_partial"},
        {&la->k_reduce, "reduce_partials"},      {&la->k_axpy, "axpy"},
        {&la->k_xpay, "xpay"},                   {&la->k_copy, "copy"},
        {&la->k_fill, "fill"},                   {&la->k_pointwise, "pointwise"},
        {&la->k_cg_update, "cg_update"},         {&la->k_pcg_update, "pcg_update"},
        {&la->k_spmv_adaptive, "spmv_adaptive"}, {&la->k_spmv_sell, "spmv_sell"},
        {&la->k_spmv_bcsr, "spmv_bcsr"},         {&la->k_spmv_hi, "spmv_csr_hi"},
        {&la->k_residual, "residual"},
    };
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        if ((rc = ocl_create_kernel(la->prog, ks[i].name, ks[i].k, err))) {
            la_release(la);
            return rc;
        }
    }
    clamp_config(la);

    cl_int st;
    if ((rc = ensure_partial(la, la->ngroups, err))) {
        la_release(la);
        return rc;
    }
    la->result = clCreateBuffer(ocl->context, CL_MEM_READ_WRITE, 2 * sizeof(double), NULL, &st);
    if (st != CL_SUCCESS) {
        la_release(la);
        OCL_CHECK(err, st, "clCreateBuffer(reduction buffers)");
    }
    /* the fused CG's read-back queue, made here so that no solve pays for it */
    la->rq = clCreateCommandQueue(ocl->context, ocl->dev.id, 0, &st);
    if (st != CL_SUCCESS) {
        la->rq = NULL;
        la_release(la);
        OCL_CHECK(err, st, "clCreateCommandQueue(read-back queue)");
    }
    return CLS_OK;
}

void la_release(la_ctx *la)
{
    if (!la)
        return;
    cl_kernel *ks[] = {&la->k_spmv_scalar,  &la->k_spmv_vector, &la->k_dot_partial,
                       &la->k_dot2_partial, &la->k_reduce,      &la->k_axpy,
                       &la->k_xpay,         &la->k_copy,        &la->k_fill,
                       &la->k_pointwise,    &la->k_cg_update,   &la->k_pcg_update,
                       &la->k_spmv_adaptive, &la->k_spmv_sell,  &la->k_spmv_bcsr,
                       &la->k_spmv_hi,      &la->k_residual};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++)
        if (*ks[i]) {
            clReleaseKernel(*ks[i]);
            *ks[i] = NULL;
        }
    for (int i = 0; i < la->nev; i++)
        clReleaseEvent(la->ev[i]);
    la->nev = 0;
    for (int i = 0; i < la->npool; i++)
        clReleaseMemObject(la->pool[i].buf);
    la->npool = 0;
    if (la->ocl)
        stage_release(la);
    if (la->rq)
        clReleaseCommandQueue(la->rq);
    la->rq = NULL;
    if (la->partial)
        clReleaseMemObject(la->partial);
    if (la->result)
        clReleaseMemObject(la->result);
    if (la->prog)
        clReleaseProgram(la->prog);
    la->partial = la->result = NULL;
    la->partial_cap = 0;
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
    v->pool = NULL;
    if (n < 0 || n > INT_MAX)
        return cls_fail(err, CLS_EOTHER,
                        "vector of %lld entries exceeds the 32-bit indices of the kernels",
                        (long long)n);
    const size_t bytes = (size_t)(n ? n : 1) * la->elem;
    for (int i = 0; i < la->npool; i++)
        if (la->pool[i].bytes == bytes) { /* a reserved buffer: already there */
            v->buf = la->pool[i].buf;
            la->pool[i] = la->pool[--la->npool];
            v->n = n;
            v->pool = la;
            return CLS_OK;
        }
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
        la_ctx *la = v->pool;
        if (la && la->npool < LA_POOL_MAX) {
            la->pool[la->npool].buf = v->buf;
            la->pool[la->npool].bytes = (size_t)(v->n ? v->n : 1) * la->elem;
            la->npool++;
        } else {
            clReleaseMemObject(v->buf);
        }
        v->buf = NULL;
        v->pool = NULL;
    }
}

int la_pool_reserve(la_ctx *la, int64_t n, int count, cls_error *err)
{
    for (int c = 0; c < count; c++) {
        if (la->npool >= LA_POOL_MAX)
            return cls_fail(err, CLS_EOTHER, "la_pool_reserve: more than %d buffers",
                            LA_POOL_MAX);
        la_vec v;
        int rc = la_vec_create(la, n, &v, err);
        if (!rc)
            rc = la_fill(la, 0.0, &v, err); /* the first touch happens here */
        if (rc) {
            la_vec_release(&v);
            return rc;
        }
        v.pool = la;
        la_vec_release(&v); /* into the pool */
    }
    return la_finish(la, err);
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
    int rc = write_device(la, v->buf, 0, n * la->elem, src, err);
    free(tmp);
    return rc;
}

int la_vec_download(la_ctx *la, const la_vec *v, double *host, cls_error *err)
{
    if (v->n == 0)
        return CLS_OK;
    size_t n = (size_t)v->n;
    if (la->prec != LA_FLOAT) {
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

/* ------------------------------------------------------------------ formats */

static const char *const variant_names[LA_SPMV_COUNT] = {"auto",     "scalar", "vector",
                                                         "adaptive", "sell",   "bcsr"};

const char *la_spmv_variant_name(la_spmv_variant v)
{
    return (unsigned)v < LA_SPMV_COUNT ? variant_names[v] : "auto";
}

int la_spmv_variant_parse(const char *name, la_spmv_variant *v)
{
    for (int i = 0; i < LA_SPMV_COUNT; i++)
        if (!strcmp(name, variant_names[i])) {
            *v = (la_spmv_variant)i;
            return 0;
        }
    if (!strcmp(name, "csr") || !strcmp(name, "csr-scalar")) {
        *v = LA_SPMV_SCALAR;
        return 0;
    }
    if (!strcmp(name, "csr-vector")) {
        *v = LA_SPMV_VECTOR;
        return 0;
    }
    if (!strcmp(name, "csr-adaptive") || !strcmp(name, "sell-c-sigma")) {
        *v = !strcmp(name, "csr-adaptive") ? LA_SPMV_ADAPTIVE : LA_SPMV_SELL;
        return 0;
    }
    return -1;
}

static const char *kernel_of(la_spmv_variant v)
{
    switch (v) {
    case LA_SPMV_VECTOR: return "spmv_csr_vector";
    case LA_SPMV_ADAPTIVE: return "spmv_adaptive";
    case LA_SPMV_SELL: return "spmv_sell";
    case LA_SPMV_BCSR: return "spmv_bcsr";
    default: return "spmv_csr_scalar";
    }
}

/* database key of a format's SpMV kernel: "spmv_" + its name */
static void spmv_key(la_spmv_variant v, char *buf, size_t cap)
{
    snprintf(buf, cap, "spmv_%s", la_spmv_variant_name(v));
}

/*
 * Natural k x k blocks: for k = 8..2 dividing both dimensions, the number of
 * distinct (block row, block column) pairs times k^2 over nnz is the fill.
 * A k qualifies when its fill is <= 1.25 and its bytes (values, one column
 * per block, block row pointers) are under 0.9x CSR's; the k with the
 * fewest bytes wins. A sample of the first 2048 block rows rules out most k
 * before the full count.
 */
#define BCSR_MAX_K 8

static int64_t bcsr_count_blocks(const csr_matrix *A, int64_t k, int64_t nbr, int32_t *mark)
{
    int64_t nb = 0;
    for (int64_t br = 0; br < nbr; br++)
        for (int64_t i = br * k; i < (br + 1) * k; i++)
            for (int64_t j = A->rowptr[i]; j < A->rowptr[i + 1]; j++) {
                int32_t bc = (int32_t)(A->col[j] / k);
                if (mark[bc] != (int32_t)br) {
                    mark[bc] = (int32_t)br;
                    nb++;
                }
            }
    return nb;
}

static void bcsr_detect(const csr_matrix *A, size_t melem, size_t *kout, double *fill_out)
{
    *kout = 0;
    *fill_out = 0;
    if (A->nnz == 0 || A->nrows < 2)
        return;
    double csr_bytes = (double)A->nnz * (double)(melem + 4) + 4.0 * (double)(A->nrows + 1);
    double best = 0.9 * csr_bytes;
    int32_t *mark = malloc((size_t)(A->ncols / 2 + 1) * sizeof *mark);
    if (!mark)
        return;
    for (int64_t k = BCSR_MAX_K; k >= 2; k--) {
        if (A->nrows % k || A->ncols % k)
            continue;
        int64_t nbr = A->nrows / k, nbc = A->ncols / k;
        for (int64_t i = 0; i < nbc; i++)
            mark[i] = -1;
        int64_t sbr = nbr < 2048 ? nbr : 2048;
        int64_t snnz = A->rowptr[sbr * k];
        int64_t sb = bcsr_count_blocks(A, k, sbr, mark);
        if (snnz > 0 && (double)(sb * k * k) > 1.5 * (double)snnz)
            continue;
        for (int64_t i = 0; i < nbc; i++)
            mark[i] = -1;
        int64_t nb = bcsr_count_blocks(A, k, nbr, mark);
        double fill = (double)(nb * k * k) / (double)A->nnz;
        double bytes = (double)nb * (double)(k * k) * (double)melem + 4.0 * (double)nb +
                       4.0 * (double)(nbr + 1);
        if (fill <= 1.25 && bytes < best && nb * k * k < INT32_MAX) {
            best = bytes;
            *kout = (size_t)k;
            *fill_out = fill;
        }
    }
    free(mark);
}

static double sell_fill_of(const csr_matrix *A, size_t C)
{
    if (A->nnz == 0)
        return 1.0;
    double stored = 0;
    for (int64_t c0 = 0; c0 < A->nrows; c0 += (int64_t)C) {
        int64_t w = 0;
        for (int64_t r = c0; r < c0 + (int64_t)C && r < A->nrows; r++) {
            int64_t len = A->rowptr[r + 1] - A->rowptr[r];
            if (len > w)
                w = len;
        }
        stored += (double)w * (double)C;
    }
    return stored / (double)A->nnz;
}

void la_classify(const la_ctx *la, const csr_matrix *A, la_matrix_class *mc)
{
    memset(mc, 0, sizeof *mc);
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < A->nrows; i++) {
        int64_t len = A->rowptr[i + 1] - A->rowptr[i];
        sum += (double)len;
        sq += (double)len * (double)len;
        if (len > mc->max_row)
            mc->max_row = len;
        if (len == 0)
            mc->empty_rows++;
    }
    double n = A->nrows > 0 ? (double)A->nrows : 1.0;
    mc->mean_row = sum / n;
    double var = sq / n - mc->mean_row * mc->mean_row;
    mc->cv_row = mc->mean_row > 0 ? sqrt(var > 0 ? var : 0) / mc->mean_row : 0;
    bcsr_detect(A, la->melem, &mc->block_k, &mc->block_fill);
    mc->sell_fill = sell_fill_of(A, la->cfg.sell_c ? la->cfg.sell_c : 32);
    mc->size_class = tunedb_size_class(A->nrows);
    if (mc->block_k)
        mc->shape = "blocked";
    else if (mc->cv_row > 0.5 || (double)mc->max_row > 4.0 * mc->mean_row + 32.0)
        mc->shape = "irregular";
    else if (mc->mean_row < 12.0)
        mc->shape = "short";
    else
        mc->shape = "long";
}

/*
 * AUTO. A measured winner in the tuning database for this shape and size
 * class decides. Otherwise:
 *   blocked rows                  -> BCSR (fewer index bytes, x in runs of k)
 *   GPU, SELL padding <= 20%      -> SELL-C-sigma (coalesced, no row pointers)
 *   GPU, irregular                -> CSR-Adaptive
 *   GPU, mean row >= 12           -> CSR vector
 *   otherwise                     -> CSR scalar
 * On a CPU device: BCSR when blocked, else scalar CSR. PoCL runs a
 * work-group as a loop over its work-items and turns every barrier into a
 * fission of that loop, so the vector and adaptive kernels never pay there
 * (measured on PoCL 2-core AVX-512, double, banded matrices of 4 M entries,
 * L per row, ms per SpMV scalar vs best vector width: L = 4: 5.8 vs 21,
 * L = 12: 2.8 vs 6.8, L = 32: 2.3 vs 3.5, L = 256: 9.4 vs 21; Poisson 64^3
 * scalar 1.0 ms, vector 2.7 ms at width 2 and 18 ms at 16).
 */
#define LA_VECTOR_MIN_ROW 12.0

static la_spmv_variant choose_format(const la_ctx *la, const la_matrix_class *mc)
{
    const tunedb *db = la->user_cfg ? NULL : tunedb_for_device(&la->ocl->dev);
    if (db) {
        int exact = 1;
        const tunedb_entry *e = tunedb_find(db, "format", prec_key(la->prec), mc->size_class,
                                            mc->shape, &exact);
        la_spmv_variant v;
        if (e && la_spmv_variant_parse(e->format, &v) == 0 && v != LA_SPMV_AUTO &&
            (v != LA_SPMV_BCSR || mc->block_k))
            return v;
    }
    if (mc->block_k)
        return LA_SPMV_BCSR;
    if (la->ocl->dev.type & CL_DEVICE_TYPE_CPU)
        return LA_SPMV_SCALAR;
    if (mc->sell_fill <= 1.2)
        return LA_SPMV_SELL;
    if (!strcmp(mc->shape, "irregular"))
        return LA_SPMV_ADAPTIVE;
    if (mc->mean_row >= LA_VECTOR_MIN_ROW)
        return LA_SPMV_VECTOR;
    return LA_SPMV_SCALAR;
}

static size_t auto_width(double mean_row)
{
    size_t w = 2;
    while ((double)w < mean_row && w < 32)
        w *= 2;
    return w;
}

/* CSR-Adaptive row blocks: consecutive rows with at most `budget` entries
 * and at most `budget` rows together, or one longer row alone. */
static int adaptive_blocks(const csr_matrix *A, int64_t budget, int32_t **out, int64_t *nb,
                           cls_error *err)
{
    int64_t cap = 1024, n = 0;
    int32_t *b = malloc((size_t)cap * sizeof *b);
    if (!b)
        return cls_fail(err, CLS_EOTHER, "out of memory for CSR-Adaptive row blocks");
    b[n++] = 0;
    int64_t r = 0;
    while (r < A->nrows) {
        int64_t start = r, sum = 0;
        if (A->rowptr[r + 1] - A->rowptr[r] > budget)
            r++;
        else
            while (r < A->nrows && r - start < budget &&
                   sum + (A->rowptr[r + 1] - A->rowptr[r]) <= budget) {
                sum += A->rowptr[r + 1] - A->rowptr[r];
                r++;
            }
        if (n == cap) {
            int32_t *nbuf = realloc(b, (size_t)(cap *= 2) * sizeof *b);
            if (!nbuf) {
                free(b);
                return cls_fail(err, CLS_EOTHER, "out of memory for CSR-Adaptive row blocks");
            }
            b = nbuf;
        }
        b[n++] = (int32_t)r;
    }
    *out = b;
    *nb = n - 1;
    return CLS_OK;
}

typedef struct {
    int64_t len, row;
} sell_key;
static int sell_key_cmp(const void *a, const void *b)
{
    const sell_key *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1; /* longest first */
    return (x->row > y->row) - (x->row < y->row);
}

/* SELL-C-sigma arrays: chunk starts cs (nchunks + 1), perm (NULL when
 * sigma == 1), columns and values (mat_t, melem bytes each). */
typedef struct {
    int32_t *cs, *perm, *col;
    void *val;
    int64_t nchunks, stored;
} sell_host;

static void sell_free(sell_host *s)
{
    free(s->cs);
    free(s->perm);
    free(s->col);
    free(s->val);
    memset(s, 0, sizeof *s);
}

static void put_val(void *val, size_t melem, int64_t k, double v)
{
    if (melem == sizeof(double))
        ((double *)val)[k] = v;
    else
        ((float *)val)[k] = (float)v;
}

typedef struct sell_fill_ctx {
    const csr_matrix *A;
    sell_host *s;
    const int32_t *perm;
    int64_t C;
    size_t melem;
} sell_fill_ctx;

/* chunks [c0, c1) of the SELL arrays, column-major, padded */
static void sell_fill_chunks(void *arg, int range, int64_t c0, int64_t c1)
{
    (void)range;
    const sell_fill_ctx *f = arg;
    const csr_matrix *A = f->A;
    sell_host *s = f->s;
    const int64_t C = f->C, n = A->nrows;
    for (int64_t c = c0; c < c1; c++) {
        int64_t w = (s->cs[c + 1] - s->cs[c]) / C;
        for (int64_t i = 0; i < C; i++) {
            int64_t r = c * C + i, len = 0, j0 = 0;
            int32_t padcol = 0;
            if (r < n) {
                j0 = A->rowptr[f->perm[r]];
                len = A->rowptr[f->perm[r] + 1] - j0;
                if (len)
                    padcol = A->col[j0 + len - 1];
            }
            for (int64_t j = 0; j < w; j++) {
                int64_t k = s->cs[c] + j * C + i;
                if (j < len) {
                    s->col[k] = A->col[j0 + j];
                    put_val(s->val, f->melem, k, A->val[j0 + j]);
                } else {
                    s->col[k] = padcol;
                    put_val(s->val, f->melem, k, 0.0);
                }
            }
        }
    }
}

static int sell_build(const csr_matrix *A, size_t C, size_t sigma, size_t melem, sell_host *s,
                      cls_error *err)
{
    memset(s, 0, sizeof *s);
    int64_t n = A->nrows;
    s->nchunks = (n + (int64_t)C - 1) / (int64_t)C;
    s->cs = malloc((size_t)(s->nchunks + 1) * sizeof *s->cs);
    int32_t *perm = malloc((size_t)(n ? n : 1) * sizeof *perm);
    if (!s->cs || !perm) {
        free(perm);
        sell_free(s);
        return cls_fail(err, CLS_EOTHER, "out of memory building SELL-C-sigma");
    }
    for (int64_t i = 0; i < n; i++)
        perm[i] = (int32_t)i;
    if (sigma > 1) {
        sell_key *keys = malloc((size_t)(sigma) * sizeof *keys);
        if (!keys) {
            free(perm);
            sell_free(s);
            return cls_fail(err, CLS_EOTHER, "out of memory building SELL-C-sigma");
        }
        for (int64_t w0 = 0; w0 < n; w0 += (int64_t)sigma) {
            int64_t m = n - w0 < (int64_t)sigma ? n - w0 : (int64_t)sigma;
            for (int64_t i = 0; i < m; i++) {
                keys[i].row = w0 + i;
                keys[i].len = A->rowptr[w0 + i + 1] - A->rowptr[w0 + i];
            }
            qsort(keys, (size_t)m, sizeof *keys, sell_key_cmp);
            for (int64_t i = 0; i < m; i++)
                perm[w0 + i] = (int32_t)keys[i].row;
        }
        free(keys);
    }
    int64_t pos = 0;
    for (int64_t c = 0; c < s->nchunks; c++) {
        int64_t w = 0;
        for (int64_t i = 0; i < (int64_t)C; i++) {
            int64_t r = c * (int64_t)C + i;
            if (r < n) {
                int64_t len = A->rowptr[perm[r] + 1] - A->rowptr[perm[r]];
                if (len > w)
                    w = len;
            }
        }
        s->cs[c] = (int32_t)pos;
        pos += w * (int64_t)C;
        if (pos > INT32_MAX) {
            free(perm);
            sell_free(s);
            return cls_fail(err, CLS_EOTHER,
                            "SELL-C-sigma of this matrix stores more than 2^31 entries; use "
                            "another format or partition it");
        }
    }
    s->cs[s->nchunks] = (int32_t)pos;
    s->stored = pos;
    s->col = malloc((size_t)(pos ? pos : 1) * sizeof *s->col);
    s->val = malloc((size_t)(pos ? pos : 1) * melem);
    if (!s->col || !s->val) {
        free(perm);
        sell_free(s);
        return cls_fail(err, CLS_EOTHER, "out of memory building SELL-C-sigma");
    }
    sell_fill_ctx fc = {A, s, perm, (int64_t)C, melem};
    cls_parallel_for(s->nchunks, 1024, sell_fill_chunks, &fc); /* chunks are independent */
    if (sigma > 1)
        s->perm = perm;
    else
        free(perm);
    return CLS_OK;
}

/* BCSR arrays for block size k (bcsr_detect chose it). */
typedef struct {
    int32_t *browptr, *bcol;
    void *val;
    int64_t nbr, nblocks;
} bcsr_host;

static void bcsr_free(bcsr_host *b)
{
    free(b->browptr);
    free(b->bcol);
    free(b->val);
    memset(b, 0, sizeof *b);
}

static int bcsr_build(const csr_matrix *A, int64_t k, size_t melem, bcsr_host *b,
                      cls_error *err)
{
    memset(b, 0, sizeof *b);
    b->nbr = A->nrows / k;
    int64_t nbc = A->ncols / k;
    int32_t *mark = malloc((size_t)(nbc ? nbc : 1) * sizeof *mark);
    b->browptr = malloc((size_t)(b->nbr + 1) * sizeof *b->browptr);
    if (!mark || !b->browptr) {
        free(mark);
        bcsr_free(b);
        return cls_fail(err, CLS_EOTHER, "out of memory building BCSR");
    }
    for (int64_t i = 0; i < nbc; i++)
        mark[i] = -1;
    b->nblocks = bcsr_count_blocks(A, k, b->nbr, mark);
    b->bcol = malloc((size_t)(b->nblocks ? b->nblocks : 1) * sizeof *b->bcol);
    b->val = calloc((size_t)(b->nblocks ? b->nblocks : 1) * (size_t)(k * k), melem);
    if (!b->bcol || !b->val) {
        free(mark);
        bcsr_free(b);
        return cls_fail(err, CLS_EOTHER, "out of memory building BCSR");
    }
    for (int64_t i = 0; i < nbc; i++)
        mark[i] = -1; /* now: slot of block column in the current block row */
    int64_t pos = 0;
    for (int64_t br = 0; br < b->nbr; br++) {
        b->browptr[br] = (int32_t)pos;
        int64_t first = pos;
        /* distinct block columns of this block row, sorted */
        for (int64_t i = br * k; i < (br + 1) * k; i++)
            for (int64_t j = A->rowptr[i]; j < A->rowptr[i + 1]; j++) {
                int32_t bc = (int32_t)(A->col[j] / k);
                if (mark[bc] < first) {
                    mark[bc] = (int32_t)pos;
                    b->bcol[pos++] = bc;
                }
            }
        /* insertion sort: a block row holds few blocks */
        for (int64_t s = first + 1; s < pos; s++) {
            int32_t v = b->bcol[s];
            int64_t t = s - 1;
            while (t >= first && b->bcol[t] > v) {
                b->bcol[t + 1] = b->bcol[t];
                t--;
            }
            b->bcol[t + 1] = v;
        }
        for (int64_t s = first; s < pos; s++)
            mark[b->bcol[s]] = (int32_t)s;
        for (int64_t i = br * k; i < (br + 1) * k; i++)
            for (int64_t j = A->rowptr[i]; j < A->rowptr[i + 1]; j++) {
                int64_t slot = mark[A->col[j] / k];
                put_val(b->val, melem, slot * k * k + (i - br * k) * k + A->col[j] % k,
                        A->val[j]);
            }
    }
    b->browptr[b->nbr] = (int32_t)pos;
    free(mark);
    return CLS_OK;
}
/* --------------------------------------------------------------------- upload */

/*
 * Host -> device copies. A GPU copies from page-locked memory at bus speed
 * and from ordinary (pageable) memory at a fraction of it; and a buffer
 * made with CL_MEM_COPY_HOST_PTR was, on NVIDIA's OpenCL, a host-side copy
 * that moved to the device only at its first kernel (1.3 s to make and
 * 0.26 s on first use for the 1.4 GB of poisson3d 256 on an H100). So large
 * copies to a GPU go through two page-locked staging buffers of
 * LA_STAGE_BYTES, alternately filled by the host and drained by the device.
 */
#define LA_STAGE_BYTES ((size_t)32 << 20)

static void stage_release(la_ctx *la)
{
    for (int k = 0; k < 2; k++) {
        if (la->stage_ev[k]) {
            clWaitForEvents(1, &la->stage_ev[k]);
            clReleaseEvent(la->stage_ev[k]);
            la->stage_ev[k] = NULL;
        }
        if (la->stage[k]) {
            if (la->stage_ptr[k])
                clEnqueueUnmapMemObject(la->ocl->queue, la->stage[k], la->stage_ptr[k], 0, NULL,
                                        NULL);
            clFinish(la->ocl->queue);
            clReleaseMemObject(la->stage[k]);
        }
        la->stage[k] = NULL;
        la->stage_ptr[k] = NULL;
    }
}

static int stage_ensure(la_ctx *la, cls_error *err)
{
    for (int k = 0; k < 2; k++) {
        if (la->stage[k])
            continue;
        cl_int st;
        la->stage[k] = clCreateBuffer(la->ocl->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                                      LA_STAGE_BYTES, NULL, &st);
        if (st != CL_SUCCESS) {
            la->stage[k] = NULL;
            OCL_CHECK(err, st, "clCreateBuffer(staging)");
        }
        la->stage_ptr[k] = clEnqueueMapBuffer(la->ocl->queue, la->stage[k], CL_TRUE,
                                              CL_MAP_READ | CL_MAP_WRITE, 0, LA_STAGE_BYTES, 0,
                                              NULL, NULL, &st);
        if (st != CL_SUCCESS) {
            la->stage_ptr[k] = NULL;
            OCL_CHECK(err, st, "clEnqueueMapBuffer(staging)");
        }
    }
    return CLS_OK;
}

/* dst[off, off + bytes) = src, blocking: staged on a GPU, direct otherwise */
static int write_device(la_ctx *la, cl_mem dst, size_t off, size_t bytes, const void *src,
                        cls_error *err)
{
    cl_int st;
    if (!(la->ocl->dev.type & CL_DEVICE_TYPE_GPU) || bytes <= LA_STAGE_BYTES / 4) {
        st = clEnqueueWriteBuffer(la->ocl->queue, dst, CL_TRUE, off, bytes, src, 0, NULL, NULL);
        OCL_CHECK(err, st, "clEnqueueWriteBuffer");
        return CLS_OK;
    }
    int rc = stage_ensure(la, err);
    if (rc)
        return rc;
    size_t done = 0;
    for (int k = 0; done < bytes; k ^= 1) {
        size_t len = bytes - done < LA_STAGE_BYTES ? bytes - done : LA_STAGE_BYTES;
        if (la->stage_ev[k]) { /* the device has drained this buffer's last chunk */
            st = clWaitForEvents(1, &la->stage_ev[k]);
            clReleaseEvent(la->stage_ev[k]);
            la->stage_ev[k] = NULL;
            OCL_CHECK(err, st, "clWaitForEvents(staging)");
        }
        memcpy(la->stage_ptr[k], (const unsigned char *)src + done, len);
        st = clEnqueueWriteBuffer(la->ocl->queue, dst, CL_FALSE, off + done, len,
                                  la->stage_ptr[k], 0, NULL, &la->stage_ev[k]);
        if (st != CL_SUCCESS)
            la->stage_ev[k] = NULL;
        OCL_CHECK(err, st, "clEnqueueWriteBuffer(staged)");
        clFlush(la->ocl->queue);
        done += len;
    }
    for (int k = 0; k < 2; k++)
        if (la->stage_ev[k]) {
            st = clWaitForEvents(1, &la->stage_ev[k]);
            clReleaseEvent(la->stage_ev[k]);
            la->stage_ev[k] = NULL;
            OCL_CHECK(err, st, "clWaitForEvents(staging)");
        }
    return CLS_OK;
}

static int upload_buf(la_ctx *la, const char *what, size_t bytes, const void *host, cl_mem *out,
                      cls_error *err)
{
    int rc = alloc_buffer(la, what, bytes ? bytes : 1, CL_MEM_READ_ONLY, NULL, out, err);
    if (rc || !bytes)
        return rc;
    rc = write_device(la, *out, 0, bytes, host, err);
    if (rc) {
        clReleaseMemObject(*out);
        *out = NULL;
    }
    return rc;
}

/* values converted to melem bytes (NULL + no copy needed when double) */
static void *convert_vals(const double *v, int64_t n, size_t melem)
{
    if (melem == sizeof(double))
        return NULL;
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    if (f)
        for (int64_t j = 0; j < n; j++)
            f[j] = (float)v[j];
    return f;
}

static int upload_csr_arrays(la_ctx *la, const csr_matrix *A, la_csr *dA, int want_lo,
                             cls_error *err)
{
    size_t nr = (size_t)A->nrows, nnz = (size_t)A->nnz;
    cl_int *rp = malloc((nr + 1) * sizeof *rp);
    if (!rp)
        return cls_fail(err, CLS_EOTHER, "out of memory converting row pointers");
    for (size_t i = 0; i <= nr; i++)
        rp[i] = (cl_int)A->rowptr[i];
    int rc = upload_buf(la, "row pointers", (nr + 1) * sizeof(cl_int), rp, &dA->rowptr, err);
    free(rp);
    if (!rc)
        rc = upload_buf(la, "column indices", nnz * sizeof(cl_int), A->col, &dA->col, err);
    if (!rc && want_lo) {
        void *f = convert_vals(A->val, A->nnz, la->melem);
        if (!f && la->melem != sizeof(double))
            return cls_fail(err, CLS_EOTHER, "out of memory converting values to float");
        rc = upload_buf(la, "values", nnz * la->melem, f ? f : (void *)A->val, &dA->val, err);
        free(f);
    }
    if (!rc && la->prec == LA_MIXED)
        rc = upload_buf(la, "values (double)", nnz * sizeof(double), A->val, &dA->val_hi, err);
    return rc;
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
    size_t biggest = max_sz((nr + 1) * sizeof(cl_int), nnz * sizeof(cl_int));
    biggest = max_sz(biggest, nnz * (la->prec == LA_MIXED ? sizeof(double) : la->melem));
    if (biggest > la->ocl->dev.max_alloc)
        return cls_fail(err, CLS_EOTHER,
                        "matrix needs %.0f MB per buffer but device %s allows %.0f MB; "
                        "partition it across more devices",
                        (double)biggest / 1048576.0, la->ocl->dev.name,
                        (double)la->ocl->dev.max_alloc / 1048576.0);
    if ((unsigned)variant >= LA_SPMV_COUNT)
        return cls_fail(err, CLS_EUSAGE, "unknown SpMV format %d", (int)variant);

    la_matrix_class mc;
    cls_trace("la_csr_upload: begin");
    la_classify(la, A, &mc);
    cls_trace("la_csr_upload: classified");
    tuned_vector_config(la, A->nrows);
    la_spmv_variant fmt = variant == LA_SPMV_AUTO ? choose_format(la, &mc) : variant;
    if (fmt == LA_SPMV_BCSR && !mc.block_k) {
        la_matrix_class m2 = mc;
        m2.block_k = 0;
        m2.shape = !strcmp(mc.shape, "blocked") ? "short" : mc.shape;
        fmt = choose_format(la, &m2);
        if (fmt == LA_SPMV_BCSR)
            fmt = LA_SPMV_SCALAR;
    }
    /* the format's own tuned launch configuration */
    la_config *c = &la->cfg;
    if (!la->user_cfg) {
        const tunedb *db = tunedb_for_device(&la->ocl->dev);
        char key[32];
        spmv_key(fmt, key, sizeof key);
        int exact = 1, csrf = fmt == LA_SPMV_SCALAR || fmt == LA_SPMV_VECTOR;
        size_t param = 0;
        if (overlay(la, db, key, mc.size_class, mc.shape, csrf,
                    csrf ? &c->spmv_local_size : &c->fmt_local_size, &c->spmv_groups_per_cu,
                    &param, &exact)) {
            if (fmt == LA_SPMV_VECTOR && param)
                c->vector_width = param;
            if (fmt == LA_SPMV_SELL && param)
                c->sell_c = param;
            if (!strcmp(c->source, "default"))
                snprintf(c->source, sizeof c->source, "%s",
                         exact ? "tuned" : "tuned (nearest size)");
        }
    }
    clamp_config(la);
    int rc = ensure_partial(la, la->ngroups, err);
    if (rc)
        return rc;

    dA->nrows = A->nrows;
    dA->ncols = A->ncols;
    dA->nnz = A->nnz;
    dA->variant = fmt;
    dA->stored = A->nnz;
    int csr_family = fmt == LA_SPMV_SCALAR || fmt == LA_SPMV_VECTOR || fmt == LA_SPMV_ADAPTIVE;
    if (csr_family || la->prec == LA_MIXED) {
        rc = upload_csr_arrays(la, A, dA, csr_family, err);
        cls_trace("la_csr_upload: CSR arrays up");
    }
    if (!rc && fmt == LA_SPMV_ADAPTIVE) {
        int32_t *blocks = NULL;
        int64_t nb = 0;
        dA->lds_size = c->adaptive_nnz;
        rc = adaptive_blocks(A, (int64_t)dA->lds_size, &blocks, &nb, err);
        if (!rc) {
            dA->naux = nb;
            rc = upload_buf(la, "row blocks", (size_t)(nb + 1) * sizeof(int32_t), blocks,
                            &dA->aux, err);
        }
        free(blocks);
    } else if (!rc && fmt == LA_SPMV_SELL) {
        sell_host s;
        size_t C = c->sell_c;
        size_t sigma = c->sell_sigma;
        if (!sigma)
            sigma = sell_fill_of(A, C) <= 1.1 ? 1 : 32 * C;
        rc = sell_build(A, C, sigma, la->melem, &s, err);
        cls_trace("la_csr_upload: SELL built on the host");
        if (!rc) {
            dA->sell_c = C;
            dA->sell_sigma = sigma;
            dA->naux = s.nchunks;
            dA->stored = s.stored;
            rc = upload_buf(la, "SELL chunk starts", (size_t)(s.nchunks + 1) * sizeof(int32_t),
                            s.cs, &dA->aux, err);
            if (!rc && s.perm)
                rc = upload_buf(la, "SELL permutation", nr * sizeof(int32_t), s.perm, &dA->perm,
                                err);
            if (!rc)
                rc = upload_buf(la, "SELL columns", (size_t)s.stored * sizeof(int32_t), s.col,
                                &dA->fcol, err);
            if (!rc)
                rc = upload_buf(la, "SELL values", (size_t)s.stored * la->melem, s.val,
                                &dA->fval, err);
            sell_free(&s);
        }
    } else if (!rc && fmt == LA_SPMV_BCSR) {
        bcsr_host b;
        int64_t k = (int64_t)mc.block_k;
        rc = bcsr_build(A, k, la->melem, &b, err);
        if (!rc) {
            dA->block_k = (size_t)k;
            dA->naux = b.nbr;
            dA->stored = b.nblocks * k * k;
            rc = upload_buf(la, "BCSR block rows", (size_t)(b.nbr + 1) * sizeof(int32_t),
                            b.browptr, &dA->aux, err);
            if (!rc)
                rc = upload_buf(la, "BCSR block columns", (size_t)b.nblocks * sizeof(int32_t),
                                b.bcol, &dA->fcol, err);
            if (!rc)
                rc = upload_buf(la, "BCSR values", (size_t)dA->stored * la->melem, b.val,
                                &dA->fval, err);
            bcsr_free(&b);
        }
    }
    if (rc) {
        la_csr_release(dA);
        return rc;
    }
    double mean = A->nrows ? (double)A->nnz / (double)A->nrows : 0.0;
    dA->vector_width = c->vector_width ? c->vector_width : auto_width(mean);
    if (dA->vector_width > c->spmv_local_size)
        dA->vector_width = c->spmv_local_size;
    dA->local_size = csr_family && fmt != LA_SPMV_ADAPTIVE ? c->spmv_local_size
                                                           : c->fmt_local_size;
    dA->max_groups = (size_t)la->ocl->dev.compute_units * c->spmv_groups_per_cu;
    if (!dA->max_groups)
        dA->max_groups = 1;
    c->format = fmt;
    dA->cfg = *c;
    return CLS_OK;
}

void la_csr_release(la_csr *dA)
{
    if (!dA)
        return;
    cl_mem *ms[] = {&dA->rowptr, &dA->col, &dA->val, &dA->aux,
                    &dA->perm,   &dA->fcol, &dA->fval, &dA->val_hi};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
        if (*ms[i]) {
            clReleaseMemObject(*ms[i]);
            *ms[i] = NULL;
        }
}

/* ------------------------------------------------------------------- SpMV */

/* Sets the arguments of a format kernel k (la's or a private copy) for
 * y = A x with the fused-CG tail (partial, w, ctl may be NULL) and returns
 * the launch geometry. */
static int spmv_setup(la_ctx *la, cl_kernel k, const la_csr *A, cl_mem x, cl_mem y,
                      cl_mem partial, cl_mem w, cl_mem ctl, size_t *groups, size_t *lsz,
                      cls_error *err)
{
    const char *kn = kernel_of(A->variant);
    size_t ls = A->local_size;
    cl_int nrows = (cl_int)A->nrows;
    size_t need = 1, as = acc_size(la);
    const cl_mem *pp = &partial, *pw = &w, *pc = &ctl;
    const cl_int yoff = (cl_int)A->row_offset;
    int rc;
    switch (A->variant) {
    case LA_SPMV_VECTOR: {
        size_t vw = A->vector_width;
        if (!is_pow2(vw) || vw < 2 || vw > 64 || vw > ls || ls % vw)
            return cls_fail(err, CLS_EOTHER,
                            "la_spmv: vector width %zu must be a power of two in 2..64 "
                            "dividing the SpMV work-group size %zu",
                            vw, ls);
        cl_int cvw = (cl_int)vw;
        need = ((size_t)nrows + ls / vw - 1) / (ls / vw);
        rc = set_args(k, kn, err, 13, A_INT(nrows), A_INT(cvw), A_MEM(A->rowptr), A_MEM(A->col),
                      A_MEM(A->val), A_MEM(x), A_MEM(y), A_LOCAL(ls * la->elem),
                      sizeof(cl_mem), (const void *)pp, sizeof(cl_mem), (const void *)pw,
                      sizeof(cl_mem), (const void *)pc, A_LOCAL(4 * ls * as), A_INT(yoff));
        break;
    }
    case LA_SPMV_ADAPTIVE: {
        cl_int nb = (cl_int)A->naux;
        size_t lds = max_sz(A->lds_size, ls);
        cl_int clds = (cl_int)lds;
        need = (size_t)(A->naux ? A->naux : 1);
        rc = set_args(k, kn, err, 14, A_INT(nb), A_MEM(A->aux), A_MEM(A->rowptr), A_MEM(A->col),
                      A_MEM(A->val), A_MEM(x), A_MEM(y), A_LOCAL(lds * la->elem), A_INT(clds),
                      sizeof(cl_mem), (const void *)pp, sizeof(cl_mem), (const void *)pw,
                      sizeof(cl_mem), (const void *)pc, A_LOCAL(4 * ls * as), A_INT(yoff));
        break;
    }
    case LA_SPMV_SELL: {
        cl_int C = (cl_int)A->sell_c;
        need = ((size_t)nrows + ls - 1) / ls;
        rc = set_args(k, kn, err, 13, A_INT(nrows), A_INT(C), A_MEM(A->aux), A_MEM(A->perm),
                      A_MEM(A->fcol), A_MEM(A->fval), A_MEM(x), A_MEM(y), sizeof(cl_mem),
                      (const void *)pp, sizeof(cl_mem), (const void *)pw, sizeof(cl_mem),
                      (const void *)pc, A_LOCAL(4 * ls * as), A_INT(yoff));
        break;
    }
    case LA_SPMV_BCSR: {
        cl_int kk = (cl_int)A->block_k;
        need = ((size_t)nrows + ls - 1) / ls;
        rc = set_args(k, kn, err, 12, A_INT(nrows), A_INT(kk), A_MEM(A->aux), A_MEM(A->fcol),
                      A_MEM(A->fval), A_MEM(x), A_MEM(y), sizeof(cl_mem), (const void *)pp,
                      sizeof(cl_mem), (const void *)pw, sizeof(cl_mem), (const void *)pc,
                      A_LOCAL(4 * ls * as), A_INT(yoff));
        break;
    }
    default:
        need = ((size_t)nrows + ls - 1) / ls;
        rc = set_args(k, kn, err, 11, A_INT(nrows), A_MEM(A->rowptr), A_MEM(A->col),
                      A_MEM(A->val), A_MEM(x), A_MEM(y), sizeof(cl_mem), (const void *)pp,
                      sizeof(cl_mem), (const void *)pw, sizeof(cl_mem), (const void *)pc,
                      A_LOCAL(4 * ls * as), A_INT(yoff));
        break;
    }
    if (rc)
        return rc;
    size_t g = min_sz(need, A->max_groups ? A->max_groups : la->ngroups);
    *groups = g ? g : 1;
    *lsz = ls;
    return CLS_OK;
}

int la_spmv_bind(la_ctx *la, cl_kernel k, const la_csr *A, cl_mem x, cl_mem y, cl_mem partial,
                 cl_mem w, cl_mem ctl, size_t *groups, size_t *lsz, cls_error *err)
{
    return spmv_setup(la, k, A, x, y, partial, w, ctl, groups, lsz, err);
}

int la_spmv_kernel_create(la_ctx *la, const la_csr *A, cl_kernel *k, cls_error *err)
{
    return ocl_create_kernel(la->prog, kernel_of(A->variant), k, err);
}

int la_launch(la_ctx *la, cl_kernel k, const char *kname, size_t groups, size_t ls,
              cls_error *err)
{
    return launch(la, k, kname, groups, ls, err);
}

size_t la_acc_size(const la_ctx *la)
{
    return acc_size(la);
}

static cl_kernel la_kernel_of(la_ctx *la, la_spmv_variant v)
{
    switch (v) {
    case LA_SPMV_VECTOR: return la->k_spmv_vector;
    case LA_SPMV_ADAPTIVE: return la->k_spmv_adaptive;
    case LA_SPMV_SELL: return la->k_spmv_sell;
    case LA_SPMV_BCSR: return la->k_spmv_bcsr;
    default: return la->k_spmv_scalar;
    }
}

int la_spmv(la_ctx *la, const la_csr *A, const la_vec *x, la_vec *y, cls_error *err)
{
    int rc;
    if ((rc = check_len("la_spmv (x vs columns)", x->n, A->ncols, err)))
        return rc;
    if (y->n < A->row_offset + A->nrows) /* y holds the rows at row_offset.. */
        return cls_fail(err, CLS_EOTHER, "la_spmv (y vs rows): length mismatch (%lld vs %lld)",
                        (long long)y->n, (long long)(A->row_offset + A->nrows));
    if (x->buf == y->buf)
        return cls_fail(err, CLS_EOTHER, "la_spmv: x and y must be different vectors");
    if (A->nrows == 0)
        return CLS_OK;
    size_t groups, ls;
    cl_kernel k = la_kernel_of(la, A->variant);
    if ((rc = spmv_setup(la, k, A, x->buf, y->buf, NULL, NULL, NULL, &groups, &ls, err)))
        return rc;
    return launch(la, k, kernel_of(A->variant), groups, ls, err);
}

int la_spmv_full(la_ctx *la, const la_csr *A, const la_vec *x, la_vec *y, cls_error *err)
{
    if (la->prec != LA_MIXED)
        return la_spmv(la, A, x, y, err);
    if (A->nrows == 0)
        return CLS_OK;
    cl_int nrows = (cl_int)A->nrows, yoff = (cl_int)A->row_offset;
    size_t ls = la->cfg.spmv_local_size;
    size_t need = ((size_t)nrows + ls - 1) / ls;
    int rc;
    if ((rc = set_args(la->k_spmv_hi, "spmv_csr_hi", err, 7, A_INT(nrows), A_MEM(A->rowptr),
                       A_MEM(A->col), A_MEM(A->val_hi), A_MEM(x->buf), A_MEM(y->buf),
                       A_INT(yoff))))
        return rc;
    return launch(la, la->k_spmv_hi, "spmv_csr_hi", min_sz(need, A->max_groups), ls, err);
}

/* ------------------------------------------------------------------ kernels */

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

int la_residual(la_ctx *la, const la_csr *A, const la_vec *b, const la_vec *x, la_vec *q,
                la_vec *r, double *rr, cls_error *err)
{
    int rc;
    *rr = 0.0;
    if ((rc = check_len("la_residual (b vs rows)", b->n, A->nrows, err)) ||
        (rc = check_len("la_residual (x vs columns)", x->n, A->ncols, err)) ||
        (rc = check_len("la_residual (q)", q->n, A->nrows, err)) ||
        (rc = check_len("la_residual (r)", r->n, A->nrows, err)))
        return rc;
    if (A->nrows == 0)
        return CLS_OK;
    if ((rc = la_spmv_full(la, A, x, q, err)))
        return rc;
    cl_int n = (cl_int)A->nrows;
    size_t g = groups_for(la, A->nrows);
    if ((rc = set_args(la->k_residual, "residual", err, 6, A_INT(n), A_MEM(b->buf),
                       A_MEM(q->buf), A_MEM(r->buf), A_MEM(la->partial),
                       A_LOCAL(la->cfg.local_size * acc_size(la)))) ||
        (rc = launch(la, la->k_residual, "residual", g, la->cfg.local_size, err)))
        return rc;
    return reduce_and_read(la, g, 1, rr, err);
}

int la_finish(la_ctx *la, cls_error *err)
{
    OCL_CHECK(err, clFinish(la->ocl->queue), "clFinish");
    return CLS_OK;
}

/* ------------------------------------------------------------ fused CG */

#define CGF_REC 8 /* accumulators per record, as cg_fused.cl */
#define CGF_GPU_GROUPS_PER_CU 16 /* cap of the fused loop's grids on GPUs (see la_cgf_*) */

size_t la_cgf_grid_cap(const la_ctx *la)
{
    return la->ocl->dev.type & CL_DEVICE_TYPE_GPU
               ? max_sz(1, (size_t)la->ocl->dev.compute_units * CGF_GPU_GROUPS_PER_CU)
               : (size_t)-1;
}

static int cgf_buffer(la_ctx *la, size_t bytes, cl_mem *m, cls_error *err)
{
    cl_int st;
    *m = clCreateBuffer(la->ocl->context, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &st);
    OCL_CHECK(err, st, "clCreateBuffer(fused CG scalars)");
    return CLS_OK;
}

static size_t kernel_max(const la_ctx *la, cl_kernel k, size_t want)
{
    size_t kmax = 0;
    if (clGetKernelWorkGroupInfo(k, la->ocl->dev.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax,
                                 &kmax, NULL) == CL_SUCCESS &&
        kmax > 0 && kmax < want)
        return kmax;
    return want;
}

int la_cgf_create(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x,
                  const la_vec *dinv, double stop2, la_cgf *w, cls_error *err)
{
    memset(w, 0, sizeof *w);
    int rc;
    if ((rc = check_len("la_cgf (b)", b->n, A->nrows, err)) ||
        (rc = check_len("la_cgf (x)", x->n, A->nrows, err)) ||
        (rc = check_len("la_cgf (square)", A->ncols, A->nrows, err)) ||
        (dinv && (rc = check_len("la_cgf (diagonal)", dinv->n, A->nrows, err))))
        return rc;
    w->la = la;
    w->A = A;
    w->b = *b;
    w->x = *x;
    if (dinv)
        w->d = *dinv;
    w->stop2 = stop2;
    const int64_t n = A->nrows;
    const size_t as = acc_size(la);
    cl_int st;
    if ((rc = la_vec_create(la, n, &w->r, err)) || (rc = la_vec_create(la, n, &w->p, err)) ||
        (rc = la_vec_create(la, n, &w->q, err)))
        goto fail;
    if ((rc = ocl_create_kernel(la->prog, kernel_of(A->variant), &w->k_spmv, err)) ||
        (rc = ocl_create_kernel(la->prog, "cgf_scalars", &w->k_scal, err)) ||
        (rc = ocl_create_kernel(la->prog, "cgf_update", &w->k_upd, err)) ||
        (rc = ocl_create_kernel(la->prog, "cgf_init", &w->k_init, err)) ||
        (rc = ocl_create_kernel(la->prog, "cgf_fold", &w->k_fold, err)))
        goto fail;

    /* geometry */
    size_t gs = 1, ls_spmv = 1;
    w->ls_upd = kernel_max(la, w->k_upd, la->cfg.cg_local_size);
    w->ls_upd = kernel_max(la, w->k_init, w->ls_upd);
    size_t need = (size_t)((n + (int64_t)w->ls_upd - 1) / (int64_t)w->ls_upd);
    w->gu = min_sz(need ? need : 1,
                   max_sz(1, (size_t)la->ocl->dev.compute_units * la->cfg.cg_groups_per_cu));
    /* Every group of the update and of the SpMV leaves partial sums that one
     * work-group of cgf_scalars folds each iteration: on a GPU, a tuned
     * geometry of hundreds of groups per CU (right for the kernel alone)
     * made that fold cost 0.12 ms per iteration on an H200 at N = 256. A
     * grid of CGF_GPU_GROUPS_PER_CU per CU still fills the device (grid-
     * stride loops), so the fused loop caps both grids there. CPUs (PoCL)
     * want many small groups and fold cheaply: no cap. */
    const size_t cgf_cap = la_cgf_grid_cap(la);
    w->gu = min_sz(w->gu, cgf_cap);
    w->nu = w->gu;
    w->ls_scal = pow2_floor(kernel_max(la, w->k_scal, la->cfg.local_size));
    w->ls_scal = pow2_floor(kernel_max(la, w->k_fold, w->ls_scal));
    /* the SpMV partials: geometry first (spmv_setup computes it), buffers after */
    if ((rc = cgf_buffer(la, 2 * as, &w->sc, err)) ||
        (rc = cgf_buffer(la, 2 * sizeof(cl_int), &w->ctl, err)) ||
        (rc = cgf_buffer(la, LA_CGF_SLOTS * CGF_REC * as, &w->hist, err)) ||
        (rc = cgf_buffer(la, 4 * w->nu * as, &w->pu, err)) ||
        (rc = cgf_buffer(la, 8 * as, &w->res, err)))
        goto fail;
    if ((rc = spmv_setup(la, w->k_spmv, A, w->p.buf, w->q.buf, NULL, NULL, NULL, &gs, &ls_spmv,
                         err)))
        goto fail;
    w->gs = min_sz(gs, cgf_cap);
    w->ls_spmv = ls_spmv;
    w->ns = w->gs;
    if ((rc = cgf_buffer(la, 4 * w->ns * as, &w->ps, err)) ||
        (rc = spmv_setup(la, w->k_spmv, A, w->p.buf, w->q.buf, w->ps, w->d.buf, w->ctl, &gs,
                         &ls_spmv, err)))
        goto fail;

    cl_int cn = (cl_int)n, cgs = (cl_int)w->ns, cgu = (cl_int)w->nu, slots = LA_CGF_SLOTS;
    real_arg s2 = mk_acc(la, stop2);
    if ((rc = set_args(w->k_scal, "cgf_scalars", err, 10, A_INT(cgs), A_MEM(w->ps), A_INT(cgu),
                       A_MEM(w->pu), A_MEM(w->sc), A_MEM(w->ctl), A_MEM(w->hist), A_INT(slots),
                       A_REAL(s2), A_LOCAL(4 * w->ls_scal * as))) ||
        (rc = set_args(w->k_upd, "cgf_update", err, 10, A_INT(cn), A_MEM(w->sc), A_MEM(w->ctl),
                       A_MEM(w->p.buf), A_MEM(w->q.buf), A_MEM(w->x.buf), A_MEM(w->r.buf),
                       A_MEM(w->d.buf), A_MEM(w->pu), A_LOCAL(4 * w->ls_upd * as))) ||
        (rc = set_args(w->k_init, "cgf_init", err, 8, A_INT(cn), A_MEM(w->b.buf),
                       A_MEM(w->q.buf), A_MEM(w->r.buf), A_MEM(w->p.buf), A_MEM(w->d.buf),
                       A_MEM(w->pu), A_LOCAL(4 * w->ls_upd * as))))
        goto fail;
    const unsigned char zero = 0;
    st = clEnqueueFillBuffer(la->ocl->queue, w->hist, &zero, 1, 0, LA_CGF_SLOTS * CGF_REC * as,
                             0, NULL, NULL);
    if (st != CL_SUCCESS) {
        rc = cls_fail(err, CLS_EOTHER, "clEnqueueFillBuffer(fused CG records) failed: %s (%d)",
                      ocl_errstr(st), (int)st);
        goto fail;
    }
    if (!la->rq) {
        la->rq = clCreateCommandQueue(la->ocl->context, la->ocl->dev.id, 0, &st);
        if (st != CL_SUCCESS) {
            la->rq = NULL;
            rc = cls_fail(err, CLS_EOTHER,
                          "clCreateCommandQueue(read-back queue) failed: %s (%d)",
                          ocl_errstr(st), (int)st);
            goto fail;
        }
    }
    return CLS_OK;
fail:
    la_cgf_release(w);
    return rc;
}

int la_cgf_drain(la_cgf *w, cls_error *err)
{
    int rc = CLS_OK;
    for (int64_t i = w->seen; i < w->enq; i++) {
        int slot = (int)((w->k_dev + i) % LA_CGF_SLOTS);
        if (!w->rev[slot])
            continue;
        cl_int st = clWaitForEvents(1, &w->rev[slot]);
        clReleaseEvent(w->rev[slot]);
        w->rev[slot] = NULL;
        if (st != CL_SUCCESS && rc == CLS_OK)
            rc = cls_fail(err, CLS_EOTHER, "clWaitForEvents(fused CG record) failed: %s (%d)",
                          ocl_errstr(st), (int)st);
    }
    w->seen = w->enq;
    return rc;
}

int la_cgf_start(la_cgf *w, int64_t k, double *rr, double *rz, cls_error *err)
{
    la_ctx *la = w->la;
    int rc = la_cgf_drain(w, err);
    if (rc)
        return rc;
    w->k_dev = k;
    w->enq = w->seen = 0;
    double out[8];
    /* q = A x at full precision; r = b - q; z = D^-1 r; p = z; r'z, r'r */
    if ((rc = la_spmv_full(la, w->A, &w->x, &w->q, err)) ||
        (rc = launch(la, w->k_init, "cgf_init", w->gu, w->ls_upd, err)) ||
        (rc = la_cgf_fold_read(la, w->k_fold, w->res, 0, NULL, 0, NULL, w->nu, w->pu,
                               w->ls_scal, out, err)))
        return rc;
    *rz = out[4] + out[5];
    *rr = out[6] + out[7];
    cl_int ctl[2] = {0, (cl_int)k};
    cl_int st = clEnqueueWriteBuffer(la->ocl->queue, w->ctl, CL_TRUE, 0, sizeof ctl, ctl, 0,
                                     NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueWriteBuffer(fused CG control)");
    return CLS_OK;
}

int la_cgf_last(la_cgf *w, double *rr, double *rz, cls_error *err)
{
    double out[8];
    int rc = la_cgf_fold_read(w->la, w->k_fold, w->res, 0, NULL, 0, NULL, w->nu, w->pu,
                              w->ls_scal, out, err);
    *rz = out[4] + out[5];
    *rr = out[6] + out[7];
    return rc;
}

int la_cgf_fold_set(la_ctx *la, cl_kernel k, cl_mem res, size_t gi, cl_mem pi, size_t gb,
                    cl_mem pb, size_t gu, cl_mem pu, size_t ls, cls_error *err)
{
    cl_int cgi = (cl_int)gi, cgb = (cl_int)gb, cgu = (cl_int)gu;
    /* unused inputs still need a valid buffer argument: pu stands in */
    cl_mem mi = pi ? pi : pu, mb = pb ? pb : pu;
    return set_args(k, "cgf_fold", err, 8, A_INT(cgi), A_MEM(mi), A_INT(cgb), A_MEM(mb),
                    A_INT(cgu), A_MEM(pu), A_MEM(res), A_LOCAL(4 * ls * acc_size(la)));
}

int la_cgf_fold_read(la_ctx *la, cl_kernel k, cl_mem res, size_t gi, cl_mem pi, size_t gb,
                     cl_mem pb, size_t gu, cl_mem pu, size_t ls, double out[8], cls_error *err)
{
    int rc;
    unsigned char host[8 * sizeof(double)];
    if ((rc = la_cgf_fold_set(la, k, res, gi, pi, gb, pb, gu, pu, ls, err)) ||
        (rc = launch(la, k, "cgf_fold", 1, ls, err)))
        return rc;
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, res, CL_TRUE, 0, 8 * acc_size(la), host, 0,
                                    NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(fused CG sums)");
    acc_to_double(la, host, 8, out);
    return CLS_OK;
}

int la_cgf_enqueue(la_cgf *w, cls_error *err)
{
    la_ctx *la = w->la;
    if (w->enq - w->seen >= LA_CGF_SLOTS - 1)
        return cls_fail(err, CLS_EOTHER, "la_cgf_enqueue: %d iterations already in flight",
                        LA_CGF_SLOTS - 1);
    int rc;
    cl_event ev = NULL;
    size_t global = w->ls_scal;
    if ((rc = enqueue(la, w->k_spmv, kernel_of(w->A->variant), w->gs, w->ls_spmv, err)))
        return rc;
    cl_int st = clEnqueueNDRangeKernel(la->ocl->queue, w->k_scal, 1, NULL, &global, &w->ls_scal,
                                       0, NULL, &ev);
    OCL_CHECK(err, st, "clEnqueueNDRangeKernel(cgf_scalars)");
    if (la->capture && la->nev < (int)(sizeof la->ev / sizeof *la->ev) &&
        clRetainEvent(ev) == CL_SUCCESS)
        la->ev[la->nev++] = ev;
    if ((rc = enqueue(la, w->k_upd, "cgf_update", w->gu, w->ls_upd, err))) {
        clReleaseEvent(ev);
        return rc;
    }
    st = clFlush(la->ocl->queue);
    if (st != CL_SUCCESS) {
        clReleaseEvent(ev);
        OCL_CHECK(err, st, "clFlush");
    }
    int slot = (int)((w->k_dev + w->enq) % LA_CGF_SLOTS);
    size_t as = acc_size(la);
    st = clEnqueueReadBuffer(la->rq, w->hist, CL_FALSE, (size_t)slot * CGF_REC * as,
                             CGF_REC * as, w->ring[slot], 1, &ev, &w->rev[slot]);
    clReleaseEvent(ev);
    if (st != CL_SUCCESS) {
        w->rev[slot] = NULL;
        OCL_CHECK(err, st, "clEnqueueReadBuffer(fused CG record)");
    }
    OCL_CHECK(err, clFlush(la->rq), "clFlush(read-back queue)");
    w->enq++;
    return CLS_OK;
}

int la_cgf_next(la_cgf *w, la_cgf_record *rec, cls_error *err)
{
    if (w->seen >= w->enq)
        return cls_fail(err, CLS_EOTHER, "la_cgf_next: no iteration queued");
    int slot = (int)((w->k_dev + w->seen) % LA_CGF_SLOTS);
    cl_int st = clWaitForEvents(1, &w->rev[slot]);
    clReleaseEvent(w->rev[slot]);
    w->rev[slot] = NULL;
    OCL_CHECK(err, st, "clWaitForEvents(fused CG record)");
    double v[CGF_REC];
    acc_to_double(w->la, w->ring[slot], CGF_REC, v);
    rec->rr = v[0];
    rec->rz = v[1];
    rec->pq = v[2];
    rec->qq = v[3];
    rec->alpha = v[4];
    rec->beta = v[5];
    rec->stop = (int)v[6];
    rec->k = (int64_t)v[7];
    w->seen++;
    return CLS_OK;
}

void la_cgf_release(la_cgf *w)
{
    if (!w || !w->la)
        return;
    la_cgf_drain(w, NULL);
    cl_kernel *ks[] = {&w->k_spmv, &w->k_scal, &w->k_upd, &w->k_init, &w->k_fold};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++)
        if (*ks[i]) {
            clReleaseKernel(*ks[i]);
            *ks[i] = NULL;
        }
    cl_mem *ms[] = {&w->ps, &w->pu, &w->sc, &w->ctl, &w->hist, &w->res};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
        if (*ms[i]) {
            clReleaseMemObject(*ms[i]);
            *ms[i] = NULL;
        }
    la_vec_release(&w->r);
    la_vec_release(&w->p);
    la_vec_release(&w->q);
}

/* ------------------------------------------------------------- profiler */

int la_set_vector_geometry(la_ctx *la, size_t local_size, size_t groups_per_cu,
                           cls_error *err)
{
    if (!local_size || !groups_per_cu || local_size > la->ocl->dev.max_work_group)
        return cls_fail(err, CLS_EUSAGE, "bad geometry: local %zu, groups/CU %zu", local_size,
                        groups_per_cu);
    la->cfg.local_size = local_size;
    la->cfg.groups_per_cu = groups_per_cu;
    la->ngroups = max_sz(1, (size_t)la->ocl->dev.compute_units * groups_per_cu);
    return ensure_partial(la, la->ngroups, err);
}

int la_cgf_set_update_geometry(la_cgf *w, size_t local_size, size_t groups, cls_error *err)
{
    la_ctx *la = w->la;
    size_t as = acc_size(la);
    int rc = la_cgf_drain(w, err);
    if (rc)
        return rc;
    if (!local_size || !groups)
        return cls_fail(err, CLS_EUSAGE, "bad geometry: local %zu, groups %zu", local_size,
                        groups);
    cl_mem pu;
    size_t nu = groups;
    if ((rc = cgf_buffer(la, 4 * nu * as, &pu, err)))
        return rc;
    clReleaseMemObject(w->pu);
    w->pu = pu;
    w->ls_upd = local_size;
    w->gu = groups;
    w->nu = nu;
    cl_int cgu = (cl_int)nu, cgs = (cl_int)w->ns;
    if ((rc = set_args(w->k_scal, "cgf_scalars", err, 4, A_INT(cgs), A_MEM(w->ps), A_INT(cgu),
                       A_MEM(w->pu))))
        return rc;
    OCL_CHECK(err, clSetKernelArg(w->k_upd, 8, sizeof(cl_mem), &w->pu), "clSetKernelArg(cgf_update)");
    OCL_CHECK(err, clSetKernelArg(w->k_upd, 9, 4 * local_size * as, NULL),
              "clSetKernelArg(cgf_update)");
    OCL_CHECK(err, clSetKernelArg(w->k_init, 6, sizeof(cl_mem), &w->pu), "clSetKernelArg(cgf_init)");
    OCL_CHECK(err, clSetKernelArg(w->k_init, 7, 4 * local_size * as, NULL),
              "clSetKernelArg(cgf_init)");
    return CLS_OK;
}

int la_kernel_limits(const la_ctx *la, const char *kernel, size_t *multiple, size_t *max)
{
    cl_kernel k;
    cls_error e;
    *multiple = *max = 0;
    if (ocl_create_kernel(la->prog, kernel, &k, &e))
        return -1;
    size_t m = 0, x = 0;
    if (clGetKernelWorkGroupInfo(k, la->ocl->dev.id, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                 sizeof m, &m, NULL) != CL_SUCCESS)
        m = 1;
    if (clGetKernelWorkGroupInfo(k, la->ocl->dev.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof x, &x,
                                 NULL) != CL_SUCCESS)
        x = la->ocl->dev.max_work_group;
    clReleaseKernel(k);
    *multiple = m ? m : 1;
    *max = min_sz(x ? x : 1, la->ocl->dev.max_work_group);
    return 0;
}
