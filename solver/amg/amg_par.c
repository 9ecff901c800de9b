/*
 * amg_par.c: the parallel loops of the AMG set-up, on common/parallel.h's
 * threads.
 *
 * amg_par_chunks cuts [0, n) into fixed chunks of `chunk` rows and hands
 * them out to the threads one at a time from an atomic counter (dynamic
 * scheduling): on a shared or loaded machine a thread that is descheduled
 * holds up one chunk, not a whole static range (on the 2-core build
 * machine, two static halves ran slower than one thread whenever a third
 * process was busy). The chunks depend only on n and `chunk`, and every
 * loop writes only its own chunk's rows or per-chunk outputs, so results
 * are the same bits on any number of threads.
 *
 * amg_par_dot sums fixed blocks of AMG_BLOCK entries and then the block
 * partials in order: the same value on any thread count.
 */
#include "amg_priv.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "../../common/parallel.h"

typedef struct {
    _Atomic int64_t next;
    int64_t n, chunk, nch;
    amg_chunk_fn fn;
    void *ctx;
} chunk_ctx;

static void chunk_worker(void *arg, int thread, int64_t b, int64_t e)
{
    chunk_ctx *c = arg;
    for (;;) {
        int64_t k = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
        if (k >= c->nch)
            break;
        int64_t lo = k * c->chunk, hi = lo + c->chunk < c->n ? lo + c->chunk : c->n;
        c->fn(c->ctx, thread, k, lo, hi);
    }
}

int64_t amg_nchunks(int64_t n, int64_t chunk)
{
    return n > 0 ? (n + chunk - 1) / chunk : 0;
}

int amg_nthreads(void)
{
    return cls_parallel_ranges(INT64_MAX / 2, 1);
}

void amg_par_chunks(int64_t n, int64_t chunk, amg_chunk_fn fn, void *ctx)
{
    if (chunk < 1)
        chunk = 1;
    int64_t nch = amg_nchunks(n, chunk);
    if (nch == 0)
        return;
    if (nch == 1) {
        fn(ctx, 0, 0, 0, n);
        return;
    }
    chunk_ctx c = {0, n, chunk, nch, fn, ctx};
    int t = cls_parallel_ranges(nch, 1); /* threads: at most one per chunk */
    cls_parallel_for(t, 1, chunk_worker, &c);
}

/* ---------------------------------------------------------------- offsets */

typedef struct {
    int64_t *ptr, *part;
    int pass;
} off_ctx;

static void off_chunk(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    off_ctx *c = arg;
    int64_t s = c->pass ? c->part[chunk] : 0;
    for (int64_t i = b; i < e; i++) {
        s += c->ptr[i + 1];
        if (c->pass)
            c->ptr[i + 1] = s;
    }
    if (!c->pass)
        c->part[chunk] = s;
}

int64_t amg_par_offsets(int64_t *ptr, int64_t n)
{
    int64_t nch = amg_nchunks(n, AMG_GRAIN);
    int64_t *part = malloc((size_t)(nch ? nch : 1) * sizeof *part);
    ptr[0] = 0;
    if (!part) { /* serial: the same sums */
        for (int64_t i = 0; i < n; i++)
            ptr[i + 1] += ptr[i];
        return ptr[n];
    }
    off_ctx c = {ptr, part, 0};
    amg_par_chunks(n, AMG_GRAIN, off_chunk, &c); /* chunk sums */
    int64_t s = 0;
    for (int64_t k = 0; k < nch; k++) { /* -> chunk offsets */
        int64_t v = part[k];
        part[k] = s;
        s += v;
    }
    c.pass = 1;
    amg_par_chunks(n, AMG_GRAIN, off_chunk, &c);
    free(part);
    return ptr[n];
}

/* ---------------------------------------------------------------- loops */

typedef struct {
    const csr_matrix *A;
    const double *x;
    double *y;
} spmv_ctx;

static void spmv_chunk(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    spmv_ctx *c = arg;
    const csr_matrix *A = c->A;
    for (int64_t i = b; i < e; i++) {
        double s = 0.0; /* y_i = sum_j a_ij x_j */
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            s += A->val[k] * c->x[A->col[k]];
        c->y[i] = s;
    }
}

void amg_par_spmv(const csr_matrix *A, const double *x, double *y)
{
    spmv_ctx c = {A, x, y};
    amg_par_chunks(A->nrows, AMG_GRAIN, spmv_chunk, &c);
}

typedef struct {
    const double *x, *y;
    double *part; /* one partial per block */
} dot_ctx;

static void dot_chunk(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    dot_ctx *c = arg;
    double s = 0.0;
    for (int64_t i = b; i < e; i++)
        s += c->x[i] * c->y[i];
    c->part[chunk] = s;
}

double amg_par_dot(const double *x, const double *y, int64_t n)
{
    int64_t nb = amg_nchunks(n, AMG_BLOCK);
    double stackp[256], *part = nb <= 256 ? stackp : malloc((size_t)nb * sizeof *part);
    double s = 0.0;
    if (!part) { /* no memory for partials: one serial pass, same block order */
        for (int64_t blk = 0; blk < nb; blk++) {
            double t = 0.0;
            for (int64_t i = blk * AMG_BLOCK; i < n && i < (blk + 1) * AMG_BLOCK; i++)
                t += x[i] * y[i];
            s += t;
        }
        return s;
    }
    dot_ctx c = {x, y, part};
    amg_par_chunks(n, AMG_BLOCK, dot_chunk, &c);
    for (int64_t blk = 0; blk < nb; blk++)
        s += part[blk];
    if (part != stackp)
        free(part);
    return s;
}

typedef struct {
    const csr_matrix *A;
    double *d;
} diag_ctx;

static void diag_chunk(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    diag_ctx *c = arg;
    for (int64_t i = b; i < e; i++) {
        c->d[i] = 0.0;
        for (int64_t k = c->A->rowptr[i]; k < c->A->rowptr[i + 1]; k++)
            if (c->A->col[k] == i) {
                c->d[i] = c->A->val[k];
                break;
            }
    }
}

void amg_par_diag(const csr_matrix *A, double *d)
{
    diag_ctx c = {A, d};
    amg_par_chunks(A->nrows, AMG_GRAIN, diag_chunk, &c);
}
