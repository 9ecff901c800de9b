/*
 * pc_ic0.c: block incomplete Cholesky, IC(0) of each part's diagonal block
 * (block Jacobi across parts, as PETSc's default parallel ICC: PCBJACOBI
 * with PCICC per block), set up on the host and applied on the device.
 *
 * Factorization (Meijerink and van der Vorst, "An iterative solution method
 * for linear systems of which the coefficient matrix is a symmetric
 * M-matrix", Math. Comp. 31 (1977)): L with the pattern of tril(B),
 *   l_ij = (b_ij - sum_{k<j} l_ik l_jk) / l_jj     (j < i, (i,j) in B)
 *   l_ii = sqrt(b_ii (1 + shift) - sum_{k<i} l_ik^2)
 * row by row (the up-looking form). Row i needs only the rows j < i in its
 * pattern: the dependency graph of the lower triangular solve, so the rows
 * of one level of that graph are factored in parallel (cls_parallel_for
 * level by level; the result does not depend on the thread count).
 *
 * Breakdown. IC(0) of an SPD matrix that is not an M-matrix can meet a
 * non-positive pivot. As PETSc's MAT_SHIFT_POSITIVE_DEFINITE (Manteuffel,
 * "An incomplete factorization technique for positive definite linear
 * systems", Math. Comp. 34 (1980)), the factorization restarts with the
 * diagonal shifted, B + shift diag(B), shift = 1e-3, 2e-3, 4e-3, ... until
 * every pivot exceeds 1e-12 b_ii. The shift used is reported (--json
 * `precond.shift`, the job record) with a note; the preconditioner stays
 * SPD, so the answer is the answer, only the iterations change.
 *
 * On a GPU in double precision (--precond-setup auto or device, with
 * sweeps > 0) the factor is built on the device instead, by Chow and
 * Patel's fixed-point sweeps (kernels/la_ic0s.h): the same factor within
 * rounding once the sweeps reach the dependency depth, and as good a
 * preconditioner after the default 5; a failed pivot there hands the part
 * back to the host build below (its shift restarts).
 *
 * Application, z = L^-T L^-1 r. Exact triangular solves are sequential
 * within a level of the dependency graph: one kernel launch per level,
 * 3N-2 levels for an N^3 7-point stencil (766 per solve at N = 256), each
 * with ~N^2/3 rows: launch-bound on a GPU. So the default applies each
 * factor by `sweeps` Jacobi sweeps (Anzt, Chow and Dongarra, "Iterative
 * sparse triangular solves for preconditioning", Euro-Par 2015, LNCS 9233;
 * Chow and Patel, "Fine-grained parallel incomplete LU factorization",
 * SIAM J. Sci. Comput. 37 (2015)):
 *   y_0 = D^-1 b;  y_{j+1} = D^-1 (b - N y_j)       (N = L - D)
 * a fixed polynomial G_L = sum_{j<=k} (-D^-1 N)^j D^-1 of L^-1, each sweep a
 * row-parallel pass like an SpMV of the strict triangle. The same sweeps on
 * U = L' give exactly G_L' (D^-1 (N' D^-1)^j = (D^-1 N')^j D^-1), so
 * M^-1 = G_L' G_L is symmetric and, G_L being triangular with a positive
 * diagonal, positive definite: PCG's theory holds for any sweep count.
 * Measured (tol 1e-8, b = A 1; exact IC(0) beside): 1138_bus 285/150/126
 * iterations at 2/3/5 sweeps (exact 126, = PETSc ICC(0)); poisson3d 32
 * 43/38/36 (exact 37). sweeps = 0 selects the exact level-scheduled solve.
 */
#include "pc_kind.h"
#include "../../kernels/cpu/cpu_ops.h"
#include "../../kernels/la_ic0s.h"
#include "../../kernels/cpu/cpu_ws.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/parallel.h"
#include "../../common/timer.h"
#include "../../common/trace.h"

#define IC0_PIVOT_TOL 1e-12 /* a pivot must exceed this times b_ii */
#define IC0_MAX_RESTARTS 40

void pc_ic0_factor_free(pc_ic0_factor *f)
{
    if (!f)
        return;
    free(f->lrow);
    free(f->lcol);
    free(f->urow);
    free(f->ucol);
    free(f->lval);
    free(f->uval);
    free(f->dl);
    free(f->lrows);
    free(f->urows);
    free(f->llev);
    free(f->ulev);
    memset(f, 0, sizeof *f);
}

