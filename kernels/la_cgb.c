/*
 * la_cgb.c: the host side of the batched CG (la_cgb.h; the kernel is
 * cg_batch.cl's, the driver solver/krylov/cg_batch.c).
 *
 * The kernel comes from la's small program (la_small_program, built on
 * first use) and gets its arguments once; a run writes the per-system
 * stops, limits and states, launches nsys work-groups and reads the states
 * and sums back, all on la's queue, the last read blocking. Design of the
 * layer: la_priv.h.
 */
#include "la_cgb.h"

#include <stdlib.h>
#include <string.h>

#include "la_priv.h"
#include "ocl_gate.h"

int la_cgb_create(la_ctx *la, const la_csr *A, const int64_t *row0, int nsys, const la_vec *b,
                  la_vec *x, const la_vec *dinv, la_cgb *w, cls_error *err)
{
    memset(w, 0, sizeof *w);
    int rc;
    if (nsys < 1)
        return cls_fail(err, CLS_EUSAGE, "la_cgb: an empty batch");
    if ((rc = lai_check_len("la_cgb (b)", b->n, A->nrows, err)) ||
        (rc = lai_check_len("la_cgb (x)", x->n, A->nrows, err)) ||
        (rc = lai_check_len("la_cgb (rows)", row0[nsys], A->nrows, err)) ||
        (dinv && (rc = lai_check_len("la_cgb (diagonal)", dinv->n, A->nrows, err))))
        return rc;
    if (!A->rowptr || !A->col || !A->val)
        return cls_fail(err, CLS_EUSAGE, "la_cgb: the batch's matrix has no CSR arrays (%s)",
                        la_spmv_variant_name(A->variant));
    if (A->nrows > INT32_MAX - 1)
        return cls_fail(err, CLS_EINPUT, "a batch of %lld rows is over 32-bit row indices",
                        (long long)A->nrows);
    w->la = la;
    w->nsys = nsys;
    int64_t most = 0;
    cl_int *r0 = malloc((size_t)(nsys + 1) * sizeof *r0);
    if (!r0)
        return cls_fail(err, CLS_EOTHER, "out of memory for the batch's offsets");
    for (int s = 0; s <= nsys; s++) {
        r0[s] = (cl_int)row0[s];
        if (s < nsys && row0[s + 1] - row0[s] > most)
            most = row0[s + 1] - row0[s];
    }
    const int64_t n = A->nrows;
    const size_t as = lai_acc_size(la);
    cl_program prog;
    rc = lai_upload_buf(la, "batch offsets", (size_t)(nsys + 1) * sizeof *r0, r0, &w->row0, err);
    free(r0);
    if (rc || (rc = la_small_program(la, &prog, err)) || (rc = la_vec_create(la, n, &w->r, err)) ||
        (rc = la_vec_create(la, n, &w->p, err)) || (rc = la_vec_create(la, n, &w->q, err)) ||
        (rc = ocl_create_kernel(prog, "cgb_run", &w->k_run, err)) ||
        (rc = lai_cgf_buffer(la, (size_t)nsys * as, &w->stop2, err)) ||
        (rc = lai_cgf_buffer(la, (size_t)nsys * sizeof(cl_int), &w->maxit, err)) ||
        (rc = lai_cgf_buffer(la, (size_t)nsys * 2 * sizeof(cl_int), &w->state, err)) ||
        (rc = lai_cgf_buffer(la, (size_t)nsys * 3 * as, &w->sums, err)))
        goto fail;

    /* one size for every group: the largest system's rows rounded up to 64,
     * at most LA_CGB_LOCAL (measured: bench/cg-batch.sh), the kernel's
     * limit and the local memory (4 accumulators per work-item) */
    size_t want = LA_CGB_LOCAL;
    const char *env = getenv("CLSOLVE_CGB_LOCAL");
    if (env && atoi(env) > 0)
        want = (size_t)atoi(env);
    size_t ls = lai_kernel_max(la, w->k_run, lai_min_sz(want, la->ocl->dev.max_work_group));
    ls = lai_min_sz(ls, lai_max_sz(64, (size_t)((most + 63) / 64 * 64)));
    if (la->ocl->dev.local_mem > 0)
        ls = lai_min_sz(ls, lai_max_sz(1, (size_t)(la->ocl->dev.local_mem / 2 / (4 * as))));
    w->ls = ls ? ls : 1;
    cl_mem dbuf = dinv ? dinv->buf : NULL;
    if ((rc = lai_set_args(w->k_run, "cgb_run", err, 15, A_MEM(w->row0), A_MEM(A->rowptr),
                           A_MEM(A->col), A_MEM(A->val), A_MEM(b->buf), A_MEM(x->buf),
                           A_MEM(w->r.buf), A_MEM(w->p.buf), A_MEM(w->q.buf), A_MEM(dbuf),
                           A_MEM(w->stop2), A_MEM(w->maxit), A_MEM(w->state), A_MEM(w->sums),
                           A_LOCAL(4 * w->ls * as))))
        goto fail;
    return CLS_OK;
fail:
    la_cgb_release(w);
    return rc;
}

