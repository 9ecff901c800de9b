/*
 * pc_amg_coupled.c: AMG coupled across parts (--precond-coupling coupled,
 * the default of amg on more than one part): one preconditioner for the
 * whole distributed system instead of one hierarchy per part's block.
 *
 * Why: a block-Jacobi AMG (one V-cycle per part's diagonal block, pc_amg.c's
 * block mode) drops every coupling between parts, so its iterations grow
 * with the number of parts (docs/amg.md: poisson3d, 1 -> 4 parts). Here the
 * fine level sees the whole operator and the coarse grid sees every part.
 *
 * M^-1 r is one two-level V-cycle whose coarse solve is itself an AMG
 * V-cycle on one device:
 *
 *   z  = S r                         S: Chebyshev in D^-1 A of the AMG's
 *                                        degree on [0.1, 1.1] lambda_max,
 *                                        every SpMV halo-exchanged (the
 *                                        global polynomial, as pc_cheby.c)
 *   t  = r - A z                     one halo-exchanged SpMV
 *   tc = P' t                        per part, on its device: the part's
 *                                        share of every aggregate its rows
 *                                        touch (its own and its neighbours')
 *   ec = V(A_c) tc                   the shares gathered and summed on the
 *                                        coarse rank, one V-cycle of the
 *                                        hierarchy of A_c = P'AP there, each
 *                                        part sent ec at the aggregates it
 *                                        touches
 *   z += P ec                        per part, on its device
 *   z += S (r - A z)                 the same S after
 *
 * S is symmetric (p(D^-1 A) D^-1) and the same before and after, R = P',
 * and the coarse V-cycle is symmetric positive definite: so is M, and CG's
 * theory holds. With one part it is amg_build's V-cycle up to its coarse
 * levels (which the single hierarchy would smooth with its own level-1
 * Chebyshev instead of the device V-cycle of the same operator).
 *
 * The set-up (collective, every step agreed before the next; the
 * aggregation and the products are solver/amg/amg_coupled.c's):
 *   1. each part: its block's aggregates (amg_part_aggregates, or the same
 *      by the device set-up's kernels, amg_device_aggregates, on a GPU in
 *      double precision), numbered globally part after part (the counts
 *      summed over ranks);
 *   2. lambda_max of D^-1 A by Lanczos over every part (pc_cheby_bounds):
 *      the smoother's interval and P's omega;
 *   3. the ghosts' aggregates and T values: two halo exchanges;
 *   4. each part: its rows of P = (I - omega D^-1 A) T (amg_part_prolongator),
 *      then the ghosts' rows of P: K halo exchanges of the m-th entry of
 *      each row (its global coarse column and its value), K the longest;
 *   5. each part: its share of P'AP (amg_coupled_rows, or by the device's
 *      SpGEMM, amg_device_coupled_rows, on a GPU in double precision),
 *      gathered on the rank of part 0 (the coarse rank) and summed there,
 *      which builds A_c's
 *      hierarchy on its device (amg_build_device on a GPU in double
 *      precision, else amg_build and amg_upload);
 *   6. each part: the aggregates its P touches, their list gathered on the
 *      coarse rank (the index of the per-application gather and scatter);
 *      P and P' with columns (rows) compressed to that list, uploaded.
 *
 * Per application: 2 + 2 (degree - 1) halo-exchanged SpMVs of A, one SpMV
 * of P' and one of P per part, a gather and a scatter of the parts' coarse
 * shares (about a tenth of the fine rows on poisson3d, plus the aggregates
 * across each boundary) and the coarse V-cycle on one device. The coarse
 * vector crosses host memory: it moves between devices and ranks.
 */
#include "pc_kind.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/parallel.h"
#include "../../common/timer.h"
#include "../amg/amg.h"

/* one part's prolongator, on the host and its device */
typedef struct amgc_part {
    int32_t *agg;   /* its nodes' global aggregates, then its ghosts' (set-up only) */
    double *tnode;  /* T's values, the same (set-up only) */
    int64_t naggs;  /* its own aggregates */
    csr_matrix P;   /* device row order, global coarse columns */
    int32_t *touch; /* the aggregates P touches, ascending */
    int64_t ntouch;
    csr_matrix Pc, Rc; /* P with its columns compressed to touch[], and P' */
    la_csr dP, dR;
    int have_dP, have_dR;
    la_vec tc, ec; /* its shares of the touched aggregates, on its device */
    int have_tc, have_ec;
} amgc_part;

typedef struct amgc_state {
    amgc_part *pp; /* by slot */
    int64_t *coff; /* nparts + 1: part q's aggregates [coff[q], coff[q+1]) */
    int64_t nc;    /* coarse rows in all */
    int root;      /* the coarse rank (part 0's) */
    double *mine;  /* this rank's shares (its parts' touched aggregates in order) */
    int64_t nmine_c;
    /* the coarse rank's */
    csr_matrix Ac;
    amg_hierarchy *h; /* built on the host (else on the device, in cd) */
    amg_device *cd;
    la_vec ctc, cec;
    int have_cv;
    double *cbuf, *rbuf; /* nc; the shares of every rank (ntot) */
    int32_t *idx;        /* ntot: the aggregate of each share */
    int64_t ntot;
    int *cnt, *displ; /* per rank, for the gather and scatter */
    /* the fine level's smoother */
    int degree;
    double lmax, c0, c1[32], c2[32];
    dvec zz, t, w, cres, cd_, cq;
} amgc_state;

static void amgc_apply(pc *pc, const dvec *r, dvec *z);

/* CLSOLVE_AMG_PROFILE=1: each set-up step's seconds on this rank, on stderr */
static void amgc_mark(const dsys *s, const char *step, double *t)
{
    static int prof = -1;
    if (prof < 0) {
        const char *e = getenv("CLSOLVE_AMG_PROFILE");
        prof = e && *e == '1';
    }
    const double now = cls_now();
    if (prof)
        fprintf(stderr, "amg coupled, rank %d: %-22s %.3f s\n", s->rank, step, now - *t);
    *t = now;
}

