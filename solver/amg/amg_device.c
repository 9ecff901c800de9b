/*
 * amg_device.c: the hierarchy on one device and the V-cycle there.
 *
 * amg_upload copies every level's A, P and R = P' as la_csr (each in the
 * SpMV format la_csr_upload picks for it: long coarse rows get CSR-vector
 * or CSR-Adaptive, the fine level what the solve itself would use), the
 * smoother's inverse diagonal, and the coarsest level's dense inverse, and
 * reserves the V-cycle's vectors (x, b on coarse levels; r, d, q on every
 * level), so that amg_apply allocates nothing. la's own configuration is
 * saved and restored around the uploads (la_csr_upload tunes la->cfg for
 * the last matrix it saw, and the solve's matrix is not ours).
 *
 * amg_apply is the V-cycle of amg_ref.c (its comment has the algorithm),
 * kernel by kernel; per level with Chebyshev of degree m: 2m SpMVs of A_l
 * (pre-smoothing's m - 1 and its residual, post-smoothing's residual and
 * m - 1), one SpMV with R and one with P, 2m + 1 fused vector updates.
 * Nothing is read back: the caller's next reduction orders it.
 */
#include "amg.h"
#include "amg_priv.h"

#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"
#include "../../kernels/la_amg.h"

void amg_device_release(amg_device *d)
{
    if (!d)
        return;
    for (int l = 0; l < AMG_MAX_LEVELS; l++) {
        dev_level *L = &d->lev[l];
        la_csr_release(&L->A);
        la_csr_release(&L->P);
        la_csr_release(&L->R);
        if (L->agg)
            clReleaseMemObject(L->agg);
        la_vec *vs[] = {&L->dinv, &L->x, &L->b, &L->r, &L->d, &L->q};
        for (size_t i = 0; i < sizeof vs / sizeof *vs; i++)
            if (vs[i]->buf)
                la_vec_release(vs[i]);
        for (int c = 0; c < 8; c++) {
            la_vec *cs[] = {&L->cx[c], &L->cb[c], &L->cr[c], &L->cd[c], &L->cq[c]};
            for (size_t i = 0; i < 5; i++)
                if (cs[i]->buf)
                    la_vec_release(cs[i]);
        }
        la_vec *bs[] = {&L->bx, &L->bb, &L->br, &L->bd, &L->bq};
        for (size_t i = 0; i < 5; i++)
            if (bs[i]->buf)
                la_vec_release(bs[i]);
    }
    if (d->coarse_inv)
        clReleaseMemObject(d->coarse_inv);
    if (d->have_sk)
        la_spmm_release(&d->sk);
    la_amg_release(&d->k);
    free(d);
}

/* every vector of the hierarchy (NULL-terminated walk over the levels) */
static void device_vectors_unpool(amg_device *d)
{
    for (int l = 0; l < AMG_MAX_LEVELS; l++) {
        dev_level *L = &d->lev[l];
        la_vec *vs[] = {&L->dinv, &L->x,  &L->b,  &L->r,  &L->d, &L->q,
                        &L->bx,   &L->bb, &L->br, &L->bd, &L->bq};
        for (size_t i = 0; i < sizeof vs / sizeof *vs; i++)
            vs[i]->pool = NULL;
        for (int c = 0; c < 8; c++) {
            L->cx[c].pool = L->cb[c].pool = L->cr[c].pool = NULL;
            L->cd[c].pool = L->cq[c].pool = NULL;
        }
    }
}

int amg_device_detach(amg_device *d)
{
    if (!d)
        return 0;
    /* a vector taken from la's pool would go back to that la_ctx at its
     * release; the solve's la_ctx moves (dwarm) and dies before the
     * hierarchy does, so the hierarchy owns its buffers outright */
    device_vectors_unpool(d);
    d->sk.la = NULL; /* amg_apply_block sets it from its caller's la */
    dev_level *L0 = &d->lev[0];
    const int borrowed = L0->Ause && L0->Ause != &L0->A;
    if (borrowed)
        L0->Ause = NULL; /* the solve's matrix: amg_device_bind_fine gives the next one */
    d->fine_borrowed = borrowed;
    return borrowed;
}

