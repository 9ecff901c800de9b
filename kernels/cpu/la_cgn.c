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
 * Every pass runs a member's rows block by block (CGN_BLOCKS), leaving each
 * block's sums in part[block]; sums are then taken over blocks in order.
 *
 * The team is the process's (la_cgn_team), held for the life of one
 * workspace; a second solve in the same process meanwhile (the daemon's
 * lanes) runs on its caller's thread alone rather than oversubscribing the
 * cores the first one uses.
 */
#include "la_cgn.h"
#include "../la_priv.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t cgn_lock = PTHREAD_MUTEX_INITIALIZER;  /* cgn_team creation */
static pthread_mutex_t cgn_inuse = PTHREAD_MUTEX_INITIALIZER; /* one workspace holds the team */
static cls_team *cgn_team, *cgn_solo;
static int cgn_size;

cls_team *la_cgn_team(void)
{
    pthread_mutex_lock(&cgn_lock);
    if (!cgn_team) {
        cgn_team = cls_team_create(cls_team_threads());
        cgn_size = cgn_team ? cls_team_size(cgn_team) : 0;
    }
    pthread_mutex_unlock(&cgn_lock);
    return cgn_team;
}

/* the team of one (the caller, no thread): small systems, and a solve that
 * finds the process's team held by another */
static cls_team *la_cgn_solo(void)
{
    pthread_mutex_lock(&cgn_lock);
    if (!cgn_solo)
        cgn_solo = cls_team_create(1);
    pthread_mutex_unlock(&cgn_lock);
    return cgn_solo;
}

int la_cgn_threads(void)
{
    pthread_mutex_lock(&cgn_lock);
    int n = cgn_size;
    pthread_mutex_unlock(&cgn_lock);
    return n;
}

int la_cgn_usable(const la_ctx *la, const la_csr *A, cls_error *err)
{
    if (!(la->ocl->dev.type & CL_DEVICE_TYPE_CPU))
        return cls_fail(err, CLS_EINPUT, "the device is not a CPU");
    if (la->prec != LA_DOUBLE)
        return cls_fail(err, CLS_EINPUT, "precision %s (the native loops are double)",
                        la_precision_str(la->prec));
    if (A->nrows != A->ncols || A->row_offset != 0 || !A->rowptr ||
        (A->nnz > 0 && (!A->col || !A->val)))
        return cls_fail(err, CLS_EINPUT, "the matrix is not one square CSR block");
    return CLS_OK;
}

/* maps one buffer for the workspace's life (bytes 0: nothing to map) */
static int cgn_map(la_cgn *w, cl_mem m, size_t bytes, cl_map_flags fl, void **out, cls_error *err)
{
    *out = NULL;
    if (!bytes)
        return CLS_OK;
    cl_int st;
    void *p = clEnqueueMapBuffer(w->la->ocl->queue, m, CL_TRUE, fl, 0, bytes, 0, NULL, NULL, &st);
    OCL_CHECK(err, st, "clEnqueueMapBuffer(native CG)");
    w->mem[w->nmap] = m;
    w->ptr[w->nmap++] = p;
    *out = p;
    return CLS_OK;
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
    w->la = la;
    w->stop2 = stop2;
    w->recurrence = recurrence;
    w->A.n = n;
    void *rp, *col = NULL, *val = NULL, *pb, *px, *pd = NULL;
    const size_t vb = (size_t)n * sizeof(double);
    if ((rc = cgn_map(w, A->rowptr, (size_t)(n + 1) * sizeof(int32_t), CL_MAP_READ, &rp, err)) ||
        (rc = cgn_map(w, A->col, (size_t)A->nnz * sizeof(int32_t), CL_MAP_READ, &col, err)) ||
        (rc = cgn_map(w, A->val, (size_t)A->nnz * sizeof(double), CL_MAP_READ, &val, err)) ||
        (rc = cgn_map(w, b->buf, vb, CL_MAP_READ, &pb, err)) ||
        (rc = cgn_map(w, x->buf, vb, CL_MAP_READ | CL_MAP_WRITE, &px, err)) ||
        (dinv && (rc = cgn_map(w, dinv->buf, vb, CL_MAP_READ, &pd, err))))
        goto fail;
    void *pr, *pp, *pq;
    if ((rc = la_vec_create(la, n, &w->vr, err)) || (rc = la_vec_create(la, n, &w->vp, err)) ||
        (rc = la_vec_create(la, n, &w->vq, err)) ||
        (rc = cgn_map(w, w->vr.buf, vb, CL_MAP_READ | CL_MAP_WRITE, &pr, err)) ||
        (rc = cgn_map(w, w->vp.buf, vb, CL_MAP_READ | CL_MAP_WRITE, &pp, err)) ||
        (rc = cgn_map(w, w->vq.buf, vb, CL_MAP_READ | CL_MAP_WRITE, &pq, err)))
        goto fail;
    w->r = pr;
    w->p = pp;
    w->q = pq;
    w->A.rp = rp;
    w->A.col = col;
    w->A.val = val;
    w->b = pb;
    w->x = px;
    w->d = pd;

    /* the process's team, unless the system is too small to share (a wake
     * costs more than its rows; the team is not even started for it) or
     * another solve holds it */
    const int want = cls_team_threads();
    cls_team *team = want > 1 && n >= 4096 * (int64_t)want ? la_cgn_team() : NULL;
    if (team && cls_team_size(team) > 1 && pthread_mutex_trylock(&cgn_inuse) == 0)
        w->team = team;
    else
        w->team = la_cgn_solo();
    if (!w->team) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory starting the native CG's threads");
        goto fail;
    }
    w->nt = cls_team_size(w->team); /* every member takes a range: the barriers count them all */
    w->nblk = (n + LA_CGN_BLOCK - 1) / LA_CGN_BLOCK;
    w->bound = malloc((size_t)(w->nt + 1) * sizeof *w->bound);
    w->part = calloc((size_t)(w->nblk ? w->nblk : 1), sizeof *w->part);
    if (!w->bound || !w->part) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the native CG's ranges");
        goto fail;
    }
    cpu_rows_split(w->A.rp, n, w->nt, w->bound);
    for (int t = 1; t < w->nt; t++) { /* whole blocks: the sums' order is the blocks' */
        int64_t b = (w->bound[t] + LA_CGN_BLOCK / 2) / LA_CGN_BLOCK * LA_CGN_BLOCK;
        b = b < w->bound[t - 1] ? w->bound[t - 1] : b > n ? n : b;
        w->bound[t] = b;
    }
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