/* 1 when any rank failed (rc != CLS_OK on it): all ranks stop together */
static int amgc_any_failed(dsys *s, int rc)
{
    int mine = rc != CLS_OK, any = 0;
    if (MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, s->comm) != MPI_SUCCESS)
        return 1;
    return any;
}

/* row of A (halo order) -> device row, per slot */
static int amgc_iperm(dsys *s, int32_t **ip, cls_error *err)
{
    for (int k = 0; k < s->nmine; k++) {
        const dpart *p = &s->parts[k];
        const int64_t n = p->halo.nlocal;
        if (!(ip[k] = malloc((size_t)(n + 1) * sizeof **ip)))
            return cls_fail(err, CLS_EOTHER, "amg coupled: out of memory");
        for (int64_t i = 0; i < n; i++)
            ip[k][p->perm ? p->perm[i] : i] = (int32_t)i;
    }
    return CLS_OK;
}

/* host vectors of nlocal + nghost doubles per slot (x[k] NULL on failure) */
static int amgc_hvecs(dsys *s, double **x, cls_error *err)
{
    for (int k = 0; k < s->nmine; k++) {
        const dpart *p = &s->parts[k];
        if (!(x[k] = malloc((size_t)(p->halo.nlocal + p->halo.nghost + 1) * sizeof **x)))
            return cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for an exchange");
    }
    return CLS_OK;
}

/* step 3: each ghost's global aggregate and T value from its owner */
static int amgc_ghost_nodes(dsys *s, amgc_state *st, halo_comm *hc, int32_t **ip, double **xa,
                            double **xt, cls_error *err)
{
    for (int k = 0; k < s->nmine; k++) { /* only the rows a neighbour receives */
        const dpart *p = &s->parts[k];
        const amgc_part *q = &st->pp[k];
        for (int64_t m = 0; m < p->halo.nsend_total; m++) {
            const int64_t r = p->halo.send_idx[m];
            xa[k][r] = (double)q->agg[ip[k][r]];
            xt[k][r] = q->tnode[ip[k][r]];
        }
    }
    int rc = halo_exchange_host(hc, xa, err), r2 = halo_exchange_host(hc, xt, err);
    if (!rc) /* both exchanges on every rank: the neighbours post both */
        rc = r2;
    for (int k = 0; !rc && k < s->nmine; k++) {
        const dpart *p = &s->parts[k];
        amgc_part *q = &st->pp[k];
        const int64_t n = p->halo.nlocal;
        for (int64_t g = 0; g < p->halo.nghost; g++) {
            q->agg[n + g] = (int32_t)xa[k][n + g];
            q->tnode[n + g] = xt[k][n + g];
        }
    }
    return rc;
}

/* step 4's exchange: the global P's rows of slot k's ghosts, into G[k] */
static int amgc_ghost_rows(dsys *s, amgc_state *st, halo_comm *hc, int32_t **ip, double **xc,
                           double **xv, csr_matrix *G, cls_error *err)
{
    int64_t kmax = 0;
    for (int k = 0; k < s->nmine; k++) {
        const csr_matrix *P = &st->pp[k].P;
        for (int64_t i = 0; i < P->nrows; i++)
            if (P->rowptr[i + 1] - P->rowptr[i] > kmax)
                kmax = P->rowptr[i + 1] - P->rowptr[i];
    }
    if (MPI_Allreduce(MPI_IN_PLACE, &kmax, 1, MPI_INT64_T, MPI_MAX, s->comm) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "amg coupled: MPI_Allreduce failed");
    const int K = (int)kmax;
    int rc = CLS_OK;
    double **gc = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *gc);
    double **gv = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *gv);
    if (!gc || !gv)
        rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the ghosts' rows");
    for (int k = 0; !rc && k < s->nmine; k++) {
        const int64_t nk = (int64_t)K * s->parts[k].halo.nghost;
        gc[k] = malloc((size_t)(nk + 1) * sizeof **gc);
        gv[k] = malloc((size_t)(nk + 1) * sizeof **gv);
        if (!gc[k] || !gv[k])
            rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the ghosts' rows");
    }
    /* every rank runs the K rounds (a local failure is agreed after) */
    for (int m = 0; m < K; m++) {
        for (int k = 0; !rc && k < s->nmine; k++) { /* the m-th entry of each sent row */
            const dpart *p = &s->parts[k];
            const csr_matrix *P = &st->pp[k].P;
            for (int64_t sm = 0; sm < p->halo.nsend_total; sm++) {
                const int64_t r = p->halo.send_idx[sm];
                const int64_t i = ip[k][r], e = P->rowptr[i] + m;
                const int has = e < P->rowptr[i + 1];
                xc[k][r] = has ? (double)P->col[e] : -1.0;
                xv[k][r] = has ? P->val[e] : 0.0;
            }
        }
        int r1 = halo_exchange_host(hc, xc, err), r2 = halo_exchange_host(hc, xv, err);
        if (!rc)
            rc = r1 ? r1 : r2;
        for (int k = 0; !rc && k < s->nmine; k++) {
            const dpart *p = &s->parts[k];
            const int64_t n = p->halo.nlocal;
            for (int64_t g = 0; g < p->halo.nghost; g++) {
                gc[k][g * K + m] = xc[k][n + g];
                gv[k][g * K + m] = xv[k][n + g];
            }
        }
    }
    for (int k = 0; !rc && k < s->nmine; k++) {
        const int64_t ng = s->parts[k].halo.nghost;
        int64_t nnz = 0;
        for (int64_t e = 0; e < ng * K; e++)
            nnz += gc[k][e] >= 0.0;
        if ((rc = csr_alloc(&G[k], ng, st->nc, nnz, err)))
            break;
        int64_t q = 0;
        G[k].rowptr[0] = 0;
        for (int64_t g = 0; g < ng; g++) {
            for (int m = 0; m < K; m++)
                if (gc[k][g * K + m] >= 0.0) {
                    G[k].col[q] = (int32_t)gc[k][g * K + m];
                    G[k].val[q++] = gv[k][g * K + m];
                }
            G[k].rowptr[g + 1] = q;
        }
    }
    for (int k = 0; k < s->nmine; k++) {
        if (gc)
            free(gc[k]);
        if (gv)
            free(gv[k]);
    }
    free(gc);
    free(gv);
    return rc;
}