int amg_device_bind_fine(amg_device *d, const la_csr *dA0, cls_error *err)
{
    dev_level *L0 = &d->lev[0];
    if (!d->fine_borrowed)
        return dA0 ? cls_fail(err, CLS_EOTHER,
                              "amg: the kept hierarchy has its own fine matrix, and one was given")
                   : CLS_OK;
    if (!dA0 || dA0->nrows != L0->n || dA0->row_offset != 0)
        return cls_fail(err, CLS_EOTHER,
                        "amg: the kept hierarchy's fine level has %lld rows, and the matrix "
                        "given has %lld",
                        (long long)L0->n, dA0 ? (long long)dA0->nrows : -1LL);
    L0->Ause = dA0;
    return CLS_OK;
}

void amg_device_take_aggregates(amg_device *d, amg_dagg *g)
{
    memset(g, 0, sizeof *g);
    for (int l = 0; d && l < AMG_MAX_LEVELS && d->lev[l].agg; l++) {
        g->n[l] = d->lev[l].n;
        g->naggs[l] = d->lev[l].naggs;
        g->agg[l] = d->lev[l].agg;
        d->lev[l].agg = NULL;
        g->levels = l + 1;
    }
}

void amg_dagg_release(amg_dagg *g)
{
    for (int l = 0; l < AMG_MAX_LEVELS; l++)
        if (g->agg[l])
            clReleaseMemObject(g->agg[l]);
    memset(g, 0, sizeof *g);
}

int amg_device_is_rebuilt(const amg_device *d)
{
    return d ? d->rebuilt : 0;
}

double amg_device_upload_seconds(const amg_device *d)
{
    return d ? d->upload_s : 0.0;
}

int amg_upload_level(amg_device *d, const amg_hierarchy *h, int l, int ld, la_ctx *la,
                     const la_csr *dA0, la_spmv_variant fmt, cls_error *err)
{
    const amg_level *H = &h->lev[l];
    dev_level *L = &d->lev[ld];
    int last = l == h->nlevels - 1, smooth = !last || !h->coarse_direct;
    int rc = CLS_OK;
    L->n = H->A.nrows;
    if (l == 0 && dA0) {
        L->Ause = dA0;
    } else if (smooth) { /* a directly solved coarsest level needs no A */
        if ((rc = la_csr_upload(la, &H->A, fmt, &L->A, err)))
            return rc;
        L->Ause = &L->A;
    }
    if (!last && ((rc = la_csr_upload(la, &H->P, fmt, &L->P, err)) ||
                  (rc = la_csr_upload(la, &H->R, fmt, &L->R, err))))
        return rc;
    if (ld > 0 &&
        ((rc = la_vec_create(la, L->n, &L->x, err)) || (rc = la_vec_create(la, L->n, &L->b, err))))
        return rc;
    if (smooth) {
        if ((rc = la_vec_create(la, L->n, &L->dinv, err)) ||
            (rc = la_vec_upload(la, &L->dinv, H->dinv, err)) ||
            (rc = la_vec_create(la, L->n, &L->r, err)) ||
            (rc = la_vec_create(la, L->n, &L->d, err)) ||
            (rc = la_vec_create(la, L->n, &L->q, err)))
            return rc;
        amg_cheb_coeffs(&h->opt, H->lmax, &L->cheb);
    }
    if (last && h->coarse_direct)
        rc = la_amg_dense_upload(la, h->coarse_inv, L->n, &d->coarse_inv, err);
    return rc;
}

