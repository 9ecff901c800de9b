/*
 * amg_rap.c: the Galerkin coarse operator Ac = R A P (R = P'), the part of
 * the set-up that dominates its time, as two sparse products and one
 * transpose, all parallel over rows:
 *
 *   R  = P'        count per column (atomic), offsets, scatter (atomic
 *                  slots), then each row of R sorted by column: the same
 *                  matrix whatever order the threads scattered in
 *   AP = A P       row by row (Gustavson, "Two fast algorithms for sparse
 *   Ac = R AP      matrices: multiplication and permuted transposition",
 *                  ACM TOMS 4(3), 1978): row i of C is sum_k a_ik B(k,:),
 *                  gathered in a dense accumulator with a marker per column
 *                  and thread (no reset between rows: the marker holds the
 *                  row)
 *
 * AP is an intermediate: its rows keep the order their columns were first
 * met in (deterministic, and nothing reads it but the second product), and
 * only Ac's rows are sorted. Each thread appends its rows to its own
 * growing buffer per chunk of rows; the row lengths give the offsets and the
 * buffers are copied into C in parallel. The sum
 * in each entry runs in the order of A's and B's rows, so C is the same
 * bits on any number of threads. Forming AP once and reusing it for every
 * coarse row is cheaper than the one-pass triple loop, which recomputes a
 * row of AP for every entry of P in that row (PETSc's MatPtAP takes the
 * same two-step route for AIJ: "scalable" P'(AP)).
 */
#include "amg_priv.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define THREADS_MAX 64
#define MM_CHUNK 2048 /* rows per chunk of a product */

/* ---------------------------------------------------------------- sorting */

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void sort_cols(int32_t *c, int64_t m)
{
    if (m > 48) {
        qsort(c, (size_t)m, sizeof *c, cmp_i32);
        return;
    }
    for (int64_t i = 1; i < m; i++) {
        int32_t v = c[i];
        int64_t j = i;
        while (j > 0 && c[j - 1] > v) {
            c[j] = c[j - 1];
            j--;
        }
        c[j] = v;
    }
}

/* -------------------------------------------------------------- transpose */

typedef struct {
    const csr_matrix *A;
    csr_matrix *T;
    _Atomic int64_t *cnt; /* per column: count, then next free slot */
    int pass;
} tr_ctx;

static void tr_range(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    tr_ctx *c = arg;
    const csr_matrix *A = c->A;
    if (c->pass == 0) {
        for (int64_t k = A->rowptr[b]; k < A->rowptr[e]; k++)
            atomic_fetch_add_explicit(&c->cnt[A->col[k]], 1, memory_order_relaxed);
    } else if (c->pass == 1) {
        for (int64_t i = b; i < e; i++)
            for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
                int64_t p = atomic_fetch_add_explicit(&c->cnt[A->col[k]], 1, memory_order_relaxed);
                c->T->col[p] = (int32_t)i;
                c->T->val[p] = A->val[k];
            }
    } else { /* rows of T (b..e index T's rows here) sorted by column */
        for (int64_t r = b; r < e; r++)
            csr_sort_row_by_col(c->T->col + c->T->rowptr[r], c->T->val + c->T->rowptr[r],
                                c->T->rowptr[r + 1] - c->T->rowptr[r]);
    }
}

int amg_transpose(const csr_matrix *A, csr_matrix *T, cls_error *err)
{
    int rc = csr_alloc(T, A->ncols, A->nrows, A->nnz, err);
    if (rc)
        return rc;
    tr_ctx c = {A, T, calloc((size_t)A->ncols + 1, sizeof *c.cnt), 0};
    if (!c.cnt) {
        csr_free(T);
        return cls_fail(err, CLS_EOTHER, "amg: out of memory transposing %lld columns",
                        (long long)A->ncols);
    }
    amg_par_chunks(A->nrows, AMG_GRAIN, tr_range, &c);
    T->rowptr[0] = 0;
    for (int64_t j = 0; j < A->ncols; j++) { /* counts -> slots */
        int64_t k = atomic_load_explicit(&c.cnt[j], memory_order_relaxed);
        atomic_store_explicit(&c.cnt[j], T->rowptr[j], memory_order_relaxed);
        T->rowptr[j + 1] = T->rowptr[j] + k;
    }
    c.pass = 1;
    amg_par_chunks(A->nrows, AMG_GRAIN, tr_range, &c);
    c.pass = 2;
    amg_par_chunks(T->nrows, AMG_GRAIN / 4, tr_range, &c);
    free(c.cnt);
    return CLS_OK;
}

