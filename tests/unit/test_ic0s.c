/*
 * test_ic0s.c: IC(0) built on the device by fixed-point sweeps
 * (la_ic0s_factor) against the host's factorization in dependency order
 * (pc_ic0_factor_build), on PoCL here.
 *
 * 1. With as many sweeps as the dependency chains need, the device factor
 *    IS the host's: L's and U's patterns identical, values and 1/l_ii within
 *    1e-12 of the largest: on fresh random SPD matrices (test_amg_gen.h:
 *    M-matrices, and kind 2 with off-diagonals of both signs), poisson3d and
 *    the shared data's SPD matrices; and with a diagonal shift.
 * 2. With the default few sweeps, the preconditioner is close: PCG on the
 *    host with both factors (pc_ic0_ref's exact solves) on poisson3d 24 and
 *    1138_bus, the device factor's iterations within 10% of the host's.
 * 3. A matrix with a non-positive diagonal entry: the row is reported.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_dev.h"
#include "kernels/la_ic0s.h"
#include "matrices/gen.h"
#include "matrices/mm.h"
#include "solver/pc/pc.h"
#include "test_amg_gen.h"

static cls_error err;

#define OK(call)                                                                                   \
    do {                                                                                           \
        cls_error_clear(&err);                                                                     \
        int rc_ = (call);                                                                          \
        CHECK_MSG(rc_ == CLS_OK, "%s -> %d: %s", #call, rc_, err.msg);                             \
    } while (0)

static void rd(la_ctx *la, cl_mem m, size_t bytes, void *out)
{
    if (bytes)
        CHECK(clEnqueueReadBuffer(la->ocl->queue, m, CL_TRUE, 0, bytes, out, 0, NULL, NULL) ==
              CL_SUCCESS);
}

/* a device la_tri as the host factor's arrays */
typedef struct {
    int32_t *rp, *col;
    double *val, *dl;
} tri_host;

static void tri_down(la_ctx *la, const la_tri *t, tri_host *h)
{
    size_t n = (size_t)t->n, m = (size_t)t->nnz;
    h->rp = malloc((n + 1) * 4);
    h->col = malloc((m ? m : 1) * 4);
    h->val = malloc((m ? m : 1) * 8);
    h->dl = malloc((n ? n : 1) * 8);
    rd(la, t->rowptr, (n + 1) * 4, h->rp);
    rd(la, t->col, m * 4, h->col);
    rd(la, t->val, m * 8, h->val);
    rd(la, t->dl, n * 8, h->dl);
}

static void tri_free(tri_host *h)
{
    free(h->rp);
    free(h->col);
    free(h->val);
    free(h->dl);
}

/* the device factor against the host's: pattern exact, values within tol */
static void same_tri(const char *what, const char *which, int64_t n, const tri_host *d,
                     const int32_t *rp, const int32_t *col, const double *val, const double *dl,
                     double tol)
{
    int64_t bad_rp = -1, bad_col = -1, bad_val = -1, bad_dl = -1;
    double m = 0.0, md = 0.0;
    for (int64_t e = 0; e < rp[n]; e++)
        m = fmax(m, fabs(val[e]));
    for (int64_t i = 0; i < n; i++)
        md = fmax(md, fabs(dl[i]));
    for (int64_t i = 0; i <= n && bad_rp < 0; i++)
        if (d->rp[i] != rp[i])
            bad_rp = i;
    for (int64_t e = 0; bad_rp < 0 && e < rp[n]; e++) {
        if (d->col[e] != col[e] && bad_col < 0)
            bad_col = e;
        if (!(fabs(d->val[e] - val[e]) <= tol * m) && bad_val < 0)
            bad_val = e;
    }
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(d->dl[i] - dl[i]) <= tol * md) && bad_dl < 0)
            bad_dl = i;
    CHECK_MSG(bad_rp < 0 && bad_col < 0 && bad_val < 0 && bad_dl < 0,
              "%s, %s: row pointer %lld, column %lld, value %lld, 1/l_ii %lld differ", what, which,
              (long long)bad_rp, (long long)bad_col, (long long)bad_val, (long long)bad_dl);
}

