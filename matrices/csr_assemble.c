/*
 * csr_assemble.c: CSR from triplets (csr_from_coo and its variants, csr.h):
 * the readers' last step and the preconditioners' products' first.
 *
 * csr_from_coo is a counting sort by row (O(nnz), no comparison sort over
 * the whole list), then a sort within each row by (column, value), then a
 * merge that sums duplicates, all in parallel:
 *
 *   count    row lengths, with relaxed atomic adds (mirrored entries of
 *            symmetric storage counted too, so no expanded COO is built)
 *   prefix   row pointers: per-thread block sums, then a fill
 *   scatter  each entry to its row through an atomic per-row cursor, so the
 *            order within a row depends on the thread schedule...
 *   sort     ...until each row is sorted by (column, value): equal columns
 *            are then summed in ascending value order, so the result is the
 *            same bits for every thread count, run and input order (no sort
 *            where the rows come out in order already: grouped by row,
 *            columns strictly ascending, a mirrored input all in its lower
 *            triangle; 12-16 ms of poisson3d 256 on 16 cores)
 *   compact  only when duplicates were merged: new row pointers by a prefix
 *            sum and a parallel copy into exact-size arrays
 *
 * Entries already grouped by ascending row (files written row by row, the
 * usual case) skip count and scatter: the row pointers come from the row
 * changes, and csr_from_coo_take adopts the COO's column and value arrays
 * as they are. Small inputs use one thread (thread start costs more).
 *
 * Symmetric storage grouped by row (a symmetric file written row by row:
 * clsolve's own, most writers') takes a third path without atomics, the
 * "grouped mirror": a stored entry goes to its own row at a place its row
 * group already fixes, and its mirror to row j at a place that per-thread
 * column counts fix. Thread t's block of entries mirrors into a window of
 * rows [jlo_t, jhi_t) (for a banded matrix about its own rows, plus the
 * band), so a count array the size of that window replaces the atomic
 * per-row counter: an exclusive sum over the threads that cover a row
 * gives each thread its own cursor in that row. The atomic adds contend
 * when rows are shared between threads (32 threads spent 97 ms counting
 * and 81 ms scattering poisson3d 256's 67 M stored entries, 3-5x the text
 * parse). The windows' total is capped (ASM_WINDOW_CAP): a matrix whose
 * threads mirror all over its rows takes the scatter path. A ranged read
 * (csr_from_coo_rows_take) takes it too: its span's entries are grouped,
 * the rows it keeps are a run of them, and the few entries other ranks
 * sent (the mirrors near the span's ends) get one more window, filled and
 * scattered serially; many of them (more than an eighth) take the scatter
 * path. Both paths put the same multiset of entries in each row, and the
 * sort that follows fixes the order, so the result is the same bits.
 */
#include "csr.h"
#include "../common/bigmem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* assembly                                                                  */

#define CSR_MAX_THREADS 256
#define CSR_DEFAULT_PAR_MIN ((int64_t)1 << 16)

static int64_t csr_par_min = CSR_DEFAULT_PAR_MIN;
static _Thread_local const char *csr_path_last = "";
static _Thread_local int csr_in_order_last;

const char *csr_last_path(void)
{
    return csr_path_last;
}

int csr_last_in_order(void)
{
    return csr_in_order_last;
}

void csr_set_parallel_min(int64_t nnz)
{
    csr_par_min = nnz > 0 ? nnz : CSR_DEFAULT_PAR_MIN;
}

/* Total order on doubles (IEEE 754 totalOrder on the bits): sorting equal
 * columns by value makes the order in which duplicates are summed, and so
 * the sum, a function of the multiset of entries alone. */
static inline uint64_t val_key(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return (b >> 63) ? ~b : b | ((uint64_t)1 << 63);
}

static inline int entry_less(int32_t ca, double va, int32_t cb, double vb)
{
    return ca < cb || (ca == cb && val_key(va) < val_key(vb));
}

/* Sorts one row's (col, val) pairs by (column, value): insertion sort for
 * the short rows that dominate sparse matrices, a heap sort past that so a
 * single huge row stays O(n log n). */
static void sort_row(int32_t *col, double *val, int64_t n)
{
    if (n <= 32) {
        for (int64_t i = 1; i < n; i++) {
            int32_t c = col[i];
            double v = val[i];
            int64_t j = i - 1;
            while (j >= 0 && entry_less(c, v, col[j], val[j])) {
                col[j + 1] = col[j];
                val[j + 1] = val[j];
                j--;
            }
            col[j + 1] = c;
            val[j + 1] = v;
        }
        return;
    }
    for (int64_t start = n / 2 - 1, end = n;;) {
        int64_t root;
        if (start >= 0) { /* heapify */
            root = start--;
        } else { /* pop the maximum to the end */
            if (--end <= 0)
                break;
            int32_t tc = col[0];
            col[0] = col[end];
            col[end] = tc;
            double tv = val[0];
            val[0] = val[end];
            val[end] = tv;
            root = 0;
        }
        for (;;) {
            int64_t child = 2 * root + 1;
            if (child >= end)
                break;
            if (child + 1 < end &&
                entry_less(col[child], val[child], col[child + 1], val[child + 1]))
                child++;
            if (!entry_less(col[root], val[root], col[child], val[child]))
                break;
            int32_t tc = col[root];
            col[root] = col[child];
            col[child] = tc;
            double tv = val[root];
            val[root] = val[child];
            val[child] = tv;
            root = child;
        }
    }
}

