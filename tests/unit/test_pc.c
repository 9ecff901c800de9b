/*
 * test_pc.c: the preconditioners (solver/pc/pc.h) against plain double
 * references on the host, on fresh random SPD matrices (seeded from the
 * clock, CLSOLVE_TEST_SEED replays):
 *   1. names: every name and PETSc alias through pc_options_set, the
 *      parameters' ranges, refusals naming the key;
 *   2. the Lanczos extremes of a tridiagonal matrix with known eigenvalues;
 *   3. IC(0) on the host: (L L')_ij = a_ij on A's pattern (the defining
 *      property), the exact solve against dense substitution, Jacobi sweeps
 *      converging to it; Kershaw's 4 x 4 SPD matrix, where IC(0) meets a
 *      negative pivot, gets a shift and a positive factor;
 *   4. on the device (PoCL), over one part and over 2-3 parts of random
 *      layouts: z = M^-1 r of chebyshev (degrees 1..5), ic0 (exact and
 *      1..3 sweeps), jacobi and (in a build with solver/amg/amg.h) amg, through
 *      pc.c's set-up and dispatch, against the host reference with the
 *      interval and factors the set-up chose, outputs poisoned with NaN
 *      first; the one-part form (pc_apply_one) against the same; and
 *      y'M^-1 x = x'M^-1 y, x'M^-1 x > 0 on random vectors (so PCG's theory
 *      holds); on one part, the native form (pc_apply_host: chebyshev,
 *      ic0, amg on the CPU loops of kernels/cpu/) against the same
 *      reference, on one thread and on three with the same bits, and (first
 *      trial) a whole native solve against the textbook PCG (ref_cg.h)
 *      with the same M. Skips (77) without an OpenCL device.
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ref_cg.h"
#include "common/team.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/cpu_ws.h"
#include "kernels/ocl.h"
#include "solver/dist/dvec.h"
#include "solver/dist/halo.h"
#include "solver/dist/partition.h"
#include "solver/pc/pc.h"
#include "solver/amg/amg.h"
#include "solver/krylov/krylov.h"

static cls_error err;
static int native_checked[PRECOND_AUTO + 1]; /* native applies compared, by kind */
static int native_solved[PRECOND_AUTO + 1];  /* native solves compared, by kind */
static int solve_trial;                      /* 1 in the trial whose native solves run */

