/*
 * amg_dsetup.c: the smoothed-aggregation set-up on the device, level by
 * level, into a device hierarchy ready to apply (amg_build_device, amg.h).
 *
 * Why: on a GPU the host set-up was the whole cost of AMG (3.9 s of a 4.4 s
 * time to solution at poisson3d 256 on an H200, the iterations 0.15 s),
 * and every step of it is a loop over rows that the device runs at its
 * bandwidth. The level loop is amg.c's build_level with each step a call
 * of kernels/la_amgs.h (whose kernels are the host loops' bodies) or of
 * la_sparse.h (the scan behind every row-pointer array, the products of
 * R A P):
 *
 *   d, 1/sqrt d      amgs_diag            (not > 0: not SPD, refused)
 *   lambda_max       Lanczos, SpMV by la_spmv, T_k's eigenvalue on the host
 *   dinv             amgs_dinv            (the smoother's)
 *   aggregates       MIS(2) rounds, roots numbered by a scan, phases 1-2
 *   P                (I - omega D^-1 A) T merged per row, compacted by a scan
 *   R = P'           counted, scanned, scattered, rows sorted
 *   A_c = R (A P)    two la_spgemm
 *
 * A level's matrices never leave the device: each becomes the la_csr the
 * V-cycle runs (la_csr_adopt), and A_c is the next level's operator. Once a
 * level is small (amg_options.host_rows) the kernels' launches and reads
 * cost more than the work, so its operator is downloaded and amg_build
 * sets up the rest on the host, uploaded below the device levels by
 * amg_device.c's amg_upload_level: one hierarchy, one V-cycle.
 *
 * Same results: the diagonal, strength, aggregates, P and R are the host's
 * bits (the kernels repeat the host's arithmetic in its order); lambda_max
 * and A_c are sums in another order, equal within rounding
 * (tests/unit/test_amg_dsetup.c holds every level to amg_build's).
 *
 * The numeric re-set-up (amg_rebuild_device: the daemon's next job on a
 * matrix of the same pattern, other values) is the same loop with each
 * device level's aggregates given, taken from the earlier hierarchy
 * (amg_options.keep_aggregates kept them): the MIS rounds, the set-up's
 * only loop of many host reads, are skipped, and the rest is made anew
 * from the values, as amg_rebuild does on the host; so the two give the
 * same aggregates, P and R, and A_c within rounding.
 */
#include "amg_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"
#include "../../kernels/la_amgs.h"

/* the operator of a level back on the host (the host's levels start there) */
static int dcsr_download(la_ctx *la, const la_dcsr *D, csr_matrix *A, cls_error *err)
{
    int rc = csr_alloc(A, D->nrows, D->ncols, D->nnz, err);
    if (rc)
        return rc;
    size_t n = (size_t)D->nrows, nnz = (size_t)D->nnz;
    cl_int *rp = malloc((n + 1) * sizeof *rp);
    if (!rp) {
        csr_free(A);
        return cls_fail(err, CLS_EOTHER, "amg: out of memory reading a coarse level");
    }
    cl_command_queue q = la->ocl->queue;
    cl_int st =
        clEnqueueReadBuffer(q, D->rowptr, CL_TRUE, 0, (n + 1) * sizeof *rp, rp, 0, NULL, NULL);
    if (st == CL_SUCCESS && nnz)
        st =
            clEnqueueReadBuffer(q, D->col, CL_TRUE, 0, nnz * sizeof(cl_int), A->col, 0, NULL, NULL);
    if (st == CL_SUCCESS && nnz)
        st = clEnqueueReadBuffer(q, D->val, CL_TRUE, 0, nnz * sizeof(cl_double), A->val, 0, NULL,
                                 NULL);
    for (size_t i = 0; i <= n; i++)
        A->rowptr[i] = rp[i];
    free(rp);
    if (st != CL_SUCCESS) {
        csr_free(A);
        return cls_fail(err, CLS_EOTHER, "amg: reading a coarse level failed: %s", ocl_errstr(st));
    }
    return CLS_OK;
}

