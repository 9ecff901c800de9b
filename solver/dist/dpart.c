/*
 * dpart.c: a rank's parts before the iteration starts: which devices they
 * run on (dsys_pick_devices: a --device spec and the node-local rank) and
 * how a part's rows go to its device (dpart_upload): renumbered interior
 * rows first, so that the interior and the boundary rows are two blocks in
 * la's tuned format (the fused engine: views of the part, la_csr_view, so
 * that no renumbered copy of a part is ever held beside it), or as split
 * CSR (the twin the halo test checks); one format for every part, so that
 * a row sums the same in any partition. dsys_open (dvec.c) calls them.
 */
#include "dvec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../common/parallel.h"
#include "../../common/trace.h"

/* ---------------------------------------------------------------- devices */

static int parse_list(const char *spec, int **out, int *n)
{
    *out = NULL;
    *n = 0;
    int cap = 1;
    for (const char *c = spec; *c; c++)
        cap += *c == ',';
    int *v = malloc((size_t)cap * sizeof *v);
    if (!v)
        return -1;
    const char *p = spec;
    while (*p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < 0 || x > INT_MAX || (*end && *end != ',')) {
            free(v);
            return -1;
        }
        v[(*n)++] = (int)x;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) {
        free(v);
        return -1;
    }
    *out = v;
    return 0;
}