/* 1: enough sweeps give the host's factor */
static void exact(la_ctx *la, la_ic0s *k, const char *what, const csr_matrix *A, double shift)
{
    pc_ic0_factor f;
    OK(pc_ic0_factor_build(A, shift, &f, &err));
    if (err.code)
        return;
    la_tri L, U;
    int64_t bad = 0;
    /* a chain of dependencies is at most a level deep times a row long */
    int sweeps = 4 * f.nllev + 16;
    OK(la_ic0s_factor(la, k, A, NULL, f.shift, sweeps, &L, &U, &bad, &err));
    CHECK_MSG(bad == -1, "%s: row %lld reported bad", what, (long long)bad);
    if (bad == -1 && !err.code) {
        tri_host dl, du;
        tri_down(la, &L, &dl);
        tri_down(la, &U, &du);
        same_tri(what, "L", f.n, &dl, f.lrow, f.lcol, f.lval, f.dl, 1e-12);
        same_tri(what, "U", f.n, &du, f.urow, f.ucol, f.uval, f.dl, 1e-12);
        tri_free(&dl);
        tri_free(&du);
        la_tri_release(&L);
        la_tri_release(&U);
    }
    printf("  %s: %lld rows, %d levels, %d sweeps: the host's factor (shift %g)\n", what,
           (long long)A->nrows, f.nllev, sweeps, f.shift);
    pc_ic0_factor_free(&f);
}

/* PCG on the host with M = U^-1 L^-1 (exact solves) of factor f */
static int64_t pcg_iters(const csr_matrix *A, const pc_ic0_factor *f)
{
    int64_t n = A->nrows;
    double *x = calloc((size_t)n, 8), *r = malloc((size_t)n * 8), *z = malloc((size_t)n * 8);
    double *p = malloc((size_t)n * 8), *q = malloc((size_t)n * 8), *one = calloc((size_t)n, 8);
    for (int64_t i = 0; i < n; i++)
        one[i] = 1.0;
    csr_spmv_ref(A, one, r); /* b = A 1, x = 0: r = b */
    double bb = 0.0;
    for (int64_t i = 0; i < n; i++)
        bb += r[i] * r[i];
    pc_ic0_ref(f, 0, r, z);
    memcpy(p, z, (size_t)n * 8);
    double rz = 0.0;
    for (int64_t i = 0; i < n; i++)
        rz += r[i] * z[i];
    int64_t it = 0;
    for (; it < 2000; it++) {
        double rr = 0.0;
        for (int64_t i = 0; i < n; i++)
            rr += r[i] * r[i];
        if (rr <= 1e-16 * bb)
            break;
        csr_spmv_ref(A, p, q);
        double pq = 0.0;
        for (int64_t i = 0; i < n; i++)
            pq += p[i] * q[i];
        double al = rz / pq;
        for (int64_t i = 0; i < n; i++) {
            x[i] += al * p[i];
            r[i] -= al * q[i];
        }
        pc_ic0_ref(f, 0, r, z);
        double rz1 = 0.0;
        for (int64_t i = 0; i < n; i++)
            rz1 += r[i] * z[i];
        for (int64_t i = 0; i < n; i++)
            p[i] = z[i] + rz1 / rz * p[i];
        rz = rz1;
    }
    free(x);
    free(r);
    free(z);
    free(p);
    free(q);
    free(one);
    return it;
}

