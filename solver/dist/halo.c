/*
 * halo.c: halo plans and the host side of the ghost exchange (see halo.h).
 *
 * A part's matrix may be a view into its rank's block: its rowptr need not
 * start at 0, and entries of row i are col[rowptr[i] - rowptr[0] ...], with
 * col and val pointing at the part's first entry. Everything here indexes
 * that way, so rank 0 can plan its parts inside the matrix it parsed
 * without copying it.
 */
#include "halo.h"

#include "../../common/parallel.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define HALO_TAG_BASE 100

#define HALO_MPI(err, call, what)                                                                  \
    do {                                                                                           \
        int halo_mpi_rc_ = (call);                                                                 \
        if (halo_mpi_rc_ != MPI_SUCCESS) {                                                         \
            char halo_s_[MPI_MAX_ERROR_STRING];                                                    \
            int halo_len_ = 0;                                                                     \
            MPI_Error_string(halo_mpi_rc_, halo_s_, &halo_len_);                                   \
            return cls_fail((err), CLS_EOTHER, "%s failed: %s", (what), halo_s_);                  \
        }                                                                                          \
    } while (0)

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void halo_plan_free(halo_plan *h)
{
    if (!h)
        return;
    free(h->ghost_global);
    free(h->recv);
    free(h->send);
    free(h->send_idx);
    free(h->interior);
    free(h->boundary);
    memset(h, 0, sizeof *h);
}