/* a device matrix as the la_csr the V-cycle runs; M's buffers move to it */
static int adopt(la_ctx *la, la_dcsr *M, la_csr *out, cls_error *err)
{
    int rc = la_csr_adopt(la, M->rowptr, M->col, M->val, M->nrows, M->ncols, M->nnz, out, err);
    if (rc)
        return rc;
    M->rowptr = M->col = M->val = NULL;
    return CLS_OK;
}

static void release_mem(cl_mem *m)
{
    if (*m)
        clReleaseMemObject(*m);
    *m = NULL;
}

/* state of one build */
typedef struct dsetup {
    la_ctx *la;
    la_amgs k;
    const amg_options *opt;
    amg_device *d;
    amg_info *info;
    amg_dagg *hint; /* amg_rebuild_device's aggregates, while they fit */
    int prof;       /* CLSOLVE_AMG_PROFILE=1: each step waited for and timed */
    double mark; /* the last step's end */
} dsetup;

/* with CLSOLVE_AMG_PROFILE=1, the seconds since the last mark on stderr
 * (the queue drained first, so each step's kernels are its own) */
static void prof(dsetup *s, int l, const char *step)
{
    if (!s->prof)
        return;
    cls_error e;
    cls_error_clear(&e);
    la_finish(s->la, &e);
    double t = cls_now();
    fprintf(stderr, "amg_dsetup: level %d %-10s %8.2f ms\n", l, step, 1e3 * (t - s->mark));
    s->mark = t;
}

/* Level l on the device: its smoother's data, then P, R and the next
 * operator (*Ac). *handoff: this level goes to the host instead (phase 3
 * needed, or the aggregation stalled); nothing of it is kept. */
