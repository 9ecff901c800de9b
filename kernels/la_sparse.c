/*
 * la_sparse.c: host side of scan.cl and spgemm.cl (contract in la_sparse.h).
 *
 * The product runs without host round trips except two small blocking
 * reads: the count of rows that overflowed the local hash table (their
 * global tables are sized and laid out here, from their bounds, because
 * only the host can allocate) and the scan's total (C's size). The long
 * rows' kernels read their count on the device instead (a fixed grid,
 * grid-stride over the list), so binning costs no read.
 *
 * The global tables of the flagged rows are laid out in batches of at
 * most SG_GLOBAL_BUDGET entries (or one row's table, when larger): many
 * flagged rows of a big coarse level then reuse one moderate buffer
 * instead of asking for the sum of all their tables at once.
 *
 * hash_cap is picked from the device's local memory (a table of keys and
 * double values, 12 bytes an entry, has to fit beside the group's
 * counters): 2048 entries on the GPUs this targets, which holds the
 * distinct columns of every row of the AMG products up to 3/4 of it.
 * CLSOLVE_SPGEMM_HASH_CAP (or a caller setting k->hash_cap) lowers it, so
 * that the tests push rows through the long and global paths.
 */
#include "la_sparse.h"
#include "la_priv.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SG_MAX_CAP 2048
#define SG_MIN_CAP 8
#define SG_LANES 32                        /* lanes per short row (a warp on NVIDIA) */
#define SG_MAXP 64                         /* as in spgemm.cl */
#define SG_LOCAL_EXTRA 1024                /* the kernels' own __local counters, with room */
#define SG_GLOBAL_BUDGET ((size_t)1 << 24) /* global table entries per batch */
#define SG_GROUPS_PER_CU 16
#define SCAN_PER 8 /* as in scan.cl */

static const char *const sparse_sources[] = {"scan.cl", "spgemm.cl"};

static int sparse_has_ext(cl_device_id dev, const char *name)
{
    size_t len = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &len) != CL_SUCCESS || !len)
        return 0;
    char *ext = malloc(len + 1);
    if (!ext)
        return 0;
    int found = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, len, ext, NULL) == CL_SUCCESS) {
        ext[len] = '\0';
        size_t nl = strlen(name);
        for (const char *p = ext; (p = strstr(p, name)) != NULL; p += nl)
            if ((p == ext || p[-1] == ' ') && (p[nl] == ' ' || p[nl] == '\0')) {
                found = 1;
                break;
            }
    }
    free(ext);
    return found;
}

/* the largest power-of-two table the device's local memory holds */
static size_t sparse_cap_max(const la_ctx *la)
{
    size_t cap = SG_MAX_CAP;
    while (cap > SG_MIN_CAP &&
           cap * (sizeof(cl_int) + sizeof(cl_double)) + SG_LOCAL_EXTRA > la->ocl->dev.local_mem)
        cap /= 2;
    return cap;
}

static size_t sparse_cap(const la_ctx *la, size_t want)
{
    size_t cap = lai_pow2_floor(want ? want : 1), max = sparse_cap_max(la);
    return cap < SG_MIN_CAP ? SG_MIN_CAP : cap > max ? max : cap;
}