/* ----------------------------------------------------------------- SpGEMM */

typedef struct {
    int32_t *col;
    double *val;
    int64_t n, cap;
} out_buf;

/* a thread's dense accumulator: the row that last touched each column, and
 * the sum (side by side: one cache line per touch) */
typedef struct {
    int32_t mark;
    double acc;
} acc_slot;

/* the thread's accumulator, made at its first chunk (every mark -1: no
 * row); NULL when out of memory */
static acc_slot *slot_get(acc_slot **slot, int64_t ncols)
{
    if (*slot)
        return *slot;
    acc_slot *sl = malloc((size_t)(ncols ? ncols : 1) * sizeof *sl);
    if (sl)
        for (int64_t j = 0; j < ncols; j++)
            sl[j].mark = -1;
    return *slot = sl;
}

/* row i of A B summed into sl (Gustavson: sum_k a_ik B(k,:), in the order
 * of A's and B's rows); the columns first met go to cols (when not NULL),
 * their count is returned. The full product and the values-only twin both
 * sum here, so their entries are the same bits. */
static int64_t row_sum(const csr_matrix *A, const csr_matrix *B, int64_t i, acc_slot *sl,
                       int32_t *cols)
{
    int64_t m = 0;
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
        double a = A->val[k]; /* C(i,:) += a_ik B(k,:) */
        int32_t kk = A->col[k];
        for (int64_t l = B->rowptr[kk]; l < B->rowptr[kk + 1]; l++) {
            acc_slot *p = &sl[B->col[l]];
            if (p->mark != (int32_t)i) {
                p->mark = (int32_t)i;
                p->acc = a * B->val[l];
                if (cols)
                    cols[m] = B->col[l];
                m++;
            } else {
                p->acc += a * B->val[l];
            }
        }
    }
    return m;
}

typedef struct {
    const csr_matrix *A, *B;
    csr_matrix *C;
    int64_t *ptr;                /* row lengths, then offsets (n + 1) */
    out_buf *out;                /* per chunk */
    acc_slot *slot[THREADS_MAX]; /* per thread, made on its first chunk */
    int64_t maxrow_b;            /* longest row of B */
    _Atomic int failed;
    int sorted; /* sort each row's columns (a final product, not AP) */
    int pass;
} mm_ctx;

static int buf_grow(out_buf *o, int64_t need)
{
    if (o->n + need <= o->cap)
        return 0;
    int64_t cap = o->cap ? o->cap : 1024;
    while (cap < o->n + need)
        cap *= 2;
    int32_t *c = realloc(o->col, (size_t)cap * sizeof *c);
    if (!c)
        return -1;
    o->col = c;
    double *v = realloc(o->val, (size_t)cap * sizeof *v);
    if (!v)
        return -1;
    o->val = v;
    o->cap = cap;
    return 0;
}

static void mm_chunk(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    mm_ctx *c = arg;
    const csr_matrix *A = c->A, *B = c->B;
    out_buf *o = &c->out[chunk];
    if (c->pass == 1) { /* copy into C */
        int64_t dst = c->C->rowptr[b];
        memcpy(c->C->col + dst, o->col, (size_t)o->n * sizeof *o->col);
        memcpy(c->C->val + dst, o->val, (size_t)o->n * sizeof *o->val);
        return;
    }
    acc_slot *sl = slot_get(&c->slot[thread], B->ncols);
    if (!sl) {
        c->failed = 1;
        return;
    }
    if (buf_grow(o, (A->rowptr[e] - A->rowptr[b]) * 2 + 16)) {
        c->failed = 1;
        return;
    }
    for (int64_t i = b; i < e; i++) {
        /* an upper bound of the row's length */
        int64_t bound = (A->rowptr[i + 1] - A->rowptr[i]) * c->maxrow_b;
        if (bound > B->ncols)
            bound = B->ncols;
        if (buf_grow(o, bound)) {
            c->failed = 1;
            return;
        }
        int32_t *cols = o->col + o->n;
        int64_t m = row_sum(A, B, i, sl, cols);
        if (c->sorted)
            sort_cols(cols, m);
        double *vals = o->val + o->n;
        for (int64_t q = 0; q < m; q++)
            vals[q] = sl[cols[q]].acc;
        o->n += m;
        c->ptr[i + 1] = m;
    }
}