int amg_upload_with(amg_hierarchy *h, la_ctx *la, const la_csr *dA0, la_spmv_variant format,
                    amg_device **out, cls_error *err)
{
    *out = NULL;
    double t0 = cls_now();
    if (dA0 && (dA0->nrows != h->lev[0].A.nrows || dA0->ncols != h->lev[0].A.ncols ||
                dA0->row_offset != 0))
        return cls_fail(err, CLS_EOTHER,
                        "amg_upload: the device matrix (%lld x %lld, row offset %lld) is not the "
                        "hierarchy's level 0 (%lld x %lld)",
                        (long long)dA0->nrows, (long long)dA0->ncols, (long long)dA0->row_offset,
                        (long long)h->lev[0].A.nrows, (long long)h->lev[0].A.ncols);
    amg_device *d = calloc(1, sizeof *d);
    if (!d)
        return cls_fail(err, CLS_EOTHER, "amg_upload: out of memory");
    d->nlevels = h->nlevels;
    d->smoother = h->opt.smoother;
    d->degree = h->opt.degree;
    d->coarse_direct = h->coarse_direct;
    la_config saved = la->cfg;
    size_t saved_groups = la->ngroups;
    int rc = la_amg_init(la, &d->k, err);
    for (int l = 0; !rc && l < h->nlevels; l++)
        rc = amg_upload_level(d, h, l, l, la, dA0, format, err);
    la->cfg = saved;
    la->ngroups = saved_groups;
    if (!rc)
        rc = la_finish(la, err);
    if (rc) {
        amg_device_release(d);
        return rc;
    }
    d->upload_s = cls_now() - t0;
    *out = d;
    return CLS_OK;
}

int amg_upload_fine(amg_hierarchy *h, la_ctx *la, const la_csr *dA0, amg_device **out,
                    cls_error *err)
{
    return amg_upload_with(h, la, dA0, LA_SPMV_AUTO, out, err);
}

int amg_upload(amg_hierarchy *h, la_ctx *la, amg_device **out, cls_error *err)
{
    return amg_upload_with(h, la, NULL, LA_SPMV_AUTO, out, err);
}

/* The vectors one V-cycle works on at level l: the one-column set (kw 1)
 * or the row-major blocks of kw columns (amg_apply_block; the updates of
 * la_amg.h take either, D^-1's entry i serving a block's row i) */
typedef struct lvecs {
    la_vec *x, *b, *r, *d, *q;
} lvecs;

static lvecs level_vecs(dev_level *L, int kw)
{
    if (kw == 1)
        return (lvecs){&L->x, &L->b, &L->r, &L->d, &L->q};
    return (lvecs){&L->bx, &L->bb, &L->br, &L->bd, &L->bq};
}

/* y = A x: an SpMV, or block CG's k-wide SpMM on row-major blocks */
static int lmul(amg_device *dv, la_ctx *la, const la_csr *A, int kw, const la_vec *x, la_vec *y,
                cls_error *err)
{
    return kw == 1 ? la_spmv(la, A, x, y, err) : la_spmm_rm(&dv->sk, A, kw, x, y, err);
}

/* the d and q blocks trade places: the fused step wrote d' into q (d was
 * the block its rows gathered) */
static void swap_dq(const lvecs *v)
{
    la_vec t = *v->d;
    *v->d = *v->q;
    *v->q = t;
}

/* dev_smooth's Chebyshev on row-major blocks with each SpMM and the update
 * after it in one pass (la_amg_smv_*, amg_spmm.cl): t = A v stays in
 * registers, and the x += d of one step is made by the next step's pass,
 * which reads d anyway. Blocks moved at the fine level with degree 2,
 * pre-smoothing (zero) then post-smoothing, against dev_smooth's: 8 + 6
 * (+ 3 for r) against 11 + 3 (+ 5), and 4 + 5 against 8 + 9. */
