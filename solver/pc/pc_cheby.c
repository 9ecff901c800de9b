/*
 * pc_cheby.c: the Chebyshev polynomial preconditioner.
 *
 * M^-1 = p(D^-1 A) D^-1, where p of degree m-1 makes 1 - t p(t) the
 * scaled Chebyshev polynomial T_m((theta - t)/delta) / T_m(theta/delta) on
 * [lo, hi], theta = (hi + lo)/2, delta = (hi - lo)/2: the residual
 * polynomial of m steps of the Chebyshev iteration for A z = r from z = 0
 * with Jacobi (Saad, "Iterative Methods for Sparse Linear Systems", 2nd ed.,
 * Algorithm 12.1; PETSc's KSPChebyshev used as a preconditioner, with
 * PCJACOBI inside):
 *
 *   d_0 = (1/theta) D^-1 r;  z = d_0;  res_0 = r;  rho_0 = delta/theta
 *   k = 1..m-1:  res_k = res_{k-1} - A d_{k-1}
 *                rho_k = 1 / (2 theta/delta - rho_{k-1})
 *                d_k = rho_k rho_{k-1} d_{k-1} + (2 rho_k / delta) D^-1 res_k
 *                z += d_k
 *
 * M^-1 = D^-1/2 p(D^-1/2 A D^-1/2) D^-1/2 is symmetric, and positive
 * definite when p > 0 on the spectrum of D^-1 A: on (0, lo] the residual
 * polynomial lies in (0, 1) (T_m is increasing beyond 1), on [lo, hi] its
 * modulus is below 1, so p(t) = (1 - q(t))/t > 0 on (0, hi]. Hence hi must
 * bound lambda_max from above: the Lanczos estimate (which approaches
 * lambda_max from below) times 1.1, PETSc's safety factor. lo is the
 * Lanczos estimate of lambda_min; measured against fixed ratios hi/10 ..
 * hi/1000 it gave the fewest iterations on every test matrix
 * (docs/preconditioners.md).
 *
 * The bounds come from `lanczos` steps of Jacobi-PCG on a pseudo-random
 * right-hand side (a hash of the global row, so every layout sees the same
 * vector), whose coefficients give the Lanczos tridiagonal matrix (Saad,
 * Sec. 6.7.3; Golub and Van Loan, Sec. 11.3.4; what PETSc's
 * KSPChebyshevEstEig does with KSPCG):
 *   T_jj = 1/alpha_j + beta_{j-1}/alpha_{j-1},  T_j,j+1 = sqrt(beta_j)/alpha_j
 * and bisection on Sturm counts gives T's extreme eigenvalues.
 *
 * Only SpMVs and vector updates: m - 1 SpMVs per application, each with
 * the engine's halo exchange, so the polynomial is global (not block
 * Jacobi) and adds no reduction to the iteration.
 *
 * Natively on a CPU device (one part; kernels/cpu/cpu_pc.c): one team call
 * per application, a step per pass with the SpMV fused into it and a
 * barrier between steps; d alternates between two host vectors, since a
 * step reads d_{k-1} at other rows' columns while it writes d_k.
 */
#include "pc_kind.h"
#include "../../kernels/cpu/cpu_ops.h"
#include "../../kernels/cpu/cpu_ws.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"

#define CHEB_SAFETY 1.1 /* hi = 1.1 lambda_max estimate (PETSc's) */

/* the kind's state: the recurrence's work vectors and coefficients */
typedef struct cheby_state {
    dvec cres, cd, cq; /* res_k, d_k (ghosted: A d), q = A d */
    double c0;         /* d_0 = c0 D^-1 r */
    double c1[32];     /* step k: d = c1[k] d + c2[k] D^-1 res */
    double c2[32];
    double *hd[2], *hres; /* the native apply's d (two) and res, n each, made at its first use */
    int64_t hn;
} cheby_state;

/* the bounds kept in the cache (by the whole matrix's hash) */
typedef struct cheby_bounds {
    double lmin, lmax;
    int lanczos;
} cheby_bounds;

