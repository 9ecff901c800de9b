/*
 * la_bcg.c: host calls of the block CG's kernels (la_bcg.h, bcg.cl).
 *
 * The column-major blocks' columns are sub-buffers at c * ld elements; ld
 * is n rounded up to CL_DEVICE_MEM_BASE_ADDR_ALIGN, which every
 * sub-buffer's origin must meet. P and Q are n x kw row-major, zeroed once
 * (the columns past k stay 0). The SpMM's geometry is the format's SpMV's
 * (la_spmm.c's). A group is 128 work-items (8 sums of each in local memory at
 * a time); the grid is 8 groups per compute unit at most, grid-stride over
 * rows, so the partial sums stay a few hundred rows of 72.
 */
#include "la_bcg.h"
#include "cpu/cpu_bcg.h"
#include "la_priv.h"
#include "la_spmm.h"

#include "../common/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BCG_LS 128

static int bcg_alloc(la_bcg *w, cl_mem *m, size_t bytes, cls_error *err)
{
    cl_int st;
    *m = clCreateBuffer(w->la->ocl->context, CL_MEM_READ_WRITE, bytes, NULL, &st);
    OCL_CHECK(err, st, "clCreateBuffer(block CG)");
    return CLS_OK;
}

static int bcg_views(la_bcg *w, cl_mem blk, la_vec *v, cls_error *err)
{
    for (int c = 0; c < w->k; c++) {
        cl_buffer_region reg = {(size_t)c * (size_t)w->ld * w->la->elem,
                                (size_t)w->n * w->la->elem};
        cl_int st;
        v[c].buf =
            clCreateSubBuffer(blk, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &reg, &st);
        OCL_CHECK(err, st, "clCreateSubBuffer(block CG column)");
        v[c].n = w->n;
        v[c].pool = NULL;
    }
    return CLS_OK;
}

/* The SpMM's choices per width kw = 2, 4, 8 (row lg - 1), measured at
 * poisson3d 256 on an H200 (docs/benchmarks.md, "Block CG as wide as its
 * columns"; one table, so a width's two choices are made in one place):
 *   fused  G = P'Q summed inside the SpMM (bcg_spmm_*_g*), one column a
 *          work-item. Two wide it wins: 1.45-1.47 s against 1.48-1.50 for
 *          two columns with the unfused SpMM at its best; four wide it tied
 *          (2.42 s against 2.43); eight wide its SpMM took 3.04 ms against
 *          1.98 + 0.59 (its accumulators and the lanes' reduction cost the
 *          SpMM its occupancy).
 *   lc     log2 of the columns a work-item of the unfused SpMM sums
 *          (bcg_spmm_*_wide): SpMM ms for 1 / 2 / 4 columns a work-item,
 *          eight wide 2.00 / 1.62 / 1.63, four wide 1.12 / 0.89 / 0.74, two
 *          wide 0.67 / 0.53 / 0.53. One lane a column reads A for kw / cw
 *          times fewer rows per warp-wide load.
 * CLSOLVE_BCG_FUSED=0|1 and CLSOLVE_BCG_SPMM_CW=1|2|4 override them (tests,
 * profiles: the unfused pass is the fused one's twin); cw at most kw. */
static const struct {
    int fused, lc;
} bcg_width_choice[3] = {{1, 1}, {0, 2}, {0, 1}};

/* CLSOLVE_BCG_FUSED: 0 or 1, else -1 (the width's or the native default) */
static int bcg_fused_env(void)
{
    const char *fz = getenv("CLSOLVE_BCG_FUSED");
    return fz && (strcmp(fz, "0") == 0 || strcmp(fz, "1") == 0) ? fz[0] == '1' : -1;
}

