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
 *                  gathered in a dense accumulator with a marker array per
 *                  thread (no reset between rows: the marker holds the row)
 *
 * Each thread appends its rows to its own growing buffer; the row lengths
 * give the offsets and the buffers are copied into C in parallel. The sum
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

#include "../common/parallel.h"

#define RANGES_MAX 64

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

/* sorts (col, val) pairs of one row by column (insertion: rows are short) */
static void sort_pairs(int32_t *c, double *v, int64_t m)
{
    for (int64_t i = 1; i < m; i++) {
        int32_t ci = c[i];
        double vi = v[i];
        int64_t j = i;
        while (j > 0 && c[j - 1] > ci) {
            c[j] = c[j - 1];
            v[j] = v[j - 1];
            j--;
        }
        c[j] = ci;
        v[j] = vi;
    }
}

/* -------------------------------------------------------------- transpose */

typedef struct {
    const csr_matrix *A;
    csr_matrix *T;
    _Atomic int64_t *cnt; /* per column: count, then next free slot */
    int pass;
} tr_ctx;

static void tr_range(void *arg, int range, int64_t b, int64_t e)
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
            sort_pairs(c->T->col + c->T->rowptr[r], c->T->val + c->T->rowptr[r],
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
    cls_parallel_for(A->nrows, AMG_GRAIN, tr_range, &c);
    T->rowptr[0] = 0;
    for (int64_t j = 0; j < A->ncols; j++) { /* counts -> slots */
        int64_t k = atomic_load_explicit(&c.cnt[j], memory_order_relaxed);
        atomic_store_explicit(&c.cnt[j], T->rowptr[j], memory_order_relaxed);
        T->rowptr[j + 1] = T->rowptr[j] + k;
    }
    c.pass = 1;
    cls_parallel_for(A->nrows, AMG_GRAIN, tr_range, &c);
    c.pass = 2;
    cls_parallel_for(T->nrows, AMG_GRAIN / 4, tr_range, &c);
    free(c.cnt);
    return CLS_OK;
}

/* ----------------------------------------------------------------- SpGEMM */

typedef struct {
    int32_t *col;
    double *val;
    int64_t n, cap;
    int64_t first_row;
} out_buf;

typedef struct {
    const csr_matrix *A, *B;
    csr_matrix *C;
    int64_t *len;
    out_buf out[RANGES_MAX];
    int failed;
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

static void mm_range(void *arg, int range, int64_t b, int64_t e)
{
    mm_ctx *c = arg;
    const csr_matrix *A = c->A, *B = c->B;
    out_buf *o = &c->out[range];
    if (c->pass == 1) { /* copy into C */
        int64_t dst = c->C->rowptr[b];
        memcpy(c->C->col + dst, o->col, (size_t)o->n * sizeof *o->col);
        memcpy(c->C->val + dst, o->val, (size_t)o->n * sizeof *o->val);
        return;
    }
    o->first_row = b;
    int32_t *mark = malloc((size_t)(B->ncols ? B->ncols : 1) * sizeof *mark);
    double *acc = malloc((size_t)(B->ncols ? B->ncols : 1) * sizeof *acc);
    if (!mark || !acc || buf_grow(o, (A->rowptr[e] - A->rowptr[b]) * 2 + 16)) {
        c->failed = 1;
        goto out;
    }
    for (int64_t j = 0; j < B->ncols; j++)
        mark[j] = -1;
    for (int64_t i = b; i < e; i++) {
        /* an upper bound of the row's length: the flops of the row */
        int64_t bound = 0;
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            bound += B->rowptr[A->col[k] + 1] - B->rowptr[A->col[k]];
        if (bound > B->ncols)
            bound = B->ncols;
        if (buf_grow(o, bound)) {
            c->failed = 1;
            goto out;
        }
        int32_t *cols = o->col + o->n;
        int64_t m = 0;
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            double a = A->val[k]; /* C(i,:) += a_ik B(k,:) */
            int32_t kk = A->col[k];
            for (int64_t l = B->rowptr[kk]; l < B->rowptr[kk + 1]; l++) {
                int32_t j = B->col[l];
                if (mark[j] != (int32_t)i) {
                    mark[j] = (int32_t)i;
                    acc[j] = a * B->val[l];
                    cols[m++] = j;
                } else {
                    acc[j] += a * B->val[l];
                }
            }
        }
        sort_cols(cols, m);
        double *vals = o->val + o->n;
        for (int64_t q = 0; q < m; q++)
            vals[q] = acc[cols[q]];
        o->n += m;
        c->len[i] = m;
    }
out:
    free(mark);
    free(acc);
}

int amg_spgemm(const csr_matrix *A, const csr_matrix *B, csr_matrix *C, cls_error *err)
{
    csr_init(C);
    if (A->ncols != B->nrows)
        return cls_fail(err, CLS_EOTHER, "amg_spgemm: inner sizes differ (%lld vs %lld)",
                        (long long)A->ncols, (long long)B->nrows);
    if (A->nrows > INT32_MAX)
        return cls_fail(err, CLS_EOTHER, "amg_spgemm: %lld rows exceed 32-bit markers",
                        (long long)A->nrows);
    mm_ctx c = {.A = A, .B = B, .C = C};
    int nr = cls_parallel_ranges(A->nrows, AMG_GRAIN / 2);
    int rc = CLS_OK;
    c.len = malloc((size_t)(A->nrows ? A->nrows : 1) * sizeof *c.len);
    if (!c.len) {
        rc = cls_fail(err, CLS_EOTHER, "amg: out of memory for a sparse product");
        goto done;
    }
    cls_parallel_for(A->nrows, AMG_GRAIN / 2, mm_range, &c);
    if (c.failed) {
        rc = cls_fail(err, CLS_EOTHER,
                      "amg: out of memory in a sparse product (%lld x %lld times %lld columns)",
                      (long long)A->nrows, (long long)A->ncols, (long long)B->ncols);
        goto done;
    }
    int64_t nnz = 0;
    for (int r = 0; r < nr; r++)
        nnz += c.out[r].n;
    if ((rc = csr_alloc(C, A->nrows, B->ncols, nnz, err)))
        goto done;
    C->rowptr[0] = 0;
    for (int64_t i = 0; i < A->nrows; i++)
        C->rowptr[i + 1] = C->rowptr[i] + c.len[i];
    c.pass = 1;
    cls_parallel_for(A->nrows, AMG_GRAIN / 2, mm_range, &c);
done:
    for (int r = 0; r < RANGES_MAX; r++) {
        free(c.out[r].col);
        free(c.out[r].val);
    }
    free(c.len);
    return rc;
}

int amg_rap(const csr_matrix *A, const csr_matrix *P, const csr_matrix *R, csr_matrix *Ac,
            cls_error *err)
{
    csr_matrix AP;
    int rc = amg_spgemm(A, P, &AP, err); /* AP = A P */
    if (rc)
        return rc;
    rc = amg_spgemm(R, &AP, Ac, err); /* Ac = P' (A P) */
    csr_free(&AP);
    return rc;
}