/* MPI_Gatherv of n items of type t to the coarse rank (counts, displs and
 * the receive buffer there, NULL elsewhere) */
static int amgc_gatherv(dsys *s, const amgc_state *st, const void *buf, int64_t n, MPI_Datatype t,
                        void *recv, const int *cnt, const int *dis)
{
    return MPI_Gatherv(buf, (int)n, t, recv, cnt, dis, t, st->root, s->comm) == MPI_SUCCESS;
}

/* the coarse rank's counts and displacements of n per rank; *total */
static int amgc_counts(dsys *s, const amgc_state *st, int64_t n, int *cnt, int *dis, int64_t *total,
                       cls_error *err)
{
    int me = n > INT_MAX ? -1 : (int)n, *all = cnt;
    if (MPI_Gather(&me, 1, MPI_INT, all, 1, MPI_INT, st->root, s->comm) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "amg coupled: MPI_Gather failed");
    if (s->rank != st->root)
        return CLS_OK;
    int64_t sum = 0;
    for (int r = 0; r < s->size; r++) {
        if (cnt[r] < 0 || sum > INT_MAX)
            return cls_fail(err, CLS_EOTHER,
                            "amg coupled: the coarse shares exceed what one gather carries");
        dis[r] = (int)sum;
        sum += cnt[r];
    }
    if (sum > INT_MAX)
        return cls_fail(err, CLS_EOTHER,
                        "amg coupled: the coarse shares exceed what one gather carries");
    *total = sum;
    return CLS_OK;
}

/* the coarse rank's merge of the shares: row I's pieces (in rank, part
 * order) into one sorted row, duplicates summed in that order */
typedef struct amgc_merge {
    const int64_t *first; /* nc + 1: row I's pieces are order[first[I] .. first[I+1]) */
    const int64_t *order, *poff;
    const int32_t *plen, *col;
    const double *val;
    const int64_t *ub; /* nc + 1: row I's entries at most, prefix */
    int32_t *scol;     /* scratch, ub[nc] */
    double *sval;
    int64_t *len; /* the merged length of each row */
} amgc_merge;

static void amgc_merge_rows(void *ctx, int range, int64_t b, int64_t e)
{
    (void)range;
    const amgc_merge *m = ctx;
    for (int64_t I = b; I < e; I++) {
        int32_t *c = m->scol + m->ub[I];
        double *v = m->sval + m->ub[I];
        int64_t q = 0;
        for (int64_t f = m->first[I]; f < m->first[I + 1]; f++) {
            const int64_t pc = m->order[f];
            for (int64_t t = 0; t < m->plen[pc]; t++) { /* insert, stable: equal columns keep
                                                         * the pieces' order */
                const int32_t cc = m->col[m->poff[pc] + t];
                const double vv = m->val[m->poff[pc] + t];
                int64_t a = q++;
                for (; a > 0 && c[a - 1] > cc; a--) {
                    c[a] = c[a - 1];
                    v[a] = v[a - 1];
                }
                c[a] = cc;
                v[a] = vv;
            }
        }
        int64_t w = 0;
        for (int64_t a = 0; a < q; a++) {
            if (w > 0 && c[w - 1] == c[a]) {
                v[w - 1] += v[a];
                continue;
            }
            c[w] = c[a];
            v[w++] = v[a];
        }
        m->len[I] = w;
    }
}

typedef struct amgc_copy {
    const amgc_merge *m;
    csr_matrix *A;
} amgc_copy;

static void amgc_copy_rows(void *ctx, int range, int64_t b, int64_t e)
{
    (void)range;
    const amgc_copy *c = ctx;
    for (int64_t I = b; I < e; I++) {
        const int64_t n = c->A->rowptr[I + 1] - c->A->rowptr[I];
        memcpy(c->A->col + c->A->rowptr[I], c->m->scol + c->m->ub[I], (size_t)n * sizeof(int32_t));
        memcpy(c->A->val + c->A->rowptr[I], c->m->sval + c->m->ub[I], (size_t)n * sizeof(double));
    }
}

/* the pieces (rows rid[p] of plen[p] entries, at poff[p]) summed into A_c */
static int amgc_merge_pieces(amgc_state *st, int64_t np, const int32_t *rid, const int32_t *plen,
                             const int32_t *col, const double *val, cls_error *err)
{
    const int64_t nc = st->nc;
    int64_t *first = calloc((size_t)nc + 2, sizeof *first), *ub = calloc((size_t)nc + 1, 8);
    int64_t *order = malloc((size_t)(np + 1) * sizeof *order), *poff = malloc((size_t)(np + 1) * 8);
    int64_t *len = malloc((size_t)(nc + 1) * sizeof *len);
    int32_t *scol = NULL;
    double *sval = NULL;
    int rc = CLS_OK;
    if (!first || !ub || !order || !poff || !len) {
        rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory merging the coarse rows");
        goto done;
    }
    poff[0] = 0;
    for (int64_t p = 0; p < np; p++) {
        if (rid[p] < 0 || rid[p] >= nc) {
            rc = cls_fail(err, CLS_EOTHER, "amg coupled: coarse row %d out of range", rid[p]);
            goto done;
        }
        poff[p + 1] = poff[p] + plen[p];
        first[rid[p] + 2]++;
        ub[rid[p] + 1] += plen[p];
    }
    for (int64_t I = 0; I < nc; I++) {
        first[I + 2] += first[I + 1];
        ub[I + 1] += ub[I];
    }
    for (int64_t p = 0; p < np; p++) /* counting sort of the pieces by row, stable */
        order[first[rid[p] + 1]++] = p;
    scol = malloc((size_t)(ub[nc] + 1) * sizeof *scol);
    sval = malloc((size_t)(ub[nc] + 1) * sizeof *sval);
    if (!scol || !sval) {
        rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory merging the coarse rows");
        goto done;
    }
    amgc_merge m = {first, order, poff, plen, col, val, ub, scol, sval, len};
    cls_parallel_for(nc, 4096, amgc_merge_rows, &m);
    int64_t nnz = 0;
    for (int64_t I = 0; I < nc; I++)
        nnz += len[I];
    if ((rc = csr_alloc(&st->Ac, nc, nc, nnz, err)))
        goto done;
    st->Ac.rowptr[0] = 0;
    for (int64_t I = 0; I < nc; I++)
        st->Ac.rowptr[I + 1] = st->Ac.rowptr[I] + len[I];
    amgc_copy cp = {&m, &st->Ac};
    cls_parallel_for(nc, 4096, amgc_copy_rows, &cp);
done:
    free(first), free(ub), free(order), free(poff), free(len), free(scol), free(sval);
    return rc;
}