static int device_level(dsetup *s, int l, const la_dcsr *A, la_dcsr *Ac, int *handoff,
                        cls_error *err)
{
    la_ctx *la = s->la;
    dev_level *L = &s->d->lev[l];
    const amg_options *o = s->opt;
    int64_t n = A->nrows;
    size_t nb = (size_t)(n ? n : 1) * sizeof(cl_double);
    cl_mem diag = NULL, dsq = NULL, agg = NULL;
    la_dcsr P = {0}, R = {0}, AP = {0};
    int rc;
    memset(Ac, 0, sizeof *Ac);
    *handoff = 0;
    double t0 = cls_now();
    int64_t bad = -1;
    if ((rc = la_amgs_buffer(la, nb, &diag, err)) || (rc = la_amgs_buffer(la, nb, &dsq, err)) ||
        (rc = la_amgs_diag(la, &s->k, A, diag, dsq, &bad, err)))
        goto done;
    prof(s, l, "diagonal");
    if (bad >= 0) {
        rc = cls_fail(err, CLS_EBREAKDOWN,
                      "amg: level %d row %lld has a diagonal that is not positive: AMG needs a "
                      "symmetric positive-definite matrix (positive diagonal)",
                      l, (long long)bad);
        goto done;
    }
    double al[64], be[64];
    int kk = 0;
    if ((rc = la_amgs_lanczos(la, &s->k, L->Ause, diag, o->lanczos_steps, al, be, &kk, err)))
        goto done;
    prof(s, l, "lanczos");
    double lmax = kk > 0 ? amg_tridiag_max_eig(al, be, kk) : 0.0;
    if (!(lmax > 0.0) || !isfinite(lmax)) {
        rc = cls_fail(err, CLS_EBREAKDOWN,
                      "amg: the estimate of lambda_max(D^-1 A) is %g: the matrix is not positive "
                      "definite",
                      lmax);
        goto done;
    }
    s->info->lambda_max[l] = lmax;
    double t1 = cls_now();
    s->info->prolong_s += t1 - t0;

    int64_t naggs = 0, left = 0;
    int rounds = 0;
    amg_dagg *g = s->hint;
    if (g && l < g->levels && g->agg[l] && g->n[l] == n) {
        /* a re-set-up: the earlier hierarchy's aggregates of this level
         * (the same pattern gives the same rows here), no MIS rounds */
        agg = g->agg[l];
        g->agg[l] = NULL;
        naggs = g->naggs[l];
    } else {
        s->d->rebuilt = 0; /* from here on, aggregated afresh */
        s->hint = NULL;
        if ((rc = la_amgs_buffer(la, (size_t)(n ? n : 1) * sizeof(cl_int), &agg, err)) ||
            (rc = la_amgs_aggregate(la, &s->k, A, dsq, o->threshold, agg, &naggs, &left, &rounds,
                                    err)))
            goto done;
    }
    if (l == 0)
        s->info->mis_rounds = rounds;
    prof(s, l, "aggregate");
    double t2 = cls_now();
    s->info->aggregate_s += t2 - t1;
    if (left > 0 || naggs == 0 || naggs >= n) {
        *handoff = 1; /* the host's phase 3, or its handling of a stall */
        goto done;
    }

    if ((rc = la_vec_create(la, n, &L->dinv, err)) ||
        (rc = la_amgs_dinv(la, &s->k, A, diag, o->smoother == AMG_SMOOTHER_L1_JACOBI, L->dinv.buf,
                           err)) ||
        (rc = la_amgs_prolong(la, &s->k, A, diag, agg, naggs, o->omega_scale / lmax, &P, err)))
        goto done;
    prof(s, l, "prolong");
    if ((rc = la_amgs_transpose(la, &s->k, &P, &R, err)) || (rc = la_finish(la, err)))
        goto done;
    prof(s, l, "transpose");
    double t3 = cls_now();
    s->info->prolong_s += t3 - t2;
    if ((rc = la_spgemm(la, &s->k.sp, A, &P, &AP, err)))
        goto done;
    prof(s, l, "A P");
    if ((rc = la_spgemm(la, &s->k.sp, &R, &AP, Ac, err)) || (rc = la_finish(la, err)))
        goto done;
    prof(s, l, "R (A P)");
    s->info->rap_s += cls_now() - t3;
    amg_cheb_coeffs(o, lmax, &L->cheb);
    if ((rc = la_vec_create(la, n, &L->r, err)) || (rc = la_vec_create(la, n, &L->d, err)) ||
        (rc = la_vec_create(la, n, &L->q, err)) || (rc = adopt(la, &P, &L->P, err)) ||
        (rc = adopt(la, &R, &L->R, err)))
        goto done;
    prof(s, l, "adopt");
    if (o->keep_aggregates) { /* for a re-set-up of the same pattern */
        L->agg = agg;
        L->naggs = naggs;
        agg = NULL;
    }
done:
    if (rc || *handoff) {
        la_dcsr_release(Ac);
        if (L->dinv.buf)
            la_vec_release(&L->dinv);
    }
    la_dcsr_release(&P);
    la_dcsr_release(&R);
    la_dcsr_release(&AP);
    release_mem(&diag);
    release_mem(&dsq);
    release_mem(&agg);
    return rc;
}