void pc_cheby_coeffs(int degree, double lo, double hi, double *c0, double *c1, double *c2)
{
    const double theta = 0.5 * (hi + lo), delta = 0.5 * (hi - lo);
    const double sigma = theta / delta;
    double rho = 1.0 / sigma;
    *c0 = 1.0 / theta;
    for (int k = 1; k < degree; k++) {
        const double rn = 1.0 / (2.0 * sigma - rho);
        c1[k] = rn * rho;
        c2[k] = 2.0 * rn / delta;
        rho = rn;
    }
}

/* eigenvalues of T below x (Sturm sequence of the LDL' pivots) */
static int sturm_count(int m, const double *a, const double *b, double x)
{
    int count = 0;
    double d = 1.0;
    for (int i = 0; i < m; i++) {
        double off = i > 0 ? b[i - 1] * b[i - 1] : 0.0;
        d = a[i] - x - (i > 0 ? off / d : 0.0);
        if (d == 0.0)
            d = -1e-300; /* a pivot of exactly zero counts as negative */
        if (d < 0.0)
            count++;
    }
    return count;
}

void pc_tridiag_extremes(int m, const double *a, const double *b, double *lmin, double *lmax)
{
    /* Gershgorin interval, then bisection to ~1e-12 relative */
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < m; i++) {
        double r = (i > 0 ? fabs(b[i - 1]) : 0.0) + (i + 1 < m ? fabs(b[i]) : 0.0);
        lo = fmin(lo, a[i] - r);
        hi = fmax(hi, a[i] + r);
    }
    for (int which = 0; which < 2; which++) {
        double l = lo, h = hi;
        int want = which == 0 ? 1 : m; /* count(x) >= want: x above the eigenvalue */
        for (int it = 0; it < 200 && h - l > 1e-13 * fmax(fabs(l), fabs(h)); it++) {
            double mid = 0.5 * (l + h);
            if (sturm_count(m, a, b, mid) >= want)
                h = mid;
            else
                l = mid;
        }
        if (which == 0)
            *lmin = 0.5 * (l + h);
        else
            *lmax = 0.5 * (l + h);
    }
}

/* a value in [-1, 1) from a row's global index (splitmix64) */
static double cheb_random(int64_t row)
{
    uint64_t z = (uint64_t)row + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}

/* one global reduction of ndots dots */
static int cheb_dots(dsys *s, int ndots, const dvec *const *x, const dvec *const *y, double *v,
                     cls_error *err)
{
    dsum ls;
    dvec_dots_local(s, ndots, x, y, &ls);
    return dsys_allreduce(s, &ls, v, 0, NULL, err);
}

/*
 * The Lanczos loop's vector steps, on the devices (dvec: any parts,
 * collective) or natively on the host (one part on a CPU device whose solve
 * runs the native loops: pc_options.native_apply; on PoCL the kernels'
 * first launches at each work-group size compiled for 1.1 s with empty
 * caches). The loop, its checks and the tridiagonal matrix are written once
 * (pc_cheby_bounds).
 */
typedef struct lz_steps {
    /* r = b (the random vector); z = D^-1 r; p = z; *rz = r'z */
    int (*start)(void *c, double *rz, cls_error *err);
    int (*pq)(void *c, double *pq, cls_error *err);               /* q = A p; *pq = p'q */
    int (*rz)(void *c, double alpha, double *rz, cls_error *err); /* r -= alpha q; z = D^-1 r */
    void (*dir)(void *c, double beta);                            /* p = z + beta p */
} lz_steps;

/* ---- on the devices */
typedef struct lz_dev {
    pc *pc;
    dvec r, z, p, q;
} lz_dev;

