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
#include "../../common/parallel.h"
#include "../../common/trace.h"
#include "../devfig.h"
#include "dvec.h"
#include "dwarm.h"

#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../common/timer.h"

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

int dsys_open(dsys *s, MPI_Comm comm, const part_layout *L, dpart *parts, int nmine,
              const char *device, int devices_per_rank, la_precision prec, la_spmv_variant spmv,
              int fused, dsys_device_fn on_device, void *on_device_ctx, cls_error *err)
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
    /* one part and --device auto: the device that finishes it first, from
     * the devices' measured figures (devfig.h) */
    if (!rc && nmine == 1 && L->nparts == 1 && (!device || !strcasecmp(device, "auto"))) {
        ocl_device *all = NULL;
        int na = 0;
        cls_error le;
        if (ocl_list_devices(&all, &na, &le) == CLS_OK) {
            int fb = 0;
            for (int i = 0; i < na; i++)
                if (all[i].id == devs[0].id)
                    fb = i;
            int c = devfig_choose(all, na, fb, prec, parts[0].A.nnz, s->device_choice,
                                  sizeof s->device_choice);
            devs[0] = all[c];
            free(all);
        }
    }
    if (!rc && nmine == 1 && L->nparts == 1 && on_device)
        on_device(on_device_ctx, &devs[0], &spmv);
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
        const int flags = L->nparts == 1 ? LA_FLAG_ONE_PART : 0;
        if (dwarm_take(p, prec, flags)) {
            p->warm = 1;
            p->have_ocl = p->have_la = p->have_ld = 1;
            s->warm_parts++;
            cls_trace("dsys_open: warm device");
        } else {
            /* warm devices share one context per device (its programs
             * kept in memory), each solve with its own queues: solves at
             * once on one device run side by side, not time-sliced */
            if ((rc = dwarm_enabled() ? ocl_ctx_create_shared(&p->dev, &p->ocl, err)
                                      : ocl_ctx_create(&p->dev, &p->ocl, err)))
                break;
            cls_trace("dsys_open: context");
            p->have_ocl = 1;
            if ((rc = la_init_flags(&p->la, &p->ocl, prec, NULL, flags, err)))
                break;
            p->have_la = 1;
            p->cfg0 = p->la.cfg;
            p->ngroups0 = p->la.ngroups;
            if ((rc = ld_init(&p->ld, &p->la, err)))
                break;
            p->have_ld = 1;
        }
        const halo_plan *h = &p->halo;
        double tu = cls_now();
        s->init_s += tu - tk;
        cls_trace("dsys_open: programs");
        rc = dpart_upload(p, fused, spmv, mean_row, err);
        cls_trace("dsys_open: matrix up");
        s->upload_s += cls_now() - tu;
        if (rc)
            break;
        if ((rc = ld_buffer_create(&p->ld, h->nsend_total, &p->d_sendbuf, err)) ||
            (rc = ld_pinned_alloc(&p->ld, (size_t)h->nsend_total * p->la.elem, &p->pin_send,
                                  &p->h_send, err)) ||
            (rc = ld_pinned_alloc(&p->ld, (size_t)h->nghost * p->la.elem, &p->pin_recv, &p->h_recv,
                                  err)))
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
            size_t elem =
                nmine ? parts[0].la.elem : (prec != LA_FLOAT ? sizeof(double) : sizeof(float));
            rc = halo_comm_init(&s->hc, comm, L, s->plans_copy, nmine, elem, nmine ? sb : NULL,
                                nmine ? rb : NULL, err);
            if (!rc)
                s->have_hc = 1;
        }
        free(sb);
        free(rb);
    }
    if (rc)
        s->failed = 1; /* dsys_close then keeps none of these devices warm */
    return rc;
}

void dsys_close_comm(dsys *s)
{
    if (!s)
        return;
    if (s->pending) {
        MPI_Wait(&s->req, MPI_STATUS_IGNORE);
        s->pending = 0;
    }
    if (s->have_mpi_types) {
        MPI_Op_free(&s->pair_sum);
        MPI_Type_free(&s->pair);
        s->have_mpi_types = 0;
    }
}