static int dev_smooth_fused(amg_device *dv, la_ctx *la, int l, int kw, const la_vec *b, la_vec *x,
                            int zero, int want_r, cls_error *err)
{
    dev_level *L = &dv->lev[l];
    const la_csr *A = L->Ause;
    const lvecs v = level_vecs(L, kw);
    const amg_cheb *c = &L->cheb;
    const int m = c->degree;
    la_amg *K = &dv->k;
    int rc, pending;   /* pending: x += d (or x = d from zero) left to the next pass */
    const la_vec *rin; /* the residual the next step subtracts from: b or r */
    if (zero) {        /* d = c0 D^-1 b; r = b and x = d implied */
        if ((rc = la_amg_cheb_first(la, K, m > 1 ? 2 : 1, b, v.q, &L->dinv, c->c0, v.r, v.d, x,
                                    err)))
            return rc;
        pending = m > 1 ? 3 : 0, rin = m > 1 ? b : v.r;
    } else { /* r = b - A x ; d = c0 D^-1 r ; x += d left pending */
        if ((rc = la_amg_smv_cheb(la, K, A, kw, x, b, &L->dinv, 0.0, c->c0, v.d, v.r, v.d, 0, x,
                                  err)))
            return rc;
        pending = 2, rin = v.r;
        if (m == 1 && (rc = la_axpy(la, 1.0, v.d, x, err)))
            return rc;
    }
    for (int k = 1; k < m; k++) {             /* r -= A d ; d = c1 d + c2 D^-1 r ; x += d */
        const int keep = k < m - 1 || want_r; /* r and d read after this step */
        const int xmode = pending ? pending : 1;
        if ((rc = la_amg_smv_cheb(la, K, A, kw, v.d, rin, &L->dinv, c->c1[k], c->c2[k], v.d,
                                  keep ? v.r : NULL, keep ? v.q : NULL, xmode, x, err)))
            return rc;
        if (keep)
            swap_dq(&v);
        pending = 0, rin = v.r;
    }
    if (want_r && (rc = la_amg_smv_axpy(la, K, A, kw, v.d, -1.0, v.r, v.r, err))) /* r -= A d */
        return rc;
    return CLS_OK;
}

/* 1 unless CLSOLVE_AMG_FUSE=0 keeps the row-major V-cycle's SpMMs and
 * updates apart (the twin the tests hold the fused passes to) */
static int fuse_blocks(void)
{
    const char *e = getenv("CLSOLVE_AMG_FUSE");
    return !(e && strcmp(e, "0") == 0);
}

/* x = S(b, x) on level l (zero: from x = 0); want_r: r = b - A x after */
static int dev_smooth(amg_device *dv, la_ctx *la, int l, int kw, const la_vec *b, la_vec *x,
                      int zero, int want_r, cls_error *err)
{
    dev_level *L = &dv->lev[l];
    const la_csr *A = L->Ause;
    const lvecs v = level_vecs(L, kw);
    int rc;
    if (dv->smoother == AMG_SMOOTHER_CHEBYSHEV && kw > 1 && dv->fuse)
        return dev_smooth_fused(dv, la, l, kw, b, x, zero, want_r, err);
    if (dv->smoother == AMG_SMOOTHER_CHEBYSHEV) {
        const amg_cheb *c = &L->cheb;
        if ((!zero && (rc = lmul(dv, la, A, kw, x, v.q, err))) ||
            (rc = la_amg_cheb_first(la, &dv->k, zero, b, v.q, &L->dinv, c->c0, v.r, v.d, x, err)))
            return rc;
        for (int k = 1; k < c->degree; k++)
            if ((rc = lmul(dv, la, A, kw, v.d, v.q, err)) ||
                (rc = la_amg_cheb_next(la, &dv->k, v.q, &L->dinv, c->c1[k], c->c2[k], v.r, v.d, x,
                                       err)))
                return rc;
        if (want_r && ((rc = lmul(dv, la, A, kw, v.d, v.q, err)) || /* r -= A d */
                       (rc = la_axpy(la, -1.0, v.q, v.r, err))))
            return rc;
        return CLS_OK;
    }
    for (int s = 0; s < dv->degree; s++) { /* l1-Jacobi */
        if (!(zero && s == 0) && (rc = lmul(dv, la, A, kw, x, v.q, err)))
            return rc;
        if ((rc = la_amg_jacobi(la, &dv->k, zero && s == 0, b, v.q, &L->dinv, x, err)))
            return rc;
    }
    if (want_r && ((rc = lmul(dv, la, A, kw, x, v.q, err)) ||
                   (rc = la_amg_residual(la, &dv->k, b, v.q, v.r, err))))
        return rc;
    return CLS_OK;
}

