/*
 * amg_coupled.c: the host pieces of a hierarchy coupled across parts (the
 * coupled mode of pc_amg.c; docs/amg.md, "Across parts").
 *
 * Design: decoupled aggregation with a coupled Galerkin operator, as PETSc's
 * GAMG and ML build it across processes. Each part aggregates its own
 * diagonal block and smooths its tentative prolongator there
 * (amg_part_prolongator: level 0 of amg_build, the same bits), so the
 * global P is block diagonal, P = diag(P_1, ..., P_K), and restriction and
 * prolongation need no communication. The coarse operator is not: the
 * Galerkin product P'AP couples part p's aggregates to those of every part
 * its rows reach through the halo,
 *
 *   (P'AP)_IJ = sum_{i in p} sum_j P_iI a_ij P_jJ,     I an aggregate of p,
 *
 * and for a ghost column j the row P_j lives on the part that owns j. The
 * caller brings those rows over the halo (G below); amg_coupled_rows then
 * forms part p's rows of P'AP as P_p' (A_p [P_p; G]) with global coarse
 * columns, two of amg_rap.c's sparse products. The coarse operator is the
 * parts' rows stacked; it is symmetric in exact arithmetic (its rows are
 * computed on different parts in different orders, so the stacked matrix
 * is symmetric within rounding).
 *
 * Why decoupled aggregation: it needs no distributed maximal independent
 * set (one exchange per MIS round per level), and at one level of coupling
 * with the coarse levels on one device its aggregates are the block
 * version's, so the only change from block Jacobi is the operator, the
 * smoother's halo and the coarse grid that sees every part.
 */
#include "amg_priv.h"

#include <stdlib.h>
#include <string.h>

int amg_part_prolongator(const csr_matrix *B, const amg_options *opt, csr_matrix *P, cls_error *err)
{
    amg_options def;
    if (!opt) {
        amg_options_default(&def);
        opt = &def;
    }
    csr_init(P);
    const int64_t n = B->nrows;
    double *diag = malloc((size_t)(n ? n : 1) * sizeof *diag);
    int32_t *agg = malloc((size_t)(n ? n : 1) * sizeof *agg);
    amg_graph S = {0};
    int64_t naggs = 0;
    double lmax = 1.0;
    int rc = CLS_OK;
    if (!diag || !agg) {
        rc = cls_fail(err, CLS_EOTHER, "amg: out of memory (a part's prolongator, %lld rows)",
                      (long long)n);
        goto done;
    }
    if (n == 0) { /* an empty part: no aggregates, an empty P */
        rc = csr_alloc(P, 0, 0, 0, err);
        goto done;
    }
    amg_par_diag(B, diag);
    for (int64_t i = 0; i < n; i++)
        if (!(diag[i] > 0.0)) {
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "amg: row %lld of the part has diagonal %g: AMG needs a symmetric "
                          "positive-definite matrix (positive diagonal)",
                          (long long)i, diag[i]);
            goto done;
        }
    if ((rc = amg_lambda_max(B, diag, opt->lanczos_steps, &lmax, err)) ||
        (rc = amg_strength(B, diag, opt->threshold, &S, err)) ||
        (rc = amg_aggregate(&S, agg, &naggs, err)))
        goto done;
    rc = amg_prolongator(B, diag, agg, naggs, opt->omega_scale / lmax, P, err);
done:
    amg_graph_free(&S);
    free(agg);
    free(diag);
    return rc;
}

int amg_coupled_rows(const csr_matrix *A, const csr_matrix *P, int64_t coff, const csr_matrix *G,
                     int64_t nc, csr_matrix *C, cls_error *err)
{
    csr_init(C);
    const int64_t nl = P->nrows, ng = G->nrows;
    if (A->nrows != nl || A->ncols != nl + ng)
        return cls_fail(err, CLS_EOTHER,
                        "amg_coupled_rows: the part's rows (%lld x %lld) do not match its "
                        "prolongator (%lld rows) and ghosts (%lld)",
                        (long long)A->nrows, (long long)A->ncols, (long long)nl, (long long)ng);
    if (nc > INT32_MAX || coff + P->ncols > nc)
        return cls_fail(err, CLS_EOTHER, "amg_coupled_rows: %lld coarse rows exceed 32-bit columns",
                        (long long)nc);
    /* [P_p; G] with global coarse columns: the rows A_p's columns reach */
    csr_matrix X, AX, R;
    csr_init(&X);
    csr_init(&AX);
    csr_init(&R);
    const int64_t pb = P->rowptr[0], gb = ng ? G->rowptr[0] : 0;
    const int64_t pn = P->rowptr[nl] - pb, gn = ng ? G->rowptr[ng] - gb : 0;
    int rc = csr_alloc(&X, nl + ng, nc, pn + gn, err);
    if (rc)
        return rc;
    for (int64_t i = 0; i <= nl; i++)
        X.rowptr[i] = P->rowptr[i] - pb;
    for (int64_t e = 0; e < pn; e++) {
        X.col[e] = (int32_t)(P->col[e] + coff);
        X.val[e] = P->val[e];
    }
    for (int64_t g = 0; g < ng; g++)
        X.rowptr[nl + g + 1] = pn + G->rowptr[g + 1] - gb;
    if (gn) {
        memcpy(X.col + pn, G->col + 0, (size_t)gn * sizeof *X.col);
        memcpy(X.val + pn, G->val + 0, (size_t)gn * sizeof *X.val);
    }
    /* C = P_p' (A_p X): R = P_p' is naggs x nl, A_p X is nl x nc */
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

void amg_csr_apply(const csr_matrix *A, const double *x, double *y)
{
    amg_par_spmv(A, x, y);
}