/* the sum of component c over the blocks, in block order */
static double cgn_sum(const la_cgn *w, int c)
{
    double s = 0;
    for (int64_t b = 0; b < w->nblk; b++)
        s += w->part[b][c];
    return s;
}

/* the member's rows [lo, hi) (lo a whole block), block by block: the
 * statement after it runs on rows [blo, bhi) with pt = part[that block] */
#define CGN_BLOCKS(w, lo, hi, blo, bhi, pt)                                                        \
    for (int64_t blo = (lo), bhi = 0;                                                              \
         blo < (hi) && (bhi = blo + LA_CGN_BLOCK < (hi) ? blo + LA_CGN_BLOCK : (hi), 1);           \
         blo = bhi)                                                                                \
        for (double *pt = (w)->part[blo / LA_CGN_BLOCK]; pt; pt = NULL)

static void cgn_member(void *ctx, int id, int nt)
{
    (void)nt; /* = w->nt */
    cgn_call *c = ctx;
    la_cgn *w = c->w;
    const int64_t lo = w->bound[id], hi = w->bound[id + 1];
    if (c->op == CGN_START) { /* r = b - A x; z = D^-1 r; p = z; r'z, r'r */
        CGN_BLOCKS(w, lo, hi, blo, bhi, pt)
        cpu_residual_start(&w->A, w->b, w->x, w->r, w->p, w->d, blo, bhi, pt + 2);
        return;
    }
    const int classic = w->recurrence == LA_CGF_CLASSIC;
    CGN_BLOCKS(w, lo, hi, blo, bhi, pt) /* q = A p; p'q (q'Wq) */
    cpu_spmv_dots(&w->A, w->p, w->q, w->d, !classic, blo, bhi, pt);
    cls_team_barrier(w->team);
    const double pq = cgn_sum(w, 0), qq = cgn_sum(w, 1), rz = w->rz, rr = w->rr;
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
        CGN_BLOCKS(w, lo, hi, blo, bhi, pt)
        cpu_cgf_update(alpha, beta, w->p, w->q, w->x, w->r, w->d, blo, bhi, pt + 2);
        return;
    }
    CGN_BLOCKS(w, lo, hi, blo, bhi, pt) /* r -= alpha q; r'z, r'r */
    cpu_cgc_update(alpha, w->q, w->r, w->d, blo, bhi, pt + 2);
    cls_team_barrier(w->team);
    beta = cgn_sum(w, 2) / rz; /* beta = r_{k+1}'z_{k+1} / r_k'z_k */
    if (id == 0)
        c->beta = beta;
    /* x += alpha p; p = z + beta p */
    cpu_cgc_direction(alpha, beta, w->p, w->r, w->d, w->x, lo, hi);
}

int la_cgn_start(la_cgn *w, int64_t k, double *rr, double *rz, cls_error *err)
{
    (void)err;
    cgn_call c = {.w = w, .op = CGN_START};
    cls_team_run(w->team, cgn_member, &c);
    w->rz = cgn_sum(w, 2);
    w->rr = cgn_sum(w, 3);
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
    cls_team_run(w->team, cgn_member, &c);
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
    w->rz = cgn_sum(w, 2); /* the new r's r'z, r'r */
    w->rr = cgn_sum(w, 3);
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
    if (w->la) {
        for (int i = 0; i < w->nmap; i++)
            clEnqueueUnmapMemObject(w->la->ocl->queue, w->mem[i], w->ptr[i], 0, NULL, NULL);
        if (w->nmap)
            clFinish(w->la->ocl->queue);
    }
    if (w->team && w->team != cgn_solo)
        pthread_mutex_unlock(&cgn_inuse);
    la_vec_release(&w->vr); /* after the unmapping: back to the pool */
    la_vec_release(&w->vp);
    la_vec_release(&w->vq);
    free(w->bound);
    free(w->part);
    memset(w, 0, sizeof *w);
}
