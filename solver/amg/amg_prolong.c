/*
 * amg_prolong.c: the smoothed prolongator of smoothed aggregation.
 *
 * Tentative prolongator (Vanek, Mandel, Brezina 1996, section 3.2): the
 * near-nullspace of a scalar elliptic operator is the constant, restricted
 * to each aggregate and normalised,
 *     T(i, a) = 1 / sqrt(|aggregate a|)   if row i belongs to aggregate a,
 * so T'T = I. Rows outside every aggregate are zero rows of T.
 *
 * Smoothed prolongator (ibid., section 4): one damped Jacobi step on T,
 *     P = (I - omega D^-1 A) T,   omega = omega_scale / lambda_max(D^-1 A),
 * omega_scale = 4/3 in Vanek et al. (PETSc GAMG uses 1.4). Row i of P is
 *     P(i, agg(j)) += (delta_ij - omega a_ij / a_ii) T(j, agg(j))
 * over the stored a_ij: a short merge per row, parallel over rows, written
 * at A's row offsets first and compacted after (no symbolic pass).
 *
 * lambda_max(D^-1 A) comes from amg_eig.c.
 *
 * amg_prolongator_t takes T(j, agg(j)) per column instead of the sizes: a
 * part's rows of a prolongator coupled across parts (amg_coupled.c), whose
 * ghost columns belong to other parts' aggregates, whose sizes it cannot
 * count. A may then be rectangular (its columns: local, then ghosts).
 */
#include "amg_priv.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ prolongator */

typedef struct {
    const csr_matrix *A;
    const double *diag;
    const int32_t *agg;
    const double *tval;  /* 1/sqrt(|aggregate|) */
    const double *tnode; /* or T(j, agg(j)) per column j (amg_prolongator_t) */
    _Atomic int32_t *size;
    double omega;
    int32_t *tcol; /* rows written at A's row offsets */
    double *tv;
    int64_t *ptr; /* row lengths, then offsets (n + 1) */
    csr_matrix *P;
    int pass;
} pr_ctx;

static void pr_range(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    pr_ctx *c = arg;
    const csr_matrix *A = c->A;
    if (c->pass == 0) { /* aggregate sizes */
        for (int64_t i = b; i < e; i++)
            if (c->agg[i] >= 0)
                atomic_fetch_add_explicit(&c->size[c->agg[i]], 1, memory_order_relaxed);
        return;
    }
    if (c->pass == 2) { /* compaction into P */
        for (int64_t i = b; i < e; i++) {
            const int64_t *rp = c->P->rowptr;
            int64_t src = A->rowptr[i], dst = rp[i], len = rp[i + 1] - rp[i];
            memcpy(c->P->col + dst, c->tcol + src, (size_t)len * sizeof(int32_t));
            memcpy(c->P->val + dst, c->tv + src, (size_t)len * sizeof(double));
        }
        return;
    }
    for (int64_t i = b; i < e; i++) {
        int32_t *cols = c->tcol + A->rowptr[i];
        double *vals = c->tv + A->rowptr[i];
        int64_t m = 0;
        double s = c->omega / c->diag[i];
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            int32_t j = A->col[k], a = c->agg[j];
            if (a < 0)
                continue;
            /* (delta_ij - omega a_ij / a_ii) T(j, a) */
            double v = ((j == i ? 1.0 : 0.0) - s * A->val[k]) * (c->tnode ? c->tnode[j] : c->tval[a]);
            int64_t p = m;
            while (p > 0 && cols[p - 1] > a)
                p--;
            if (p > 0 && cols[p - 1] == a) {
                vals[p - 1] += v;
                continue;
            }
            memmove(cols + p + 1, cols + p, (size_t)(m - p) * sizeof *cols);
            memmove(vals + p + 1, vals + p, (size_t)(m - p) * sizeof *vals);
            cols[p] = a;
            vals[p] = v;
            m++;
        }
        c->ptr[i + 1] = m;
    }
}

int amg_prolongator(const csr_matrix *A, const double *diag, const int32_t *agg, int64_t naggs,
                    double omega, csr_matrix *P, cls_error *err)
{
    return amg_prolongator_t(A, diag, agg, NULL, naggs, omega, P, err);
}

int amg_prolongator_t(const csr_matrix *A, const double *diag, const int32_t *agg,
                      const double *tnode, int64_t naggs, double omega, csr_matrix *P,
                      cls_error *err)
{
    int64_t n = A->nrows;
    csr_init(P);
    pr_ctx c = {.A = A, .diag = diag, .agg = agg, .tnode = tnode, .omega = omega, .P = P};
    const int64_t nt = tnode ? 1 : naggs; /* the sizes only when T is not given */
    double *tval = malloc((size_t)(nt ? nt : 1) * sizeof *tval);
    c.size = calloc((size_t)(nt ? nt : 1), sizeof *c.size);
    c.tcol = malloc((size_t)(A->nnz ? A->nnz : 1) * sizeof *c.tcol);
    c.tv = malloc((size_t)(A->nnz ? A->nnz : 1) * sizeof *c.tv);
    c.ptr = malloc((size_t)(n + 1) * sizeof *c.ptr);
    c.tval = tval;
    int rc = CLS_OK;
    if (!tval || !c.size || !c.tcol || !c.tv || !c.ptr) {
        rc = cls_fail(err, CLS_EOTHER, "amg: out of memory for the prolongator (%lld rows)",
                      (long long)n);
        goto done;
    }
    if (!tnode) {
        c.pass = 0;
        amg_par_chunks(n, AMG_GRAIN, pr_range, &c);
        for (int64_t a = 0; a < naggs; a++)
            tval[a] = 1.0 / sqrt((double)atomic_load_explicit(&c.size[a], memory_order_relaxed));
    }
    c.pass = 1;
    amg_par_chunks(n, AMG_GRAIN, pr_range, &c);
    int64_t nnz = amg_par_offsets(c.ptr, n);
    if ((rc = csr_alloc(P, n, naggs, nnz, err)))
        goto done;
    free(P->rowptr);
    P->rowptr = c.ptr; /* the offsets become P's */
    c.ptr = NULL;
    c.pass = 2;
    amg_par_chunks(n, AMG_GRAIN, pr_range, &c);
done:
    free(tval);
    free(c.size);
    free(c.tcol);
    free(c.tv);
    free(c.ptr);
    return rc;
}