static int dev_vcycle(amg_device *dv, la_ctx *la, int l, int kw, const la_vec *b, la_vec *x,
                      cls_error *err)
{
    dev_level *L = &dv->lev[l];
    int rc;
    if (l == dv->nlevels - 1) {
        if (dv->coarse_direct)
            return la_amg_dense(la, &dv->k, dv->coarse_inv, L->n, b, x, err);
        return dev_smooth(dv, la, l, kw, b, x, 1, 0, err);
    }
    const lvecs v = level_vecs(L, kw), nv = level_vecs(&dv->lev[l + 1], kw);
    const int fused = kw > 1 && dv->fuse;
    if ((rc = dev_smooth(dv, la, l, kw, b, x, 1, 1, err)) ||
        (rc = fused ? la_amg_smv_store(la, &dv->k, &L->R, kw, v.r, nv.b, err) /* b_c = R r */
                    : lmul(dv, la, &L->R, kw, v.r, nv.b, err)) ||
        (rc = dev_vcycle(dv, la, l + 1, kw, nv.b, nv.x, err)))
        return rc;
    if (fused)
        rc = la_amg_smv_axpy(la, &dv->k, &L->P, kw, nv.x, 1.0, x, x, err); /* x += P x_c */
    else if (!(rc = lmul(dv, la, &L->P, kw, nv.x, v.q, err)))
        rc = la_axpy(la, 1.0, v.q, x, err);
    if (rc)
        return rc;
    return dev_smooth(dv, la, l, kw, b, x, 0, 0, err);
}

int amg_apply(amg_device *d, la_ctx *la, const la_vec *r, la_vec *z, cls_error *err)
{
    int64_t n = d->lev[0].n;
    if (r->n != n || z->n != n)
        return cls_fail(err, CLS_EOTHER, "amg_apply: vectors of %lld and %lld entries, matrix %lld",
                        (long long)r->n, (long long)z->n, (long long)n);
    if (r->buf == z->buf)
        return cls_fail(err, CLS_EOTHER, "amg_apply: r and z must be different vectors");
    if (n == 0)
        return CLS_OK;
    return dev_vcycle(d, la, 0, 1, r, z, err);
}

/* ------------------------------------------------- k columns at once */

/* the vectors of column c on level L (column 0: the one-column set) */
typedef struct bvecs {
    la_vec *x[8], *b[8], *r[8], *d[8], *q[8];
} bvecs;

static void level_cols(dev_level *L, int k, bvecs *v)
{
    for (int c = 0; c < k; c++) {
        v->x[c] = c ? &L->cx[c] : &L->x;
        v->b[c] = c ? &L->cb[c] : &L->b;
        v->r[c] = c ? &L->cr[c] : &L->r;
        v->d[c] = c ? &L->cd[c] : &L->d;
        v->q[c] = c ? &L->cq[c] : &L->q;
    }
}

/* the extra columns' vectors of every level, up to k */
static int block_vectors(amg_device *dv, la_ctx *la, int k, cls_error *err)
{
    int rc;
    for (int l = 0; l < dv->nlevels; l++) {
        dev_level *L = &dv->lev[l];
        int last = l == dv->nlevels - 1, smooth = !last || !dv->coarse_direct;
        for (int c = L->ncols > 1 ? L->ncols : 1; c < k; c++) {
            if (l > 0 && ((rc = la_vec_create(la, L->n, &L->cx[c], err)) ||
                          (rc = la_vec_create(la, L->n, &L->cb[c], err))))
                return rc;
            if (smooth && ((rc = la_vec_create(la, L->n, &L->cr[c], err)) ||
                           (rc = la_vec_create(la, L->n, &L->cd[c], err)) ||
                           (rc = la_vec_create(la, L->n, &L->cq[c], err))))
                return rc;
        }
        if (k > L->ncols)
            L->ncols = k;
    }
    return CLS_OK;
}

/* Y = A X over k columns (the const casts: la_spmm's signature) */
static int bspmm(amg_device *dv, const la_csr *A, int k, la_vec *const *x, la_vec *const *y,
                 cls_error *err)
{
    return la_spmm(&dv->sk, A, k, (const la_vec *const *)x, y, err);
}

