/*
 * dvec.c: distributed vectors and operations over this rank's parts (see
 * dvec.h for the error and reduction protocol).
 *
 * The SpMV with its halo, per call:
 *   1. wait for the previous call's ghost writes (they read the receive
 *      staging buffers the next receives will overwrite); post the receives
 *   2. per part: pack the send list on the device, start reading it back,
 *      start the interior rows, flush: the device is busy from here on
 *   3. per part: when its send buffer has landed, MPI_Isend it to the
 *      remote neighbours; then copy between parts of this rank (no MPI);
 *      wait for the messages
 *   4. per part: write the ghost tail of x, start the boundary rows
 * Everything a device does is enqueued on its in-order queue; the host
 * blocks only on the packed halos (step 3) and in the reductions.
 */
#include "../common/trace.h"
#include "dvec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/timer.h"

static int dsys_mpi_types(dsys *s, cls_error *err);

void dsys_fail(dsys *s, const cls_error *e)
{
    if (!s->failed) {
        s->failed = 1;
        if (e)
            s->ferr = *e;
        else
            cls_fail(&s->ferr, CLS_EOTHER, "a device operation failed");
        if (s->ferr.code == CLS_OK)
            s->ferr.code = CLS_EOTHER;
    }
}

/* runs a device call unless the rank has failed; records a failure */
#define DS_DO(s, call)                                                                 \
    do {                                                                               \
        if (!(s)->failed) {                                                            \
            cls_error ds_e_;                                                           \
            cls_error_clear(&ds_e_);                                                   \
            (void)ds_e_;                                                               \
            if ((call) != CLS_OK)                                                      \
                dsys_fail((s), &ds_e_);                                                \
        }                                                                              \
    } while (0)
#define DS_ERR (&ds_e_)

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

