/*
 * la_vec.c: device vectors (la_vec_*), the per-device buffer pool that a
 * solve's set-up fills (la_pool_reserve) and host -> device copies: large
 * ones to a GPU through two page-locked staging buffers, because a copy
 * from pageable memory, or a CL_MEM_COPY_HOST_PTR buffer (a host shadow on
 * NVIDIA's OpenCL, moved at its first kernel), runs at a fraction of the
 * bus speed. Design of the layer: la_priv.h.
 */
#include "../common/parallel.h"
#include "../common/timer.h"
#include "../common/trace.h"
#include "la.h"
#include "la_priv.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunedb.h"

/* ------------------------------------------------------------------ vectors */

int lai_alloc_buffer(la_ctx *la, const char *what, size_t bytes, cl_mem_flags flags, void *host,
                     cl_mem *out, cls_error *err)
{
    const ocl_device *dev = &la->ocl->dev;
    if (bytes > dev->max_alloc)
        return cls_fail(err, CLS_EOTHER, "%s needs %.1f MB per buffer but device %s allows %.1f MB",
                        what, (double)bytes / 1048576.0, dev->name,
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

/* CLSOLVE_POISON=1: every vector handed out (newly allocated or from the
 * pool of reserved buffers) is first filled with NaN. Device memory is not
 * cleared between jobs, so a solve that read an entry it had not written
 * would see the last job's data; with poisoned buffers it sees NaN, and
 * the tests that run whole solves and daemon jobs this way fail. */
static int poison_enabled(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("CLSOLVE_POISON");
        on = v && *v && strcmp(v, "0") != 0;
    }
    return on;
}

static int vec_poison(la_ctx *la, la_vec *v, cls_error *err)
{
    if (!poison_enabled() || v->n == 0)
        return CLS_OK;
    return la_fill(la, NAN, v, err);
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
            return vec_poison(la, v, err);
        }
    int rc = lai_alloc_buffer(la, "vector", (size_t)(n ? n : 1) * la->elem, CL_MEM_READ_WRITE, NULL,
                              &v->buf, err);
    if (rc)
        return rc;
    v->n = n;
    return vec_poison(la, v, err);
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

void la_pool_clear(la_ctx *la)
{
    for (int i = 0; i < la->npool; i++)
        clReleaseMemObject(la->pool[i].buf);
    la->npool = 0;
}

int la_pool_reserve(la_ctx *la, int64_t n, int count, cls_error *err)
{
    for (int c = 0; c < count; c++) {
        if (la->npool >= LA_POOL_MAX)
            return cls_fail(err, CLS_EOTHER, "la_pool_reserve: more than %d buffers", LA_POOL_MAX);
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
    int rc = lai_write_device(la, v->buf, 0, n * la->elem, src, err);
    free(tmp);
    return rc;
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

/* CLSOLVE_STAGE=always stages every copy on any device, in pieces of
 * CLSOLVE_STAGE_PIECE bytes (at most LA_STAGE_BYTES): the tests run the
 * GPU's path on PoCL, many pieces on small vectors; =never never stages */
static struct {
    int mode; /* 1 always, -1 never, 0 as the device and size say */
    size_t piece;
} stage_env;
static pthread_once_t stage_env_once = PTHREAD_ONCE_INIT;

/* read once per process: every upload and download asks */
static void stage_env_read(void)
{
    const char *v = getenv("CLSOLVE_STAGE");
    stage_env.mode = !v ? 0 : !strcmp(v, "always") ? 1 : !strcmp(v, "never") ? -1 : 0;
    v = getenv("CLSOLVE_STAGE_PIECE");
    long long n = v ? atoll(v) : 0;
    stage_env.piece = n >= 64 && (size_t)n < LA_STAGE_BYTES ? (size_t)n / 8 * 8 : LA_STAGE_BYTES;
}

static int stage_mode(void)
{
    pthread_once(&stage_env_once, stage_env_read);
    return stage_env.mode;
}

static size_t stage_piece(void)
{
    pthread_once(&stage_env_once, stage_env_read);
    return stage_env.piece;
}

static int stage_use(const la_ctx *la, size_t bytes)
{
    int m = stage_mode();
    return m > 0 ||
           (m == 0 && (la->ocl->dev.type & CL_DEVICE_TYPE_GPU) && bytes > LA_STAGE_BYTES / 4);
}

static int stage_ensure(la_ctx *la, cls_error *err)
{
    for (int k = 0; k < 2; k++) {
        int rc;
        if (!la->stage[k] &&
            (rc = lai_pinned_alloc(la, LA_STAGE_BYTES, &la->stage[k], &la->stage_ptr[k], err)))
            return rc;
    }
    return CLS_OK;
}

/* The staged writer: pieces of dst, each filled by `fill` straight into a
 * page-locked buffer (a copy, or a format built in place: la_format.c's
 * SELL arrays), alternating between the two buffers so the host fills one
 * while the device drains the other. `next` chooses each piece: at most
 * `max` bytes from `done`; it returns the piece's length (0: a piece that
 * cannot fit, CLS_EOTHER). Blocking. */
int lai_write_staged(la_ctx *la, cl_mem dst, size_t off, size_t bytes, lai_piece_fn next,
                     lai_fill_fn fill, void *ctx, cls_error *err)
{
    int rc = stage_ensure(la, err);
    if (rc)
        return rc;
    const size_t piece = stage_piece();
    cls_trace("la: staged write");
    cl_int st = CL_SUCCESS;
    size_t done = 0;
    double t_wait = 0.0, t_fill = 0.0; /* the trace's: which side holds the other up */
    int pieces = 0;
    for (int k = 0; done < bytes && !rc; k ^= 1) {
        size_t len = next ? next(ctx, done, piece) : (bytes - done < piece ? bytes - done : piece);
        if (len == 0 || len > piece || len > bytes - done) {
            rc = cls_fail(err, CLS_EOTHER,
                          "a staged piece of %zu bytes does not fit the %zu-byte buffer", len,
                          piece);
            break;
        }
        double tw = cls_now();
        if (la->stage_ev[k]) { /* the device has drained this buffer's last piece */
            st = clWaitForEvents(1, &la->stage_ev[k]);
            clReleaseEvent(la->stage_ev[k]);
            la->stage_ev[k] = NULL;
            if (st != CL_SUCCESS) {
                rc = cls_fail(err, CLS_EOTHER, "clWaitForEvents(staging): %s", ocl_errstr(st));
                break;
            }
        }
        double tf = cls_now();
        fill(ctx, la->stage_ptr[k], done, len);
        t_wait += tf - tw;
        t_fill += cls_now() - tf;
        pieces++;
        st = clEnqueueWriteBuffer(la->ocl->queue, dst, CL_FALSE, off + done, len, la->stage_ptr[k],
                                  0, NULL, &la->stage_ev[k]);
        if (st != CL_SUCCESS) {
            la->stage_ev[k] = NULL;
            rc = cls_fail(err, CLS_EOTHER, "clEnqueueWriteBuffer(staged): %s", ocl_errstr(st));
            break;
        }
        clFlush(la->ocl->queue);
        done += len;
    }
    const double tl = cls_now();
    for (int k = 0; k < 2; k++) /* every piece in flight is waited for, failed or not */
        if (la->stage_ev[k]) {
            st = clWaitForEvents(1, &la->stage_ev[k]);
            clReleaseEvent(la->stage_ev[k]);
            la->stage_ev[k] = NULL;
            if (st != CL_SUCCESS && !rc)
                rc = cls_fail(err, CLS_EOTHER, "clWaitForEvents(staging): %s", ocl_errstr(st));
        }
    if (cls_trace_on()) {
        char m[160];
        snprintf(
            m, sizeof m,
            "la: staged write done: %d pieces, %.1f MB, fill %.1f ms, wait %.1f ms, last %.1f ms",
            pieces, (double)bytes / 1e6, 1e3 * t_fill, 1e3 * t_wait, 1e3 * (cls_now() - tl));
        cls_trace(m);
    }
    return rc;
}

int la_stage_prepare(la_ctx *la, size_t bytes, cls_error *err)
{
    if (!stage_use(la, bytes))
        return CLS_OK;
    int rc = stage_ensure(la, err);
    if (!rc)
        cls_trace("la: staging made");
    return rc;
}

int lai_stage_in_use(const la_ctx *la, size_t bytes)
{
    return stage_use(la, bytes);
}

size_t lai_stage_piece(void)
{
    return stage_piece();
}

static void copy_fill(void *ctx, void *stage, size_t done, size_t len)
{
    /* on every core: one copies into page-locked memory at 6-10 GB/s,
     * below what the bus drains (25-50 GB/s) */
    cls_parallel_memcpy(stage, (const unsigned char *)ctx + done, len);
}

/* dst[off, off + bytes) = src, blocking: staged on a GPU, direct otherwise */
int lai_write_device(la_ctx *la, cl_mem dst, size_t off, size_t bytes, const void *src,
                     cls_error *err)
{
    if (!stage_use(la, bytes)) {
        cl_int st =
            clEnqueueWriteBuffer(la->ocl->queue, dst, CL_TRUE, off, bytes, src, 0, NULL, NULL);
        OCL_CHECK(err, st, "clEnqueueWriteBuffer");
        return CLS_OK;
    }
    return lai_write_staged(la, dst, off, bytes, NULL, copy_fill, (void *)src, err);
}

/* host = src[off, off + bytes), blocking: staged on a GPU, direct otherwise.
 * The twin of lai_write_device: the device fills one page-locked buffer
 * while the host copies the other out on every core (a pageable read of
 * a 2 GB x took 1.7 s of a 2-rank gather at 5.1e8 rows on 2 H200s) */
/* lai_read_device's reads: the next piece of the range into buffer k */
typedef struct staged_read {
    la_ctx *la;
    cl_mem src;
    size_t off, bytes, piece, next;
    size_t at[2], len[2];
    cl_event ev[2];
} staged_read;

static cl_int read_piece(staged_read *r, int k)
{
    r->len[k] = r->bytes - r->next < r->piece ? r->bytes - r->next : r->piece;
    r->at[k] = r->next;
    cl_int st = clEnqueueReadBuffer(r->la->ocl->queue, r->src, CL_FALSE, r->off + r->next,
                                    r->len[k], r->la->stage_ptr[k], 0, NULL, &r->ev[k]);
    if (st != CL_SUCCESS)
        r->ev[k] = NULL;
    else
        r->next += r->len[k];
    return st;
}

int lai_read_device(la_ctx *la, cl_mem src, size_t off, size_t bytes, void *host, cls_error *err)
{
    cl_int st;
    if (!stage_use(la, bytes)) {
        st = clEnqueueReadBuffer(la->ocl->queue, src, CL_TRUE, off, bytes, host, 0, NULL, NULL);
        OCL_CHECK(err, st, "clEnqueueReadBuffer");
        return CLS_OK;
    }
    int rc = stage_ensure(la, err);
    if (rc)
        return rc;
    cls_trace("la: staged read");
    staged_read r = {.la = la, .src = src, .off = off, .bytes = bytes, .piece = stage_piece()};
    /* two reads in flight; each is copied out when it completes and its
     * buffer takes the next piece */
    st = CL_SUCCESS;
    for (int k = 0; k < 2 && r.next < bytes && st == CL_SUCCESS; k++)
        st = read_piece(&r, k);
    clFlush(la->ocl->queue);
    const char *what = "clEnqueueReadBuffer(staged)";
    for (int k = 0; st == CL_SUCCESS && r.ev[k]; k ^= 1) {
        st = clWaitForEvents(1, &r.ev[k]);
        clReleaseEvent(r.ev[k]);
        r.ev[k] = NULL;
        if (st != CL_SUCCESS) {
            what = "clWaitForEvents(staged read)";
            break;
        }
        cls_parallel_memcpy((unsigned char *)host + r.at[k], la->stage_ptr[k], r.len[k]);
        if (r.next < bytes) {
            st = read_piece(&r, k);
            clFlush(la->ocl->queue);
        }
    }
    /* after a failure, a read still in flight ends before its buffer is
     * used again */
    for (int k = 0; k < 2; k++)
        if (r.ev[k]) {
            clWaitForEvents(1, &r.ev[k]);
            clReleaseEvent(r.ev[k]);
        }
    OCL_CHECK(err, st, what);
    return CLS_OK;
}

int la_vec_download(la_ctx *la, const la_vec *v, double *host, cls_error *err)
{
    if (v->n == 0)
        return CLS_OK;
    size_t n = (size_t)v->n;
    if (la->prec != LA_FLOAT)
        return lai_read_device(la, v->buf, 0, n * la->elem, host, err);
    float *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return cls_fail(err, CLS_EOTHER, "out of memory converting a vector from float");
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, v->buf, CL_TRUE, 0, n * sizeof *tmp, tmp, 0,
                                    NULL, NULL);
    if (st == CL_SUCCESS)
        for (size_t i = 0; i < n; i++)
            host[i] = tmp[i];
    free(tmp);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(vector)");
    return CLS_OK;
}

int lai_upload_buf(la_ctx *la, const char *what, size_t bytes, const void *host, cl_mem *out,
                   cls_error *err)
{
    int rc = lai_alloc_buffer(la, what, bytes ? bytes : 1, CL_MEM_READ_ONLY, NULL, out, err);
    if (rc || !bytes)
        return rc;
    rc = lai_write_device(la, *out, 0, bytes, host, err);
    if (rc) {
        clReleaseMemObject(*out);
        *out = NULL;
    }
    return rc;
}

/* values converted to melem bytes (NULL + no copy needed when double) */
void *lai_convert_vals(const double *v, int64_t n, size_t melem)
{
    if (melem == sizeof(double))
        return NULL;
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    if (f)
        for (int64_t j = 0; j < n; j++)
            f[j] = (float)v[j];
    return f;
}

/* alpha and beta of a host-scalar CG loop (la_cgp, la_pcm) into sc[0..1]
 * in the accumulator type, without blocking: the previous write has
 * completed (the sums read since came after it on this in-order queue), so
 * the host copy (scal or scalf, by the type) may be overwritten */
int lai_write_scalars(la_ctx *la, cl_mem sc, double alpha, double beta, double scal[2],
                      float scalf[2], cls_error *err)
{
    size_t as = la_acc_size(la);
    const void *src;
    if (as == sizeof(double)) {
        scal[0] = alpha;
        scal[1] = beta;
        src = scal;
    } else {
        scalf[0] = (float)alpha;
        scalf[1] = (float)beta;
        src = scalf;
    }
    cl_event ev = NULL;
    cl_int st = clEnqueueWriteBuffer(la->ocl->queue, sc, CL_FALSE, 0, 2 * as, src, 0, NULL,
                                     la->prof ? &ev : NULL);
    OCL_CHECK(err, st, "clEnqueueWriteBuffer(alpha, beta)");
    lai_prof_take(la, ev);
    return CLS_OK;
}

int lai_pinned_alloc(la_ctx *la, size_t bytes, cl_mem *mem, void **ptr, cls_error *err)
{
    *ptr = NULL;
    cl_int st;
    *mem = clCreateBuffer(la->ocl->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                          bytes ? bytes : 1, NULL, &st);
    if (st != CL_SUCCESS) {
        *mem = NULL;
        OCL_CHECK(err, st, "clCreateBuffer(pinned staging)");
    }
    *ptr = clEnqueueMapBuffer(la->ocl->queue, *mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                              bytes ? bytes : 1, 0, NULL, NULL, &st);
    if (st != CL_SUCCESS) {
        clReleaseMemObject(*mem);
        *mem = NULL;
        *ptr = NULL;
        OCL_CHECK(err, st, "clEnqueueMapBuffer(staging)");
    }
    return CLS_OK;
}

void lai_pinned_free(la_ctx *la, cl_mem mem, void *ptr)
{
    if (!mem)
        return;
    if (ptr) {
        cl_event ev = NULL;
        if (clEnqueueUnmapMemObject(la->ocl->queue, mem, ptr, 0, NULL, &ev) == CL_SUCCESS && ev) {
            clWaitForEvents(1, &ev);
            clReleaseEvent(ev);
        }
    }
    clReleaseMemObject(mem);
}

int lai_pinned_small(la_ctx *la, size_t bytes, cl_mem *mem, void **ptr)
{
    const char *e = getenv("CLSOLVE_PAGEABLE_SUMS");
    cls_error ignored; /* no pinned memory: the pageable fallback works, slower */
    return !(e && !strcmp(e, "1")) && lai_pinned_alloc(la, bytes, mem, ptr, &ignored) == CLS_OK;
}

void lai_iohost_init(la_ctx *la, lai_iohost *io)
{
    memset(io, 0, sizeof *io);
    io->host = io->own.host;
    io->scal = io->own.scal;
    io->scalf = io->own.scalf;
    if (!lai_pinned_small(la, 128, &io->pin, &io->pin_ptr))
        return;
    unsigned char *b = io->pin_ptr;
    io->host = b;                               /* 64 bytes */
    io->scal = (double *)(void *)(b + 64);      /* 16 */
    io->scalf = (float *)(void *)(b + 64 + 16); /* 8 */
}

void lai_iohost_free(la_ctx *la, lai_iohost *io)
{
    lai_pinned_free(la, io->pin, io->pin_ptr);
    memset(io, 0, sizeof *io);
}

/* the eight sums of a part (cgf_fold's res) read back without blocking:
 * the K-part loops (la_cgp, la_pcm) wait for them only after every part
 * has started its own */
int lai_sums_read(la_ctx *la, cl_mem res, unsigned char *host, cl_event *ev, const char *who,
                  cls_error *err)
{
    if (*ev)
        return cls_fail(err, CLS_EOTHER, "%s: a read of the sums is already pending", who);
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, res, CL_FALSE, 0, 8 * la_acc_size(la), host, 0,
                                    NULL, ev);
    if (st != CL_SUCCESS) {
        *ev = NULL;
        OCL_CHECK(err, st, "clEnqueueReadBuffer(part sums)");
    }
    lai_prof_share(la, *ev);
    OCL_CHECK(err, clFlush(la->ocl->queue), "clFlush");
    return CLS_OK;
}

int lai_sums_wait(la_ctx *la, const unsigned char *host, cl_event *ev, double out[8],
                  const char *who, cls_error *err)
{
    if (!*ev)
        return cls_fail(err, CLS_EOTHER, "%s: no read of the sums pending", who);
    cl_int st = ocl_event_wait(&la->ocl->dev, *ev); /* polls on a GPU (ocl.h says why) */
    clReleaseEvent(*ev);
    *ev = NULL;
    OCL_CHECK(err, st, "clWaitForEvents(part sums)");
    lai_acc_to_double(la, host, 8, out);
    return CLS_OK;
}

void lai_sums_discard(cl_event *ev)
{
    if (*ev) {
        clWaitForEvents(1, ev);
        clReleaseEvent(*ev);
        *ev = NULL;
    }
}

/* y = a, every entry (a vector op: the pool and the uploads use it). On a
 * CPU device the runtime's own fill (a memset-like loop in host memory):
 * PoCL compiles a kernel at its first launch with each work-group size
 * (0.1-0.5 s with empty caches), and a solve on the native CPU loops
 * launches no other kernel (tests/cli/test_native_nobuild.sh). */
int la_fill(la_ctx *la, double a, la_vec *y, cls_error *err)
{
    int rc;
    if (y->n == 0)
        return CLS_OK;
    cl_int n = (cl_int)y->n;
    real_arg ra = lai_mk_real(la, a);
    if (la->ocl->dev.type & CL_DEVICE_TYPE_CPU) {
        const void *pat =
            ra.size == sizeof(cl_double) ? (const void *)&ra.u.d : (const void *)&ra.u.f;
        OCL_CHECK(err,
                  clEnqueueFillBuffer(la->ocl->queue, y->buf, pat, ra.size, 0,
                                      (size_t)y->n * ra.size, 0, NULL, NULL),
                  "clEnqueueFillBuffer(fill)");
        return CLS_OK;
    }
    if ((rc = lai_set_args(la->k_fill, "fill", err, 3, A_INT(n), A_REAL(ra), A_MEM(y->buf))))
        return rc;
    return lai_launch(la, la->k_fill, "fill", lai_groups_for(la, y->n), la->cfg.local_size, err);
}

/* every queued command done */
int la_finish(la_ctx *la, cls_error *err)
{
    OCL_CHECK(err, clFinish(la->ocl->queue), "clFinish");
    return CLS_OK;
}