int la_sparse_init(la_ctx *la, la_sparse *k, cls_error *err)
{
    memset(k, 0, sizeof *k);
    const ocl_device *dev = &la->ocl->dev;
    if (!dev->fp64)
        return cls_fail(err, CLS_EOTHER,
                        "device sparse products need double precision, which %s lacks", dev->name);
    if (!sparse_has_ext(dev->id, "cl_khr_int64_base_atomics"))
        return cls_fail(err, CLS_EOTHER,
                        "device sparse products need cl_khr_int64_base_atomics (64-bit "
                        "compare-and-swap for the double sums), which %s lacks",
                        dev->name);
    int rc = ocl_build_program(la->ocl, sparse_sources, 2, "", &k->prog, err);
    if (rc)
        return rc;
    struct {
        cl_kernel *k;
        const char *name;
    } ks[] = {{&k->k_scan_block, "scan_block"},
              {&k->k_scan_top, "scan_top"},
              {&k->k_scan_add, "scan_add"},
              {&k->k_sg_bound, "sg_bound"},
              {&k->k_sg_count, "sg_count"},
              {&k->k_sg_count_long, "sg_count_long"},
              {&k->k_sg_count_global, "sg_count_global"},
              {&k->k_sg_fill, "sg_fill"},
              {&k->k_sg_fill_long, "sg_fill_long"},
              {&k->k_sg_fill_global, "sg_fill_global"},
              {&k->k_sg_sort, "sg_sort"}};
    const size_t nk = sizeof ks / sizeof *ks;
    for (size_t i = 0; i < nk; i++)
        if ((rc = ocl_create_kernel(k->prog, ks[i].name, ks[i].k, err))) {
            la_sparse_release(k);
            return rc;
        }
    k->scan_ls = 256;
    for (size_t i = 0; i < 3; i++)
        k->scan_ls = lai_kernel_max(la, *ks[i].k, k->scan_ls);
    k->scan_ls = lai_pow2_floor(k->scan_ls);
    k->sg_ls = 128;
    for (size_t i = 3; i < nk; i++)
        k->sg_ls = lai_kernel_max(la, *ks[i].k, k->sg_ls);
    k->sg_ls = lai_pow2_floor(k->sg_ls);
    k->hash_cap = sparse_cap_max(la);
    const char *env = getenv("CLSOLVE_SPGEMM_HASH_CAP");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end || v <= 0) {
            la_sparse_release(k);
            return cls_fail(err, CLS_EOTHER,
                            "CLSOLVE_SPGEMM_HASH_CAP='%s' is not a positive number of entries",
                            env);
        }
        k->hash_cap = sparse_cap(la, (size_t)v);
    }
    return CLS_OK;
}

void la_sparse_release(la_sparse *k)
{
    cl_kernel *ks[] = {&k->k_scan_block,      &k->k_scan_top, &k->k_scan_add,
                       &k->k_sg_bound,        &k->k_sg_count, &k->k_sg_count_long,
                       &k->k_sg_count_global, &k->k_sg_fill,  &k->k_sg_fill_long,
                       &k->k_sg_fill_global,  &k->k_sg_sort};
    cl_mem *ms[] = {&k->scan_tmp};
    lai_release_objects(ks, (int)(sizeof ks / sizeof *ks), ms, 1);
    k->scan_tmp_bytes = 0;
    if (k->prog)
        clReleaseProgram(k->prog);
    k->prog = NULL;
}

void la_dcsr_release(la_dcsr *M)
{
    cl_mem *ms[] = {&M->rowptr, &M->col, &M->val};
    lai_release_objects(NULL, 0, ms, 3);
    M->nrows = M->ncols = M->nnz = 0;
}

/* a read-write device buffer of bytes (at least 1) */
static int sparse_buffer(la_ctx *la, const char *what, size_t bytes, cl_mem *out, cls_error *err)
{
    return lai_alloc_buffer(la, what, bytes, CL_MEM_READ_WRITE, NULL, out, err);
}

static int sparse_read(la_ctx *la, cl_mem src, size_t bytes, void *dst, const char *what,
                       cls_error *err)
{
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, src, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clEnqueueReadBuffer(%s) failed: %s (%d)", what,
                        ocl_errstr(st), (int)st);
    return CLS_OK;
}

/* ------------------------------------------------------------------ scan */