int dsys_pick_devices(MPI_Comm comm, const char *spec, int devices_per_rank, int nmine,
                      ocl_device *out, cls_error *err)
{
    if (!spec || !*spec)
        spec = "auto";
    /* the node-local rank, so ranks sharing a host take different devices */
    MPI_Comm node;
    int lr = 0;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Comm_split_type(shared) failed");
    int mrc = MPI_Comm_rank(node, &lr);
    MPI_Comm_free(&node);
    if (mrc != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Comm_rank(node) failed");
    if (nmine == 0)
        return CLS_OK; /* a rank without parts needs no device */

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
            /* worded as ocl_pick_device's, which the physics commands use */
            char list[700];
            ocl_describe_devices(devs, n, list, sizeof list);
            cls_fail(err, CLS_EOTHER, "no %s OpenCL device; available: %s",
                     ocl_type_name(want), list);
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
                                "device index %d out of range: this host has %d device(s)",
                                bad, n);
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

/* The device numbering of a part: interior rows first. Fills p->ni and
 * p->perm (NULL when the interior comes first already, e.g. no ghosts),
 * *B with the part's rows in that order (columns of local rows renumbered
 * likewise, ghosts unchanged, each row's entries in their stored order, so
 * a row sums the same in any partition), and *send with the halo's send
 * list in device numbering. */
static int part_device_order(dpart *p, csr_matrix *B, int32_t **send, cls_error *err)
{
    /* B stays empty (B->rowptr NULL) when A can be uploaded as it is: no
     * renumbering, no ghosts and row pointers from 0 (the one-part case:
     * no copy of a matrix of gigabytes) */
    const halo_plan *h = &p->halo;
    const csr_matrix *A = &p->A;
    const int64_t n = h->nlocal, base = A->rowptr[0];
    int32_t *iperm = NULL;
    memset(B, 0, sizeof *B);
    *send = NULL;
    p->ni = h->ninterior;
    int identity = 1;
    for (int64_t i = 0; i < h->ninterior && identity; i++)
        identity = h->interior[i] == (int32_t)i;
    if (!identity) {
        p->perm = malloc((size_t)(n ? n : 1) * sizeof *p->perm);
        iperm = malloc((size_t)(n ? n : 1) * sizeof *iperm);
        if (!p->perm || !iperm) {
            free(iperm);
            return cls_fail(err, CLS_EOTHER, "out of memory renumbering a part");
        }
        memcpy(p->perm, h->interior, (size_t)h->ninterior * sizeof *p->perm);
        memcpy(p->perm + h->ninterior, h->boundary, (size_t)h->nboundary * sizeof *p->perm);
        for (int64_t i = 0; i < n; i++)
            iperm[p->perm[i]] = (int32_t)i;
    }
    const int as_is = !iperm && h->nghost == 0 && base == 0;
    int rc = as_is ? CLS_OK : csr_alloc(B, n, A->ncols, A->nnz, err);
    if (!rc) {
        *send = malloc((size_t)(h->nsend_total ? h->nsend_total : 1) * sizeof **send);
        if (!*send)
            rc = cls_fail(err, CLS_EOTHER, "out of memory renumbering a part");
    }
    if (rc) {
        free(iperm);
        csr_free(B);
        return rc;
    }
    int64_t j = 0;
    if (!as_is)
        B->rowptr[0] = 0;
    for (int64_t i = 0; !as_is && i < n; i++) {
        int64_t r = iperm ? p->perm[i] : i;
        for (int64_t e = A->rowptr[r] - base; e < A->rowptr[r + 1] - base; e++, j++) {
            int32_t c = A->col[e];
            B->col[j] = (iperm && c < n) ? iperm[c] : c;
            B->val[j] = A->val[e];
        }
        B->rowptr[i + 1] = j;
    }
    for (int64_t e = 0; e < h->nsend_total; e++)
        (*send)[e] = iperm ? iperm[h->send_idx[e]] : h->send_idx[e];
    free(iperm);
    return CLS_OK;
}

/* Rows [r0, r1) of B as a matrix of their own (row pointers from 0). */
static int csr_rows(const csr_matrix *B, int64_t r0, int64_t r1, csr_matrix *C, cls_error *err)
{
    int64_t j0 = B->rowptr[r0], nz = B->rowptr[r1] - j0;
    int rc = csr_alloc(C, r1 - r0, B->ncols, nz, err);
    if (rc)
        return rc;
    for (int64_t i = r0; i <= r1; i++)
        C->rowptr[i - r0] = B->rowptr[i] - j0;
    memcpy(C->col, B->col + j0, (size_t)nz * sizeof *C->col);
    memcpy(C->val, B->val + j0, (size_t)nz * sizeof *C->val);
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
static int part_upload(dpart *p, int fused, la_spmv_variant spmv, double mean_row,
                       cls_error *err)
{
    csr_matrix B, C;
    int32_t *send = NULL;
    int rc = part_device_order(p, &B, &send, err);
    cls_trace("part_upload: device order");
    if (rc)
        return rc;
    const halo_plan *h = &p->halo;
    memset(&C, 0, sizeof C);
    if (fused) {
        la_spmv_variant v = parts_format(spmv, &p->dev, mean_row);
        if (h->nghost == 0) {
            rc = la_csr_upload(&p->la, B.rowptr ? &B : &p->A, v, &p->Ai, err);
            p->have_Ai = !rc;
            p->ni = h->nlocal;
        } else {
            if (!(rc = csr_rows(&B, 0, p->ni, &C, err))) {
                rc = la_csr_upload(&p->la, &C, v, &p->Ai, err);
                p->have_Ai = !rc;
                csr_free(&C);
            }
            if (!rc && !(rc = csr_rows(&B, p->ni, h->nlocal, &C, err))) {
                rc = la_csr_upload(&p->la, &C, v, &p->Ab, err);
                p->have_Ab = !rc;
                p->Ab.row_offset = p->ni;
                csr_free(&C);
            }
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
    csr_free(&B);
    return rc;
}

int dsys_open(dsys *s, MPI_Comm comm, const part_layout *L, dpart *parts, int nmine,
              const char *device, int devices_per_rank, la_precision prec,
              la_spmv_variant spmv, int fused, cls_error *err)
{
    memset(s, 0, sizeof *s);
    s->comm = comm;
    s->L = L;
    s->parts = parts;
    s->nmine = nmine;
    s->prec = prec;
    s->req = MPI_REQUEST_NULL;
    MPI_Comm_rank(comm, &s->rank);
    MPI_Comm_size(comm, &s->size);
    ocl_device *devs = calloc((size_t)(nmine ? nmine : 1), sizeof *devs);
    if (!devs)
        return cls_fail(err, CLS_EOTHER, "out of memory choosing devices");
    int rc = dsys_pick_devices(comm, device, devices_per_rank, nmine, devs, err);
    if (!rc)
        rc = dsys_mpi_types(s, err);
    /* the whole matrix's mean row length: the SpMV variant and width follow
     * it, the same in every part (la_dist.h) */
    double tot[2] = {0.0, 0.0};
    for (int k = 0; k < nmine; k++) {
        tot[0] += (double)parts[k].A.nnz;
        tot[1] += (double)parts[k].A.nrows;
    }
    if (MPI_Allreduce(MPI_IN_PLACE, tot, 2, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS && !rc)
        rc = cls_fail(err, CLS_EOTHER, "MPI_Allreduce(row statistics) failed");
    const double mean_row = tot[1] > 0.0 ? tot[0] / tot[1] : 0.0;
    for (int k = 0; k < nmine && !rc; k++) {
        dpart *p = &parts[k];
        double tk = cls_now();
        p->dev = devs[k];
        if ((rc = ocl_ctx_create(&p->dev, &p->ocl, err)))
            break;
        cls_trace("dsys_open: context");
        p->have_ocl = 1;
        if ((rc = la_init_flags(&p->la, &p->ocl, prec, NULL, L->nparts == 1 ? LA_FLAG_ONE_PART : 0,
                                err)))
            break;
        p->have_la = 1;
        if ((rc = ld_init(&p->ld, &p->la, err)))
            break;
        p->have_ld = 1;
        const halo_plan *h = &p->halo;
        double tu = cls_now();
        s->init_s += tu - tk;
        cls_trace("dsys_open: programs");
        rc = part_upload(p, fused, spmv, mean_row, err);
        cls_trace("dsys_open: matrix up");
        s->upload_s += cls_now() - tu;
        if (rc)
            break;
        if ((rc = ld_buffer_create(&p->ld, h->nsend_total, &p->d_sendbuf, err)) ||
            (rc = ld_pinned_alloc(&p->ld, (size_t)h->nsend_total * p->la.elem, &p->pin_send,
                                  &p->h_send, err)) ||
            (rc = ld_pinned_alloc(&p->ld, (size_t)h->nghost * p->la.elem, &p->pin_recv,
                                  &p->h_recv, err)))
            break;
    }
    free(devs);
    if (!rc) {
        void **sb = calloc((size_t)(nmine ? nmine : 1), sizeof *sb);
        void **rb = calloc((size_t)(nmine ? nmine : 1), sizeof *rb);
        if (!sb || !rb)
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the halo exchange");
        for (int k = 0; !rc && k < nmine; k++) {
            sb[k] = parts[k].h_send;
            rb[k] = parts[k].h_recv;
        }
        /* halo_comm keeps a pointer to a plans array indexed by slot */
        if (!rc) {
            s->plans_copy = calloc((size_t)(nmine ? nmine : 1), sizeof *s->plans_copy);
            if (!s->plans_copy)
                rc = cls_fail(err, CLS_EOTHER, "out of memory for the halo exchange");
            for (int k = 0; !rc && k < nmine; k++)
                s->plans_copy[k] = parts[k].halo; /* shallow: shares the lists */
        }
        if (!rc) {
            size_t elem = nmine ? parts[0].la.elem
                                : (prec != LA_FLOAT ? sizeof(double) : sizeof(float));
            rc = halo_comm_init(&s->hc, comm, L, s->plans_copy, nmine, elem, nmine ? sb : NULL,
                                nmine ? rb : NULL, err);
            if (!rc)
                s->have_hc = 1;
        }
        free(sb);
        free(rb);
    }
    return rc;
}

void dsys_close(dsys *s)
{
    if (!s)
        return;
    if (s->pending) {
        MPI_Wait(&s->req, MPI_STATUS_IGNORE);
        s->pending = 0;
    }
    if (s->have_hc)
        halo_comm_free(&s->hc);
    if (s->have_mpi_types) {
        MPI_Op_free(&s->pair_sum);
        MPI_Type_free(&s->pair);
        s->have_mpi_types = 0;
    }
    free(s->plans_copy);
    s->plans_copy = NULL;
    for (int k = 0; k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        cls_error e;
        if (p->ev_pack)
            ld_event_wait(&p->ev_pack, &e);
        if (p->ev_ghost)
            ld_event_wait(&p->ev_ghost, &e);
        if (p->have_ld) {
            ld_pinned_free(&p->ld, p->pin_send, p->h_send);
            ld_pinned_free(&p->ld, p->pin_recv, p->h_recv);
            p->pin_send = p->pin_recv = NULL;
            p->h_send = p->h_recv = NULL;
        }
        if (p->d_send_idx)
            clReleaseMemObject(p->d_send_idx);
        if (p->d_sendbuf)
            clReleaseMemObject(p->d_sendbuf);
        p->d_send_idx = p->d_sendbuf = NULL;
        if (p->have_dA)
            ld_csr_release(&p->dA);
        if (p->have_Ai)
            la_csr_release(&p->Ai);
        if (p->have_Ab)
            la_csr_release(&p->Ab);
        p->have_dA = p->have_Ai = p->have_Ab = 0;
        free(p->perm);
        p->perm = NULL;
        if (p->have_la)
            la_finish(&p->la, NULL);
        if (p->have_ld)
            ld_release(&p->ld);
        if (p->have_la)
            la_release(&p->la);
        if (p->have_ocl)
            ocl_ctx_release(&p->ocl);
        p->have_ld = p->have_la = p->have_ocl = 0;
    }
    s->have_hc = 0;
}

/* ---------------------------------------------------------------- vectors */

int dvec_create(dsys *s, int ghosted, dvec *x, cls_error *err)
{
    x->nmine = s->nmine;
    x->ghosted = ghosted;
    x->v = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *x->v);
    if (!x->v)
        return cls_fail(err, CLS_EOTHER, "out of memory for a distributed vector");
    for (int k = 0; k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        int64_t n = p->halo.nlocal + (ghosted ? p->halo.nghost : 0);
        int rc = la_vec_create(&p->la, n, &x->v[k], err);
        if (rc) {
            dvec_release(x);
            return rc;
        }
        /* ghost tails start defined (a part with no neighbour writes none) */
        if (ghosted && (rc = la_fill(&p->la, 0.0, &x->v[k], err))) {
            dvec_release(x);
            return rc;
        }
    }
    return CLS_OK;
}

void dvec_release(dvec *x)
{
    if (!x || !x->v)
        return;
    for (int k = 0; k < x->nmine; k++)
        la_vec_release(&x->v[k]);
    free(x->v);
    x->v = NULL;
}


/* the local view of slot k of x, given the part */
static la_vec loc(const dsys *s, const dvec *x, int k)
{
    la_vec v = x->v[k];
    v.n = s->parts[k].halo.nlocal;
    return v;
}

/* host arrays are in the part's row order (A's); devices hold them in
 * device order (interior first): perm translates */
int dvec_upload(dsys *s, dvec *x, double *const *host, cls_error *err)
{
    for (int k = 0; k < s->nmine; k++) {
        const dpart *p = &s->parts[k];
        la_vec v = loc(s, x, k);
        double *t = NULL;
        if (p->perm) {
            t = malloc((size_t)(v.n ? v.n : 1) * sizeof *t);
            if (!t)
                return cls_fail(err, CLS_EOTHER, "out of memory uploading a vector");
            for (int64_t i = 0; i < v.n; i++)
                t[i] = host[k][p->perm[i]];
        }
        int rc = la_vec_upload(&s->parts[k].la, &v, t ? t : host[k], err);
        free(t);
        if (rc)
            return rc;
    }
    return CLS_OK;
}

int dvec_download(dsys *s, const dvec *x, double *const *host, cls_error *err)
{
    for (int k = 0; k < s->nmine; k++) {
        const dpart *p = &s->parts[k];
        la_vec v = loc(s, x, k);
        double *t = NULL;
        if (p->perm && !(t = malloc((size_t)(v.n ? v.n : 1) * sizeof *t)))
            return cls_fail(err, CLS_EOTHER, "out of memory downloading a vector");
        int rc = la_vec_download(&s->parts[k].la, &v, t ? t : host[k], err);
        for (int64_t i = 0; t && !rc && i < v.n; i++)
            host[k][p->perm[i]] = t[i];
        free(t);
        if (rc)
            return rc;
    }
    return CLS_OK;
}

/* ------------------------------------------------------------- operations */

void dvec_fill(dsys *s, double a, dvec *y)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vy = loc(s, y, k);
        DS_DO(s, la_fill(&s->parts[k].la, a, &vy, DS_ERR));
    }
}

void dvec_copy(dsys *s, const dvec *x, dvec *y)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vx = loc(s, x, k), vy = loc(s, y, k);
        DS_DO(s, la_copy(&s->parts[k].la, &vx, &vy, DS_ERR));
    }
}