/* Sorts a row unless its columns already increase strictly, then sums runs
 * of equal columns in (value) order. Returns the new length. */
static int64_t sort_merge_row(int32_t *col, double *val, int64_t n, int64_t *dups)
{
    int64_t k = 1;
    while (k < n && col[k - 1] < col[k])
        k++;
    if (k >= n)
        return n;
    sort_row(col, val, n);
    int64_t out = 1;
    for (k = 1; k < n; k++) {
        if (col[k] == col[out - 1]) {
            val[out - 1] += val[k];
            (*dups)++;
        } else {
            col[out] = col[k];
            val[out] = val[k];
            out++;
        }
    }
    return out;
}

/* The assembly runs in phases; in each, thread t works on its own block of
 * entries or rows, so no phase waits on another thread before its join. */
typedef struct asm_ctx {
    int nt;
    int mirror; /* 0, or +-1: add (j, i, mirror * v) for each i != j */
    int64_t n, nrows, nnz_out;
    int64_t rb;                 /* the rows kept: [rb, rb + nrows) of the input's numbering */
    const int32_t *row2, *col2; /* a second input, taken as it is (no mirror) */
    const double *val2;
    int64_t n2;
    int64_t ntouch; /* entries of acol/aval that ph_touch maps in */
    const int32_t *row, *col;
    const double *val;
    _Atomic int64_t *cur; /* row counts, then scatter cursors, then merged lengths */
    int64_t *rowptr, *nrowptr;
    int32_t *acol, *ncol;
    double *aval, *nval;
    int64_t part[CSR_MAX_THREADS + 1];
    int64_t rlo[CSR_MAX_THREADS + 1]; /* rows of thread t: [rlo[t], rlo[t+1]) */
    int64_t kept[CSR_MAX_THREADS], dups[CSR_MAX_THREADS];
    int unsorted[CSR_MAX_THREADS];
    /* within a row the columns do not strictly ascend (a duplicate, or out
     * of order), or with a mirror an entry is above the diagonal
     * (ph_check_sorted without a mirror, ph_window with one); when no
     * thread found that, the adopted or grouped mirror's rows come out in
     * order and the sort is skipped (finish_rows) */
    int disordered[CSR_MAX_THREADS];
    int in_order; /* set only where adopt/copy or the grouped mirror succeeds */
    /* the grouped mirror: the entries of the rows kept are [kb, ke) of the
     * input; drow[i] is row i's first one, counted from kb (nrows + 1);
     * thread t's mirror counts, then cursors, over rows [jlo[t], jhi[t]);
     * window nt is the second input's (one, filled serially) */
    int64_t kb, ke;
    int64_t *drow;
    int fuse_drow; /* drow written by ph_window: a whole matrix's entries */
    uint32_t *win[CSR_MAX_THREADS + 1];
    int64_t jlo[CSR_MAX_THREADS + 1], jhi[CSR_MAX_THREADS + 1];
    int wfail[CSR_MAX_THREADS];
    double gt[6]; /* the grouped mirror's steps' ends (the profile's split) */
    int ngt;
} asm_ctx;

typedef void (*asm_fn)(asm_ctx *c, int t);
typedef struct asm_arg {
    asm_ctx *c;
    asm_fn fn;
    int t;
} asm_arg;

static void *asm_thread(void *p)
{
    asm_arg *a = p;
    a->fn(a->c, a->t);
    return NULL;
}

static void run_par(asm_ctx *c, asm_fn fn)
{
    pthread_t tid[CSR_MAX_THREADS];
    asm_arg arg[CSR_MAX_THREADS];
    int started[CSR_MAX_THREADS];
    for (int t = 1; t < c->nt; t++) {
        arg[t] = (asm_arg){c, fn, t};
        started[t] = pthread_create(&tid[t], NULL, asm_thread, &arg[t]) == 0;
        if (!started[t])
            fn(c, t);
    }
    fn(c, 0);
    for (int t = 1; t < c->nt; t++)
        if (started[t])
            pthread_join(tid[t], NULL);
}

/* floor(n * t / nt) without overflow: where thread t's block starts */
static inline int64_t blk(int64_t n, int t, int nt)
{
    return n / nt * t + n % nt * t / nt;
}

/* cur[i] += 1: an atomic add with several threads, a plain one alone. */
static inline int64_t bump(_Atomic int64_t *p, int par)
{
    if (par)
        return atomic_fetch_add_explicit(p, 1, memory_order_relaxed);
    int64_t v = atomic_load_explicit(p, memory_order_relaxed);
    atomic_store_explicit(p, v + 1, memory_order_relaxed);
    return v;
}

/* Row r of the input is row r - rb of the output, when that is one. */
static inline int in_rows(const asm_ctx *c, int64_t r)
{
    return (uint64_t)r < (uint64_t)c->nrows;
}

