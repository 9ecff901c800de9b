/*
 * test_amg_coupled.c: the host pieces of AMG coupled across parts
 * (solver/amg/amg_coupled.c), on fresh random SPD matrices and Poisson
 * problems split into K = 1..5 contiguous row blocks, as a distributed
 * system is:
 *
 * 1. amg_part_prolongator is amg_build's level-0 P, the same bits.
 * 2. Each part's rows of P'AP (amg_coupled_rows, with the ghosts' rows of
 *    the global P brought in as the halo brings them) stacked equal the
 *    global Galerkin product computed in one piece (amg_rap over the whole
 *    matrix with the block-diagonal P), within 1e-12 of its largest entry,
 *    with the same pattern; the stacked operator is symmetric.
 * 3. With one part it is amg_build's level-1 operator.
 * 4. Mismatched shapes are refused; an empty part gives an empty P.
 * Inputs are fresh each run (seed printed; CLSOLVE_TEST_SEED replays).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_amg_gen.h"
#include "matrices/gen.h"
#include "solver/amg/amg.h"
#include "solver/amg/amg_priv.h"

static cls_error err;

#define OK(call)                                                                                   \
    do {                                                                                           \
        cls_error_clear(&err);                                                                     \
        int rc_ = (call);                                                                          \
        CHECK_MSG(rc_ == CLS_OK, "%s -> %d: %s", #call, rc_, err.msg);                             \
    } while (0)

/* rows [r0, r1) of A, columns inside renumbered j - r0, outside kept out */
static void block_of(const csr_matrix *A, int64_t r0, int64_t r1, csr_matrix *B)
{
    int64_t nnz = 0;
    for (int64_t i = r0; i < r1; i++)
        for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
            nnz += A->col[e] >= r0 && A->col[e] < r1;
    OK(csr_alloc(B, r1 - r0, r1 - r0, nnz, &err));
    int64_t q = 0;
    B->rowptr[0] = 0;
    for (int64_t i = r0; i < r1; i++) {
        for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
            if (A->col[e] >= r0 && A->col[e] < r1) {
                B->col[q] = (int32_t)(A->col[e] - r0);
                B->val[q++] = A->val[e];
            }
        B->rowptr[i - r0 + 1] = q;
    }
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* the coupled product over K parts against the global one */
static void check_split(const char *what, const csr_matrix *A, int K)
{
    const int64_t n = A->nrows;
    int64_t *begin = malloc((size_t)(K + 1) * sizeof *begin);
    for (int k = 0; k <= K; k++)
        begin[k] = n * k / K;
    csr_matrix *P = calloc((size_t)K, sizeof *P);
    int64_t *coff = calloc((size_t)K + 1, sizeof *coff);
    for (int k = 0; k < K; k++) {
        csr_matrix B;
        csr_init(&B);
        block_of(A, begin[k], begin[k + 1], &B);
        OK(amg_part_prolongator(&B, NULL, &P[k], &err));
        coff[k + 1] = coff[k] + P[k].ncols;
        csr_free(&B);
    }
    const int64_t nc = coff[K];
    /* the global P: block diagonal */
    int64_t pnnz = 0;
    for (int k = 0; k < K; k++)
        pnnz += P[k].rowptr[P[k].nrows];
    csr_matrix Pg;
    csr_init(&Pg);
    OK(csr_alloc(&Pg, n, nc, pnnz, &err));
    int64_t q = 0;
    Pg.rowptr[0] = 0;
    for (int k = 0; k < K; k++)
        for (int64_t i = 0; i < P[k].nrows; i++) {
            for (int64_t e = P[k].rowptr[i]; e < P[k].rowptr[i + 1]; e++) {
                Pg.col[q] = (int32_t)(P[k].col[e] + coff[k]);
                Pg.val[q++] = P[k].val[e];
            }
            Pg.rowptr[begin[k] + i + 1] = q;
        }
    csr_matrix Rg, Cref;
    csr_init(&Rg);
    csr_init(&Cref);
    OK(amg_transpose(&Pg, &Rg, &err));
    OK(amg_rap(A, &Pg, &Rg, &Cref, &err));
    /* each part: its rows with local-then-ghost columns, the ghosts' rows */
    double maxref = 0.0, maxdiff = 0.0;
    int64_t pattern_bad = 0;
    csr_matrix Cs; /* the stacked rows, dense per row for the comparison */
    csr_init(&Cs);
    double *dense = calloc((size_t)nc, sizeof *dense);
    for (int k = 0; k < K; k++) {
        const int64_t r0 = begin[k], r1 = begin[k + 1], nl = r1 - r0;
        int64_t *gh = malloc((size_t)(A->rowptr[r1] - A->rowptr[r0] + 1) * sizeof *gh);
        int64_t ng = 0;
        for (int64_t e = A->rowptr[r0]; e < A->rowptr[r1]; e++)
            if (A->col[e] < r0 || A->col[e] >= r1)
                gh[ng++] = A->col[e];
        qsort(gh, (size_t)ng, sizeof *gh, cmp64);
        int64_t u = 0;
        for (int64_t g = 0; g < ng; g++)
            if (!u || gh[u - 1] != gh[g])
                gh[u++] = gh[g];
        ng = u;
        csr_matrix Ak, G, C;
        csr_init(&Ak);
        csr_init(&G);
        csr_init(&C);
        OK(csr_alloc(&Ak, nl, nl + ng, A->rowptr[r1] - A->rowptr[r0], &err));
        Ak.rowptr[0] = 0;
        q = 0;
        for (int64_t i = r0; i < r1; i++) {
            for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
                int64_t j = A->col[e];
                if (j >= r0 && j < r1) {
                    Ak.col[q] = (int32_t)(j - r0);
                } else {
                    int64_t *f = bsearch(&j, gh, (size_t)ng, sizeof *gh, cmp64);
                    Ak.col[q] = (int32_t)(nl + (f - gh));
                }
                Ak.val[q++] = A->val[e];
            }
            Ak.rowptr[i - r0 + 1] = q;
        }
        int64_t gnnz = 0;
        for (int64_t g = 0; g < ng; g++)
            gnnz += Pg.rowptr[gh[g] + 1] - Pg.rowptr[gh[g]];
        OK(csr_alloc(&G, ng, nc, gnnz, &err));
        G.rowptr[0] = 0;
        q = 0;
        for (int64_t g = 0; g < ng; g++) {
            for (int64_t e = Pg.rowptr[gh[g]]; e < Pg.rowptr[gh[g] + 1]; e++) {
                G.col[q] = Pg.col[e];
                G.val[q++] = Pg.val[e];
            }
            G.rowptr[g + 1] = q;
        }
        OK(amg_coupled_rows(&Ak, &P[k], coff[k], &G, nc, &C, &err));
        CHECK_MSG(C.nrows == P[k].ncols && C.ncols == nc, "%s K=%d part %d: C is %lld x %lld", what,
                  K, k, (long long)C.nrows, (long long)C.ncols);
        for (int64_t I = 0; I < C.nrows && I < P[k].ncols; I++) {
            const int64_t gI = coff[k] + I;
            for (int64_t e = Cref.rowptr[gI]; e < Cref.rowptr[gI + 1]; e++) {
                dense[Cref.col[e]] = Cref.val[e];
                maxref = fmax(maxref, fabs(Cref.val[e]));
            }
            int64_t cnt = 0;
            for (int64_t e = C.rowptr[I]; e < C.rowptr[I + 1]; e++) {
                if (e > C.rowptr[I] && C.col[e] <= C.col[e - 1])
                    pattern_bad++; /* sorted, no duplicates */
                maxdiff = fmax(maxdiff, fabs(C.val[e] - dense[C.col[e]]));
                dense[C.col[e]] = 0.0;
                cnt++;
            }
            for (int64_t e = Cref.rowptr[gI]; e < Cref.rowptr[gI + 1]; e++) {
                maxdiff = fmax(maxdiff, fabs(dense[Cref.col[e]])); /* missed by C */
                dense[Cref.col[e]] = 0.0;
            }
            pattern_bad += cnt != Cref.rowptr[gI + 1] - Cref.rowptr[gI];
        }
        csr_free(&Ak);
        csr_free(&G);
        csr_free(&C);
        free(gh);
    }
    CHECK_MSG(maxdiff <= 1e-12 * maxref && pattern_bad == 0,
              "%s K=%d: coupled P'AP differs by %g (max %g), %lld rows' patterns differ", what, K,
              maxdiff, maxref, (long long)pattern_bad);
    /* symmetric: the global product's (I, J) against (J, I) */
    double asym = 0.0;
    for (int64_t I = 0; I < nc; I++) {
        for (int64_t e = Cref.rowptr[I]; e < Cref.rowptr[I + 1]; e++)
            dense[Cref.col[e]] = Cref.val[e];
        for (int64_t e = Cref.rowptr[I]; e < Cref.rowptr[I + 1]; e++) {
            int64_t J = Cref.col[e];
            double v = 0.0;
            for (int64_t f = Cref.rowptr[J]; f < Cref.rowptr[J + 1]; f++)
                if (Cref.col[f] == I)
                    v = Cref.val[f];
            asym = fmax(asym, fabs(v - Cref.val[e]));
        }
        for (int64_t e = Cref.rowptr[I]; e < Cref.rowptr[I + 1]; e++)
            dense[Cref.col[e]] = 0.0;
    }
    CHECK_MSG(asym <= 1e-12 * maxref, "%s K=%d: P'AP is not symmetric (%g)", what, K, asym);
    if (K == 1) { /* one part: amg_build's level-1 operator */
        amg_hierarchy *h = NULL;
        amg_options o;
        amg_options_default(&o);
        o.coarse_size = 1;
        OK(amg_build(A, &o, &h, &err));
        if (h && h->nlevels > 1) {
            const csr_matrix *A1 = &h->lev[1].A;
            int same = A1->nrows == Cref.nrows && A1->rowptr[A1->nrows] == Cref.rowptr[Cref.nrows];
            double d = 0.0;
            for (int64_t e = 0; same && e < A1->rowptr[A1->nrows]; e++) {
                same = A1->col[e] == Cref.col[e];
                d = fmax(d, fabs(A1->val[e] - Cref.val[e]));
            }
            CHECK_MSG(same && d <= 1e-12 * maxref,
                      "%s: one part's P'AP is not amg_build's level 1 (pattern %d, %g)", what,
                      same, d);
            const csr_matrix *P0 = &h->lev[0].P;
            int pbits = P0->nrows == P[0].nrows && P0->ncols == P[0].ncols &&
                        P0->rowptr[P0->nrows] == P[0].rowptr[P[0].nrows];
            for (int64_t e = 0; pbits && e < P0->rowptr[P0->nrows]; e++)
                pbits = P0->col[e] == P[0].col[e] && P0->val[e] == P[0].val[e];
            for (int64_t i = 0; pbits && i <= P0->nrows; i++)
                pbits = P0->rowptr[i] == P[0].rowptr[i];
            CHECK_MSG(pbits, "%s: amg_part_prolongator is not amg_build's level-0 P", what);
        }
        amg_free(h);
    }
    for (int k = 0; k < K; k++)
        csr_free(&P[k]);
    free(P);
    free(coff);
    free(begin);
    free(dense);
    csr_free(&Pg);
    csr_free(&Rg);
    csr_free(&Cref);
    csr_free(&Cs);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    check_seed("test_amg_coupled");
    for (int kind = 0; kind < 3; kind++) {
        csr_matrix A;
        csr_init(&A);
        random_spd(kind, 600 + (int64_t)(check_rand() % 900), &A);
        char what[32];
        snprintf(what, sizeof what, "random kind %d", kind);
        for (int K = 1; K <= 5; K++)
            check_split(what, &A, K);
        csr_free(&A);
    }
    const struct {
        gen_kind k;
        int64_t n;
        const char *name;
    } gens[] = {{GEN_POISSON2D, 40, "poisson2d 40"},
                {GEN_POISSON3D, 14, "poisson3d 14"},
                {GEN_POISSON3D27, 10, "poisson3d27 10"}};
    for (size_t g = 0; g < sizeof gens / sizeof *gens; g++) {
        csr_matrix A;
        csr_init(&A);
        OK(gen_matrix(gens[g].k, gens[g].n, &A, &err));
        for (int K = 1; K <= 4; K++)
            check_split(gens[g].name, &A, K);
        csr_free(&A);
    }
    /* refusals and the empty part */
    {
        csr_matrix A, P, G, C;
        csr_init(&A);
        csr_init(&P);
        csr_init(&G);
        csr_init(&C);
        OK(gen_matrix(GEN_POISSON2D, 8, &A, &err));
        OK(amg_part_prolongator(&A, NULL, &P, &err));
        OK(csr_alloc(&G, 3, P.ncols, 0, &err)); /* 3 ghosts, but A has no ghost columns */
        for (int i = 0; i <= 3; i++)
            G.rowptr[i] = 0;
        cls_error_clear(&err);
        CHECK(amg_coupled_rows(&A, &P, 0, &G, P.ncols, &C, &err) == CLS_EOTHER &&
              strstr(err.msg, "ghosts"));
        cls_error_clear(&err);
        CHECK(amg_coupled_rows(&A, &P, 5, &G, P.ncols, &C, &err) == CLS_EOTHER);
        csr_matrix E, PE;
        csr_init(&E);
        csr_init(&PE);
        OK(csr_alloc(&E, 0, 0, 0, &err));
        E.rowptr[0] = 0;
        OK(amg_part_prolongator(&E, NULL, &PE, &err));
        CHECK(PE.nrows == 0 && PE.ncols == 0);
        /* a non-positive diagonal is named */
        A.val[A.rowptr[3]] = A.col[A.rowptr[3]] == 3 ? -1.0 : A.val[A.rowptr[3]];
        for (int64_t e = A.rowptr[3]; e < A.rowptr[4]; e++)
            if (A.col[e] == 3)
                A.val[e] = -1.0;
        csr_matrix PB;
        csr_init(&PB);
        cls_error_clear(&err);
        CHECK(amg_part_prolongator(&A, NULL, &PB, &err) == CLS_EBREAKDOWN &&
              strstr(err.msg, "row 3"));
        csr_free(&PB);
        csr_free(&E);
        csr_free(&PE);
        csr_free(&A);
        csr_free(&P);
        csr_free(&G);
        csr_free(&C);
    }
    return check_done("test_amg_coupled");
}