/* 2: the default sweeps: a preconditioner as good within 10% */
static void close_enough(la_ctx *la, la_ic0s *k, const char *what, const csr_matrix *A)
{
    pc_ic0_factor f, g;
    OK(pc_ic0_factor_build(A, 0.0, &f, &err));
    la_tri L, U;
    int64_t bad = 0;
    OK(la_ic0s_factor(la, k, A, NULL, 0.0, 0, &L, &U, &bad, &err));
    if (err.code || bad != -1) {
        CHECK_MSG(0, "%s: the default sweeps failed (row %lld)", what, (long long)bad);
        pc_ic0_factor_free(&f);
        return;
    }
    /* the device factor in the host form (levels from the host's: the
     * pattern is the same) */
    tri_host dl, du;
    tri_down(la, &L, &dl);
    tri_down(la, &U, &du);
    g = f;
    g.lval = dl.val;
    g.uval = du.val;
    g.dl = dl.dl;
    int64_t ih = pcg_iters(A, &f), id = pcg_iters(A, &g);
    printf("  %s: PCG with exact IC(0) solves: %lld iterations with the host's factor, %lld with "
           "the device's (%d sweeps)\n",
           what, (long long)ih, (long long)id, LA_IC0S_SWEEPS);
    CHECK_MSG(id <= ih + ih / 10 + 1, "%s: %lld iterations with the device's factor, %lld host",
              what, (long long)id, (long long)ih);
    tri_free(&dl);
    tri_free(&du);
    la_tri_release(&L);
    la_tri_release(&U);
    pc_ic0_factor_free(&f);
}

int main(int argc, char **argv)
{
    check_seed("test_ic0s");
    const char *dir = argc > 1 ? argv[1] : NULL;
    ocl_ctx ocl;
    la_ctx la;
    test_dev_open(&ocl, &la);
    la_ic0s k;
    OK(la_ic0s_init(&la, &k, &err));
    char what[96];
    for (int kind = 0; kind < 3; kind++) {
        csr_matrix A;
        random_spd(kind, 500 + (int64_t)(check_rand() % 2500), &A);
        snprintf(what, sizeof what, "random kind %d", kind);
        exact(&la, &k, what, &A, 0.0);
        snprintf(what, sizeof what, "random kind %d, shift 0.01", kind);
        exact(&la, &k, what, &A, 0.01);
        csr_free(&A);
    }
    csr_matrix A;
    OK(gen_matrix(GEN_POISSON3D, 10, &A, &err));
    exact(&la, &k, "poisson3d 10", &A, 0.0);
    csr_free(&A);
    OK(gen_matrix(GEN_POISSON3D, 24, &A, &err));
    close_enough(&la, &k, "poisson3d 24", &A);
    /* 3: a negative diagonal in row 77 */
    for (int64_t e = A.rowptr[77]; e < A.rowptr[78]; e++)
        if (A.col[e] == 77)
            A.val[e] = -4.0;
    la_tri L, U;
    int64_t bad = 0;
    OK(la_ic0s_factor(&la, &k, &A, NULL, 0.0, 0, &L, &U, &bad, &err));
    CHECK_MSG(bad == 77 && !L.rowptr && !U.rowptr, "a negative diagonal: row %lld reported",
              (long long)bad);
    csr_free(&A);
    int data_missing = 1;
    const char *spd[] = {"1138_bus.mtx", "494_bus.mtx"};
    for (size_t m = 0; dir && m < sizeof spd / sizeof *spd; m++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/matrices/%s", dir, spd[m]);
        cls_error e;
        cls_error_clear(&e);
        if (mm_read_csr(path, NULL, &A, NULL, NULL, &e))
            continue;
        data_missing = 0;
        exact(&la, &k, spd[m], &A, 0.0);
        if (m == 0)
            close_enough(&la, &k, spd[m], &A);
        csr_free(&A);
    }
    la_ic0s_release(&k);
    la_release(&la);
    ocl_ctx_release(&ocl);
    int rc = check_done("test_ic0s");
    if (rc == 0 && data_missing)
        CHECK_SKIP("shared data not found under %s: its matrices were not tested",
                   dir ? dir : "(none)");
    return rc;
}