static int lz_dev_start(void *c, double *rz, cls_error *err)
{
    lz_dev *d = c;
    dsys *s = d->pc->s;
    double **host = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *host);
    cls_error e;
    cls_error_clear(&e);
    /* a local failure is recorded (dsys_fail) and the rank goes on with the
     * collective steps: the next reduction tells every rank */
    if (!host) {
        cls_fail(&e, CLS_EOTHER, "out of memory for Lanczos");
        dsys_fail(s, &e);
    }
    if (dvec_create(s, 0, &d->r, &e) || dvec_create(s, 0, &d->z, &e) ||
        dvec_create(s, 1, &d->p, &e) || dvec_create(s, 0, &d->q, &e))
        dsys_fail(s, &e);
    for (int k = 0; host && !s->failed && k < s->nmine; k++) {
        const dpart *pt = &s->parts[k];
        host[k] = malloc((size_t)(pt->halo.nlocal ? pt->halo.nlocal : 1) * sizeof **host);
        if (!host[k]) {
            cls_fail(&e, CLS_EOTHER, "out of memory for Lanczos");
            dsys_fail(s, &e);
            break;
        }
        for (int64_t i = 0; i < pt->halo.nlocal; i++) /* part row order: dvec_upload permutes */
            host[k][i] = cheb_random(s->L->begin[pt->part] + i);
    }
    if (!s->failed && dvec_upload(s, &d->r, host, &e))
        dsys_fail(s, &e);
    for (int k = 0; host && k < s->nmine; k++)
        free(host[k]);
    free(host);
    dvec_pointwise(s, &d->pc->dinv, &d->r, &d->z);
    dvec_copy(s, &d->z, &d->p);
    const dvec *x1[1] = {&d->r}, *y1[1] = {&d->z};
    return cheb_dots(s, 1, x1, y1, rz, err);
}

static int lz_dev_pq(void *c, double *pq, cls_error *err)
{
    lz_dev *d = c;
    dvec_spmv(d->pc->s, &d->p, &d->q);
    const dvec *xp[1] = {&d->p}, *yq[1] = {&d->q};
    return cheb_dots(d->pc->s, 1, xp, yq, pq, err);
}

static int lz_dev_rz(void *c, double alpha, double *rz, cls_error *err)
{
    lz_dev *d = c;
    dsys *s = d->pc->s;
    dvec_axpy(s, -alpha, &d->q, &d->r);
    dvec_pointwise(s, &d->pc->dinv, &d->r, &d->z);
    const dvec *x1[1] = {&d->r}, *y1[1] = {&d->z};
    return cheb_dots(s, 1, x1, y1, rz, err);
}

static void lz_dev_dir(void *c, double beta)
{
    lz_dev *d = c;
    dvec_xpay(d->pc->s, &d->z, beta, &d->p);
}

static const lz_steps lz_dev_steps = {lz_dev_start, lz_dev_pq, lz_dev_rz, lz_dev_dir};

/* ---- natively: part 0's CSR buffers mapped (cpu_ws.h), host vectors */
typedef struct lz_host {
    cpu_ws ws;
    cpu_csr A;
    const double *d; /* D^-1 (pc->dinv_host) */
    double *r, *p, *q; /* no z = D^-1 r: each pass forms D^-1 r where it reads it */
    int64_t base;      /* the part's first global row (the random vector's seed) */
    int op;
    double a; /* alpha or beta */
} lz_host;

enum { LZ_START, LZ_PQ, LZ_RZ, LZ_DIR };

static void lz_host_member(void *ctx, int id, int nt)
{
    (void)nt;
    lz_host *h = ctx;
    const int64_t lo = h->ws.bound[id], hi = h->ws.bound[id + 1];
    double *restrict r = h->r, *restrict p = h->p;
    const double *restrict d = h->d;
    switch (h->op) {
    case LZ_START: /* r = random; p = D^-1 r; r'D^-1 r */
        CPU_WS_BLOCKS(&h->ws, lo, hi, blo, bhi, pt)
        {
            double s = 0.0;
            for (int64_t i = blo; i < bhi; i++) {
                r[i] = cheb_random(h->base + i);
                p[i] = d[i] * r[i];
                s += r[i] * p[i];
            }
            pt[0] = s;
        }
        break;
    case LZ_PQ: /* q = A p; p'q */
        CPU_WS_BLOCKS(&h->ws, lo, hi, blo, bhi, pt)
        cpu_spmv_dots(&h->A, p, h->q, NULL, 0, blo, bhi, pt);
        break;
    case LZ_RZ: /* r -= alpha q; r'D^-1 r: CG's own update pass */
        CPU_WS_BLOCKS(&h->ws, lo, hi, blo, bhi, pt)
        cpu_cgc_update(h->a, h->q, r, d, blo, bhi, pt);
        break;
    default: /* LZ_DIR: p = D^-1 r + beta p */
        for (int64_t i = lo; i < hi; i++)
            p[i] = d[i] * r[i] + h->a * p[i];
        break;
    }
}

