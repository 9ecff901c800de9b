/*
 * la_ring.c: the record ring of the device-scalar CG loops (la_cgf.c,
 * la_pcm.c; declared in la.h).
 *
 * Each iteration the device writes a record (residual, scalars, stop code,
 * k) into slot k % LA_CGF_SLOTS of `hist`; the host enqueues a
 * non-blocking read of that slot on la's second queue, ordered after the
 * iteration's last kernel by an event, and consumes the records in order.
 * So the host learns iteration k's residual while later iterations run,
 * and never waits inside an iteration (solver/krylov/ksp_device.c).
 */
#include "la_priv.h"
#include "ocl_gate.h"

int la_part_in_set(const la_csr *Ai, const la_csr *Ab, int64_t nghost, const la_vec *b,
                   const la_vec *x, const char *who, la_part_in *in, cls_error *err)
{
    in->Ai = Ai;
    in->Ab = Ab;
    in->n = Ai->nrows + (Ab ? Ab->nrows : 0);
    in->nghost = nghost;
    in->b = *b;
    in->x = *x;
    if (b->n != in->n || x->n != in->n + nghost || (Ab && Ab->row_offset != Ai->nrows))
        return cls_fail(err, CLS_EOTHER, "%s: inconsistent part sizes", who);
    return CLS_OK;
}

int lai_read_queue(la_ctx *la, cls_error *err)
{
    if (la->rq)
        return CLS_OK;
    cl_int st;
    la->rq = clCreateCommandQueue(la->ocl->context, la->ocl->dev.id, 0, &st);
    if (st != CL_SUCCESS) {
        la->rq = NULL;
        return cls_fail(err, CLS_EOTHER, "clCreateCommandQueue(read-back queue) failed: %s (%d)",
                        ocl_errstr(st), (int)st);
    }
    return CLS_OK;
}

int lai_ring_open(la_ctx *la, cl_mem hist, size_t bytes, const char *what, cls_error *err)
{
    /* zeroed before the first launch: no slot holds a former solve's record */
    const unsigned char zero = 0;
    cl_int st = clEnqueueFillBuffer(la->ocl->queue, hist, &zero, 1, 0, bytes, 0, NULL, NULL);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clEnqueueFillBuffer(%s records) failed: %s (%d)", what,
                        ocl_errstr(st), (int)st);
    return lai_read_queue(la, err);
}

int la_ring_room(const la_ring *r)
{
    return r->enq - r->seen < LA_CGF_SLOTS - 1;
}

int la_ring_drain(la_ring *r, const char *what, cls_error *err)
{
    int rc = CLS_OK;
    for (int64_t i = r->seen; i < r->enq; i++) {
        int slot = (int)((r->k_dev + i) % LA_CGF_SLOTS);
        if (!r->rev[slot])
            continue;
        cl_int st = clWaitForEvents(1, &r->rev[slot]);
        clReleaseEvent(r->rev[slot]);
        r->rev[slot] = NULL;
        if (st != CL_SUCCESS && rc == CLS_OK)
            rc = cls_fail(err, CLS_EOTHER, "clWaitForEvents(%s record) failed: %s (%d)", what,
                          ocl_errstr(st), (int)st);
    }
    r->seen = r->enq;
    return rc;
}

int la_ring_reset(la_ring *r, int64_t k, const char *what, cls_error *err)
{
    int rc = la_ring_drain(r, what, err);
    r->k_dev = k;
    r->enq = r->seen = 0;
    return rc;
}

int la_ring_read(la_ctx *la, la_ring *r, cl_mem hist, cl_event after, const char *what,
                 cls_error *err)
{
    int slot = (int)((r->k_dev + r->enq) % LA_CGF_SLOTS);
    size_t as = la_acc_size(la);
    cl_int st = clEnqueueReadBuffer(la->rq, hist, CL_FALSE, (size_t)slot * 8 * as, 8 * as,
                                    r->ring[slot], 1, &after, &r->rev[slot]);
    if (st != CL_SUCCESS) {
        r->rev[slot] = NULL;
        return cls_fail(err, CLS_EOTHER, "clEnqueueReadBuffer(%s record) failed: %s (%d)", what,
                        ocl_errstr(st), (int)st);
    }
    OCL_CHECK(err, clFlush(la->rq), "clFlush(read-back queue)");
    r->enq++;
    return CLS_OK;
}