/* levels from `at` on by amg_build on the host, from the operator A */
static int host_levels(dsetup *s, int at, const la_dcsr *A, cls_error *err)
{
    double t0 = cls_now();
    csr_matrix Ah;
    csr_init(&Ah);
    amg_hierarchy *h = NULL;
    /* the levels above were built on the device: max_levels counts them */
    amg_options ho = *s->opt;
    ho.max_levels = ho.max_levels - at > 1 ? ho.max_levels - at : 1;
    int rc;
    if ((rc = dcsr_download(s->la, A, &Ah, err)) || (rc = amg_build(&Ah, &ho, &h, err)))
        goto done;
    if (at + h->nlevels > AMG_MAX_LEVELS) {
        rc = cls_fail(err, CLS_EOTHER, "amg: more than %d levels", AMG_MAX_LEVELS);
        goto done;
    }
    const la_csr *top = s->d->lev[at].Ause;
    for (int l = 0; l < h->nlevels && !rc; l++)
        rc = amg_upload_level(s->d, h, l, at + l, s->la, l == 0 ? top : NULL, LA_SPMV_AUTO, err);
    if (rc)
        goto done;
    s->d->nlevels = at + h->nlevels;
    s->d->coarse_direct = h->coarse_direct;
    amg_info hi;
    amg_get_info(h, &hi);
    amg_info *in = s->info;
    in->levels = at + hi.levels;
    for (int l = 0; l < hi.levels; l++) {
        in->rows[at + l] = hi.rows[l];
        in->nnz[at + l] = hi.nnz[l];
        in->lambda_max[at + l] = hi.lambda_max[l];
    }
    in->coarse_direct = hi.coarse_direct;
    in->threads = hi.threads;
    in->coarse_s += hi.coarse_s;
done:
    amg_free(h);
    csr_free(&Ah);
    s->info->host_levels_s = cls_now() - t0;
    return rc;
}

/* amg_build_device, and amg_rebuild_device with g */
static int build_device(const csr_matrix *A, const amg_options *opt, la_ctx *la, const la_csr *dA0,
                        amg_dagg *g, amg_device **out, cls_error *err)
{
    *out = NULL;
    amg_options o;
    if (opt)
        o = *opt;
    else
        amg_options_default(&o);
    int rc = amg_options_check(&o, err);
    if (rc)
        return rc;
    if (A->nrows != A->ncols)
        return cls_fail(err, CLS_EINPUT, "amg: the matrix is %lld x %lld, not square",
                        (long long)A->nrows, (long long)A->ncols);
    if (la->prec != LA_DOUBLE)
        return cls_fail(err, CLS_EUSAGE, "amg: the set-up on the device needs double precision");
    if (A->nnz > INT32_MAX || A->nrows >= INT32_MAX)
        return cls_fail(err, CLS_EUSAGE, "amg: %lld nonzeros exceed the device's 32-bit indices",
                        (long long)A->nnz);
    if (dA0 && (dA0->nrows != A->nrows || dA0->row_offset != 0))
        return cls_fail(err, CLS_EOTHER, "amg_build_device: the device matrix is not A");
    double t0 = cls_now();
    const char *pe = getenv("CLSOLVE_AMG_PROFILE");
    dsetup s = {.la = la, .opt = &o, .hint = g, .prof = pe && pe[0] == '1', .mark = t0};
    amg_device *d = calloc(1, sizeof *d);
    amg_info *in = d ? &d->info : NULL;
    if (!d)
        return cls_fail(err, CLS_EOTHER, "amg: out of memory");
    s.d = d;
    s.info = in;
    d->smoother = o.smoother;
    d->degree = o.degree;
    d->built = 1;
    d->rebuilt = g && g->levels > 0;
    la_config saved = la->cfg;
    size_t saved_groups = la->ngroups;
    la_dcsr cur = {0}, next = {0}, tmp0 = {0};
    if ((rc = la_amg_init(la, &d->k, err)) || (rc = la_amgs_init(la, &s.k, err)))
        goto done;

    /* level 0: the caller's CSR arrays when its copy has them, else ours */
    double tu = cls_now();
    int owned = 0;
    if ((rc = la_amgs_csr_of(la, &s.k, A, dA0, &cur, &owned, err)))
        goto done;
    if (owned)
        tmp0 = cur;
    if (dA0) {
        d->lev[0].Ause = dA0;
    } else { /* the uploaded arrays become level 0's operator */
        if ((rc = adopt(la, &tmp0, &d->lev[0].A, err)))
            goto done;
        d->lev[0].Ause = &d->lev[0].A;
    }
    in->fine_csr_s = cls_now() - tu;
    prof(&s, 0, "fine CSR");
    int64_t host_rows = o.coarse_size > o.host_rows ? o.coarse_size : o.host_rows;
    int l = 0;
    for (;; l++) {
        dev_level *L = &d->lev[l];
        L->n = cur.nrows;
        in->rows[l] = cur.nrows;
        in->nnz[l] = cur.nnz;
        if (cur.nrows <= host_rows || l + 1 >= o.max_levels || l + 1 >= AMG_MAX_LEVELS)
            break;
        int handoff = 0;
        if ((rc = device_level(&s, l, &cur, &next, &handoff, err)))
            goto done;
        if (handoff)
            break;
        if (l > 0 && ((rc = la_vec_create(la, L->n, &L->x, err)) ||
                      (rc = la_vec_create(la, L->n, &L->b, err))))
            goto done;
        in->device_levels = l + 1;
        la_dcsr_release(&tmp0); /* level 0's uploaded arrays, when ours */
        dev_level *N = &d->lev[l + 1];
        cur = next; /* a view: the arrays move to N->A */
        if ((rc = adopt(la, &next, &N->A, err)))
            goto done;
        N->Ause = &N->A;
    }
    if (s.hint && l < s.hint->levels) /* the earlier one had more device levels */
        d->rebuilt = 0;
    rc = host_levels(&s, l, &cur, err); /* the rest on the host */
    prof(&s, l, "host");
done:
    la_dcsr_release(&tmp0);
    la_dcsr_release(&next);
    la->cfg = saved;
    la->ngroups = saved_groups;
    la_amgs_release(&s.k);
    if (!rc)
        rc = la_finish(la, err);
    if (rc) {
        amg_device_release(d);
        return rc;
    }
    double nnz = 0.0, rows = 0.0;
    for (int k = 0; k < in->levels; k++) {
        nnz += (double)in->nnz[k];
        rows += (double)in->rows[k];
    }
    in->operator_complexity = in->nnz[0] ? nnz / (double)in->nnz[0] : 1.0;
    in->grid_complexity = in->rows[0] ? rows / (double)in->rows[0] : 1.0;
    in->build_s = cls_now() - t0;
    d->upload_s = in->build_s;
    *out = d;
    return CLS_OK;
}