/* dev_smooth on k columns: the SpMVs as one SpMM, the updates per column */
static int bsmooth(amg_device *dv, la_ctx *la, int l, int k, la_vec *const *b, la_vec *const *x,
                   int zero, int want_r, cls_error *err)
{
    dev_level *L = &dv->lev[l];
    const la_csr *A = L->Ause;
    bvecs v;
    level_cols(L, k, &v);
    int rc;
    if (dv->smoother == AMG_SMOOTHER_CHEBYSHEV) {
        const amg_cheb *ch = &L->cheb;
        if (!zero && (rc = bspmm(dv, A, k, x, v.q, err)))
            return rc;
        for (int c = 0; c < k; c++)
            if ((rc = la_amg_cheb_first(la, &dv->k, zero, b[c], v.q[c], &L->dinv, ch->c0, v.r[c],
                                        v.d[c], x[c], err)))
                return rc;
        for (int j = 1; j < ch->degree; j++) {
            if ((rc = bspmm(dv, A, k, v.d, v.q, err)))
                return rc;
            for (int c = 0; c < k; c++)
                if ((rc = la_amg_cheb_next(la, &dv->k, v.q[c], &L->dinv, ch->c1[j], ch->c2[j],
                                           v.r[c], v.d[c], x[c], err)))
                    return rc;
        }
        if (want_r) { /* r -= A d */
            if ((rc = bspmm(dv, A, k, v.d, v.q, err)))
                return rc;
            for (int c = 0; c < k; c++)
                if ((rc = la_axpy(la, -1.0, v.q[c], v.r[c], err)))
                    return rc;
        }
        return CLS_OK;
    }
    for (int sw = 0; sw < dv->degree; sw++) { /* l1-Jacobi */
        int z0 = zero && sw == 0;
        if (!z0 && (rc = bspmm(dv, A, k, x, v.q, err)))
            return rc;
        for (int c = 0; c < k; c++)
            if ((rc = la_amg_jacobi(la, &dv->k, z0, b[c], v.q[c], &L->dinv, x[c], err)))
                return rc;
    }
    if (want_r) {
        if ((rc = bspmm(dv, A, k, x, v.q, err)))
            return rc;
        for (int c = 0; c < k; c++)
            if ((rc = la_amg_residual(la, &dv->k, b[c], v.q[c], v.r[c], err)))
                return rc;
    }
    return CLS_OK;
}

static int bvcycle(amg_device *dv, la_ctx *la, int l, int k, la_vec *const *b, la_vec *const *x,
                   cls_error *err)
{
    dev_level *L = &dv->lev[l];
    int rc;
    if (l == dv->nlevels - 1) {
        if (!dv->coarse_direct)
            return bsmooth(dv, la, l, k, b, x, 1, 0, err);
        for (int c = 0; c < k; c++)
            if ((rc = la_amg_dense(la, &dv->k, dv->coarse_inv, L->n, b[c], x[c], err)))
                return rc;
        return CLS_OK;
    }
    dev_level *N = &dv->lev[l + 1];
    bvecs v, nv;
    level_cols(L, k, &v);
    level_cols(N, k, &nv);
    if ((rc = bsmooth(dv, la, l, k, b, x, 1, 1, err)) ||
        (rc = bspmm(dv, &L->R, k, v.r, nv.b, err)) || /* b_c = R r */
        (rc = bvcycle(dv, la, l + 1, k, nv.b, nv.x, err)) ||
        (rc = bspmm(dv, &L->P, k, nv.x, v.q, err))) /* x += P x_c */
        return rc;
    for (int c = 0; c < k; c++)
        if ((rc = la_axpy(la, 1.0, v.q[c], x[c], err)))
            return rc;
    return bsmooth(dv, la, l, k, b, x, 0, 0, err);
}

/* ------------------------------- k columns as one row-major block */

/* Every level's blocks of kw columns (released and made again for another
 * width) */
