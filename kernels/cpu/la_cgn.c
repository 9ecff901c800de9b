/*
 * la_cgn.c: the native CPU CG workspace (design in la_cgn.h).
 *
 * One iteration is one cls_team_run. Classic (Hestenes-Stiefel) recurrence:
 *   q = A p, p'q                     (cpu_spmv_dots, each member its rows;
 *                                     its record's q'Wq is 0: unused there)
 *   barrier; every member: the tests and alpha = r'z / p'q from the
 *   ordered sums (cgc_scalars' order), so all take the same branch
 *   r -= alpha q; r'z, r'r            (cpu_cgc_update)
 *   barrier; beta = r_{k+1}'z_{k+1} / r_k'z_k
 *   x += alpha p; p = z + beta p      (cpu_cgc_direction)
 * Single-reduction recurrence (cg-single): the SpMV, one barrier, alpha and
 * beta = (alpha^2 q'Wq - r'z) / r'z (cgf_scalars), then one pass
 * (cpu_cgf_update). The caller (member 0, the solving thread) sums the new
 * r'z, r'r after the call and keeps them for the next iteration's test.
 * Every pass runs a member's rows block by block (CPU_WS_BLOCKS), leaving
 * each block's sums in part[block]; sums are then taken over blocks in
 * order. The mapping, the team and the ranges are cpu_ws.h's.
 */
#include "la_cgn.h"
#include "../la_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int la_cgn_usable(const la_ctx *la, const la_csr *A, cls_error *err)
{
    return cpu_ws_usable(la, A, err);
}

int la_cgn_create(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, const la_vec *dinv,
                  double stop2, la_cgf_recurrence recurrence, la_cgn *w, cls_error *err)
{
    memset(w, 0, sizeof *w);
    int rc = la_cgn_usable(la, A, err);
    if (rc)
        return rc;
    if ((rc = lai_check_len("la_cgn (b)", b->n, A->nrows, err)) ||
        (rc = lai_check_len("la_cgn (x)", x->n, A->nrows, err)) ||
        (dinv && (rc = lai_check_len("la_cgn (diagonal)", dinv->n, A->nrows, err))))
        return rc;
    const int64_t n = A->nrows;
    cpu_ws *ws = &w->ws;
    ws->la = la;
    w->stop2 = stop2;
    w->recurrence = recurrence;
    void *pb, *px, *pd = NULL;
    const size_t vb = (size_t)n * sizeof(double);
    if ((rc = cpu_ws_map_csr(ws, A, &w->A, err)) ||
        (rc = cpu_ws_map(ws, b->buf, vb, CL_MAP_READ, &pb, err)) ||
        (rc = cpu_ws_map(ws, x->buf, vb, CL_MAP_READ | CL_MAP_WRITE, &px, err)) ||
        (dinv && (rc = cpu_ws_map(ws, dinv->buf, vb, CL_MAP_READ, &pd, err))))
        goto fail;
    void *pr, *pp, *pq;
    if ((rc = la_vec_create(la, n, &w->vr, err)) || (rc = la_vec_create(la, n, &w->vp, err)) ||
        (rc = la_vec_create(la, n, &w->vq, err)) ||
        (rc = cpu_ws_map(ws, w->vr.buf, vb, CL_MAP_READ | CL_MAP_WRITE, &pr, err)) ||
        (rc = cpu_ws_map(ws, w->vp.buf, vb, CL_MAP_READ | CL_MAP_WRITE, &pp, err)) ||
        (rc = cpu_ws_map(ws, w->vq.buf, vb, CL_MAP_READ | CL_MAP_WRITE, &pq, err)))
        goto fail;
    w->r = pr;
    w->p = pp;
    w->q = pq;
    w->b = pb;
    w->x = px;
    w->d = pd;
    if ((rc = cpu_ws_rows(ws, w->A.rp, n, err)))
        goto fail;
    return CLS_OK;
fail:
    la_cgn_release(w);
    return rc;
}

enum { CGN_START, CGN_ITER };

typedef struct cgn_call {
    la_cgn *w;
    int op;
    /* what member 0 found (every member found the same) */
    int stop;
    double pq, qq, alpha, beta;
} cgn_call;