void dsys_close(dsys *s)
{
    if (!s)
        return;
    dsys_close_comm(s);
    if (s->prof) { /* a failed solve's profile: its events released */
        dprof_rank_sum unused;
        dprof_close(s->prof, 0, &unused);
        s->prof = NULL;
    }
    if (s->have_hc)
        halo_comm_free(&s->hc);
    free(s->plans_copy);
    s->plans_copy = NULL;
    for (int k = 0; k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        cls_error e;
        if (p->ev_pack)
            ld_event_wait(&p->ld, &p->ev_pack, &e);
        if (p->ev_ghost)
            ld_event_wait(&p->ld, &p->ev_ghost, &e);
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
        /* no device memory of this job stays; a healthy part's device
         * state stays warm for the next solve */
        dwarm_release(p, s->prec, s->L && s->L->nparts == 1 ? LA_FLAG_ONE_PART : 0, s->failed);
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
/* A vector between the file's order and the device's, on every core:
 * perm (device row -> row of A) is a permutation, so no two i write one
 * entry. perm_range: out[i] = in[perm[i]] (up); unperm_range: out[perm[i]]
 * = in[i] (down). */
typedef struct unperm_ctx {
    double *out;
    const double *in;
    const int32_t *perm;
} unperm_ctx;

static void unperm_range(void *arg, int range, int64_t a, int64_t e)
{
    (void)range;
    const unperm_ctx *u = arg;
    for (int64_t i = a; i < e; i++)
        u->out[u->perm[i]] = u->in[i];
}

static void perm_range(void *arg, int range, int64_t a, int64_t e)
{
    (void)range;
    const unperm_ctx *u = arg;
    for (int64_t i = a; i < e; i++)
        u->out[i] = u->in[u->perm[i]];
}

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
            unperm_ctx u = {t, host[k], p->perm};
            cls_parallel_for(v.n, 1 << 18, perm_range, &u);
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
        if (t && !rc) {
            unperm_ctx u = {host[k], t, p->perm};
            cls_parallel_for(v.n, 1 << 18, unperm_range, &u);
        }
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
        DSYS_DO(s, la_fill(&s->parts[k].la, a, &vy, DSYS_ERR));
    }
}

void dvec_copy(dsys *s, const dvec *x, dvec *y)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vx = loc(s, x, k), vy = loc(s, y, k);
        DSYS_DO(s, la_copy(&s->parts[k].la, &vx, &vy, DSYS_ERR));
    }
}

void dvec_axpy(dsys *s, double a, const dvec *x, dvec *y)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vx = loc(s, x, k), vy = loc(s, y, k);
        DSYS_DO(s, la_axpy(&s->parts[k].la, a, &vx, &vy, DSYS_ERR));
    }
}

void dvec_xpay(dsys *s, const dvec *x, double a, dvec *y)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vx = loc(s, x, k), vy = loc(s, y, k);
        DSYS_DO(s, la_xpay(&s->parts[k].la, &vx, a, &vy, DSYS_ERR));
    }
}