/* step 5: the parts' shares C[k] of P'AP gathered on the coarse rank and
 * summed there: each nonempty row a piece, the pieces of a row merged in
 * rank and part order (the sum does not depend on timing) */
static int amgc_gather_rows(dsys *s, amgc_state *st, csr_matrix *C, cls_error *err)
{
    if (s->size == 1 && s->nmine == 1) { /* one share: it is A_c (sorted rows) */
        st->Ac = C[0];
        csr_init(&C[0]);
        return CLS_OK;
    }
    int64_t nnz = 0, np = 0;
    for (int k = 0; k < s->nmine; k++) {
        nnz += C[k].rowptr[C[k].nrows];
        for (int64_t I = 0; I < C[k].nrows; I++)
            np += C[k].rowptr[I + 1] > C[k].rowptr[I];
    }
    const int me = s->rank == st->root;
    int rc = CLS_OK;
    int32_t *rid = malloc((size_t)(np + 1) * sizeof *rid), *len = malloc((size_t)(np + 1) * 4);
    int32_t *col = malloc((size_t)(nnz + 1) * sizeof *col);
    double *val = malloc((size_t)(nnz + 1) * sizeof *val);
    int *pc = me ? malloc((size_t)s->size * sizeof *pc) : NULL;
    int *pd = me ? malloc((size_t)s->size * sizeof *pd) : NULL;
    int *ec = me ? malloc((size_t)s->size * sizeof *ec) : NULL;
    int *ed = me ? malloc((size_t)s->size * sizeof *ed) : NULL;
    int32_t *grid = NULL, *glen = NULL, *gcol = NULL;
    double *gval = NULL;
    if (!rid || !len || !col || !val || (me && (!pc || !pd || !ec || !ed)))
        rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the coarse rows");
    for (int64_t k = 0, q = 0, r = 0; !rc && k < s->nmine; k++) /* the pieces */
        for (int64_t I = 0; I < C[k].nrows; I++) {
            const int64_t a = C[k].rowptr[I], b = C[k].rowptr[I + 1];
            if (a == b)
                continue;
            rid[r] = (int32_t)I;
            len[r++] = (int32_t)(b - a);
            memcpy(col + q, C[k].col + a, (size_t)(b - a) * sizeof *col);
            memcpy(val + q, C[k].val + a, (size_t)(b - a) * sizeof *val);
            q += b - a;
        }
    if (amgc_any_failed(s, rc)) {
        rc = rc ? rc : cls_fail(err, CLS_EOTHER, "amg coupled: another rank failed");
        goto done;
    }
    int64_t tp = 0, te = 0;
    rc = amgc_counts(s, st, np, pc, pd, &tp, err); /* both gathers on every rank */
    int rc2 = amgc_counts(s, st, nnz, ec, ed, &te, err);
    if (!rc)
        rc = rc2;
    if (!rc && me) {
        grid = malloc((size_t)(tp + 1) * sizeof *grid);
        glen = malloc((size_t)(tp + 1) * sizeof *glen);
        gcol = malloc((size_t)(te + 1) * sizeof *gcol);
        gval = malloc((size_t)(te + 1) * sizeof *gval);
        if (!grid || !glen || !gcol || !gval)
            rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the coarse rows");
    }
    if (amgc_any_failed(s, rc)) {
        rc = rc ? rc : cls_fail(err, CLS_EOTHER, "amg coupled: another rank failed");
        goto done;
    }
    if (!amgc_gatherv(s, st, rid, np, MPI_INT32_T, grid, pc, pd) ||
        !amgc_gatherv(s, st, len, np, MPI_INT32_T, glen, pc, pd) ||
        !amgc_gatherv(s, st, col, nnz, MPI_INT32_T, gcol, ec, ed) ||
        !amgc_gatherv(s, st, val, nnz, MPI_DOUBLE, gval, ec, ed))
        rc = cls_fail(err, CLS_EOTHER, "amg coupled: MPI_Gatherv of the coarse rows failed");
    if (!rc && me)
        rc = amgc_merge_pieces(st, tp, grid, glen, gcol, gval, err);
done:
    free(rid), free(len), free(col), free(val), free(pc), free(pd), free(ec), free(ed);
    free(grid), free(glen), free(gcol), free(gval);
    return rc;
}