void dvec_axpy(dsys *s, double a, const dvec *x, dvec *y)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vx = loc(s, x, k), vy = loc(s, y, k);
        DS_DO(s, la_axpy(&s->parts[k].la, a, &vx, &vy, DS_ERR));
    }
}

void dvec_xpay(dsys *s, const dvec *x, double a, dvec *y)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vx = loc(s, x, k), vy = loc(s, y, k);
        DS_DO(s, la_xpay(&s->parts[k].la, &vx, a, &vy, DS_ERR));
    }
}

void dvec_pointwise(dsys *s, const dvec *d, const dvec *r, dvec *z)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vd = loc(s, d, k), vr = loc(s, r, k), vz = loc(s, z, k);
        DS_DO(s, la_pointwise(&s->parts[k].la, &vd, &vr, &vz, DS_ERR));
    }
}

/* records an MPI step's failure; the rank goes on with the protocol */
static void ds_check(dsys *s, int rc, const cls_error *e)
{
    if (rc)
        dsys_fail(s, e);
}

void dsys_spmv_halo(dsys *s, la_vec *const *x, dsys_rows_fn rows, void *ctx)
{
    cls_error e;
    cls_error_clear(&e);
    /* 1. the receive buffers are free once the last ghost writes are done */
    for (int k = 0; k < s->nmine; k++)
        DS_DO(s, ld_event_wait(&s->parts[k].ev_ghost, DS_ERR));
    ds_check(s, halo_comm_post_recvs(&s->hc, &e), &e);
    /* 2. pack, read back, interior rows */
    for (int k = 0; k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        if (p->halo.nsend_total > 0) {
            DS_DO(s, ld_pack(&p->ld, p->d_send_idx, p->halo.nsend_total, x[k], p->d_sendbuf,
                             DS_ERR));
            DS_DO(s, ld_read_async(&p->ld, p->d_sendbuf, 0,
                                   (size_t)p->halo.nsend_total * p->la.elem, p->h_send,
                                   &p->ev_pack, DS_ERR));
        }
        DS_DO(s, rows(s, k, 0, ctx, DS_ERR));
        DS_DO(s, ld_flush(&p->ld, DS_ERR));
    }
    /* 3. send as each part's halo lands; copies between this rank's parts */
    for (int k = 0; k < s->nmine; k++) {
        DS_DO(s, ld_event_wait(&s->parts[k].ev_pack, DS_ERR));
        ds_check(s, halo_comm_send(&s->hc, k, &e), &e);
    }
    ds_check(s, halo_comm_local(&s->hc, &e), &e);
    ds_check(s, halo_comm_wait(&s->hc, &e), &e);
    /* 4. ghosts in, boundary rows */
    for (int k = 0; k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        if (p->halo.nghost > 0)
            DS_DO(s, ld_write_async(&p->ld, x[k]->buf, (size_t)p->halo.nlocal * p->la.elem,
                                    (size_t)p->halo.nghost * p->la.elem, p->h_recv,
                                    &p->ev_ghost, DS_ERR));
        DS_DO(s, rows(s, k, 1, ctx, DS_ERR));
        DS_DO(s, ld_flush(&p->ld, DS_ERR));
    }
}

