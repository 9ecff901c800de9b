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
#include "la_priv.h"
#include "ocl_gate.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunedb.h"

/* ------------------------------------------------------------ configuration */

size_t lai_pow2_floor(size_t v)
{
    size_t p = 1;
    while (p <= v / 2)
        p *= 2;
    return p;
}

int lai_is_pow2(size_t v)
{
    return v && (v & (v - 1)) == 0;
}

size_t lai_min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}

size_t lai_max_sz(size_t a, size_t b)
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
    size_t maxwg = lai_pow2_floor(dev->max_work_group ? dev->max_work_group : 1);
    memset(cfg, 0, sizeof *cfg);
    if (dev->type & CL_DEVICE_TYPE_CPU) {
        cfg->local_size = lai_min_sz(64, maxwg);
        cfg->groups_per_cu = 4096;
        cfg->spmv_local_size = lai_min_sz(256, maxwg);
        cfg->sell_c = 8;
    } else {
        cfg->local_size = lai_min_sz(256, maxwg);
        cfg->groups_per_cu = 8;
        cfg->spmv_local_size = lai_min_sz(256, maxwg);
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

size_t lai_acc_size(const la_ctx *la)
{
    return (la->prec != LA_FLOAT || la->ocl->dev.fp64) ? sizeof(double) : sizeof(float);
}

/* Sets kernel arguments from (size, pointer) pairs; a NULL pointer with a
 * size is a __local allocation. */
int lai_set_args(cl_kernel k, const char *kname, cls_error *err, int nargs, ...)
{
    va_list ap;
    va_start(ap, nargs);
    for (int i = 0; i < nargs; i++) {
        size_t size = va_arg(ap, size_t);
        const void *ptr = va_arg(ap, const void *);
        cl_int st = clSetKernelArg(k, (cl_uint)i, size, ptr);
        if (st != CL_SUCCESS) {
            va_end(ap);
            return cls_fail(err, CLS_EOTHER, "clSetKernelArg(%s, %d) failed: %s (%d)", kname, i,
                            ocl_errstr(st), (int)st);
        }
    }
    va_end(ap);
    return CLS_OK;
}

int lai_enqueue(la_ctx *la, cl_kernel k, const char *kname, size_t groups, size_t ls,
                cls_error *err)
{
    size_t global = groups * ls;
    cl_event ev = NULL;
    int want = la->capture && la->nev < (int)(sizeof la->ev / sizeof *la->ev);
    cl_int st = ocl_enqueue_kernel(la->ocl, k, global, &ls, want || la->prof ? &ev : NULL);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER,
                        "clEnqueueNDRangeKernel(%s, global %zu, local %zu) failed: %s (%d)", kname,
                        global, ls, ocl_errstr(st), (int)st);
    if (want && la->prof)
        clRetainEvent(ev);
    if (want) {
        la->evname[la->nev] = kname;
        la->ev[la->nev++] = ev;
    }
    lai_prof_take(la, ev);
    return CLS_OK;
}

void lai_prof_take(la_ctx *la, cl_event ev)
{
    if (la->prof && ev)
        la->prof(la->prof_ctx, la->prof_step, ev);
}

void lai_prof_share(la_ctx *la, cl_event ev)
{
    if (la->prof && ev && clRetainEvent(ev) == CL_SUCCESS)
        la->prof(la->prof_ctx, la->prof_step, ev);
}

size_t la_acc_size(const la_ctx *la)
{
    return lai_acc_size(la);
}

int lai_launch(la_ctx *la, cl_kernel k, const char *kname, size_t groups, size_t ls, cls_error *err)
{
    return lai_enqueue(la, k, kname, groups, ls, err);
}

void lai_release_objects(cl_kernel **ks, int nk, cl_mem **ms, int nm)
{
    for (int i = 0; i < nk; i++)
        if (*ks[i]) {
            clReleaseKernel(*ks[i]);
            *ks[i] = NULL;
        }
    for (int i = 0; i < nm; i++)
        if (*ms[i]) {
            clReleaseMemObject(*ms[i]);
            *ms[i] = NULL;
        }
}