int amg_spgemm(const csr_matrix *A, const csr_matrix *B, int sorted, csr_matrix *C, cls_error *err)
{
    csr_init(C);
    if (A->ncols != B->nrows)
        return cls_fail(err, CLS_EOTHER, "amg_spgemm: inner sizes differ (%lld vs %lld)",
                        (long long)A->ncols, (long long)B->nrows);
    if (A->nrows > INT32_MAX)
        return cls_fail(err, CLS_EOTHER, "amg_spgemm: %lld rows exceed 32-bit markers",
                        (long long)A->nrows);
    mm_ctx c = {.A = A, .B = B, .C = C, .sorted = sorted};
    int64_t nch = amg_nchunks(A->nrows, MM_CHUNK);
    int rc = CLS_OK;
    for (int64_t i = 0; i < B->nrows; i++)
        if (B->rowptr[i + 1] - B->rowptr[i] > c.maxrow_b)
            c.maxrow_b = B->rowptr[i + 1] - B->rowptr[i];
    c.ptr = malloc((size_t)(A->nrows + 1) * sizeof *c.ptr);
    c.out = calloc((size_t)(nch ? nch : 1), sizeof *c.out);
    if (!c.ptr || !c.out) {
        rc = cls_fail(err, CLS_EOTHER, "amg: out of memory for a sparse product");
        goto done;
    }
    amg_par_chunks(A->nrows, MM_CHUNK, mm_chunk, &c);
    if (c.failed) {
        rc = cls_fail(err, CLS_EOTHER,
                      "amg: out of memory in a sparse product (%lld x %lld times %lld columns)",
                      (long long)A->nrows, (long long)A->ncols, (long long)B->ncols);
        goto done;
    }
    int64_t nnz = amg_par_offsets(c.ptr, A->nrows);
    if ((rc = csr_alloc(C, A->nrows, B->ncols, nnz, err)))
        goto done;
    free(C->rowptr);
    C->rowptr = c.ptr; /* the offsets become C's */
    c.ptr = NULL;
    c.pass = 1;
    amg_par_chunks(A->nrows, MM_CHUNK, mm_chunk, &c);
done:
    for (int64_t k = 0; c.out && k < nch; k++) {
        free(c.out[k].col);
        free(c.out[k].val);
    }
    for (int t = 0; t < THREADS_MAX; t++)
        free(c.slot[t]);
    free(c.out);
    free(c.ptr);
    return rc;
}

int amg_rap(const csr_matrix *A, const csr_matrix *P, const csr_matrix *R, csr_matrix *Ac,
            cls_error *err)
{
    csr_matrix AP;
    int rc = amg_spgemm(A, P, 0, &AP, err); /* AP = A P (rows left unsorted) */
    if (rc)
        return rc;
    rc = amg_spgemm(R, &AP, 1, Ac, err); /* Ac = P' (A P) */
    csr_free(&AP);
    return rc;
}

/* ------------------------------------------- the values alone (re-set-up) */

/* amg_rebuild's twins of the two steps above for a pattern known from an
 * earlier hierarchy (the same A pattern and aggregates give the same P, R
 * and Ac patterns): the values are computed into the given pattern, with
 * nothing counted, appended, copied or sorted. Each entry is the same sum
 * in the same order as the full step's, so the result is its bits. A
 * product entry that the pattern lacks, or a pattern entry that no product
 * reaches, is reported (CLS_EOTHER, "pattern"), and the caller sets the
 * level up in full. */