static void ph_count(asm_ctx *c, int t)
{
    const int par = c->nt > 1;
    int64_t kept = 0;
    for (int64_t k = blk(c->n, t, c->nt), e = blk(c->n, t + 1, c->nt); k < e; k++) {
        const int64_t i = c->row[k] - c->rb, j = c->col[k] - c->rb;
        if (in_rows(c, i)) {
            bump(&c->cur[i], par);
            kept++;
        }
        if (c->mirror && i != j && in_rows(c, j)) {
            bump(&c->cur[j], par);
            kept++;
        }
    }
    for (int64_t k = blk(c->n2, t, c->nt), e = blk(c->n2, t + 1, c->nt); k < e; k++)
        bump(&c->cur[c->row2[k] - c->rb], par);
    c->kept[t] = kept + blk(c->n2, t + 1, c->nt) - blk(c->n2, t, c->nt);
}

/* Exclusive prefix sum of cur[] over rows, in two phases: block sums, then
 * (after the serial sum over blocks) the fill. */
static void ph_psum_a(asm_ctx *c, int t)
{
    int64_t s = 0;
    for (int64_t i = blk(c->nrows, t, c->nt), e = blk(c->nrows, t + 1, c->nt); i < e; i++)
        s += atomic_load_explicit(&c->cur[i], memory_order_relaxed);
    c->part[t + 1] = s;
}

static void ph_psum_b(asm_ctx *c, int t) /* rowptr, and cur[] becomes the cursors */
{
    int64_t run = c->part[t];
    for (int64_t i = blk(c->nrows, t, c->nt), e = blk(c->nrows, t + 1, c->nt); i < e; i++) {
        int64_t k = atomic_load_explicit(&c->cur[i], memory_order_relaxed);
        c->rowptr[i] = run;
        atomic_store_explicit(&c->cur[i], run, memory_order_relaxed);
        run += k;
    }
}

static void ph_psum_new(asm_ctx *c, int t) /* nrowptr from the merged lengths */
{
    int64_t run = c->part[t];
    for (int64_t i = blk(c->nrows, t, c->nt), e = blk(c->nrows, t + 1, c->nt); i < e; i++) {
        c->nrowptr[i] = run;
        run += atomic_load_explicit(&c->cur[i], memory_order_relaxed);
    }
}

/* The blocks' sums in part[1..nt] become their starts; the total */
static int64_t part_starts(asm_ctx *c)
{
    c->part[0] = 0;
    for (int t = 0; t < c->nt; t++)
        c->part[t + 1] += c->part[t];
    return c->part[c->nt];
}

static int64_t psum(asm_ctx *c, asm_fn fill)
{
    run_par(c, ph_psum_a);
    const int64_t total = part_starts(c);
    run_par(c, fill);
    return total;
}

/* The scatter writes acol/aval at each row's cursor: for every thread, all
 * over the arrays. The first touch of a fresh page there faults, and the
 * kernel zeroes a huge page inside the hot loop, threads queuing on the
 * page table. Touching the pages first, in order and in parallel, moves
 * that work into a pass at memory speed on every core. */
static void ph_touch(asm_ctx *c, int t)
{
    int64_t k = blk(c->ntouch, t, c->nt), e = blk(c->ntouch, t + 1, c->nt);
    if (e > k) {
        memset(c->acol + k, 0, (size_t)(e - k) * sizeof *c->acol);
        memset(c->aval + k, 0, (size_t)(e - k) * sizeof *c->aval);
    }
}

static void ph_scatter(asm_ctx *c, int t)
{
    const int par = c->nt > 1;
    const double sign = c->mirror < 0 ? -1.0 : 1.0;
    for (int64_t k = blk(c->n, t, c->nt), e = blk(c->n, t + 1, c->nt); k < e; k++) {
        const int32_t gi = c->row[k], gj = c->col[k];
        const int64_t i = gi - c->rb, j = gj - c->rb;
        const double v = c->val[k];
        if (in_rows(c, i)) {
            int64_t d = bump(&c->cur[i], par);
            c->acol[d] = gj;
            c->aval[d] = v;
        }
        if (c->mirror && i != j && in_rows(c, j)) {
            int64_t d = bump(&c->cur[j], par);
            c->acol[d] = gi;
            c->aval[d] = sign * v;
        }
    }
    for (int64_t k = blk(c->n2, t, c->nt), e = blk(c->n2, t + 1, c->nt); k < e; k++) {
        int64_t d = bump(&c->cur[c->row2[k] - c->rb], par);
        c->acol[d] = c->col2[k];
        c->aval[d] = c->val2[k];
    }
}

static void ph_copy(asm_ctx *c, int t)
{
    int64_t k = blk(c->n, t, c->nt), e = blk(c->n, t + 1, c->nt);
    if (e > k) {
        memcpy(c->acol + k, c->col + k, (size_t)(e - k) * sizeof *c->acol);
        memcpy(c->aval + k, c->val + k, (size_t)(e - k) * sizeof *c->aval);
    }
}

static void ph_check_sorted(asm_ctx *c, int t)
{
    const int64_t k0 = blk(c->n, t, c->nt), k1 = blk(c->n, t + 1, c->nt);
    const int64_t e = k1 < c->n ? k1 : c->n - 1; /* pairs (k, k + 1), across the block end */
    const int32_t *row = c->row, *col = c->col;
    int bad = 0, dis = 0;
    if (c->mirror) /* the rows alone: ph_window reads the columns (and checks their order) */
        for (int64_t k = k0; k < e; k++)
            bad |= row[k] > row[k + 1];
    else
        for (int64_t k = k0; k < e; k++) {
            bad |= row[k] > row[k + 1];
            dis |= (row[k] == row[k + 1]) & (col[k] >= col[k + 1]);
        }
    c->unsorted[t] = bad;
    c->disordered[t] = dis;
}