int la_scan_i32(la_ctx *la, la_sparse *k, cl_mem cnt, int64_t n, cl_mem off, int64_t *total,
                cls_error *err)
{
    if (n < 0 || n >= INT32_MAX)
        return cls_fail(err, CLS_EOTHER, "la_scan_i32: %lld counts (at most %d)", (long long)n,
                        INT32_MAX - 1);
    if (cnt == off)
        return cls_fail(err, CLS_EOTHER, "la_scan_i32: the offsets may not overwrite the counts");
    const size_t ls = k->scan_ls, blk = SCAN_PER * ls;
    const size_t nb = (size_t)(((uint64_t)n + blk - 1) / blk);
    const size_t need = (nb + 1) * sizeof(cl_long);
    int rc;
    if (need > k->scan_tmp_bytes) {
        if (k->scan_tmp)
            clReleaseMemObject(k->scan_tmp);
        k->scan_tmp = NULL;
        k->scan_tmp_bytes = 0;
        if ((rc = sparse_buffer(la, "scan block sums", need, &k->scan_tmp, err)))
            return rc;
        k->scan_tmp_bytes = need;
    }
    cl_long ln = (cl_long)n, lnb = (cl_long)nb;
    if (nb) {
        if ((rc = lai_set_args(k->k_scan_block, "scan_block", err, 4, sizeof ln, (const void *)&ln,
                               A_MEM(cnt), A_MEM(k->scan_tmp), A_LOCAL(ls * sizeof(cl_long)))) ||
            (rc = lai_launch(la, k->k_scan_block, "scan_block", nb, ls, err)))
            return rc;
    }
    if ((rc = lai_set_args(k->k_scan_top, "scan_top", err, 5, sizeof lnb, (const void *)&lnb,
                           A_MEM(k->scan_tmp), sizeof ln, (const void *)&ln, A_MEM(off),
                           A_LOCAL(ls * sizeof(cl_long)))) ||
        (rc = lai_launch(la, k->k_scan_top, "scan_top", 1, ls, err)))
        return rc;
    if (nb) {
        if ((rc = lai_set_args(k->k_scan_add, "scan_add", err, 6, sizeof ln, (const void *)&ln,
                               A_MEM(cnt), A_MEM(k->scan_tmp), A_MEM(off),
                               A_LOCAL((blk + blk / 32) * sizeof(cl_int)),
                               A_LOCAL(ls * sizeof(cl_long)))) ||
            (rc = lai_launch(la, k->k_scan_add, "scan_add", nb, ls, err)))
            return rc;
    }
    cl_long tot = 0;
    cl_int st = clEnqueueReadBuffer(la->ocl->queue, k->scan_tmp, CL_TRUE, nb * sizeof(cl_long),
                                    sizeof tot, &tot, 0, NULL, NULL);
    if (st != CL_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "clEnqueueReadBuffer(scan total) failed: %s (%d)",
                        ocl_errstr(st), (int)st);
    if (tot > INT32_MAX || tot < 0)
        return cls_fail(err, CLS_EOTHER,
                        "la_scan_i32: the total of %lld counts is %lld, past INT32_MAX (the "
                        "device's indices are 32-bit)",
                        (long long)n, (long long)tot);
    if (total)
        *total = tot;
    return CLS_OK;
}

/* --------------------------------------------------------------- product */

/* what one product holds besides C */
typedef struct sg_work {
    cl_mem ub, list, flag, ctr, cnt, fl, gkeys, gvals;
    int *host_flag, *host_fl;
    int64_t *batch; /* first entry of each batch, nbatch + 1 */
} sg_work;

static void sg_work_release(sg_work *w)
{
    cl_mem *ms[] = {&w->ub, &w->list, &w->flag, &w->ctr, &w->cnt, &w->fl, &w->gkeys, &w->gvals};
    lai_release_objects(NULL, 0, ms, (int)(sizeof ms / sizeof *ms));
    free(w->host_flag);
    free(w->host_fl);
    free(w->batch);
}

static size_t sg_groups(size_t need, size_t cap)
{
    return need == 0 ? 1 : need < cap ? need : cap;
}

/* The flagged rows' tables: sizes from the bounds (at least twice the
 * row's possible columns), laid out in batches; *nbatch batches with
 * w->batch[b] the first row of batch b, *entries the largest batch. */
static int sg_plan_global(la_ctx *la, sg_work *w, int nflag, int64_t ncols, int *nbatch,
                          size_t *entries, cls_error *err)
{
    const size_t max_entries = la->ocl->dev.max_alloc / sizeof(cl_double);
    size_t budget = SG_GLOBAL_BUDGET < max_entries ? SG_GLOBAL_BUDGET : max_entries;
    w->host_fl = malloc((size_t)nflag * 3 * sizeof *w->host_fl);
    w->batch = malloc(((size_t)nflag + 1) * sizeof *w->batch);
    if (!w->host_fl || !w->batch)
        return cls_fail(err, CLS_EOTHER, "la_spgemm: out of memory for %d overflowing rows", nflag);
    size_t used = 0, largest = 0;
    int nb = 0;
    for (int f = 0; f < nflag; f++) {
        int64_t m = w->host_flag[2 * f + 1];
        if (m > ncols)
            m = ncols;
        size_t t = 2;
        while ((int64_t)t < 2 * m)
            t <<= 1;
        if (t > max_entries || t > (size_t)INT32_MAX)
            return cls_fail(err, CLS_EOTHER,
                            "la_spgemm: row %d's global hash table (%zu entries) exceeds one "
                            "device buffer",
                            w->host_flag[2 * f], t);
        if (f == 0 || used + t > budget) {
            w->batch[nb++] = f;
            used = 0;
        }
        w->host_fl[3 * f] = w->host_flag[2 * f];
        w->host_fl[3 * f + 1] = (int)used;
        w->host_fl[3 * f + 2] = (int)t;
        used += t;
        if (used > largest)
            largest = used;
    }
    w->batch[nb] = nflag;
    *nbatch = nb;
    *entries = largest;
    return lai_upload_buf(la, "spgemm overflow rows", (size_t)nflag * 3 * sizeof(cl_int),
                          w->host_fl, &w->fl, err);
}