#define OK(call)                                                                                   \
    do {                                                                                           \
        cls_error_clear(&err);                                                                     \
        int rc_ = (call);                                                                          \
        CHECK_MSG(rc_ == CLS_OK, "%s: %s", #call, err.msg);                                        \
    } while (0)

static int64_t rnd(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(check_rand() % (uint64_t)(hi - lo + 1));
}

/* A random sparse SPD matrix: symmetric off-diagonal entries in [-1, 1]
 * (about `per_row` per row, some long-range), diagonal = the row's
 * absolute sum times (1 + u), u in (0.05, 1): diagonally dominant, hence
 * SPD, but not an M-matrix (positive off-diagonals occur). */
static void random_spd(int64_t n, int per_row, csr_matrix *A)
{
    int64_t cap = n * (2 * per_row + 1) + 1;
    coo_matrix C;
    coo_init(&C);
    C.row = malloc((size_t)cap * sizeof *C.row);
    C.col = malloc((size_t)cap * sizeof *C.col);
    C.val = malloc((size_t)cap * sizeof *C.val);
    C.nrows = C.ncols = n;
    C.cap = cap;
    double *d = calloc((size_t)n, sizeof *d);
    for (int64_t i = 0; i < n; i++)
        for (int e = 0; e < per_row; e++) {
            int64_t j = e == 0 && i > 0 ? i - 1 : rnd(0, n - 1);
            if (j == i)
                continue;
            double v = 2.0 * check_uniform() - 1.0;
            C.row[C.nnz] = (int32_t)i, C.col[C.nnz] = (int32_t)j, C.val[C.nnz++] = v;
            C.row[C.nnz] = (int32_t)j, C.col[C.nnz] = (int32_t)i, C.val[C.nnz++] = v;
            d[i] += fabs(v);
            d[j] += fabs(v);
        }
    for (int64_t i = 0; i < n; i++) {
        C.row[C.nnz] = (int32_t)i, C.col[C.nnz] = (int32_t)i;
        C.val[C.nnz++] = (d[i] + 0.1) * (1.05 + 0.95 * check_uniform());
    }
    int64_t dup;
    OK(csr_from_coo(&C, A, &dup, &err));
    coo_free(&C);
    free(d);
}

/* ------------------------------------------------------------ host parts */

static void test_names(void)
{
    pc_options o;
    pc_options_default(&o);
    const char *names[][2] = {{"none", "none"},
                              {"identity", "none"},
                              {"jacobi", "jacobi"},
                              {"pbjacobi", "jacobi"},
                              {"chebyshev", "chebyshev"},
                              {"cheby", "chebyshev"},
                              {"ic0", "ic0"},
                              {"icc", "ic0"},
                              {"bjacobi", "ic0"},
                              {"amg", "amg"},
                              {"gamg", "amg"},
                              {"auto", "auto"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        OK(pc_options_set(&o, "precond", names[i][0], &err));
        CHECK_MSG(!strcmp(pc_name(o.type), names[i][1]), "%s -> %s", names[i][0], pc_name(o.type));
    }
    CHECK(pc_options_set(&o, "precond", "ilu", &err) == CLS_EINPUT && strstr(err.msg, "precond"));
    CHECK(pc_options_set(&o, "precond", "", &err) == CLS_EINPUT);
    CHECK(pc_options_set(&o, "precond", "Jacobi", &err) == CLS_EINPUT); /* names are exact */
    OK(pc_options_set(&o, "precond_degree", "7", &err));
    CHECK(o.degree == 7);
    CHECK(pc_options_set(&o, "precond_degree", "33", &err) == CLS_EINPUT &&
          strstr(err.msg, "precond_degree"));
    CHECK(pc_options_set(&o, "precond_degree", "4x", &err) == CLS_EINPUT);
    CHECK(pc_options_set(&o, "precond_sweeps", "-1", &err) == CLS_EINPUT);
    OK(pc_options_set(&o, "precond_sweeps", "0", &err));
    CHECK(o.sweeps == 0);
    CHECK(pc_options_set(&o, "precond_shift", "nan", &err) == CLS_EINPUT);
    OK(pc_options_set(&o, "precond_shift", "0.01", &err));
    CHECK(o.shift == 0.01);
    CHECK(pc_options_key("precond_lanczos") && !pc_options_key("precond_x") &&
          !pc_options_key("tol"));
    CHECK(pc_options_set(&o, "precondx", "1", &err) == CLS_EUSAGE);
    CHECK(pc_resolve(PRECOND_IC0, 10, 10, 1) == PRECOND_IC0);
    CHECK(pc_resolve(PRECOND_AUTO, 10, 10, 1) != PRECOND_AUTO);
    /* precond_setup: auto | host | device, nothing else */
    OK(pc_options_set(&o, "precond_setup", "device", &err));
    CHECK(o.setup == PC_SETUP_DEVICE && !strcmp(pc_setup_name(o.setup), "device"));
    OK(pc_options_set(&o, "precond_setup", "host", &err));
    CHECK(o.setup == PC_SETUP_HOST);
    CHECK(pc_options_set(&o, "precond_setup", "gpu", &err) == CLS_EINPUT &&
          strstr(err.msg, "precond_setup"));
    /* auto once the device is known: amg on one GPU in double from
     * PC_AUTO_GPU_AMG_NNZ entries, jacobi on a CPU, in float or split */
    char why[256];
    const int64_t big = (PC_AUTO_GPU_AMG_NNZ + 6) / 7; /* 7 big >= the bound */
    CHECK(pc_resolve_device(PRECOND_AUTO, big, 7 * big, 1, 1, 1, why, sizeof why) == PRECOND_AMG &&
          strstr(why, "amg:"));
    CHECK(pc_resolve_device(PRECOND_AUTO, big, 7 * big, 1, 0, 1, why, sizeof why) ==
          PRECOND_JACOBI);
    CHECK(pc_resolve_device(PRECOND_AUTO, big, 7 * big, 1, 1, 0, why, sizeof why) ==
          PRECOND_JACOBI);
    CHECK(pc_resolve_device(PRECOND_AUTO, big, 7 * big, 2, 1, 1, why, sizeof why) ==
          PRECOND_JACOBI);
    CHECK(pc_resolve_device(PRECOND_AUTO, big / 2, 7 * big / 2, 1, 1, 1, why, sizeof why) ==
              PRECOND_JACOBI &&
          strstr(why, "jacobi:"));
    /* entries, not rows: a 27-point stencil's fewer rows still get amg */
    CHECK(pc_resolve_device(PRECOND_AUTO, big / 3, 27 * (big / 3) + 27, 1, 1, 1, why, sizeof why) ==
          PRECOND_AMG);
    CHECK(pc_resolve_device(PRECOND_AUTO, big, 7 * big - 7 * 4096, 1, 1, 1, why, sizeof why) ==
          PRECOND_JACOBI);
    CHECK(pc_resolve_device(PRECOND_IC0, big, 7 * big, 1, 1, 1, why, sizeof why) == PRECOND_IC0);
}

static void test_tridiag(void)
{
    for (int m = 1; m <= 40; m += 13) {
        double a[64], b[64], lmin, lmax;
        for (int i = 0; i < m; i++)
            a[i] = 2.0, b[i] = -1.0;
        pc_tridiag_extremes(m, a, b, &lmin, &lmax);
        double emin = 2.0 - 2.0 * cos(M_PI / (m + 1)), emax = 2.0 - 2.0 * cos(m * M_PI / (m + 1));
        if (m == 1)
            emin = emax = 2.0;
        CHECK_MSG(fabs(lmin - emin) < 1e-10 && fabs(lmax - emax) < 1e-10,
                  "m %d: [%.15g, %.15g] vs [%.15g, %.15g]", m, lmin, lmax, emin, emax);
    }
}

/* dense L from the factor; checks (L L')_ij = a_ij on A's lower pattern */
static void check_ic0_property(const csr_matrix *A, const pc_ic0_factor *f, double tol)
{
    const int64_t n = A->nrows;
    double *L = calloc((size_t)(n * n), sizeof *L);
    for (int64_t i = 0; i < n; i++) {
        L[i * n + i] = 1.0 / f->dl[i];
        for (int32_t e = f->lrow[i]; e < f->lrow[i + 1]; e++)
            L[i * n + f->lcol[e]] = f->lval[e];
    }
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
            int64_t j = A->col[e];
            if (j > i)
                continue;
            double s = 0.0;
            for (int64_t k = 0; k <= j; k++)
                s += L[i * n + k] * L[j * n + k];
            double want = A->val[e] * (i == j ? 1.0 + f->shift : 1.0);
            worst = fmax(worst, fabs(s - want) / fabs(A->val[e]));
        }
    CHECK_MSG(worst < tol, "(LL')_ij vs a_ij: relative %.3g", worst);
    /* U is L' */
    for (int64_t i = 0; i < n; i++)
        for (int32_t e = f->urow[i]; e < f->urow[i + 1]; e++)
            CHECK(f->ucol[e] > i && f->uval[e] == L[f->ucol[e] * n + i]);
    free(L);
}

static void test_ic0_host(void)
{
    for (int trial = 0; trial < 6; trial++) {
        csr_matrix A;
        int64_t n = rnd(5, 120);
        random_spd(n, (int)rnd(1, 4), &A);
        pc_ic0_factor f;
        OK(pc_ic0_factor_build(&A, 0.0, &f, &err));
        if (err.code)
            continue;
        check_ic0_property(&A, &f, 1e-12);
        /* the exact solve: L (L' z) = r by dense substitution */
        double *r = malloc((size_t)n * 8), *z = malloc((size_t)n * 8), *zs = malloc((size_t)n * 8);
        double *t = malloc((size_t)n * 8);
        for (int64_t i = 0; i < n; i++)
            r[i] = 2.0 * check_uniform() - 1.0;
        pc_ic0_ref(&f, 0, r, z);
        /* L t = r, L' z2 = t */
        for (int64_t i = 0; i < n; i++) {
            double s = r[i];
            for (int32_t e = f.lrow[i]; e < f.lrow[i + 1]; e++)
                s -= f.lval[e] * t[f.lcol[e]];
            t[i] = s * f.dl[i];
        }
        double worst = 0.0;
        for (int64_t i = n - 1; i >= 0; i--) {
            double s = t[i];
            for (int32_t e = f.urow[i]; e < f.urow[i + 1]; e++)
                s -= f.uval[e] * zs[f.ucol[e]];
            zs[i] = s * f.dl[i];
        }
        for (int64_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(z[i] - zs[i]));
        CHECK_MSG(worst < 1e-12, "exact IC(0) solve off by %.3g", worst);
        /* enough sweeps reach the exact solve (L's strict part is nilpotent) */
        pc_ic0_ref(&f, (int)n, r, zs);
        worst = 0.0;
        for (int64_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(z[i] - zs[i]) / (1.0 + fabs(z[i])));
        CHECK_MSG(worst < 1e-10, "n sweeps vs exact: %.3g", worst);
        free(r), free(z), free(zs), free(t);
        pc_ic0_factor_free(&f);
        csr_free(&A);
    }
    /* Kershaw's matrix (SPD, eigenvalues 3 -+ 2 sqrt 2): IC(0)'s last pivot
     * is -5 without a shift */
    csr_matrix K;
    csr_init(&K);
    OK(csr_alloc(&K, 4, 4, 12, &err));
    const int32_t kc[12] = {0, 1, 3, 0, 1, 2, 1, 2, 3, 0, 2, 3};
    const double kv[12] = {3, -2, 2, -2, 3, -2, -2, 3, -2, 2, -2, 3};
    const int64_t kr[5] = {0, 3, 6, 9, 12};
    memcpy(K.rowptr, kr, sizeof kr);
    memcpy(K.col, kc, sizeof kc);
    memcpy(K.val, kv, sizeof kv);
    pc_ic0_factor f;
    OK(pc_ic0_factor_build(&K, 0.0, &f, &err));
    CHECK_MSG(f.shift > 0.0 && f.restarts > 0, "Kershaw: shift %g after %d restarts", f.shift,
              f.restarts);
    for (int i = 0; i < 4; i++)
        CHECK(f.dl[i] > 0.0 && isfinite(f.dl[i]));
    check_ic0_property(&K, &f, 1e-12);
    pc_ic0_factor_free(&f);
    csr_free(&K);
}

/* ---------------------------------------------------------- on a device */

typedef struct sys {
    csr_matrix blk;
    dpart parts[8];
    int nmine;
    part_layout L;
    dsys s;
    int open;
} sys;

static int64_t csr_nnz_fn(const void *ctx, int64_t i)
{
    const csr_matrix *A = ctx;
    return A->rowptr[i + 1] - A->rowptr[i];
}

/* A over nparts parts of this (single) rank, opened on the default device */
static int sys_open(const csr_matrix *A, int nparts, sys *S)
{
    memset(S, 0, sizeof *S);
    if (part_plan(A->nrows, csr_nnz_fn, A, 1, nparts, 1, 0, &S->L, &err))
        return -1;
    S->nmine = S->L.first[1] - S->L.first[0];
    OK(csr_alloc(&S->blk, A->nrows, A->ncols, A->nnz, &err));
    memcpy(S->blk.rowptr, A->rowptr, (size_t)(A->nrows + 1) * sizeof(int64_t));
    memcpy(S->blk.col, A->col, (size_t)A->nnz * sizeof(int32_t));
    memcpy(S->blk.val, A->val, (size_t)A->nnz * sizeof(double));
    halo_plan plans[8];
    for (int k = 0; k < S->nmine; k++) {
        int64_t off = S->L.begin[k], nr = S->L.begin[k + 1] - off;
        csr_matrix *V = &S->parts[k].A;
        V->rowptr = S->blk.rowptr + off;
        V->col = S->blk.col + S->blk.rowptr[off];
        V->val = S->blk.val + S->blk.rowptr[off];
        V->nrows = nr;
        V->ncols = A->ncols;
        V->nnz = S->blk.rowptr[off + nr] - S->blk.rowptr[off];
        S->parts[k].part = k;
        S->parts[k].slot = k;
        OK(halo_plan_local(&plans[k], V, &S->L, k, &err));
    }
    OK(halo_plan_exchange(MPI_COMM_WORLD, &S->L, plans, S->nmine, &err));
    for (int k = 0; k < S->nmine; k++)
        S->parts[k].halo = plans[k];
    int rc = dsys_open(&S->s, MPI_COMM_WORLD, &S->L, S->parts, S->nmine, "auto", S->nmine,
                       LA_DOUBLE, LA_SPMV_AUTO, 1, NULL, NULL, &err);
    S->open = rc == CLS_OK;
    return rc;
}

static void sys_close(sys *S)
{
    if (S->open)
        dsys_close(&S->s);
    for (int k = 0; k < S->nmine; k++)
        halo_plan_free(&S->parts[k].halo);
    csr_free(&S->blk);
    part_free(&S->L);
}

/* z = M^-1 r through the device (global vectors in, global out) */
static void dev_apply(sys *S, pc *pc, const double *r, double *z, int one)
{
    dsys *s = &S->s;
    dvec vr, vz;
    OK(dvec_create(s, 0, &vr, &err));
    OK(dvec_create(s, 0, &vz, &err));
    double *rs[8], *zs[8];
    for (int k = 0; k < S->nmine; k++) {
        rs[k] = (double *)r + S->L.begin[k];
        zs[k] = z + S->L.begin[k];
    }
    OK(dvec_upload(s, &vr, rs, &err));
    dvec_fill(s, NAN, &vz); /* poisoned: a row not written stays NaN */
    if (one)
        OK(pc_apply_one(pc, &vr.v[0], &vz.v[0], &err));
    else
        pc_apply(pc, &vr, &vz);
    CHECK_MSG(!s->failed, "pc_apply: %s", s->ferr.msg);
    OK(dvec_download(s, &vz, zs, &err));
    dvec_release(&vr);
    dvec_release(&vz);
}

/* The host twin of amg coupled across parts (pc_amg_coupled.c), from its
 * definition on the whole matrix in natural order: the parts' aggregates
 * (each part's block, device order, numbered part after part), P = (I -
 * omega D^-1 A) T with the whole A, A_c = P'AP and amg_build's hierarchy of
 * it, S the Chebyshev smoother on [0.1, 1.1] lambda_max; z = S r, then
 * z += P V(A_c) P'(r - A z), then z += S (r - A z). */
static void ref_apply_coupled(sys *S, const csr_matrix *A, pc *pc, const double *r, double *z)
{
    const int64_t n = A->nrows;
    amg_options ao;
    amg_options_default(&ao);
    int32_t *agg = malloc((size_t)n * sizeof *agg);
    double *tn = malloc((size_t)n * sizeof *tn), *dinv = malloc((size_t)n * sizeof *dinv);
    int64_t nc = 0;
    for (int k = 0; k < S->nmine; k++) {
        const dpart *p = &S->s.parts[k];
        const int64_t nl = p->halo.nlocal, off = S->L.begin[k];
        csr_matrix B;
        OK(pc_local_block(p, &B, &err));
        int32_t *a = malloc((size_t)(nl + 1) * sizeof *a);
        double *t = malloc((size_t)(nl + 1) * sizeof *t);
        int64_t na = 0;
        OK(amg_part_aggregates(&B, &ao, a, &na, &err));
        amg_tentative_values(a, nl, na, t);
        for (int64_t i = 0; i < nl; i++) {
            const int64_t g = off + (p->perm ? p->perm[i] : i);
            agg[g] = a[i] >= 0 ? (int32_t)(a[i] + nc) : -1;
            tn[g] = t[i];
        }
        nc += na;
        free(a), free(t);
        csr_free(&B);
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
            if (A->col[e] == i)
                dinv[i] = 1.0 / A->val[e];
    double *diag = malloc((size_t)n * sizeof *diag);
    for (int64_t i = 0; i < n; i++)
        diag[i] = 1.0 / dinv[i];
    csr_matrix P, R, Ac;
    csr_init(&P), csr_init(&R), csr_init(&Ac);
    const double lmax = pc->info.lmax;
    OK(amg_part_prolongator(A, agg, tn, nc, ao.omega_scale / lmax, &P, &err));
    OK(amg_csr_transpose(&P, &R, &err));
    csr_matrix AP;
    csr_init(&AP);
    /* A_c = R (A P) by dense columns: small systems only */
    double *Pd = calloc((size_t)(n * nc), sizeof *Pd), *APd = calloc((size_t)(n * nc), 8);
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = P.rowptr[i]; e < P.rowptr[i + 1]; e++)
            Pd[i * nc + P.col[e]] = P.val[e];
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
            for (int64_t c = 0; c < nc; c++)
                APd[i * nc + c] += A->val[e] * Pd[A->col[e] * nc + c];
    coo_matrix T;
    coo_init(&T);
    T.nrows = T.ncols = nc;
    for (int64_t I = 0; I < nc; I++)
        for (int64_t J = 0; J < nc; J++) {
            double v = 0.0;
            for (int64_t e = R.rowptr[I]; e < R.rowptr[I + 1]; e++)
                v += R.val[e] * APd[R.col[e] * nc + J];
            if (v != 0.0) {
                if (T.nnz == T.cap) {
                    T.cap = T.cap ? 2 * T.cap : 1024;
                    T.row = realloc(T.row, (size_t)T.cap * sizeof *T.row);
                    T.col = realloc(T.col, (size_t)T.cap * sizeof *T.col);
                    T.val = realloc(T.val, (size_t)T.cap * sizeof *T.val);
                }
                T.row[T.nnz] = (int32_t)I, T.col[T.nnz] = (int32_t)J, T.val[T.nnz++] = v;
            }
        }
    OK(csr_from_coo(&T, &Ac, NULL, &err));
    coo_free(&T);
    amg_hierarchy *h = NULL;
    OK(amg_build(&Ac, &ao, &h, &err));
    double *t = malloc((size_t)n * 8), *w = malloc((size_t)n * 8), *tc = malloc((size_t)nc * 8),
           *ec = malloc((size_t)nc * 8);
    const double lo = ao.cheb_lower * lmax, hi = ao.cheb_upper * lmax;
    pc_cheby_ref(A, dinv, ao.degree, lo, hi, r, z); /* z = S r */
    csr_spmv_ref(A, z, t);
    for (int64_t i = 0; i < n; i++)
        t[i] = r[i] - t[i];
    csr_spmv_ref(&R, t, tc);
    if (h)
        OK(amg_apply_ref(h, tc, ec, &err));
    csr_spmv_ref(&P, ec, w);
    for (int64_t i = 0; i < n; i++)
        z[i] += w[i];
    csr_spmv_ref(A, z, t);
    for (int64_t i = 0; i < n; i++)
        t[i] = r[i] - t[i];
    pc_cheby_ref(A, dinv, ao.degree, lo, hi, t, w);
    for (int64_t i = 0; i < n; i++)
        z[i] += w[i];
    amg_free(h);
    csr_free(&P), csr_free(&R), csr_free(&Ac), csr_free(&AP);
    free(agg), free(tn), free(dinv), free(diag), free(Pd), free(APd), free(t), free(w), free(tc),
        free(ec);
}

/* the host reference of M^-1 r for the set-up pc chose */
static void ref_apply(sys *S, const csr_matrix *A, pc *pc, const double *r, double *z)
{
    const int64_t n = A->nrows;
    if (pc->type == PRECOND_AMG && strstr(pc->info.amg, "\"coupled\"")) {
        ref_apply_coupled(S, A, pc, r, z);
        return;
    }
    if (pc->type == PRECOND_CHEBYSHEV || pc->type == PRECOND_JACOBI) {
        double *dinv = malloc((size_t)n * sizeof *dinv);
        for (int64_t i = 0; i < n; i++)
            for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
                if (A->col[e] == i)
                    dinv[i] = 1.0 / A->val[e];
        if (pc->type == PRECOND_JACOBI)
            for (int64_t i = 0; i < n; i++)
                z[i] = dinv[i] * r[i];
        else
            pc_cheby_ref(A, dinv, pc->opt.degree, pc->info.lo, pc->info.hi, r, z);
        free(dinv);
        return;
    }
    /* ic0 and amg: per part, on its block in device order */
    for (int k = 0; k < S->nmine; k++) {
        const dpart *p = &S->s.parts[k];
        int64_t nl = p->halo.nlocal, off = S->L.begin[k];
        csr_matrix B;
        OK(pc_local_block(p, &B, &err));
        double *rd = malloc((size_t)(nl + 1) * 8), *zd = malloc((size_t)(nl + 1) * 8);
        for (int64_t i = 0; i < nl; i++)
            rd[i] = r[off + (p->perm ? p->perm[i] : i)];
        if (pc->type == PRECOND_IC0) {
            pc_ic0_factor f;
            OK(pc_ic0_factor_build(&B, pc->opt.shift, &f, &err));
            pc_ic0_ref(&f, pc->opt.sweeps, rd, zd);
            pc_ic0_factor_free(&f);
        }
        if (pc->type == PRECOND_AMG) { /* the AMG engineer's host V-cycle */
            amg_options ao;
            amg_options_default(&ao);
            amg_hierarchy *h = NULL;
            OK(amg_build(&B, &ao, &h, &err));
            if (h)
                OK(amg_apply_ref(h, rd, zd, &err));
            amg_free(h);
        }
        for (int64_t i = 0; i < nl; i++)
            z[off + (p->perm ? p->perm[i] : i)] = zd[i];
        free(rd), free(zd);
        csr_free(&B);
    }
}

/* z = M^-1 r by the native form (pc_apply_host) on a team of `threads`
 * (uneven ranges), the system's matrix as the native loops see it (int32
 * CSR); r and z in the one part's order (the natural one: pc_has_host) */
static void host_apply(pc *pc, const csr_matrix *A, int threads, const double *r, double *z)
{
    const int64_t n = A->nrows;
    int32_t *rp = malloc((size_t)(n + 1) * sizeof *rp);
    for (int64_t i = 0; i <= n; i++)
        rp[i] = (int32_t)A->rowptr[i];
    const cpu_csr C = {rp, A->col, A->val, n};
    cpu_ws ws;
    memset(&ws, 0, sizeof ws);
    ws.team = cls_team_create(threads);
    ws.nt = cls_team_size(ws.team);
    ws.n = n;
    ws.bound = malloc((size_t)(ws.nt + 1) * sizeof *ws.bound);
    cpu_rows_split(rp, n, ws.nt, ws.bound);
    for (int64_t i = 0; i < n; i++)
        z[i] = NAN; /* poisoned: a row not written stays NaN */
    OK(pc_apply_host(pc, &ws, &C, r, z, &err));
    cls_team_destroy(ws.team);
    free(ws.bound);
    free(rp);
}

/* M through the device (the kernels' apply, checked against the host
 * reference above), as the reference PCG's preconditioner */
typedef struct dev_m {
    sys *S;
    pc *pc;
} dev_m;
static void dev_m_apply(void *ctx, const double *r, double *z)
{
    dev_m *m = ctx;
    dev_apply(m->S, m->pc, r, z, 0);
}

/* A whole solve on the native loops (la_pcn with the kind's native apply,
 * backend native) against the textbook PCG with the same M: iterations
 * within 1 + 2%, x to 1e-6, the true residual under tol. */
static void native_solve(sys *S, const csr_matrix *A, pc *pc, const char *what)
{
    const int64_t n = A->nrows;
    dpart *p = &S->s.parts[0];
    double *b = malloc((size_t)n * 8), *x = malloc((size_t)n * 8), *xr = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++)
        b[i] = 2.0 * check_uniform() - 1.0;
    const double tol = 1e-10;
    dvec vb, vx;
    OK(dvec_create(&S->s, 0, &vb, &err));
    OK(dvec_create(&S->s, 0, &vx, &err));
    double *bs[1] = {b}, *xs[1] = {x};
    OK(dvec_upload(&S->s, &vb, bs, &err));
    dvec_fill(&S->s, 0.0, &vx);
    cg_options o;
    memset(&o, 0, sizeof o);
    o.tol = tol;
    o.maxiter = 10000;
    o.precond = pc->type;
    o.apply = pc_apply_one;
    o.apply_ctx = pc;
    o.apply_host = pc_apply_host;
    o.backend = LA_BACKEND_NATIVE;
    la_vec lb = vb.v[0], lx = vx.v[0];
    lb.n = lx.n = n;
    cg_result res;
    cls_error_clear(&err);
    int rc = cg_solve(&p->la, &p->Ai, &lb, &lx, NULL, &o, &res, &err);
    CHECK_MSG(rc == CLS_OK && res.cpu_threads > 0, "%s: native solve rc %d (%s), threads %d", what,
              rc, err.msg, res.cpu_threads);
    OK(dvec_download(&S->s, &vx, xs, &err));
    dev_m m = {S, pc};
    const int64_t kr = ref_pcg(A, b, dev_m_apply, &m, tol, 10000, xr);
    CHECK_MSG(llabs(res.iterations - kr) <= 1 + kr / 50,
              "%s: %lld iterations native, %lld textbook", what, (long long)res.iterations,
              (long long)kr);
    double *ax = malloc((size_t)n * 8), e = 0, bb = 0;
    csr_spmv_ref(A, x, ax);
    for (int64_t i = 0; i < n; i++) {
        e += (b[i] - ax[i]) * (b[i] - ax[i]);
        bb += b[i] * b[i];
    }
    CHECK_MSG(sqrt(e / bb) <= tol, "%s: native true residual %.3g", what, sqrt(e / bb));
    CHECK_MSG(ref_rel_diff(x, xr, n) <= 1e-6, "%s: native x off the textbook's by %.3g", what,
              ref_rel_diff(x, xr, n));
    native_solved[pc->type]++;
    cg_result_free(&res);
    dvec_release(&vb);
    dvec_release(&vx);
    free(b), free(x), free(xr), free(ax);
}