/* dvec_spmv's row work: the split-CSR kernels */
typedef struct spmv_ctx {
    const dvec *x;
    dvec *y;
} spmv_ctx;

static int spmv_rows(dsys *s, int k, int boundary, void *ctx, cls_error *err)
{
    spmv_ctx *c = ctx;
    dpart *p = &s->parts[k];
    la_vec vy = loc(s, c->y, k);
    if (p->have_Ai) /* la's format blocks: the boundary rows sit at row_offset */
        return boundary ? (p->have_Ab ? la_spmv(&p->la, &p->Ab, &c->x->v[k], &vy, err) : CLS_OK)
                        : la_spmv(&p->la, &p->Ai, &c->x->v[k], &vy, err);
    if (!boundary)
        return ld_spmv(&p->ld, &p->dA, p->halo.nghost ? LD_ROWS_INTERIOR : LD_ROWS_ALL,
                       &c->x->v[k], &vy, err);
    return p->halo.nghost ? ld_spmv(&p->ld, &p->dA, LD_ROWS_BOUNDARY, &c->x->v[k], &vy, err)
                          : CLS_OK;
}

void dvec_spmv(dsys *s, const dvec *x, dvec *y)
{
    la_vec **xs = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *xs);
    if (!xs) {
        cls_error e;
        cls_fail(&e, CLS_EOTHER, "out of memory for an SpMV");
        dsys_fail(s, &e);
    }
    for (int k = 0; xs && k < s->nmine; k++)
        xs[k] = &x->v[k];
    spmv_ctx c = {x, y};
    if (xs)
        dsys_spmv_halo(s, xs, spmv_rows, &c);
    else /* keep the protocol: every rank still exchanges */
        dsys_spmv_halo(s, NULL, spmv_rows, &c);
    free(xs);
}

