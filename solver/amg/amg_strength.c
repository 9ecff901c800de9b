/*
 * amg_strength.c: the strength-of-connection graph of smoothed aggregation.
 *
 * Strength (Vanek, Mandel, Brezina, "Algebraic multigrid by smoothed
 * aggregation for second and fourth order elliptic problems", Computing 56,
 * 1996, section 3; PETSc GAMG's graph filter): i and j are strongly
 * connected when
 *     |a_ij| > theta * sqrt(|a_ii a_jj|),
 * a symmetric test, so S is symmetric when A is. theta = 0 keeps every
 * stored nonzero. The diagonal is never an edge.
 *
 * The graph is built in two parallel passes over row chunks (count, then
 * fill at the prefix-summed offsets): each chunk writes only its own rows.
 */
#include "amg_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- strength */

typedef struct {
    const csr_matrix *A;
    const double *diag;
    double *dsq; /* 1 / sqrt(|a_ii|) (0 where a_ii = 0) */
    double theta;
    amg_graph *S;
    int pass; /* 0: count into ptr[i + 1]; 1: fill; 2: dsq */
} str_ctx;

/* strength of the edge (i, j), NaN when it is not strong */
static inline double edge_strength(const str_ctx *c, int64_t i, int64_t k)
{
    int32_t j = c->A->col[k];
    if (j == i)
        return NAN;
    double a = fabs(c->A->val[k]), dd = c->dsq[i] * c->dsq[j];
    double s = dd > 0.0 ? a * dd : (a > 0.0 ? INFINITY : 0.0);
    return a > 0.0 && s > c->theta ? s : NAN;
}

static void str_range(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    str_ctx *c = arg;
    const csr_matrix *A = c->A;
    if (c->pass == 2) {
        for (int64_t i = b; i < e; i++)
            c->dsq[i] = c->diag[i] != 0.0 ? 1.0 / sqrt(fabs(c->diag[i])) : 0.0;
        return;
    }
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
    double *dsq = malloc((size_t)(A->nrows ? A->nrows : 1) * sizeof *dsq);
    if (!dsq) {
        amg_graph_free(S);
        return cls_fail(err, CLS_EOTHER, "amg: out of memory for the strength graph");
    }
    str_ctx c = {A, diag, dsq, threshold, S, 2};
    amg_par_chunks(A->nrows, AMG_GRAIN, str_range, &c);
    c.pass = 0;
    amg_par_chunks(A->nrows, AMG_GRAIN, str_range, &c);
    int64_t ne = amg_par_offsets(S->ptr, A->nrows);
    S->adj = malloc((size_t)(ne ? ne : 1) * sizeof *S->adj);
    S->w = malloc((size_t)(ne ? ne : 1) * sizeof *S->w);
    if (!S->adj || !S->w) {
        free(dsq);
        amg_graph_free(S);
        return cls_fail(err, CLS_EOTHER, "amg: out of memory for %lld strong edges", (long long)ne);
    }
    c.pass = 1;
    amg_par_chunks(A->nrows, AMG_GRAIN, str_range, &c);
    free(dsq);
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