/* position of g in the sorted ghost list (present by construction) */
static int64_t ghost_index(const int64_t *g, int64_t n, int64_t key)
{
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (g[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The row-range passes of halo_plan_local. Ranges are fixed by n and the
 * thread count, and each writes only its own slots and rows, so the plan is
 * the one a single pass makes. */
#define HALO_ROW_GRAIN 65536

typedef struct halo_scan {
    const csr_matrix *A;
    int64_t b, e, nrows, base;
    int64_t *g;   /* the off-part columns, at off[range] */
    int64_t *cnt; /* per range: off-part entries (pass 1), boundary rows (pass 3) */
    int64_t *bad; /* per range: the first entry outside the columns, or -1 */
    int64_t *off; /* per range: where its entries (rows) go */
} halo_scan;

static void scan_count(void *arg, int range, int64_t r0, int64_t r1)
{
    halo_scan *c = arg;
    const csr_matrix *A = c->A;
    int64_t cnt = 0, bad = -1;
    for (int64_t k = A->rowptr[r0] - c->base; k < A->rowptr[r1] - c->base; k++) {
        int64_t j = A->col[k];
        if (j < 0 || j >= c->nrows) {
            bad = k;
            break;
        }
        cnt += j < c->b || j >= c->e;
    }
    c->cnt[range] = cnt;
    c->bad[range] = bad;
}

static void scan_gather(void *arg, int range, int64_t r0, int64_t r1)
{
    const halo_scan *c = arg;
    const csr_matrix *A = c->A;
    int64_t *g = c->g + c->off[range];
    for (int64_t k = A->rowptr[r0] - c->base; k < A->rowptr[r1] - c->base; k++) {
        int64_t j = A->col[k];
        if (j < c->b || j >= c->e)
            *g++ = j;
    }
}

typedef struct halo_renum {
    csr_matrix *A;
    int64_t b, e, n, base;
    const int64_t *g;
    int64_t ng;
    int64_t *cnt, *off;
    int32_t *interior, *boundary;
} halo_renum;

static void renum_rows(void *arg, int range, int64_t r0, int64_t r1)
{
    const halo_renum *c = arg;
    csr_matrix *A = c->A;
    int64_t nb = 0;
    for (int64_t i = r0; i < r1; i++) {
        int ghost = 0;
        for (int64_t k = A->rowptr[i] - c->base; k < A->rowptr[i + 1] - c->base; k++) {
            int64_t j = A->col[k];
            if (j >= c->b && j < c->e)
                A->col[k] = (int32_t)(j - c->b);
            else {
                A->col[k] = (int32_t)(c->n + ghost_index(c->g, c->ng, j));
                ghost = 1;
            }
        }
        nb += ghost;
    }
    c->cnt[range] = nb;
}

static void split_rows(void *arg, int range, int64_t r0, int64_t r1)
{
    const halo_renum *c = arg;
    const csr_matrix *A = c->A;
    int64_t nb = c->off[range], ni = r0 - nb; /* the rows before r0 not boundary */
    for (int64_t i = r0; i < r1; i++) {
        int ghost = 0;
        for (int64_t k = A->rowptr[i] - c->base; k < A->rowptr[i + 1] - c->base && !ghost; k++)
            ghost = A->col[k] >= c->n;
        if (ghost)
            c->boundary[nb++] = (int32_t)i;
        else
            c->interior[ni++] = (int32_t)i;
    }
}

/* the sole part's interior list, 0 .. n-1 (67 MB at poisson3d 256: a
 * serial fill was 20-30 ms of the set-up) */
static void fill_identity(void *arg, int range, int64_t r0, int64_t r1)
{
    (void)range;
    int32_t *rows = arg;
    for (int64_t i = r0; i < r1; i++)
        rows[i] = (int32_t)i;
}

int halo_plan_local(halo_plan *h, csr_matrix *A, const part_layout *L, int part, cls_error *err)
{
    memset(h, 0, sizeof *h);
    if (part < 0 || part >= L->nparts)
        return cls_fail(err, CLS_EOTHER, "halo: part %d of %d", part, L->nparts);
    const int64_t b = L->begin[part], e = L->begin[part + 1];
    const int64_t n = e - b, base = A->rowptr[0];
    if (A->nrows != n)
        return cls_fail(err, CLS_EOTHER, "halo: part %d has %lld rows, its matrix %lld", part,
                        (long long)n, (long long)A->nrows);
    h->part = part;
    h->row_begin = b;
    h->nlocal = n;

    if (b == 0 && e == L->nrows) {
        /* the only part: every column is local and keeps its number, every
         * row is interior, nothing to scan (the reader checked the column
         * range; 0.8 s of passes over 117 M entries saved at poisson3d 256) */
        h->ghost_global = malloc(sizeof *h->ghost_global);
        h->recv = calloc(1, sizeof *h->recv);
        h->interior = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
        h->boundary = malloc(sizeof(int32_t));
        if (!h->ghost_global || !h->recv || !h->interior || !h->boundary) {
            halo_plan_free(h);
            return cls_fail(err, CLS_EOTHER, "out of memory for the row lists of part %d", part);
        }
        if (n > INT32_MAX) {
            halo_plan_free(h);
            return cls_fail(err, CLS_EOTHER,
                            "part %d has %lld rows, beyond 32-bit local indices; use more parts",
                            part, (long long)n);
        }
        cls_parallel_for(n, HALO_ROW_GRAIN, fill_identity, h->interior);
        h->ninterior = n;
        A->ncols = n;
        return CLS_OK;
    }

    /* 1. the off-part columns, sorted and unique: counted, then gathered,
     * row ranges on every core (a pass over 3.5e9 entries took seconds on
     * one: the halo plans were 22.7 s of 10^9 rows' set-up on 2 ranks) */
    const int nt = cls_parallel_ranges(n, HALO_ROW_GRAIN);
    halo_scan sc = {A,
                    b,
                    e,
                    L->nrows,
                    base,
                    NULL,
                    calloc((size_t)nt, sizeof(int64_t)),
                    calloc((size_t)nt, sizeof(int64_t)),
                    calloc((size_t)nt, sizeof(int64_t))};
    int rc = CLS_OK;
    if (!sc.cnt || !sc.bad || !sc.off) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the ghost list of part %d", part);
        goto out;
    }
    cls_parallel_for(n, HALO_ROW_GRAIN, scan_count, &sc);
    int64_t noff = 0, bad = -1;
    for (int t = 0; t < nt; t++) {
        sc.off[t] = noff;
        noff += sc.cnt[t];
        if (bad < 0 && sc.bad[t] >= 0)
            bad = sc.bad[t]; /* the first in the file's order, as one pass found it */
    }
    if (bad >= 0) {
        rc = cls_fail(err, CLS_EINPUT, "halo: column %lld outside the %lld columns",
                      (long long)A->col[bad] + 1, (long long)L->nrows);
        goto out;
    }
    int64_t *g = malloc((size_t)(noff ? noff : 1) * sizeof *g);
    if (!g) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the ghost list of part %d", part);
        goto out;
    }
    sc.g = g;
    cls_parallel_for(n, HALO_ROW_GRAIN, scan_gather, &sc);
    qsort(g, (size_t)noff, sizeof *g, cmp_i64);
    int64_t ng = 0;
    for (int64_t k = 0; k < noff; k++)
        if (ng == 0 || g[ng - 1] != g[k])
            g[ng++] = g[k];
    h->ghost_global = g;
    h->nghost = ng;
    if (n + ng > INT32_MAX) {
        rc = cls_fail(err, CLS_EOTHER,
                      "part %d has %lld rows and %lld ghosts, beyond 32-bit local indices; "
                      "use more parts",
                      part, (long long)n, (long long)ng);
        goto out;
    }

    /* 2. receive runs: ghosts sorted by index are sorted by owner */
    int nrun = 0, last = -1;
    for (int64_t k = 0; k < ng; k++) {
        int o = part_owner(L, g[k]);
        if (o != last) {
            nrun++;
            last = o;
        }
    }
    h->recv = calloc((size_t)(nrun ? nrun : 1), sizeof *h->recv);
    if (!h->recv) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the halo plan of part %d", part);
        goto out;
    }
    last = -1;
    for (int64_t k = 0; k < ng; k++) {
        int o = part_owner(L, g[k]);
        if (o != last) {
            h->recv[h->nrecv] = (halo_peer){.part = o, .rank = L->rank[o], .offset = k};
            h->nrecv++;
            last = o;
        }
        h->recv[h->nrecv - 1].count++;
    }

    /* 3. renumber in place, and sort rows into interior and boundary, row
     * ranges on every core: each range counts its boundary rows, and the
     * lists are filled at the ranges' offsets, in row order as one pass */
    halo_renum rn = {A, b, e, n, base, g, ng, sc.cnt, sc.off, NULL, NULL};
    cls_parallel_for(n, HALO_ROW_GRAIN, renum_rows, &rn); /* sc.cnt[t]: boundary rows */
    int64_t nb = 0;
    for (int t = 0; t < nt; t++) {
        sc.off[t] = nb;
        nb += sc.cnt[t];
    }
    A->ncols = n + ng;
    h->nboundary = nb;
    h->ninterior = n - nb;
    h->interior = malloc((size_t)(h->ninterior ? h->ninterior : 1) * sizeof(int32_t));
    h->boundary = malloc((size_t)(nb ? nb : 1) * sizeof(int32_t));
    if (!h->interior || !h->boundary) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the row lists of part %d", part);
        goto out;
    }
    rn.interior = h->interior;
    rn.boundary = h->boundary;
    cls_parallel_for(n, HALO_ROW_GRAIN, split_rows, &rn);