/* (hi, lo) += (h, l): TwoSum of the leading parts, the rest added */
void dsum_pair_add(double *hi, double *lo, double h, double l)
{
    double t = *hi + h;
    double z = t - *hi;
    double e = (*hi - (t - z)) + (h - z);
    *hi = t;
    *lo += l + e;
}

/* waits for every part's pending reduction and adds them in part order */
static void gather_local(dsys *s, int ncomp, dsum *out)
{
    memset(out, 0, sizeof *out);
    out->n = ncomp;
    for (int k = 0; k < s->nmine; k++) {
        double v[6] = {0, 0, 0, 0, 0, 0};
        dpart *p = &s->parts[k];
        if (!s->failed && p->ld.ev) {
            cls_error e;
            if (ld_result_wait(&p->ld, v, &e))
                dsys_fail(s, &e);
        } else if (p->ld.ev) {
            cls_error e;
            ld_event_wait(&p->ld.ev, &e); /* drain it */
        }
        for (int c = 0; c < ncomp; c++)
            dsum_pair_add(&out->hi[c], &out->lo[c], v[2 * c], v[2 * c + 1]);
    }
}

void dvec_dots_local(dsys *s, int ndots, const dvec *const *x, const dvec *const *y,
                     dsum *out)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vx[3], vy[3];
        const la_vec *px[3], *py[3];
        for (int c = 0; c < ndots; c++) {
            vx[c] = loc(s, x[c], k);
            vy[c] = loc(s, y[c], k);
            px[c] = &vx[c];
            py[c] = &vy[c];
        }
        DS_DO(s, ld_dots_begin(&s->parts[k].ld, ndots, px, py, DS_ERR));
    }
    gather_local(s, ndots, out);
}