int amg_build_device(const csr_matrix *A, const amg_options *opt, la_ctx *la, const la_csr *dA0,
                     amg_device **out, cls_error *err)
{
    return build_device(A, opt, la, dA0, NULL, out, err);
}

int amg_rebuild_device(const csr_matrix *A, const amg_options *opt, la_ctx *la, const la_csr *dA0,
                       amg_dagg *g, amg_device **out, cls_error *err)
{
    int rc = build_device(A, opt, la, dA0, g, out, err);
    amg_dagg_release(g); /* what the levels did not take */
    return rc;
}

int amg_device_info(const amg_device *d, amg_info *info)
{
    if (!d || !d->built)
        return -1;
    *info = d->info;
    return 0;
}

/* a part's rows on the device for the coupled set-up's steps: A's CSR
 * arrays (D, *owned as la_amgs_csr_of), its diagonal and 1/sqrt|a_ii|,
 * and the check that the diagonal is positive (the row named) */
static int part_upload(la_ctx *la, la_amgs *k, const csr_matrix *A, la_dcsr *D, int *owned,
                       cl_mem *diag, cl_mem *dsq, cls_error *err)
{
    const size_t nb = (size_t)(A->nrows ? A->nrows : 1) * sizeof(cl_double);
    int64_t bad = -1;
    int rc;
    if ((rc = la_amgs_csr_of(la, k, A, NULL, D, owned, err)) ||
        (rc = la_amgs_buffer(la, nb, diag, err)) || (rc = la_amgs_buffer(la, nb, dsq, err)) ||
        (rc = la_amgs_diag(la, k, D, *diag, *dsq, &bad, err)))
        return rc;
    if (bad >= 0)
        return cls_fail(err, CLS_EBREAKDOWN,
                        "amg: row %lld of the part has a diagonal that is not positive: AMG needs "
                        "a symmetric positive-definite matrix (positive diagonal)",
                        (long long)bad);
    return CLS_OK;
}