int la_spgemm(la_ctx *la, la_sparse *k, const la_dcsr *A, const la_dcsr *B, la_dcsr *C,
              cls_error *err)
{
    memset(C, 0, sizeof *C);
    k->last_long_rows = k->last_global_rows = 0;
    if (A->ncols != B->nrows)
        return cls_fail(err, CLS_EOTHER, "la_spgemm: inner sizes differ (%lld vs %lld)",
                        (long long)A->ncols, (long long)B->nrows);
    if (A->nrows > INT32_MAX / 2 || A->nnz > INT32_MAX || B->nnz > INT32_MAX ||
        B->ncols > INT32_MAX)
        return cls_fail(err, CLS_EOTHER,
                        "la_spgemm: %lld x %lld (%lld nonzeros) times %lld columns (%lld "
                        "nonzeros) is past the kernels' 32-bit indices",
                        (long long)A->nrows, (long long)A->ncols, (long long)A->nnz,
                        (long long)B->ncols, (long long)B->nnz);
    const cl_int nrows = (cl_int)A->nrows;
    C->nrows = A->nrows;
    C->ncols = B->ncols;
    sg_work w = {0};
    int rc = sparse_buffer(la, "spgemm C row pointers", ((size_t)nrows + 1) * sizeof(cl_int),
                           &C->rowptr, err);
    if (rc)
        goto fail;
    if (nrows == 0) { /* C is 0 x m: its one row pointer is 0 */
        const cl_int zero = 0;
        cl_int st = clEnqueueFillBuffer(la->ocl->queue, C->rowptr, &zero, sizeof zero, 0,
                                        sizeof zero, 0, NULL, NULL);
        if (st != CL_SUCCESS) {
            rc = cls_fail(err, CLS_EOTHER, "clEnqueueFillBuffer(spgemm row pointers): %s",
                          ocl_errstr(st));
            goto fail;
        }
        if ((rc = sparse_buffer(la, "spgemm C columns", sizeof(cl_int), &C->col, err)) ||
            (rc = sparse_buffer(la, "spgemm C values", sizeof(cl_double), &C->val, err)))
            goto fail;
        sg_work_release(&w);
        return CLS_OK;
    }

    /* geometry: np partitions of pw lanes for the short rows, each with a
     * slice of the table at least twice its rows' bounds */
    const cl_int cap = (cl_int)sparse_cap(la, k->hash_cap);
    const size_t ls = k->sg_ls;
    size_t np = ls >= SG_LANES ? ls / SG_LANES : 1;
    while (np > 1 && (np > SG_MAXP || (size_t)cap / np < 2))
        np /= 2;
    const cl_int pw = (cl_int)(ls / np), slice = (cl_int)((size_t)cap / np), short_max = slice / 2;
    const size_t cus = la->ocl->dev.compute_units ? la->ocl->dev.compute_units : 1;
    const size_t gmax = cus * SG_GROUPS_PER_CU;
    const size_t keys_b = (size_t)cap * sizeof(cl_int);

    if ((rc = sparse_buffer(la, "spgemm bounds", (size_t)nrows * sizeof(cl_int), &w.ub, err)) ||
        (rc =
             sparse_buffer(la, "spgemm long rows", (size_t)nrows * sizeof(cl_int), &w.list, err)) ||
        (rc = sparse_buffer(la, "spgemm overflow list", (size_t)nrows * 2 * sizeof(cl_int), &w.flag,
                            err)) ||
        (rc = sparse_buffer(la, "spgemm counters", 4 * sizeof(cl_int), &w.ctr, err)) ||
        (rc = sparse_buffer(la, "spgemm row counts", (size_t)nrows * sizeof(cl_int), &w.cnt, err)))
        goto fail;
    const cl_int zero = 0;
    cl_int st = clEnqueueFillBuffer(la->ocl->queue, w.ctr, &zero, sizeof zero, 0,
                                    4 * sizeof(cl_int), 0, NULL, NULL);
    if (st != CL_SUCCESS) {
        rc = cls_fail(err, CLS_EOTHER, "clEnqueueFillBuffer(spgemm counters) failed: %s (%d)",
                      ocl_errstr(st), (int)st);
        goto fail;
    }

    /* symbolic: bounds and bins, the short rows, the long rows */
    const size_t g_short = sg_groups(((size_t)nrows + np - 1) / np, gmax);
    const size_t g_long = sg_groups((size_t)nrows, gmax);
    if ((rc = lai_set_args(k->k_sg_bound, "sg_bound", err, 8, A_INT(nrows), A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(B->rowptr), A_INT(short_max), A_MEM(w.ub),
                           A_MEM(w.list), A_MEM(w.ctr))) ||
        (rc = lai_launch(la, k->k_sg_bound, "sg_bound",
                         sg_groups(((size_t)nrows + ls - 1) / ls, gmax * 4), ls, err)) ||
        (rc = lai_set_args(k->k_sg_count, "sg_count", err, 12, A_INT(nrows), A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(B->rowptr), A_MEM(B->col), A_MEM(w.ub),
                           A_INT(short_max), A_INT(pw), A_INT(slice), A_MEM(w.cnt), A_MEM(w.ctr),
                           A_LOCAL(keys_b))) ||
        (rc = lai_launch(la, k->k_sg_count, "sg_count", g_short, ls, err)) ||
        (rc = lai_set_args(k->k_sg_count_long, "sg_count_long", err, 11, A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(B->rowptr), A_MEM(B->col), A_MEM(w.ub), A_INT(cap),
                           A_MEM(w.list), A_MEM(w.ctr), A_MEM(w.flag), A_MEM(w.cnt),
                           A_LOCAL(keys_b))) ||
        (rc = lai_launch(la, k->k_sg_count_long, "sg_count_long", g_long, ls, err)))
        goto fail;

    /* the rows that overflowed the local table: global tables */
    cl_int ctr[4]; /* long rows, overflowed rows, largest short and long row of C */
    if ((rc = sparse_read(la, w.ctr, sizeof ctr, ctr, "spgemm counters", err)))
        goto fail;
    const int nflag = ctr[1];
    k->last_long_rows = ctr[0];
    k->last_global_rows = nflag;
    int nbatch = 0;
    if (nflag > 0) {
        size_t entries = 0;
        if (!(w.host_flag = malloc((size_t)nflag * 2 * sizeof *w.host_flag))) {
            rc = cls_fail(err, CLS_EOTHER, "la_spgemm: out of memory for %d overflowing rows",
                          nflag);
            goto fail;
        }
        if ((rc = sparse_read(la, w.flag, (size_t)nflag * 2 * sizeof(cl_int), w.host_flag,
                              "spgemm overflow list", err)) ||
            (rc = sg_plan_global(la, &w, nflag, B->ncols, &nbatch, &entries, err)) ||
            (rc = sparse_buffer(la, "spgemm global hash keys", entries * sizeof(cl_int), &w.gkeys,
                                err)) ||
            (rc = sparse_buffer(la, "spgemm global hash values", entries * sizeof(cl_double),
                                &w.gvals, err)))
            goto fail;
        for (int b = 0; b < nbatch; b++) {
            const cl_int first = (cl_int)w.batch[b];
            const size_t g = (size_t)(w.batch[b + 1] - w.batch[b]);
            if ((rc =
                     lai_set_args(k->k_sg_count_global, "sg_count_global", err, 9, A_MEM(A->rowptr),
                                  A_MEM(A->col), A_MEM(B->rowptr), A_MEM(B->col), A_MEM(w.ub),
                                  A_MEM(w.fl), A_INT(first), A_MEM(w.gkeys), A_MEM(w.cnt))) ||
                (rc = lai_launch(la, k->k_sg_count_global, "sg_count_global", g, ls, err)))
                goto fail;
        }
    }

    /* C's row pointers and storage */
    int64_t nnz = 0;
    if ((rc = la_scan_i32(la, k, w.cnt, nrows, C->rowptr, &nnz, err)))
        goto fail;
    C->nnz = nnz;
    if ((rc = sparse_buffer(la, "spgemm C columns", (size_t)nnz * sizeof(cl_int), &C->col, err)) ||
        (rc = sparse_buffer(la, "spgemm C values", (size_t)nnz * sizeof(cl_double), &C->val, err)))
        goto fail;

    /* numeric: the tables sized from the largest rows of C (twice their
     * counts), not from the bounds, which in R (A P) are ten times more:
     * less to clear and compact, and more groups fit a compute unit */
    cl_int slice_f = 1, cap_f = 1;
    while (slice_f < slice && slice_f < 2 * ctr[2])
        slice_f *= 2;
    while (cap_f < cap && cap_f < 2 * ctr[3])
        cap_f *= 2;
    const size_t fkeys_s = np * (size_t)slice_f * sizeof(cl_int),
                 fvals_s = np * (size_t)slice_f * sizeof(cl_double),
                 fkeys_l = (size_t)cap_f * sizeof(cl_int),
                 fvals_l = (size_t)cap_f * sizeof(cl_double);
    if ((rc = lai_set_args(k->k_sg_fill, "sg_fill", err, 16, A_INT(nrows), A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(A->val), A_MEM(B->rowptr), A_MEM(B->col),
                           A_MEM(B->val), A_MEM(w.ub), A_INT(short_max), A_INT(pw), A_INT(slice_f),
                           A_MEM(C->rowptr), A_MEM(C->col), A_MEM(C->val), A_LOCAL(fkeys_s),
                           A_LOCAL(fvals_s))) ||
        (rc = lai_launch(la, k->k_sg_fill, "sg_fill", g_short, ls, err)) ||
        (rc = lai_set_args(k->k_sg_fill_long, "sg_fill_long", err, 15, A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(A->val), A_MEM(B->rowptr), A_MEM(B->col),
                           A_MEM(B->val), A_MEM(w.ub), A_INT(cap_f), A_MEM(w.list), A_MEM(w.ctr),
                           A_MEM(C->rowptr), A_MEM(C->col), A_MEM(C->val), A_LOCAL(fkeys_l),
                           A_LOCAL(fvals_l))) ||
        (rc = lai_launch(la, k->k_sg_fill_long, "sg_fill_long", g_long, ls, err)))
        goto fail;
    for (int b = 0; b < nbatch; b++) {
        const cl_int first = (cl_int)w.batch[b];
        const size_t g = (size_t)(w.batch[b + 1] - w.batch[b]);
        if ((rc =
                 lai_set_args(k->k_sg_fill_global, "sg_fill_global", err, 14, A_MEM(A->rowptr),
                              A_MEM(A->col), A_MEM(A->val), A_MEM(B->rowptr), A_MEM(B->col),
                              A_MEM(B->val), A_MEM(w.ub), A_MEM(w.fl), A_INT(first), A_MEM(w.gkeys),
                              A_MEM(w.gvals), A_MEM(C->rowptr), A_MEM(C->col), A_MEM(C->val))) ||
            (rc = lai_launch(la, k->k_sg_fill_global, "sg_fill_global", g, ls, err)))
            goto fail;
    }
    if (nflag > 0 && ((rc = lai_set_args(k->k_sg_sort, "sg_sort", err, 4, A_MEM(w.fl),
                                         A_MEM(C->rowptr), A_MEM(C->col), A_MEM(C->val))) ||
                      (rc = lai_launch(la, k->k_sg_sort, "sg_sort", (size_t)nflag, ls, err))))
        goto fail;
    /* the temporaries may go once the queue has the kernels: OpenCL keeps a
     * released buffer alive until the commands that use it are done */
    sg_work_release(&w);
    return CLS_OK;
fail:
    sg_work_release(&w);
    la_dcsr_release(C);
    return rc;
}