static double lz_host_run(lz_host *h, int op, double a)
{
    h->op = op;
    h->a = a;
    cls_team_run(h->ws.team, lz_host_member, h);
    return op == LZ_DIR ? 0.0 : cpu_ws_sum(&h->ws, 0);
}

static int lz_host_start(void *c, double *rz, cls_error *err)
{
    (void)err;
    *rz = lz_host_run(c, LZ_START, 0.0);
    return CLS_OK;
}

static int lz_host_pq(void *c, double *pq, cls_error *err)
{
    (void)err;
    *pq = lz_host_run(c, LZ_PQ, 0.0);
    return CLS_OK;
}

static int lz_host_rz(void *c, double alpha, double *rz, cls_error *err)
{
    (void)err;
    *rz = lz_host_run(c, LZ_RZ, alpha);
    return CLS_OK;
}

static void lz_host_dir(void *c, double beta)
{
    (void)lz_host_run(c, LZ_DIR, beta);
}

static const lz_steps lz_host_steps = {lz_host_start, lz_host_pq, lz_host_rz, lz_host_dir};

static void lz_host_release(lz_host *h)
{
    cpu_ws_release(&h->ws);
    free(h->r);
    free(h->p);
    free(h->q);
}

/* the native steps for pc's one part, or 0 where the devices' run (several
 * parts, a solve on the kernels, a device order that is not the part's) */
static int lz_host_open(pc *pc, lz_host *h, cls_error *err)
{
    memset(h, 0, sizeof *h);
    dsys *s = pc->s;
    if (!pc->opt.native_apply || s->size != 1 || s->nmine != 1 || !pc->dinv_host ||
        s->parts[0].perm)
        return 0;
    dpart *pt = &s->parts[0];
    la_ctx *la = &pt->la;
    const la_csr *A = &pt->Ai;
    cls_error why;
    cls_error_clear(&why);
    if (!pt->have_Ai || cpu_ws_usable(la, A, &why) != CLS_OK || A->nrows != pt->halo.nlocal)
        return 0;
    const int64_t n = A->nrows;
    h->ws.la = la;
    const size_t vb = (size_t)(n ? n : 1) * sizeof(double);
    h->r = malloc(vb);
    h->p = malloc(vb);
    h->q = malloc(vb);
    if (!h->r || !h->p || !h->q) {
        lz_host_release(h);
        return -cls_fail(err, CLS_EOTHER, "out of memory for Lanczos");
    }
    int rc;
    if ((rc = cpu_ws_map_csr(&h->ws, A, &h->A, err)) ||
        (rc = cpu_ws_rows(&h->ws, h->A.rp, n, err))) {
        lz_host_release(h);
        return -rc;
    }
    h->d = pc->dinv_host;
    h->base = s->L->begin[pt->part];
    return 1;
}