/* the report: the fine level, then the coarse hierarchy's levels */
static void amgc_describe(pc *pc, const amgc_state *st, double build_s, int on_device)
{
    dsys *s = pc->s;
    amg_info ci;
    memset(&ci, 0, sizeof ci);
    if (s->rank == st->root && (!st->cd || amg_device_info(st->cd, &ci) != 0) && st->h)
        amg_get_info(st->h, &ci);
    long long nnz = 0;
    for (int k = 0; k < s->nmine; k++)
        nnz += s->parts[k].A.rowptr[s->parts[k].halo.nlocal] - s->parts[k].A.rowptr[0];
    MPI_Allreduce(MPI_IN_PLACE, &nnz, 1, MPI_LONG_LONG, MPI_SUM, s->comm);
    pc->info.levels = 1 + ci.levels;
    if (s->rank != st->root)
        return;
    json_t *o = json_object(), *rows = json_array(), *nz = json_array();
    json_array_append_new(rows, json_integer(s->L->begin[s->L->nparts]));
    json_array_append_new(nz, json_integer(nnz));
    double oc = (double)nnz, gc = (double)s->L->begin[s->L->nparts];
    for (int l = 0; l < ci.levels && l < AMG_MAX_LEVELS; l++) {
        json_array_append_new(rows, json_integer(ci.rows[l]));
        json_array_append_new(nz, json_integer(ci.nnz[l]));
        oc += (double)ci.nnz[l];
        gc += (double)ci.rows[l];
    }
    json_object_set_new(o, "coupling", json_string("coupled"));
    json_object_set_new(o, "parts", json_integer(s->L->nparts));
    json_object_set_new(o, "levels", json_integer(1 + ci.levels));
    json_object_set_new(o, "rows", rows);
    json_object_set_new(o, "nnz", nz);
    json_object_set_new(o, "operator_complexity", json_real(nnz ? oc / (double)nnz : 0.0));
    json_object_set_new(
        o, "grid_complexity",
        json_real(s->L->begin[s->L->nparts] ? gc / (double)s->L->begin[s->L->nparts] : 0.0));
    json_object_set_new(o, "coarse_rank", json_integer(st->root));
    json_object_set_new(o, "coarse_direct", json_boolean(ci.coarse_direct));
    json_object_set_new(o, "fine_lambda_max", json_real(st->lmax));
    json_object_set_new(o, "build_s", json_real(build_s));
    json_object_set_new(o, "setup", json_string(on_device ? "device" : "host"));
    char *t = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
    if (t && strlen(t) < sizeof pc->info.amg)
        snprintf(pc->info.amg, sizeof pc->info.amg, "%s", t);
    free(t);
    json_decref(o);
}

/* part k's set-up steps run on its device (a GPU in double precision, or
 * --precond-setup device where it can run), else on the host */
static int amgc_on_device(pc *pc, int k)
{
    cls_error e;
    cls_error_clear(&e);
    int dev = 0;
    return pc_setup_on_device(pc, &pc->s->parts[k], &dev, &e) == CLS_OK && dev;
}

/* step 1: each part's aggregates of its block, T's values */
static int amgc_aggregates(pc *pc, amgc_state *st, const amg_options *ao, cls_error *err)
{
    dsys *s = pc->s;
    for (int k = 0; k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        amgc_part *q = &st->pp[k];
        const int64_t n = p->halo.nlocal, m = n + p->halo.nghost;
        q->agg = malloc((size_t)(m + 1) * sizeof *q->agg);
        q->tnode = malloc((size_t)(m + 1) * sizeof *q->tnode);
        if (!q->agg || !q->tnode)
            return cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the aggregates");
        csr_matrix B;
        int rc = pc_local_block(p, &B, err);
        /* on a GPU in double precision the device set-up's kernels (the
         * same aggregates), else (or past their 32-bit indices) the host's */
        if (!rc)
            rc = amgc_on_device(pc, k)
                     ? amg_device_aggregates(&B, ao, &p->la, q->agg, &q->naggs, err)
                     : CLS_EUSAGE;
        if (rc == CLS_EUSAGE) {
            cls_error_clear(err);
            rc = amg_part_aggregates(&B, ao, q->agg, &q->naggs, err);
        }
        csr_free(&B);
        if (rc)
            return rc;
        amg_tentative_values(q->agg, n, q->naggs, q->tnode);
        st->coff[p->part + 1] = q->naggs; /* summed over ranks, then scanned */
    }
    return CLS_OK;
}

/* step 6: the aggregates P touches; P and P' compressed to them, uploaded */
static int amgc_compress(pc *pc, amgc_state *st, double *tm, cls_error *err)
{
    dsys *s = pc->s;
    int32_t *pos = calloc((size_t)(st->nc ? st->nc : 1), sizeof *pos);
    int rc = pos ? CLS_OK : cls_fail(err, CLS_EOTHER, "amg coupled: out of memory");
    for (int k = 0; !rc && k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        amgc_part *q = &st->pp[k];
        const csr_matrix *P = &q->P;
        const int64_t nnz = P->rowptr[P->nrows];
        /* the touched aggregates, ascending (the gather's order; P's columns
         * keep their order): marked, then read off in one pass */
        memset(pos, 0, (size_t)st->nc * sizeof *pos);
        for (int64_t e = 0; e < nnz; e++)
            pos[P->col[e]] = 1;
        int64_t nt = 0;
        for (int64_t a = 0; a < st->nc; a++)
            nt += pos[a];
        if (!(q->touch = malloc((size_t)(nt + 1) * sizeof *q->touch))) {
            rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory");
            break;
        }
        nt = 0;
        for (int64_t a = 0; a < st->nc; a++)
            if (pos[a])
                q->touch[nt++] = (int32_t)a;
        q->ntouch = nt;
        for (int64_t a = 0; a < nt; a++)
            pos[q->touch[a]] = (int32_t)a;
        if ((rc = csr_alloc(&q->Pc, P->nrows, nt, nnz, err)))
            break;
        memcpy(q->Pc.rowptr, P->rowptr, (size_t)(P->nrows + 1) * sizeof *P->rowptr);
        for (int64_t e = 0; e < nnz; e++) {
            q->Pc.col[e] = pos[P->col[e]];
            q->Pc.val[e] = P->val[e];
        }
        if ((rc = amg_csr_transpose(&q->Pc, &q->Rc, err)))
            break;
        amgc_mark(pc->s, "P compressed, P'", tm);
        if ((rc = la_csr_upload(&p->la, &q->Pc, LA_SPMV_AUTO, &q->dP, err)))
            break;
        q->have_dP = 1;
        if ((rc = la_csr_upload(&p->la, &q->Rc, LA_SPMV_AUTO, &q->dR, err)))
            break;
        q->have_dR = 1;
        if ((rc = la_vec_create(&p->la, nt ? nt : 1, &q->tc, err)))
            break;
        q->have_tc = 1;
        q->tc.n = nt;
        if ((rc = la_vec_create(&p->la, nt ? nt : 1, &q->ec, err)))
            break;
        q->have_ec = 1;
        q->ec.n = nt;
        st->nmine_c += nt;
    }
    free(pos);
    return rc;
}

