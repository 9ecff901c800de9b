/*
 * la_pcn.c: the native preconditioned CG workspace (design in la_pcn.h).
 *
 * With u = M^-1 r and w = A u (Ghysels and Vanroose, Parallel Computing 40
 * (2014), Alg. 2; PETSc's KSPCG -ksp_cg_single_reduction):
 *   gamma = r'u, rr = r'r                      la_pcn_dots
 *   w = A u, delta = u'w                       the enqueue's first pass
 *   beta = gamma / gamma_old (0 at a start); p'Ap = delta - beta gamma / alpha_old
 *   alpha = gamma / p'Ap                       every member, from the same sums
 *   p = u + beta p; s = w + beta s; x += alpha p; r -= alpha s   the second pass
 * The tests are pcgf_scalars', in its order, with its stop codes (la_pcm.h).
 */
#include "la_pcn.h"
#include "../la_pcm.h"
#include "../la_priv.h"

#include <math.h>
#include <string.h>

int la_pcn_create(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, double stop2, la_pcn *w,
                  cls_error *err)
{
    memset(w, 0, sizeof *w);
    int rc = cpu_ws_usable(la, A, err);
    if (rc)
        return rc;
    if ((rc = lai_check_len("la_pcn (b)", b->n, A->nrows, err)) ||
        (rc = lai_check_len("la_pcn (x)", x->n, A->nrows, err)))
        return rc;
    const int64_t n = A->nrows;
    cpu_ws *ws = &w->ws;
    ws->la = la;
    w->stop2 = stop2;
    void *pb, *px;
    const size_t vb = (size_t)n * sizeof(double);
    if ((rc = cpu_ws_map_csr(ws, A, &w->A, err)) ||
        (rc = cpu_ws_map(ws, b->buf, vb, CL_MAP_READ, &pb, err)) ||
        (rc = cpu_ws_map(ws, x->buf, vb, CL_MAP_READ | CL_MAP_WRITE, &px, err)))
        goto fail;
    la_vec *vs[5] = {&w->vr, &w->vu, &w->vw, &w->vp, &w->vs};
    double **hs[5] = {&w->r, &w->u, &w->w, &w->p, &w->s};
    for (int i = 0; i < 5; i++) {
        void *h;
        if ((rc = la_vec_create(la, n, vs[i], err)) ||
            (rc = cpu_ws_map(ws, vs[i]->buf, vb, CL_MAP_READ | CL_MAP_WRITE, &h, err)))
            goto fail;
        *hs[i] = h;
    }
    w->b = pb;
    w->x = px;
    if ((rc = cpu_ws_rows(ws, w->A.rp, n, err)))
        goto fail;
    return CLS_OK;
fail:
    la_pcn_release(w);
    return rc;
}

enum { PCN_START, PCN_DOTS, PCN_ITER };

typedef struct pcn_call {
    la_pcn *w;
    int op;
    /* what member 0 found (every member found the same) */
    int stop;
    double delta, pap, alpha, beta;
} pcn_call;

/* pcgf_scalars' tests and scalars from the sums */
static int pcn_scalars(const la_pcn *w, double delta, double *alpha, double *beta, double *pap)
{
    const double gamma = w->gamma, rr = w->rr;
    *alpha = *beta = *pap = 0;
    if (!isfinite(rr) || !isfinite(gamma))
        return LA_PCM_NANORINF;
    if (rr <= w->stop2) /* ||r_k|| <= tol ||b|| */
        return LA_PCM_CONVERGED;
    if (!isfinite(delta))
        return LA_PCM_NANORINF;
    if (!(gamma > 0)) /* r'M^-1 r <= 0 */
        return LA_PCM_PC_INDEFINITE;
    *beta = w->g0 > 0 ? gamma / w->g0 : 0;                    /* gamma / gamma_old */
    *pap = w->g0 > 0 ? delta - *beta * gamma / w->a0 : delta; /* p'Ap */
    if (!(*pap > 0))
        return LA_PCM_INDEFINITE;
    *alpha = gamma / *pap; /* alpha = gamma / p'Ap */
    return LA_PCM_RUN;
}