/* level of each row: 1 + the highest level among its dependencies, which
 * are the columns of rowptr/col (strictly one side of the diagonal), in
 * the order rows must be solved (forward: i = 0..n-1; backward: n-1..0);
 * then the rows grouped by level (counting sort) with offsets. */
static int ic0_levels(int64_t n, const int32_t *rowptr, const int32_t *col, int backward,
                      int32_t **rows_out, int64_t **lev_out, int *nlev_out, cls_error *err)
{
    int32_t *lev = malloc((size_t)(n ? n : 1) * sizeof *lev);
    int32_t *rows = malloc((size_t)(n ? n : 1) * sizeof *rows);
    int nlev = 0;
    if (!lev || !rows) {
        free(lev);
        free(rows);
        return cls_fail(err, CLS_EOTHER, "out of memory for the factor's levels");
    }
    for (int64_t t = 0; t < n; t++) {
        int64_t i = backward ? n - 1 - t : t;
        int32_t l = 0;
        for (int32_t e = rowptr[i]; e < rowptr[i + 1]; e++)
            if (lev[col[e]] + 1 > l)
                l = lev[col[e]] + 1;
        lev[i] = l;
        if (l + 1 > nlev)
            nlev = l + 1;
    }
    int64_t *off = calloc((size_t)nlev + 1, sizeof *off);
    if (!off) {
        free(lev);
        free(rows);
        return cls_fail(err, CLS_EOTHER, "out of memory for the factor's levels");
    }
    for (int64_t i = 0; i < n; i++)
        off[lev[i] + 1]++;
    for (int l = 0; l < nlev; l++)
        off[l + 1] += off[l];
    int64_t *fill = malloc((size_t)(nlev ? nlev : 1) * sizeof *fill);
    if (!fill) {
        free(lev);
        free(rows);
        free(off);
        return cls_fail(err, CLS_EOTHER, "out of memory for the factor's levels");
    }
    memcpy(fill, off, (size_t)nlev * sizeof *fill);
    for (int64_t i = 0; i < n; i++) /* ascending within a level */
        rows[fill[lev[i]]++] = (int32_t)i;
    free(fill);
    free(lev);
    *rows_out = rows;
    *lev_out = off;
    *nlev_out = nlev;
    return CLS_OK;
}

/* the factorization's working form: row i of tril(B) with its diagonal
 * last (columns ascending), values overwritten by L */
typedef struct ic0_work {
    const int64_t *rp; /* row pointers into cl / v */
    const int32_t *cl;
    double *v;
    const double *bdiag;
    double shift;
    const int32_t *rows; /* rows by level */
    atomic_int *bad;     /* a pivot failed (any thread: a flag, set only) */
} ic0_work;

static void ic0_rows(void *arg, int range, int64_t t0, int64_t t1)
{
    (void)range;
    ic0_work *w = arg;
    const int64_t *rp = w->rp;
    const int32_t *cl = w->cl;
    double *v = w->v;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t i = w->rows[t];
        const int64_t s = rp[i], dpos = rp[i + 1] - 1; /* the diagonal is last */
        for (int64_t e = s; e < dpos; e++) {
            const int32_t j = cl[e];
            /* l_ij = (b_ij - sum_{k<j} l_ik l_jk) / l_jj: merge row i's
             * entries before e with row j's strict part */
            double acc = v[e];
            int64_t a = s, b = rp[j];
            const int64_t bend = rp[j + 1] - 1;
            while (a < e && b < bend) {
                if (cl[a] == cl[b])
                    acc -= v[a++] * v[b++];
                else if (cl[a] < cl[b])
                    a++;
                else
                    b++;
            }
            v[e] = acc / v[bend];
        }
        double d = w->bdiag[i] * (1.0 + w->shift);
        for (int64_t e = s; e < dpos; e++)
            d -= v[e] * v[e];
        if (!(d > IC0_PIVOT_TOL * w->bdiag[i]) || !isfinite(d)) {
            atomic_store(w->bad, 1);
            d = w->bdiag[i]; /* keep going: the flag restarts the whole factorization */
        }
        v[dpos] = sqrt(d);
    }
}