void dvec_pointwise(dsys *s, const dvec *d, const dvec *r, dvec *z)
{
    for (int k = 0; k < s->nmine; k++) {
        la_vec vd = loc(s, d, k), vr = loc(s, r, k), vz = loc(s, z, k);
        DSYS_DO(s, la_pointwise(&s->parts[k].la, &vd, &vr, &vz, DSYS_ERR));
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
    dprof *pf = s->prof; /* --profile: each step's commands tagged, each wait timed */
    double t;
    /* 1. the receive buffers are free once the last ghost writes are done */
    t = cls_now();
    for (int k = 0; k < s->nmine; k++)
        DSYS_DO(s, ld_event_wait(&s->parts[k].ld, &s->parts[k].ev_ghost, DSYS_ERR));
    dprof_wait_add(pf, DPROF_W_GHOST, cls_now() - t);
    t = cls_now();
    ds_check(s, halo_comm_post_recvs(&s->hc, &e), &e);
    double t_halo = cls_now() - t;
    /* 2. pack, read back, interior rows */
    for (int k = 0; k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        if (p->halo.nsend_total > 0) {
            dprof_step_set(pf, k, DPROF_PACK);
            DSYS_DO(s, ld_pack(&p->ld, p->d_send_idx, p->halo.nsend_total, x[k], p->d_sendbuf,
                               DSYS_ERR));
        }
        /* the copies' start on the copy queue (GPUs): after the pack and
         * the last round's readers of the ghosts */
        if (p->halo.nsend_total > 0 || p->halo.nghost > 0)
            DSYS_DO(s, ld_halo_mark(&p->ld, DSYS_ERR));
        if (p->halo.nsend_total > 0) {
            dprof_step_set(pf, k, DPROF_HALO_READ);
            DSYS_DO(s,
                    ld_read_async(&p->ld, p->d_sendbuf, 0, (size_t)p->halo.nsend_total * p->la.elem,
                                  p->h_send, &p->ev_pack, DSYS_ERR));
        }
        dprof_step_set(pf, k, DPROF_INTERIOR);
        DSYS_DO(s, rows(s, k, 0, ctx, DSYS_ERR));
        DSYS_DO(s, ld_flush(&p->ld, DSYS_ERR));
    }
    /* 3. send as each part's halo lands; copies between this rank's parts */
    for (int k = 0; k < s->nmine; k++) {
        t = cls_now();
        DSYS_DO(s, ld_event_wait(&s->parts[k].ld, &s->parts[k].ev_pack, DSYS_ERR));
        dprof_wait_add(pf, DPROF_W_PACK, cls_now() - t);
        t = cls_now();
        ds_check(s, halo_comm_send(&s->hc, k, &e), &e);
        t_halo += cls_now() - t;
    }
    t = cls_now();
    ds_check(s, halo_comm_local(&s->hc, &e), &e);
    ds_check(s, halo_comm_wait(&s->hc, &e), &e);
    dprof_wait_add(pf, DPROF_W_HALO, t_halo + cls_now() - t);
    /* 4. ghosts in, boundary rows */
    for (int k = 0; k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        dprof_step_set(pf, k, DPROF_HALO_WRITE);
        if (p->halo.nghost > 0)
            DSYS_DO(s, ld_write_async(&p->ld, x[k]->buf, (size_t)p->halo.nlocal * p->la.elem,
                                      (size_t)p->halo.nghost * p->la.elem, p->h_recv, &p->ev_ghost,
                                      DSYS_ERR));
        dprof_step_set(pf, k, DPROF_BOUNDARY);
        DSYS_DO(s, rows(s, k, 1, ctx, DSYS_ERR));
        DSYS_DO(s, ld_flush(&p->ld, DSYS_ERR));
        dprof_step_set(pf, k, DPROF_OTHER);
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
        return ld_spmv(&p->ld, &p->dA, p->halo.nghost ? LD_ROWS_INTERIOR : LD_ROWS_ALL, &c->x->v[k],
                       &vy, err);
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
    double waited = 0.0; /* the waits alone, not the profile's own work */
    for (int k = 0; k < s->nmine; k++) {
        double v[6] = {0, 0, 0, 0, 0, 0};
        dpart *p = &s->parts[k];
        if (!s->failed && p->ld.ev) {
            cls_error e;
            const double t = cls_now();
            const int rc = ld_result_wait(&p->ld, v, &e);
            waited += cls_now() - t;
            if (rc)
                dsys_fail(s, &e);
            else /* every command before the read has run */
                dprof_resolve(s->prof, k);
        } else if (p->ld.ev) {
            cls_error e;
            ld_event_wait(&p->ld, &p->ld.ev, &e); /* drain it */
        }
        for (int c = 0; c < ncomp; c++)
            dsum_pair_add(&out->hi[c], &out->lo[c], v[2 * c], v[2 * c + 1]);
    }
    dprof_wait_add(s->prof, DPROF_W_SUMS, waited);
}

void dvec_dots_local(dsys *s, int ndots, const dvec *const *x, const dvec *const *y, dsum *out)
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
        DSYS_DO(s, ld_dots_begin(&s->parts[k].ld, ndots, px, py, DSYS_ERR));
    }
    gather_local(s, ndots, out);
}

void dvec_sums_wait(dsys *s, int ncomp, dsum *out)
{
    gather_local(s, ncomp, out);
}

void dvec_pipecg_update_begin(dsys *s, double alpha, double beta, const dvec *nv, const dvec *m,
                              dvec *w, dvec *z, dvec *q, dvec *sv, dvec *p, dvec *x, dvec *r,
                              dvec *u)
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
        DSYS_DO(s, ld_pipecg_update_begin(&s->parts[k].ld, alpha, beta, &vn, u ? &vm : NULL, &vw,
                                          &vz, u ? &vq : NULL, &vs, &vp, &vx, &vr, u ? &vu : NULL,
                                          DSYS_ERR));
    }
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

