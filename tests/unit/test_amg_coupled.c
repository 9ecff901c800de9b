/*
 * test_amg_coupled.c: the host pieces of AMG coupled across parts
 * (solver/amg/amg_coupled.c), on fresh random SPD matrices and Poisson
 * problems split into K = 1..5 contiguous row blocks, as a distributed
 * system is:
 *
 * 1. Each part aggregates its block (amg_part_aggregates); with the ghosts'
 *    aggregates and T values brought in as the halo brings them, each
 *    part's rows of P (amg_part_prolongator) are the rows of the global P
 *    smoothed with the whole matrix, bit for bit; with one part that is
 *    amg_build's level-0 P.
 * 2. The parts' shares of P'AP (amg_coupled_rows, with the ghosts' rows of
 *    P), summed, equal the global Galerkin product (amg_rap over the whole
 *    matrix) within 1e-12 of its largest entry; it is symmetric; with one
 *    part it is amg_build's level-1 operator.
 * 3. Mismatched shapes are refused; an empty part has no aggregates; a
 *    non-positive diagonal is named by its row.
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

/* the coupled pieces over K parts against the global ones */
static void check_split(const char *what, const csr_matrix *A, int K)
{
    const int64_t n = A->nrows;
    /* amg_build on the whole: its lambda_max gives omega, its level 0 P
     * and level 1 operator are what one part must reproduce */
    amg_hierarchy *h = NULL;
    amg_options o;
    amg_options_default(&o);
    o.coarse_size = 1;
    OK(amg_build(A, &o, &h, &err));
    if (!h || h->nlevels < 2) {
        CHECK_MSG(0, "%s: amg_build made %d levels", what, h ? h->nlevels : 0);
        amg_free(h);
        return;
    }
    const double omega = o.omega_scale / h->lev[0].lmax;
    int64_t *begin = malloc((size_t)(K + 1) * sizeof *begin);
    for (int k = 0; k <= K; k++)
        begin[k] = n * k / K;
    /* each part aggregates its block; global numbering part after part */
    int32_t *agg = malloc((size_t)n * sizeof *agg);
    double *tnode = malloc((size_t)n * sizeof *tnode);
    int64_t nc = 0;
    for (int k = 0; k < K; k++) {
        csr_matrix B;
        csr_init(&B);
        block_of(A, begin[k], begin[k + 1], &B);
        int64_t na = 0;
        OK(amg_part_aggregates(&B, NULL, agg + begin[k], &na, &err));
        amg_tentative_values(agg + begin[k], begin[k + 1] - begin[k], na, tnode + begin[k]);
        for (int64_t i = begin[k]; i < begin[k + 1]; i++)
            agg[i] = agg[i] >= 0 ? (int32_t)(agg[i] + nc) : -1;
        nc += na;
        csr_free(&B);
    }
    /* the global P from those aggregates, with T given and counted */
    double *diag = malloc((size_t)n * sizeof *diag);
    amg_par_diag(A, diag);
    csr_matrix Pg, Pg2, Rg, Cref;
    csr_init(&Pg);
    csr_init(&Pg2);
    csr_init(&Rg);
    csr_init(&Cref);
    OK(amg_prolongator_t(A, diag, agg, tnode, nc, omega, &Pg, &err));
    OK(amg_prolongator(A, diag, agg, nc, omega, &Pg2, &err));
    int same = Pg.rowptr[n] == Pg2.rowptr[n];
    for (int64_t e = 0; same && e < Pg.rowptr[n]; e++)
        same = Pg.col[e] == Pg2.col[e] && Pg.val[e] == Pg2.val[e];
    CHECK_MSG(same, "%s K=%d: P with T given differs from P with T counted", what, K);
    if (K == 1) { /* one part: amg_build's level 0 P, bit for bit */
        const csr_matrix *P0 = &h->lev[0].P;
        int pbits = P0->ncols == Pg.ncols && P0->rowptr[n] == Pg.rowptr[n];
        for (int64_t i = 0; pbits && i <= n; i++)
            pbits = P0->rowptr[i] == Pg.rowptr[i];
        for (int64_t e = 0; pbits && e < P0->rowptr[n]; e++)
            pbits = P0->col[e] == Pg.col[e] && P0->val[e] == Pg.val[e];
        CHECK_MSG(pbits, "%s: one part's P is not amg_build's level-0 P", what);
    }
    OK(amg_transpose(&Pg, &Rg, &err));
    OK(amg_rap(A, &Pg, &Rg, &Cref, &err));
    double maxref = 0.0;
    for (int64_t e = 0; e < Cref.rowptr[nc]; e++)
        maxref = fmax(maxref, fabs(Cref.val[e]));
    /* each part: its rows (local then ghost columns), its P rows, its share */
    double *sum = calloc((size_t)(nc ? nc : 1) * (size_t)(nc ? nc : 1), sizeof *sum);
    int64_t pdiff = 0, cshape = 0;
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
        csr_matrix Ak, G, C, Pk;
        csr_init(&Ak);
        csr_init(&G);
        csr_init(&C);
        csr_init(&Pk);
        OK(csr_alloc(&Ak, nl, nl + ng, A->rowptr[r1] - A->rowptr[r0], &err));
        Ak.rowptr[0] = 0;
        int64_t q = 0;
        for (int64_t i = r0; i < r1; i++) { /* the row's entries in A's order */
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
        int32_t *ak = malloc((size_t)(nl + ng + 1) * sizeof *ak);
        double *tk = malloc((size_t)(nl + ng + 1) * sizeof *tk);
        for (int64_t i = 0; i < nl; i++) {
            ak[i] = agg[r0 + i];
            tk[i] = tnode[r0 + i];
        }
        for (int64_t g = 0; g < ng; g++) { /* what the halo brings */
            ak[nl + g] = agg[gh[g]];
            tk[nl + g] = tnode[gh[g]];
        }
        OK(amg_part_prolongator(&Ak, ak, tk, nc, omega, &Pk, &err));
        for (int64_t i = 0; i < nl && Pk.nrows == nl; i++) { /* the global P's rows, bits */
            int64_t a = Pk.rowptr[i], b = Pg.rowptr[r0 + i];
            if (Pk.rowptr[i + 1] - a != Pg.rowptr[r0 + i + 1] - b) {
                pdiff++;
                continue;
            }
            for (int64_t e = 0; e < Pk.rowptr[i + 1] - a; e++)
                pdiff += Pk.col[a + e] != Pg.col[b + e] || Pk.val[a + e] != Pg.val[b + e];
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
        OK(amg_coupled_rows(&Ak, &Pk, &G, &C, &err));
        cshape += C.nrows != nc || C.ncols != nc;
        for (int64_t I = 0; I < C.nrows && C.nrows == nc; I++)
            for (int64_t e = C.rowptr[I]; e < C.rowptr[I + 1]; e++) {
                cshape += e > C.rowptr[I] && C.col[e] <= C.col[e - 1]; /* sorted */
                sum[I * nc + C.col[e]] += C.val[e];
            }
        csr_free(&Ak);
        csr_free(&G);
        csr_free(&C);
        csr_free(&Pk);
        free(ak);
        free(tk);
        free(gh);
    }
    CHECK_MSG(pdiff == 0, "%s K=%d: %lld entries of the parts' P differ from the global P", what, K,
              (long long)pdiff);
    CHECK_MSG(cshape == 0, "%s K=%d: the parts' shares are misshapen (%lld)", what, K,
              (long long)cshape);
    double maxdiff = 0.0, asym = 0.0;
    for (int64_t I = 0; I < nc; I++) {
        for (int64_t e = Cref.rowptr[I]; e < Cref.rowptr[I + 1]; e++)
            sum[I * nc + Cref.col[e]] -= Cref.val[e];
    }
    for (int64_t e = 0; e < nc * nc; e++)
        maxdiff = fmax(maxdiff, fabs(sum[e]));
    CHECK_MSG(maxdiff <= 1e-12 * maxref,
              "%s K=%d: the summed shares differ from P'AP by %g (max %g)", what, K, maxdiff,
              maxref);
    for (int64_t I = 0; I < nc; I++) /* symmetric */
        for (int64_t e = Cref.rowptr[I]; e < Cref.rowptr[I + 1]; e++) {
            int64_t J = Cref.col[e];
            double v = 0.0;
            for (int64_t f = Cref.rowptr[J]; f < Cref.rowptr[J + 1]; f++)
                if (Cref.col[f] == I)
                    v = Cref.val[f];
            asym = fmax(asym, fabs(v - Cref.val[e]));
        }
    CHECK_MSG(asym <= 1e-12 * maxref, "%s K=%d: P'AP is not symmetric (%g)", what, K, asym);
    if (K == 1) { /* one part: amg_build's level-1 operator */
        const csr_matrix *A1 = &h->lev[1].A;
        int sm = A1->nrows == Cref.nrows && A1->rowptr[A1->nrows] == Cref.rowptr[Cref.nrows];
        double d = 0.0;
        for (int64_t e = 0; sm && e < A1->rowptr[A1->nrows]; e++) {
            sm = A1->col[e] == Cref.col[e];
            d = fmax(d, fabs(A1->val[e] - Cref.val[e]));
        }
        CHECK_MSG(sm && d <= 1e-12 * maxref,
                  "%s: one part's P'AP is not amg_build's level 1 (pattern %d, %g)", what, sm, d);
    }
    amg_free(h);
    free(begin);
    free(agg);
    free(tnode);
    free(diag);
    free(sum);
    csr_free(&Pg);
    csr_free(&Pg2);
    csr_free(&Rg);
    csr_free(&Cref);
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
        int32_t agg[64];
        double t[64];
        int64_t na = 0;
        OK(amg_part_aggregates(&A, NULL, agg, &na, &err));
        amg_tentative_values(agg, A.nrows, na, t);
        OK(amg_part_prolongator(&A, agg, t, na, 0.5, &P, &err));
        OK(csr_alloc(&G, 3, P.ncols, 0, &err)); /* 3 ghosts, but A has no ghost columns */
        for (int i = 0; i <= 3; i++)
            G.rowptr[i] = 0;
        cls_error_clear(&err);
        CHECK(amg_coupled_rows(&A, &P, &G, &C, &err) == CLS_EOTHER && strstr(err.msg, "ghosts"));
        csr_matrix E;
        csr_init(&E);
        OK(csr_alloc(&E, 0, 0, 0, &err));
        E.rowptr[0] = 0;
        int64_t ne = -1;
        OK(amg_part_aggregates(&E, NULL, agg, &ne, &err));
        CHECK(ne == 0);
        /* a non-positive diagonal is named, in the aggregation and in P */
        for (int64_t e = A.rowptr[3]; e < A.rowptr[4]; e++)
            if (A.col[e] == 3)
                A.val[e] = -1.0;
        cls_error_clear(&err);
        CHECK(amg_part_aggregates(&A, NULL, agg, &na, &err) == CLS_EBREAKDOWN &&
              strstr(err.msg, "row 3"));
        csr_matrix PB;
        csr_init(&PB);
        cls_error_clear(&err);
        CHECK(amg_part_prolongator(&A, agg, t, na, 0.5, &PB, &err) == CLS_EBREAKDOWN &&
              strstr(err.msg, "row 3"));
        csr_free(&PB);
        csr_free(&E);
        csr_free(&A);
        csr_free(&P);
        csr_free(&G);
        csr_free(&C);
    }
    return check_done("test_amg_coupled");
}