int pc_ic0_factor_build(const csr_matrix *B, double shift0, pc_ic0_factor *f, cls_error *err)
{
    memset(f, 0, sizeof *f);
    const int64_t n = B->nrows;
    int rc = CLS_OK;
    int64_t *rp = malloc((size_t)(n + 1) * sizeof *rp);
    double *bdiag = malloc((size_t)(n ? n : 1) * sizeof *bdiag);
    int64_t m = 0;
    int32_t *cl = NULL;
    double *v = NULL, *v0 = NULL;
    if (!rp || !bdiag)
        goto oom;
    /* tril(B) with the diagonal last */
    rp[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t c = 0, hasd = 0;
        for (int64_t e = B->rowptr[i]; e < B->rowptr[i + 1]; e++) {
            c += B->col[e] < i;
            hasd |= B->col[e] == i;
        }
        if (!hasd) {
            rc =
                cls_fail(err, CLS_EBREAKDOWN,
                         "ic0: row %lld of a part's block has no diagonal entry", (long long)i + 1);
            goto fail;
        }
        rp[i + 1] = rp[i] + c + 1;
    }
    m = rp[n];
    if (m > INT32_MAX) {
        rc = cls_fail(err, CLS_EINPUT,
                      "ic0: a part's factor has %lld entries, more than 32-bit indices hold; "
                      "use more parts (ranks or devices)",
                      (long long)m);
        goto fail;
    }
    cl = malloc((size_t)(m ? m : 1) * sizeof *cl);
    v = malloc((size_t)(m ? m : 1) * sizeof *v);
    v0 = malloc((size_t)(m ? m : 1) * sizeof *v0);
    if (!cl || !v || !v0)
        goto oom;
    for (int64_t i = 0; i < n; i++) {
        int64_t p = rp[i];
        for (int64_t e = B->rowptr[i]; e < B->rowptr[i + 1]; e++) {
            if (B->col[e] < i) {
                cl[p] = B->col[e];
                v0[p++] = B->val[e];
            } else if (B->col[e] == i) {
                bdiag[i] = B->val[e];
            }
        }
        cl[p] = (int32_t)i;
        v0[p] = bdiag[i];
        if (!(bdiag[i] > 0.0)) {
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "ic0: diagonal entry %lld of a part's block is %g: the matrix is not "
                          "positive definite",
                          (long long)i + 1, bdiag[i]);
            goto fail;
        }
    }
    /* the levels of L (forward), used for the parallel factorization and
     * for the exact solve; L's dependencies are its strict lower part */
    {
        int32_t *srow = malloc((size_t)(n + 1) * sizeof *srow);
        int32_t *scol = malloc((size_t)((m - n) ? (m - n) : 1) * sizeof *scol);
        if (!srow || !scol) {
            free(srow);
            free(scol);
            goto oom;
        }
        srow[0] = 0;
        for (int64_t i = 0; i < n; i++) {
            int32_t c = 0;
            for (int64_t e = rp[i]; e < rp[i + 1] - 1; e++)
                scol[srow[i] + c++] = cl[e];
            srow[i + 1] = srow[i] + c;
        }
        f->lrow = srow;
        f->lcol = scol;
        if ((rc = ic0_levels(n, srow, scol, 0, &f->lrows, &f->llev, &f->nllev, err)))
            goto fail;
    }
    cls_trace("ic0: levels");
    /* factor; restart with a larger shift on a bad pivot */
    double shift = shift0 > 0.0 ? shift0 : 0.0;
    for (int attempt = 0;; attempt++) {
        memcpy(v, v0, (size_t)m * sizeof *v);
        atomic_int bad = 0;
        for (int l = 0; l < f->nllev; l++) {
            int64_t a = f->llev[l], b = f->llev[l + 1];
            ic0_work wl = {rp, cl, v, bdiag, shift, f->lrows + a, &bad};
            cls_parallel_for(b - a, 4096, ic0_rows, &wl);
        }
        if (!atomic_load(&bad))
            break;
        if (attempt >= IC0_MAX_RESTARTS) {
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "ic0: the incomplete factorization breaks down even with the diagonal "
                          "shifted by %g: the matrix is not positive definite",
                          shift);
            goto fail;
        }
        shift = shift > 0.0 ? 2.0 * shift : 1e-3;
        f->restarts = attempt + 1;
    }
    f->shift = shift;
    /* split: N_L (strict lower, values), dl = 1 / l_ii; U = L' by transpose */
    f->n = n;
    f->lval = malloc((size_t)((m - n) ? (m - n) : 1) * sizeof *f->lval);
    f->dl = malloc((size_t)(n ? n : 1) * sizeof *f->dl);
    f->urow = calloc((size_t)n + 1, sizeof *f->urow);
    f->ucol = malloc((size_t)((m - n) ? (m - n) : 1) * sizeof *f->ucol);
    f->uval = malloc((size_t)((m - n) ? (m - n) : 1) * sizeof *f->uval);
    if (!f->lval || !f->dl || !f->urow || !f->ucol || !f->uval)
        goto oom;
    for (int64_t i = 0; i < n; i++) {
        int32_t c = f->lrow[i];
        for (int64_t e = rp[i]; e < rp[i + 1] - 1; e++)
            f->lval[c++] = v[e];
        f->dl[i] = 1.0 / v[rp[i + 1] - 1];
    }
    for (int64_t e = 0; e < m - n; e++)
        f->urow[f->lcol[e] + 1]++;
    for (int64_t i = 0; i < n; i++)
        f->urow[i + 1] += f->urow[i];
    {
        int32_t *fill = malloc((size_t)(n ? n : 1) * sizeof *fill);
        if (!fill)
            goto oom;
        memcpy(fill, f->urow, (size_t)n * sizeof *fill);
        for (int64_t i = 0; i < n; i++) /* rows ascending: U's columns come out sorted */
            for (int32_t e = f->lrow[i]; e < f->lrow[i + 1]; e++) {
                int32_t j = f->lcol[e], p = fill[j]++;
                f->ucol[p] = (int32_t)i;
                f->uval[p] = f->lval[e];
            }
        free(fill);
    }
    if ((rc = ic0_levels(n, f->urow, f->ucol, 1, &f->urows, &f->ulev, &f->nulev, err)))
        goto fail;
    free(rp);
    free(bdiag);
    free(cl);
    free(v);
    free(v0);
    return CLS_OK;
