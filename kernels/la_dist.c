/*
 * la_dist.c: host calls of the distributed kernels (see la_dist.h).
 *
 * Launch geometry follows la.c: grid-stride loops over at most
 * la->ngroups work-groups of la->cfg.local_size (BLAS-1 and reductions) or
 * la->cfg.spmv_local_size (SpMV). Reductions write 3 compensated partial
 * sums, (hi, lo) pairs, per group (partial is 6 * ngroups long; dcg.cl says
 * why) and dreduce folds them with one work-group. The pairs are read into
 * ld_host(ld) with a non-blocking read; the event is kept until ld_result_wait.
 *
 * Precision: LA_DOUBLE and LA_MIXED both have double vectors (la->elem), so
 * every "double vectors" test is prec != LA_FLOAT. The split CSR kernels of
 * LA_MIXED read double values here (the distributed engine's SpMV also
 * computes the true residual, which must be exact), so mixed costs double's
 * bandwidth in this engine; the local engine (la.c) stores floats.
 */
#include "la_dist.h"
#include "la_priv.h"
#include "ocl_gate.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const ld_sources[] = {"real.cl", "halo.cl", "spmv_split.cl", "dcg.cl",
                                         "pipecg.cl"};

/* as la.c: a GPU's sub-group keeps busy on rows of this many entries */
#define LD_VECTOR_MIN_ROW 12.0

static int launch(ld_ctx *ld, cl_kernel k, const char *kname, size_t groups, size_t ls,
                  cls_error *err)
{
    size_t global = groups * ls;
    cl_event ev = NULL;
    cl_int st = ocl_enqueue_kernel(ld->la->ocl, k, global, &ls, ld->la->prof ? &ev : NULL);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER,
                        "clEnqueueNDRangeKernel(%s, global %zu, local %zu) failed: %s (%d)", kname,
                        global, ls, ocl_errstr(st), (int)st);
    lai_prof_take(ld->la, ev);
    return CLS_OK;
}

static unsigned char *ld_host(ld_ctx *ld)
{
    return ld->host_pin_ptr ? (unsigned char *)ld->host_pin_ptr : ld->host_own;
}

static size_t groups_for(const ld_ctx *ld, int64_t n, size_t ls)
{
    size_t need = (size_t)((n + (int64_t)ls - 1) / (int64_t)ls);
    size_t g = lai_min_sz(ld->la->ngroups, need);
    return g ? g : 1;
}

/* ------------------------------------------------------------ init/release */