size_t lai_kernel_max(const la_ctx *la, cl_kernel k, size_t want)
{
    size_t kmax = 0;
    if (clGetKernelWorkGroupInfo(k, la->ocl->dev.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax,
                                 NULL) == CL_SUCCESS &&
        kmax > 0 && kmax < want)
        return kmax;
    return want;
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
    return la_capture_end_named(la, each, NULL, max, count);
}

double la_capture_end_named(la_ctx *la, double *each, const char **names, int max, int *count)
{
    double s = 0.0;
    for (int i = 0; i < la->nev; i++) {
        double t = ocl_event_seconds(la->ev[i]);
        if (t > 0)
            s += t;
        if (each && i < max)
            each[i] = t;
        if (names && i < max)
            names[i] = la->evname[i] ? la->evname[i] : "?";
        clReleaseEvent(la->ev[i]);
    }
    if (count)
        *count = la->nev;
    la->nev = 0;
    la->capture = 0;
    return s;
}

/* A `real` scalar as the kernel expects it. */
real_arg lai_mk_real(const la_ctx *la, double v)
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
real_arg lai_mk_acc(const la_ctx *la, double v)
{
    real_arg r;
    if (lai_acc_size(la) == sizeof(double)) {
        r.u.d = v;
        r.size = sizeof(cl_double);
    } else {
        r.u.f = (cl_float)v;
        r.size = sizeof(cl_float);
    }
    return r;
}

/* Work-groups for an n-element grid-stride kernel. */
size_t lai_groups_for(const la_ctx *la, int64_t n)
{
    size_t ls = la->cfg.local_size;
    size_t need = (size_t)((n + (int64_t)ls - 1) / (int64_t)ls);
    size_t g = lai_min_sz(la->ngroups, need);
    return g ? g : 1;
}

size_t la_groups_for(const la_ctx *la, int64_t n)
{
    return lai_groups_for(la, n);
}

int lai_check_len(const char *op, int64_t a, int64_t b, cls_error *err)
{
    if (a != b)
        return cls_fail(err, CLS_EOTHER, "%s: vector lengths differ (%lld vs %lld)", op,
                        (long long)a, (long long)b);
    return CLS_OK;
}

/* Makes la->partial hold 2 * groups accumulators. */
int lai_ensure_partial(la_ctx *la, size_t groups, cls_error *err)
{
    if (groups <= la->partial_cap && la->partial)
        return CLS_OK;
    cl_int st;
    cl_mem m =
        clCreateBuffer(la->ocl->context, CL_MEM_READ_WRITE, groups * 2 * sizeof(double), NULL, &st);
    OCL_CHECK(err, st, "clCreateBuffer(reduction partials)");
    if (la->partial)
        clReleaseMemObject(la->partial);
    la->partial = m;
    la->partial_cap = groups;
    return CLS_OK;
}

/* Converts n accumulators read from the device (acc_size each) to double. */
void lai_acc_to_double(const la_ctx *la, const void *buf, int n, double *out)
{
    size_t as = lai_acc_size(la);
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
    int rc = lai_set_args(la->k_reduce, "reduce_partials", err, 5, A_INT(g), A_INT(nc), A_MEM(part),
                          A_MEM(la->result), A_LOCAL(2 * ls * lai_acc_size(la)));
    if (rc)
        return rc;
    if ((rc = lai_launch(la, la->k_reduce, "reduce_partials", 1, ls, err)))
        return rc;
    unsigned char buf[2 * sizeof(double)];
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, la->result, CL_TRUE, 0,
                                    lai_acc_size(la) * (size_t)ncomp, buf, 0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(dot result)");
    lai_acc_to_double(la, buf, ncomp, out);
    return CLS_OK;
}

int lai_reduce_and_read(la_ctx *la, size_t groups, int ncomp, double *out, cls_error *err)
{
    return reduce_buf_and_read(la, la->partial, groups, ncomp, out, err);
}