oom:
    rc = cls_fail(err, CLS_EOTHER, "out of memory for the incomplete Cholesky factor");
fail:
    free(rp);
    free(bdiag);
    free(cl);
    free(v);
    free(v0);
    pc_ic0_factor_free(f);
    return rc;
}

/* host twin of la_tri_sweeps / la_tri_solve_levels */
static void ic0_tri_ref(int64_t n, const int32_t *rp, const int32_t *cl, const double *val,
                        const double *dl, int sweeps, int backward, const double *b, double *y)
{
    if (sweeps == 0) { /* exact substitution */
        for (int64_t t = 0; t < n; t++) {
            int64_t i = backward ? n - 1 - t : t;
            double s = b[i];
            for (int32_t e = rp[i]; e < rp[i + 1]; e++)
                s -= val[e] * y[cl[e]];
            y[i] = dl[i] * s;
        }
        return;
    }
    double *yin = malloc((size_t)(n ? n : 1) * sizeof *yin);
    if (!yin)
        return;
    for (int64_t i = 0; i < n; i++)
        yin[i] = dl[i] * b[i];
    for (int j = 0; j < sweeps; j++) {
        for (int64_t i = 0; i < n; i++) {
            double s = b[i];
            for (int32_t e = rp[i]; e < rp[i + 1]; e++)
                s -= val[e] * yin[cl[e]];
            y[i] = dl[i] * s;
        }
        memcpy(yin, y, (size_t)n * sizeof *yin);
    }
    free(yin);
}

void pc_ic0_ref(const pc_ic0_factor *f, int sweeps, const double *r, double *z)
{
    double *t = malloc((size_t)(f->n ? f->n : 1) * sizeof *t);
    if (!t)
        return;
    ic0_tri_ref(f->n, f->lrow, f->lcol, f->lval, f->dl, sweeps, 0, r, t);
    ic0_tri_ref(f->n, f->urow, f->ucol, f->uval, f->dl, sweeps, 1, t, z);
    free(t);
}

/* ------------------------------------------------------- on the devices */

/* the part's state: the factor's device copy and the sweeps' work */
typedef struct ic0_part {
    la_tri L, U; /* z = U^-1 L^-1 r, U = L^T */
    la_vec t0, t1;
    int have_tri;
    struct pc_cache_entry *centry; /* the cache entry the factor came from (held) */
    pc_ic0_factor *own;            /* without the cache: the part's own factor */
    double *h0, *h1;               /* the native apply's work (n each), made at its first use */
} ic0_part;

static void ic0_factor_drop(void *f)
{
    pc_ic0_factor_free(f);
    free(f);
}