typedef struct {
    const csr_matrix *A;
    csr_matrix *T;
    _Atomic int missing;
} trv_ctx;

/* T(c, i) = A(i, c): found by bisection in T's sorted row c */
static void trv_range(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    (void)thread, (void)chunk;
    trv_ctx *c = arg;
    const csr_matrix *A = c->A;
    csr_matrix *T = c->T;
    for (int64_t i = b; i < e; i++)
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            int64_t lo = T->rowptr[A->col[k]], hi = T->rowptr[A->col[k] + 1];
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (T->col[mid] < (int32_t)i)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < T->rowptr[A->col[k] + 1] && T->col[lo] == (int32_t)i)
                T->val[lo] = A->val[k];
            else
                c->missing = 1;
        }
}

int amg_transpose_values(const csr_matrix *A, csr_matrix *T, cls_error *err)
{
    if (T->nrows != A->ncols || T->ncols != A->nrows || T->nnz != A->nnz)
        return cls_fail(err, CLS_EOTHER, "amg: the transpose's pattern does not match");
    trv_ctx c = {A, T, 0};
    amg_par_chunks(A->nrows, AMG_GRAIN, trv_range, &c);
    return c.missing ? cls_fail(err, CLS_EOTHER, "amg: the transpose's pattern does not match")
                     : CLS_OK;
}

typedef struct {
    const csr_matrix *A, *B;
    csr_matrix *C;
    acc_slot *slot[THREADS_MAX];
    _Atomic int failed; /* 1: out of memory, 2: the pattern does not match */
} mmv_ctx;

static void mmv_chunk(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    (void)chunk;
    mmv_ctx *c = arg;
    const csr_matrix *A = c->A, *B = c->B;
    csr_matrix *C = c->C;
    acc_slot *sl = slot_get(&c->slot[thread], B->ncols);
    if (!sl) {
        c->failed = 1;
        return;
    }
    for (int64_t i = b; i < e; i++) {
        const int64_t m = row_sum(A, B, i, sl, NULL); /* columns this row's products reach */
        if (m != C->rowptr[i + 1] - C->rowptr[i]) {
            c->failed = 2;
            return;
        }
        for (int64_t q = C->rowptr[i]; q < C->rowptr[i + 1]; q++) {
            /* a column out of range, one no product reached, or one taken
             * already (a repeat: with the count above, every reached
             * column must be taken exactly once) */
            if (C->col[q] < 0 || C->col[q] >= B->ncols || sl[C->col[q]].mark != (int32_t)i) {
                c->failed = 2;
                return;
            }
            acc_slot *p = &sl[C->col[q]];
            C->val[q] = p->acc;
            p->mark = -2; /* taken: never a row index */
        }
    }
}

int amg_spgemm_values(const csr_matrix *A, const csr_matrix *B, csr_matrix *C, cls_error *err)
{
    if (A->ncols != B->nrows || C->nrows != A->nrows || C->ncols != B->ncols ||
        A->nrows > INT32_MAX)
        return cls_fail(err, CLS_EOTHER, "amg: the product's pattern does not match");
    mmv_ctx c = {.A = A, .B = B, .C = C};
    amg_par_chunks(A->nrows, MM_CHUNK, mmv_chunk, &c);
    for (int t = 0; t < THREADS_MAX; t++)
        free(c.slot[t]);
    return c.failed == 1   ? cls_fail(err, CLS_EOTHER, "amg: out of memory in a sparse product")
           : c.failed == 2 ? cls_fail(err, CLS_EOTHER, "amg: the product's pattern does not match")
                           : CLS_OK;
}

int amg_rap_values(const csr_matrix *A, const csr_matrix *P, const csr_matrix *R, csr_matrix *Ac,
                   cls_error *err)
{
    csr_matrix AP;
    int rc = amg_spgemm(A, P, 0, &AP, err); /* AP in full: it is not kept between set-ups */
    if (rc)
        return rc;
    rc = amg_spgemm_values(R, &AP, Ac, err);
    csr_free(&AP);
    return rc;
}