int dsys_reduce_sums(dsys *s, dsys_sums_fn wait, void *ctx, double v[4], int cancel_in,
                     int *cancel_out, cls_error *err)
{
    dsum ls;
    memset(&ls, 0, sizeof ls);
    ls.n = 4;
    double waited = 0.0; /* the waits alone, not the profile's own work */
    for (int k = 0; k < s->nmine; k++) {
        double o[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (!s->failed) {
            cls_error e;
            const double t = cls_now();
            const int rc = wait(ctx, k, o, &e);
            waited += cls_now() - t;
            if (rc)
                dsys_fail(s, &e);
            else /* every command before the sums' read has run */
                dprof_resolve(s->prof, k);
        }
        for (int q = 0; q < 4; q++)
            dsum_pair_add(&ls.hi[q], &ls.lo[q], o[2 * q], o[2 * q + 1]);
    }
    dprof_wait_add(s->prof, DPROF_W_SUMS, waited);
    return dsys_allreduce(s, &ls, v, cancel_in, cancel_out, err);
}

int dsys_allreduce(dsys *s, const dsum *in, double *v, int cancel_in, int *cancel_out,
                   cls_error *err)
{
    int rc = pack_rbuf(s, in, cancel_in, err);
    if (rc)
        return rc;
    const double t = cls_now();
    int m = MPI_Allreduce(MPI_IN_PLACE, s->rbuf, in->n + 2, s->pair, s->pair_sum, s->comm);
    dprof_wait_add(s->prof, DPROF_W_ALLREDUCE, cls_now() - t);
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

int dsys_allreduce_n(dsys *s, int n, const double *in_hi, const double *in_lo, double *v,
                     int cancel_in, int *cancel_out, cls_error *err)
{
    double b[2 * (DSYS_MAX_SUMS + 2)];
    if (n < 1 || n > DSYS_MAX_SUMS) /* n is the same on every rank: all return here */
        return cls_fail(err, CLS_EOTHER, "dsys reduction of %d values (1..%d)", n, DSYS_MAX_SUMS);
    memset(b, 0, sizeof b);
    for (int c = 0; c < n && !s->failed; c++) {
        b[2 * c] = in_hi[c];
        b[2 * c + 1] = in_lo[c];
    }
    b[2 * n] = s->failed ? 1.0 : 0.0;
    b[2 * (n + 1)] = (s->rank == 0 && cancel_in) ? 1.0 : 0.0;
    int r = MPI_Allreduce(MPI_IN_PLACE, b, n + 2, s->pair, s->pair_sum, s->comm);
    if (r != MPI_SUCCESS) {
        cls_error e;
        cls_fail(&e, CLS_EOTHER, "MPI_Allreduce failed (code %d)", r);
        dsys_fail(s, &e);
        if (err)
            *err = s->ferr;
        return CLS_EOTHER;
    }
    for (int c = 0; c < n; c++)
        v[c] = b[2 * c] + b[2 * c + 1]; /* rounded once */
    if (cancel_out)
        *cancel_out = b[2 * (n + 1)] > 0.0;
    if (b[2 * n] > 0.0) {
        if (s->failed) {
            if (err)
                *err = s->ferr;
            return s->ferr.code ? s->ferr.code : CLS_EOTHER;
        }
        return cls_fail(err, CLS_EOTHER, "another rank failed");
    }
    return CLS_OK;
}

int dsys_iallreduce_begin(dsys *s, const dsum *in, int cancel_in, cls_error *err)
{
    if (s->pending)
        return cls_fail(err, CLS_EOTHER, "dsys: a reduction is already in flight");
    int rc = pack_rbuf(s, in, cancel_in, err);
    if (rc)
        return rc;
    int m =
        MPI_Iallreduce(MPI_IN_PLACE, s->rbuf, in->n + 2, s->pair, s->pair_sum, s->comm, &s->req);
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
    const double t = cls_now();
    int m = MPI_Wait(&s->req, MPI_STATUS_IGNORE);
    dprof_wait_add(s->prof, DPROF_W_ALLREDUCE, cls_now() - t);
    if (m != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Wait(Iallreduce) failed (code %d)", m);
    return reduced(s, v, cancel_out, err);
}
