/*
 * la_format.c: the SpMV storage formats and la_csr_upload. A matrix is
 * classified from its row statistics (la_classify), a format chosen from
 * them and the tuning database (choose_format), built on the host (SELL-C-
 * sigma and BCSR in parallel over chunks and block rows where they are
 * independent) and uploaded through la_vec.c's staged copies; on a GPU,
 * SELL is made on the device from CSR's arrays copied up as they are
 * (sell_device_build: a copy keeps up with the bus, the host's fill of the
 * padded layout did not). Every build
 * reads its rows through a fmt_src (below): a whole matrix, or a view of
 * one (la_csr_upload_view), which is how a part goes up in device order
 * without a renumbered copy. Design of the layer: la_priv.h; the formats'
 * kernels: spmv_*.cl.
 */
#include "../common/parallel.h"
#include "../common/trace.h"
#include "la.h"
#include "la_priv.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunedb.h"

/* --------------------------------------------------------------- sources */

/* What every builder below reads: the rows of a host CSR matrix, in order
 * or picked through a row map, with the columns below nmap renumbered
 * (la_csr_view; a part's device order: interior rows first). The formats
 * are built from it directly: a device-order copy of a part (as large as
 * the part's CSR, the whole of what held the host's peak above 2x a
 * part's CSR at 2.6e8 rows per rank) is never made. Each row keeps its
 * entries in their stored order, so the device sums a row as it would from
 * the copy, bit for bit. */
typedef struct fmt_src {
    const int64_t *rowptr; /* A's; its col and val count from base = rowptr[0] */
    const int32_t *col;
    const double *val;
    int64_t base;
    const int32_t *rows; /* row i is A's row rows[i]; NULL: first + i */
    int64_t first, nrows, ncols, nnz;
    const int32_t *cmap; /* column c < nmap reads cmap[c]; NULL: none */
    int64_t nmap;
} fmt_src;

static inline int64_t src_row(const fmt_src *s, int64_t i)
{
    return s->rows ? s->rows[i] : s->first + i;
}

/* where row i's entries start in col and val */
static inline int64_t src_beg(const fmt_src *s, int64_t i)
{
    return s->rowptr[src_row(s, i)] - s->base;
}

static inline int64_t src_len(const fmt_src *s, int64_t i)
{
    const int64_t r = src_row(s, i);
    return s->rowptr[r + 1] - s->rowptr[r];
}

static inline int32_t src_col(const fmt_src *s, int64_t k)
{
    const int32_t c = s->col[k];
    return s->cmap && c < s->nmap ? s->cmap[c] : c;
}

/* the rows, columns and values are A's own, in one block: col and val
 * can go to the device as they are */