static double dot(const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static void check_pc(sys *S, const csr_matrix *A, pc_options *o, const char *what)
{
    const int64_t n = A->nrows;
    pc pc;
    cls_error_clear(&err);
    int rc = pc_setup(&S->s, o, &pc, &err);
    CHECK_MSG(rc == CLS_OK, "%s: pc_setup: %s", what, err.msg);
    if (rc) {
        pc_release(&pc);
        return;
    }
    double *r = malloc((size_t)n * 8), *y = malloc((size_t)n * 8), *z = malloc((size_t)n * 8),
           *zr = malloc((size_t)n * 8), *zy = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) {
        r[i] = 2.0 * check_uniform() - 1.0;
        y[i] = 2.0 * check_uniform() - 1.0;
    }
    for (int one = 0; one <= (S->nmine == 1); one++) {
        dev_apply(S, &pc, r, z, one);
        ref_apply(S, A, &pc, r, zr);
        double worst = 0.0, scale = 0.0;
        for (int64_t i = 0; i < n; i++)
            scale = fmax(scale, fabs(zr[i]));
        for (int64_t i = 0; i < n; i++)
            worst = fmax(worst, isfinite(z[i]) ? fabs(z[i] - zr[i]) : INFINITY);
        /* the V-cycle's coarsest solve is a dense inverse: 1e-9 as its own tests */
        const double tol = pc.type == PRECOND_AMG ? 1e-9 : 1e-11;
        CHECK_MSG(worst <= tol * scale, "%s (%d parts%s): z off the reference by %.3g (of %.3g)",
                  what, S->nmine, one ? ", one-part form" : "", worst, scale);
    }
    /* the native form (kernels/cpu/, one part): the reference's M, the same
     * bits on one thread and on three */
    if (pc_has_host(&pc)) {
        double *h1 = malloc((size_t)n * 8), *h3 = malloc((size_t)n * 8);
        host_apply(&pc, A, 1, r, h1);
        host_apply(&pc, A, 3, r, h3);
        double worst = 0.0, scale = 0.0;
        int same = 1;
        for (int64_t i = 0; i < n; i++) {
            scale = fmax(scale, fabs(zr[i]));
            worst = fmax(worst, isfinite(h3[i]) ? fabs(h3[i] - zr[i]) : INFINITY);
            same &= memcmp(&h1[i], &h3[i], sizeof h1[i]) == 0;
        }
        const double tol = pc.type == PRECOND_AMG ? 1e-9 : 1e-11;
        CHECK_MSG(worst <= tol * scale, "%s: the native apply off the reference by %.3g (of %.3g)",
                  what, worst, scale);
        CHECK_MSG(same, "%s: the native apply differs between 1 and 3 threads", what);
        native_checked[pc.type]++;
        free(h1), free(h3);
        if (solve_trial)
            native_solve(S, A, &pc, what);
    } else {
        CHECK_MSG(S->nmine > 1 || pc.type == PRECOND_JACOBI, "%s: one part without a native apply",
                  what);
    }
    /* y'M^-1 r = r'M^-1 y, r'M^-1 r > 0 */
    dev_apply(S, &pc, y, zy, 0);
    double a = dot(y, z, n), b = dot(r, zy, n), c = dot(r, z, n);
    CHECK_MSG(fabs(a - b) <= 1e-10 * (fabs(a) + fabs(b)) + 1e-300, "%s: y'Mr %.17g vs r'My %.17g",
              what, a, b);
    CHECK_MSG(c > 0.0, "%s: r'Mr = %g", what, c);
    free(r), free(y), free(z), free(zr), free(zy);
    pc_release(&pc);
}

