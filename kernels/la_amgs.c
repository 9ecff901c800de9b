/*
 * la_amgs.c: host side of amg_setup.cl (contract in la_amgs.h).
 *
 * Every kernel is a grid-stride loop over rows launched on one grid (ls
 * work-items, at most `groups` groups: enough to fill the device, few
 * enough that the Lanczos partial sums are one short read). The host only
 * decides: how many MIS rounds, how large the next buffer is (from a scan's
 * total), the Lanczos scalars. Those reads are the set-up's only
 * synchronisations: about 2 + rounds per level, plus one per scan.
 */
#include "la_amgs.h"
#include "la_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/parallel.h"
#include "../common/timer.h"

#define A_DBL(v) sizeof(cl_double), (const void *)&(v)

typedef struct {
    const int64_t *src;
    cl_int *dst;
} rp_ctx;

static void rp_range(void *arg, int range, int64_t b, int64_t e)
{
    (void)range;
    rp_ctx *c = arg;
    for (int64_t i = b; i < e; i++)
        c->dst[i] = (cl_int)c->src[i];
}

cl_int *la_amgs_rowptr32(const int64_t *rowptr, int64_t n)
{
    cl_int *rp = malloc((size_t)(n + 1) * sizeof *rp);
    if (rp) {
        rp_ctx c = {rowptr, rp};
        cls_parallel_for(n + 1, 1 << 16, rp_range, &c);
    }
    return rp;
}

static const char *const amgs_sources[] = {"amg_setup.cl"};

int la_amgs_buffer(la_ctx *la, size_t bytes, cl_mem *m, cls_error *err)
{
    return lai_alloc_buffer(la, "AMG set-up", bytes, CL_MEM_READ_WRITE, NULL, m, err);
}

int la_amgs_init(la_ctx *la, la_amgs *k, cls_error *err)
{
    memset(k, 0, sizeof *k);
    if (la->prec != LA_DOUBLE || !la->ocl->dev.fp64)
        return cls_fail(err, CLS_EUSAGE, "the AMG set-up on the device needs double precision");
    int rc = ocl_build_program(la->ocl, amgs_sources, 1, "", &k->prog, err);
    if (rc)
        return rc;
    struct {
        cl_kernel *k;
        const char *name;
    } ks[] = {{&k->k_diag, "amgs_diag"},
              {&k->k_mis_init, "amgs_mis_init"},
              {&k->k_mis_m1, "amgs_mis_m1"},
              {&k->k_mis_m2, "amgs_mis_m2"},
              {&k->k_root_flags, "amgs_root_flags"},
              {&k->k_agg1, "amgs_agg1"},
              {&k->k_agg2, "amgs_agg2"},
              {&k->k_agg_sizes, "amgs_agg_sizes"},
              {&k->k_tval, "amgs_tval"},
              {&k->k_prolong_rows, "amgs_prolong_rows"},
              {&k->k_compact, "amgs_compact"},
              {&k->k_tr_count, "amgs_tr_count"},
              {&k->k_tr_scatter, "amgs_tr_scatter"},
              {&k->k_rank_sort, "amgs_rank_sort"},
              {&k->k_dinv, "amgs_dinv"},
              {&k->k_lz_start, "amgs_lz_start"},
              {&k->k_lz_w, "amgs_lz_w"},
              {&k->k_lz_orth, "amgs_lz_orth"},
              {&k->k_from_sell, "amgs_from_sell"},
              {&k->k_mis_m1_team, "amgs_mis_m1_team"},
              {&k->k_mis_m2_team, "amgs_mis_m2_team"}};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++)
        if ((rc = ocl_create_kernel(k->prog, ks[i].name, ks[i].k, err))) {
            la_amgs_release(k);
            return rc;
        }
    /* one grid for all: 256 work-items (the smallest kernel limit), 16
     * groups per compute unit */
    size_t ls = 256;
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++)
        ls = lai_kernel_max(la, *ks[i].k, ls);
    k->ls = lai_pow2_floor(ls ? ls : 1);
    k->groups = lai_max_sz(1, (size_t)la->ocl->dev.compute_units * 16);
    if ((rc = la_amgs_buffer(la, k->groups * sizeof(cl_double), &k->part, err)) ||
        (rc = la_amgs_buffer(la, sizeof(cl_int), &k->ctr, err)) ||
        (rc = la_sparse_init(la, &k->sp, err))) {
        la_amgs_release(k);
        return rc;
    }
    return CLS_OK;
}