/* step 6's index: every rank's touched aggregates, on the coarse rank */
static int amgc_index(dsys *s, amgc_state *st, cls_error *err)
{
    const int me = s->rank == st->root;
    int rc = CLS_OK;
    int32_t *list = malloc((size_t)(st->nmine_c + 1) * sizeof *list);
    st->mine = malloc((size_t)(st->nmine_c + 1) * sizeof *st->mine);
    if (me) {
        st->cnt = malloc((size_t)s->size * sizeof *st->cnt);
        st->displ = malloc((size_t)s->size * sizeof *st->displ);
    }
    if (!list || !st->mine || (me && (!st->cnt || !st->displ)))
        rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the coarse index");
    for (int k = 0, q = 0; !rc && k < s->nmine; k++)
        for (int64_t a = 0; a < st->pp[k].ntouch; a++)
            list[q++] = st->pp[k].touch[a];
    if (amgc_any_failed(s, rc)) {
        free(list);
        return rc ? rc : cls_fail(err, CLS_EOTHER, "amg coupled: another rank failed");
    }
    rc = amgc_counts(s, st, st->nmine_c, st->cnt, st->displ, &st->ntot, err);
    if (!rc && me) {
        st->idx = malloc((size_t)(st->ntot + 1) * sizeof *st->idx);
        st->rbuf = malloc((size_t)(st->ntot + 1) * sizeof *st->rbuf);
        if (!st->idx || !st->rbuf)
            rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the coarse index");
    }
    if (amgc_any_failed(s, rc)) {
        free(list);
        return rc ? rc : cls_fail(err, CLS_EOTHER, "amg coupled: another rank failed");
    }
    if (!amgc_gatherv(s, st, list, st->nmine_c, MPI_INT32_T, st->idx, st->cnt, st->displ))
        rc = cls_fail(err, CLS_EOTHER, "amg coupled: MPI_Gatherv of the coarse index failed");
    free(list);
    return rc;
}

/* step 5 on the coarse rank: A_c's hierarchy on its part 0's device */
static int amgc_coarse(pc *pc, amgc_state *st, const amg_options *ao, int *on_device,
                       cls_error *err)
{
    dsys *s = pc->s;
    dpart *p0 = &s->parts[0];
    int dev = 0, rc = pc_setup_on_device(pc, p0, &dev, err);
    if (rc)
        return rc;
    *on_device = dev;
    if (dev)
        rc = amg_build_device(&st->Ac, ao, &p0->la, NULL, &st->cd, err);
    else if (!(rc = amg_build(&st->Ac, ao, &st->h, err)))
        rc = amg_upload(st->h, &p0->la, &st->cd, err);
    if (rc)
        return rc;
    const int64_t nc = st->nc ? st->nc : 1;
    if ((rc = la_vec_create(&p0->la, nc, &st->ctc, err)))
        return rc;
    if ((rc = la_vec_create(&p0->la, nc, &st->cec, err))) {
        la_vec_release(&st->ctc);
        return rc;
    }
    st->have_cv = 1;
    st->ctc.n = st->cec.n = st->nc;
    if (!(st->cbuf = malloc((size_t)nc * sizeof *st->cbuf)))
        return cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the coarse vectors");
    return CLS_OK;
}