int la_cgb_run(la_cgb *w, const double *stop2, const int *maxit, int *state, double *rr,
               double *pq, cls_error *err)
{
    la_ctx *la = w->la;
    const int k = w->nsys;
    const size_t as = lai_acc_size(la);
    unsigned char *s2 = malloc((size_t)k * 3 * as);
    double *sums = malloc((size_t)k * 3 * sizeof *sums);
    cl_int *st = malloc((size_t)k * 2 * sizeof *st), *mi = malloc((size_t)k * sizeof *mi);
    int rc = s2 && sums && st && mi ? CLS_OK
                                    : cls_fail(err, CLS_EOTHER, "out of memory for a batch run");
    for (int s = 0; s < k && !rc; s++) {
        real_arg a = lai_mk_acc(la, stop2[s]);
        memcpy(s2 + (size_t)s * as, &a.u, as);
        mi[s] = (cl_int)maxit[s];
        st[2 * s] = (cl_int)state[2 * s];
        st[2 * s + 1] = (cl_int)state[2 * s + 1];
    }
    if (!rc && !(rc = lai_write_device(la, w->stop2, 0, (size_t)k * as, s2, err)) &&
        !(rc = lai_write_device(la, w->maxit, 0, (size_t)k * sizeof *mi, mi, err)) &&
        !(rc = lai_write_device(la, w->state, 0, (size_t)k * 2 * sizeof *st, st, err)) &&
        !(rc = lai_launch(la, w->k_run, "cgb_run", (size_t)k, w->ls, err))) {
        cl_int e = clEnqueueReadBuffer(la->ocl->queue, w->sums, CL_FALSE, 0, (size_t)k * 3 * as,
                                       s2, 0, NULL, NULL);
        if (e == CL_SUCCESS)
            e = clEnqueueReadBuffer(la->ocl->queue, w->state, CL_TRUE, 0,
                                    (size_t)k * 2 * sizeof *st, st, 0, NULL, NULL);
        if (e != CL_SUCCESS)
            rc = cls_fail(err, CLS_EOTHER, "reading the batch's states back failed: %s (%d)",
                          ocl_errstr(e), (int)e);
    }
    if (!rc) {
        lai_acc_to_double(la, s2, 3 * k, sums);
        for (int s = 0; s < k; s++) {
            state[2 * s] = st[2 * s];
            state[2 * s + 1] = st[2 * s + 1];
            rr[s] = sums[3 * s];
            pq[s] = sums[3 * s + 2];
        }
    }
    free(s2);
    free(sums);
    free(st);
    free(mi);
    return rc;
}

void la_cgb_release(la_cgb *w)
{
    if (!w || !w->la)
        return;
    cl_kernel *ks[] = {&w->k_run};
    cl_mem *ms[] = {&w->row0, &w->stop2, &w->maxit, &w->state, &w->sums};
    lai_release_objects(ks, 1, ms, (int)(sizeof ms / sizeof *ms));
    la_vec_release(&w->r);
    la_vec_release(&w->p);
    la_vec_release(&w->q);
    w->la = NULL;
}
