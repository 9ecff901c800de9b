/*
 * amg_native.c: the V-cycle on a CPU device's native loops (kernels/cpu/,
 * the preconditioned CG of la_pcn.h): amg_ref.c's algorithm step for step
 * (its comment has the math), each level's loops split over a team of
 * threads, one team call per V-cycle.
 *
 * Every member walks the same recursion and takes its own rows of each
 * level (an even split: ranges of rows, the coarse levels' tiny ones
 * empty for most members); a barrier separates a loop from the next one
 * that reads other rows of what it wrote (an SpMV of d after d's update,
 * the restriction of r, the prolongation of the coarse x). Each row's
 * arithmetic is the reference's in its order, so the V-cycle gives the
 * reference's bits on any number of threads (tests/unit/test_pc_native.c).
 * The work vectors (five per level, as the reference's) are made once per
 * hierarchy (amg_native_ws) and kept by the preconditioner.
 */
#include "amg_priv.h"

#include <stdlib.h>
#include <string.h>

#include "../../common/team.h"

struct amg_native_ws {
    const amg_hierarchy *h;
    double *buf;
    struct {
        double *x, *b, *r, *d, *q;
    } v[AMG_MAX_LEVELS];
};

int amg_native_ws_create(const amg_hierarchy *h, amg_native_ws **out, cls_error *err)
{
    int64_t tot = 0;
    for (int l = 0; l < h->nlevels; l++)
        tot += 5 * h->lev[l].A.nrows;
    amg_native_ws *w = calloc(1, sizeof *w);
    double *buf = w ? malloc((size_t)(tot ? tot : 1) * sizeof *buf) : NULL;
    if (!buf) {
        free(w);
        return cls_fail(err, CLS_EOTHER, "amg: out of memory for the native V-cycle");
    }
    w->h = h;
    w->buf = buf;
    for (int l = 0; l < h->nlevels; l++) {
        const int64_t n = h->lev[l].A.nrows;
        w->v[l].x = buf;
        w->v[l].b = buf + n;
        w->v[l].r = buf + 2 * n;
        w->v[l].d = buf + 3 * n;
        w->v[l].q = buf + 4 * n;
        buf += 5 * n;
    }
    *out = w;
    return CLS_OK;
}

void amg_native_ws_free(amg_native_ws *w)
{
    if (w)
        free(w->buf);
    free(w);
}

typedef struct nv_call {
    const amg_hierarchy *h;
    amg_native_ws *w;
    cls_team *team;
    const double *r;
    double *z;
} nv_call;

/* member id's rows of n */
#define NV_RANGE(n, id, nt, lo, hi)                                                                \
    const int64_t lo = (n) * (id) / (nt), hi = (n) * ((id) + 1) / (nt)

/* y[i] = (A x)[i] for the member's rows, the reference's csr_spmv_ref row */
static inline double nv_row(const csr_matrix *A, const double *x, int64_t i)
{
    double s = 0.0;
    for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
        s += A->val[e] * x[A->col[e]];
    return s;
}

/* amg_ref.c's ref_smooth on the member's rows; x (every row) complete on
 * return */