/* ------------------------------------------------------------- init/release */

static const char *const la_sources[] = {"real.cl",      "spmv_csr.cl",  "spmv_adaptive.cl",
                                         "spmv_sell.cl", "spmv_bcsr.cl", "dot.cl",
                                         "blas1.cl",     "cg_fused.cl",  "cg_classic.cl"};

const char *lai_prec_key(la_precision p)
{
    return la_precision_str(p);
}

/* Overlays the database's entries for `kernel` on the given config fields.
 * pow2: the field is shared with kernels that need powers of two (la_dist),
 * so the best power-of-two configuration is taken. Returns 1 if an entry
 * was applied (*exact = 0 if from another size class). */
int lai_overlay(const la_ctx *la, const tunedb *db, const char *kernel, int cls, const char *shape,
                int pow2, size_t *ls, size_t *gpcu, size_t *param, int *exact)
{
    if (!db)
        return 0;
    int ex = 1;
    const tunedb_entry *e = tunedb_find(db, kernel, lai_prec_key(la->prec), cls, shape, &ex);
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
void lai_tuned_vector_config(la_ctx *la, int64_t rows)
{
    if (la->user_cfg)
        return;
    const tunedb *db = tunedb_for_device(&la->ocl->dev);
    la_config *c = &la->cfg;
    int cls = tunedb_size_class(rows), exact = 1, any = 0;
    any |= lai_overlay(la, db, "dot", cls, "", 1, &c->local_size, &c->groups_per_cu, NULL, &exact);
    any |= lai_overlay(la, db, "cgf_update", cls, "", 0, &c->cg_local_size, &c->cg_groups_per_cu,
                       NULL, &exact);
    snprintf(c->source, sizeof c->source, "%s",
             any ? (exact ? "tuned" : "tuned (nearest size)") : "default");
}

/* Clamps a configuration to the device and to each kernel's limits. */
void lai_clamp_config(la_ctx *la)
{
    const ocl_device *dev = &la->ocl->dev;
    la_config *c = &la->cfg;
    struct {
        cl_kernel k;
        size_t *ls;
        int pow2;
    } ks[] = {
        {la->k_spmv_scalar, &c->spmv_local_size, 1},
        {la->k_spmv_vector, &c->spmv_local_size, 1},
        {la->k_dot_partial, &c->local_size, 1},
        {la->k_dot2_partial, &c->local_size, 1},
        {la->k_reduce, &c->local_size, 1},
        {la->k_axpy, &c->local_size, 1},
        {la->k_xpay, &c->local_size, 1},
        {la->k_copy, &c->local_size, 1},
        {la->k_fill, &c->local_size, 1},
        {la->k_pointwise, &c->local_size, 1},
        {la->k_cg_update, &c->local_size, 1},
        {la->k_pcg_update, &c->local_size, 1},
        {la->k_spmv_adaptive, &c->fmt_local_size, 0},
        {la->k_spmv_sell, &c->fmt_local_size, 0},
        {la->k_spmv_bcsr, &c->fmt_local_size, 0},
        {la->k_residual, &c->local_size, 1},
    };
    c->local_size = lai_min_sz(c->local_size, lai_pow2_floor(dev->max_work_group));
    c->spmv_local_size = lai_min_sz(c->spmv_local_size, lai_pow2_floor(dev->max_work_group));
    c->fmt_local_size = lai_min_sz(c->fmt_local_size, dev->max_work_group);
    c->cg_local_size = lai_min_sz(c->cg_local_size, dev->max_work_group);
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        size_t kmax = 0;
        if (ks[i].k &&
            clGetKernelWorkGroupInfo(ks[i].k, dev->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax,
                                     &kmax, NULL) == CL_SUCCESS &&
            kmax > 0)
            *ks[i].ls = lai_min_sz(*ks[i].ls, ks[i].pow2 ? lai_pow2_floor(kmax) : kmax);
    }
    /* scratch for two-sum reductions: 2 accumulators per work-item */
    while (c->local_size > 1 && 2 * c->local_size * lai_acc_size(la) > dev->local_mem / 2)
        c->local_size /= 2;
    while (c->spmv_local_size > 1 &&
           c->spmv_local_size * (la->elem + 2 * lai_acc_size(la)) > dev->local_mem / 2)
        c->spmv_local_size /= 2;
    while (c->cg_local_size > 1 && 2 * c->cg_local_size * lai_acc_size(la) > dev->local_mem / 2)
        c->cg_local_size /= 2;
    while (c->fmt_local_size > 1 && 2 * c->fmt_local_size * lai_acc_size(la) > dev->local_mem / 4)
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
    /* PoCL 5.0 (Ubuntu 24.04's build, with assertions) aborts the process
     * while compiling these kernels: its parallel-region formation fails on
     * a barrier followed by a branch around a loop (pocl PR 2281; PoCL 3.1
     * and 6.0 compile them). An abort would take the solve, or the daemon,
     * down with it: refuse the device with the reason instead. */
    if (strstr(dev->platform_name, "Portable Computing Language") &&
        !strncmp(dev->driver, "5.0", 3) && !getenv("CLSOLVE_ALLOW_POCL5"))
        return cls_fail(err, CLS_EOTHER,
                        "device %s: PoCL %s aborts while compiling clsolve's kernels (a PoCL "
                        "5.0 bug, fixed in later releases); use PoCL 6 or 3.1, or another "
                        "device (CLSOLVE_ALLOW_POCL5=1 tries anyway)",
                        dev->name, dev->driver);
    if (cfg) {
        la->cfg = *cfg;
        la->user_cfg = 1;
        config_complete(dev, &la->cfg);
        snprintf(la->cfg.source, sizeof la->cfg.source, "user");
    } else {
        la_config_default(dev, &la->cfg);
    }
    la_config *c = &la->cfg;
    if (!lai_is_pow2(c->local_size) || !lai_is_pow2(c->spmv_local_size) || c->groups_per_cu == 0 ||
        (c->vector_width &&
         (!lai_is_pow2(c->vector_width) || c->vector_width < 2 || c->vector_width > 64)) ||
        c->cg_local_size == 0 || c->fmt_local_size == 0 || !lai_is_pow2(c->sell_c) ||
        c->sell_c > 1024)
        return cls_fail(err, CLS_EUSAGE,
                        "bad work-group configuration: local %zu, spmv local %zu, groups/CU "
                        "%zu, vector width %zu, SELL chunk %zu (local and SpMV sizes must be "
                        "powers of two, width 2..64, chunk a power of two)",
                        c->local_size, c->spmv_local_size, c->groups_per_cu, c->vector_width,
                        c->sell_c);

    const char *popts = prec == LA_DOUBLE  ? "-DCLS_REAL_DOUBLE"
                        : prec == LA_MIXED ? "-DCLS_REAL_DOUBLE -DCLS_MAT_FLOAT"
                        : dev->fp64        ? "-DCLS_ACC_DOUBLE"
                                           : "";
    la->serial_group_sum = (dev->type & CL_DEVICE_TYPE_CPU) != 0;
    /* CLSOLVE_SERIAL_GROUP_SUM=0|1 overrides the choice (diagnosing a CPU
     * OpenCL compiler that rejects one of the two forms) */
    const char *sgs = getenv("CLSOLVE_SERIAL_GROUP_SUM");
    if (sgs && (!strcmp(sgs, "0") || !strcmp(sgs, "1")))
        la->serial_group_sum = sgs[0] == '1';
    /* compensated sums cost a GPU nothing (memory-bound) and a CPU device
     * about 30% of a fused CG iteration; on one CPU part they buy nothing */
    la->plain_sums = (flags & LA_FLAG_ONE_PART) && (dev->type & CL_DEVICE_TYPE_CPU);
    char *opts = la->build_opts;
    snprintf(opts, sizeof la->build_opts, "%s%s%s", popts,
             la->serial_group_sum ? " -DCLS_SERIAL_GROUP_SUM" : "",
             la->plain_sums ? " -DCLS_PLAIN_SUMS" : "");
    int rc = ocl_build_program(ocl, la_sources, (int)(sizeof la_sources / sizeof *la_sources), opts,
                               &la->prog, err);
    if (rc)
        return rc;
    cls_trace("la_init: program built");

    struct {
        cl_kernel *k;
        const char *name;
    } ks[] = {
        {&la->k_spmv_scalar, "spmv_csr_scalar"},
        {&la->k_spmv_vector, "spmv_csr_vector"},
        {&la->k_dot_partial, "dot_partial"},
        {&la->k_dot2_partial, "dot2_partial"},
        {&la->k_reduce, "reduce_partials"},
        {&la->k_axpy, "axpy"},
        {&la->k_xpay, "xpay"},
        {&la->k_copy, "copy"},
        {&la->k_fill, "fill"},
        {&la->k_pointwise, "pointwise"},
        {&la->k_cg_update, "cg_update"},
        {&la->k_pcg_update, "pcg_update"},
        {&la->k_spmv_adaptive, "spmv_adaptive"},
        {&la->k_spmv_sell, "spmv_sell"},
        {&la->k_spmv_bcsr, "spmv_bcsr"},
        {&la->k_spmv_hi, "spmv_csr_hi"},
        {&la->k_residual, "residual"},
        {&la->k_sell_from_csr, "sell_from_csr"},
    };
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        if ((rc = ocl_create_kernel(la->prog, ks[i].name, ks[i].k, err))) {
            la_release(la);
            return rc;
        }
    }
    lai_clamp_config(la);
    cls_trace("la_init: kernels made");

    cl_int st;
    if ((rc = lai_ensure_partial(la, la->ngroups, err))) {
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

/* the staging buffers of the vectors' uploads (la_vec.c): the context owns
 * them, so its release drains and frees them */
static void lai_stage_release(la_ctx *la)
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

void la_release(la_ctx *la)
{
    if (!la)
        return;
    cl_kernel *ks[] = {&la->k_spmv_scalar,   &la->k_spmv_vector, &la->k_dot_partial,
                       &la->k_dot2_partial,  &la->k_reduce,      &la->k_axpy,
                       &la->k_xpay,          &la->k_copy,        &la->k_fill,
                       &la->k_pointwise,     &la->k_cg_update,   &la->k_pcg_update,
                       &la->k_spmv_adaptive, &la->k_spmv_sell,   &la->k_spmv_bcsr,
                       &la->k_spmv_hi,       &la->k_residual,    &la->k_sell_from_csr};
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
        lai_stage_release(la);
    if (la->rq)
        clReleaseCommandQueue(la->rq);
    la->rq = NULL;
    if (la->partial)
        clReleaseMemObject(la->partial);
    if (la->result)
        clReleaseMemObject(la->result);
    if (la->prog)
        clReleaseProgram(la->prog);
    if (la->aux_prog)
        clReleaseProgram(la->aux_prog);
    la->aux_prog = NULL;
    if (la->small_prog)
        clReleaseProgram(la->small_prog);
    la->small_prog = NULL;
    for (int i = 0; i <= LA_SMALL_RPW_MAX; i++) {
        if (la->small_reg[i])
            clReleaseProgram(la->small_reg[i]);
        la->small_reg[i] = NULL;
        la->small_shuffle[i] = 0;
    }
    la->partial = la->result = NULL;
    la->partial_cap = 0;
    la->prog = NULL;
}

static const char *const la_aux_sources[] = {"real.cl", "pcg_fused.cl", "pc.cl",
                                             "spmm.cl", "rowblock.cl",  "bcg.cl"};

int la_aux_program(la_ctx *la, cl_program *out, cls_error *err)
{
    if (!la->aux_prog) {
        int rc = ocl_build_program(la->ocl, la_aux_sources,
                                   (int)(sizeof la_aux_sources / sizeof *la_aux_sources),
                                   la->build_opts, &la->aux_prog, err);
        if (rc)
            return rc;
    }
    *out = la->aux_prog;
    return CLS_OK;
}

static const char *const la_small_sources[] = {"real.cl", "cg_small.cl", "cg_batch.cl"};

int la_small_program(la_ctx *la, cl_program *out, cls_error *err)
{
    if (!la->small_prog) {
        int rc = ocl_build_program(la->ocl, la_small_sources,
                                   (int)(sizeof la_small_sources / sizeof *la_small_sources),
                                   la->build_opts, &la->small_prog, err);
        if (rc)
            return rc;
    }
    *out = la->small_prog;
    return CLS_OK;
}

static const char *const la_small_reg_sources[] = {"real.cl", "cg_small.cl", "cg_small_reg.cl"};

/*
 * NVIDIA GPUs get the register loop's reductions as warp shuffles (inline
 * PTX, cg_small_reg.cl: one barrier per reduction instead of a tree's
 * twelve). A driver whose compiler refuses the PTX gets the trees, as every
 * other device does; CLSOLVE_CGS_SHUFFLE=0|1 overrides the choice.
 */
static int la_small_wants_shuffle(const la_ctx *la)
{
    const char *env = getenv("CLSOLVE_CGS_SHUFFLE");
    if (env && (!strcmp(env, "0") || !strcmp(env, "1")))
        return env[0] == '1';
    return (la->ocl->dev.type & CL_DEVICE_TYPE_GPU) && strstr(la->ocl->dev.vendor, "NVIDIA");
}

int la_small_reg_program(la_ctx *la, int rpw, cl_program *out, int *shuffle, cls_error *err)
{
    if (rpw < 1 || rpw > LA_SMALL_RPW_MAX)
        return cls_fail(err, CLS_EOTHER, "la_small_reg_program: %d rows per work-item", rpw);
    const int n = (int)(sizeof la_small_reg_sources / sizeof *la_small_reg_sources);
    char opts[sizeof la->build_opts + 48];
    if (!la->small_reg[rpw] && la_small_wants_shuffle(la)) {
        cls_error e;
        snprintf(opts, sizeof opts, "%s -DCGS_RPW=%d -DCLS_NV_SHFL", la->build_opts, rpw);
        if (!ocl_build_program(la->ocl, la_small_reg_sources, n, opts, &la->small_reg[rpw], &e))
            la->small_shuffle[rpw] = 1;
        else
            cls_trace("la_small_reg_program: no warp shuffles; trees instead");
    }
    if (!la->small_reg[rpw]) {
        la->small_shuffle[rpw] = 0;
        snprintf(opts, sizeof opts, "%s -DCGS_RPW=%d", la->build_opts, rpw);
        int rc =
            ocl_build_program(la->ocl, la_small_reg_sources, n, opts, &la->small_reg[rpw], err);
        if (rc)
            return rc;
    }
    *out = la->small_reg[rpw];
    *shuffle = la->small_shuffle[rpw];
    return CLS_OK;
}

/* ------------------------------------------------------------- profiler */

int la_set_vector_geometry(la_ctx *la, size_t local_size, size_t groups_per_cu, cls_error *err)
{
    if (!local_size || !groups_per_cu || local_size > la->ocl->dev.max_work_group)
        return cls_fail(err, CLS_EUSAGE, "bad geometry: local %zu, groups/CU %zu", local_size,
                        groups_per_cu);
    la->cfg.local_size = local_size;
    la->cfg.groups_per_cu = groups_per_cu;
    la->ngroups = lai_max_sz(1, (size_t)la->ocl->dev.compute_units * groups_per_cu);
    return lai_ensure_partial(la, la->ngroups, err);
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
    *max = lai_min_sz(x ? x : 1, la->ocl->dev.max_work_group);
    return 0;
}