out:
    free(sc.cnt);
    free(sc.bad);
    free(sc.off);
    if (rc)
        halo_plan_free(h); /* what the plan holds so far (nothing before the ghosts) */
    return rc;
}

static int tag_of(const part_layout *L, int dst, int src, int setup)
{
    return HALO_TAG_BASE + (setup ? L->nparts * L->nparts : 0) + dst * L->nparts + src;
}

static int check_tags(MPI_Comm comm, const part_layout *L, cls_error *err)
{
    int *ub = NULL, flag = 0;
    HALO_MPI(err, MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &flag), "MPI_Comm_get_attr(TAG_UB)");
    long need = HALO_TAG_BASE + 2L * L->nparts * L->nparts;
    if (flag && ub && need > *ub)
        return cls_fail(err, CLS_EOTHER,
                        "%d parts need message tags up to %ld but this MPI allows %d", L->nparts,
                        need, *ub);
    return CLS_OK;
}

int halo_plan_exchange(MPI_Comm comm, const part_layout *L, halo_plan *plans, int nmine,
                       cls_error *err)
{
    int me;
    HALO_MPI(err, MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
    const int P = L->nparts;
    int rc = check_tags(comm, L, err);
    if (rc)
        return rc;
    size_t pp = (size_t)(P ? P : 1) * (size_t)(P ? P : 1);
    int64_t *need = calloc(pp, sizeof *need);
    if (!need)
        return cls_fail(err, CLS_EOTHER, "out of memory for the halo counts");
    /* need[p * P + q]: ghosts part p takes from part q */
    for (int s = 0; s < nmine; s++)
        for (int i = 0; i < plans[s].nrecv; i++)
            need[(size_t)plans[s].part * (size_t)P + (size_t)plans[s].recv[i].part] =
                plans[s].recv[i].count;
    int mrc = MPI_Allreduce(MPI_IN_PLACE, need, (int)pp, MPI_INT64_T, MPI_SUM, comm);
    if (mrc != MPI_SUCCESS) {
        free(need);
        HALO_MPI(err, mrc, "MPI_Allreduce(halo counts)");
    }

    /* send lists: for each of my parts q, the parts p that need from it */
    int nrecvmsg = 0, nsendmsg = 0;
    for (int s = 0; s < nmine && !rc; s++) {
        halo_plan *h = &plans[s];
        const int q = h->part;
        int np = 0;
        int64_t tot = 0;
        for (int p = 0; p < P; p++)
            if (need[(size_t)p * P + q] > 0) {
                np++;
                tot += need[(size_t)p * P + q];
            }
        h->send = calloc((size_t)(np ? np : 1), sizeof *h->send);
        h->send_idx = malloc((size_t)(tot ? tot : 1) * sizeof *h->send_idx);
        if (!h->send || !h->send_idx) {
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the send list of part %d", q);
            break;
        }
        int64_t off = 0;
        for (int p = 0; p < P; p++) {
            int64_t c = need[(size_t)p * P + q];
            if (c <= 0)
                continue;
            if (c > INT_MAX / (int64_t)sizeof(int64_t)) {
                rc = cls_fail(err, CLS_EOTHER,
                              "halo of %lld entries between parts %d and %d "
                              "exceeds one MPI message; use more parts",
                              (long long)c, p, q);
                break;
            }
            h->send[h->nsend++] =
                (halo_peer){.part = p, .rank = L->rank[p], .offset = off, .count = c};
            off += c;
            if (L->rank[p] != me)
                nrecvmsg++;
        }
        h->nsend_total = tot;
        for (int i = 0; i < h->nrecv; i++)
            if (h->recv[i].rank != me)
                nsendmsg++;
    }
    /* every rank takes part in the messages below only if all got here;
     * a local failure so far is out of memory, which the caller agrees on
     * before going on, so stop here */
    if (rc) {
        free(need);
        return rc;
    }

    /* the index lists: global indices, from the needing part to the owner */
    int64_t **tmp = calloc((size_t)(nmine ? nmine : 1), sizeof *tmp);
    MPI_Request *req = malloc((size_t)(nrecvmsg + nsendmsg + 1) * sizeof *req);
    int nreq = 0;
    if (!tmp || !req)
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the halo set-up");
    for (int s = 0; s < nmine && !rc; s++) {
        halo_plan *h = &plans[s];
        tmp[s] = malloc((size_t)(h->nsend_total ? h->nsend_total : 1) * sizeof(int64_t));
        if (!tmp[s]) {
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the halo set-up");
            break;
        }
        for (int i = 0; i < h->nsend; i++) {
            halo_peer *pe = &h->send[i];
            if (pe->rank == me) { /* a part of this rank: copy its ghost run */
                const halo_plan *hp = &plans[L->slot[pe->part]];
                for (int k = 0; k < hp->nrecv; k++)
                    if (hp->recv[k].part == h->part)
                        memcpy(tmp[s] + pe->offset, hp->ghost_global + hp->recv[k].offset,
                               (size_t)pe->count * sizeof(int64_t));
            } else {
                int m = MPI_Irecv(tmp[s] + pe->offset, (int)pe->count, MPI_INT64_T, pe->rank,
                                  tag_of(L, h->part, pe->part, 1), comm, &req[nreq]);
                if (m != MPI_SUCCESS) {
                    rc = cls_fail(err, CLS_EOTHER, "MPI_Irecv(halo set-up) failed");
                    break;
                }
                nreq++;
            }
        }
    }
    for (int s = 0; s < nmine && !rc; s++) {
        halo_plan *h = &plans[s];
        for (int i = 0; i < h->nrecv && !rc; i++) {
            halo_peer *pe = &h->recv[i];
            if (pe->rank == me)
                continue;
            int m = MPI_Isend(h->ghost_global + pe->offset, (int)pe->count, MPI_INT64_T, pe->rank,
                              tag_of(L, pe->part, h->part, 1), comm, &req[nreq]);
            if (m != MPI_SUCCESS)
                rc = cls_fail(err, CLS_EOTHER, "MPI_Isend(halo set-up) failed");
            else
                nreq++;
        }
    }
    if (nreq > 0) {
        int m = MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        if (m != MPI_SUCCESS && !rc)
            rc = cls_fail(err, CLS_EOTHER, "MPI_Waitall(halo set-up) failed");
    }
    for (int s = 0; s < nmine && !rc; s++) {
        halo_plan *h = &plans[s];
        for (int64_t k = 0; k < h->nsend_total; k++) {
            int64_t loc = tmp[s][k] - h->row_begin;
            if (loc < 0 || loc >= h->nlocal) {
                rc = cls_fail(err, CLS_EOTHER,
                              "halo set-up: part %d was asked for row %lld, which it does "
                              "not own",
                              h->part, (long long)tmp[s][k]);
                break;
            }
            h->send_idx[k] = (int32_t)loc;
        }
    }
    for (int s = 0; tmp && s < nmine; s++)
        free(tmp[s]);
    free(tmp);
    free(req);
    free(need);
    return rc;
}

/* ------------------------------------------------------------- exchange */

void halo_comm_free(halo_comm *hc)
{
    if (!hc)
        return;
    if (hc->owned) {
        for (int s = 0; s < hc->nmine; s++) {
            free(hc->sendbuf ? hc->sendbuf[s] : NULL);
            free(hc->recvbuf ? hc->recvbuf[s] : NULL);
        }
    }
    free(hc->sendbuf);
    free(hc->recvbuf);
    free(hc->reqs);
    memset(hc, 0, sizeof *hc);
}

int halo_comm_init(halo_comm *hc, MPI_Comm comm, const part_layout *L, halo_plan *plans, int nmine,
                   size_t elem, void **sendbuf, void **recvbuf, cls_error *err)
{
    memset(hc, 0, sizeof *hc);
    hc->comm = comm;
    hc->L = L;
    hc->plans = plans;
    hc->nmine = nmine;
    hc->elem = elem;
    hc->owned = sendbuf == NULL;
    size_t ns = (size_t)(nmine ? nmine : 1);
    hc->sendbuf = calloc(ns, sizeof *hc->sendbuf);
    hc->recvbuf = calloc(ns, sizeof *hc->recvbuf);
    int cap = 0;
    for (int s = 0; s < nmine; s++)
        cap += plans[s].nsend + plans[s].nrecv;
    hc->reqs = malloc((size_t)(cap ? cap : 1) * sizeof *hc->reqs);
    hc->cap = cap;
    if (!hc->sendbuf || !hc->recvbuf || !hc->reqs) {
        halo_comm_free(hc);
        return cls_fail(err, CLS_EOTHER, "out of memory for the halo exchange");
    }
    for (int s = 0; s < nmine; s++) {
        const halo_plan *h = &plans[s];
        for (int i = 0; i < h->nrecv; i++)
            if ((double)h->recv[i].count * (double)elem > (double)INT_MAX) {
                halo_comm_free(hc);
                return cls_fail(err, CLS_EOTHER,
                                "halo of %lld entries exceeds one MPI message; use more parts",
                                (long long)h->recv[i].count);
            }
        if (sendbuf) {
            hc->sendbuf[s] = sendbuf[s];
            hc->recvbuf[s] = recvbuf[s];
        } else {
            hc->sendbuf[s] = malloc((size_t)(h->nsend_total ? h->nsend_total : 1) * elem);
            hc->recvbuf[s] = malloc((size_t)(h->nghost ? h->nghost : 1) * elem);
            if (!hc->sendbuf[s] || !hc->recvbuf[s]) {
                halo_comm_free(hc);
                return cls_fail(err, CLS_EOTHER, "out of memory for the halo buffers");
            }
        }
    }
    return CLS_OK;
}

static int my_rank(MPI_Comm comm)
{
    int r = 0;
    MPI_Comm_rank(comm, &r);
    return r;
}

int halo_comm_post_recvs(halo_comm *hc, cls_error *err)
{
    const int me = my_rank(hc->comm);
    for (int s = 0; s < hc->nmine; s++) {
        const halo_plan *h = &hc->plans[s];
        for (int i = 0; i < h->nrecv; i++) {
            const halo_peer *pe = &h->recv[i];
            if (pe->rank == me)
                continue;
            HALO_MPI(err,
                     MPI_Irecv((char *)hc->recvbuf[s] + (size_t)pe->offset * hc->elem,
                               (int)((size_t)pe->count * hc->elem), MPI_BYTE, pe->rank,
                               tag_of(hc->L, h->part, pe->part, 0), hc->comm, &hc->reqs[hc->nreq]),
                     "MPI_Irecv(halo)");
            hc->nreq++;
        }
    }
    return CLS_OK;
}

int halo_comm_send(halo_comm *hc, int slot, cls_error *err)
{
    const int me = my_rank(hc->comm);
    const halo_plan *h = &hc->plans[slot];
    for (int i = 0; i < h->nsend; i++) {
        const halo_peer *pe = &h->send[i];
        if (pe->rank == me)
            continue;
        HALO_MPI(err,
                 MPI_Isend((char *)hc->sendbuf[slot] + (size_t)pe->offset * hc->elem,
                           (int)((size_t)pe->count * hc->elem), MPI_BYTE, pe->rank,
                           tag_of(hc->L, pe->part, h->part, 0), hc->comm, &hc->reqs[hc->nreq]),
                 "MPI_Isend(halo)");
        hc->nreq++;
    }
    return CLS_OK;
}

int halo_comm_local(halo_comm *hc, cls_error *err)
{
    const int me = my_rank(hc->comm);
    for (int s = 0; s < hc->nmine; s++) {
        const halo_plan *h = &hc->plans[s];
        for (int i = 0; i < h->nrecv; i++) {
            const halo_peer *pe = &h->recv[i];
            if (pe->rank != me)
                continue;
            int qs = hc->L->slot[pe->part];
            const halo_plan *hq = &hc->plans[qs];
            int k = 0;
            while (k < hq->nsend && hq->send[k].part != h->part)
                k++;
            if (k == hq->nsend || hq->send[k].count != pe->count)
                return cls_fail(err, CLS_EOTHER, "halo: parts %d and %d disagree on their halo",
                                h->part, pe->part);
            memcpy((char *)hc->recvbuf[s] + (size_t)pe->offset * hc->elem,
                   (char *)hc->sendbuf[qs] + (size_t)hq->send[k].offset * hc->elem,
                   (size_t)pe->count * hc->elem);
        }
    }
    return CLS_OK;
}

int halo_comm_wait(halo_comm *hc, cls_error *err)
{
    int n = hc->nreq;
    hc->nreq = 0;
    if (n > 0)
        HALO_MPI(err, MPI_Waitall(n, hc->reqs, MPI_STATUSES_IGNORE), "MPI_Waitall(halo)");
    return CLS_OK;
}

int halo_exchange_host(halo_comm *hc, double *const *x, cls_error *err)
{
    if (hc->elem != sizeof(double))
        return cls_fail(err, CLS_EOTHER, "halo_exchange_host needs double entries");
    int rc = halo_comm_post_recvs(hc, err);
    for (int s = 0; s < hc->nmine && !rc; s++) {
        const halo_plan *h = &hc->plans[s];
        double *sb = hc->sendbuf[s];
        for (int64_t k = 0; k < h->nsend_total; k++)
            sb[k] = x[s][h->send_idx[k]];
        rc = halo_comm_send(hc, s, err);
    }
    if (!rc)
        rc = halo_comm_local(hc, err);
    int wrc = halo_comm_wait(hc, rc ? NULL : err);
    if (rc || wrc)
        return rc ? rc : wrc;
    for (int s = 0; s < hc->nmine; s++)
        memcpy(x[s] + hc->plans[s].nlocal, hc->recvbuf[s],
               (size_t)hc->plans[s].nghost * sizeof(double));
    return CLS_OK;
}

void halo_spmv_host(const csr_matrix *A, const double *x, double *y)
{
    const int64_t base = A->nrows ? A->rowptr[0] : 0;
    for (int64_t i = 0; i < A->nrows; i++) {
        double s = 0.0;
        for (int64_t k = A->rowptr[i] - base; k < A->rowptr[i + 1] - base; k++)
            s += A->val[k] * x[A->col[k]];
        y[i] = s;
    }
}