/* Lanczos bounds of D^-1 A: `steps` of Jacobi-PCG from a random b */
int pc_cheby_bounds(pc *pc, int m, double *lmin, double *lmax, int *used, cls_error *err)
{
    lz_dev dev = {.pc = pc};
    lz_host host;
    const lz_steps *ops = &lz_dev_steps;
    void *c = &dev;
    const int native = lz_host_open(pc, &host, err);
    if (native < 0)
        return -native;
    if (native) {
        ops = &lz_host_steps;
        c = &host;
    }
    /* on the stack: a rank that failed to allocate them would leave the
     * others waiting in the steps' reductions */
    double al[PC_LANCZOS_MAX], be[PC_LANCZOS_MAX];
    if (m > PC_LANCZOS_MAX)
        m = PC_LANCZOS_MAX;
    double rz = 0.0, v;
    int steps = 0;
    int rc = ops->start(c, &rz, err); /* r = b; z = D^-1 r; p = z; rz = r'z */
    for (int j = 0; !rc && j < m && rz > 0.0 && isfinite(rz); j++) {
        if ((rc = ops->pq(c, &v, err))) /* q = A p; v = p'q */
            break;
        if (!isfinite(v)) {
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "chebyshev: p'Ap is %g in the Lanczos estimate of the spectrum: NaN "
                          "or Inf in the matrix",
                          v);
            break;
        }
        if (!(v > 0.0)) { /* D^-1 A is not positive definite: neither is A */
            rc = cls_fail(err, CLS_EBREAKDOWN,
                          "matrix is not positive definite (p'Ap = %.6g in step %d of the "
                          "Lanczos estimate of the Chebyshev bounds)",
                          v, j + 1);
            break;
        }
        const double alpha = rz / v;
        if ((rc = ops->rz(c, alpha, &v, err))) /* r -= alpha q; z = D^-1 r; v = r'z */
            break;
        const double beta = v / rz;
        al[j] = alpha;
        be[j] = beta;
        steps = j + 1;
        rz = v;
        ops->dir(c, beta); /* p = z + beta p */
        if (!(beta > 0.0) || !isfinite(beta))
            break;
    }
    if (!rc && steps == 0)
        rc = cls_fail(err, CLS_EBREAKDOWN,
                      "chebyshev: the Lanczos estimate of the spectrum took no step (r'D^-1 r = "
                      "%g)",
                      rz);
    if (!rc) {
        double *a = calloc((size_t)steps, sizeof *a), *b = calloc((size_t)steps, sizeof *b);
        if (!a || !b)
            rc = cls_fail(err, CLS_EOTHER, "out of memory for Lanczos");
        for (int j = 0; !rc && j < steps; j++) {
            a[j] = 1.0 / al[j] + (j > 0 ? be[j - 1] / al[j - 1] : 0.0);
            if (j + 1 < steps)
                b[j] = sqrt(be[j]) / al[j];
        }
        if (!rc)
            pc_tridiag_extremes(steps, a, b, lmin, lmax);
        free(a);
        free(b);
        *used = steps;
    }
    if (native)
        lz_host_release(&host);
    dvec_release(&dev.r);
    dvec_release(&dev.z);
    dvec_release(&dev.p);
    dvec_release(&dev.q);
    return rc;
}

/* the coefficients and work vectors for the bounds in pc->info (lmax > 0:
 * taken from the cache), else the Lanczos bounds first */
static int cheb_build(pc *pc, cheby_state *st, cls_error *err)
{
    dsys *s = pc->s;
    int rc, used = 0;
    double lmin = 0.0, lmax = 0.0;
    if (pc->info.lmax > 0.0) { /* bounds from the cache */
        lmin = pc->info.lmin;
        lmax = pc->info.lmax;
        used = pc->info.lanczos;
    } else if (pc->opt.degree > 1) {
        if ((rc = pc_cheby_bounds(pc, pc->opt.lanczos, &lmin, &lmax, &used, err)))
            return rc;
    } else {
        lmin = lmax = 1.0; /* degree 1 is Jacobi up to a scale: no bounds needed */
    }
    double hi = CHEB_SAFETY * lmax, lo = lmin;
    if (!(lo > 0.0) || !(lo < hi)) /* a rounded-away or degenerate lower bound */
        lo = hi * 1e-3;
    pc->info.lmin = lmin;
    pc->info.lmax = lmax;
    pc->info.lo = lo;
    pc->info.hi = hi;
    pc->info.degree = pc->opt.degree;
    pc->info.lanczos = used;
    pc_cheby_coeffs(pc->opt.degree, lo, hi, &st->c0, st->c1, st->c2);
    if (!isfinite(st->c0) || !(lmax > 0.0) || !isfinite(lmax))
        return cls_fail(err, CLS_EBREAKDOWN,
                        "chebyshev: no usable eigenvalue bounds (lambda_max estimate %g)", lmax);
    if (pc->opt.degree > 1 &&
        ((rc = dvec_create(s, 0, &st->cres, err)) || (rc = dvec_create(s, 1, &st->cd, err)) ||
         (rc = dvec_create(s, 0, &st->cq, err))))
        return rc;
    if (pc->opt.degree == 1 && (rc = dvec_create(s, 0, &st->cd, err)))
        return rc;
    return CLS_OK;
}