void dvec_cg_update_local(dsys *s, double alpha, const dvec *p, const dvec *q, dvec *x,
                          dvec *r, dsum *out)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vp = loc(s, p, k), vq = loc(s, q, k), vx = loc(s, x, k), vr = loc(s, r, k);
        DS_DO(s, ld_cg_update_begin(&s->parts[k].ld, alpha, &vp, &vq, &vx, &vr, DS_ERR));
    }
    gather_local(s, 1, out);
}

void dvec_dcg1_dots_local(dsys *s, const dvec *p, const dvec *q, const dvec *r, const dvec *d,
                          dsum *out)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vp = loc(s, p, k), vq = loc(s, q, k), vr = loc(s, r, k), vd;
        if (d)
            vd = loc(s, d, k);
        DS_DO(s, ld_dcg1_dots_begin(&s->parts[k].ld, 0, &vp, &vq, &vr, d ? &vd : NULL, DS_ERR));
    }
    gather_local(s, 3, out);
    if (!d)
        return;
    /* Jacobi: r'Wr too (a second device reduction, the same MPI one) */
    for (int k = 0; k < s->nmine; k++) {
        la_vec vp = loc(s, p, k), vq = loc(s, q, k), vr = loc(s, r, k), vd = loc(s, d, k);
        DS_DO(s, ld_dcg1_dots_begin(&s->parts[k].ld, 1, &vp, &vq, &vr, &vd, DS_ERR));
    }
    dsum rz;
    gather_local(s, 1, &rz);
    out->hi[3] = rz.hi[0];
    out->lo[3] = rz.lo[0];
    out->n = 4;
}