int ld_init(ld_ctx *ld, la_ctx *la, cls_error *err)
{
    memset(ld, 0, sizeof *ld);
    ld->la = la;
    const ocl_device *dev = &la->ocl->dev;
    ld->acc = (la->prec != LA_FLOAT || dev->fp64) ? sizeof(double) : sizeof(float);
    const char *opts = la->prec != LA_FLOAT ? "-DCLS_REAL_DOUBLE"
                       : dev->fp64          ? "-DCLS_ACC_DOUBLE"
                                            : "";
    int rc = ocl_build_program(la->ocl, ld_sources, (int)(sizeof ld_sources / sizeof *ld_sources),
                               opts, &ld->prog, err);
    if (rc)
        return rc;
    struct {
        cl_kernel *k;
        const char *name;
    } ks[] = {
        {&ld->k_pack, "halo_pack"},
        {&ld->k_spmv_scalar, "spmv_split_scalar"},
        {&ld->k_spmv_vector, "spmv_split_vector"},
        {&ld->k_dots, "dots_partial"},
        {&ld->k_pipecg, "pipecg_update"},
        {&ld->k_pipecg_jacobi, "pipecg_update_jacobi"},
        {&ld->k_reduce, "dreduce"},
    };
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        if ((rc = ocl_create_kernel(ld->prog, ks[i].name, ks[i].k, err))) {
            ld_release(ld);
            return rc;
        }
        /* the reductions need 3 accumulators per work-item of local memory
         * and the kernel's own work-group limit: check the configuration */
        size_t kmax = 0;
        cl_int st = clGetKernelWorkGroupInfo(*ks[i].k, dev->id, CL_KERNEL_WORK_GROUP_SIZE,
                                             sizeof kmax, &kmax, NULL);
        if (st != CL_SUCCESS) {
            ld_release(ld);
            OCL_CHECK(err, st, "clGetKernelWorkGroupInfo");
        }
        size_t want = (ks[i].k == &ld->k_spmv_scalar || ks[i].k == &ld->k_spmv_vector)
                          ? la->cfg.spmv_local_size
                          : la->cfg.local_size;
        if (kmax > 0 && want > lai_pow2_floor(kmax)) {
            ld_release(ld);
            return cls_fail(err, CLS_EOTHER,
                            "kernel %s allows work-groups of %zu on %s, the configuration "
                            "asks for %zu",
                            ks[i].name, kmax, dev->name, want);
        }
    }
    if (6 * la->cfg.local_size * ld->acc > dev->local_mem) {
        ld_release(ld);
        return cls_fail(err, CLS_EOTHER,
                        "work-group size %zu needs %zu bytes of local memory for three "
                        "compensated sums; %s has %llu",
                        la->cfg.local_size, 6 * la->cfg.local_size * ld->acc, dev->name,
                        (unsigned long long)dev->local_mem);
    }
    (void)lai_pinned_small(la, sizeof ld->host_own, &ld->host_pin, &ld->host_pin_ptr);
    cl_int st;
    ld->partial =
        clCreateBuffer(la->ocl->context, CL_MEM_READ_WRITE, 6 * la->ngroups * ld->acc, NULL, &st);
    if (st == CL_SUCCESS)
        ld->result = clCreateBuffer(la->ocl->context, CL_MEM_READ_WRITE, 6 * ld->acc, NULL, &st);
    if (st != CL_SUCCESS) {
        ld_release(ld);
        OCL_CHECK(err, st, "clCreateBuffer(distributed reduction buffers)");
    }
    return CLS_OK;
}

void ld_release(ld_ctx *ld)
{
    if (!ld)
        return;
    if (ld->cq) {
        clFinish(ld->cq);
        clReleaseCommandQueue(ld->cq);
    }
    if (ld->ev_mark)
        clReleaseEvent(ld->ev_mark);
    if (ld->ev) {
        clWaitForEvents(1, &ld->ev);
        clReleaseEvent(ld->ev);
    }
    if (ld->host_pin) /* after the read into it */
        lai_pinned_free(ld->la, ld->host_pin, ld->host_pin_ptr);
    cl_kernel *ks[] = {
        &ld->k_pack,   &ld->k_spmv_scalar,   &ld->k_spmv_vector, &ld->k_dots,
        &ld->k_pipecg, &ld->k_pipecg_jacobi, &ld->k_reduce,
    };
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++)
        if (*ks[i])
            clReleaseKernel(*ks[i]);
    if (ld->partial)
        clReleaseMemObject(ld->partial);
    if (ld->result)
        clReleaseMemObject(ld->result);
    if (ld->prog)
        clReleaseProgram(ld->prog);
    memset(ld, 0, sizeof *ld);
}

/* ----------------------------------------------------------------- buffers */

static int make_buffer(ld_ctx *ld, const char *what, size_t bytes, cl_mem_flags flags, void *host,
                       cl_mem *out, cls_error *err)
{
    const ocl_device *dev = &ld->la->ocl->dev;
    if (bytes > dev->max_alloc)
        return cls_fail(err, CLS_EOTHER,
                        "%s needs %.1f MB per buffer but device %s allows %.1f MB; use more "
                        "parts",
                        what, (double)bytes / 1048576.0, dev->name,
                        (double)dev->max_alloc / 1048576.0);
    cl_int st;
    *out = clCreateBuffer(ld->la->ocl->context, flags, bytes ? bytes : 1, host, &st);
    if (st != CL_SUCCESS) {
        *out = NULL;
        return cls_fail(err, CLS_EOTHER, "clCreateBuffer(%s, %zu bytes) failed: %s (%d)", what,
                        bytes, ocl_errstr(st), (int)st);
    }
    return CLS_OK;
}

