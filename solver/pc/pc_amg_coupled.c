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
 *   tc = P' t                        per part, on its device (P = diag(P_k))
 *   ec = V(A_c) tc                   tc gathered on the coarse rank, one
 *                                        V-cycle of amg_build's hierarchy
 *                                        of A_c = P'AP there, ec scattered
 *   z += P ec                        per part, on its device
 *   z += S (r - A z)                 the same S after
 *
 * S is symmetric (p(D^-1 A) D^-1) and the same before and after, R = P',
 * and the coarse V-cycle is symmetric positive definite: so is M, and CG's
 * theory holds. With one part it is amg_build's V-cycle up to its coarse
 * levels (which the single hierarchy would smooth with its own level-1
 * Chebyshev instead of the device V-cycle of the same operator).
 *
 * The set-up (collective, every step agreed before the next):
 *   1. each part: its block's aggregates and smoothed P_k
 *      (amg_part_prolongator, the host's level 0), P_k and P_k' uploaded;
 *   2. the coarse offsets: the parts' aggregate counts summed over ranks;
 *   3. the ghosts' rows of P: K halo exchanges of the m-th entry of each
 *      row (its global coarse column and its value), K the longest row;
 *   4. each part: its rows of P'AP (amg_coupled_rows);
 *   5. the rows gathered on the rank of part 0 (the coarse rank), which
 *      builds A_c's hierarchy on its device (amg_build_device on a GPU in
 *      double precision, else amg_build and amg_upload);
 *   6. lambda_max of D^-1 A by Lanczos over every part (pc_cheby_bounds).
 *
 * Per application: 2 + 2 (degree - 1) halo-exchanged SpMVs of A, one SpMV
 * of P' and one of P per part, a gather and a scatter of the coarse vector
 * (its rows are ~1/20 of the fine ones for 3D problems) and the coarse
 * V-cycle on one device. The coarse vector crosses host memory: it moves
 * between devices and ranks.
 */
#include "pc_kind.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"
#include "../amg/amg.h"

/* one part's prolongator, on the host and its device */
typedef struct amgc_part {
    csr_matrix P, R; /* device row order; R = P' */
    la_csr dP, dR;
    int have_dP, have_dR;
    la_vec tc, ec; /* its coarse rows on its device */
    int have_tc, have_ec;
} amgc_part;

typedef struct amgc_state {
    amgc_part *pp; /* by slot */
    int64_t *coff; /* nparts + 1: part q's coarse rows [coff[q], coff[q+1]) */
    int64_t nc;    /* coarse rows in all */
    int root;      /* the coarse rank (part 0's) */
    double *mine;  /* this rank's coarse rows, its parts in order */
    int64_t nmine_c;
    /* the coarse rank's */
    csr_matrix Ac;
    amg_hierarchy *h; /* built on the host (else on the device, in cd) */
    amg_device *cd;
    la_vec ctc, cec;
    int have_cv;
    double *cbuf;
    int *cnt, *displ; /* per rank, for the gather and scatter */
    /* the fine level's smoother */
    int degree;
    double lmax, c0, c1[32], c2[32];
    dvec zz, t, w, cres, cd_, cq;
} amgc_state;

static void amgc_apply(pc *pc, const dvec *r, dvec *z);

/* 1 when any rank failed (rc != CLS_OK on it): all ranks stop together */
static int amgc_any_failed(dsys *s, int rc)
{
    int mine = rc != CLS_OK, any = 0;
    if (MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, s->comm) != MPI_SUCCESS)
        return 1;
    return any;
}

/* part k's rows in device order, local columns in device order, ghost
 * columns (>= nlocal) as they are */