/* Row pointers of entries already grouped by ascending row: rowptr[r] is
 * the first entry of a row >= r; each r is written by exactly one thread. */
static void ph_rowptr_sorted(asm_ctx *c, int t)
{
    int64_t k = blk(c->n, t, c->nt), e = blk(c->n, t + 1, c->nt);
    for (; k < e; k++) {
        int64_t prev = k ? c->row[k - 1] - c->rb : -1;
        for (int64_t r = prev + 1; r <= c->row[k] - c->rb; r++)
            c->rowptr[r] = k;
    }
    if (e == c->n && e > blk(c->n, t, c->nt))
        for (int64_t r = c->row[c->n - 1] - c->rb + 1; r <= c->nrows; r++)
            c->rowptr[r] = c->n;
}

/* Rows split so that each thread gets about the same number of entries. */
static void split_rows(asm_ctx *c)
{
    int64_t total = c->rowptr[c->nrows];
    c->rlo[0] = 0;
    for (int t = 1; t < c->nt; t++) {
        int64_t target = blk(total, t, c->nt), l = c->rlo[t - 1], r = c->nrows;
        while (l < r) {
            int64_t m = l + (r - l) / 2;
            if (c->rowptr[m] >= target)
                r = m;
            else
                l = m + 1;
        }
        c->rlo[t] = l;
    }
    c->rlo[c->nt] = c->nrows;
}

static void ph_rows(asm_ctx *c, int t)
{
    int64_t d = 0;
    for (int64_t i = c->rlo[t]; i < c->rlo[t + 1]; i++) {
        int64_t b = c->rowptr[i];
        int64_t len = sort_merge_row(c->acol + b, c->aval + b, c->rowptr[i + 1] - b, &d);
        atomic_store_explicit(&c->cur[i], len, memory_order_relaxed);
    }
    c->dups[t] = d;
}