int ld_index_upload(ld_ctx *ld, const int32_t *idx, int64_t n, cl_mem *out, cls_error *err)
{
    if (n <= 0)
        return make_buffer(ld, "index list", sizeof(cl_int), CL_MEM_READ_ONLY, NULL, out, err);
    return make_buffer(ld, "index list", (size_t)n * sizeof(cl_int),
                       CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (void *)idx, out, err);
}

int ld_buffer_create(ld_ctx *ld, int64_t n, cl_mem *out, cls_error *err)
{
    return make_buffer(ld, "halo buffer", (size_t)(n > 0 ? n : 1) * ld->la->elem, CL_MEM_READ_WRITE,
                       NULL, out, err);
}

static void rows_release(ld_rows_set *s)
{
    if (s->list)
        clReleaseMemObject(s->list);
    s->list = NULL;
}

void ld_csr_release(ld_csr *dA)
{
    if (!dA)
        return;
    cl_mem *ms[] = {&dA->rowptr, &dA->col, &dA->val};
    for (size_t i = 0; i < 3; i++)
        if (*ms[i])
            clReleaseMemObject(*ms[i]);
    rows_release(&dA->all);
    rows_release(&dA->interior);
    rows_release(&dA->boundary);
    memset(dA, 0, sizeof *dA);
}

/* A row set: a range when the rows are consecutive, a list otherwise. */
static int rows_upload(ld_ctx *ld, const int32_t *rows, int64_t n, ld_rows_set *s, cls_error *err)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    if (n == 0 || rows[n - 1] - rows[0] == n - 1) {
        s->is_range = 1;
        s->first = n ? rows[0] : 0;
        return CLS_OK;
    }
    return ld_index_upload(ld, rows, n, &s->list, err);
}

int ld_csr_upload(ld_ctx *ld, const csr_matrix *A, const int32_t *interior, int64_t ninterior,
                  const int32_t *boundary, int64_t nboundary, la_spmv_variant variant,
                  double mean_row, ld_csr *dA, cls_error *err)
{
    memset(dA, 0, sizeof *dA);
    la_ctx *la = ld->la;
    if (A->nnz > INT32_MAX || A->nrows >= INT32_MAX || A->ncols > INT32_MAX)
        return cls_fail(err, CLS_EOTHER,
                        "part of %lld rows and %lld nonzeros exceeds the 32-bit indices of "
                        "the device kernels; use more parts",
                        (long long)A->nrows, (long long)A->nnz);
    if (ninterior + nboundary != A->nrows)
        return cls_fail(err, CLS_EOTHER,
                        "ld_csr_upload: %lld interior + %lld boundary rows "
                        "for a part of %lld rows",
                        (long long)ninterior, (long long)nboundary, (long long)A->nrows);
    size_t nr = (size_t)A->nrows, nnz = (size_t)A->nnz;
    const int64_t base = A->rowptr[0];
    cl_int *rp = malloc((nr + 1) * sizeof *rp);
    float *f = NULL;
    if (!rp)
        return cls_fail(err, CLS_EOTHER, "out of memory converting row pointers");
    for (size_t i = 0; i <= nr; i++)
        rp[i] = (cl_int)(A->rowptr[i] - base);
    if (la->prec == LA_FLOAT) {
        f = malloc((nnz ? nnz : 1) * sizeof *f);
        if (!f) {
            free(rp);
            return cls_fail(err, CLS_EOTHER, "out of memory converting values to float");
        }
        for (size_t j = 0; j < nnz; j++)
            f[j] = (float)A->val[j];
    }
    const cl_mem_flags fl = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
    int rc = make_buffer(ld, "row pointers", (nr + 1) * sizeof(cl_int), fl, rp, &dA->rowptr, err);
    if (!rc)
        rc =
            nnz ? make_buffer(ld, "column indices", nnz * sizeof(cl_int), fl, A->col, &dA->col, err)
                : make_buffer(ld, "column indices", sizeof(cl_int), CL_MEM_READ_ONLY, NULL,
                              &dA->col, err);
    if (!rc)
        rc = nnz ? make_buffer(ld, "values", nnz * la->elem, fl, f ? (void *)f : (void *)A->val,
                               &dA->val, err)
                 : make_buffer(ld, "values", la->elem, CL_MEM_READ_ONLY, NULL, &dA->val, err);
    free(rp);
    free(f);
    if (!rc)
        rc = rows_upload(ld, interior, ninterior, &dA->interior, err);
    if (!rc)
        rc = rows_upload(ld, boundary, nboundary, &dA->boundary, err);
    if (rc) {
        ld_csr_release(dA);
        return rc;
    }
    dA->all = (ld_rows_set){.n = A->nrows, .first = 0, .is_range = 1};
    dA->nrows = A->nrows;
    dA->ncols = A->ncols;
    dA->nnz = A->nnz;
    const double mean = mean_row;
    if (variant == LA_SPMV_AUTO)
        variant = !(la->ocl->dev.type & CL_DEVICE_TYPE_CPU) && mean >= LD_VECTOR_MIN_ROW
                      ? LA_SPMV_VECTOR
                      : LA_SPMV_SCALAR;
    if (variant == LA_SPMV_VECTOR) {
        size_t w = la->cfg.vector_width;
        if (!w) {
            w = 2;
            while ((double)w < mean && w < 32)
                w *= 2;
        }
        dA->vector_width = lai_min_sz(w, la->cfg.spmv_local_size);
        if (dA->vector_width < 2)
            dA->vector_width = 0;
    }
    return CLS_OK;
}

