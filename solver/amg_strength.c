/*
 * amg_strength.c: the strength-of-connection graph of smoothed aggregation,
 * and the parallel loops (SpMV, dot, diagonal) the other set-up files use.
 *
 * Strength (Vanek, Mandel, Brezina, "Algebraic multigrid by smoothed
 * aggregation for second and fourth order elliptic problems", Computing 56,
 * 1996, section 3; PETSc GAMG's graph filter): i and j are strongly
 * connected when
 *     |a_ij| > theta * sqrt(|a_ii a_jj|),
 * a symmetric test, so S is symmetric when A is. theta = 0 keeps every
 * stored nonzero. The diagonal is never an edge.
 *
 * The graph is built in two parallel passes over row ranges (count, then
 * fill at the prefix-summed offsets): each range writes only its own rows.
 * Dots are summed over fixed blocks of AMG_BLOCK rows, then the blocks in
 * order, so the value does not depend on the thread count.
 */
#include "amg_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/parallel.h"

/* ---------------------------------------------------------------- helpers */

typedef struct {
    const csr_matrix *A;
    const double *x;
    double *y;
} spmv_ctx;

static void spmv_range(void *arg, int range, int64_t b, int64_t e)
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
    cls_parallel_for(A->nrows, AMG_GRAIN, spmv_range, &c);
}

typedef struct {
    const double *x, *y;
    int64_t n;
    double *part; /* one partial per fixed block */
} dot_ctx;

static void dot_range(void *arg, int range, int64_t b, int64_t e)
{
    dot_ctx *c = arg;
    for (int64_t blk = b; blk < e; blk++) {
        int64_t i0 = blk * AMG_BLOCK, i1 = i0 + AMG_BLOCK < c->n ? i0 + AMG_BLOCK : c->n;
        double s = 0.0;
        for (int64_t i = i0; i < i1; i++)
            s += c->x[i] * c->y[i];
        c->part[blk] = s;
    }
}

double amg_par_dot(const double *x, const double *y, int64_t n)
{
    int64_t nb = (n + AMG_BLOCK - 1) / AMG_BLOCK;
    double stackp[64], *part = nb <= 64 ? stackp : malloc((size_t)nb * sizeof *part);
    if (!part) { /* no memory for partials: one serial pass, same block order */
        double s = 0.0;
        for (int64_t blk = 0; blk < nb; blk++) {
            double t = 0.0;
            for (int64_t i = blk * AMG_BLOCK; i < n && i < (blk + 1) * AMG_BLOCK; i++)
                t += x[i] * y[i];
            s += t;
        }
        return s;
    }
    dot_ctx c = {x, y, n, part};
    cls_parallel_for(nb, AMG_GRAIN / AMG_BLOCK, dot_range, &c);
    double s = 0.0;
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

static void diag_range(void *arg, int range, int64_t b, int64_t e)
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
    cls_parallel_for(A->nrows, AMG_GRAIN, diag_range, &c);
}

/* --------------------------------------------------------------- strength */

typedef struct {
    const csr_matrix *A;
    const double *diag;
    double theta;
    amg_graph *S;
    int pass; /* 0: count into ptr[i + 1]; 1: fill */
} str_ctx;

/* strength of the edge (i, j), NaN when it is not strong */
static inline double edge_strength(const str_ctx *c, int64_t i, int64_t k)
{
    int32_t j = c->A->col[k];
    if (j == i)
        return NAN;
    double a = fabs(c->A->val[k]), dd = sqrt(fabs(c->diag[i] * c->diag[j]));
    double s = dd > 0.0 ? a / dd : (a > 0.0 ? INFINITY : 0.0);
    return a > 0.0 && s > c->theta ? s : NAN;
}

static void str_range(void *arg, int range, int64_t b, int64_t e)
{
    str_ctx *c = arg;
    const csr_matrix *A = c->A;
    for (int64_t i = b; i < e; i++) {
        if (c->pass == 0) {
            int64_t cnt = 0;
            for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
                cnt += !isnan(edge_strength(c, i, k));
            c->S->ptr[i + 1] = cnt;
        } else {
            int64_t p = c->S->ptr[i];
            for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
                double s = edge_strength(c, i, k);
                if (!isnan(s)) {
                    c->S->adj[p] = A->col[k];
                    c->S->w[p++] = (float)(isinf(s) ? 1e30 : s);
                }
            }
        }
    }
}

int amg_strength(const csr_matrix *A, const double *diag, double threshold, amg_graph *S,
                 cls_error *err)
{
    memset(S, 0, sizeof *S);
    S->n = A->nrows;
    S->ptr = calloc((size_t)A->nrows + 1, sizeof *S->ptr);
    if (!S->ptr)
        return cls_fail(err, CLS_EOTHER, "amg: out of memory for the strength graph (%lld rows)",
                        (long long)A->nrows);
    str_ctx c = {A, diag, threshold, S, 0};
    cls_parallel_for(A->nrows, AMG_GRAIN, str_range, &c);
    for (int64_t i = 0; i < A->nrows; i++) /* counts -> offsets */
        S->ptr[i + 1] += S->ptr[i];
    int64_t ne = S->ptr[A->nrows];
    S->adj = malloc((size_t)(ne ? ne : 1) * sizeof *S->adj);
    S->w = malloc((size_t)(ne ? ne : 1) * sizeof *S->w);
    if (!S->adj || !S->w) {
        amg_graph_free(S);
        return cls_fail(err, CLS_EOTHER, "amg: out of memory for %lld strong edges", (long long)ne);
    }
    c.pass = 1;
    cls_parallel_for(A->nrows, AMG_GRAIN, str_range, &c);
    return CLS_OK;
}

void amg_graph_free(amg_graph *S)
{
    if (!S)
        return;
    free(S->ptr);
    free(S->adj);
    free(S->w);
    memset(S, 0, sizeof *S);
}