static void bcg_choose(la_bcg *w)
{
    w->fused = bcg_width_choice[w->lg - 1].fused;
    int lc = bcg_width_choice[w->lg - 1].lc;
    const char *e = getenv("CLSOLVE_BCG_SPMM_CW");
    if (e && (strcmp(e, "1") == 0 || strcmp(e, "2") == 0 || strcmp(e, "4") == 0))
        lc = e[0] == '4' ? 2 : e[0] == '2' ? 1 : 0;
    w->lc = lc < w->lg ? lc : w->lg;
    const int fz = bcg_fused_env();
    if (fz >= 0)
        w->fused = fz;
}

/* the kernels of bcg.cl, in la_bcg's order; %d: the width kw */
static const char *const bcg_kernel_names[LA_BCG_NKERN] = {
    "bcg_spmm_sell_%d", "bcg_spmm_sell_g%d", "bcg_spmm_csr_%d", "bcg_spmm_csr_g%d", "bcg_gram",
    "bcg_update_rr_%d", "bcg_resid",         "bcg_dir_%d",      "bcg_fold"};

int la_bcg_create(la_ctx *la, int64_t n, int k, int with_z, la_bcg *w, cls_error *err)
{
    memset(w, 0, sizeof *w);
    if (k < 1 || k > LA_BCG_MAXK || n < 1 || n >= INT32_MAX / LA_BCG_MAXK)
        return cls_fail(err, CLS_EOTHER, "la_bcg_create: %d columns of %lld rows", k, (long long)n);
    w->la = la;
    w->k = k;
    w->n = n;
    for (w->lg = 1; (1 << w->lg) < k; w->lg++) /* kw >= 2: one column is cg's */
        ;
    w->kw = 1 << w->lg;
    bcg_choose(w);
    cl_uint align_bits = 0;
    cl_int st = clGetDeviceInfo(la->ocl->dev.id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits,
                                &align_bits, NULL);
    OCL_CHECK(err, st, "clGetDeviceInfo(CL_DEVICE_MEM_BASE_ADDR_ALIGN)");
    int64_t a = (int64_t)(align_bits / 8) / (int64_t)la->elem;
    if (a < 64)
        a = 64;
    w->ld = (n + a - 1) / a * a;
    /* On a CPU, columns a multiple of 4 KiB apart (n a power of two) put a
     * row's k entries in one cache set and the loads behind the stores of
     * another column (4K aliasing): the native passes ran 2-3x slower
     * (poisson3d 64, 8 columns). One more alignment unit staggers them. */
    if ((la->ocl->dev.type & CL_DEVICE_TYPE_CPU) && ((size_t)w->ld * la->elem) % 4096 == 0)
        w->ld += a;
    const size_t blk = (size_t)w->ld * (size_t)k * la->elem;
    const size_t rm = (size_t)n * (size_t)w->kw * la->elem;
    size_t ls = BCG_LS;
    if (la->ocl->dev.max_work_group && ls > la->ocl->dev.max_work_group)
        ls = la->ocl->dev.max_work_group;
    w->ls = ls;
    size_t need = ((size_t)n + ls - 1) / ls;
    size_t cap = (size_t)(la->ocl->dev.compute_units ? la->ocl->dev.compute_units : 1) * 8;
    w->groups = lai_min_sz(need, cap);
    /* the fused SpMM's records: its own grid, capped here (grid-stride) */
    w->pcap = lai_max_sz(w->groups, 8 * cap);
    int rc = CLS_OK;
    cl_mem *bufs[] = {&w->X, &w->R,     &w->P,    &w->Q,       &w->B,
                      &w->Z, &w->alpha, &w->beta, &w->partial, &w->out};
    const size_t sizes[] = {blk,
                            blk,
                            rm,
                            rm,
                            blk,
                            with_z ? blk : 0,
                            LA_BCG_MAXK * LA_BCG_MAXK * la->elem,
                            LA_BCG_MAXK * LA_BCG_MAXK * la->elem,
                            w->pcap * LA_BCG_NSUM * la_acc_size(la),
                            LA_BCG_NSUM * la_acc_size(la)};
    for (size_t m = 0; !rc && m < sizeof sizes / sizeof *sizes; m++)
        if (sizes[m])
            rc = bcg_alloc(w, bufs[m], sizes[m], err);
    if (!rc) {
        const cl_double zero = 0.0; /* a pattern of elem zero bytes */
        cl_int fs =
            clEnqueueFillBuffer(la->ocl->queue, w->P, &zero, la->elem, 0, rm, 0, NULL, NULL);
        if (fs == CL_SUCCESS)
            fs = clEnqueueFillBuffer(la->ocl->queue, w->Q, &zero, la->elem, 0, rm, 0, NULL, NULL);
        if (fs != CL_SUCCESS)
            rc = cls_fail(err, CLS_EOTHER, "clEnqueueFillBuffer(block CG) failed: %s (%d)",
                          ocl_errstr(fs), (int)fs);
    }
    if (!rc)
        rc = bcg_views(w, w->X, w->xv, err);
    if (!rc)
        rc = bcg_views(w, w->R, w->rv, err);
    if (!rc && with_z)
        rc = bcg_views(w, w->Z, w->zv, err);
    if (rc)
        la_bcg_release(w);
    return rc;
}

