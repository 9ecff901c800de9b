/*
 * partition.c: contiguous row blocks balanced by nonzeros and rows (see
 * partition.h for the cost model and the small-system rule).
 *
 * Each cut is a parallel scan of its row range through row_nnz (chunk sums
 * for the total cost) and a scan of the one chunk that holds each boundary,
 * placing it at the row where the running cost is nearest its target. No
 * per-row array is kept, so planning a 67 M-row generated system costs a
 * pass of a counter over the host's cores and no memory; a one-piece cut
 * scans nothing.
 */
#include "partition.h"

#include <stdlib.h>
#include <string.h>

#include "../../common/parallel.h"

static int64_t row_cost(part_row_nnz_fn f, const void *ctx, int64_t i)
{
    return f(ctx, i) + PART_ROW_COST;
}

/* Sums of row costs (or of row_nnz alone, plain) over fixed chunks of a row
 * range, in parallel: a 16.8 M-row generated system costs 0.1 s a scan on
 * one core. */
typedef struct cost_ctx {
    part_row_nnz_fn f;
    const void *ctx;
    int64_t lo;
    int plain;
    int64_t *sum; /* per chunk */
} cost_ctx;

static void cost_chunk(void *arg, int range, int64_t a, int64_t e)
{
    const cost_ctx *c = arg;
    int64_t s = 0;
    for (int64_t i = c->lo + a; i < c->lo + e; i++)
        s += c->plain ? c->f(c->ctx, i) : row_cost(c->f, c->ctx, i);
    c->sum[range] = s;
}

#define PART_GRAIN 65536

/* The chunk boundaries cls_parallel_for uses for n rows, and their sums;
 * *nchunk gets their count. NULL when out of memory. */
static int64_t *chunk_sums(int64_t lo, int64_t hi, part_row_nnz_fn f, const void *ctx, int plain,
                           int *nchunk)
{
    int t = cls_parallel_ranges(hi - lo, PART_GRAIN);
    int64_t *sum = calloc((size_t)t, sizeof *sum);
    if (sum) {
        cost_ctx c = {f, ctx, lo, plain, sum};
        cls_parallel_for(hi - lo, PART_GRAIN, cost_chunk, &c);
    }
    *nchunk = t;
    return sum;
}

/* Cuts rows [lo, hi) into k pieces whose costs are proportional to
 * share[0..k), each of at least share[j] rows (a rank's block is cut again
 * into its share of parts, each a row at least); bounds[0..k] receives the
 * boundaries. Needs hi - lo >= the shares' sum.
 * Boundary j is placed at the first row i whose cumulative cost reaches
 * total * (shares before piece j) / nshare, on whichever side of it is
 * nearer. The chunk sums (in parallel) find the chunk that holds the
 * crossing, and only that chunk is scanned row by row: the same boundaries
 * as one sequential scan, at the cost of a parallel one. */
static int split_range(int64_t lo, int64_t hi, part_row_nnz_fn f, const void *ctx, int k,
                       const int *share, int64_t *bounds)
{
    bounds[0] = lo;
    bounds[k] = hi;
    if (k == 1)
        return CLS_OK;
    int nc;
    int64_t *sum = chunk_sums(lo, hi, f, ctx, 0, &nc);
    if (!sum)
        return CLS_EOTHER;
    int64_t total = 0, nshare = 0;
    for (int c = 0; c < nc; c++)
        total += sum[c];
    for (int j = 0; j < k; j++)
        nshare += share[j];
    int64_t cum = share[0];
    int c = 0;
    int64_t cstart = 0; /* cost of rows [lo, start of chunk c) */
    for (int j = 1; j < k; j++, cum += share[j - 1]) {
        const __int128 t = (__int128)total * cum;
        /* the first chunk whose end reaches the target */
        while (c < nc - 1 && (__int128)(cstart + sum[c]) * nshare < t)
            cstart += sum[c++];
        int64_t i = lo + (hi - lo) * c / nc, ie = lo + (hi - lo) * (c + 1) / nc;
        int64_t acc = cstart; /* cost of rows [lo, i) */
        bounds[j] = hi;
        for (; i < ie; i++) {
            int64_t w = row_cost(f, ctx, i);
            if ((__int128)(acc + w) * nshare >= t) {
                __int128 below = t - (__int128)acc * nshare;       /* >= 0 */
                __int128 above = (__int128)(acc + w) * nshare - t; /* >= 0 */
                bounds[j] = below <= above ? i : i + 1;            /* nearest */
                break;
            }
            acc += w;
        }
    }
    free(sum);
    /* every piece at least its share of rows (with few rows, a rank's block
     * of the first cut could hold fewer rows than its parts) */
    for (int j = 1; j < k; j++)
        if (bounds[j] < bounds[j - 1] + share[j - 1])
            bounds[j] = bounds[j - 1] + share[j - 1];
    for (int j = k - 1; j >= 1; j--)
        if (bounds[j] > bounds[j + 1] - share[j])
            bounds[j] = bounds[j + 1] - share[j];
    return CLS_OK;
}