void la_amgs_release(la_amgs *k)
{
    cl_kernel *ks[] = {&k->k_diag,       &k->k_mis_init,     &k->k_mis_m1,    &k->k_mis_m2,
                       &k->k_root_flags, &k->k_agg1,         &k->k_agg2,      &k->k_agg_sizes,
                       &k->k_tval,       &k->k_prolong_rows, &k->k_compact,   &k->k_tr_count,
                       &k->k_tr_scatter, &k->k_rank_sort,    &k->k_dinv,      &k->k_lz_start,
                       &k->k_lz_w,       &k->k_lz_orth,      &k->k_from_sell, &k->k_mis_m1_team,
                       &k->k_mis_m2_team};
    cl_mem *ms[] = {&k->part, &k->ctr};
    lai_release_objects(ks, (int)(sizeof ks / sizeof *ks), ms, 2);
    la_sparse_release(&k->sp);
    if (k->prog)
        clReleaseProgram(k->prog);
    k->prog = NULL;
}

/* the grid of a row loop over n */
int la_amgs_run(la_ctx *la, la_amgs *k, cl_kernel kr, const char *name, int64_t n, cls_error *err)
{
    if (n <= 0)
        return CLS_OK;
    size_t need = (size_t)((n + (int64_t)k->ls - 1) / (int64_t)k->ls);
    return lai_launch(la, kr, name, lai_min_sz(need, k->groups), k->ls, err);
}