/* Collective: the bounds from the cache (every rank must hit for any to
 * reuse) or by Lanczos, then the coefficients and work vectors. */
static int pc_cheby_setup(pc *pc, cls_error *err)
{
    dsys *s = pc->s;
    if (pc->opt.degree < 1 || pc->opt.degree > 32)
        return cls_fail(err, CLS_EUSAGE, "chebyshev degree %d is not in 1..32", pc->opt.degree);
    cheby_state *st = calloc(1, sizeof *st);
    if (!st)
        return cls_fail(err, CLS_EOTHER, "out of memory for the preconditioner");
    pc->state = st;
    uint64_t key = 0;
    int hit = 0, rc;
    struct pc_cache_entry *e = NULL;
    const int64_t n = s->L->begin[s->L->nparts];
    const int cache = pc_cache_enabled(&pc->opt);
    if (cache) {
        /* the native Lanczos and the kernels' differ by rounding: bounds
         * kept apart, so that a job's bounds never depend on which filled
         * the cache first (the daemon's jobs of either kind) */
        const uint64_t salt = (uint64_t)pc->opt.lanczos * 7919u + (pc->opt.native_apply ? 1u : 0u);
        if ((rc = pc_cache_matrix_key(s, PRECOND_CHEBYSHEV, salt, &key, err)))
            return rc;
        e = pc_cache_get(key, PRECOND_CHEBYSHEV, n);
        hit = e != NULL;
        if (MPI_Allreduce(MPI_IN_PLACE, &hit, 1, MPI_INT, MPI_MIN, s->comm) != MPI_SUCCESS) {
            pc_cache_release(e);
            return cls_fail(err, CLS_EOTHER, "MPI_Allreduce(cache) failed");
        }
    }
    if (hit) {
        const cheby_bounds *bd = pc_cache_data(e);
        pc->info.lmin = bd->lmin;
        pc->info.lmax = bd->lmax;
        pc->info.lanczos = bd->lanczos;
        pc->info.parts_reused = s->nmine;
        rc = cheb_build(pc, st, err);
    } else {
        const double tb = cls_now();
        pc->info.lmax = 0.0; /* cheb_build estimates */
        rc = cheb_build(pc, st, err);
        pc->info.build_s += cls_now() - tb;
        pc->info.parts_built = s->nmine;
        cheby_bounds *bd = !rc && cache && !e ? malloc(sizeof *bd) : NULL;
        if (e && !rc) { /* this rank hit, another did not: refresh its entry */
            cheby_bounds *old = pc_cache_data(e);
            *old = (cheby_bounds){pc->info.lmin, pc->info.lmax, pc->info.lanczos};
        } else if (bd) {
            *bd = (cheby_bounds){pc->info.lmin, pc->info.lmax, pc->info.lanczos};
            struct pc_cache_entry *ne = pc_cache_put(key, PRECOND_CHEBYSHEV, n, bd, free);
            if (ne)
                pc_cache_release(ne);
            else
                free(bd);
        }
    }
    pc_cache_release(e);
    return rc;
}