/* The IC(0) factor of part k: from the cache, or built (and cached, or kept
 * by the part when the cache is off or full). */
static int ic0_part_factor(pc *pc, int k, ic0_part *ip, const pc_ic0_factor **out, int *reused,
                           cls_error *err)
{
    const dpart *p = &pc->s->parts[k];
    uint64_t key = 0;
    *reused = 0;
    const int cache = pc_cache_enabled(&pc->opt);
    if (cache) {
        uint64_t sb;
        memcpy(&sb, &pc->opt.shift, sizeof sb); /* the shift shapes the factor */
        key = pc_cache_part_key(p, PRECOND_IC0, pc_cache_mix(sb));
        struct pc_cache_entry *e = pc_cache_get(key, PRECOND_IC0, p->halo.nlocal);
        if (e) {
            *reused = 1;
            ip->centry = e; /* given back at release */
            *out = pc_cache_data(e);
            return CLS_OK;
        }
    }
    csr_matrix B;
    const double tb = cls_now();
    /* a part without ghosts in its own order is its block: the factor only
     * reads it, so a view does */
    const int view = !p->perm && p->halo.nghost == 0 && p->A.rowptr[0] == 0;
    int rc = CLS_OK;
    if (view)
        B = p->A;
    else if ((rc = pc_local_block(p, &B, err)))
        return rc;
    cls_trace("pc: the part's block");
    pc_ic0_factor *f = malloc(sizeof *f);
    if (!f)
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the factor");
    else if ((rc = pc_ic0_factor_build(&B, pc->opt.shift, f, err))) {
        free(f);
        f = NULL;
    }
    cls_trace("pc: IC(0) factor");
    if (!view)
        csr_free(&B);
    pc->info.build_s += cls_now() - tb;
    if (rc)
        return rc;
    ip->centry = cache ? pc_cache_put(key, PRECOND_IC0, p->halo.nlocal, f, ic0_factor_drop) : NULL;
    if (!ip->centry)
        ip->own = f; /* no cache: the part keeps its own factor until release */
    *out = f;
    return CLS_OK;
}

/* Part k's factor built on the device (la_ic0s.h: Chow-Patel sweeps)
 * straight into ip->L and ip->U. *done = 0: a pivot failed there (the
 * matrix needs a diagonal shift): the caller builds on the host, whose
 * restarts find it. Not cached: the factor lives on the device only. */
static int ic0_part_device(pc *pc, int k, ic0_part *ip, int *done, cls_error *err)
{
    dpart *p = &pc->s->parts[k];
    la_ctx *la = &p->la;
    *done = 0;
    const double tb = cls_now();
    const int lend = p->halo.nghost == 0 && !p->have_Ab; /* the engine's copy is the block */
    const int view = lend && !p->perm && p->A.rowptr[0] == 0;
    csr_matrix B;
    int rc = CLS_OK;
    if (view)
        B = p->A;
    else if ((rc = pc_local_block(p, &B, err)))
        return rc;
    la_ic0s kk;
    int64_t bad = -1;
    if (!(rc = la_ic0s_init(la, &kk, err))) {
        rc = la_ic0s_factor(la, &kk, &B, view ? &p->Ai : NULL, pc->opt.shift, 0, &ip->L, &ip->U,
                            &bad, err);
        la_ic0s_release(&kk);
    }
    if (!view)
        csr_free(&B);
    if (rc || bad >= 0)
        return rc;
    pc->info.build_s += cls_now() - tb;
    pc->info.parts_built++;
    pc->info.factor_nnz += ip->L.nnz + ip->L.n;
    ip->have_tri = 1;
    *done = 1;
    return CLS_OK;
}