int amg_device_aggregates(const csr_matrix *B, const amg_options *opt, la_ctx *la, int32_t *agg,
                          int64_t *naggs, cls_error *err)
{
    amg_options o;
    if (opt)
        o = *opt;
    else
        amg_options_default(&o);
    const int64_t n = B->nrows;
    *naggs = 0;
    if (la->prec != LA_DOUBLE)
        return cls_fail(err, CLS_EUSAGE, "amg: the set-up on the device needs double precision");
    if (B->nnz > INT32_MAX || n >= INT32_MAX)
        return cls_fail(err, CLS_EUSAGE, "amg: %lld nonzeros exceed the device's 32-bit indices",
                        (long long)B->nnz);
    if (n == 0)
        return CLS_OK;
    la_amgs k;
    int rc = la_amgs_init(la, &k, err);
    if (rc)
        return rc;
    la_dcsr D = {0};
    int owned = 0;
    cl_mem diag = NULL, dsq = NULL, dagg = NULL;
    int64_t left = 0;
    int rounds = 0;
    if ((rc = part_upload(la, &k, B, &D, &owned, &diag, &dsq, err)) ||
        (rc = la_amgs_buffer(la, (size_t)n * sizeof(cl_int), &dagg, err)) ||
        (rc = la_amgs_aggregate(la, &k, &D, dsq, o.threshold, dagg, naggs, &left, &rounds, err)))
        goto done;
    if (left > 0) { /* phase 3 is the host's: the whole aggregation there */
        la_amgs_release(&k);
        if (owned)
            la_dcsr_release(&D);
        release_mem(&diag);
        release_mem(&dsq);
        release_mem(&dagg);
        return amg_part_aggregates(B, &o, agg, naggs, err);
    }
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, dagg, CL_TRUE, 0, (size_t)n * sizeof(cl_int),
                                    agg, 0, NULL, NULL);
    if (st != CL_SUCCESS)
        rc = cls_fail(err, CLS_EOTHER, "amg: reading the aggregates failed: %s", ocl_errstr(st));
done:
    if (owned)
        la_dcsr_release(&D);
    release_mem(&diag);
    release_mem(&dsq);
    release_mem(&dagg);
    la_amgs_release(&k);
    return rc;
}

int amg_device_coupled_rows(la_ctx *la, const csr_matrix *A, const csr_matrix *P,
                            const csr_matrix *G, csr_matrix *C, cls_error *err)
{
    csr_init(C);
    int rc = amg_coupled_check(A, P, G, err);
    if (rc)
        return rc;
    if (la->prec != LA_DOUBLE)
        return cls_fail(err, CLS_EUSAGE, "amg: the set-up on the device needs double precision");
    if (A->nnz > INT32_MAX || A->ncols >= INT32_MAX || P->nnz + G->nnz > INT32_MAX ||
        P->ncols >= INT32_MAX)
        return cls_fail(err, CLS_EUSAGE, "amg: a part's %lld nonzeros exceed 32-bit indices",
                        (long long)A->nnz);
    csr_matrix X;
    csr_init(&X);
    if ((rc = amg_coupled_stack(P, G, &X, err)))
        return rc;
    la_amgs k;
    if ((rc = la_amgs_init(la, &k, err))) {
        csr_free(&X);
        return rc;
    }
    la_dcsr dA = {0}, dX = {0}, dP = {0}, dAX = {0}, dR = {0}, dC = {0};
    int oa = 0, ox = 0, op = 0;
    if (!(rc = la_amgs_csr_of(la, &k, A, NULL, &dA, &oa, err)) &&
        !(rc = la_amgs_csr_of(la, &k, &X, NULL, &dX, &ox, err)) &&
        !(rc = la_amgs_csr_of(la, &k, P, NULL, &dP, &op, err)) &&
        !(rc = la_spgemm(la, &k.sp, &dA, &dX, &dAX, err)) &&
        !(rc = la_amgs_transpose(la, &k, &dP, &dR, err)) &&
        !(rc = la_spgemm(la, &k.sp, &dR, &dAX, &dC, err)) && !(rc = la_finish(la, err)))
        rc = dcsr_download(la, &dC, C, err);
    if (oa)
        la_dcsr_release(&dA);
    if (ox)
        la_dcsr_release(&dX);
    if (op)
        la_dcsr_release(&dP);
    la_dcsr_release(&dAX);
    la_dcsr_release(&dR);
    la_dcsr_release(&dC);
    la_amgs_release(&k);
    csr_free(&X);
    return rc;
}