static void cgn_member(void *ctx, int id, int nt)
{
    (void)nt; /* = w->ws.nt */
    cgn_call *c = ctx;
    la_cgn *w = c->w;
    const int64_t lo = w->ws.bound[id], hi = w->ws.bound[id + 1];
    if (c->op == CGN_START) { /* r = b - A x; z = D^-1 r; p = z; r'z, r'r */
        CPU_WS_BLOCKS(&w->ws, lo, hi, blo, bhi, pt)
        cpu_residual_start(&w->A, w->b, w->x, w->r, w->p, w->d, blo, bhi, pt + 2);
        return;
    }
    const int classic = w->recurrence == LA_CGF_CLASSIC;
    CPU_WS_BLOCKS(&w->ws, lo, hi, blo, bhi, pt) /* q = A p; p'q (q'Wq) */
    cpu_spmv_dots(&w->A, w->p, w->q, w->d, !classic, blo, bhi, pt);
    cls_team_barrier(w->ws.team);
    const double pq = cpu_ws_sum(&w->ws, 0), qq = cpu_ws_sum(&w->ws, 1), rz = w->rz, rr = w->rr;
    double alpha, beta; /* every member, from the same sums: the same verdict */
    const int stop = la_cg_step(rr, rz, pq, qq, w->stop2, !classic, &alpha, &beta);
    if (id == 0) {
        c->stop = stop;
        c->pq = pq;
        c->qq = qq;
        c->alpha = alpha;
        c->beta = beta;
    }
    if (stop != LA_CGF_RUN)
        return;
    if (!classic) { /* x += alpha p; r -= alpha q; z = D^-1 r; p = z + beta p; r'z, r'r */
        CPU_WS_BLOCKS(&w->ws, lo, hi, blo, bhi, pt)
        cpu_cgf_update(alpha, beta, w->p, w->q, w->x, w->r, w->d, blo, bhi, pt + 2);
        return;
    }
    CPU_WS_BLOCKS(&w->ws, lo, hi, blo, bhi, pt) /* r -= alpha q; r'z, r'r */
    cpu_cgc_update(alpha, w->q, w->r, w->d, blo, bhi, pt + 2);
    cls_team_barrier(w->ws.team);
    beta = cpu_ws_sum(&w->ws, 2) / rz; /* beta = r_{k+1}'z_{k+1} / r_k'z_k */
    if (id == 0)
        c->beta = beta;
    /* x += alpha p; p = z + beta p */
    cpu_cgc_direction(alpha, beta, w->p, w->r, w->d, w->x, lo, hi);
}

int la_cgn_start(la_cgn *w, int64_t k, double *rr, double *rz, cls_error *err)
{
    (void)err;
    cgn_call c = {.w = w, .op = CGN_START};
    cls_team_run(w->ws.team, cgn_member, &c);
    w->rz = cpu_ws_sum(&w->ws, 2);
    w->rr = cpu_ws_sum(&w->ws, 3);
    w->k = k;
    w->stopped = 0;
    w->beta_prev = 0; /* a start's record says beta 0 (p = z) */
    w->enq = w->seen = 0;
    *rr = w->rr;
    *rz = w->rz;
    return CLS_OK;
}

int la_cgn_enqueue(la_cgn *w, cls_error *err)
{
    (void)err;
    la_cgf_record *rec = &w->ring[w->enq % LA_CGF_SLOTS];
    if (w->stopped) { /* as a stopped device: the iteration does nothing */
        *rec = w->ring[(w->enq + LA_CGF_SLOTS - 1) % LA_CGF_SLOTS];
        w->enq++;
        return CLS_OK;
    }
    cgn_call c = {.w = w, .op = CGN_ITER};
    cls_team_run(w->ws.team, cgn_member, &c);
    const int classic = w->recurrence == LA_CGF_CLASSIC;
    *rec = (la_cgf_record){.k = w->k,
                           .rr = w->rr,
                           .rz = w->rz,
                           .pq = c.pq,
                           .qq = c.qq,
                           .alpha = c.alpha,
                           .beta = classic ? w->beta_prev : c.beta,
                           .stop = c.stop};
    w->enq++;
    if (c.stop != LA_CGF_RUN) {
        w->stopped = 1;
        return CLS_OK;
    }
    w->rz = cpu_ws_sum(&w->ws, 2); /* the new r's r'z, r'r */
    w->rr = cpu_ws_sum(&w->ws, 3);
    w->beta_prev = c.beta;
    w->k++;
    return CLS_OK;
}

int la_cgn_next(la_cgn *w, la_cgf_record *rec, cls_error *err)
{
    if (w->seen >= w->enq)
        return cls_fail(err, CLS_EOTHER, "native CG: no iteration queued");
    *rec = w->ring[w->seen++ % LA_CGF_SLOTS];
    return CLS_OK;
}

int la_cgn_last(la_cgn *w, double *rr, double *rz, cls_error *err)
{
    (void)err;
    *rr = w->rr;
    *rz = w->rz;
    return CLS_OK;
}

void la_cgn_release(la_cgn *w)
{
    cpu_ws_release(&w->ws); /* the unmapping first: the vectors go back to the pool */
    la_vec_release(&w->vr);
    la_vec_release(&w->vp);
    la_vec_release(&w->vq);
    memset(w, 0, sizeof *w);
}