static int rm_vectors(amg_device *dv, la_ctx *la, int kw, cls_error *err)
{
    int rc;
    for (int l = 0; l < dv->nlevels; l++) {
        dev_level *L = &dv->lev[l];
        if (L->bkw == kw)
            continue;
        la_vec *bs[] = {&L->bx, &L->bb, &L->br, &L->bd, &L->bq};
        for (size_t i = 0; i < 5; i++)
            if (bs[i]->buf)
                la_vec_release(bs[i]);
        L->bkw = 0;
        const int last = l == dv->nlevels - 1, smooth = !last || !dv->coarse_direct;
        const int64_t m = L->n * kw;
        if ((rc = la_vec_create(la, m, &L->bx, err)) || (rc = la_vec_create(la, m, &L->bb, err)))
            return rc;
        if (smooth &&
            ((rc = la_vec_create(la, m, &L->br, err)) || (rc = la_vec_create(la, m, &L->bd, err)) ||
             (rc = la_vec_create(la, m, &L->bq, err))))
            return rc;
        L->bkw = kw;
    }
    return CLS_OK;
}

/* 1 when every level's operators have the k-wide SpMM (not BCSR) and the
 * device is a GPU, or CLSOLVE_AMG_BLOCK=rows asks for it; =columns keeps
 * the column-major twin. On PoCL's CPU device the blocks measured slower
 * (poisson3d 64, 8 columns: 1.12-1.52 s against 0.95-1.23; on an H200 at
 * 256 0.49 s against 0.84) */
static int rm_usable(const amg_device *dv, const la_ctx *la)
{
    const char *e = getenv("CLSOLVE_AMG_BLOCK");
    if (e && strcmp(e, "columns") == 0)
        return 0;
    if (!(e && strcmp(e, "rows") == 0) && !(la->ocl->dev.type & CL_DEVICE_TYPE_GPU))
        return 0;
    for (int l = 0; l < dv->nlevels; l++) {
        const dev_level *L = &dv->lev[l];
        const int last = l == dv->nlevels - 1;
        if ((!last || !dv->coarse_direct) && !la_spmm_rm_supports(L->Ause))
            return 0;
        if (!last && (!la_spmm_rm_supports(&L->R) || !la_spmm_rm_supports(&L->P)))
            return 0;
    }
    return 1;
}

int amg_apply_block(amg_device *d, la_ctx *la, int k, const la_vec *const *r, la_vec *const *z,
                    cls_error *err)
{
    if (k < 1 || k > 8)
        return cls_fail(err, CLS_EOTHER, "amg_apply_block: %d columns (1 to 8)", k);
    if (k == 1)
        return amg_apply(d, la, r[0], z[0], err);
    int64_t n = d->lev[0].n;
    for (int c = 0; c < k; c++) {
        if (r[c]->n != n || z[c]->n != n)
            return cls_fail(err, CLS_EOTHER,
                            "amg_apply_block: column %d has vectors of %lld and %lld entries, "
                            "matrix %lld",
                            c, (long long)r[c]->n, (long long)z[c]->n, (long long)n);
        if (r[c]->buf == z[c]->buf)
            return cls_fail(err, CLS_EOTHER, "amg_apply_block: r and z must be different vectors");
    }
    if (n == 0)
        return CLS_OK;
    int rc;
    if (!d->have_sk) {
        if ((rc = la_spmm_create(la, &d->sk, err)))
            return rc;
        d->have_sk = 1;
    }
    d->sk.la = la;          /* a kept hierarchy (amg_device_detach) serves later solves' la */
    if (rm_usable(d, la)) { /* the columns into one row-major block, the V-cycle on it, back */
        const int kw = k <= 2 ? 2 : k <= 4 ? 4 : 8;
        dev_level *L0 = &d->lev[0];
        d->fuse = fuse_blocks();
        if ((rc = rm_vectors(d, la, kw, err)) ||
            (rc = la_amg_pack(la, &d->k, k, r, kw, &L0->bb, err)) ||
            (rc = dev_vcycle(d, la, 0, kw, &L0->bb, &L0->bx, err)))
            return rc;
        return la_amg_unpack(la, &d->k, &L0->bx, kw, k, z, err);
    }
    if ((rc = block_vectors(d, la, k, err)))
        return rc;
    return bvcycle(d, la, 0, k, (la_vec *const *)r, z, err);
}