void part_free(part_layout *L)
{
    if (!L)
        return;
    free(L->begin);
    free(L->nnz);
    free(L->rank);
    free(L->slot);
    free(L->first);
    memset(L, 0, sizeof *L);
}

static int layout_alloc(part_layout *L, int nparts, int ranks, cls_error *err)
{
    size_t np = (size_t)(nparts > 0 ? nparts : 1);
    L->begin = calloc(np + 1, sizeof *L->begin);
    L->nnz = calloc(np, sizeof *L->nnz);
    L->rank = calloc(np, sizeof *L->rank);
    L->slot = calloc(np, sizeof *L->slot);
    L->first = calloc((size_t)ranks + 1, sizeof *L->first);
    if (!L->begin || !L->nnz || !L->rank || !L->slot || !L->first) {
        part_free(L);
        return cls_fail(err, CLS_EOTHER, "out of memory for the partition");
    }
    return CLS_OK;
}

/* Parts per rank: P parts over min(R, P) ranks, the first P mod R one more. */
static void parts_per_rank(int nparts, int ranks, int *count)
{
    int used = nparts < ranks ? nparts : ranks;
    for (int r = 0; r < ranks; r++)
        count[r] = 0;
    for (int r = 0; r < used; r++)
        count[r] = nparts / used + (r < nparts % used ? 1 : 0);
}

static void assign_ranks(part_layout *L, const int *count)
{
    int k = 0;
    for (int r = 0; r < L->ranks; r++) {
        L->first[r] = k;
        for (int s = 0; s < count[r]; s++, k++) {
            L->rank[k] = r;
            L->slot[k] = s;
        }
    }
    L->first[L->ranks] = k;
}

static int check_shape(int ranks, int devices_per_rank, cls_error *err)
{
    if (ranks < 1 || devices_per_rank < 1)
        return cls_fail(err, CLS_EUSAGE,
                        "partition: %d ranks with %d devices each: both must be at least 1", ranks,
                        devices_per_rank);
    return CLS_OK;
}