/* the kernels, made at the first pass that runs them: native passes
 * (cpu_bcg.c) need none, and on PoCL their program alone took 15-25 s to
 * build with empty caches */
static int bcg_kernels(la_bcg *w, cls_error *err)
{
    if (w->kern[0])
        return CLS_OK;
    cl_program aux;
    int rc = la_aux_program(w->la, &aux, err);
    for (int m = 0; !rc && m < LA_BCG_NKERN; m++) {
        snprintf(w->names[m], sizeof w->names[m], bcg_kernel_names[m], w->kw);
        if (w->lc && (m == LA_BCG_SPMM_SELL || m == LA_BCG_SPMM_CSR)) /* bcg_spmm_*_<kw>c<cw> */
            snprintf(w->names[m] + strlen(w->names[m]), sizeof w->names[m] - strlen(w->names[m]),
                     "c%d", 1 << w->lc);
        rc = ocl_create_kernel(aux, w->names[m], &w->kern[m], err);
    }
    if (rc) { /* none or all */
        cl_kernel *ks[LA_BCG_NKERN];
        for (int m = 0; m < LA_BCG_NKERN; m++)
            ks[m] = &w->kern[m];
        lai_release_objects(ks, LA_BCG_NKERN, NULL, 0);
    }
    return rc;
}

static int bcg_native_off(void)
{
    const char *e = getenv("CLSOLVE_BCG_NATIVE");
    return e && strcmp(e, "0") == 0;
}

int la_bcg_native_usable(const la_ctx *la, const la_csr *A)
{
    cls_error err;
    return !bcg_native_off() && cpu_bcg_usable(la, A, &err) == CLS_OK;
}

int la_bcg_native(la_bcg *w, const la_csr *A, const la_vec *dinv)
{
    if (bcg_native_off() || !(w->la->ocl->dev.type & CL_DEVICE_TYPE_CPU))
        return 0; /* a GPU: the kernels, quietly */
    cls_error err;
    if (cpu_bcg_create(w, A, dinv, &err) == CLS_OK) {
        /* G = P'Q in the SpMM at every width and rho in the update's pass
         * (the tile is in cache); CLSOLVE_BCG_FUSED=0 keeps the separate
         * passes, their twins (the same sums in the same order: the same
         * bits) */
        w->fused = bcg_fused_env() != 0;
        w->rho_fused = w->fused && !w->Z; /* rho = (D^-1 R)'R or R'R: none or jacobi */
        char msg[160];
        snprintf(msg, sizeof msg, "bcg: native loops on the CPU (%d threads, %d columns)",
                 cpu_bcg_threads(w), w->k);
        cls_trace(msg);
        return 1;
    }
    char msg[320];
    snprintf(msg, sizeof msg, "bcg: the kernels, not native loops: %.240s", err.msg);
    cls_trace(msg);
    return 0;
}

