/*
 * dcheck.c: the input checks across ranks (dcheck.h).
 *
 *  1. NaN or Inf anywhere, and max |a_ij|: one all-reduce.
 *  2. Each rank finds its first row whose diagonal is missing or not
 *     positive: a local scan.
 *  3. The mirrors (general storage only): every upper entry a(i,j), j > i,
 *     travels to the owner of row j (droute.h) as the query (j, i, a_ij);
 *     the owner compares it with its a(j,i). A failure is keyed by the row
 *     and column the single-rank check would stop at, (i, j), a diagonal
 *     failure by (i, -1), so the minimum key over all ranks (one
 *     all-reduce) is the failure that check reports; its holder formats the
 *     message, and the agreement sends it to every rank.
 */
#include "dcheck.h"

#include <math.h>
#include <stdlib.h>

#include "../../common/parallel.h"

#include "../dsolve_priv.h"
#include "../solve.h"
#include "droute.h"

/* The failure this rank holds with the smallest key. */
typedef struct dcheck_fail {
    int64_t key; /* i (n + 1) + (j + 1); INT64_MAX: none */
    int64_t i, j;
    double aij, aji;
    int diag_present;
} dcheck_fail;

static void fail_keep(dcheck_fail *f, int64_t n, int64_t i, int64_t j, double aij, double aji,
                      int present)
{
    int64_t key = i * (n + 1) + (j + 1);
    if (key < f->key)
        *f = (dcheck_fail){key, i, j, aij, aji, present};
}

/* Steps 1 and 2 on every core, over fixed ranges: per range the values'
 * verdict and the first row with a bad diagonal; the ranges are combined
 * in order, so the row found is the scan's. */
#define DCHECK_MAX_RANGES 256
typedef struct scan_ctx {
    const csr_matrix *blk;
    int64_t rb;
    double nonfinite[DCHECK_MAX_RANGES], amax[DCHECK_MAX_RANGES];
    int64_t bad_row[DCHECK_MAX_RANGES]; /* local row; -1 none */
} scan_ctx;

static void scan_values(void *arg, int range, int64_t k0, int64_t k1)
{
    scan_ctx *c = arg;
    double bad = 0.0, m = 0.0;
    for (int64_t k = k0; k < k1; k++) {
        const double v = c->blk->val[k];
        if (!isfinite(v))
            bad = 1.0;
        else if (fabs(v) > m)
            m = fabs(v);
    }
    c->nonfinite[range] = bad;
    c->amax[range] = m;
}

static void scan_diagonal(void *arg, int range, int64_t i0, int64_t i1)
{
    scan_ctx *c = arg;
    c->bad_row[range] = -1;
    for (int64_t li = i0; li < i1; li++) {
        int64_t d = csr_find(c->blk, li, c->rb + li);
        if (!(d >= 0 && c->blk->val[d] > 0.0)) {
            c->bad_row[range] = li;
            return;
        }
    }
}

/* a grain that keeps the ranges within DCHECK_MAX_RANGES */
static int64_t scan_grain(int64_t n)
{
    int64_t g = n / DCHECK_MAX_RANGES + 1;
    return g < 65536 ? 65536 : g;
}