static int pc_ic0_setup(pc *pc, cls_error *err)
{
    dsys *s = pc->s;
    pc->info.sweeps = pc->opt.sweeps;
    for (int k = 0; k < s->nmine; k++) {
        ic0_part *ip = calloc(1, sizeof *ip);
        if (!ip)
            return cls_fail(err, CLS_EOTHER, "out of memory for the preconditioner");
        pc->part[k].state = ip;
        la_ctx *la = &s->parts[k].la;
        int dev = 0, done = 0, rc0 = pc_setup_on_device(pc, &s->parts[k], &dev, err);
        if (rc0)
            return rc0;
        if (dev && pc->opt.sweeps == 0) {
            if (pc->opt.setup == PC_SETUP_DEVICE)
                return cls_fail(err, CLS_EUSAGE,
                                "--precond-setup device: ic0's exact solves (--precond-sweeps 0) "
                                "need the host's level schedule; use --precond-setup host");
            dev = 0;
        }
        if (dev && (rc0 = ic0_part_device(pc, k, ip, &done, err)))
            return rc0;
        if (done) {
            pc->device_only = 1; /* the native loops need a host factor */
            pc->info.on_device = 1;
            if ((rc0 = la_vec_create(la, ip->L.n, &ip->t0, err)) ||
                (rc0 = la_vec_create(la, ip->L.n, &ip->t1, err)))
                return rc0;
            cls_trace("pc: IC(0) factor on the device");
            continue;
        }
        const pc_ic0_factor *f;
        int reused = 0, rc;
        if ((rc = ic0_part_factor(pc, k, ip, &f, &reused, err)))
            return rc;
        if (reused)
            pc->info.parts_reused++;
        else
            pc->info.parts_built++;
        if (f->shift > 0.0) {
            pc->info.shifted_parts++;
            if (f->shift > pc->info.shift)
                pc->info.shift = f->shift;
        }
        pc->info.factor_nnz += f->lrow[f->n] + f->n;
        int lv = f->nllev > f->nulev ? f->nllev : f->nulev;
        if (lv > pc->info.levels)
            pc->info.levels = lv;
        const int exact = pc->opt.sweeps == 0;
        if ((rc = la_tri_upload(la, f->n, f->lrow, f->lcol, f->lval, f->dl, exact ? f->lrows : NULL,
                                f->llev, f->nllev, &ip->L, err)))
            return rc;
        if ((rc = la_tri_upload(la, f->n, f->urow, f->ucol, f->uval, f->dl, exact ? f->urows : NULL,
                                f->ulev, f->nulev, &ip->U, err))) {
            la_tri_release(&ip->L);
            return rc;
        }
        ip->have_tri = 1;
        if ((rc = la_vec_create(la, f->n, &ip->t0, err)) ||
            (rc = la_vec_create(la, f->n, &ip->t1, err)))
            return rc;
        cls_trace("pc: IC(0) factor up");
    }
    return CLS_OK;
}

int pc_ic0_tri(const pc *pc, const la_tri **l, const la_tri **u, int *sweeps, cls_error *err)
{
    const ic0_part *ip = pc && pc->type == PRECOND_IC0 && pc->part ? pc->part[0].state : NULL;
    if (!ip || !ip->have_tri)
        return cls_fail(err, CLS_EOTHER, "pc_ic0_tri: not a set-up ic0 preconditioner");
    if (pc->opt.sweeps < 1)
        return cls_fail(err, CLS_EINPUT,
                        "--method cg-small runs ic0 by its sweeps (--precond-sweeps 1..32, "
                        "default 3), not the exact level-scheduled solve (--precond-sweeps 0)");
    *l = &ip->L;
    *u = &ip->U;
    *sweeps = pc->opt.sweeps;
    return CLS_OK;
}

static int pc_ic0_apply_part(pc *pc, int k, const la_vec *r, la_vec *z, cls_error *err)
{
    ic0_part *ip = pc->part[k].state;
    la_pck *kk = &pc->part[k].k;
    int rc = pc_part_kernels(pc, k, err);
    if (rc)
        return rc;
    if (pc->opt.sweeps == 0) { /* exact: t1 = L^-1 r; z = U^-1 t1 */
        if ((rc = la_tri_solve_levels(kk, &ip->L, r, &ip->t1, err)))
            return rc;
        return la_tri_solve_levels(kk, &ip->U, &ip->t1, z, err);
    }
    if ((rc = la_tri_sweeps(kk, &ip->L, pc->opt.sweeps, r, &ip->t0, &ip->t1, err)))
        return rc;
    return la_tri_sweeps(kk, &ip->U, pc->opt.sweeps, &ip->t1, &ip->t0, z, err);
}

/* ------------------------------------------------------------- natively */

typedef struct ic0_call {
    const cpu_ws *ws;
    const cpu_csr *L, *U;
    const double *dl, *r;
    double *t0, *t1, *z;
    int sweeps;
} ic0_call;