/* --------------------------------------------------------------- kernels */

int ld_spmv(ld_ctx *ld, const ld_csr *A, ld_rows which, const la_vec *x, la_vec *y, cls_error *err)
{
    const ld_rows_set *s = which == LD_ROWS_INTERIOR   ? &A->interior
                           : which == LD_ROWS_BOUNDARY ? &A->boundary
                                                       : &A->all;
    if (x->n != A->ncols || y->n < A->nrows)
        return cls_fail(err, CLS_EOTHER,
                        "ld_spmv: x has %lld entries for %lld columns, y %lld "
                        "for %lld rows",
                        (long long)x->n, (long long)A->ncols, (long long)y->n, (long long)A->nrows);
    if (s->n == 0)
        return CLS_OK;
    la_ctx *la = ld->la;
    cl_int n = (cl_int)s->n, first = (cl_int)s->first, use_list = !s->is_range;
    cl_mem list = s->list ? s->list : A->rowptr; /* any buffer: not read for a range */
    size_t ls = la->cfg.spmv_local_size;
    int rc;
    if (A->vector_width) {
        cl_int vw = (cl_int)A->vector_width;
        size_t rpg = ls / A->vector_width;
        size_t need = ((size_t)n + rpg - 1) / rpg;
        if ((rc = lai_set_args(ld->k_spmv_vector, "spmv_split_vector", err, 11, A_INT(n),
                               A_INT(first), A_INT(use_list), A_INT(vw), A_MEM(list),
                               A_MEM(A->rowptr), A_MEM(A->col), A_MEM(A->val), A_MEM(x->buf),
                               A_MEM(y->buf), A_LOCAL(ls * la->elem))))
            return rc;
        return launch(ld, ld->k_spmv_vector, "spmv_split_vector", lai_min_sz(need, la->ngroups), ls,
                      err);
    }
    if ((rc = lai_set_args(ld->k_spmv_scalar, "spmv_split_scalar", err, 9, A_INT(n), A_INT(first),
                           A_INT(use_list), A_MEM(list), A_MEM(A->rowptr), A_MEM(A->col),
                           A_MEM(A->val), A_MEM(x->buf), A_MEM(y->buf))))
        return rc;
    return launch(ld, ld->k_spmv_scalar, "spmv_split_scalar", groups_for(ld, n, ls), ls, err);
}

int ld_pack(ld_ctx *ld, cl_mem idx, int64_t n, const la_vec *x, cl_mem buf, cls_error *err)
{
    if (n <= 0)
        return CLS_OK;
    cl_int cn = (cl_int)n;
    int rc = lai_set_args(ld->k_pack, "halo_pack", err, 4, A_INT(cn), A_MEM(idx), A_MEM(x->buf),
                          A_MEM(buf));
    if (rc)
        return rc;
    size_t ls = ld->la->cfg.local_size;
    return launch(ld, ld->k_pack, "halo_pack", groups_for(ld, n, ls), ls, err);
}