void dvec_dcg1_update(dsys *s, double alpha, double beta, dvec *p, const dvec *q, dvec *x,
                      dvec *r, const dvec *d)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vp = loc(s, p, k), vq = loc(s, q, k), vx = loc(s, x, k), vr = loc(s, r, k), vd;
        if (d)
            vd = loc(s, d, k);
        DS_DO(s, ld_dcg1_update(&s->parts[k].ld, alpha, beta, &vp, &vq, &vx, &vr,
                                d ? &vd : NULL, DS_ERR));
    }
}

void dvec_pcg_update_local(dsys *s, double alpha, const dvec *p, const dvec *q, dvec *x,
                           dvec *r, const dvec *d, dvec *z, dsum *out)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vp = loc(s, p, k), vq = loc(s, q, k), vx = loc(s, x, k), vr = loc(s, r, k),
               vd = loc(s, d, k), vz = loc(s, z, k);
        DS_DO(s, ld_pcg_update_begin(&s->parts[k].ld, alpha, &vp, &vq, &vx, &vr, &vd, &vz,
                                     DS_ERR));
    }
    gather_local(s, 2, out);
}

void dvec_pipecg_update_local(dsys *s, double alpha, double beta, const dvec *nv, const dvec *m,
                              dvec *w, dvec *z, dvec *q, dvec *sv, dvec *p, dvec *x, dvec *r,
                              dvec *u, dsum *out)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vn = loc(s, nv, k), vw = loc(s, w, k), vz = loc(s, z, k), vs = loc(s, sv, k),
               vp = loc(s, p, k), vx = loc(s, x, k), vr = loc(s, r, k);
        la_vec vm, vq, vu;
        if (u) {
            vm = loc(s, m, k);
            vq = loc(s, q, k);
            vu = loc(s, u, k);
        }
        DS_DO(s, ld_pipecg_update_begin(&s->parts[k].ld, alpha, beta, &vn, u ? &vm : NULL, &vw,
                                        &vz, u ? &vq : NULL, &vs, &vp, &vx, &vr,
                                        u ? &vu : NULL, DS_ERR));
    }
    gather_local(s, 3, out);
}

/* ------------------------------------------------------------- reductions */

/* MPI_User_function: inout[i] += in[i] on (hi, lo) pairs; commutative
 * bit for bit (TwoSum is symmetric), so MPI may combine in any order. */
