/*
 * amg_coupled.c: the host pieces of a hierarchy coupled across parts (the
 * coupled mode of pc_amg.c; docs/amg.md, "Across parts").
 *
 * Design: aggregates inside each part, everything else global, as PETSc's
 * GAMG and ML build it across processes when they do not aggregate across
 * them. Each part aggregates its own diagonal block (amg_part_aggregates:
 * amg_build's level 0 on the block); the aggregates are numbered globally,
 * part after part, and the tentative prolongator T is block diagonal. The
 * smoothing of T is not: P = (I - omega D^-1 A) T uses the whole row of A,
 * so a row next to another part reaches that part's aggregates through
 * its ghost columns, and omega = 4/3 / lambda_max(D^-1 A) of the whole
 * operator. amg_part_prolongator forms a part's rows of P given each
 * ghost's aggregate and T value (one halo exchange); they are the rows of
 * the P one process would build from the same aggregates, bit for bit.
 *
 * Why not block-diagonal P (each part smoothing T with its own block): it
 * is cheaper (restriction and prolongation without communication), but the
 * truncated rows at the boundary made the coupled preconditioner take
 * 2.3-2.9x the one-part iterations on 1138_bus over 2-4 parts (117-149
 * against 51); with the global smoothing it is 1.0-1.1x on Poisson.
 *
 * The coarse operator A_c = P'AP: part p holds rows A_p and P_p, and needs
 * the rows of P of its ghost columns (another halo exchange: G); then
 *
 *   C_p = P_p' (A_p [P_p; G])        (amg_coupled_rows)
 *
 * and A_c = sum_p C_p: C_p's rows are every aggregate P_p touches, its own
 * and its neighbours', so the caller sums them (the coarse rank does, as it
 * gathers them). Two of amg_rap.c's sparse products per part.
 */
#include "amg_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int amg_part_aggregates(const csr_matrix *B, const amg_options *opt, int32_t *agg, int64_t *naggs,
                        cls_error *err)
{
    amg_options def;
    if (!opt) {
        amg_options_default(&def);
        opt = &def;
    }
    const int64_t n = B->nrows;
    *naggs = 0;
    if (n == 0)
        return CLS_OK;
    double *diag = malloc((size_t)n * sizeof *diag);
    amg_graph S = {0};
    int rc = CLS_OK;
    if (!diag)
        return cls_fail(err, CLS_EOTHER, "amg: out of memory (a part's aggregates, %lld rows)",
                        (long long)n);
    amg_par_diag(B, diag);
    for (int64_t i = 0; i < n; i++)
        if (!(diag[i] > 0.0)) {
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "amg: row %lld of the part has diagonal %g: AMG needs a symmetric "
                          "positive-definite matrix (positive diagonal)",
                          (long long)i, diag[i]);
            goto done;
        }
    if (!(rc = amg_strength(B, diag, opt->threshold, &S, err)))
        rc = amg_aggregate(&S, agg, naggs, err);
done:
    amg_graph_free(&S);
    free(diag);
    return rc;
}

void amg_tentative_values(const int32_t *agg, int64_t n, int64_t naggs, double *t)
{
    int64_t *size = calloc((size_t)(naggs ? naggs : 1), sizeof *size);
    for (int64_t i = 0; size && i < n; i++)
        if (agg[i] >= 0 && agg[i] < naggs)
            size[agg[i]]++;
    for (int64_t i = 0; i < n; i++) /* as amg_prolongator's 1/sqrt(size) */
        t[i] = size && agg[i] >= 0 && agg[i] < naggs ? 1.0 / sqrt((double)size[agg[i]]) : 0.0;
    free(size);
}