/* the copy queue (ld_halo_mark): wanted on GPUs, whose copy engines run
 * beside the kernels; on CPU devices the copies are the same threads'
 * work. CLSOLVE_HALO_QUEUE=copy|main overrides (the tests run the copy
 * queue on PoCL). */
static int ld_copy_queue_wanted(const ocl_device *dev)
{
    const char *e = getenv("CLSOLVE_HALO_QUEUE");
    if (e && !strcmp(e, "copy"))
        return 1;
    if (e && !strcmp(e, "main"))
        return 0;
    return (dev->type & CL_DEVICE_TYPE_GPU) != 0;
}

int ld_halo_mark(ld_ctx *ld, cls_error *err)
{
    if (!ld->cq_tried) { /* created on first use: a solve without halos has none */
        ld->cq_tried = 1;
        if (ld_copy_queue_wanted(&ld->la->ocl->dev)) {
            cl_int st;
            ld->cq = clCreateCommandQueue(ld->la->ocl->context, ld->la->ocl->dev.id,
                                          CL_QUEUE_PROFILING_ENABLE, &st);
            if (st != CL_SUCCESS) /* the main queue does it all, as before */
                ld->cq = NULL;
        }
    }
    if (!ld->cq)
        return CLS_OK;
    if (ld->ev_mark)
        clReleaseEvent(ld->ev_mark);
    ld->ev_mark = NULL;
    cl_int st = clEnqueueMarkerWithWaitList(ld->la->ocl->queue, 0, NULL, &ld->ev_mark);
    if (st != CL_SUCCESS)
        ld->ev_mark = NULL;
    OCL_CHECK(err, st, "clEnqueueMarkerWithWaitList(halo)");
    OCL_CHECK(err, clFlush(ld->la->ocl->queue), "clFlush");
    return CLS_OK;
}

int ld_read_async(ld_ctx *ld, cl_mem buf, size_t offset, size_t bytes, void *host, cl_event *ev,
                  cls_error *err)
{
    *ev = NULL;
    if (bytes == 0)
        return CLS_OK;
    const int copy = ld->cq && ld->ev_mark; /* after the pack, beside the interior rows */
    cl_int st = clEnqueueReadBuffer(copy ? ld->cq : ld->la->ocl->queue, buf, CL_FALSE, offset,
                                    bytes, host, copy ? 1 : 0, copy ? &ld->ev_mark : NULL, ev);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(halo)");
    if (copy)
        OCL_CHECK(err, clFlush(ld->cq), "clFlush(copy queue)");
    lai_prof_share(ld->la, *ev);
    return CLS_OK;
}

int ld_write_async(ld_ctx *ld, cl_mem buf, size_t offset, size_t bytes, const void *host,
                   cl_event *ev, cls_error *err)
{
    *ev = NULL;
    if (bytes == 0)
        return CLS_OK;
    /* on the copy queue after the mark (the last readers of the ghosts ran
     * before it), while the interior rows still run; the main queue waits
     * for it before the boundary rows */
    const int copy = ld->cq && ld->ev_mark;
    cl_int st = clEnqueueWriteBuffer(copy ? ld->cq : ld->la->ocl->queue, buf, CL_FALSE, offset,
                                     bytes, host, copy ? 1 : 0, copy ? &ld->ev_mark : NULL, ev);
    OCL_CHECK(err, st, "clEnqueueWriteBuffer(halo)");
    if (copy) {
        OCL_CHECK(err, clFlush(ld->cq), "clFlush(copy queue)");
        OCL_CHECK(err, clEnqueueBarrierWithWaitList(ld->la->ocl->queue, 1, ev, NULL),
                  "clEnqueueBarrierWithWaitList(halo)");
    }
    lai_prof_share(ld->la, *ev);
    return CLS_OK;
}