static void pair_sum_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const double *a = in;
    double *b = inout;
    for (int i = 0; i < *len; i++)
        dsum_pair_add(&b[2 * i], &b[2 * i + 1], a[2 * i], a[2 * i + 1]);
}

static int dsys_mpi_types(dsys *s, cls_error *err)
{
    if (MPI_Type_contiguous(2, MPI_DOUBLE, &s->pair) != MPI_SUCCESS ||
        MPI_Type_commit(&s->pair) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Type_contiguous/commit(pair) failed");
    if (MPI_Op_create(pair_sum_op, 1, &s->pair_sum) != MPI_SUCCESS) {
        MPI_Type_free(&s->pair);
        return cls_fail(err, CLS_EOTHER, "MPI_Op_create(pair sum) failed");
    }
    s->have_mpi_types = 1;
    return CLS_OK;
}

static int reduced(dsys *s, double *v, int *cancel_out, cls_error *err)
{
    const int n = s->rn;
    for (int c = 0; c < n; c++)
        v[c] = s->rbuf[2 * c] + s->rbuf[2 * c + 1]; /* rounded once */
    if (cancel_out)
        *cancel_out = s->rbuf[2 * (n + 1)] > 0.0;
    if (s->rbuf[2 * n] > 0.0) {
        if (s->failed) {
            if (err)
                *err = s->ferr;
            return s->ferr.code ? s->ferr.code : CLS_EOTHER;
        }
        return cls_fail(err, CLS_EOTHER, "another rank failed");
    }
    return CLS_OK;
}

static int pack_rbuf(dsys *s, const dsum *in, int cancel_in, cls_error *err)
{
    const int n = in->n;
    if (n < 1 || n > 4)
        return cls_fail(err, CLS_EOTHER, "dsys reduction of %d values (1..4)", n);
    memset(s->rbuf, 0, sizeof s->rbuf);
    for (int c = 0; c < n && !s->failed; c++) {
        s->rbuf[2 * c] = in->hi[c];
        s->rbuf[2 * c + 1] = in->lo[c];
    }
    s->rbuf[2 * n] = s->failed ? 1.0 : 0.0;
    s->rbuf[2 * (n + 1)] = (s->rank == 0 && cancel_in) ? 1.0 : 0.0;
    s->rn = n;
    return CLS_OK;
}

int dsys_allreduce(dsys *s, const dsum *in, double *v, int cancel_in, int *cancel_out,
                   cls_error *err)
{
    int rc = pack_rbuf(s, in, cancel_in, err);
    if (rc)
        return rc;
    int m = MPI_Allreduce(MPI_IN_PLACE, s->rbuf, in->n + 2, s->pair, s->pair_sum, s->comm);
    if (m != MPI_SUCCESS) {
        cls_error e;
        cls_fail(&e, CLS_EOTHER, "MPI_Allreduce failed (code %d)", m);
        dsys_fail(s, &e);
        if (err)
            *err = s->ferr;
        return CLS_EOTHER;
    }
    return reduced(s, v, cancel_out, err);
}

int dsys_iallreduce_begin(dsys *s, const dsum *in, int cancel_in, cls_error *err)
{
    if (s->pending)
        return cls_fail(err, CLS_EOTHER, "dsys: a reduction is already in flight");
    int rc = pack_rbuf(s, in, cancel_in, err);
    if (rc)
        return rc;
    int m = MPI_Iallreduce(MPI_IN_PLACE, s->rbuf, in->n + 2, s->pair, s->pair_sum, s->comm,
                           &s->req);
    if (m != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Iallreduce failed (code %d)", m);
    s->pending = 1;
    return CLS_OK;
}

int dsys_iallreduce_end(dsys *s, double *v, int *cancel_out, cls_error *err)
{
    if (!s->pending)
        return cls_fail(err, CLS_EOTHER, "dsys: no reduction in flight");
    s->pending = 0;
    int m = MPI_Wait(&s->req, MPI_STATUS_IGNORE);
    if (m != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Wait(Iallreduce) failed (code %d)", m);
    return reduced(s, v, cancel_out, err);
}