static void pcn_member(void *ctx, int id, int nt)
{
    (void)nt;
    pcn_call *c = ctx;
    la_pcn *w = c->w;
    const int64_t lo = w->ws.bound[id], hi = w->ws.bound[id + 1];
    if (c->op == PCN_START) { /* r = b - A x; p = s = 0 */
        cpu_pcg_start(&w->A, w->b, w->x, w->r, w->p, w->s, lo, hi);
        return;
    }
    if (c->op == PCN_DOTS) { /* r'u, r'r */
        CPU_WS_BLOCKS(&w->ws, lo, hi, blo, bhi, pt)
        cpu_pcg_dots(w->r, w->u, blo, bhi, pt + 2);
        return;
    }
    CPU_WS_BLOCKS(&w->ws, lo, hi, blo, bhi, pt) /* w = A u; u'w */
    cpu_spmv_dots(&w->A, w->u, w->w, NULL, 0, blo, bhi, pt);
    cls_team_barrier(w->ws.team);
    const double delta = cpu_ws_sum(&w->ws, 0);
    double alpha, beta, pap; /* every member, from the same sums: the same verdict */
    const int stop = pcn_scalars(w, delta, &alpha, &beta, &pap);
    if (id == 0) {
        c->stop = stop;
        c->delta = delta;
        c->alpha = alpha;
        c->beta = beta;
        c->pap = pap;
    }
    if (stop == LA_PCM_RUN)
        cpu_pcg_update(alpha, beta, w->u, w->w, w->p, w->s, w->x, w->r, lo, hi);
}

int la_pcn_restart(la_pcn *w, int64_t k, cls_error *err)
{
    (void)err;
    pcn_call c = {.w = w, .op = PCN_START};
    cls_team_run(w->ws.team, pcn_member, &c);
    w->k = k;
    w->stopped = 0;
    w->g0 = w->a0 = 0; /* the next beta is 0 */
    w->enq = w->seen = 0;
    return CLS_OK;
}

int la_pcn_dots(la_pcn *w, cls_error *err)
{
    (void)err;
    if (w->stopped)
        return CLS_OK; /* as on the device: nothing moves after a stop */
    pcn_call c = {.w = w, .op = PCN_DOTS};
    cls_team_run(w->ws.team, pcn_member, &c);
    w->gamma = cpu_ws_sum(&w->ws, 2);
    w->rr = cpu_ws_sum(&w->ws, 3);
    return CLS_OK;
}

int la_pcn_enqueue(la_pcn *w, cls_error *err)
{
    (void)err;
    la_cgf_record *rec = &w->ring[w->enq % LA_CGF_SLOTS];
    if (w->stopped) { /* as a stopped device: the iteration does nothing */
        *rec = w->ring[(w->enq + LA_CGF_SLOTS - 1) % LA_CGF_SLOTS];
        w->enq++;
        return CLS_OK;
    }
    pcn_call c = {.w = w, .op = PCN_ITER};
    cls_team_run(w->ws.team, pcn_member, &c);
    *rec = (la_cgf_record){.k = w->k,
                           .rr = w->rr,
                           .rz = w->gamma,
                           .pq = c.pap,
                           .qq = c.delta,
                           .alpha = c.alpha,
                           .beta = c.beta,
                           .stop = c.stop};
    w->enq++;
    if (c.stop != LA_PCM_RUN) {
        w->stopped = 1;
        return CLS_OK;
    }
    w->g0 = w->gamma; /* the next iteration's gamma_{k-1}, alpha_{k-1} */
    w->a0 = c.alpha;
    w->k++;
    return CLS_OK;
}

int la_pcn_next(la_pcn *w, la_cgf_record *rec, cls_error *err)
{
    if (w->seen >= w->enq)
        return cls_fail(err, CLS_EOTHER, "native preconditioned CG: no iteration queued");
    *rec = w->ring[w->seen++ % LA_CGF_SLOTS];
    return CLS_OK;
}

int la_pcn_last(la_pcn *w, double *rr, double *ru, cls_error *err)
{
    (void)err;
    *rr = w->rr;
    *ru = w->gamma;
    return CLS_OK;
}

void la_pcn_release(la_pcn *w)
{
    cpu_ws_release(&w->ws); /* the unmapping first: the vectors go back to the pool */
    la_vec *vs[5] = {&w->vr, &w->vu, &w->vw, &w->vp, &w->vs};
    for (int i = 0; i < 5; i++)
        la_vec_release(vs[i]);
    memset(w, 0, sizeof *w);
}