int la_ring_read_n(la_ctx *la, la_ring *r, cl_mem hist, cl_event after, int count, const char *what,
                   cls_error *err)
{
    const size_t as = la_acc_size(la);
    if (8 * as != sizeof r->ring[0]) { /* float records: 32 bytes a slot here, 64 on the host */
        for (int i = 0; i < count; i++) {
            int rc = la_ring_read(la, r, hist, after, what, err);
            if (rc)
                return rc;
        }
        return CLS_OK;
    }
    /* one read per contiguous run of slots (two where the ring wraps);
     * every slot of a run holds its own reference to the run's event */
    while (count > 0) {
        const int slot = (int)((r->k_dev + r->enq) % LA_CGF_SLOTS);
        const int m = count < LA_CGF_SLOTS - slot ? count : LA_CGF_SLOTS - slot;
        cl_event ev = NULL;
        cl_int st = clEnqueueReadBuffer(la->rq, hist, CL_FALSE, (size_t)slot * 8 * as,
                                        (size_t)m * 8 * as, r->ring[slot], 1, &after, &ev);
        if (st != CL_SUCCESS)
            return cls_fail(err, CLS_EOTHER, "clEnqueueReadBuffer(%s records) failed: %s (%d)",
                            what, ocl_errstr(st), (int)st);
        for (int i = 0; i < m; i++) {
            if (i > 0)
                clRetainEvent(ev);
            r->rev[slot + i] = ev;
        }
        r->enq += m;
        count -= m;
    }
    OCL_CHECK(err, clFlush(la->rq), "clFlush(read-back queue)");
    return CLS_OK;
}

int la_ring_next(la_ctx *la, la_ring *r, la_cgf_record *rec, const char *what, cls_error *err)
{
    if (r->seen >= r->enq)
        return cls_fail(err, CLS_EOTHER, "%s: no iteration queued", what);
    int slot = (int)((r->k_dev + r->seen) % LA_CGF_SLOTS);
    cl_int st = clWaitForEvents(1, &r->rev[slot]);
    clReleaseEvent(r->rev[slot]);
    r->rev[slot] = NULL;
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clWaitForEvents(%s record) failed: %s (%d)", what,
                        ocl_errstr(st), (int)st);
    double v[8];
    lai_acc_to_double(la, r->ring[slot], 8, v);
    rec->rr = v[0];
    rec->rz = v[1];
    rec->pq = v[2];
    rec->qq = v[3];
    rec->alpha = v[4];
    rec->beta = v[5];
    rec->stop = (int)v[6];
    rec->k = (int64_t)v[7];
    r->seen++;
    return CLS_OK;
}

int la_ring_step(la_ctx *la, la_ring *r, cl_kernel k_scal, size_t ls_scal, cl_kernel k_upd,
                 const char *upd_name, size_t gu, size_t ls_upd, cl_mem hist, const char *what,
                 cls_error *err)
{
    int rc;
    cl_event ev = NULL;
    size_t global = ls_scal; /* one work-group */
    cl_int st = ocl_enqueue_kernel(la->ocl, k_scal, global, &ls_scal, &ev);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clEnqueueNDRangeKernel(%s scalars) failed: %s (%d)", what,
                        ocl_errstr(st), (int)st);
    if (la->capture && la->nev < (int)(sizeof la->ev / sizeof *la->ev) &&
        clRetainEvent(ev) == CL_SUCCESS) {
        la->evname[la->nev] = what;
        la->ev[la->nev++] = ev;
    }
    if ((rc = lai_enqueue(la, k_upd, upd_name, gu, ls_upd, err))) {
        clReleaseEvent(ev);
        return rc;
    }
    st = clFlush(la->ocl->queue);
    if (st != CL_SUCCESS) {
        clReleaseEvent(ev);
        OCL_CHECK(err, st, "clFlush");
    }
    rc = la_ring_read(la, r, hist, ev, what, err); /* the record, once the scalars are written */
    clReleaseEvent(ev);
    return rc;
}