int dsys_node_rank(MPI_Comm comm, int *lr, cls_error *err)
{
    MPI_Comm node;
    *lr = 0;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Comm_split_type(shared) failed");
    int mrc = MPI_Comm_rank(node, lr);
    MPI_Comm_free(&node);
    if (mrc != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Comm_rank(node) failed");
    return CLS_OK;
}

int dsys_pick_devices(MPI_Comm comm, const char *spec, int devices_per_rank, int nmine,
                      ocl_device *out, cls_error *err)
{
    /* the node-local rank, so ranks sharing a host take different devices */
    int lr = 0;
    int rc = dsys_node_rank(comm, &lr, err);
    if (rc || nmine == 0)
        return rc; /* a rank without parts needs no device */
    return dsys_pick_local(spec, lr, devices_per_rank, nmine, out, err);
}

int dsys_pick_local(const char *spec, int lr, int devices_per_rank, int nmine, ocl_device *out,
                    cls_error *err)
{
    if (!spec || !*spec)
        spec = "auto";

    ocl_device *devs = NULL;
    int n = 0;
    int rc = ocl_list_devices(&devs, &n, err);
    if (rc)
        return rc;
    int *cand = malloc((size_t)(n ? n : 1) * sizeof *cand);
    int nc = 0;
    if (!cand) {
        free(devs);
        return cls_fail(err, CLS_EOTHER, "out of memory choosing devices");
    }
    cl_device_type want = 0;
    if (!strcasecmp(spec, "auto"))
        want = n ? devs[0].type : CL_DEVICE_TYPE_GPU;
    else if (!strcasecmp(spec, "gpu"))
        want = CL_DEVICE_TYPE_GPU;
    else if (!strcasecmp(spec, "cpu"))
        want = CL_DEVICE_TYPE_CPU;
    else if (!strcasecmp(spec, "accelerator"))
        want = CL_DEVICE_TYPE_ACCELERATOR;
    if (want) {
        for (int i = 0; i < n; i++)
            if (devs[i].type & want)
                cand[nc++] = i;
        if (nc == 0) {
            free(cand);
            ocl_fail_no_type(err, want, devs, n); /* ocl_pick_device's words */
            free(devs);
            return CLS_EOTHER;
        }
    } else {
        int *list, nl;
        if (parse_list(spec, &list, &nl)) {
            free(cand);
            free(devs);
            return cls_fail(err, CLS_EUSAGE,
                            "bad device '%s': expected auto, gpu, cpu, accelerator, an index "
                            "or a list of indices such as 0,1 (see `clsolve devices`)",
                            spec);
        }
        for (int i = 0; i < nl; i++) {
            if (list[i] >= n) {
                int bad = list[i];
                free(list);
                free(cand);
                free(devs);
                return cls_fail(err, CLS_EUSAGE,
                                "device index %d out of range: this host has %d device(s)", bad, n);
            }
        }
        free(cand);
        cand = list;
        nc = nl;
    }
    for (int s = 0; s < nmine; s++)
        out[s] = devs[cand[((int64_t)lr * devices_per_rank + s) % nc]];
    free(cand);
    free(devs);
    return CLS_OK;
}

/* dpart_rows' passes over row ranges: ranges are fixed by n and the thread
 * count and write only their own rows, so B is the one a single pass
 * builds (serial, the device order took 39-44 s of 10^9 rows' set-up on 2
 * ranks) */
#define ORDER_GRAIN 65536

typedef struct reorder_ctx {
    const csr_matrix *A;
    csr_matrix *B;
    const int32_t *perm;  /* row of B -> row of A, NULL: the same */
    const int32_t *iperm; /* local column renumbering, NULL: none */
    int64_t n, base;
    int local_only, sorted;
    int64_t *sum; /* per range: its entries, then where they start */
} reorder_ctx;

static void order_lengths(void *arg, int range, int64_t a, int64_t e)
{
    const reorder_ctx *c = arg;
    const csr_matrix *A = c->A;
    int64_t s = 0;
    for (int64_t i = a; i < e; i++) {
        const int64_t r = c->perm ? c->perm[i] : i;
        if (!c->local_only) {
            s += A->rowptr[r + 1] - A->rowptr[r];
            continue;
        }
        for (int64_t k = A->rowptr[r] - c->base; k < A->rowptr[r + 1] - c->base; k++)
            s += A->col[k] < c->n;
    }
    c->sum[range] = s;
}

static void order_rows(void *arg, int range, int64_t a, int64_t e)
{
    const reorder_ctx *c = arg;
    const csr_matrix *A = c->A;
    csr_matrix *B = c->B;
    int64_t j = c->sum[range];
    for (int64_t i = a; i < e; i++) {
        const int64_t r = c->perm ? c->perm[i] : i, j0 = j;
        for (int64_t k = A->rowptr[r] - c->base; k < A->rowptr[r + 1] - c->base; k++) {
            const int32_t col = A->col[k];
            if (c->local_only && col >= c->n)
                continue;
            B->col[j] = (c->iperm && col < c->n) ? c->iperm[col] : col;
            B->val[j++] = A->val[k];
        }
        if (c->sorted)
            csr_sort_row_by_col(B->col + j0, B->val + j0, j - j0);
        B->rowptr[i + 1] = j;
    }
}

int dpart_rows(const csr_matrix *A, int64_t n, const int32_t *perm, const int32_t *iperm,
               int local_only, int sorted, csr_matrix *B, cls_error *err)
{
    csr_init(B);
    const int nt = cls_parallel_ranges(n, ORDER_GRAIN);
    int64_t *sum = calloc((size_t)nt, sizeof *sum);
    if (!sum)
        return cls_fail(err, CLS_EOTHER, "out of memory renumbering a part");
    reorder_ctx c = {A, B, perm, iperm, n, n ? A->rowptr[0] : 0, local_only, sorted, sum};
    cls_parallel_for(n, ORDER_GRAIN, order_lengths, &c);
    int64_t run = 0; /* the ranges' first entries: a prefix sum over ranges */
    for (int t = 0; t < nt; t++) {
        const int64_t x = sum[t];
        sum[t] = run;
        run += x;
    }
    int rc = csr_alloc(B, n, A->ncols, run, err);
    if (!rc) {
        B->rowptr[0] = 0;
        cls_parallel_for(n, ORDER_GRAIN, order_rows, &c);
    }
    free(sum);
    return rc;
}

static void iperm_range(void *arg, int range, int64_t a, int64_t e)
{
    (void)range;
    const int32_t *perm = ((const int32_t *const *)arg)[0];
    int32_t *iperm = ((int32_t *const *)arg)[1];
    for (int64_t i = a; i < e; i++)
        iperm[perm[i]] = (int32_t)i;
}

int dpart_iperm(const int32_t *perm, int64_t n, int32_t **iperm, cls_error *err)
{
    *iperm = malloc((size_t)(n ? n : 1) * sizeof **iperm);
    if (!*iperm)
        return cls_fail(err, CLS_EOTHER, "out of memory renumbering a part");
    const void *arg[2] = {perm, *iperm};
    cls_parallel_for(n, ORDER_GRAIN, iperm_range, (void *)arg);
    return CLS_OK;
}

/* The device numbering of a part: interior rows first. Fills p->ni and
 * p->perm (NULL when the interior comes first already, e.g. no ghosts),
 * *iperm with its inverse (the local columns' renumbering; NULL when
 * p->perm is), *send with the halo's send list in device numbering and, when
 * B is given, *B with the part's rows in that order (columns of local rows
 * renumbered likewise, ghosts unchanged, each row's entries in their
 * stored order, so a row sums the same in any partition). The fused
 * engine reads that order through a view of the part (la_csr_view) and
 * asks for no copy. */
static int part_device_order(dpart *p, csr_matrix *B, int32_t **iperm_out, int32_t **send,
                             cls_error *err)
{
    /* B stays empty (B->rowptr NULL) when A can be uploaded as it is: no
     * renumbering, no ghosts and row pointers from 0 (the one-part case:
     * no copy of a matrix of gigabytes) */
    const halo_plan *h = &p->halo;
    const csr_matrix *A = &p->A;
    const int64_t n = h->nlocal, base = A->rowptr[0];
    int32_t *iperm = NULL;
    if (B)
        memset(B, 0, sizeof *B);
    *send = NULL;
    *iperm_out = NULL;
    p->ni = h->ninterior;
    /* interior rows are listed in row order (halo_plan_local), so with no
     * boundary row they are 0 .. n-1: no pass over them (the sole part) */
    int identity = 1;
    for (int64_t i = 0; i < h->ninterior && identity && h->nboundary > 0; i++)
        identity = h->interior[i] == (int32_t)i;
    int rc = CLS_OK;
    if (!identity) {
        p->perm = malloc((size_t)(n ? n : 1) * sizeof *p->perm);
        if (!p->perm)
            return cls_fail(err, CLS_EOTHER, "out of memory renumbering a part");
        memcpy(p->perm, h->interior, (size_t)h->ninterior * sizeof *p->perm);
        memcpy(p->perm + h->ninterior, h->boundary, (size_t)h->nboundary * sizeof *p->perm);
        if ((rc = dpart_iperm(p->perm, n, &iperm, err)))
            return rc;
    }
    *send = malloc((size_t)(h->nsend_total ? h->nsend_total : 1) * sizeof **send);
    if (!*send)
        rc = cls_fail(err, CLS_EOTHER, "out of memory renumbering a part");
    const int as_is = !iperm && h->nghost == 0 && base == 0;
    if (!rc && B && !as_is)
        rc = dpart_rows(A, n, iperm ? p->perm : NULL, iperm, 0, 0, B, err);
    for (int64_t e = 0; !rc && e < h->nsend_total; e++)
        (*send)[e] = iperm ? iperm[h->send_idx[e]] : h->send_idx[e];
    if (rc) {
        free(iperm);
        free(*send);
        *send = NULL;
        if (B)
            csr_free(B);
        return rc;
    }
    *iperm_out = iperm;
    return CLS_OK;
}

/* The one SpMV format of every part (dsys_open's comment). */
static la_spmv_variant parts_format(la_spmv_variant asked, const ocl_device *dev, double mean_row)
{
    if (asked != LA_SPMV_AUTO)
        return asked;
    if (mean_row >= 12.0)
        return LA_SPMV_VECTOR;
    return (dev->type & CL_DEVICE_TYPE_GPU) ? LA_SPMV_SELL : LA_SPMV_SCALAR;
}

/* Uploads part p's matrix in device numbering, as la blocks (fused) or as
 * split CSR, and its send list. */
int dpart_upload(dpart *p, int fused, la_spmv_variant spmv, double mean_row, cls_error *err)
{
    csr_matrix B;
    int32_t *send = NULL, *iperm = NULL;
    memset(&B, 0, sizeof B);
    int rc = part_device_order(p, fused ? NULL : &B, &iperm, &send, err);
    cls_trace("part_upload: device order");
    if (rc)
        return rc;
    const halo_plan *h = &p->halo;
    if (fused) {
        /* the interior block, then the boundary's: rows of the part in
         * device order, read through p->perm and iperm (no copy) */
        la_spmv_variant v = parts_format(spmv, &p->dev, mean_row);
        const int64_t ni = h->nghost == 0 ? h->nlocal : p->ni;
        la_csr_view in = {.A = &p->A,
                          .rows = p->perm,
                          .first = 0,
                          .nrows = ni,
                          .cmap = iperm,
                          .nmap = iperm ? h->nlocal : 0};
        rc = la_csr_upload_view(&p->la, &in, v, &p->Ai, err);
        p->have_Ai = !rc;
        p->ni = ni;
        if (!rc && h->nghost != 0) {
            la_csr_view bd = in;
            bd.rows = p->perm ? p->perm + ni : NULL;
            bd.first = p->perm ? 0 : ni;
            bd.nrows = h->nlocal - ni;
            rc = la_csr_upload_view(&p->la, &bd, v, &p->Ab, err);
            p->have_Ab = !rc;
            p->Ab.row_offset = ni;
        }
        /* CSR-vector sums a row over its lanes: the width must be the same
         * in every block of every partition (the whole matrix's mean row),
         * not what each block's own statistics or size class would give */
        la_csr *blk[2] = {p->have_Ai ? &p->Ai : NULL, p->have_Ab ? &p->Ab : NULL};
        for (int q = 0; q < 2 && !rc; q++)
            if (blk[q] && blk[q]->variant == LA_SPMV_VECTOR) {
                size_t w = la_auto_vector_width(mean_row);
                while (w > blk[q]->local_size || blk[q]->local_size % w)
                    w /= 2;
                blk[q]->vector_width = w < 2 ? 2 : w;
                blk[q]->cfg.vector_width = blk[q]->vector_width;
            }
    } else {
        int32_t *in = malloc((size_t)(h->nlocal ? h->nlocal : 1) * sizeof *in);
        if (!in)
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the row lists");
        for (int64_t i = 0; !rc && i < h->nlocal; i++)
            in[i] = (int32_t)i;
        if (!rc) {
            rc = ld_csr_upload(&p->ld, B.rowptr ? &B : &p->A, in, p->ni, in + p->ni,
                               h->nlocal - p->ni, spmv, mean_row, &p->dA, err);
            p->have_dA = !rc;
        }
        free(in);
    }
    if (!rc)
        rc = ld_index_upload(&p->ld, send, h->nsend_total, &p->d_send_idx, err);
    free(send);
    free(iperm);
    csr_free(&B);
    return rc;
}