static int amgc_rows(const dpart *p, csr_matrix *B, cls_error *err)
{
    const csr_matrix *A = &p->A;
    const int64_t n = p->halo.nlocal, base = A->rowptr[0];
    int32_t *iperm = NULL;
    csr_init(B);
    if (p->perm) {
        if (!(iperm = malloc((size_t)(n ? n : 1) * sizeof *iperm)))
            return cls_fail(err, CLS_EOTHER, "out of memory for a part's rows");
        for (int64_t i = 0; i < n; i++)
            iperm[p->perm[i]] = (int32_t)i;
    }
    int rc = csr_alloc(B, n, n + p->halo.nghost, A->rowptr[n] - base, err);
    int64_t q = 0;
    B->rowptr[0] = 0;
    for (int64_t i = 0; !rc && i < n; i++) {
        int64_t r = p->perm ? p->perm[i] : i;
        for (int64_t e = A->rowptr[r] - base; e < A->rowptr[r + 1] - base; e++) {
            int32_t c = A->col[e];
            B->col[q] = c < n && iperm ? iperm[c] : c;
            B->val[q++] = A->val[e];
        }
        B->rowptr[i + 1] = q;
    }
    free(iperm);
    return rc;
}

/* step 3: the global P's rows of part slot k's ghosts, into G[k] */
static int amgc_ghost_rows(dsys *s, amgc_state *st, csr_matrix *G, cls_error *err)
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
    halo_comm hc;
    int rc = halo_comm_init(&hc, s->comm, s->L, s->plans_copy, s->nmine, sizeof(double), NULL, NULL,
                            err);
    if (rc)
        return rc;
    const int nm = s->nmine ? s->nmine : 1;
    double **xc = calloc((size_t)nm, sizeof *xc), **xv = calloc((size_t)nm, sizeof *xv);
    double **gc = calloc((size_t)nm, sizeof *gc), **gv = calloc((size_t)nm, sizeof *gv);
    int32_t **iperm = calloc((size_t)nm, sizeof *iperm);
    if (!xc || !xv || !gc || !gv || !iperm)
        rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the ghosts' rows");
    for (int k = 0; !rc && k < s->nmine; k++) {
        const dpart *p = &s->parts[k];
        const int64_t n = p->halo.nlocal, ng = p->halo.nghost, nk = (int64_t)K * ng;
        xc[k] = malloc((size_t)(n + ng + 1) * sizeof **xc);
        xv[k] = malloc((size_t)(n + ng + 1) * sizeof **xv);
        gc[k] = malloc((size_t)(nk + 1) * sizeof **gc);
        gv[k] = malloc((size_t)(nk + 1) * sizeof **gv);
        iperm[k] = malloc((size_t)(n + 1) * sizeof **iperm);
        if (!xc[k] || !xv[k] || !gc[k] || !gv[k] || !iperm[k]) {
            rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the ghosts' rows");
            break;
        }
        for (int64_t i = 0; i < n; i++) /* row of A (halo order) -> device row */
            iperm[k][p->perm ? p->perm[i] : i] = (int32_t)i;
    }
    if (amgc_any_failed(s, rc)) {
        rc = rc ? rc : cls_fail(err, CLS_EOTHER, "amg coupled: another rank failed");
        goto done;
    }
    for (int m = 0; !rc && m < K; m++) {
        for (int k = 0; k < s->nmine; k++) { /* the m-th entry of each row, in A's row order */
            const dpart *p = &s->parts[k];
            const csr_matrix *P = &st->pp[k].P;
            const int64_t off = st->coff[p->part];
            for (int64_t r = 0; r < p->halo.nlocal; r++) {
                const int64_t i = iperm[k][r], e = P->rowptr[i] + m;
                const int has = e < P->rowptr[i + 1];
                xc[k][r] = has ? (double)(P->col[e] + off) : -1.0;
                xv[k][r] = has ? P->val[e] : 0.0;
            }
        }
        if ((rc = halo_exchange_host(&hc, xc, err)) || (rc = halo_exchange_host(&hc, xv, err)))
            break;
        for (int k = 0; k < s->nmine; k++) {
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
done:
    for (int k = 0; k < s->nmine; k++) {
        if (xc)
            free(xc[k]);
        if (xv)
            free(xv[k]);
        if (gc)
            free(gc[k]);
        if (gv)
            free(gv[k]);
        if (iperm)
            free(iperm[k]);
    }
    free(xc);
    free(xv);
    free(gc);
    free(gv);
    free(iperm);
    halo_comm_free(&hc);
    return rc;
}

/* step 5: the parts' coarse rows stacked on the coarse rank (C[k]: slot
 * k's); ranks drive ascending runs of parts, so rank order is row order */
static int amgc_gather_rows(dsys *s, amgc_state *st, const csr_matrix *C, cls_error *err)
{
    int64_t rows = 0, nnz = 0;
    for (int k = 0; k < s->nmine; k++) {
        rows += C[k].nrows;
        nnz += C[k].rowptr[C[k].nrows];
    }
    int rc = CLS_OK;
    const int me = s->rank == st->root;
    if (nnz > INT_MAX || rows > INT_MAX)
        rc = cls_fail(err, CLS_EOTHER,
                      "amg coupled: a rank's %lld coarse entries exceed what one gather carries",
                      (long long)nnz);
    int *len = malloc((size_t)(rows + 1) * sizeof *len);
    int32_t *col = malloc((size_t)(nnz + 1) * sizeof *col);
    double *val = malloc((size_t)(nnz + 1) * sizeof *val);
    int *all = NULL, *rcnt = NULL, *rdis = NULL, *ncnt = NULL, *ndis = NULL, *glen = NULL;
    if (me) {
        all = malloc((size_t)s->size * 2 * sizeof *all);
        rcnt = malloc((size_t)s->size * sizeof *rcnt);
        rdis = malloc((size_t)s->size * sizeof *rdis);
        ncnt = malloc((size_t)s->size * sizeof *ncnt);
        ndis = malloc((size_t)s->size * sizeof *ndis);
    }
    if (!rc && (!len || !col || !val || (me && (!all || !rcnt || !rdis || !ncnt || !ndis))))
        rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the coarse rows");
    if (!rc) {
        int64_t r = 0, q = 0;
        for (int k = 0; k < s->nmine; k++) {
            const csr_matrix *c = &C[k];
            for (int64_t i = 0; i < c->nrows; i++)
                len[r++] = (int)(c->rowptr[i + 1] - c->rowptr[i]);
            const int64_t m = c->rowptr[c->nrows];
            if (m) {
                memcpy(col + q, c->col, (size_t)m * sizeof *col);
                memcpy(val + q, c->val, (size_t)m * sizeof *val);
            }
            q += m;
        }
    }
    if (amgc_any_failed(s, rc)) {
        rc = rc ? rc : cls_fail(err, CLS_EOTHER, "amg coupled: another rank failed");
        goto done;
    }
    int counts[2] = {(int)rows, (int)nnz};
    MPI_Gather(counts, 2, MPI_INT, all, 2, MPI_INT, st->root, s->comm);
    if (me) {
        int64_t trow = 0, tnnz = 0;
        for (int q = 0; q < s->size; q++) {
            rcnt[q] = all[2 * q];
            rdis[q] = (int)trow;
            ncnt[q] = all[2 * q + 1];
            ndis[q] = (int)(tnnz < INT_MAX ? tnnz : 0);
            trow += all[2 * q];
            tnnz += all[2 * q + 1];
        }
        if (tnnz > INT_MAX)
            rc = cls_fail(err, CLS_EOTHER,
                          "amg coupled: the coarse operator's %lld entries exceed one gather",
                          (long long)tnnz);
        else if (trow != st->nc)
            rc = cls_fail(err, CLS_EOTHER, "amg coupled: %lld coarse rows gathered, %lld expected",
                          (long long)trow, (long long)st->nc);
        else if (!(glen = malloc((size_t)(trow + 1) * sizeof *glen)))
            rc = cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the coarse rows");
        else
            rc = csr_alloc(&st->Ac, st->nc, st->nc, tnnz, err);
    }
    if (amgc_any_failed(s, rc)) {
        rc = rc ? rc : cls_fail(err, CLS_EOTHER, "amg coupled: another rank failed");
        goto done;
    }
    if (MPI_Gatherv(len, (int)rows, MPI_INT, glen, rcnt, rdis, MPI_INT, st->root, s->comm) ||
        MPI_Gatherv(col, (int)nnz, MPI_INT32_T, me ? st->Ac.col : NULL, ncnt, ndis, MPI_INT32_T,
                    st->root, s->comm) ||
        MPI_Gatherv(val, (int)nnz, MPI_DOUBLE, me ? st->Ac.val : NULL, ncnt, ndis, MPI_DOUBLE,
                    st->root, s->comm))
        rc = cls_fail(err, CLS_EOTHER, "amg coupled: MPI_Gatherv of the coarse rows failed");
    if (!rc && me) {
        st->Ac.rowptr[0] = 0;
        for (int64_t i = 0; i < st->nc; i++)
            st->Ac.rowptr[i + 1] = st->Ac.rowptr[i] + glen[i];
    }
done:
    free(len);
    free(col);
    free(val);
    free(all);
    free(rcnt);
    free(rdis);
    free(ncnt);
    free(ndis);
    free(glen);
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

/* step 1 and 4's local work: P_k and its upload; the part's rows of P'AP
 * come after the ghosts' rows are in */
static int amgc_prolongators(pc *pc, amgc_state *st, const amg_options *ao, cls_error *err)
{
    dsys *s = pc->s;
    for (int k = 0; k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        amgc_part *q = &st->pp[k];
        csr_matrix B;
        int rc = pc_local_block(p, &B, err);
        if (!rc)
            rc = amg_part_prolongator(&B, ao, &q->P, err);
        csr_free(&B);
        if (rc)
            return rc;
        st->coff[p->part + 1] = q->P.ncols; /* summed over ranks, then scanned */
    }
    return CLS_OK;
}

static int amgc_upload(pc *pc, amgc_state *st, cls_error *err)
{
    dsys *s = pc->s;
    int rc = CLS_OK;
    for (int k = 0; !rc && k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        amgc_part *q = &st->pp[k];
        const int64_t na = q->P.ncols;
        if ((rc = amg_csr_transpose(&q->P, &q->R, err)))
            break;
        if ((rc = la_csr_upload(&p->la, &q->P, LA_SPMV_AUTO, &q->dP, err)))
            break;
        q->have_dP = 1;
        if ((rc = la_csr_upload(&p->la, &q->R, LA_SPMV_AUTO, &q->dR, err)))
            break;
        q->have_dR = 1;
        if ((rc = la_vec_create(&p->la, na ? na : 1, &q->tc, err)))
            break;
        q->have_tc = 1;
        q->tc.n = na;
        if ((rc = la_vec_create(&p->la, na ? na : 1, &q->ec, err)))
            break;
        q->have_ec = 1;
        q->ec.n = na;
    }
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
    st->cbuf = malloc((size_t)nc * sizeof *st->cbuf);
    st->cnt = malloc((size_t)s->size * sizeof *st->cnt);
    st->displ = malloc((size_t)s->size * sizeof *st->displ);
    if (!st->cbuf || !st->cnt || !st->displ)
        return cls_fail(err, CLS_EOTHER, "amg coupled: out of memory for the coarse vectors");
    for (int r = 0; r < s->size; r++) {
        st->displ[r] = (int)st->coff[s->L->first[r]];
        st->cnt[r] = (int)(st->coff[s->L->first[r + 1]] - st->coff[s->L->first[r]]);
    }
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
    st->pp = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *st->pp);
    st->coff = calloc((size_t)L->nparts + 1, sizeof *st->coff);
    csr_matrix *G = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *G);
    csr_matrix *C = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *C);
    int rc = st->pp && st->coff && G && C
                 ? CLS_OK
                 : cls_fail(err, CLS_EOTHER, "out of memory for the preconditioner");
    for (int k = 0; G && C && k < s->nmine; k++) {
        csr_init(&G[k]);
        csr_init(&C[k]);
    }
    if (!rc)
        rc = pc_diag(pc, err);
    if (!rc)
        rc = amgc_prolongators(pc, st, &ao, err);
    if (amgc_any_failed(s, rc))
        goto fail;
    /* step 2: the coarse offsets, the aggregate counts summed over ranks */
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
    /* steps 3 and 4 */
    rc = amgc_ghost_rows(s, st, G, err);
    for (int k = 0; !rc && k < s->nmine; k++) {
        csr_matrix A;
        if (!(rc = amgc_rows(&s->parts[k], &A, err)))
            rc = amg_coupled_rows(&A, &st->pp[k].P, st->coff[s->parts[k].part], &G[k], st->nc,
                                  &C[k], err);
        csr_free(&A);
    }
    if (!rc)
        rc = amgc_upload(pc, st, err);
    if (amgc_any_failed(s, rc))
        goto fail;
    /* step 5 */
    if ((rc = amgc_gather_rows(s, st, C, err)))
        goto fail;
    int on_device = 0;
    if (s->rank == st->root)
        rc = amgc_coarse(pc, st, &ao, &on_device, err);
    int64_t nm = 0;
    for (int k = 0; k < s->nmine; k++)
        nm += st->pp[k].P.ncols;
    st->nmine_c = nm;
    if (!rc && !(st->mine = malloc((size_t)(nm ? nm : 1) * sizeof *st->mine)))
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the preconditioner");
    if (amgc_any_failed(s, rc))
        goto fail;
    /* step 6: the smoother's interval, from lambda_max(D^-1 A) of every part */
    double lmin = 0.0;
    int used = 0;
    if ((rc = pc_cheby_bounds(pc, ao.lanczos_steps, &lmin, &st->lmax, &used, err)))
        goto fail;
    st->degree = ao.degree;
    pc_cheby_coeffs(ao.degree, ao.cheb_lower * st->lmax, ao.cheb_upper * st->lmax, &st->c0, st->c1,
                    st->c2);
    if ((rc = dvec_create(s, 1, &st->zz, err)) || (rc = dvec_create(s, 0, &st->t, err)) ||
        (rc = dvec_create(s, 0, &st->w, err)) || (rc = dvec_create(s, 0, &st->cres, err)) ||
        (rc = dvec_create(s, 1, &st->cd_, err)) || (rc = dvec_create(s, 0, &st->cq, err)))
        goto fail;
    pc->apply = amgc_apply; /* everything is in */
    const double build_s = cls_now() - tb;
    pc->info.build_s += build_s;
    pc->info.parts_built += s->nmine;
    pc->info.on_device = on_device;
    amgc_describe(pc, st, build_s, on_device);