static void nv_smooth(const nv_call *c, int l, const double *b, double *x, int zero, int want_r,
                      int id, int nt)
{
    const amg_level *L = &c->h->lev[l];
    const csr_matrix *A = &L->A;
    double *r = c->w->v[l].r, *d = c->w->v[l].d, *q = c->w->v[l].q;
    const double *di = L->dinv;
    NV_RANGE(A->nrows, id, nt, lo, hi);
    if (c->h->opt.smoother == AMG_SMOOTHER_CHEBYSHEV) {
        amg_cheb k;
        amg_cheb_coeffs(&c->h->opt, L->lmax, &k);
        if (!zero) {
            for (int64_t i = lo; i < hi; i++)
                q[i] = nv_row(A, x, i);
            cls_team_barrier(c->team); /* x read everywhere before it changes */
        }
        for (int64_t i = lo; i < hi; i++) {
            r[i] = b[i] - (zero ? 0.0 : q[i]);
            d[i] = k.c0 * di[i] * r[i];
            x[i] = (zero ? 0.0 : x[i]) + d[i];
        }
        for (int s = 1; s < k.degree; s++) {
            cls_team_barrier(c->team); /* d complete */
            for (int64_t i = lo; i < hi; i++)
                q[i] = nv_row(A, d, i);
            cls_team_barrier(c->team); /* d read everywhere before it changes */
            for (int64_t i = lo; i < hi; i++) {
                r[i] -= q[i];
                d[i] = k.c1[s] * d[i] + k.c2[s] * di[i] * r[i];
                x[i] += d[i];
            }
        }
        cls_team_barrier(c->team);
        if (want_r) {
            for (int64_t i = lo; i < hi; i++)
                r[i] -= nv_row(A, d, i);
            cls_team_barrier(c->team);
        }
        return;
    }
    for (int s = 0; s < c->h->opt.degree; s++) { /* l1-Jacobi */
        if (zero && s == 0) {
            for (int64_t i = lo; i < hi; i++)
                x[i] = di[i] * b[i];
        } else {
            for (int64_t i = lo; i < hi; i++)
                q[i] = nv_row(A, x, i);
            cls_team_barrier(c->team);
            for (int64_t i = lo; i < hi; i++)
                x[i] += di[i] * (b[i] - q[i]);
        }
        cls_team_barrier(c->team);
    }
    if (want_r) {
        for (int64_t i = lo; i < hi; i++)
            r[i] = b[i] - nv_row(A, x, i);
        cls_team_barrier(c->team);
    }
}

/* amg_ref.c's ref_vcycle; b and x complete on entry and on return */
static void nv_vcycle(const nv_call *c, int l, const double *b, double *x, int id, int nt)
{
    const amg_hierarchy *h = c->h;
    const amg_level *L = &h->lev[l];
    const int64_t n = L->A.nrows;
    if (l == h->nlevels - 1) {
        if (h->coarse_direct) {
            NV_RANGE(n, id, nt, lo, hi);
            for (int64_t i = lo; i < hi; i++) { /* x = A^-1 b */
                double s = 0.0;
                for (int64_t j = 0; j < n; j++)
                    s += h->coarse_inv[i * n + j] * b[j];
                x[i] = s;
            }
            cls_team_barrier(c->team);
        } else {
            nv_smooth(c, l, b, x, 1, 0, id, nt);
        }
        return;
    }
    nv_smooth(c, l, b, x, 1, 1, id, nt);
    double *bc = c->w->v[l + 1].b, *xc = c->w->v[l + 1].x;
    {
        NV_RANGE(L->R.nrows, id, nt, lo, hi); /* b_c = R r */
        for (int64_t i = lo; i < hi; i++)
            bc[i] = nv_row(&L->R, c->w->v[l].r, i);
    }
    cls_team_barrier(c->team);
    nv_vcycle(c, l + 1, bc, xc, id, nt);
    {
        NV_RANGE(n, id, nt, lo, hi); /* x += P x_c */
        double *q = c->w->v[l].q;
        for (int64_t i = lo; i < hi; i++) {
            q[i] = nv_row(&L->P, xc, i);
            x[i] += q[i];
        }
    }
    cls_team_barrier(c->team);
    nv_smooth(c, l, b, x, 0, 0, id, nt);
}

static void nv_member(void *ctx, int id, int nt)
{
    const nv_call *c = ctx;
    nv_vcycle(c, 0, c->r, c->z, id, nt);
}

int amg_apply_native(const amg_hierarchy *h, amg_native_ws *w, cls_team *team, const double *r,
                     double *z, cls_error *err)
{
    if (!w || w->h != h)
        return cls_fail(err, CLS_EOTHER, "amg: the native V-cycle's work is not this hierarchy's");
    nv_call c = {h, w, team, r, z};
    cls_team_run(team, nv_member, &c);
    return CLS_OK;
}