static void test_device(void)
{
    for (int trial = 0; trial < 4; trial++) {
        solve_trial = trial == 0;
        csr_matrix A;
        int64_t n = rnd(200, 1500);
        random_spd(n, (int)rnd(2, 5), &A);
        for (int nparts = 1; nparts <= 3; nparts += trial % 2 ? 2 : 1) {
            sys S;
            if (sys_open(&A, nparts, &S) != CLS_OK) {
                CHECK_MSG(0, "dsys_open: %s", err.msg);
                sys_close(&S);
                continue;
            }
            pc_options o;
            pc_options_default(&o);
            o.reuse = trial % 2; /* with and without the cache */
            o.type = PRECOND_JACOBI;
            check_pc(&S, &A, &o, "jacobi");
            o.type = PRECOND_CHEBYSHEV;
            for (o.degree = 1; o.degree <= 5; o.degree += 1 + (trial % 2)) {
                char w[64];
                snprintf(w, sizeof w, "chebyshev degree %d", o.degree);
                check_pc(&S, &A, &o, w);
            }
            o.type = PRECOND_IC0;
            for (o.sweeps = 0; o.sweeps <= 3; o.sweeps++) {
                char w[64];
                snprintf(w, sizeof w, "ic0 sweeps %d", o.sweeps);
                check_pc(&S, &A, &o, w);
            }
            o.type = PRECOND_AMG; /* through pc.c's glue: block, upload, apply */
            check_pc(&S, &A, &o, "amg");
            sys_close(&S);
        }
        csr_free(&A);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    MPI_Init(NULL, NULL);
    check_seed("test_pc");
    test_names();
    test_tridiag();
    test_ic0_host();
    ocl_device d;
    cls_error e;
    if (ocl_pick_device("auto", &d, &e) != CLS_OK) {
        MPI_Finalize();
        CHECK_SKIP("no OpenCL device: %s", e.msg);
    }
    test_device();
    /* the native form was compared for every kind that has one */
    CHECK_MSG(native_checked[PRECOND_CHEBYSHEV] > 0 && native_checked[PRECOND_IC0] > 0 &&
                  native_checked[PRECOND_AMG] > 0,
              "native applies compared: chebyshev %d, ic0 %d, amg %d",
              native_checked[PRECOND_CHEBYSHEV], native_checked[PRECOND_IC0],
              native_checked[PRECOND_AMG]);
    CHECK_MSG(native_solved[PRECOND_CHEBYSHEV] > 0 && native_solved[PRECOND_IC0] > 0 &&
                  native_solved[PRECOND_AMG] > 0,
              "native solves compared: chebyshev %d, ic0 %d, amg %d",
              native_solved[PRECOND_CHEBYSHEV], native_solved[PRECOND_IC0],
              native_solved[PRECOND_AMG]);
    dsys_warm_release_all();
    pc_cache_clear();
    int rc = check_done("test_pc");
    MPI_Finalize();
    return rc;
}