void pc_cheby_poly(pc *pc, int degree, double c0, const double *c1, const double *c2, dvec *cd,
                   dvec *cq, dvec *cres, const dvec *r, dvec *z)
{
    dsys *s = pc->s;
    for (int k = 0; k < s->nmine; k++)
        DSYS_DO(s, pc_part_kernels(pc, k, DSYS_ERR));
    for (int k = 0; k < s->nmine; k++) { /* d = c0 D^-1 r; z = d */
        la_vec vd = pc_loc(s, &pc->dinv, k), vr = pc_loc(s, r, k), vz = pc_loc(s, z, k),
               dd = pc_loc(s, cd, k);
        DSYS_DO(s, la_cheb_first(&pc->part[k].k, c0, &vd, &vr, &dd, &vz, DSYS_ERR));
    }
    for (int j = 1; j < degree; j++) {
        dvec_spmv(s, cd, cq); /* q = A d (halo exchange) */
        for (int k = 0; k < s->nmine; k++) {
            la_vec vd = pc_loc(s, &pc->dinv, k), vq = pc_loc(s, cq, k),
                   vr = pc_loc(s, j == 1 ? r : cres, k), vs = pc_loc(s, cres, k),
                   dd = pc_loc(s, cd, k), vz = pc_loc(s, z, k);
            DSYS_DO(s, la_cheb_step(&pc->part[k].k, c1[j], c2[j], &vd, &vq, &vr, &vs, &dd, &vz,
                                    DSYS_ERR));
        }
    }
}

int pc_cheby_coef(const pc *pc, la_cheb_coef *out, cls_error *err)
{
    if (!pc || pc->type != PRECOND_CHEBYSHEV || !pc->state)
        return cls_fail(err, CLS_EOTHER, "pc_cheby_coef: not a set-up chebyshev preconditioner");
    const cheby_state *st = pc->state;
    memset(out, 0, sizeof *out);
    out->degree = pc->opt.degree;
    out->c0 = st->c0;
    memcpy(out->c1, st->c1, sizeof out->c1);
    memcpy(out->c2, st->c2, sizeof out->c2);
    return CLS_OK;
}

/* z = M^-1 r over every part: d_0 = c0 D^-1 r, then the recurrence with
 * one halo-exchanged SpMV per step */
static void pc_cheby_apply(pc *pc, const dvec *r, dvec *z)
{
    cheby_state *st = pc->state;
    pc_cheby_poly(pc, pc->opt.degree, st->c0, st->c1, st->c2, &st->cd, &st->cq, &st->cres, r, z);
}

/* the one-part form: the SpMV on part 0's own block, no exchange */
static int pc_cheby_apply_one(pc *pc, const la_vec *r, la_vec *z, cls_error *err)
{
    dsys *s = pc->s;
    cheby_state *st = pc->state;
    dpart *p = &s->parts[0];
    la_pck *k = &pc->part[0].k;
    la_vec vd = pc_loc(s, &pc->dinv, 0), dd = pc_loc(s, &st->cd, 0);
    int rc = pc_part_kernels(pc, 0, err);
    if (!rc)
        rc = la_cheb_first(k, st->c0, &vd, r, &dd, z, err);
    for (int j = 1; !rc && j < pc->opt.degree; j++) {
        la_vec vq = pc_loc(s, &st->cq, 0), vs = pc_loc(s, &st->cres, 0);
        if ((rc = la_spmv(&p->la, &p->Ai, &dd, &vq, err)))
            break;
        rc = la_cheb_step(k, st->c1[j], st->c2[j], &vd, &vq, j == 1 ? r : &vs, &vs, &dd, z, err);
    }
    return rc;
}

typedef struct cheb_call {
    pc *pc;
    const cpu_ws *ws;
    const cpu_csr *A;
    const double *r;
    double *z;
} cheb_call;