static void ph_compact(asm_ctx *c, int t)
{
    for (int64_t i = c->rlo[t]; i < c->rlo[t + 1]; i++) {
        int64_t s = c->rowptr[i], d = c->nrowptr[i];
        int64_t len = atomic_load_explicit(&c->cur[i], memory_order_relaxed);
        for (int64_t k = 0; k < len; k++) {
            c->ncol[d + k] = c->acol[s + k];
            c->nval[d + k] = c->aval[s + k];
        }
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the grouped mirror (see the file's opening comment) ---- */

/* Row windows a thread's mirrors may take in all: twice the rows, plus a
 * floor for small matrices (a window entry is 4 bytes). */
#define ASM_WINDOW_CAP(nrows) (2 * (nrows) + ((int64_t)1 << 20))

static void ph_window(asm_ctx *c, int t) /* the rows thread t mirrors into */
{
    const int64_t k0 = blk(c->n, t, c->nt), k1 = blk(c->n, t + 1, c->nt);
    const int64_t e = k1 < c->n ? k1 : c->n - 1; /* pairs (k, k + 1), across the block end */
    const int32_t *row = c->row, *col = c->col;
    const int64_t rb = c->rb;
    int64_t lo = INT64_MAX, hi = -1;
    /* the columns' order too, as ph_check_sorted's without a mirror: the
     * entry is in hand here (a loop of its own cost 8 ms of p256) */
    int dis = 0;
    /* and with fuse_drow, ph_rowptr_sorted's row starts (rb is 0 then) */
    int64_t *drow = c->fuse_drow ? c->drow : NULL;
    int64_t prev = k0 ? row[k0 - 1] : -1;
    for (int64_t k = k0; k < k1; k++) {
        const int32_t i = row[k], cj = col[k];
        const int64_t j = cj - rb;
        if (i != cj && in_rows(c, j)) {
            lo = j < lo ? j : lo;
            hi = j > hi ? j : hi;
        }
        dis |= cj > i; /* one triangle: lower (its mirror above) */
        if (k < e)
            dis |= (row[k + 1] == i) & (col[k + 1] <= cj);
        if (drow) {
            for (int64_t r = prev + 1; r <= i; r++)
                drow[r] = k;
            prev = i;
        }
    }
    if (drow && k1 == c->n && k1 > k0)
        for (int64_t r = row[c->n - 1] + 1; r <= c->nrows; r++)
            drow[r] = c->n;
    c->jlo[t] = hi < 0 ? 0 : lo;
    c->jhi[t] = hi < 0 ? 0 : hi + 1;
    c->disordered[t] = dis;
}

static void ph_wcount(asm_ctx *c, int t) /* thread t's mirror count per row of its window */
{
    const int64_t lo = c->jlo[t];
    uint32_t *w = c->win[t] = calloc((size_t)(c->jhi[t] - lo + 1), sizeof *w);
    c->wfail[t] = !w;
    if (!w)
        return;
    for (int64_t k = blk(c->n, t, c->nt), e = blk(c->n, t + 1, c->nt); k < e; k++) {
        const int64_t j = c->col[k] - c->rb;
        if (c->row[k] != c->col[k] && in_rows(c, j))
            w[j - lo]++;
    }
}

/* The threads whose windows meet rows [a, b), in ascending order. */
static int windows_over(const asm_ctx *c, int64_t a, int64_t b, int *ts)
{
    int m = 0;
    for (int t = 0; t <= c->nt; t++)
        if (c->win[t] && c->jlo[t] < b && c->jhi[t] > a)
            ts[m++] = t;
    return m;
}

/* Row lengths into cur[i]: its stored entries plus its mirrors; and the
 * block's sum into part[t + 1], the first half of the row pointers'
 * prefix sum (ph_woff writes them: the rows' blocks are the same). */
static void ph_wlen(asm_ctx *c, int t)
{
    const int64_t a = blk(c->nrows, t, c->nt), b = blk(c->nrows, t + 1, c->nt);
    int ts[CSR_MAX_THREADS + 1];
    const int m = windows_over(c, a, b, ts);
    int64_t longest = 0, sum = 0;
    for (int64_t i = a; i < b; i++) {
        int64_t len = c->drow[i + 1] - c->drow[i];
        for (int q = 0; q < m; q++) {
            const int u = ts[q];
            if (i >= c->jlo[u] && i < c->jhi[u])
                len += c->win[u][i - c->jlo[u]];
        }
        atomic_store_explicit(&c->cur[i], len, memory_order_relaxed);
        longest = len > longest ? len : longest;
        sum += len;
    }
    c->kept[t] = longest;
    c->part[t + 1] = sum;
}

/* The row pointers from the block's start (part[t], summed over the blocks
 * before), and each window entry becomes that thread's first place in the
 * row, counted from the row's start: after the row's stored entries and the
 * mirrors of the threads before it. A row's length fits 32 bits (checked
 * before). */
static void ph_woff(asm_ctx *c, int t)
{
    const int64_t a = blk(c->nrows, t, c->nt), b = blk(c->nrows, t + 1, c->nt);
    int ts[CSR_MAX_THREADS + 1];
    const int m = windows_over(c, a, b, ts);
    int64_t at = c->part[t];
    for (int64_t i = a; i < b; i++) {
        c->rowptr[i] = at;
        at += atomic_load_explicit(&c->cur[i], memory_order_relaxed);
        uint32_t run = (uint32_t)(c->drow[i + 1] - c->drow[i]);
        for (int q = 0; q < m; q++) {
            const int u = ts[q];
            if (i >= c->jlo[u] && i < c->jhi[u]) {
                uint32_t *w = &c->win[u][i - c->jlo[u]];
                const uint32_t h = *w;
                *w = run;
                run += h;
            }
        }
    }
}

/* A stored entry to its row's group, its mirror to its thread's cursor. */
static void ph_wscatter(asm_ctx *c, int t)
{
    const double sign = c->mirror < 0 ? -1.0 : 1.0;
    uint32_t *w = c->win[t];
    const int64_t lo = c->jlo[t];
    for (int64_t k = blk(c->n, t, c->nt), e = blk(c->n, t + 1, c->nt); k < e; k++) {
        const int32_t gi = c->row[k], gj = c->col[k];
        const int64_t i = gi - c->rb, j = gj - c->rb;
        const double v = c->val[k];
        if (k >= c->kb && k < c->ke) {
            const int64_t d = c->rowptr[i] + (k - c->kb - c->drow[i]);
            c->acol[d] = gj;
            c->aval[d] = v;
        }
        if (gi != gj && in_rows(c, j)) {
            const int64_t d = c->rowptr[j] + w[j - lo]++;
            c->acol[d] = gi;
            c->aval[d] = sign * v;
        }
    }
}

/* The second input's window: its rows' span, then its count per row. */
static int window_second(asm_ctx *c)
{
    if (c->n2 == 0)
        return 0;
    int64_t lo = INT64_MAX, hi = -1;
    for (int64_t k = 0; k < c->n2; k++) {
        const int64_t r = c->row2[k] - c->rb;
        lo = r < lo ? r : lo;
        hi = r > hi ? r : hi;
    }
    if (hi < lo)
        return -1; /* not reached: n2 > 0 */
    c->jlo[c->nt] = lo;
    c->jhi[c->nt] = hi + 1;
    uint32_t *w = c->win[c->nt] = calloc((size_t)(hi - lo + 1), sizeof *w);
    if (!w)
        return -1;
    for (int64_t k = 0; k < c->n2; k++)
        w[c->row2[k] - c->rb - lo]++;
    return 0;
}

static void scatter_second(asm_ctx *c)
{
    uint32_t *w = c->win[c->nt];
    for (int64_t k = 0; k < c->n2; k++) {
        const int64_t r = c->row2[k] - c->rb;
        const int64_t d = c->rowptr[r] + w[r - c->jlo[c->nt]]++;
        c->acol[d] = c->col2[k];
        c->aval[d] = c->val2[k];
    }
}

/* The first entry whose row is >= r, in entries grouped by ascending row. */
static int64_t first_row_at(const asm_ctx *c, int64_t r)
{
    int64_t l = 0, h = c->n;
    while (l < h) {
        const int64_t m = l + (h - l) / 2;
        if (c->row[m] >= r)
            h = m;
        else
            l = m + 1;
    }
    return l;
}

static void windows_free(asm_ctx *c)
{
    for (int t = 0; t <= c->nt; t++) {
        free(c->win[t]);
        c->win[t] = NULL;
    }
    free(c->drow);
    c->drow = NULL;
}

static int grouped_mirror_off(void)
{
    const char *s = getenv("CLSOLVE_CSR_PATH"); /* "scatter": the atomic path (A/B runs) */
    return s && strcmp(s, "scatter") == 0;
}

/* The grouped mirror's row pointers, A's arrays and the scatter; 1 when it
 * does not apply (the caller takes the scatter path), -1 out of memory. */
static int assemble_grouped_mirror(asm_ctx *c, csr_matrix *A, int64_t *expanded, double *t1)
{
    if (c->nt > 1 && c->n / c->nt + 1 >= (int64_t)UINT32_MAX)
        return 1; /* a window count must fit 32 bits */
    if ((c->nt == 1 && c->n >= (int64_t)UINT32_MAX) || c->n2 >= (int64_t)UINT32_MAX ||
        c->n2 > c->n / 8 + 4096)
        return 1; /* the second input is scattered serially: only a few */
    /* a whole matrix (its entries' rows all in [0, nrows), grouped): the
     * window pass, which reads every row anyway, writes the row starts
     * (a pass of their own cost 11-17 ms of poisson3d 256 on 16 cores) */
    c->fuse_drow = c->rb == 0 && c->n > 0 && c->row[0] >= 0 && c->row[c->n - 1] < c->nrows;
    if (c->fuse_drow) {
        c->drow = cls_big_malloc((size_t)(c->nrows + 1) * sizeof *c->drow);
        if (!c->drow)
            return -1;
    }
    c->ngt = 0;
    c->gt[c->ngt++] = now_s();
    run_par(c, ph_window);
    c->gt[c->ngt++] = now_s();
    int64_t cover = 0;
    int dis = 0;
    for (int t = 0; t < c->nt; t++) {
        cover += c->jhi[t] - c->jlo[t];
        dis |= c->disordered[t];
    }
    if (cover > ASM_WINDOW_CAP(c->nrows)) {
        windows_free(c); /* drow, if made; no window yet */
        return 1;
    }
    /* the rows kept are a run of the grouped input: [kb, ke) */
    c->kb = first_row_at(c, c->rb);
    c->ke = first_row_at(c, c->rb + c->nrows);
    if (!c->fuse_drow && !(c->drow = cls_big_malloc((size_t)(c->nrows + 1) * sizeof *c->drow)))
        return -1;
    if (!c->fuse_drow) { /* ph_rowptr_sorted over that run, into drow */
        int64_t *rowptr = c->rowptr, n = c->n;
        const int32_t *row = c->row;
        c->rowptr = c->drow;
        c->row = row + c->kb;
        c->n = c->ke - c->kb;
        if (c->n == 0)
            memset(c->drow, 0, (size_t)(c->nrows + 1) * sizeof *c->drow);
        else
            run_par(c, ph_rowptr_sorted);
        c->rowptr = rowptr;
        c->row = row;
        c->n = n;
    }
    c->gt[c->ngt++] = now_s();
    run_par(c, ph_wcount);
    int failed = window_second(c) != 0;
    for (int t = 0; t < c->nt; t++)
        failed |= c->wfail[t];
    if (failed) {
        windows_free(c);
        return -1;
    }
    c->gt[c->ngt++] = now_s();
    run_par(c, ph_wlen);
    c->gt[c->ngt++] = now_s();
    int64_t longest = 0;
    for (int t = 0; t < c->nt; t++)
        longest = c->kept[t] > longest ? c->kept[t] : longest;
    if (longest >= (int64_t)UINT32_MAX) {
        windows_free(c);
        return 1;
    }
    const int64_t total = part_starts(c); /* ph_wlen summed the blocks */
    c->rowptr[c->nrows] = total;
    run_par(c, ph_woff);
    c->gt[c->ngt++] = now_s();
    A->col = cls_big_malloc((size_t)(total ? total : 1) * sizeof *A->col);
    A->val = cls_big_malloc((size_t)(total ? total : 1) * sizeof *A->val);
    if (!A->col || !A->val) {
        windows_free(c);
        return -1;
    }
    c->acol = A->col;
    c->aval = A->val;
    /* No touch pass first (the scatter path's): a thread's writes land
     * mostly in its own rows, in order, so its page faults do not queue
     * behind other threads'. On 32 cores at poisson3d 256 the pass cost
     * 30-50 ms and saved 15-20 ms of the scatter. */
    if (expanded)
        *expanded = total;
    *t1 = now_s();
    run_par(c, ph_wscatter);
    if (c->n2)
        scatter_second(c);
    windows_free(c);
    /* a row's stored entries (columns <= i) come first and its mirrors
     * (columns > i) follow in the input's order, by ascending row: in
     * order when the input's rows are (no second input: its entries go
     * last, in any order) */
    c->in_order = !dis && c->n2 == 0;
    return 0;
}

static int asm_threads(int threads, int64_t work)
{
    int nt = threads;
    if (nt <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        nt = n > 0 ? (int)(n < CSR_MAX_THREADS ? n : CSR_MAX_THREADS) : 1;
    }
    if (nt > CSR_MAX_THREADS)
        nt = CSR_MAX_THREADS;
    if (work < csr_par_min)
        nt = 1;
    return nt;
}

/* Sort and merge every row, then close the gaps the merges left: in place
 * alone, into fresh arrays (no overlap between threads) with several. */
static int finish_rows(asm_ctx *c, csr_matrix *A, int64_t *dups_out, double *tsort)
{
    if (c->in_order) { /* every row ascends already, without a duplicate */
        *tsort = now_s();
        if (dups_out)
            *dups_out = 0;
        A->nnz = c->rowptr[c->nrows];
        return CLS_OK;
    }
    split_rows(c);
    run_par(c, ph_rows);
    int64_t dups = 0;
    for (int t = 0; t < c->nt; t++)
        dups += c->dups[t];
    *tsort = now_s();
    if (dups_out)
        *dups_out = dups;
    int64_t total = c->rowptr[c->nrows];
    if (!dups) {
        A->nnz = total;
        return CLS_OK;
    }
    if (c->nt == 1) {
        int64_t out = 0;
        for (int64_t i = 0; i < c->nrows; i++) {
            int64_t s = c->rowptr[i];
            int64_t len = atomic_load_explicit(&c->cur[i], memory_order_relaxed);
            if (out != s) {
                memmove(c->acol + out, c->acol + s, (size_t)len * sizeof *c->acol);
                memmove(c->aval + out, c->aval + s, (size_t)len * sizeof *c->aval);
            }
            c->rowptr[i] = out;
            out += len;
        }
        c->rowptr[c->nrows] = out;
        A->nnz = out;
        return CLS_OK;
    }
    int64_t nnz = total - dups;
    c->nrowptr = malloc((size_t)(c->nrows + 1) * sizeof *c->nrowptr);
    c->ncol = cls_big_malloc((size_t)(nnz ? nnz : 1) * sizeof *c->ncol);
    c->nval = cls_big_malloc((size_t)(nnz ? nnz : 1) * sizeof *c->nval);
    if (!c->nrowptr || !c->ncol || !c->nval) {
        free(c->nrowptr);
        free(c->ncol);
        free(c->nval);
        return CLS_EOTHER;
    }
    psum(c, ph_psum_new);
    c->nrowptr[c->nrows] = nnz;
    run_par(c, ph_compact);
    free(A->rowptr);
    free(A->col);
    free(A->val);
    A->rowptr = c->nrowptr;
    A->col = c->ncol;
    A->val = c->nval;
    A->nnz = nnz;
    return CLS_OK;
}

static int profile_on(void)
{
    const char *s = getenv("CLSOLVE_MM_PROFILE");
    return s && *s && strcmp(s, "0") != 0;
}

/* The entry points share this: Cm != NULL (C itself) may adopt C's arrays
 * and frees C in any case; rows [rb, re) of C are kept (re < 0: all of
 * them); X (may be NULL) is more entries, rows in [rb, re), no mirror,
 * freed in any case. */
static int assemble(coo_matrix *Cm, const coo_matrix *C, int mirror, int64_t rb, int64_t re,
                    coo_matrix *X, int threads, csr_matrix *A, int64_t *expanded,
                    int64_t *duplicates, cls_error *err)
{
    double t0 = now_s();
    csr_init(A);
    const int64_t nrows = re < 0 ? C->nrows : re - rb;
    const int64_t n2 = X ? X->nnz : 0;
    asm_ctx *c = calloc(1, sizeof *c);
    if (!c)
        goto oom;
    c->nt = asm_threads(threads, C->nnz + n2 + nrows);
    c->mirror = mirror;
    c->n = C->nnz;
    c->nrows = nrows;
    c->rb = re < 0 ? 0 : rb;
    c->row = C->row;
    c->col = C->col;
    c->val = C->val;
    if (n2 > 0) {
        c->n2 = n2;
        c->row2 = X->row;
        c->col2 = X->col;
        c->val2 = X->val;
    }
    A->nrows = nrows;
    A->ncols = C->ncols;
    c->cur = cls_big_calloc((size_t)(nrows ? nrows : 1) * sizeof *c->cur);
    A->rowptr = cls_big_malloc((size_t)(nrows + 1) * sizeof *A->rowptr);
    if (!c->cur || !A->rowptr)
        goto oom;
    c->rowptr = A->rowptr;
    const char *path = "scatter";
    double t1, t2, t3;

    /* grouped by ascending row: adopted as they are (no mirror, every row
     * kept, nothing else), or the grouped mirror */
    int sorted = 0, adopt_dis = 0; /* adopt_dis: ph_check_sorted's column order (no mirror) */
    if ((!mirror && n2 == 0) || (mirror && !grouped_mirror_off())) {
        run_par(c, ph_check_sorted);
        sorted = 1;
        for (int t = 0; t < c->nt; t++) {
            sorted &= !c->unsorted[t];
            adopt_dis |= c->disordered[t];
        }
        /* rows ascend, so the ends say whether every row is kept */
        if (sorted && !mirror && c->n > 0)
            sorted = in_rows(c, c->row[0] - c->rb) && in_rows(c, c->row[c->n - 1] - c->rb);
    }
    int grouped = 1; /* 0: built by the grouped mirror */
    if (sorted && mirror) {
        grouped = assemble_grouped_mirror(c, A, expanded, &t1);
        if (grouped < 0)
            goto oom;
        if (grouped == 0) {
            path = "grouped mirror";
            t2 = now_s();
        }
    }
    if (grouped == 0) {
        /* A's arrays are built */
    } else if (sorted && !mirror) {
        /* grouped by row already (the common case for files written row by
         * row): the column and value arrays become A's as they are */
        path = Cm ? "adopt" : "copy";
        c->in_order = !adopt_dis; /* grouped, columns strictly ascending: in order as they are */
        if (c->n == 0)
            memset(A->rowptr, 0, (size_t)(nrows + 1) * sizeof *A->rowptr);
        else
            run_par(c, ph_rowptr_sorted);
        t1 = now_s();
        if (Cm && Cm->col) {
            A->col = Cm->col;
            A->val = Cm->val;
            free(Cm->row);
            coo_init(Cm);
            c->row = NULL;
            c->col = NULL;
            c->val = NULL;
        } else {
            A->col = cls_big_malloc((size_t)(c->n ? c->n : 1) * sizeof *A->col);
            A->val = cls_big_malloc((size_t)(c->n ? c->n : 1) * sizeof *A->val);
            if (!A->col || !A->val)
                goto oom;
            c->acol = A->col;
            c->aval = A->val;
            run_par(c, ph_copy);
        }
        if (expanded)
            *expanded = c->n;
        t2 = now_s();
    } else {
        run_par(c, ph_count); /* into cur[], zeroed by calloc */
        int64_t total = 0;
        for (int t = 0; t < c->nt; t++)
            total += c->kept[t];
        if (expanded)
            *expanded = total;
        A->col = cls_big_malloc((size_t)(total ? total : 1) * sizeof *A->col);
        A->val = cls_big_malloc((size_t)(total ? total : 1) * sizeof *A->val);
        if (!A->col || !A->val)
            goto oom;
        c->acol = A->col;
        c->aval = A->val;
        psum(c, ph_psum_b);
        A->rowptr[nrows] = total;
        if (c->nt > 1) {
            c->ntouch = total;
            run_par(c, ph_touch);
        }
        t1 = now_s();
        run_par(c, ph_scatter);
        t2 = now_s();
    }
    c->acol = A->col;
    c->aval = A->val;
    if (finish_rows(c, A, duplicates, &t3))
        goto oom;
    double t4 = now_s();
    csr_path_last = path;
    csr_in_order_last = c->in_order;
    if (profile_on()) {
        char split[160] = "";
        if (grouped == 0 && c->ngt == 6) /* window, rows, counts, lengths, offsets */
            snprintf(split, sizeof split,
                     " (grouped? %.1f, window %.1f, rows %.1f, counts %.1f, lengths %.1f, "
                     "offsets %.1f, arrays %.1f)",
                     1e3 * (c->gt[0] - t0), 1e3 * (c->gt[1] - c->gt[0]),
                     1e3 * (c->gt[2] - c->gt[1]), 1e3 * (c->gt[3] - c->gt[2]),
                     1e3 * (c->gt[4] - c->gt[3]), 1e3 * (c->gt[5] - c->gt[4]),
                     1e3 * (t1 - c->gt[5]));
        fprintf(stderr,
                "csr_from_coo: %s, %d thread%s, %lld entries: count+rowptr %.1f ms%s, "
                "scatter %.1f ms, sort+merge %.1f ms, compact %.1f ms, total %.1f ms\n",
                path, c->nt, c->nt == 1 ? "" : "s", (long long)c->n, 1e3 * (t1 - t0), split,
                1e3 * (t2 - t1), 1e3 * (t3 - t2), 1e3 * (t4 - t3), 1e3 * (t4 - t0));
    }
    free(c->cur);
    free(c);
    if (Cm)
        coo_free(Cm);
    if (X)
        coo_free(X);
    return CLS_OK;
oom:
    if (c)
        free(c->cur);
    free(c);
    csr_free(A);
    if (Cm)
        coo_free(Cm);
    if (X)
        coo_free(X);
    return cls_fail(err, CLS_EOTHER, "out of memory assembling CSR");
}

int csr_from_coo_mt(const coo_matrix *C, int mirror, int threads, csr_matrix *A, int64_t *expanded,
                    int64_t *duplicates, cls_error *err)
{
    return assemble(NULL, C, mirror, 0, -1, NULL, threads, A, expanded, duplicates, err);
}

int csr_from_coo_take(coo_matrix *C, int mirror, int threads, csr_matrix *A, int64_t *expanded,
                      int64_t *duplicates, cls_error *err)
{
    return assemble(C, C, mirror, 0, -1, NULL, threads, A, expanded, duplicates, err);
}

int csr_from_coo_rows_take(coo_matrix *C, int mirror, int64_t rb, int64_t re, coo_matrix *X,
                           int threads, csr_matrix *A, int64_t *expanded, int64_t *duplicates,
                           cls_error *err)
{
    return assemble(C, C, mirror, rb, re, X, threads, A, expanded, duplicates, err);
}

int csr_from_coo(const coo_matrix *C, csr_matrix *A, int64_t *duplicates, cls_error *err)
{
    return assemble(NULL, C, 0, 0, -1, NULL, 0, A, NULL, duplicates, err);
}