static int src_plain(const fmt_src *s)
{
    return !s->rows && !s->cmap;
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

const char *lai_kernel_of(la_spmv_variant v)
{
    switch (v) {
    case LA_SPMV_VECTOR:
        return "spmv_csr_vector";
    case LA_SPMV_ADAPTIVE:
        return "spmv_adaptive";
    case LA_SPMV_SELL:
        return "spmv_sell";
    case LA_SPMV_BCSR:
        return "spmv_bcsr";
    default:
        return "spmv_csr_scalar";
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

/* The k x k blocks of the first nbr block rows. mark: one int32 per block
 * column, all 0 (calloc: pages nobody touches are never written, so a
 * sample of a few block rows costs only its own columns' pages); it holds
 * the last block row + 1 that saw each block column. */
static int64_t bcsr_count_blocks(const fmt_src *A, int64_t k, int64_t nbr, int32_t *mark)
{
    int64_t nb = 0;
    for (int64_t br = 0; br < nbr; br++)
        for (int64_t i = br * k; i < (br + 1) * k; i++)
            for (int64_t j = src_beg(A, i), e = j + src_len(A, i); j < e; j++) {
                int32_t bc = (int32_t)(src_col(A, j) / k);
                if (mark[bc] != (int32_t)(br + 1)) {
                    mark[bc] = (int32_t)(br + 1);
                    nb++;
                }
            }
    return nb;
}

/* bcsr_count_blocks on fresh zeroed marks (-1: out of memory) */
static int64_t bcsr_count_fresh(const fmt_src *A, int64_t k, int64_t nbr)
{
    int32_t *mark = calloc((size_t)(A->ncols / k + 1), sizeof *mark);
    if (!mark)
        return -1;
    int64_t nb = bcsr_count_blocks(A, k, nbr, mark);
    free(mark);
    return nb;
}

static void bcsr_detect(const fmt_src *A, size_t melem, size_t *kout, double *fill_out)
{
    *kout = 0;
    *fill_out = 0;
    if (A->nnz == 0 || A->nrows < 2)
        return;
    double csr_bytes = (double)A->nnz * (double)(melem + 4) + 4.0 * (double)(A->nrows + 1);
    double best = 0.9 * csr_bytes;
    /* fresh marks for each count: setting a mark per block column for each
     * k (three passes over 8 M of them at poisson3d 256) cost more than the
     * samples that reject k */
    for (int64_t k = BCSR_MAX_K; k >= 2; k--) {
        if (A->nrows % k || A->ncols % k)
            continue;
        int64_t nbr = A->nrows / k;
        int64_t sbr = nbr < 2048 ? nbr : 2048;
        int64_t snnz = 0;
        for (int64_t i = 0; i < sbr * k; i++)
            snnz += src_len(A, i);
        int64_t sb = bcsr_count_fresh(A, k, sbr);
        if (sb < 0 || (snnz > 0 && (double)(sb * k * k) > 1.5 * (double)snnz))
            continue;
        int64_t nb = bcsr_count_fresh(A, k, nbr);
        if (nb < 0)
            continue;
        double fill = (double)(nb * k * k) / (double)A->nnz;
        double bytes = (double)nb * (double)(k * k) * (double)melem + 4.0 * (double)nb +
                       4.0 * (double)(nbr + 1);
        if (fill <= 1.25 && bytes < best && nb * k * k < INT32_MAX) {
            best = bytes;
            *kout = (size_t)k;
            *fill_out = fill;
        }
    }
}

/* The widest row of each chunk of C rows (rows in order, or through perm),
 * over the host's cores: SELL's padding is a chunk's width times C. */
typedef struct chunk_ctx {
    const fmt_src *A;
    const int32_t *perm; /* NULL: rows in order */
    int64_t C;
    int64_t *width; /* per chunk, or NULL */
    int64_t *sum;   /* per range: the widths' sum */
} chunk_ctx;

static void chunk_widths(void *arg, int range, int64_t c0, int64_t c1)
{
    const chunk_ctx *x = arg;
    const int64_t n = x->A->nrows;
    int64_t s = 0;
    for (int64_t c = c0; c < c1; c++) {
        int64_t w = 0;
        for (int64_t r = c * x->C; r < (c + 1) * x->C && r < n; r++) {
            int64_t len = src_len(x->A, x->perm ? x->perm[r] : r);
            w = len > w ? len : w;
        }
        if (x->width)
            x->width[c] = w;
        s += w;
    }
    x->sum[range] = s;
}

/* Sum of the chunks' widths (exact: integers, whatever the thread count). */
static int64_t chunk_width_sum(const fmt_src *A, const int32_t *perm, int64_t C, int64_t *width)
{
    const int64_t nchunks = (A->nrows + C - 1) / C;
    if (nchunks == 0)
        return 0;
    int t = cls_parallel_ranges(nchunks, 4096);
    int64_t *sum = calloc((size_t)t, sizeof *sum), total = 0;
    chunk_ctx x = {A, perm, C, width, sum};
    if (!sum) { /* one range, on this thread */
        int64_t one = 0;
        x.sum = &one;
        chunk_widths(&x, 0, 0, nchunks);
        return one;
    }
    cls_parallel_for(nchunks, 4096, chunk_widths, &x);
    for (int q = 0; q < t; q++)
        total += sum[q];
    free(sum);
    return total;
}

static double sell_fill_of(const fmt_src *A, size_t C)
{
    if (A->nnz == 0)
        return 1.0;
    return (double)chunk_width_sum(A, NULL, (int64_t)C, NULL) * (double)C / (double)A->nnz;
}

/* Row-length statistics over the host's cores, in integers (exact, so
 * the same on any thread count). */
typedef struct rowstat {
    int64_t sum, sq, max, empty;
} rowstat;

typedef struct rowstat_ctx {
    const fmt_src *A;
    rowstat *r; /* per range */
} rowstat_ctx;

static void rowstat_range(void *arg, int range, int64_t i0, int64_t i1)
{
    const rowstat_ctx *x = arg;
    rowstat s = {0, 0, 0, 0};
    for (int64_t i = i0; i < i1; i++) {
        int64_t len = src_len(x->A, i);
        s.sum += len;
        s.sq += len * len;
        s.max = len > s.max ? len : s.max;
        s.empty += len == 0;
    }
    x->r[range] = s;
}

/* A view as a source. A mapped view's entry count is unknown (-1) until
 * the row statistics of upload_src, which walk its row map anyway, sum it:
 * one pass over the rows instead of two. */
static void src_of_view(const la_csr_view *v, fmt_src *s)
{
    const csr_matrix *A = v->A;
    /* a whole matrix counts as its nnz says (la_csr_upload refuses one
     * beyond 32-bit indices before it reads an array) */
    const int whole = !v->rows && v->first == 0 && v->nrows == A->nrows;
    *s = (fmt_src){.rowptr = A->rowptr,
                   .col = A->col,
                   .val = A->val,
                   .base = A->rowptr ? A->rowptr[0] : 0,
                   .rows = v->rows,
                   .first = v->first,
                   .nrows = v->nrows,
                   .ncols = A->ncols,
                   .nnz = whole ? A->nnz : 0,
                   .cmap = v->cmap,
                   .nmap = v->cmap ? v->nmap : 0};
    if (whole)
        return;
    if (!v->rows)
        s->nnz = v->nrows ? A->rowptr[v->first + v->nrows] - A->rowptr[v->first] : 0;
    else if (v->nrows > 0)
        s->nnz = -1;
}

static void src_of_csr(const csr_matrix *A, fmt_src *s)
{
    la_csr_view v = {A, NULL, 0, A->nrows, NULL, 0};
    src_of_view(&v, s);
}

/* the row statistics of every row, over the host's cores (one range on
 * this thread when there is no memory for more) */
static rowstat src_rowstats(const fmt_src *A)
{
    rowstat tot = {0, 0, 0, 0};
    const int64_t grain = 65536;
    int t = A->nrows > 0 ? cls_parallel_ranges(A->nrows, grain) : 0;
    rowstat *rs = t ? calloc((size_t)t, sizeof *rs) : NULL;
    rowstat one;
    rowstat_ctx rx = {A, rs ? rs : &one};
    if (rs) {
        cls_parallel_for(A->nrows, grain, rowstat_range, &rx);
    } else if (A->nrows > 0) {
        rowstat_range(&rx, 0, 0, A->nrows);
        t = 1;
    }
    for (int q = 0; q < t; q++) {
        tot.sum += rx.r[q].sum;
        tot.sq += rx.r[q].sq;
        tot.max = rx.r[q].max > tot.max ? rx.r[q].max : tot.max;
        tot.empty += rx.r[q].empty;
    }
    free(rs);
    return tot;
}

/* the class of A from its row statistics st (src_rowstats) */
static void classify_src(const la_ctx *la, const fmt_src *A, const rowstat *st, la_matrix_class *mc)
{
    memset(mc, 0, sizeof *mc);
    const double sum = (double)st->sum, sq = (double)st->sq;
    mc->max_row = st->max;
    mc->empty_rows = st->empty;
    double n = A->nrows > 0 ? (double)A->nrows : 1.0;
    mc->mean_row = sum / n;
    double var = sq / n - mc->mean_row * mc->mean_row;
    mc->cv_row = mc->mean_row > 0 ? sqrt(var > 0 ? var : 0) / mc->mean_row : 0;
    bcsr_detect(A, la->melem, &mc->block_k, &mc->block_fill);
    mc->sell_fill_c = la->cfg.sell_c ? la->cfg.sell_c : 32;
    mc->sell_fill = sell_fill_of(A, mc->sell_fill_c);
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

void la_classify(const la_ctx *la, const csr_matrix *A, la_matrix_class *mc)
{
    fmt_src s;
    src_of_csr(A, &s);
    const rowstat st = src_rowstats(&s);
    classify_src(la, &s, &st, mc);
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
        const tunedb_entry *e =
            tunedb_find(db, "format", lai_prec_key(la->prec), mc->size_class, mc->shape, &exact);
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

size_t la_auto_vector_width(double mean_row)
{
    size_t w = 2;
    while ((double)w < mean_row && w < 32)
        w *= 2;
    return w;
}

/* CSR-Adaptive row blocks: consecutive rows with at most `budget` entries
 * and at most `budget` rows together, or one longer row alone. */
static int adaptive_blocks(const fmt_src *A, int64_t budget, int32_t **out, int64_t *nb,
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
        if (src_len(A, r) > budget)
            r++;
        else
            while (r < A->nrows && r - start < budget && sum + src_len(A, r) <= budget) {
                sum += src_len(A, r);
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
    int32_t *cs, *rows, *col; /* rows: device row -> row of A (the identity when !sorted) */
    void *val;
    int64_t nchunks, stored;
    int sorted; /* sigma > 1: the device needs the permutation */
} sell_host;

static void sell_free(sell_host *s)
{
    free(s->cs);
    free(s->rows);
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
    const fmt_src *A;
    const int32_t *cs, *perm;
    int32_t *col;         /* entry k at col[k - kbase], or NULL */
    void *val;            /* the same for the values, or NULL */
    int64_t C, kbase, c0; /* c0: the first chunk of the range (ranges count from it) */
    size_t melem;
} sell_fill_ctx;

/* chunks [c0, c1) (+ f->c0) of the SELL arrays, column-major, padded.
 * The output is written in its own order (slot j of the chunk's C rows,
 * then slot j + 1), each array in a loop of its own: it is page-locked
 * staging that the host fills while the device drains the other buffer,
 * and this fill is the upload's whole cost (on an H200 host the bus
 * waited 0.1 ms of 100; row by row, both arrays in one loop, the columns
 * took 38-45 ms and the values 52-59 ms of poisson3d 256 on 16 cores). A
 * row's entries are read C apart from lines the first slot brought in. A
 * chunk's rows go SELL_FILL_ROWS at a time (any C: a tuned overlay may
 * exceed la_init's bound). */
#define SELL_FILL_ROWS 256

static void sell_fill_chunks(void *arg, int range, int64_t c0, int64_t c1)
{
    (void)range;
    const sell_fill_ctx *f = arg;
    const fmt_src *A = f->A;
    const int64_t C = f->C, n = A->nrows;
    int64_t beg[SELL_FILL_ROWS], len[SELL_FILL_ROWS];
    int32_t pad[SELL_FILL_ROWS];
    for (int64_t c = f->c0 + c0; c < f->c0 + c1; c++) {
        const int64_t w = (f->cs[c + 1] - f->cs[c]) / C;
        const int64_t m = n - c * C < C ? n - c * C : C; /* the chunk's rows */
        for (int64_t i0 = 0; i0 < C; i0 += SELL_FILL_ROWS) {
            const int64_t r = C - i0 < SELL_FILL_ROWS ? C - i0 : SELL_FILL_ROWS;
            const int64_t k0 = f->cs[c] - f->kbase + i0; /* slot 0 of row i0 */
            for (int64_t i = 0; i < r; i++) {
                beg[i] = i0 + i < m ? src_beg(A, f->perm[c * C + i0 + i]) : 0;
                len[i] = i0 + i < m ? src_len(A, f->perm[c * C + i0 + i]) : 0;
            }
            if (f->col) { /* a padded slot repeats the row's last column (or 0) */
                int32_t *out = f->col + k0;
                for (int64_t i = 0; i < r; i++)
                    pad[i] = len[i] ? src_col(A, beg[i] + len[i] - 1) : 0;
                if (!A->cmap)
                    for (int64_t j = 0; j < w; j++, out += C)
                        for (int64_t i = 0; i < r; i++)
                            out[i] = j < len[i] ? A->col[beg[i] + j] : pad[i];
                else
                    for (int64_t j = 0; j < w; j++, out += C)
                        for (int64_t i = 0; i < r; i++)
                            out[i] = j < len[i] ? src_col(A, beg[i] + j) : pad[i];
            }
            if (f->val && f->melem == sizeof(double)) {
                double *out = (double *)f->val + k0;
                for (int64_t j = 0; j < w; j++, out += C)
                    for (int64_t i = 0; i < r; i++)
                        out[i] = j < len[i] ? A->val[beg[i] + j] : 0.0;
            } else if (f->val) {
                float *out = (float *)f->val + k0;
                for (int64_t j = 0; j < w; j++, out += C)
                    for (int64_t i = 0; i < r; i++)
                        out[i] = j < len[i] ? (float)A->val[beg[i] + j] : 0.0f;
            }
        }
    }
}

/* SELL's row order: within each window of sigma rows, by decreasing
 * length (sell_key_cmp); sigma 1 keeps the rows in order. Windows are
 * independent: a range of them per thread, each with its own keys. */
typedef struct perm_ctx {
    const fmt_src *A;
    int32_t *perm;
    int64_t sigma;
    atomic_int failed;
} perm_ctx;

static void perm_windows(void *arg, int range, int64_t w0, int64_t w1)
{
    (void)range;
    perm_ctx *x = arg;
    const int64_t n = x->A->nrows;
    if (x->sigma <= 1) {
        for (int64_t i = w0; i < w1; i++)
            x->perm[i] = (int32_t)i;
        return;
    }
    sell_key *keys = malloc((size_t)x->sigma * sizeof *keys);
    if (!keys) {
        atomic_store(&x->failed, 1);
        return;
    }
    for (int64_t w = w0; w < w1; w++) {
        int64_t r0 = w * x->sigma, m = n - r0 < x->sigma ? n - r0 : x->sigma;
        for (int64_t i = 0; i < m; i++) {
            keys[i].row = r0 + i;
            keys[i].len = src_len(x->A, r0 + i);
        }
        qsort(keys, (size_t)m, sizeof *keys, sell_key_cmp);
        for (int64_t i = 0; i < m; i++)
            x->perm[r0 + i] = (int32_t)keys[i].row;
    }
    free(keys);
}

/* The chunk starts and the row order (sell_fill_host or sell_stream then
 * make the columns and values). */
static int sell_build(const fmt_src *A, size_t C, size_t sigma, sell_host *s, cls_error *err)
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
    int64_t *width = malloc((size_t)(s->nchunks ? s->nchunks : 1) * sizeof *width);
    if (!width) {
        free(perm);
        sell_free(s);
        return cls_fail(err, CLS_EOTHER, "out of memory building SELL-C-sigma");
    }
    /* the rows of each window of sigma sorted by length, windows on every core */
    perm_ctx pc = {.A = A, .perm = perm, .sigma = (int64_t)(sigma > 1 ? sigma : 1)};
    atomic_init(&pc.failed, 0);
    if (n > 0)
        cls_parallel_for((n + pc.sigma - 1) / pc.sigma, sigma > 1 ? 64 : 65536, perm_windows, &pc);
    if (atomic_load(&pc.failed)) {
        free(width);
        free(perm);
        sell_free(s);
        return cls_fail(err, CLS_EOTHER, "out of memory building SELL-C-sigma");
    }
    chunk_width_sum(A, perm, (int64_t)C, width); /* each chunk's width, on every core */
    int64_t pos = 0;
    for (int64_t c = 0; c < s->nchunks; c++) {
        s->cs[c] = (int32_t)pos;
        pos += width[c] * (int64_t)C;
        if (pos > INT32_MAX) {
            free(width);
            free(perm);
            sell_free(s);
            return cls_fail(err, CLS_EOTHER,
                            "SELL-C-sigma of this matrix stores more than 2^31 entries; use "
                            "another format or partition it");
        }
    }
    free(width);
    s->cs[s->nchunks] = (int32_t)pos;
    s->stored = pos;
    s->rows = perm; /* the fill's row order, the identity when sigma is 1 */
    s->sorted = sigma > 1;
    return CLS_OK;
}

/* The columns and values on the host (sell_stream makes them in the
 * staging buffers instead) */
static int sell_fill_host(const fmt_src *A, size_t C, size_t melem, sell_host *s, cls_error *err)
{
    const int64_t pos = s->stored;
    s->col = malloc((size_t)(pos ? pos : 1) * sizeof *s->col);
    s->val = malloc((size_t)(pos ? pos : 1) * melem);
    if (!s->col || !s->val)
        return cls_fail(err, CLS_EOTHER, "out of memory building SELL-C-sigma");
    sell_fill_ctx fc = {A, s->cs, s->rows, s->col, s->val, (int64_t)C, 0, 0, melem};
    cls_parallel_for(s->nchunks, 1024, sell_fill_chunks, &fc); /* chunks are independent */
    return CLS_OK;
}

/* SELL's columns, then its values, built chunk by chunk straight into the
 * page-locked staging buffers while the device drains the other: no host
 * copy of either array (at 2.6e8 rows a part's 21 GB, on top of the part),
 * and the build overlaps the upload. Pieces
 * end at chunk boundaries; a chunk must fit one piece (sell_chunk_max). */
typedef struct sell_stream_ctx {
    sell_fill_ctx f;
    size_t esize;           /* bytes per entry of the array being sent */
    int values;             /* 0: the columns, 1: the values */
    int64_t nchunks, cnext; /* the next piece's first chunk */
    int64_t pc0, pc1;       /* the piece's chunks */
} sell_stream_ctx;

static size_t sell_piece(void *arg, size_t done, size_t max)
{
    sell_stream_ctx *x = arg;
    (void)done; /* = cs[cnext] * esize: pieces end at chunk boundaries */
    const int32_t *cs = x->f.cs;
    int64_t c1 = x->cnext;
    while (c1 < x->nchunks && (size_t)(cs[c1 + 1] - cs[x->cnext]) * x->esize <= max)
        c1++;
    x->pc0 = x->cnext;
    x->pc1 = c1;
    return (size_t)(cs[c1] - cs[x->cnext]) * x->esize; /* 0 when one chunk is too large */
}

static void sell_piece_fill(void *arg, void *stage, size_t done, size_t len)
{
    (void)done;
    (void)len;
    sell_stream_ctx *x = arg;
    sell_fill_ctx f = x->f;
    f.kbase = x->f.cs[x->pc0];
    f.c0 = x->pc0;
    f.col = x->values ? NULL : stage;
    f.val = x->values ? stage : NULL;
    cls_parallel_for(x->pc1 - x->pc0, 64, sell_fill_chunks, &f);
    x->cnext = x->pc1;
}

static size_t sell_chunk_max(const sell_host *s, size_t esize)
{
    int64_t m = 0;
    for (int64_t c = 0; c < s->nchunks; c++)
        if (s->cs[c + 1] - s->cs[c] > m)
            m = s->cs[c + 1] - s->cs[c];
    return (size_t)m * esize;
}

static int sell_stream(la_ctx *la, const fmt_src *A, const sell_host *s, size_t C, la_csr *dA,
                       cls_error *err)
{
    const size_t bytes[2] = {(size_t)s->stored * sizeof(int32_t), (size_t)s->stored * la->melem};
    cl_mem *out[2] = {&dA->fcol, &dA->fval};
    const char *what[2] = {"SELL columns", "SELL values"};
    int rc = CLS_OK;
    for (int a = 0; a < 2 && !rc; a++) {
        rc = lai_alloc_buffer(la, what[a], bytes[a] ? bytes[a] : 1, CL_MEM_READ_ONLY, NULL, out[a],
                              err);
        if (rc || !bytes[a])
            continue;
        sell_stream_ctx x = {.f = {A, s->cs, s->rows, NULL, NULL, (int64_t)C, 0, 0, la->melem},
                             .esize = a ? la->melem : sizeof(int32_t),
                             .values = a,
                             .nchunks = s->nchunks};
        rc = lai_write_staged(la, *out[a], 0, bytes[a], sell_piece, sell_piece_fill, &x, err);
    }
    return rc;
}

/* SELL made on the device from CSR (sell_from_csr, spmv_sell.cl): the
 * host copies CSR's columns and values up as they are, a copy on every
 * core into the page-locked staging that keeps up with the bus, instead of
 * building the padded, permuted layout there (that fill was the upload's
 * whole cost: 67 ms of poisson3d 256's 1.4 GB on an H200 host, the bus
 * idle for all but 0.5 ms of it). The device holds the CSR beside SELL
 * until the kernel ends, so it is taken when both fit in half of the
 * device's memory; only a plain source in double (a view's rows and
 * columns are mapped on the host). CLSOLVE_SELL_BUILD=host or device
 * chooses (tests, A/B runs); by default a device whose copies are staged,
 * which is a GPU's. */
static int sell_on_device(const la_ctx *la, const fmt_src *A, const sell_host *s)
{
    if (!src_plain(A) || la->melem != sizeof(double) || A->nnz == 0 || !la->k_sell_from_csr)
        return 0;
    const char *e = getenv("CLSOLVE_SELL_BUILD");
    if (e && !strcmp(e, "host"))
        return 0;
    const size_t rp = (size_t)(A->nrows + 1) * sizeof(int64_t);
    const size_t need = (size_t)A->nnz * (sizeof(int32_t) + sizeof(double)) + rp +
                        (size_t)s->stored * (sizeof(int32_t) + la->melem);
    if (need > la->ocl->dev.global_mem / 2 || rp > la->ocl->dev.max_alloc)
        return 0;
    if (e && !strcmp(e, "device"))
        return 1;
    return lai_stage_in_use(la, (size_t)s->stored * la->melem);
}

/* dA's SELL columns and values (its chunk starts and permutation are up)
 * made on the device from A's CSR, copied up for it and released after */
static int sell_device_build(la_ctx *la, const fmt_src *A, const sell_host *s, size_t C, la_csr *dA,
                             cls_error *err)
{
    const size_t nnz = (size_t)A->nnz;
    const int64_t *rp0 = A->rowptr + A->first;
    const int64_t k0 = rp0[0] - A->base; /* the first entry (plain: rows first.. in order) */
    cl_mem rp = NULL, col = NULL, val = NULL;
    int rc = lai_upload_buf(la, "row pointers (SELL's source)",
                            (size_t)(A->nrows + 1) * sizeof(int64_t), rp0, &rp, err);
    if (!rc)
        rc = lai_upload_buf(la, "columns (SELL's source)", nnz * sizeof(int32_t), A->col + k0, &col,
                            err);
    if (!rc)
        rc = lai_upload_buf(la, "values (SELL's source)", nnz * sizeof(double), A->val + k0, &val,
                            err);
    if (!rc)
        rc = lai_alloc_buffer(la, "SELL columns", (size_t)s->stored * sizeof(int32_t),
                              CL_MEM_READ_WRITE, NULL, &dA->fcol, err);
    if (!rc)
        rc = lai_alloc_buffer(la, "SELL values", (size_t)s->stored * la->melem, CL_MEM_READ_WRITE,
                              NULL, &dA->fval, err);
    if (!rc) {
        const cl_int nr = (cl_int)A->nrows, ns = (cl_int)(s->nchunks * (int64_t)C), cc = (cl_int)C;
        const cl_long base = rp0[0];
        rc = lai_set_args(la->k_sell_from_csr, "sell_from_csr", err, 11, A_INT(nr), A_INT(ns),
                          A_INT(cc), A_MEM(dA->aux), A_MEM(dA->perm), A_MEM(rp), sizeof base,
                          (const void *)&base, A_MEM(col), A_MEM(val), A_MEM(dA->fcol),
                          A_MEM(dA->fval));
        const size_t ls = lai_kernel_max(la, la->k_sell_from_csr, 256);
        size_t groups = ((size_t)ns + ls - 1) / ls;
        groups = groups > 65536 ? 65536 : groups ? groups : 1;
        if (!rc)
            rc = lai_launch(la, la->k_sell_from_csr, "sell_from_csr", groups, ls, err);
        if (!rc) { /* the source's buffers go when it ends: wait, so a failure shows here */
            cl_int st = clFinish(la->ocl->queue);
            if (st != CL_SUCCESS)
                rc = cls_fail(err, CLS_EOTHER, "sell_from_csr: %s", ocl_errstr(st));
        }
    }
    lai_release_objects(NULL, 0, (cl_mem *[]){&rp, &col, &val}, 3);
    return rc;
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

static int bcsr_build(const fmt_src *A, int64_t k, size_t melem, bcsr_host *b, cls_error *err)
{
    memset(b, 0, sizeof *b);
    b->nbr = A->nrows / k;
    int64_t nbc = A->ncols / k;
    int32_t *mark = calloc((size_t)(nbc ? nbc : 1), sizeof *mark);
    b->browptr = malloc((size_t)(b->nbr + 1) * sizeof *b->browptr);
    if (!mark || !b->browptr) {
        free(mark);
        bcsr_free(b);
        return cls_fail(err, CLS_EOTHER, "out of memory building BCSR");
    }
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
            for (int64_t j = src_beg(A, i), e = j + src_len(A, i); j < e; j++) {
                int32_t bc = (int32_t)(src_col(A, j) / k);
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
            for (int64_t j = src_beg(A, i), e = j + src_len(A, i); j < e; j++) {
                const int32_t col = src_col(A, j);
                int64_t slot = mark[col / k];
                put_val(b->val, melem, slot * k * k + (i - br * k) * k + col % k, A->val[j]);
            }
    }
    b->browptr[b->nbr] = (int32_t)pos;
    free(mark);
    return CLS_OK;
}

/* A source's CSR arrays, made on every core: the row pointers (a pass for
 * each range's entries, a prefix over the ranges, a pass that writes them;
 * ranges are fixed by the row count and the thread count, so both passes
 * see the same ones), then the columns or the values of a mapped source,
 * one array at a time. */
typedef struct gather_ctx {
    const fmt_src *s;
    cl_int *rp;
    int64_t *sum; /* per range: its entries, then where they start */
    int32_t *col;
    void *val;
    size_t melem;
} gather_ctx;

static void gather_lengths(void *arg, int range, int64_t a, int64_t e)
{
    const gather_ctx *g = arg;
    int64_t t = 0;
    for (int64_t i = a; i < e; i++)
        t += src_len(g->s, i);
    g->sum[range] = t;
}

static void gather_rowptr(void *arg, int range, int64_t a, int64_t e)
{
    const gather_ctx *g = arg;
    int64_t o = g->sum[range];
    for (int64_t i = a; i < e; i++) {
        o += src_len(g->s, i);
        g->rp[i + 1] = (cl_int)o;
    }
}

static void gather_rows(void *arg, int range, int64_t a, int64_t e)
{
    (void)range;
    const gather_ctx *g = arg;
    const fmt_src *s = g->s;
    for (int64_t i = a; i < e; i++) {
        const int64_t k0 = src_beg(s, i), len = src_len(s, i), o = g->rp[i];
        if (g->col)
            for (int64_t j = 0; j < len; j++)
                g->col[o + j] = src_col(s, k0 + j);
        else if (g->melem == sizeof(double))
            memcpy((double *)g->val + o, s->val + k0, (size_t)len * sizeof(double));
        else
            for (int64_t j = 0; j < len; j++)
                ((float *)g->val)[o + j] = (float)s->val[k0 + j];
    }
}

#define GATHER_GRAIN 65536

/* The CSR arrays of A on the device. A plain source goes up as it is
 * (the values converted when the device's precision is single); the
 * columns and values of a mapped one are gathered one array at a time. */
static int upload_csr_arrays(la_ctx *la, const fmt_src *A, la_csr *dA, int want_lo, cls_error *err)
{
    size_t nr = (size_t)A->nrows, nnz = (size_t)A->nnz;
    const int nt = nr ? cls_parallel_ranges((int64_t)nr, GATHER_GRAIN) : 0;
    gather_ctx g = {
        A, malloc((nr + 1) * sizeof(cl_int)), calloc((size_t)nt + 1, sizeof(int64_t)), NULL, NULL,
        0};
    if (!g.rp || !g.sum) {
        free(g.rp);
        free(g.sum);
        return cls_fail(err, CLS_EOTHER, "out of memory converting row pointers");
    }
    g.rp[0] = 0;
    if (nr) {
        cls_parallel_for((int64_t)nr, GATHER_GRAIN, gather_lengths, &g);
        int64_t run = 0; /* the ranges' first entries */
        for (int t = 0; t < nt; t++) {
            const int64_t x = g.sum[t];
            g.sum[t] = run;
            run += x;
        }
        cls_parallel_for((int64_t)nr, GATHER_GRAIN, gather_rowptr, &g);
    }
    free(g.sum);
    g.sum = NULL;
    int rc = lai_upload_buf(la, "row pointers", (nr + 1) * sizeof(cl_int), g.rp, &dA->rowptr, err);
    const int plain = src_plain(A);
    /* a plain source's first entry (no offset on an empty matrix's NULL arrays) */
    const int64_t k0 = nnz ? A->rowptr[A->first] - A->base : 0;
    const int32_t *col0 = nnz ? A->col + k0 : A->col;
    const double *val0 = nnz ? A->val + k0 : A->val;
    if (!rc && plain) {
        rc = lai_upload_buf(la, "column indices", nnz * sizeof(cl_int), col0, &dA->col, err);
    } else if (!rc) {
        g.col = malloc((nnz ? nnz : 1) * sizeof *g.col);
        if (!g.col)
            rc = cls_fail(err, CLS_EOTHER, "out of memory gathering column indices");
        else
            cls_parallel_for((int64_t)nr, GATHER_GRAIN, gather_rows, &g);
        if (!rc)
            rc = lai_upload_buf(la, "column indices", nnz * sizeof(cl_int), g.col, &dA->col, err);
        free(g.col);
        g.col = NULL;
    }
    /* the values in the device's precision (want_lo), then in double for
     * the mixed precision's refinement */
    for (int hi = 0; hi < 2 && !rc; hi++) {
        if (hi ? la->prec != LA_MIXED : !want_lo)
            continue;
        const size_t melem = hi ? sizeof(double) : la->melem;
        const char *what = hi ? "values (double)" : "values";
        cl_mem *out = hi ? &dA->val_hi : &dA->val;
        void *f = NULL;
        if (plain && melem != sizeof(double) && !(f = lai_convert_vals(val0, A->nnz, melem)))
            rc = cls_fail(err, CLS_EOTHER, "out of memory converting values to float");
        if (!plain) {
            g.val = f = malloc((nnz ? nnz : 1) * melem);
            g.melem = melem;
            if (!f)
                rc = cls_fail(err, CLS_EOTHER, "out of memory gathering values");
            else
                cls_parallel_for((int64_t)nr, GATHER_GRAIN, gather_rows, &g);
        }
        if (!rc)
            rc = lai_upload_buf(la, what, nnz * melem, f ? f : (const void *)val0, out, err);
        free(f);
    }
    free(g.rp);
    return rc;
}

/* la->cfg tuned for format fmt on a matrix of class mc (the tuning
 * database's entry for the format, size class and shape), clamped, and the
 * partial-sum buffer sized for it */
static int csr_configure(la_ctx *la, la_spmv_variant fmt, const la_matrix_class *mc, cls_error *err)
{
    la_config *c = &la->cfg;
    if (!la->user_cfg) {
        const tunedb *db = tunedb_for_device(&la->ocl->dev);
        char key[32];
        spmv_key(fmt, key, sizeof key);
        int exact = 1, csrf = fmt == LA_SPMV_SCALAR || fmt == LA_SPMV_VECTOR;
        size_t param = 0;
        if (lai_overlay(la, db, key, mc->size_class, mc->shape, csrf,
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
    lai_clamp_config(la);
    return lai_ensure_partial(la, la->ngroups, err);
}

/* the launch geometry of dA from la->cfg (after csr_configure) */
static void csr_geometry(la_ctx *la, la_csr *dA, la_spmv_variant fmt)
{
    la_config *c = &la->cfg;
    int csr_family = fmt == LA_SPMV_SCALAR || fmt == LA_SPMV_VECTOR || fmt == LA_SPMV_ADAPTIVE;
    double mean = dA->nrows ? (double)dA->nnz / (double)dA->nrows : 0.0;
    dA->vector_width = c->vector_width ? c->vector_width : la_auto_vector_width(mean);
    if (dA->vector_width > c->spmv_local_size)
        dA->vector_width = c->spmv_local_size;
    dA->local_size = csr_family && fmt != LA_SPMV_ADAPTIVE ? c->spmv_local_size : c->fmt_local_size;
    dA->max_groups = (size_t)la->ocl->dev.compute_units * c->spmv_groups_per_cu;
    if (!dA->max_groups)
        dA->max_groups = 1;
    c->format = fmt;
    dA->cfg = *c;
}

static int upload_src(la_ctx *la, fmt_src *A, la_spmv_variant variant, la_csr *dA, cls_error *err)
{
    memset(dA, 0, sizeof *dA);
    cls_trace("la_csr_upload: begin");
    /* a mapped view's entries are counted by its row statistics
     * (src_of_view), which the checks below need: they come first there.
     * Elsewhere the checks come first, before any array is read. */
    rowstat st = {0, 0, 0, 0};
    const int counted = A->nnz < 0;
    if (counted) {
        st = src_rowstats(A);
        A->nnz = st.sum;
    }
    if (A->nnz > INT32_MAX || A->nrows >= INT32_MAX || A->ncols > INT32_MAX)
        return cls_fail(err, CLS_EOTHER,
                        "matrix of %lld rows and %lld nonzeros exceeds the 32-bit indices of "
                        "the device kernels (at most %d); partition it across more devices",
                        (long long)A->nrows, (long long)A->nnz, INT32_MAX);
    size_t nr = (size_t)A->nrows, nnz = (size_t)A->nnz;
    size_t biggest = lai_max_sz((nr + 1) * sizeof(cl_int), nnz * sizeof(cl_int));
    biggest = lai_max_sz(biggest, nnz * (la->prec == LA_MIXED ? sizeof(double) : la->melem));
    if (biggest > la->ocl->dev.max_alloc)
        return cls_fail(err, CLS_EOTHER,
                        "matrix needs %.0f MB per buffer but device %s allows %.0f MB; "
                        "partition it across more devices",
                        (double)biggest / 1048576.0, la->ocl->dev.name,
                        (double)la->ocl->dev.max_alloc / 1048576.0);
    if ((unsigned)variant >= LA_SPMV_COUNT)
        return cls_fail(err, CLS_EUSAGE, "unknown SpMV format %d", (int)variant);

    la_matrix_class mc;
    if (!counted)
        st = src_rowstats(A);
    classify_src(la, A, &st, &mc);
    cls_trace("la_csr_upload: classified");
    lai_tuned_vector_config(la, A->nrows);
    la_spmv_variant fmt = variant == LA_SPMV_AUTO ? choose_format(la, &mc) : variant;
    if (fmt == LA_SPMV_BCSR && !mc.block_k) {
        la_matrix_class m2 = mc;
        m2.block_k = 0;
        m2.shape = !strcmp(mc.shape, "blocked") ? "short" : mc.shape;
        fmt = choose_format(la, &m2);
        if (fmt == LA_SPMV_BCSR)
            fmt = LA_SPMV_SCALAR;
    }
    la_config *c = &la->cfg;
    int rc = csr_configure(la, fmt, &mc, err);
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
            rc = lai_upload_buf(la, "row blocks", (size_t)(nb + 1) * sizeof(int32_t), blocks,
                                &dA->aux, err);
        }
        free(blocks);
    } else if (!rc && fmt == LA_SPMV_SELL) {
        sell_host s;
        size_t C = c->sell_c;
        size_t sigma = c->sell_sigma;
        if (!sigma) /* the classification's fill when it measured this C */
            sigma = (C == mc.sell_fill_c ? mc.sell_fill : sell_fill_of(A, C)) <= 1.1 ? 1 : 32 * C;
        rc = sell_build(A, C, sigma, &s, err);
        /* made on the device from CSR where it fits (sell_on_device); else
         * streamed when the copies would be staged anyway and every chunk
         * fits a staging piece; else built on the host, then copied */
        const int ondev = !rc && sell_on_device(la, A, &s);
        const size_t esize = la->melem > sizeof(int32_t) ? la->melem : sizeof(int32_t);
        const int stream = !rc && lai_stage_in_use(la, (size_t)s.stored * la->melem) &&
                           sell_chunk_max(&s, esize) <= lai_stage_piece();
        cls_trace(ondev    ? "la_csr_upload: SELL planned, made on the device"
                  : stream ? "la_csr_upload: SELL planned, streamed"
                           : "la_csr_upload: SELL planned");
        if (!rc) {
            dA->sell_c = C;
            dA->sell_sigma = sigma;
            dA->naux = s.nchunks;
            dA->stored = s.stored;
            rc = lai_upload_buf(la, "SELL chunk starts", (size_t)(s.nchunks + 1) * sizeof(int32_t),
                                s.cs, &dA->aux, err);
            if (!rc && s.sorted)
                rc = lai_upload_buf(la, "SELL permutation", nr * sizeof(int32_t), s.rows, &dA->perm,
                                    err);
        }
        int sent = 0;
        if (!rc && ondev) {
            cls_error derr;
            cls_error_clear(&derr);
            sent = sell_device_build(la, A, &s, C, dA, &derr) == CLS_OK;
            if (!sent) { /* the device's memory, say: the host's ways below */
                lai_release_objects(NULL, 0, (cl_mem *[]){&dA->fcol, &dA->fval}, 2);
                char m[400];
                snprintf(m, sizeof m,
                         "la_csr_upload: SELL on the device failed (%.300s); made on the host",
                         derr.msg);
                cls_trace(m);
            } else {
                dA->sell_on_device = 1;
                cls_trace("la_csr_upload: SELL made on the device");
            }
        }
        if (!rc && !sent && stream)
            rc = sell_stream(la, A, &s, C, dA, err);
        else if (!rc && !sent) {
            rc = sell_fill_host(A, C, la->melem, &s, err);
            if (!rc)
                rc = lai_upload_buf(la, "SELL columns", (size_t)s.stored * sizeof(int32_t), s.col,
                                    &dA->fcol, err);
            if (!rc)
                rc = lai_upload_buf(la, "SELL values", (size_t)s.stored * la->melem, s.val,
                                    &dA->fval, err);
        }
        sell_free(&s);
    } else if (!rc && fmt == LA_SPMV_BCSR) {
        bcsr_host b;
        int64_t k = (int64_t)mc.block_k;
        rc = bcsr_build(A, k, la->melem, &b, err);
        if (!rc) {
            dA->block_k = (size_t)k;
            dA->naux = b.nbr;
            dA->stored = b.nblocks * k * k;
            rc = lai_upload_buf(la, "BCSR block rows", (size_t)(b.nbr + 1) * sizeof(int32_t),
                                b.browptr, &dA->aux, err);
            if (!rc)
                rc = lai_upload_buf(la, "BCSR block columns", (size_t)b.nblocks * sizeof(int32_t),
                                    b.bcol, &dA->fcol, err);
            if (!rc)
                rc = lai_upload_buf(la, "BCSR values", (size_t)dA->stored * la->melem, b.val,
                                    &dA->fval, err);
            bcsr_free(&b);
        }
    }
    if (rc) {
        la_csr_release(dA);
        return rc;
    }
    csr_geometry(la, dA, fmt);
    return CLS_OK;
}

int la_csr_upload(la_ctx *la, const csr_matrix *A, la_spmv_variant variant, la_csr *dA,
                  cls_error *err)
{
    fmt_src s;
    src_of_csr(A, &s);
    return upload_src(la, &s, variant, dA, err);
}

int la_csr_upload_view(la_ctx *la, const la_csr_view *v, la_spmv_variant variant, la_csr *dA,
                       cls_error *err)
{
    fmt_src s;
    src_of_view(v, &s);
    return upload_src(la, &s, variant, dA, err);
}

int la_csr_adopt(la_ctx *la, cl_mem rowptr, cl_mem col, cl_mem val, int64_t nrows, int64_t ncols,
                 int64_t nnz, la_csr *dA, cls_error *err)
{
    memset(dA, 0, sizeof *dA);
    if (la->prec != LA_DOUBLE)
        return cls_fail(err, CLS_EOTHER, "la_csr_adopt: device-built matrices are double only");
    double mean = nrows ? (double)nnz / (double)nrows : 0.0;
    /* no host copy to classify: the size class and the mean row length
     * decide, as choose_format does for short and long rows */
    la_matrix_class mc = {.mean_row = mean,
                          .size_class = tunedb_size_class(nrows),
                          .shape = mean > 12.0 ? "long" : "short"};
    la_spmv_variant fmt = mean > 12.0 ? LA_SPMV_VECTOR : LA_SPMV_SCALAR;
    lai_tuned_vector_config(la, nrows);
    int rc = csr_configure(la, fmt, &mc, err);
    if (rc)
        return rc;
    dA->rowptr = rowptr;
    dA->col = col;
    dA->val = val;
    dA->nrows = nrows;
    dA->ncols = ncols;
    dA->nnz = nnz;
    dA->variant = fmt;
    dA->stored = nnz;
    csr_geometry(la, dA, fmt);
    return CLS_OK;
}

void la_csr_release(la_csr *dA)
{
    if (!dA)
        return;
    cl_mem *ms[] = {&dA->rowptr, &dA->col,  &dA->val,  &dA->aux,
                    &dA->perm,   &dA->fcol, &dA->fval, &dA->val_hi};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
        if (*ms[i]) {
            clReleaseMemObject(*ms[i]);
            *ms[i] = NULL;
        }
}