int ld_event_wait(const ld_ctx *ld, cl_event *ev, cls_error *err)
{
    if (!*ev)
        return CLS_OK;
    cl_int st = ocl_event_wait(ld && ld->la ? &ld->la->ocl->dev : NULL, *ev);
    clReleaseEvent(*ev);
    *ev = NULL;
    if (st != CL_SUCCESS) /* the wait's error, or the command's own status */
        return cls_fail(err, CLS_EOTHER, "a device command failed: %s (%d)", ocl_errstr(st),
                        (int)st);
    return CLS_OK;
}

int ld_flush(ld_ctx *ld, cls_error *err)
{
    cl_int st = clFlush(ld->la->ocl->queue);
    OCL_CHECK(err, st, "clFlush");
    return CLS_OK;
}

int ld_pinned_alloc(ld_ctx *ld, size_t bytes, cl_mem *mem, void **ptr, cls_error *err)
{
    *ptr = NULL;
    *mem = NULL;
    if (bytes > ld->la->ocl->dev.max_alloc)
        return cls_fail(err, CLS_EOTHER,
                        "pinned staging buffer needs %.1f MB but device %s allows %.1f MB per "
                        "buffer; use more parts",
                        (double)bytes / 1048576.0, ld->la->ocl->dev.name,
                        (double)ld->la->ocl->dev.max_alloc / 1048576.0);
    return lai_pinned_alloc(ld->la, bytes, mem, ptr, err);
}

void ld_pinned_free(ld_ctx *ld, cl_mem mem, void *ptr)
{
    lai_pinned_free(ld->la, mem, ptr);
}

/* ------------------------------------------------------------ reductions */

/* Stage 2 and the non-blocking read of ncomp sums. */
static int reduce_begin(ld_ctx *ld, size_t groups, int ncomp, cls_error *err)
{
    if (ld->ev)
        return cls_fail(err, CLS_EOTHER, "ld: a reduction is already pending on %s",
                        ld->la->ocl->dev.name);
    la_ctx *la = ld->la;
    cl_int g = (cl_int)groups, nc = ncomp;
    size_t ls = la->cfg.local_size;
    int rc = lai_set_args(ld->k_reduce, "dreduce", err, 5, A_INT(g), A_INT(nc), A_MEM(ld->partial),
                          A_MEM(ld->result), A_LOCAL(6 * ls * ld->acc));
    if (rc || (rc = launch(ld, ld->k_reduce, "dreduce", 1, ls, err)))
        return rc;
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, ld->result, CL_FALSE, 0,
                                    ld->acc * 2 * (size_t)ncomp, ld_host(ld), 0, NULL, &ld->ev);
    if (st != CL_SUCCESS)
        ld->ev = NULL;
    OCL_CHECK(err, st, "clEnqueueReadBuffer(reduction)");
    lai_prof_share(la, ld->ev);
    ld->ncomp = ncomp;
    st = clFlush(la->ocl->queue);
    OCL_CHECK(err, st, "clFlush");
    return CLS_OK;
}

int ld_result_wait(ld_ctx *ld, double out[6], cls_error *err)
{
    for (int c = 0; c < 6; c++)
        out[c] = 0.0;
    if (!ld->ev)
        return cls_fail(err, CLS_EOTHER, "ld_result_wait: no reduction pending");
    int rc = ld_event_wait(ld, &ld->ev, err);
    if (rc)
        return rc;
    for (int c = 0; c < 2 * ld->ncomp; c++) {
        if (ld->acc == sizeof(double)) {
            double v;
            memcpy(&v, ld_host(ld) + (size_t)c * ld->acc, sizeof v);
            out[c] = v;
        } else {
            float v;
            memcpy(&v, ld_host(ld) + (size_t)c * ld->acc, sizeof v);
            out[c] = v;
        }
    }
    return CLS_OK;
}

static int same_len(const char *op, int64_t n, int64_t m, cls_error *err)
{
    if (n != m)
        return cls_fail(err, CLS_EOTHER, "%s: vector lengths differ (%lld vs %lld)", op,
                        (long long)n, (long long)m);
    return CLS_OK;
}