int dcheck_matrix(MPI_Comm comm, const int64_t *rank_begin, const csr_matrix *blk,
                  int exact_symmetric, const char *name, cls_error *err)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    const int64_t rb = rank_begin[me], n = rank_begin[size];
    /* on the stack (6 KB): a rank that failed to allocate it would leave
     * the others waiting in the all-reduce below */
    scan_ctx scan, *sx = &scan;
    sx->blk = blk;
    sx->rb = rb;
    /* 1. values */
    double m[2] = {0.0, 0.0}; /* a non-finite value seen; max |a_ij| */
    if (blk->nnz > 0) {
        const int64_t g = scan_grain(blk->nnz);
        cls_parallel_for(blk->nnz, g, scan_values, sx);
        for (int r = 0, nr = cls_parallel_ranges(blk->nnz, g); r < nr; r++) {
            m[0] = sx->nonfinite[r] > m[0] ? sx->nonfinite[r] : m[0];
            m[1] = sx->amax[r] > m[1] ? sx->amax[r] : m[1];
        }
    }
    /* 2. the diagonal: the first bad row of the first range that has one */
    dcheck_fail f = {.key = INT64_MAX};
    if (blk->nrows > 0) {
        const int64_t g = scan_grain(blk->nrows);
        cls_parallel_for(blk->nrows, g, scan_diagonal, sx);
        for (int r = 0, nr = cls_parallel_ranges(blk->nrows, g); r < nr; r++) {
            const int64_t li = sx->bad_row[r];
            if (li >= 0) {
                const int64_t d = csr_find(blk, li, rb + li);
                fail_keep(&f, n, rb + li, -1, d < 0 ? 0.0 : blk->val[d], 0.0, d >= 0);
                break; /* rows in order: the first is this rank's smallest key */
            }
        }
    }
    if (MPI_Allreduce(MPI_IN_PLACE, m, 2, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS)
        return dsolve_agree(comm, cls_fail(err, CLS_EOTHER, "MPI_Allreduce(check) failed"), err);
    if (m[0] != 0.0)
        return dsolve_agree_plain(comm, me == 0 ? solve_fail_nonfinite(name, err) : CLS_OK, err);
    const double tol = SOLVE_SYM_RTOL * m[1];
    /* 3. the mirrors */
    int rc = CLS_OK;
    if (!exact_symmetric) {
        coo_matrix q, got;
        coo_init(&q);
        int64_t up = 0;
        for (int64_t li = 0; li < blk->nrows; li++)
            for (int64_t k = blk->rowptr[li]; k < blk->rowptr[li + 1]; k++)
                up += blk->col[k] > rb + li;
        q.row = malloc((size_t)(up ? up : 1) * sizeof *q.row);
        q.col = malloc((size_t)(up ? up : 1) * sizeof *q.col);
        q.val = malloc((size_t)(up ? up : 1) * sizeof *q.val);
        if (!q.row || !q.col || !q.val) {
            rc = cls_fail(err, CLS_EOTHER, "out of memory checking the matrix's symmetry");
            up = 0;
        }
        for (int64_t li = 0, o = 0; o < up && li < blk->nrows; li++)
            for (int64_t k = blk->rowptr[li]; k < blk->rowptr[li + 1]; k++)
                if (blk->col[k] > rb + li) { /* the query (j, i, a_ij) */
                    q.row[o] = blk->col[k];
                    q.col[o] = (int32_t)(rb + li);
                    q.val[o++] = blk->val[k];
                }
        q.nnz = q.cap = up;
        /* every rank routes (a rank short of memory sends nothing) */
        int rrc = droute_coo(comm, rank_begin, &q, 0, &got, err);
        if (!rc)
            rc = rrc;
        for (int64_t k = 0; !rc && k < got.nnz; k++) {
            const int64_t j = got.row[k], i = got.col[k];
            int64_t t = csr_find(blk, j - rb, i);
            double aji = t < 0 ? 0.0 : blk->val[t];
            if (fabs(got.val[k] - aji) > tol)
                fail_keep(&f, n, i, j, got.val[k], aji, 1);
        }
        coo_free(&got);
    }
    if ((rc = dsolve_agree(comm, rc, err)))
        return rc;
    int64_t first = f.key;
    if (MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT64_T, MPI_MIN, comm) != MPI_SUCCESS)
        return dsolve_agree(comm, cls_fail(err, CLS_EOTHER, "MPI_Allreduce(check) failed"), err);
    if (first == INT64_MAX)
        return CLS_OK;
    if (f.key == first)
        rc = f.j < 0 ? solve_fail_diagonal(name, f.i, f.diag_present, f.aij, err)
                     : solve_fail_symmetry(name, f.i, f.j, f.aij, f.aji, err);
    return dsolve_agree_plain(comm, rc, err);
}