int part_plan(int64_t nrows, part_row_nnz_fn row_nnz, const void *ctx, int ranks,
              int devices_per_rank, int64_t min_rows, int max_parts, part_layout *L, cls_error *err)
{
    memset(L, 0, sizeof *L);
    int rc = check_shape(ranks, devices_per_rank, err);
    if (rc)
        return rc;
    if (min_rows <= 0)
        min_rows = PART_MIN_ROWS_DEFAULT;
    int64_t cap = (int64_t)ranks * devices_per_rank;
    if (max_parts > 0 && cap > max_parts)
        cap = max_parts;
    int64_t want = nrows / min_rows;
    if (want < 1)
        want = 1;
    if (want > cap)
        want = cap;
    if (want > nrows)
        want = nrows; /* also 0 parts for an empty system */
    int nparts = (int)want;

    L->nrows = nrows;
    L->nparts = nparts;
    L->ranks = ranks;
    L->devices_per_rank = devices_per_rank;
    if ((rc = layout_alloc(L, nparts, ranks, err)))
        return rc;
    int *count = malloc((size_t)ranks * sizeof *count);
    int64_t *rb = malloc(((size_t)ranks + 1) * sizeof *rb);
    int *ones = malloc((size_t)devices_per_rank * sizeof *ones);
    if (!count || !rb || !ones) {
        free(count);
        free(rb);
        free(ones);
        part_free(L);
        return cls_fail(err, CLS_EOTHER, "out of memory for the partition");
    }
    parts_per_rank(nparts, ranks, count);
    assign_ranks(L, count);
    if (nparts > 0) {
        int used = nparts < ranks ? nparts : ranks;
        /* first cut: one block per rank in use, weighted by its part count */
        rc = split_range(0, nrows, row_nnz, ctx, used, count, rb);
        for (int d = 0; d < devices_per_rank; d++)
            ones[d] = 1;
        /* second cut: each rank's block over its devices */
        for (int r = 0; r < used && !rc; r++)
            rc =
                split_range(rb[r], rb[r + 1], row_nnz, ctx, count[r], ones, L->begin + L->first[r]);
        L->begin[nparts] = nrows;
        for (int k = 0; k < nparts && !rc; k++) {
            int nc;
            int64_t *sum = chunk_sums(L->begin[k], L->begin[k + 1], row_nnz, ctx, 1, &nc);
            if (!sum) {
                rc = CLS_EOTHER;
                break;
            }
            L->nnz[k] = 0;
            for (int c = 0; c < nc; c++)
                L->nnz[k] += sum[c];
            free(sum);
        }
    }
    free(count);
    free(rb);
    free(ones);
    if (rc) {
        part_free(L);
        return cls_fail(err, CLS_EOTHER, "out of memory for the partition");
    }
    return CLS_OK;
}

int part_from_bounds(int64_t nrows, const int64_t *begin, const int64_t *nnz, int nparts, int ranks,
                     int devices_per_rank, part_layout *L, cls_error *err)
{
    memset(L, 0, sizeof *L);
    int rc = check_shape(ranks, devices_per_rank, err);
    if (rc)
        return rc;
    if (nparts < 0 || nparts > ranks * devices_per_rank || (nparts == 0) != (nrows == 0))
        return cls_fail(err, CLS_EUSAGE, "partition: %d parts for %d ranks x %d devices", nparts,
                        ranks, devices_per_rank);
    if (begin[0] != 0 || begin[nparts] != nrows)
        return cls_fail(err, CLS_EUSAGE, "partition: boundaries must run from 0 to %lld",
                        (long long)nrows);
    for (int k = 0; k < nparts; k++)
        if (begin[k + 1] <= begin[k])
            return cls_fail(err, CLS_EUSAGE, "partition: part %d is empty", k);
    L->nrows = nrows;
    L->nparts = nparts;
    L->ranks = ranks;
    L->devices_per_rank = devices_per_rank;
    if ((rc = layout_alloc(L, nparts, ranks, err)))
        return rc;
    int *count = malloc((size_t)ranks * sizeof *count);
    if (!count) {
        part_free(L);
        return cls_fail(err, CLS_EOTHER, "out of memory for the partition");
    }
    parts_per_rank(nparts, ranks, count);
    assign_ranks(L, count);
    free(count);
    memcpy(L->begin, begin, ((size_t)nparts + 1) * sizeof *begin);
    for (int k = 0; k < nparts; k++)
        L->nnz[k] = nnz ? nnz[k] : 0;
    return CLS_OK;
}

int part_owner(const part_layout *L, int64_t row)
{
    if (row < 0 || row >= L->nrows || L->nparts == 0)
        return -1;
    int lo = 0, hi = L->nparts - 1;
    while (lo < hi) { /* last part with begin <= row */
        int mid = lo + (hi - lo + 1) / 2;
        if (L->begin[mid] <= row)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

void part_print(const part_layout *L, FILE *f)
{
    for (int k = 0; k < L->nparts; k++)
        fprintf(f, "part %d: rank %d device %d, rows [%lld, %lld) (%lld rows, %lld nnz)\n", k,
                L->rank[k], L->slot[k], (long long)L->begin[k], (long long)L->begin[k + 1],
                (long long)(L->begin[k + 1] - L->begin[k]), (long long)L->nnz[k]);
}