static void cheb_member(void *ctx, int id, int nt)
{
    (void)nt;
    const cheb_call *c = ctx;
    const cheby_state *st = c->pc->state;
    const double *dinv = c->pc->dinv_host;
    const int64_t lo = c->ws->bound[id], hi = c->ws->bound[id + 1];
    cpu_cheb_first(st->c0, dinv, c->r, st->hd[0], c->z, st->hres, lo, hi);
    for (int j = 1; j < c->pc->opt.degree; j++) {
        cls_team_barrier(c->ws->team); /* d_{j-1} complete in every row */
        cpu_cheb_step(c->A, st->c1[j], st->c2[j], dinv, st->hd[(j - 1) & 1], st->hd[j & 1],
                      st->hres, c->z, lo, hi);
    }
}

static int pc_cheby_apply_host(pc *pc, const cpu_ws *ws, const cpu_csr *A, const double *r,
                               double *z, cls_error *err)
{
    cheby_state *st = pc->state;
    if (!pc->dinv_host)
        return cls_fail(err, CLS_EOTHER, "chebyshev: no host diagonal for the native apply");
    if (st->hn != A->n) {
        for (int i = 0; i < 2; i++) {
            free(st->hd[i]);
            st->hd[i] = malloc((size_t)(A->n ? A->n : 1) * sizeof(double));
        }
        free(st->hres);
        st->hres = malloc((size_t)(A->n ? A->n : 1) * sizeof(double));
        st->hn = A->n;
        if (!st->hd[0] || !st->hd[1] || !st->hres) {
            st->hn = -1;
            return cls_fail(err, CLS_EOTHER, "out of memory for the native Chebyshev vectors");
        }
    }
    cheb_call c = {pc, ws, A, r, z};
    cls_team_run(ws->team, cheb_member, &c);
    return CLS_OK;
}

static void pc_cheby_release(pc *pc)
{
    cheby_state *st = pc->state;
    if (!st)
        return;
    free(st->hd[0]);
    free(st->hd[1]);
    free(st->hres);
    dvec_release(&st->cres);
    dvec_release(&st->cd);
    dvec_release(&st->cq);
    free(st);
    pc->state = NULL;
}

static void pc_cheby_info_json(const pc_info *in, json_t *o)
{
    json_object_set_new(o, "degree", json_integer(in->degree));
    json_object_set_new(o, "lanczos_steps", json_integer(in->lanczos));
    json_object_set_new(o, "lambda_min", json_real(in->lmin));
    json_object_set_new(o, "lambda_max", json_real(in->lmax));
    json_object_set_new(o, "interval", json_pack("[f, f]", in->lo, in->hi));
}

const pc_kind pc_cheby_kind = {
    .needs_diag = 1,
    .needs_kernels = 1,
    .collective = 1,
    .reports_setup = 1,
    .global_setup = 1,
    .setup = pc_cheby_setup,
    .apply = pc_cheby_apply,
    .apply_one = pc_cheby_apply_one,
    .apply_host = pc_cheby_apply_host,
    .release = pc_cheby_release,
    .info_json = pc_cheby_info_json,
};

void pc_cheby_ref(const csr_matrix *A, const double *dinv, int degree, double lo, double hi,
                  const double *r, double *z)
{
    const int64_t n = A->nrows;
    double c0, c1[32], c2[32];
    pc_cheby_coeffs(degree, lo, hi, &c0, c1, c2);
    double *d = malloc((size_t)(n ? n : 1) * sizeof *d), *res = malloc((size_t)(n ? n : 1) * 8);
    if (!d || !res) {
        free(d);
        free(res);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        d[i] = c0 * dinv[i] * r[i];
        z[i] = d[i];
        res[i] = r[i];
    }
    for (int j = 1; j < degree; j++) {
        double *q = malloc((size_t)(n ? n : 1) * sizeof *q);
        if (!q)
            break;
        for (int64_t i = 0; i < n; i++) {
            double t = 0.0;
            for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
                t += A->val[e] * d[A->col[e]];
            q[i] = t;
        }
        for (int64_t i = 0; i < n; i++) {
            res[i] -= q[i];
            d[i] = c1[j] * d[i] + c2[j] * dinv[i] * res[i];
            z[i] += d[i];
        }
        free(q);
    }
    free(d);
    free(res);
}