/* la_tri_sweeps' order: sweep j of k writes y when k - j is even, else t0 */
static void ic0_sweeps(const ic0_call *c, const cpu_csr *N, const double *b, double *t0, double *y,
                       int64_t lo, int64_t hi)
{
    const double *in = NULL;
    for (int j = 1; j <= c->sweeps; j++) {
        double *out = (c->sweeps - j) % 2 == 0 ? y : t0;
        cpu_tri_sweep(N, c->dl, b, in, out, lo, hi);
        cls_team_barrier(c->ws->team); /* every row of the sweep before the next reads it */
        in = out;
    }
}

static void ic0_member(void *ctx, int id, int nt)
{
    (void)nt;
    const ic0_call *c = ctx;
    const int64_t lo = c->ws->bound[id], hi = c->ws->bound[id + 1];
    ic0_sweeps(c, c->L, c->r, c->t0, c->t1, lo, hi); /* t1 ~ L^-1 r */
    ic0_sweeps(c, c->U, c->t1, c->t0, c->z, lo, hi); /* z ~ U^-1 t1 */
}

/* z = U^-1 L^-1 r as the kernels compute it: exactly (sweeps 0), row by row
 * on the calling thread, or by Jacobi sweeps on the team (pc_apply_part) */
static int pc_ic0_apply_host(pc *pc, const cpu_ws *ws, const cpu_csr *A, const double *r, double *z,
                             cls_error *err)
{
    ic0_part *ip = pc->part[0].state;
    const pc_ic0_factor *f = ip->own ? ip->own : pc_cache_data(ip->centry);
    if (!f)
        return cls_fail(err, CLS_EUSAGE,
                        "ic0: the factor was built on the device (--precond-setup device), and "
                        "the native CPU loops need the host's: use --precond-setup host");
    if (f->n != A->n)
        return cls_fail(err, CLS_EOTHER, "ic0: the factor is not the system's");
    if (!ip->h0) {
        ip->h0 = malloc((size_t)(f->n ? f->n : 1) * sizeof(double));
        ip->h1 = malloc((size_t)(f->n ? f->n : 1) * sizeof(double));
        if (!ip->h0 || !ip->h1) {
            free(ip->h0);
            free(ip->h1);
            ip->h0 = ip->h1 = NULL;
            return cls_fail(err, CLS_EOTHER, "out of memory for the native IC(0) vectors");
        }
    }
    const cpu_csr L = {f->lrow, f->lcol, f->lval, f->n}, U = {f->urow, f->ucol, f->uval, f->n};
    if (pc->opt.sweeps == 0) {
        cpu_tri_solve(&L, f->dl, r, ip->h1, 1);
        cpu_tri_solve(&U, f->dl, ip->h1, z, 0);
        return CLS_OK;
    }
    ic0_call c = {ws, &L, &U, f->dl, r, ip->h0, ip->h1, z, pc->opt.sweeps};
    cls_team_run(ws->team, ic0_member, &c);
    return CLS_OK;
}

static void pc_ic0_release(pc *pc)
{
    for (int k = 0; pc->part && k < pc->nmine; k++) {
        ic0_part *ip = pc->part[k].state;
        if (!ip)
            continue;
        if (ip->have_tri) {
            la_tri_release(&ip->L);
            la_tri_release(&ip->U);
        }
        la_vec_release(&ip->t0);
        la_vec_release(&ip->t1);
        free(ip->h0);
        free(ip->h1);
        pc_cache_release(ip->centry);
        if (ip->own)
            ic0_factor_drop(ip->own);
        free(ip);
        pc->part[k].state = NULL;
    }
}

static void pc_ic0_info_json(const pc_info *in, json_t *o)
{
    json_object_set_new(o, "sweeps", json_integer(in->sweeps));
    json_object_set_new(o, "triangular_solve",
                        json_string(in->sweeps ? "jacobi-sweeps" : "level-scheduled"));
    json_object_set_new(o, "shift", json_real(in->shift));
    json_object_set_new(o, "shifted_parts", json_integer(in->shifted_parts));
    json_object_set_new(o, "factor_nnz", json_integer(in->factor_nnz));
    json_object_set_new(o, "levels", json_integer(in->levels));
}

const pc_kind pc_ic0_kind = {
    .needs_kernels = 1,
    .reports_setup = 1,
    .setup = pc_ic0_setup,
    .apply_part = pc_ic0_apply_part,
    .apply_host = pc_ic0_apply_host,
    .release = pc_ic0_release,
    .info_json = pc_ic0_info_json,
};