int amg_part_prolongator(const csr_matrix *A, const int32_t *agg, const double *tnode, int64_t nc,
                         double omega, csr_matrix *P, cls_error *err)
{
    csr_init(P);
    const int64_t n = A->nrows;
    if (A->rowptr[0] != 0 || A->ncols < n)
        return cls_fail(err, CLS_EOTHER,
                        "amg_part_prolongator: the part's rows (%lld x %lld) are not local "
                        "then ghost columns from offset 0",
                        (long long)n, (long long)A->ncols);
    if (nc > INT32_MAX)
        return cls_fail(err, CLS_EOTHER, "amg: %lld coarse rows exceed 32-bit columns",
                        (long long)nc);
    double *diag = malloc((size_t)(n ? n : 1) * sizeof *diag);
    if (!diag)
        return cls_fail(err, CLS_EOTHER, "amg: out of memory (a part's prolongator)");
    amg_par_diag(A, diag); /* local columns first: a_ii is column i */
    int rc = CLS_OK;
    for (int64_t i = 0; i < n && !rc; i++)
        if (!(diag[i] > 0.0))
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "amg: row %lld of the part has diagonal %g: AMG needs a symmetric "
                          "positive-definite matrix (positive diagonal)",
                          (long long)i, diag[i]);
    if (!rc)
        rc = amg_prolongator_t(A, diag, agg, tnode, nc, omega, P, err);
    free(diag);
    return rc;
}

int amg_coupled_check(const csr_matrix *A, const csr_matrix *P, const csr_matrix *G, cls_error *err)
{
    const int64_t nl = P->nrows, ng = G->nrows;
    if (A->nrows != nl || A->ncols != nl + ng || (ng && G->ncols != P->ncols))
        return cls_fail(err, CLS_EOTHER,
                        "amg_coupled_rows: the part's rows (%lld x %lld) do not match its "
                        "prolongator (%lld rows) and ghosts (%lld)",
                        (long long)A->nrows, (long long)A->ncols, (long long)nl, (long long)ng);
    return CLS_OK;
}

int amg_coupled_stack(const csr_matrix *P, const csr_matrix *G, csr_matrix *X, cls_error *err)
{
    const int64_t nl = P->nrows, ng = G->nrows, nc = P->ncols;
    const int64_t pb = P->rowptr[0], gb = ng ? G->rowptr[0] : 0;
    const int64_t pn = P->rowptr[nl] - pb, gn = ng ? G->rowptr[ng] - gb : 0;
    int rc = csr_alloc(X, nl + ng, nc, pn + gn, err);
    if (rc)
        return rc;
    for (int64_t i = 0; i <= nl; i++)
        X->rowptr[i] = P->rowptr[i] - pb;
    if (pn) {
        memcpy(X->col, P->col + pb, (size_t)pn * sizeof *X->col);
        memcpy(X->val, P->val + pb, (size_t)pn * sizeof *X->val);
    }
    for (int64_t g = 0; g < ng; g++)
        X->rowptr[nl + g + 1] = pn + G->rowptr[g + 1] - gb;
    if (gn) {
        memcpy(X->col + pn, G->col + gb, (size_t)gn * sizeof *X->col);
        memcpy(X->val + pn, G->val + gb, (size_t)gn * sizeof *X->val);
    }
    return CLS_OK;
}

int amg_coupled_rows(const csr_matrix *A, const csr_matrix *P, const csr_matrix *G, csr_matrix *C,
                     cls_error *err)
{
    csr_init(C);
    int rc = amg_coupled_check(A, P, G, err);
    if (rc)
        return rc;
    /* [P_p; G]: the rows A_p's columns reach */
    csr_matrix X, AX, R;
    csr_init(&X);
    csr_init(&AX);
    csr_init(&R);
    if ((rc = amg_coupled_stack(P, G, &X, err)))
        return rc;
    /* C = P_p' (A_p X): P_p' is nc x nl, A_p X is nl x nc */
    if (!(rc = amg_spgemm(A, &X, 0, &AX, err)) && !(rc = amg_transpose(P, &R, err)))
        rc = amg_spgemm(&R, &AX, 1, C, err);
    csr_free(&X);
    csr_free(&AX);
    csr_free(&R);
    return rc;
}

int amg_csr_transpose(const csr_matrix *A, csr_matrix *T, cls_error *err)
{
    return amg_transpose(A, T, err);
}