int ld_dots_begin(ld_ctx *ld, int ndots, const la_vec *const *x, const la_vec *const *y,
                  cls_error *err)
{
    if (ndots < 1 || ndots > 3)
        return cls_fail(err, CLS_EOTHER, "ld_dots_begin: %d dots (1..3)", ndots);
    const int64_t n = x[0]->n;
    int rc;
    for (int c = 0; c < ndots; c++)
        if ((rc = same_len("ld_dots_begin", n, x[c]->n, err)) ||
            (rc = same_len("ld_dots_begin", n, y[c]->n, err)))
            return rc;
    cl_mem xs[3], ys[3];
    for (int c = 0; c < 3; c++) {
        xs[c] = x[c < ndots ? c : 0]->buf;
        ys[c] = y[c < ndots ? c : 0]->buf;
    }
    size_t ls = ld->la->cfg.local_size, groups = groups_for(ld, n, ls);
    cl_int cn = (cl_int)n, nd = ndots;
    if ((rc = lai_set_args(ld->k_dots, "dots_partial", err, 10, A_INT(cn), A_INT(nd), A_MEM(xs[0]),
                           A_MEM(ys[0]), A_MEM(xs[1]), A_MEM(ys[1]), A_MEM(xs[2]), A_MEM(ys[2]),
                           A_MEM(ld->partial), A_LOCAL(6 * ls * ld->acc))) ||
        (rc = launch(ld, ld->k_dots, "dots_partial", groups, ls, err)))
        return rc;
    return reduce_begin(ld, groups, ndots, err);
}

int ld_pipecg_update_begin(ld_ctx *ld, double alpha, double beta, const la_vec *nv, const la_vec *m,
                           la_vec *w, la_vec *z, la_vec *q, la_vec *s, la_vec *p, la_vec *x,
                           la_vec *r, la_vec *u, cls_error *err)
{
    const int64_t n = r->n;
    const int jacobi = u != NULL;
    int rc;
    const la_vec *all[] = {nv, w, z, s, p, x};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if ((rc = same_len("ld_pipecg_update", n, all[i]->n, err)))
            return rc;
    if (jacobi && (!m || !q || (rc = same_len("ld_pipecg_update", n, m->n, err)) ||
                   (rc = same_len("ld_pipecg_update", n, q->n, err)) ||
                   (rc = same_len("ld_pipecg_update", n, u->n, err))))
        return cls_fail(err, CLS_EOTHER, "ld_pipecg_update: Jacobi needs m, q and u of %lld",
                        (long long)n);
    size_t ls = ld->la->cfg.local_size, groups = groups_for(ld, n, ls);
    cl_int cn = (cl_int)n;
    real_arg a = lai_mk_real(ld->la, alpha), b = lai_mk_real(ld->la, beta);
    if (jacobi)
        rc =
            lai_set_args(ld->k_pipecg_jacobi, "pipecg_update_jacobi", err, 15, A_INT(cn), A_REAL(a),
                         A_REAL(b), A_MEM(nv->buf), A_MEM(m->buf), A_MEM(w->buf), A_MEM(z->buf),
                         A_MEM(q->buf), A_MEM(s->buf), A_MEM(p->buf), A_MEM(x->buf), A_MEM(r->buf),
                         A_MEM(u->buf), A_MEM(ld->partial), A_LOCAL(6 * ls * ld->acc));
    else
        rc = lai_set_args(ld->k_pipecg, "pipecg_update", err, 12, A_INT(cn), A_REAL(a), A_REAL(b),
                          A_MEM(nv->buf), A_MEM(w->buf), A_MEM(z->buf), A_MEM(s->buf),
                          A_MEM(p->buf), A_MEM(x->buf), A_MEM(r->buf), A_MEM(ld->partial),
                          A_LOCAL(6 * ls * ld->acc));
    if (rc)
        return rc;
    if (jacobi)
        rc = launch(ld, ld->k_pipecg_jacobi, "pipecg_update_jacobi", groups, ls, err);
    else
        rc = launch(ld, ld->k_pipecg, "pipecg_update", groups, ls, err);
    if (rc)
        return rc;
    return reduce_begin(ld, groups, 3, err);
}