int amg_device_prolongator(la_ctx *la, const csr_matrix *A, const int32_t *agg, const double *tnode,
                           int64_t nc, double omega, csr_matrix *P, cls_error *err)
{
    csr_init(P);
    const int64_t n = A->nrows, m = A->ncols;
    if (la->prec != LA_DOUBLE)
        return cls_fail(err, CLS_EUSAGE, "amg: the set-up on the device needs double precision");
    if (A->rowptr[0] != 0 || m < n)
        return cls_fail(err, CLS_EOTHER,
                        "amg_device_prolongator: the part's rows (%lld x %lld) are not local "
                        "then ghost columns from offset 0",
                        (long long)n, (long long)m);
    if (A->nnz > INT32_MAX || m >= INT32_MAX || nc >= INT32_MAX)
        return cls_fail(err, CLS_EUSAGE, "amg: a part's %lld nonzeros exceed 32-bit indices",
                        (long long)A->nnz);
    /* T's value per aggregate: every column's aggregate has its T value */
    double *tval = calloc((size_t)(nc ? nc : 1), sizeof *tval);
    if (!tval)
        return cls_fail(err, CLS_EOTHER, "amg: out of memory (a part's prolongator)");
    for (int64_t j = 0; j < m; j++)
        if (agg[j] >= 0 && agg[j] < nc)
            tval[agg[j]] = tnode[j];
    la_amgs k;
    int rc = la_amgs_init(la, &k, err);
    if (rc) {
        free(tval);
        return rc;
    }
    la_dcsr dA = {0}, dP = {0};
    int owned = 0;
    cl_mem diag = NULL, dsq = NULL, dagg = NULL, dtv = NULL;
    cl_command_queue q = la->ocl->queue;
    if ((rc = part_upload(la, &k, A, &dA, &owned, &diag, &dsq, err)) ||
        (rc = la_amgs_buffer(la, (size_t)(m ? m : 1) * sizeof(cl_int), &dagg, err)) ||
        (rc = la_amgs_buffer(la, (size_t)(nc ? nc : 1) * sizeof(cl_double), &dtv, err)))
        goto done;
    cl_int st = m ? clEnqueueWriteBuffer(q, dagg, CL_TRUE, 0, (size_t)m * sizeof(cl_int), agg, 0,
                                         NULL, NULL)
                  : CL_SUCCESS;
    if (st == CL_SUCCESS && nc)
        st = clEnqueueWriteBuffer(q, dtv, CL_TRUE, 0, (size_t)nc * sizeof(cl_double), tval, 0, NULL,
                                  NULL);
    if (st != CL_SUCCESS) {
        rc = cls_fail(err, CLS_EOTHER, "amg: writing the aggregates failed: %s", ocl_errstr(st));
        goto done;
    }
    if (!(rc = la_amgs_prolong_t(la, &k, &dA, diag, dagg, dtv, nc, omega, &dP, err)) &&
        !(rc = la_finish(la, err)))
        rc = dcsr_download(la, &dP, P, err);
done:
    if (owned)
        la_dcsr_release(&dA);
    la_dcsr_release(&dP);
    release_mem(&diag);
    release_mem(&dsq);
    release_mem(&dagg);
    release_mem(&dtv);
    la_amgs_release(&k);
    free(tval);
    return rc;
}