void la_bcg_release(la_bcg *w)
{
    if (!w || !w->la)
        return;
    cpu_bcg_release(w); /* unmapped before the buffers go */
    la_vec *views[] = {w->xv, w->rv, w->zv};
    for (int v = 0; v < 3; v++)
        for (int c = 0; c < LA_BCG_MAXK; c++)
            if (views[v][c].buf)
                clReleaseMemObject(views[v][c].buf);
    cl_kernel *ks[LA_BCG_NKERN];
    for (int m = 0; m < LA_BCG_NKERN; m++)
        ks[m] = &w->kern[m];
    cl_mem *ms[] = {&w->X, &w->R,     &w->P,    &w->Q,       &w->Z,
                    &w->B, &w->alpha, &w->beta, &w->partial, &w->out};
    lai_release_objects(ks, LA_BCG_NKERN, ms, 10);
    memset(w, 0, sizeof *w);
}

int la_bcg_put(la_bcg *w, cl_mem blk, int c, const la_vec *v, cls_error *err)
{
    if (w->cpu)
        return cpu_bcg_put(w, blk, c, v, err);
    cl_int st = clEnqueueCopyBuffer(w->la->ocl->queue, v->buf, blk, 0,
                                    (size_t)c * (size_t)w->ld * w->la->elem,
                                    (size_t)w->n * w->la->elem, 0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueCopyBuffer(into a block)");
    return CLS_OK;
}

int la_bcg_get(la_bcg *w, cl_mem blk, int c, la_vec *v, cls_error *err)
{
    if (w->cpu)
        return cpu_bcg_get(w, blk, c, v, err);
    cl_int st =
        clEnqueueCopyBuffer(w->la->ocl->queue, blk, v->buf, (size_t)c * (size_t)w->ld * w->la->elem,
                            0, (size_t)w->n * w->la->elem, 0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueCopyBuffer(out of a block)");
    return CLS_OK;
}

/* the k x k scalars into buf, in the vectors' precision; blocking, so the
 * host array may change at once */
static int bcg_scalars(la_bcg *w, cl_mem buf, const double *v, cls_error *err)
{
    double d[LA_BCG_MAXK * LA_BCG_MAXK];
    float f[LA_BCG_MAXK * LA_BCG_MAXK];
    for (int m = 0; m < LA_BCG_MAXK * LA_BCG_MAXK; m++) {
        d[m] = v ? v[m] : 0.0;
        f[m] = (float)d[m];
    }
    cl_int st = clEnqueueWriteBuffer(
        w->la->ocl->queue, buf, CL_TRUE, 0, LA_BCG_MAXK * LA_BCG_MAXK * w->la->elem,
        w->la->elem == sizeof(float) ? (const void *)f : (const void *)d, 0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueWriteBuffer(block CG scalars)");
    return CLS_OK;
}

/* fold the groups' sums and read them */
static int bcg_sums(la_bcg *w, size_t groups, double out[LA_BCG_NSUM], cls_error *err)
{
    la_ctx *la = w->la;
    cl_int g = (cl_int)groups;
    size_t ls = w->ls;
    int rc = lai_set_args(w->kern[LA_BCG_FOLD], "bcg_fold", err, 4, A_INT(g), A_MEM(w->partial),
                          A_MEM(w->out), A_LOCAL(ls * la_acc_size(la)));
    if (!rc)
        rc = la_launch(la, w->kern[LA_BCG_FOLD], "bcg_fold", LA_BCG_NACC, ls, err);
    if (rc)
        return rc;
    double d[LA_BCG_NACC];
    float f[LA_BCG_NACC];
    const int dbl = la_acc_size(la) == sizeof(double);
    cl_int st =
        clEnqueueReadBuffer(la->ocl->queue, w->out, CL_TRUE, 0, LA_BCG_NACC * la_acc_size(la),
                            dbl ? (void *)d : (void *)f, 0, NULL, NULL);
    OCL_CHECK(err, st, "clEnqueueReadBuffer(block CG sums)");
    /* the triangle a <= b into both halves of the square, then the diagonal */
    int t = 0;
    for (int a = 0; a < LA_BCG_MAXK; a++)
        for (int b = a; b < LA_BCG_MAXK; b++, t++)
            out[a * LA_BCG_MAXK + b] = out[b * LA_BCG_MAXK + a] = dbl ? d[t] : (double)f[t];
    for (int b = 0; b < LA_BCG_MAXK; b++)
        out[64 + b] = dbl ? d[36 + b] : (double)f[36 + b];
    return CLS_OK;
}

int la_bcg_supports(const la_csr *A)
{
    return A->row_offset == 0 &&
           (A->variant == LA_SPMV_SELL || (A->rowptr && A->variant != LA_SPMV_BCSR));
}

int la_bcg_spmm(la_bcg *w, const la_csr *A, double *gram, cls_error *err)
{
    if (w->cpu)
        return cpu_bcg_spmm(w, A, gram, err);
    int rc = bcg_kernels(w, err);
    if (rc)
        return rc;
    const int sell = A->variant == LA_SPMV_SELL;
    const int which = sell ? (gram ? LA_BCG_SPMM_SELL_G : LA_BCG_SPMM_SELL)
                           : (gram ? LA_BCG_SPMM_CSR_G : LA_BCG_SPMM_CSR);
    /* kw work-items a row (bcg.cl; kw / cw unfused), within the records
     * there are */
    const size_t lanes = (size_t)w->kw >> (gram ? 0 : w->lc);
    size_t g;
    rc = lai_spmm_rm_launch(w->la, w->kern[which], w->names[which], A, lanes, w->P, w->Q,
                            w->partial, 1, w->pcap, &g, err);
    return rc || !gram ? rc : bcg_sums(w, g, gram, err);
}

static int bcg_gram(la_bcg *w, cl_mem U, cl_int ur, cl_int uc, cl_mem V, cl_int vr, cl_int vc,
                    const la_vec *wt, double out[LA_BCG_NSUM], cls_error *err)
{
    if (w->cpu)
        return cpu_bcg_gram(w, U, ur, uc, V, vr, vc, wt, out, err);
    int rc = bcg_kernels(w, err);
    if (rc)
        return rc;
    cl_int n = (cl_int)w->n, k = w->k, use = wt != NULL;
    cl_mem wm = wt ? wt->buf : U; /* not read without weights */
    cl_kernel kn = w->kern[LA_BCG_GRAM];
    rc = lai_set_args(kn, "bcg_gram", err, 12, A_INT(n), A_INT(k), A_MEM(U), A_INT(ur), A_INT(uc),
                      A_MEM(V), A_INT(vr), A_INT(vc), A_MEM(wm), A_INT(use), A_MEM(w->partial),
                      A_LOCAL(8 * w->ls * la_acc_size(w->la)));
    if (!rc)
        rc = la_launch(w->la, kn, "bcg_gram", w->groups, w->ls, err);
    return rc ? rc : bcg_sums(w, w->groups, out, err);
}

int la_bcg_gram_pq(la_bcg *w, double out[LA_BCG_NSUM], cls_error *err)
{
    return bcg_gram(w, w->P, w->kw, 1, w->Q, w->kw, 1, NULL, out, err);
}

int la_bcg_gram_cols(la_bcg *w, cl_mem U, cl_mem V, const la_vec *wt, double out[LA_BCG_NSUM],
                     cls_error *err)
{
    const cl_int ld = (cl_int)w->ld;
    return bcg_gram(w, U, 1, ld, V, 1, ld, wt, out, err);
}

/* the kernel's r_b'r_b as out[64 + b], the square 0 (the records' triangle
 * is not this kernel's) */
static int bcg_rr(la_bcg *w, cl_kernel kn, const char *name, double out[LA_BCG_NSUM],
                  cls_error *err)
{
    int rc = la_launch(w->la, kn, name, w->groups, w->ls, err);
    if (!rc)
        rc = bcg_sums(w, w->groups, out, err);
    for (int m = 0; !rc && m < LA_BCG_MAXK * LA_BCG_MAXK; m++)
        out[m] = 0.0;
    return rc;
}

int la_bcg_update(la_bcg *w, const double *alpha, double out[LA_BCG_NSUM], cls_error *err)
{
    if (w->cpu)
        return cpu_bcg_update(w, alpha, out);
    int rc = bcg_kernels(w, err);
    if (rc)
        return rc;
    cl_int n = (cl_int)w->n, ld = (cl_int)w->ld, k = w->k;
    cl_kernel kn = w->kern[LA_BCG_UPDATE];
    rc = bcg_scalars(w, w->alpha, alpha, err);
    if (!rc)
        rc = lai_set_args(kn, w->names[LA_BCG_UPDATE], err, 8, A_INT(n), A_INT(ld), A_INT(k),
                          A_MEM(w->R), A_MEM(w->Q), A_MEM(w->alpha), A_MEM(w->partial),
                          A_LOCAL(8 * w->ls * la_acc_size(w->la)));
    return rc ? rc : bcg_rr(w, kn, w->names[LA_BCG_UPDATE], out, err);
}

int la_bcg_ax(la_bcg *w, la_spmmk *sk, const la_csr *A, cls_error *err)
{
    if (w->cpu)
        return cpu_bcg_ax(w, A, err);
    const la_vec *xv[LA_BCG_MAXK];
    la_vec *rv[LA_BCG_MAXK];
    for (int c = 0; c < w->k; c++) {
        xv[c] = &w->xv[c];
        rv[c] = &w->rv[c];
    }
    return la_spmm(sk, A, w->k, xv, rv, err);
}

int la_bcg_resid(la_bcg *w, double out[LA_BCG_NSUM], cls_error *err)
{
    if (w->cpu)
        return cpu_bcg_resid(w, out);
    int rc = bcg_kernels(w, err);
    if (rc)
        return rc;
    cl_int n = (cl_int)w->n, ld = (cl_int)w->ld, k = w->k;
    cl_kernel kn = w->kern[LA_BCG_RESID];
    rc = lai_set_args(kn, "bcg_resid", err, 7, A_INT(n), A_INT(ld), A_INT(k), A_MEM(w->B),
                      A_MEM(w->R), A_MEM(w->partial), A_LOCAL(8 * w->ls * la_acc_size(w->la)));
    return rc ? rc : bcg_rr(w, kn, "bcg_resid", out, err);
}

int la_bcg_dir(la_bcg *w, cl_mem zsrc, const la_vec *dinv, const double *beta, int fresh,
               int with_x, cls_error *err)
{
    if (w->cpu)
        return cpu_bcg_dir(w, zsrc, dinv, beta, fresh, with_x, err);
    int rc = bcg_kernels(w, err);
    if (rc)
        return rc;
    cl_int n = (cl_int)w->n, ld = (cl_int)w->ld, k = w->k, use = dinv != NULL, fr = fresh;
    cl_int xu = with_x && !fresh;
    cl_mem d = dinv ? dinv->buf : w->B; /* not read without (B: no argument it writes) */
    cl_kernel kn = w->kern[LA_BCG_DIR];
    rc = fresh ? CLS_OK : bcg_scalars(w, w->beta, beta, err);
    if (!rc)
        rc = lai_set_args(kn, w->names[LA_BCG_DIR], err, 12, A_INT(n), A_INT(ld), A_INT(k),
                          A_MEM(zsrc), A_MEM(d), A_INT(use), A_MEM(w->P), A_MEM(w->beta), A_INT(fr),
                          A_MEM(w->X), A_MEM(w->alpha), A_INT(xu));
    return rc ? rc : la_launch(w->la, kn, w->names[LA_BCG_DIR], w->groups, w->ls, err);
}