int la_amgs_fill_int(la_ctx *la, cl_mem m, cl_int v, size_t count, cls_error *err)
{
    if (!count)
        return CLS_OK;
    cl_int st =
        clEnqueueFillBuffer(la->ocl->queue, m, &v, sizeof v, 0, count * sizeof v, 0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueFillBuffer(AMG set-up)");
    return CLS_OK;
}

int la_amgs_read_int(la_ctx *la, cl_mem m, cl_int *v, cls_error *err)
{
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, m, CL_TRUE, 0, sizeof *v, v, 0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(AMG set-up counter)");
    return CLS_OK;
}

int la_amgs_csr_from_sell(la_ctx *la, la_amgs *k, const la_csr *S, const int64_t *rowptr,
                          la_dcsr *D, cls_error *err)
{
    memset(D, 0, sizeof *D);
    if (S->variant != LA_SPMV_SELL || !S->aux || !S->fcol || !S->fval)
        return cls_fail(err, CLS_EOTHER, "la_amgs_csr_from_sell: the matrix is not in SELL form");
    size_t n = (size_t)S->nrows, nnz = (size_t)S->nnz;
    const char *pe = getenv("CLSOLVE_AMG_PROFILE");
    int prof = pe && pe[0] == '1';
    double t0 = cls_now();
    cl_int *rp = la_amgs_rowptr32(rowptr, (int64_t)n);
    if (!rp)
        return cls_fail(err, CLS_EOTHER, "out of memory converting row pointers");
    double t1 = cls_now();
    cl_int cn = (cl_int)n, C = (cl_int)S->sell_c, has_perm = S->perm != NULL;
    cl_mem perm = S->perm ? S->perm : S->aux; /* any buffer when unused */
    int rc;
    if (!(rc = la_amgs_buffer(la, (n + 1) * sizeof(cl_int), &D->rowptr, err)) &&
        !(rc = la_amgs_buffer(la, (nnz ? nnz : 1) * sizeof(cl_int), &D->col, err)) &&
        !(rc = la_amgs_buffer(la, (nnz ? nnz : 1) * sizeof(cl_double), &D->val, err))) {
        cl_int st = clEnqueueWriteBuffer(la->ocl->queue, D->rowptr, CL_TRUE, 0,
                                         (n + 1) * sizeof(cl_int), rp, 0, NULL, NULL);
        if (st != CL_SUCCESS)
            rc =
                cls_fail(err, CLS_EOTHER, "clEnqueueWriteBuffer(row pointers): %s", ocl_errstr(st));
    }
    free(rp);
    double t2 = cls_now();
    if (!rc)
        rc = lai_set_args(k->k_from_sell, "amgs_from_sell", err, 10, A_INT(cn), A_INT(C),
                          A_MEM(D->rowptr), A_MEM(S->aux), A_MEM(perm), A_INT(has_perm),
                          A_MEM(S->fcol), A_MEM(S->fval), A_MEM(D->col), A_MEM(D->val));
    if (!rc)
        rc = la_amgs_run(la, k, k->k_from_sell, "amgs_from_sell", (int64_t)n, err);
    if (prof && !rc && !(rc = la_finish(la, err)))
        fprintf(stderr,
                "amg_dsetup: fine CSR from SELL: row pointers %.2f ms, buffers and upload %.2f "
                "ms, gather %.2f ms\n",
                1e3 * (t1 - t0), 1e3 * (t2 - t1), 1e3 * (cls_now() - t2));
    if (rc) {
        la_dcsr_release(D);
        return rc;
    }
    D->nrows = S->nrows;
    D->ncols = S->ncols;
    D->nnz = S->nnz;
    return CLS_OK;
}

/* CSR arrays of a host matrix on the device (int32 row pointers) */
static int dcsr_upload(la_ctx *la, const csr_matrix *A, la_dcsr *D, cls_error *err)
{
    memset(D, 0, sizeof *D);
    size_t n = (size_t)A->nrows, nnz = (size_t)A->nnz;
    cl_int *rp = la_amgs_rowptr32(A->rowptr, A->nrows);
    if (!rp)
        return cls_fail(err, CLS_EOTHER, "out of memory converting row pointers");
    int rc;
    cl_int st = CL_SUCCESS;
    if (!(rc = la_amgs_buffer(la, (n + 1) * sizeof(cl_int), &D->rowptr, err)) &&
        !(rc = la_amgs_buffer(la, (nnz ? nnz : 1) * sizeof(cl_int), &D->col, err)) &&
        !(rc = la_amgs_buffer(la, (nnz ? nnz : 1) * sizeof(cl_double), &D->val, err))) {
        cl_command_queue q = la->ocl->queue;
        st = clEnqueueWriteBuffer(q, D->rowptr, CL_TRUE, 0, (n + 1) * sizeof(cl_int), rp, 0, NULL,
                                  NULL);
        if (st == CL_SUCCESS && nnz)
            st = clEnqueueWriteBuffer(q, D->col, CL_TRUE, 0, nnz * sizeof(cl_int), A->col, 0, NULL,
                                      NULL);
        if (st == CL_SUCCESS && nnz)
            st = clEnqueueWriteBuffer(q, D->val, CL_TRUE, 0, nnz * sizeof(cl_double), A->val, 0,
                                      NULL, NULL);
        if (st != CL_SUCCESS)
            rc = cls_fail(err, CLS_EOTHER, "uploading the matrix for a set-up failed: %s",
                          ocl_errstr(st));
    }
    free(rp);
    if (rc)
        la_dcsr_release(D);
    D->nrows = A->nrows;
    D->ncols = A->ncols;
    D->nnz = A->nnz;
    return rc;
}

int la_amgs_csr_of(la_ctx *la, la_amgs *k, const csr_matrix *A, const la_csr *dA0, la_dcsr *D,
                   int *owned, cls_error *err)
{
    memset(D, 0, sizeof *D);
    *owned = 0;
    int csr_form = dA0 && dA0->rowptr && dA0->col && dA0->val &&
                   (dA0->variant == LA_SPMV_SCALAR || dA0->variant == LA_SPMV_VECTOR ||
                    dA0->variant == LA_SPMV_ADAPTIVE);
    if (csr_form) {
        *D = (la_dcsr){dA0->rowptr, dA0->col, dA0->val, A->nrows, A->ncols, A->nnz};
        return CLS_OK;
    }
    int rc = dA0 && dA0->variant == LA_SPMV_SELL
                 ? la_amgs_csr_from_sell(la, k, dA0, A->rowptr, D, err)
                 : dcsr_upload(la, A, D, err);
    *owned = rc == CLS_OK;
    return rc;
}

int la_amgs_diag(la_ctx *la, la_amgs *k, const la_dcsr *A, cl_mem diag, cl_mem dsq, int64_t *bad,
                 cls_error *err)
{
    cl_int n = (cl_int)A->nrows, b = INT32_MAX;
    int rc;
    *bad = -1;
    if ((rc = la_amgs_fill_int(la, k->ctr, INT32_MAX, 1, err)) ||
        (rc = lai_set_args(k->k_diag, "amgs_diag", err, 7, A_INT(n), A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(A->val), A_MEM(diag), A_MEM(dsq), A_MEM(k->ctr))) ||
        (rc = la_amgs_run(la, k, k->k_diag, "amgs_diag", n, err)) ||
        (rc = la_amgs_read_int(la, k->ctr, &b, err)))
        return rc;
    if (b != INT32_MAX)
        *bad = b;
    return CLS_OK;
}

/* The lanes per row of the MIS rounds' team kernels for A, or 0 for one
 * work-item a row: about a quarter of the mean row, 4 to 32 (and at most
 * the group), from AMGS_TEAM_MIN_ROW entries a row on */
static int amgs_team_lanes(const la_amgs *k, const la_dcsr *A)
{
    const double mean = A->nrows ? (double)A->nnz / (double)A->nrows : 0.0;
    const char *f = getenv("CLSOLVE_AMGS_TEAM");
    int on = mean >= AMGS_TEAM_MIN_ROW;
    if (f && (*f == '0' || *f == '1'))
        on = *f == '1';
    if (!on)
        return 0;
    int lanes = 4;
    while (lanes < 32 && 4.0 * lanes < mean)
        lanes *= 2;
    while ((size_t)lanes > k->ls)
        lanes /= 2;
    return lanes >= 2 ? lanes : 0;
}

/* a team kernel over n rows, lanes work-items a row, on the set-up's grid */
static int amgs_run_team(la_ctx *la, la_amgs *k, cl_kernel kr, const char *name, int64_t n,
                         int lanes, cls_error *err)
{
    const int64_t per = (int64_t)(k->ls / (size_t)lanes);
    size_t need = (size_t)((n + per - 1) / per);
    return lai_launch(la, kr, name, lai_min_sz(need, k->groups), k->ls, err);
}

int la_amgs_aggregate(la_ctx *la, la_amgs *k, const la_dcsr *A, cl_mem dsq, double theta,
                      cl_mem agg, int64_t *naggs, int64_t *left, int *rounds, cls_error *err)
{
    cl_int n = (cl_int)A->nrows;
    cl_mem t = NULL, m1 = NULL, flag = NULL, roff = NULL, agg1 = NULL;
    int rc;
    *naggs = *left = 0;
    *rounds = 0;
    if (n == 0)
        return CLS_OK;
    size_t nn = (size_t)n;
    if ((rc = la_amgs_buffer(la, nn * sizeof(cl_ulong), &t, err)) ||
        (rc = la_amgs_buffer(la, nn * sizeof(cl_ulong), &m1, err)) ||
        (rc = lai_set_args(k->k_mis_init, "amgs_mis_init", err, 7, A_INT(n), A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(A->val), A_MEM(dsq), A_DBL(theta), A_MEM(t))) ||
        (rc = la_amgs_run(la, k, k->k_mis_init, "amgs_mis_init", n, err)) ||
        (rc = lai_set_args(k->k_mis_m1, "amgs_mis_m1", err, 8, A_INT(n), A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(A->val), A_MEM(dsq), A_DBL(theta), A_MEM(t),
                           A_MEM(m1))) ||
        (rc = lai_set_args(k->k_mis_m2, "amgs_mis_m2", err, 9, A_INT(n), A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(A->val), A_MEM(dsq), A_DBL(theta), A_MEM(t),
                           A_MEM(m1), A_MEM(k->ctr))))
        goto done;
    const cl_int lanes = amgs_team_lanes(k, A);
    if (lanes && ((rc = lai_set_args(k->k_mis_m1_team, "amgs_mis_m1_team", err, 10, A_INT(n),
                                     A_MEM(A->rowptr), A_MEM(A->col), A_MEM(A->val), A_MEM(dsq),
                                     A_DBL(theta), A_MEM(t), A_MEM(m1), A_INT(lanes),
                                     A_LOCAL(k->ls * sizeof(cl_ulong)))) ||
                  (rc = lai_set_args(k->k_mis_m2_team, "amgs_mis_m2_team", err, 11, A_INT(n),
                                     A_MEM(A->rowptr), A_MEM(A->col), A_MEM(A->val), A_MEM(dsq),
                                     A_DBL(theta), A_MEM(t), A_MEM(m1), A_MEM(k->ctr), A_INT(lanes),
                                     A_LOCAL(k->ls * sizeof(cl_ulong))))))
        goto done;
    /* rounds until none is undecided: each enters at least the largest
     * undecided tuple, so at most n rounds (a few dozen in practice) */
    for (cl_int undecided = n; undecided > 0; (*rounds)++) {
        if (*rounds > n) {
            rc = cls_fail(err, CLS_EOTHER, "amg: the device MIS did not finish (%d rounds)",
                          *rounds);
            goto done;
        }
        if ((rc = la_amgs_fill_int(la, k->ctr, 0, 1, err)) ||
            (rc = lanes ? amgs_run_team(la, k, k->k_mis_m1_team, "amgs_mis_m1_team", n, lanes, err)
                        : la_amgs_run(la, k, k->k_mis_m1, "amgs_mis_m1", n, err)) ||
            (rc = lanes ? amgs_run_team(la, k, k->k_mis_m2_team, "amgs_mis_m2_team", n, lanes, err)
                        : la_amgs_run(la, k, k->k_mis_m2, "amgs_mis_m2", n, err)) ||
            (rc = la_amgs_read_int(la, k->ctr, &undecided, err)))
            goto done;
    }
    /* the roots numbered in row order, phase 1, phase 2 */
    int64_t roots = 0;
    cl_int lft = 0;
    if ((rc = la_amgs_buffer(la, nn * sizeof(cl_int), &flag, err)) ||
        (rc = la_amgs_buffer(la, (nn + 1) * sizeof(cl_int), &roff, err)) ||
        (rc = la_amgs_buffer(la, nn * sizeof(cl_int), &agg1, err)) ||
        (rc = lai_set_args(k->k_root_flags, "amgs_root_flags", err, 3, A_INT(n), A_MEM(t),
                           A_MEM(flag))) ||
        (rc = la_amgs_run(la, k, k->k_root_flags, "amgs_root_flags", n, err)) ||
        (rc = la_scan_i32(la, &k->sp, flag, n, roff, &roots, err)) ||
        (rc = lai_set_args(k->k_agg1, "amgs_agg1", err, 9, A_INT(n), A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(A->val), A_MEM(dsq), A_DBL(theta), A_MEM(t),
                           A_MEM(roff), A_MEM(agg1))) ||
        (rc = la_amgs_run(la, k, k->k_agg1, "amgs_agg1", n, err)) ||
        (rc = la_amgs_fill_int(la, k->ctr, 0, 1, err)) ||
        (rc = lai_set_args(k->k_agg2, "amgs_agg2", err, 9, A_INT(n), A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(A->val), A_MEM(dsq), A_DBL(theta), A_MEM(agg1),
                           A_MEM(agg), A_MEM(k->ctr))) ||
        (rc = la_amgs_run(la, k, k->k_agg2, "amgs_agg2", n, err)) ||
        (rc = la_amgs_read_int(la, k->ctr, &lft, err)))
        goto done;
    *naggs = roots;
    *left = lft;
done:
    if (t)
        clReleaseMemObject(t);
    if (m1)
        clReleaseMemObject(m1);
    if (flag)
        clReleaseMemObject(flag);
    if (roff)
        clReleaseMemObject(roff);
    if (agg1)
        clReleaseMemObject(agg1);
    return rc;
}

int la_amgs_prolong(la_ctx *la, la_amgs *k, const la_dcsr *A, cl_mem diag, cl_mem agg,
                    int64_t naggs, double omega, la_dcsr *P, cls_error *err)
{
    return la_amgs_prolong_t(la, k, A, diag, agg, NULL, naggs, omega, P, err);
}

int la_amgs_prolong_t(la_ctx *la, la_amgs *k, const la_dcsr *A, cl_mem diag, cl_mem agg,
                      cl_mem tval_in, int64_t naggs, double omega, la_dcsr *P, cls_error *err)
{
    memset(P, 0, sizeof *P);
    cl_int n = (cl_int)A->nrows, na = (cl_int)naggs;
    size_t nn = (size_t)n, nnz = (size_t)A->nnz;
    cl_mem size = NULL, tval = NULL, tcol = NULL, tv = NULL, cnt = NULL;
    int64_t total = 0;
    int rc = CLS_OK;
    if (!tval_in && /* T's values from the aggregates' sizes */
        ((rc = la_amgs_buffer(la, (size_t)(na ? na : 1) * sizeof(cl_int), &size, err)) ||
         (rc = la_amgs_buffer(la, (size_t)(na ? na : 1) * sizeof(cl_double), &tval, err)) ||
         (rc = la_amgs_fill_int(la, size, 0, (size_t)na, err)) ||
         (rc = lai_set_args(k->k_agg_sizes, "amgs_agg_sizes", err, 3, A_INT(n), A_MEM(agg),
                            A_MEM(size))) ||
         (rc = la_amgs_run(la, k, k->k_agg_sizes, "amgs_agg_sizes", n, err)) ||
         (rc = lai_set_args(k->k_tval, "amgs_tval", err, 3, A_INT(na), A_MEM(size), A_MEM(tval))) ||
         (rc = la_amgs_run(la, k, k->k_tval, "amgs_tval", na, err))))
        goto done;
    const cl_mem tv_use = tval_in ? tval_in : tval;
    if ((rc = la_amgs_buffer(la, (nnz ? nnz : 1) * sizeof(cl_int), &tcol, err)) ||
        (rc = la_amgs_buffer(la, (nnz ? nnz : 1) * sizeof(cl_double), &tv, err)) ||
        (rc = la_amgs_buffer(la, (nn ? nn : 1) * sizeof(cl_int), &cnt, err)) ||
        (rc = la_amgs_buffer(la, (nn + 1) * sizeof(cl_int), &P->rowptr, err)) ||
        (rc = lai_set_args(k->k_prolong_rows, "amgs_prolong_rows", err, 11, A_INT(n),
                           A_MEM(A->rowptr), A_MEM(A->col), A_MEM(A->val), A_MEM(diag), A_MEM(agg),
                           A_MEM(tv_use), A_DBL(omega), A_MEM(tcol), A_MEM(tv), A_MEM(cnt))) ||
        (rc = la_amgs_run(la, k, k->k_prolong_rows, "amgs_prolong_rows", n, err)) ||
        (rc = la_scan_i32(la, &k->sp, cnt, n, P->rowptr, &total, err)) ||
        (rc = la_amgs_buffer(la, (size_t)(total ? total : 1) * sizeof(cl_int), &P->col, err)) ||
        (rc = la_amgs_buffer(la, (size_t)(total ? total : 1) * sizeof(cl_double), &P->val, err)) ||
        (rc = lai_set_args(k->k_compact, "amgs_compact", err, 7, A_INT(n), A_MEM(A->rowptr),
                           A_MEM(P->rowptr), A_MEM(tcol), A_MEM(tv), A_MEM(P->col),
                           A_MEM(P->val))) ||
        (rc = la_amgs_run(la, k, k->k_compact, "amgs_compact", n, err)))
        la_dcsr_release(P);
    else {
        P->nrows = n;
        P->ncols = naggs;
        P->nnz = total;
    }
done:;
    cl_mem *ms[] = {&size, &tval, &tcol, &tv, &cnt};
    lai_release_objects(NULL, 0, ms, 5);
    return rc;
}

int la_amgs_transpose(la_ctx *la, la_amgs *k, const la_dcsr *M, la_dcsr *T, cls_error *err)
{
    memset(T, 0, sizeof *T);
    cl_int n = (cl_int)M->nrows, m = (cl_int)M->ncols;
    size_t nnz = (size_t)M->nnz, mm = (size_t)m, nz1 = nnz ? nnz : 1;
    cl_mem cnt = NULL, scol = NULL, sval = NULL;
    int64_t total = 0;
    /* the rank sort: one group of up to 256 per row, the row's columns in
     * local memory up to a quarter of it */
    size_t ls = lai_kernel_max(la, k->k_rank_sort, 256);
    ls = lai_pow2_floor(ls ? ls : 1);
    size_t lm = la->ocl->dev.local_mem ? (size_t)la->ocl->dev.local_mem / 4 : 4096;
    cl_int cap = (cl_int)(lm / sizeof(cl_int));
    const char *ce = getenv("CLSOLVE_AMGS_SORT_CAP"); /* tests: the global-memory path */
    if (ce && atoi(ce) > 0 && atoi(ce) < cap)
        cap = atoi(ce);
    size_t groups = lai_min_sz(mm ? mm : 1, lai_max_sz(1, (size_t)la->ocl->dev.compute_units * 64));
    int rc;
    if ((rc = la_amgs_buffer(la, (mm ? mm : 1) * sizeof(cl_int), &cnt, err)) ||
        (rc = la_amgs_buffer(la, (mm + 1) * sizeof(cl_int), &T->rowptr, err)) ||
        (rc = la_amgs_buffer(la, nz1 * sizeof(cl_int), &T->col, err)) ||
        (rc = la_amgs_buffer(la, nz1 * sizeof(cl_double), &T->val, err)) ||
        (rc = la_amgs_buffer(la, nz1 * sizeof(cl_int), &scol, err)) ||
        (rc = la_amgs_buffer(la, nz1 * sizeof(cl_double), &sval, err)) ||
        (rc = la_amgs_fill_int(la, cnt, 0, mm, err)) ||
        (rc = lai_set_args(k->k_tr_count, "amgs_tr_count", err, 4, A_INT(n), A_MEM(M->rowptr),
                           A_MEM(M->col), A_MEM(cnt))) ||
        (rc = la_amgs_run(la, k, k->k_tr_count, "amgs_tr_count", n, err)) ||
        (rc = la_scan_i32(la, &k->sp, cnt, m, T->rowptr, &total, err)) ||
        (rc = la_amgs_fill_int(la, cnt, 0, mm, err)) ||
        (rc = lai_set_args(k->k_tr_scatter, "amgs_tr_scatter", err, 8, A_INT(n), A_MEM(M->rowptr),
                           A_MEM(M->col), A_MEM(M->val), A_MEM(T->rowptr), A_MEM(cnt), A_MEM(scol),
                           A_MEM(sval))) ||
        (rc = la_amgs_run(la, k, k->k_tr_scatter, "amgs_tr_scatter", n, err)) ||
        (rc = lai_set_args(k->k_rank_sort, "amgs_rank_sort", err, 8, A_INT(m), A_MEM(T->rowptr),
                           A_MEM(scol), A_MEM(sval), A_MEM(T->col), A_MEM(T->val),
                           A_LOCAL((size_t)cap * sizeof(cl_int)), A_INT(cap))) ||
        (m > 0 && (rc = lai_launch(la, k->k_rank_sort, "amgs_rank_sort", groups, ls, err))))
        la_dcsr_release(T);
    else {
        T->nrows = m;
        T->ncols = n;
        T->nnz = total;
    }
    cl_mem *ms[] = {&cnt, &scol, &sval};
    lai_release_objects(NULL, 0, ms, 3);
    return rc;
}

int la_amgs_dinv(la_ctx *la, la_amgs *k, const la_dcsr *A, cl_mem diag, int l1, cl_mem dinv,
                 cls_error *err)
{
    cl_int n = (cl_int)A->nrows, f = l1 ? 1 : 0;
    int rc = lai_set_args(k->k_dinv, "amgs_dinv", err, 6, A_INT(n), A_MEM(A->rowptr), A_MEM(A->val),
                          A_MEM(diag), A_INT(f), A_MEM(dinv));
    return rc ? rc : la_amgs_run(la, k, k->k_dinv, "amgs_dinv", n, err);
}

/* the group partials of the last kernel, summed in group order */
static int part_sum(la_ctx *la, la_amgs *k, int64_t n, double *s, cls_error *err)
{
    size_t g = lai_min_sz((size_t)((n + (int64_t)k->ls - 1) / (int64_t)k->ls), k->groups);
    double buf[4096];
    double *h = g <= 4096 ? buf : malloc(g * sizeof *h);
    if (!h)
        return cls_fail(err, CLS_EOTHER, "out of memory reading the Lanczos sums");
    cl_int st =
        clEnqueueReadBuffer(la->ocl->queue, k->part, CL_TRUE, 0, g * sizeof *h, h, 0, NULL, NULL);
    double t = 0.0;
    for (size_t i = 0; i < g; i++)
        t += h[i];
    if (h != buf)
        free(h);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(Lanczos sums)");
    *s = t;
    return CLS_OK;
}

int la_amgs_lanczos(la_ctx *la, la_amgs *k, const la_csr *dA, cl_mem diag, int steps, double *alpha,
                    double *beta, int *kout, cls_error *err)
{
    int64_t n = dA->nrows;
    cl_int cn = (cl_int)n;
    *kout = 0;
    if (steps > 64)
        steps = 64;
    la_vec arr[3] = {{0}}, y = {0};
    int rc = CLS_OK;
    size_t lmem = k->ls * sizeof(cl_double);
    for (int i = 0; i < 3 && !rc; i++)
        if (!(rc = la_amgs_buffer(la, (size_t)n * sizeof(cl_double), &arr[i].buf, err)))
            arr[i].n = n;
    if (!rc && !(rc = la_amgs_buffer(la, (size_t)n * sizeof(cl_double), &y.buf, err)))
        y.n = n;
    int iv = 0, ivp = 1, iw = 2;
    double s = 0.0, sv, svp = 0.0, beta_k = 0.0;
    if (rc ||
        (rc = lai_set_args(k->k_lz_start, "amgs_lz_start", err, 6, A_INT(cn), A_MEM(diag),
                           A_MEM(arr[iv].buf), A_MEM(arr[ivp].buf), A_LOCAL(lmem),
                           A_MEM(k->part))) ||
        (rc = la_amgs_run(la, k, k->k_lz_start, "amgs_lz_start", n, err)) ||
        (rc = part_sum(la, k, n, &s, err)))
        goto done;
    sv = 1.0 / sqrt(s);
    int kk = 0;
    while (kk < steps) {
        double a = 0.0, b2 = 0.0;
        if ((rc = la_spmv(la, dA, &arr[iv], &y, err)) ||
            (rc =
                 lai_set_args(k->k_lz_w, "amgs_lz_w", err, 11, A_INT(cn), A_MEM(diag), A_MEM(y.buf),
                              A_MEM(arr[iv].buf), A_MEM(arr[ivp].buf), A_DBL(sv), A_DBL(svp),
                              A_DBL(beta_k), A_MEM(arr[iw].buf), A_LOCAL(lmem), A_MEM(k->part))) ||
            (rc = la_amgs_run(la, k, k->k_lz_w, "amgs_lz_w", n, err)) ||
            (rc = part_sum(la, k, n, &a, err)) ||
            (rc = lai_set_args(k->k_lz_orth, "amgs_lz_orth", err, 8, A_INT(cn), A_MEM(diag),
                               A_MEM(arr[iv].buf), A_DBL(sv), A_DBL(a), A_MEM(arr[iw].buf),
                               A_LOCAL(lmem), A_MEM(k->part))) ||
            (rc = la_amgs_run(la, k, k->k_lz_orth, "amgs_lz_orth", n, err)) ||
            (rc = part_sum(la, k, n, &b2, err)))
            goto done;
        alpha[kk] = a;
        beta[kk] = sqrt(fmax(b2, 0.0));
        kk++;
        if (!(beta[kk - 1] > 1e-12 * fabs(alpha[kk - 1])))
            break;
        int t = ivp;
        ivp = iv;
        iv = iw;
        iw = t;
        svp = sv;
        sv = 1.0 / beta[kk - 1];
        beta_k = beta[kk - 1];
    }
    *kout = kk;
done:
    for (int i = 0; i < 3; i++)
        if (arr[i].buf)
            clReleaseMemObject(arr[i].buf);
    if (y.buf)
        clReleaseMemObject(y.buf);
    return rc;
}