int pc_amg_coupled_setup(pc *pc, cls_error *err)
{
    dsys *s = pc->s;
    const part_layout *L = s->L;
    const double tb = cls_now();
    amg_options ao;
    amg_options_default(&ao);
    amgc_state *st = calloc(1, sizeof *st);
    if (!st)
        return cls_fail(err, CLS_EOTHER, "out of memory for the preconditioner");
    pc->state = st;
    pc->device_only = 1; /* no native form: M spans every part */
    st->root = L->rank[0];
    const size_t nm = (size_t)(s->nmine ? s->nmine : 1);
    st->pp = calloc(nm, sizeof *st->pp);
    st->coff = calloc((size_t)L->nparts + 1, sizeof *st->coff);
    csr_matrix *G = calloc(nm, sizeof *G), *C = calloc(nm, sizeof *C), *Ar = calloc(nm, sizeof *Ar);
    int32_t **ip = calloc(nm, sizeof *ip);
    double **x1 = calloc(nm, sizeof *x1), **x2 = calloc(nm, sizeof *x2);
    halo_comm hc;
    int have_hc = 0, on_device = 0;
    int rc = st->pp && st->coff && G && C && Ar && ip && x1 && x2
                 ? CLS_OK
                 : cls_fail(err, CLS_EOTHER, "out of memory for the preconditioner");
    for (int k = 0; G && C && Ar && k < s->nmine; k++) {
        csr_init(&G[k]);
        csr_init(&C[k]);
        csr_init(&Ar[k]);
    }
    if (!rc && !(rc = halo_comm_init(&hc, s->comm, L, s->plans_copy, s->nmine, sizeof(double), NULL,
                                     NULL, err)))
        have_hc = 1;
    double tm = tb;
    if (!rc && !(rc = amgc_iperm(s, ip, err)) && !(rc = amgc_hvecs(s, x1, err)) &&
        !(rc = amgc_hvecs(s, x2, err)) && !(rc = pc_diag(pc, err))) {
        amgc_mark(s, "diagonal, work", &tm);
        rc = amgc_aggregates(pc, st, &ao, err);
    }
    amgc_mark(s, "aggregates", &tm);
    if (amgc_any_failed(s, rc))
        goto fail;
    /* step 1's numbering: the aggregate counts summed over ranks */
    if (MPI_Allreduce(MPI_IN_PLACE, st->coff + 1, L->nparts, MPI_INT64_T, MPI_SUM, s->comm)) {
        rc = cls_fail(err, CLS_EOTHER, "amg coupled: MPI_Allreduce failed");
        goto fail;
    }
    for (int q = 0; q < L->nparts; q++)
        st->coff[q + 1] += st->coff[q];
    st->nc = st->coff[L->nparts];
    if (st->nc > INT_MAX) {
        rc = cls_fail(err, CLS_EUSAGE,
                      "amg coupled: %lld coarse rows exceed one gather; use "
                      "--precond-coupling block",
                      (long long)st->nc);
        goto fail;
    }
    for (int k = 0; k < s->nmine; k++) { /* local aggregates -> global */
        amgc_part *q = &st->pp[k];
        const int64_t off = st->coff[s->parts[k].part];
        for (int64_t i = 0; i < s->parts[k].halo.nlocal; i++)
            q->agg[i] = q->agg[i] >= 0 ? (int32_t)(q->agg[i] + off) : -1;
    }
    /* step 2: lambda_max(D^-1 A): the smoother's interval, P's omega */
    double lmin = 0.0;
    int used = 0;
    rc = pc_cheby_bounds(pc, ao.lanczos_steps, &lmin, &st->lmax, &used, err);
    if (amgc_any_failed(s, rc)) { /* its last step is local */
        rc = rc ? rc : cls_fail(err, CLS_EOTHER, "amg coupled: another rank failed");
        goto fail;
    }
    amgc_mark(s, "lambda_max", &tm);
    /* the smoother's kernels (pc_cheby_poly's la_pck) now: a program built
     * from source counts in the set-up, not in the first V-cycle */
    for (int k = 0; !rc && k < s->nmine; k++)
        rc = pc_part_kernels(pc, k, err);
    if (amgc_any_failed(s, rc)) {
        rc = rc ? rc : cls_fail(err, CLS_EOTHER, "amg coupled: another rank failed");
        goto fail;
    }
    /* steps 3 and 4 */
    rc = amgc_ghost_nodes(s, st, &hc, ip, x1, x2, err);
    for (int k = 0; !rc && k < s->nmine; k++) {
        if ((rc = pc_part_rows(&s->parts[k], 0, 0, &Ar[k], err)))
            break;
        /* on a GPU in double precision by the device's kernel (the same
         * rows), else the host's */
        amgc_part *q = &st->pp[k];
        const double omega = ao.omega_scale / st->lmax;
        rc = amgc_on_device(pc, k) ? amg_device_prolongator(&s->parts[k].la, &Ar[k], q->agg,
                                                            q->tnode, st->nc, omega, &q->P, err)
                                   : CLS_EUSAGE;
        if (rc == CLS_EUSAGE) { /* the host's (or past the device's 32-bit indices) */
            cls_error_clear(err);
            rc = amg_part_prolongator(&Ar[k], q->agg, q->tnode, st->nc, omega, &q->P, err);
        }
    }
    amgc_mark(s, "prolongator", &tm);
    if (amgc_any_failed(s, rc))
        goto fail;
    rc = amgc_ghost_rows(s, st, &hc, ip, x1, x2, G, err);
    amgc_mark(s, "ghost rows of P", &tm);
    for (int k = 0; !rc && k < s->nmine; k++) {
        /* on a GPU in double precision by the device's SpGEMM (the same
         * share within rounding), else the host's */
        rc = amgc_on_device(pc, k)
                 ? amg_device_coupled_rows(&s->parts[k].la, &Ar[k], &st->pp[k].P, &G[k], &C[k], err)
                 : CLS_EUSAGE;
        if (rc == CLS_EUSAGE) { /* the host's (or past the device's 32-bit indices) */
            cls_error_clear(err);
            rc = amg_coupled_rows(&Ar[k], &st->pp[k].P, &G[k], &C[k], err);
        }
        csr_free(&Ar[k]);
    }
    if (amgc_any_failed(s, rc))
        goto fail;
    amgc_mark(s, "shares of P'AP", &tm);
    /* step 5 */
    rc = amgc_gather_rows(s, st, C, err); /* may fail on the coarse rank alone */
    if (amgc_any_failed(s, rc)) {
        rc = rc ? rc : cls_fail(err, CLS_EOTHER, "amg coupled: another rank failed");
        goto fail;
    }
    amgc_mark(s, "gather, sum", &tm);
    if (s->rank == st->root)
        rc = amgc_coarse(pc, st, &ao, &on_device, err);
    amgc_mark(s, "coarse hierarchy", &tm);
    if (!rc)
        rc = amgc_compress(pc, st, &tm, err);
    amgc_mark(s, "P, P' uploaded", &tm);
    if (amgc_any_failed(s, rc))
        goto fail;
    /* step 6 */
    if ((rc = amgc_index(s, st, err)))
        goto fail;
    st->degree = ao.degree;
    pc_cheby_coeffs(ao.degree, ao.cheb_lower * st->lmax, ao.cheb_upper * st->lmax, &st->c0, st->c1,
                    st->c2);
    dvec *const work[] = {&st->zz, &st->t, &st->w, &st->cres, &st->cd_, &st->cq};
    for (int v = 0; !rc && v < 6; v++) /* zz and cd_ ghosted: the SpMVs read them */
        rc = dvec_create(s, v == 0 || v == 4, work[v], err);
    if (amgc_any_failed(s, rc)) { /* describe's reduction comes next: agree first */
        rc = rc ? rc : cls_fail(err, CLS_EOTHER, "amg coupled: another rank failed");
        goto fail;
    }
    pc->apply = amgc_apply; /* everything is in */
    const double build_s = cls_now() - tb;
    pc->info.build_s += build_s;
    pc->info.parts_built += s->nmine;
    pc->info.on_device = on_device;
    pc->info.lmax = st->lmax; /* the twin in test_pc.c rebuilds M from it */
    amgc_describe(pc, st, build_s, on_device);
fail:
    for (int k = 0; k < s->nmine; k++) {
        if (G)
            csr_free(&G[k]);
        if (C)
            csr_free(&C[k]);
        if (Ar)
            csr_free(&Ar[k]);
        if (ip)
            free(ip[k]);
        if (x1)
            free(x1[k]);
        if (x2)
            free(x2[k]);
        if (st->pp) { /* the set-up's own */
            free(st->pp[k].agg);
            free(st->pp[k].tnode);
            st->pp[k].agg = NULL;
            st->pp[k].tnode = NULL;
        }
    }
    free(G);
    free(C);
    free(Ar);
    free(ip);
    free(x1);
    free(x2);
    if (have_hc)
        halo_comm_free(&hc);
    return rc;
}

