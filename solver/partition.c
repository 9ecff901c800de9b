/*
 * partition.c: contiguous row blocks balanced by nonzeros and rows (see
 * partition.h for the cost model and the small-system rule).
 *
 * Each cut is two scans of its row range through row_nnz: one for the total
 * cost, one placing each boundary at the row where the running cost is
 * nearest its target. No per-row array is kept, so planning a 67 M-row
 * generated system costs a few passes of a counter and no memory.
 */
#include "partition.h"

#include <stdlib.h>
#include <string.h>

static int64_t row_cost(part_row_nnz_fn f, const void *ctx, int64_t i)
{
    return f(ctx, i) + PART_ROW_COST;
}

/* Cuts rows [lo, hi) into k pieces whose costs are proportional to
 * share[0..k); bounds[0..k] receives the boundaries. Needs hi - lo >= k. */
static void split_range(int64_t lo, int64_t hi, part_row_nnz_fn f, const void *ctx, int k,
                        const int *share, int64_t *bounds)
{
    int64_t total = 0, nshare = 0;
    for (int64_t i = lo; i < hi; i++)
        total += row_cost(f, ctx, i);
    for (int j = 0; j < k; j++)
        nshare += share[j];
    bounds[0] = lo;
    bounds[k] = hi;
    int j = 1;
    int64_t cum = share[0];
    int64_t acc = 0; /* cost of rows [lo, i) */
    for (int64_t i = lo; i < hi && j < k; i++) {
        int64_t w = row_cost(f, ctx, i);
        /* target of boundary j: total * (shares before piece j) / nshare,
         * compared as acc * nshare against total * cum to stay in integers */
        while (j < k && (__int128)(acc + w) * nshare >= (__int128)total * cum) {
            __int128 t = (__int128)total * cum;
            __int128 below = t - (__int128)acc * nshare;        /* >= 0 */
            __int128 above = (__int128)(acc + w) * nshare - t;  /* >= 0 */
            bounds[j] = below <= above ? i : i + 1;             /* nearest */
            cum += share[j];
            j++;
        }
        acc += w;
    }
    for (; j < k; j++)
        bounds[j] = hi;
    /* every piece at least one row */
    for (j = 1; j < k; j++)
        if (bounds[j] < bounds[j - 1] + 1)
            bounds[j] = bounds[j - 1] + 1;
    for (j = k - 1; j >= 1; j--)
        if (bounds[j] > bounds[j + 1] - 1)
            bounds[j] = bounds[j + 1] - 1;
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
                        "partition: %d ranks with %d devices each: both must be at least 1",
                        ranks, devices_per_rank);
    return CLS_OK;
}

int part_plan(int64_t nrows, part_row_nnz_fn row_nnz, const void *ctx, int ranks,
              int devices_per_rank, int64_t min_rows, int max_parts, part_layout *L,
              cls_error *err)
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
        split_range(0, nrows, row_nnz, ctx, used, count, rb);
        for (int d = 0; d < devices_per_rank; d++)
            ones[d] = 1;
        /* second cut: each rank's block over its devices */
        for (int r = 0; r < used; r++)
            split_range(rb[r], rb[r + 1], row_nnz, ctx, count[r], ones,
                        L->begin + L->first[r]);
        L->begin[nparts] = nrows;
        for (int k = 0; k < nparts; k++) {
            int64_t s = 0;
            for (int64_t i = L->begin[k]; i < L->begin[k + 1]; i++)
                s += row_nnz(ctx, i);
            L->nnz[k] = s;
        }
    }
    free(count);
    free(rb);
    free(ones);
    return CLS_OK;
}

int part_from_bounds(int64_t nrows, const int64_t *begin, const int64_t *nnz, int nparts,
                     int ranks, int devices_per_rank, part_layout *L, cls_error *err)
{
    memset(L, 0, sizeof *L);
    int rc = check_shape(ranks, devices_per_rank, err);
    if (rc)
        return rc;
    if (nparts < 0 || nparts > ranks * devices_per_rank || (nparts == 0) != (nrows == 0))
        return cls_fail(err, CLS_EUSAGE, "partition: %d parts for %d ranks x %d devices",
                        nparts, ranks, devices_per_rank);
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