fail:
    for (int k = 0; G && C && k < s->nmine; k++) {
        csr_free(&G[k]);
        csr_free(&C[k]);
    }
    free(G);
    free(C);
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
    for (int k = 0; k < s->nmine; k++) { /* tc = P' t, read back */
        dpart *p = &s->parts[k];
        amgc_part *q = &st->pp[k];
        la_vec vt = pc_loc(s, &st->t, k);
        DSYS_DO(s, la_spmv(&p->la, &q->dR, &vt, &q->tc, DSYS_ERR));
        DSYS_DO(s, la_vec_download(&p->la, &q->tc, st->mine + off, DSYS_ERR));
        off += q->P.ncols;
    }
    const int me = s->rank == st->root;
    if (MPI_Gatherv(st->mine, (int)st->nmine_c, MPI_DOUBLE, me ? st->cbuf : NULL, st->cnt,
                    st->displ, MPI_DOUBLE, st->root, s->comm) != MPI_SUCCESS) {
        cls_error e;
        cls_fail(&e, CLS_EOTHER, "amg coupled: MPI_Gatherv of the coarse residual failed");
        dsys_fail(s, &e);
    }
    if (me) {
        la_ctx *la0 = &s->parts[0].la;
        DSYS_DO(s, la_vec_upload(la0, &st->ctc, st->cbuf, DSYS_ERR));
        DSYS_DO(s, amg_apply(st->cd, la0, &st->ctc, &st->cec, DSYS_ERR));
        DSYS_DO(s, la_vec_download(la0, &st->cec, st->cbuf, DSYS_ERR));
    }
    if (MPI_Scatterv(me ? st->cbuf : NULL, st->cnt, st->displ, MPI_DOUBLE, st->mine,
                     (int)st->nmine_c, MPI_DOUBLE, st->root, s->comm) != MPI_SUCCESS) {
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
        off += q->P.ncols;
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
        csr_free(&q->R);
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
    free(st->cnt);
    free(st->displ);
    free(st);
    pc->state = NULL;
}