/* w = S v: Chebyshev in D^-1 A from zero, every SpMV halo-exchanged */
static void amgc_smooth(pc *pc, amgc_state *st, const dvec *v, dvec *w)
{
    pc_cheby_poly(pc, st->degree, st->c0, st->c1, st->c2, &st->cd_, &st->cq, &st->cres, v, w);
}

/* zz += P V(A_c) P' t: the coarse correction (collective) */
static void amgc_coarse_correct(pc *pc, amgc_state *st)
{
    dsys *s = pc->s;
    int64_t off = 0;
    for (int k = 0; k < s->nmine; k++) { /* the shares tc = P_k' t_k, read back */
        dpart *p = &s->parts[k];
        amgc_part *q = &st->pp[k];
        la_vec vt = pc_loc(s, &st->t, k);
        DSYS_DO(s, la_spmv(&p->la, &q->dR, &vt, &q->tc, DSYS_ERR));
        DSYS_DO(s, la_vec_download(&p->la, &q->tc, st->mine + off, DSYS_ERR));
        off += q->ntouch;
    }
    const int me = s->rank == st->root;
    if (!amgc_gatherv(s, st, st->mine, st->nmine_c, MPI_DOUBLE, st->rbuf, st->cnt, st->displ)) {
        cls_error e;
        cls_fail(&e, CLS_EOTHER, "amg coupled: MPI_Gatherv of the coarse residual failed");
        dsys_fail(s, &e);
    }
    if (me) { /* the shares summed (in rank, part and aggregate order), the V-cycle */
        la_ctx *la0 = &s->parts[0].la;
        memset(st->cbuf, 0, (size_t)st->nc * sizeof *st->cbuf);
        for (int64_t m = 0; m < st->ntot; m++)
            st->cbuf[st->idx[m]] += st->rbuf[m];
        DSYS_DO(s, la_vec_upload(la0, &st->ctc, st->cbuf, DSYS_ERR));
        DSYS_DO(s, amg_apply(st->cd, la0, &st->ctc, &st->cec, DSYS_ERR));
        DSYS_DO(s, la_vec_download(la0, &st->cec, st->cbuf, DSYS_ERR));
        for (int64_t m = 0; m < st->ntot; m++)
            st->rbuf[m] = st->cbuf[st->idx[m]];
    }
    if (MPI_Scatterv(st->rbuf, st->cnt, st->displ, MPI_DOUBLE, st->mine, (int)st->nmine_c,
                     MPI_DOUBLE, st->root, s->comm) != MPI_SUCCESS) {
        cls_error e;
        cls_fail(&e, CLS_EOTHER, "amg coupled: MPI_Scatterv of the coarse correction failed");
        dsys_fail(s, &e);
    }
    off = 0;
    for (int k = 0; k < s->nmine; k++) { /* zz += P ec */
        dpart *p = &s->parts[k];
        amgc_part *q = &st->pp[k];
        la_vec vw = pc_loc(s, &st->w, k), vz = pc_loc(s, &st->zz, k);
        DSYS_DO(s, la_vec_upload(&p->la, &q->ec, st->mine + off, DSYS_ERR));
        DSYS_DO(s, la_spmv(&p->la, &q->dP, &q->ec, &vw, DSYS_ERR));
        DSYS_DO(s, la_axpy(&p->la, 1.0, &vw, &vz, DSYS_ERR));
        off += q->ntouch;
    }
}

/* z = M^-1 r: S, the coarse correction, S (the header's V-cycle) */
static void amgc_apply(pc *pc, const dvec *r, dvec *z)
{
    dsys *s = pc->s;
    amgc_state *st = pc->state;
    amgc_smooth(pc, st, r, &st->zz); /* zz = S r */
    dvec_spmv(s, &st->zz, &st->t);   /* t = A zz */
    dvec_xpay(s, r, -1.0, &st->t);   /* t = r - A zz */
    amgc_coarse_correct(pc, st);     /* zz += P V(A_c) P' t */
    dvec_spmv(s, &st->zz, &st->t);   /* t = r - A zz */
    dvec_xpay(s, r, -1.0, &st->t);
    amgc_smooth(pc, st, &st->t, &st->w); /* zz += S t */
    dvec_axpy(s, 1.0, &st->w, &st->zz);
    dvec_copy(s, &st->zz, z);
}

void pc_amg_coupled_release(pc *pc)
{
    amgc_state *st = pc->state;
    if (!st)
        return;
    for (int k = 0; st->pp && k < pc->nmine; k++) {
        amgc_part *q = &st->pp[k];
        if (q->have_dP)
            la_csr_release(&q->dP);
        if (q->have_dR)
            la_csr_release(&q->dR);
        if (q->have_tc)
            la_vec_release(&q->tc);
        if (q->have_ec)
            la_vec_release(&q->ec);
        csr_free(&q->P);
        csr_free(&q->Pc);
        csr_free(&q->Rc);
        free(q->touch);
        free(q->agg);
        free(q->tnode);
    }
    free(st->pp);
    if (st->have_cv) {
        la_vec_release(&st->ctc);
        la_vec_release(&st->cec);
    }
    if (st->cd)
        amg_device_release(st->cd);
    if (st->h)
        amg_free(st->h); /* before the operator it borrows */
    csr_free(&st->Ac);
    dvec_release(&st->zz);
    dvec_release(&st->t);
    dvec_release(&st->w);
    dvec_release(&st->cres);
    dvec_release(&st->cd_);
    dvec_release(&st->cq);
    free(st->coff);
    free(st->mine);
    free(st->cbuf);
    free(st->rbuf);
    free(st->idx);
    free(st->cnt);
    free(st->displ);
    free(st);
    pc->state = NULL;
}
