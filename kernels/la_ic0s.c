/*
 * la_ic0s.c: host side of ic0_setup.cl (contract in la_ic0s.h).
 *
 * The steps, all on the device: A's CSR arrays (la_amgs_csr_of: the
 * solve's own copy where it can), the strict lower part counted, scanned
 * and copied with a_ii apart, the starting guess, `sweeps` sweeps between
 * two buffers, 1/l_ii, and U = L' by la_amgs_transpose (rows sorted, as
 * the host's U). Three reads come back: the bad-row flags after the copy
 * and after the sweeps, and the scan's total.
 */
#include "la_ic0s.h"
#include "la_priv.h"

#include <stdlib.h>
#include <string.h>

#define A_DBL(v) sizeof(cl_double), (const void *)&(v)

static const char *const ic0s_sources[] = {"ic0_setup.cl"};

int la_ic0s_init(la_ctx *la, la_ic0s *k, cls_error *err)
{
    memset(k, 0, sizeof *k);
    int rc = la_amgs_init(la, &k->a, err); /* refuses all but double precision */
    if (rc)
        return rc;
    if ((rc = ocl_build_program(la->ocl, ic0s_sources, 1, "", &k->prog, err))) {
        la_ic0s_release(k);
        return rc;
    }
    struct {
        cl_kernel *k;
        const char *name;
    } ks[] = {{&k->k_count, "ic0s_count"},
              {&k->k_fill, "ic0s_fill"},
              {&k->k_guess, "ic0s_guess"},
              {&k->k_sweep, "ic0s_sweep"},
              {&k->k_dl, "ic0s_dl"}};
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++)
        if ((rc = ocl_create_kernel(k->prog, ks[i].name, ks[i].k, err))) {
            la_ic0s_release(k);
            return rc;
        }
    return CLS_OK;
}

void la_ic0s_release(la_ic0s *k)
{
    cl_kernel *ks[] = {&k->k_count, &k->k_fill, &k->k_guess, &k->k_sweep, &k->k_dl};
    lai_release_objects(ks, 5, NULL, 0);
    if (k->prog)
        clReleaseProgram(k->prog);
    k->prog = NULL;
    la_amgs_release(&k->a);
}

static int sweeps_default(int sweeps)
{
    if (sweeps > 0)
        return sweeps;
    const char *e = getenv("CLSOLVE_IC0_SETUP_SWEEPS");
    return e && atoi(e) > 0 ? atoi(e) : LA_IC0S_SWEEPS;
}

int la_ic0s_factor(la_ctx *la, la_ic0s *k, const csr_matrix *A, const la_csr *dA, double shift,
                   int sweeps, la_tri *L, la_tri *U, int64_t *bad, cls_error *err)
{
    memset(L, 0, sizeof *L);
    memset(U, 0, sizeof *U);
    *bad = -1;
    sweeps = sweeps_default(sweeps);
    la_amgs *a = &k->a;
    cl_int n = (cl_int)A->nrows, b = INT32_MAX;
    size_t nn = (size_t)(n ? n : 1), nd = nn * sizeof(cl_double);
    la_dcsr D = {0}, T = {0};
    int owned = 0;
    cl_mem cnt = NULL, srow = NULL, scol = NULL, sa = NULL, adiag = NULL, l[2] = {NULL, NULL},
           d[2] = {NULL, NULL}, dl = NULL, dl2 = NULL;
    int64_t m = 0;
    int rc;
    if ((rc = la_amgs_csr_of(la, a, A, dA, &D, &owned, err)) ||
        (rc = la_amgs_buffer(la, nn * sizeof(cl_int), &cnt, err)) ||
        (rc = la_amgs_buffer(la, (nn + 1) * sizeof(cl_int), &srow, err)) ||
        (rc = lai_set_args(k->k_count, "ic0s_count", err, 4, A_INT(n), A_MEM(D.rowptr),
                           A_MEM(D.col), A_MEM(cnt))) ||
        (rc = la_amgs_run(la, a, k->k_count, "ic0s_count", n, err)) ||
        (rc = la_scan_i32(la, &a->sp, cnt, n, srow, &m, err)))
        goto done;
    size_t mm = (size_t)(m ? m : 1);
    if ((rc = la_amgs_buffer(la, mm * sizeof(cl_int), &scol, err)) ||
        (rc = la_amgs_buffer(la, mm * sizeof(cl_double), &sa, err)) ||
        (rc = la_amgs_buffer(la, nd, &adiag, err)) ||
        (rc = la_amgs_fill_int(la, a->ctr, INT32_MAX, 1, err)) ||
        (rc = lai_set_args(k->k_fill, "ic0s_fill", err, 9, A_INT(n), A_MEM(D.rowptr), A_MEM(D.col),
                           A_MEM(D.val), A_MEM(srow), A_MEM(scol), A_MEM(sa), A_MEM(adiag),
                           A_MEM(a->ctr))) ||
        (rc = la_amgs_run(la, a, k->k_fill, "ic0s_fill", n, err)) ||
        (rc = la_amgs_read_int(la, a->ctr, &b, err)))
        goto done;
    if (b != INT32_MAX) {
        *bad = b;
        goto done;
    }
    for (int i = 0; i < 2; i++)
        if ((rc = la_amgs_buffer(la, mm * sizeof(cl_double), &l[i], err)) ||
            (rc = la_amgs_buffer(la, nd, &d[i], err)))
            goto done;
    if ((rc = lai_set_args(k->k_guess, "ic0s_guess", err, 7, A_INT(n), A_MEM(srow), A_MEM(scol),
                           A_MEM(sa), A_MEM(adiag), A_MEM(l[0]), A_MEM(d[0]))) ||
        (rc = la_amgs_run(la, a, k->k_guess, "ic0s_guess", n, err)))
        goto done;
    int cur = 0;
    for (int s = 0; s < sweeps; s++, cur ^= 1)
        /* only the last sweep's pivots count: the first ones start from a
         * guess and may dip where the factor does not */
        if ((s == sweeps - 1 && (rc = la_amgs_fill_int(la, a->ctr, INT32_MAX, 1, err))) ||
            (rc =
                 lai_set_args(k->k_sweep, "ic0s_sweep", err, 11, A_INT(n), A_MEM(srow), A_MEM(scol),
                              A_MEM(sa), A_MEM(adiag), A_DBL(shift), A_MEM(l[cur]), A_MEM(d[cur]),
                              A_MEM(l[cur ^ 1]), A_MEM(d[cur ^ 1]), A_MEM(a->ctr))) ||
            (rc = la_amgs_run(la, a, k->k_sweep, "ic0s_sweep", n, err)))
            goto done;
    if ((rc = la_amgs_read_int(la, a->ctr, &b, err)))
        goto done;
    if (b != INT32_MAX) {
        *bad = b;
        goto done;
    }
    la_dcsr S = {srow, scol, l[cur], n, n, m};
    if ((rc = la_amgs_buffer(la, nd, &dl, err)) || (rc = la_amgs_buffer(la, nd, &dl2, err)) ||
        (rc = lai_set_args(k->k_dl, "ic0s_dl", err, 4, A_INT(n), A_MEM(d[cur]), A_MEM(dl),
                           A_MEM(dl2))) ||
        (rc = la_amgs_run(la, a, k->k_dl, "ic0s_dl", n, err)) ||
        (rc = la_amgs_transpose(la, a, &S, &T, err)) || (rc = la_finish(la, err)))
        goto done;
    /* the buffers move to the two factors */
    *L = (la_tri){.n = n, .nnz = m, .rowptr = srow, .col = scol, .val = l[cur], .dl = dl};
    *U = (la_tri){.n = n, .nnz = m, .rowptr = T.rowptr, .col = T.col, .val = T.val, .dl = dl2};
    srow = scol = l[cur] = dl = dl2 = NULL;
    T.rowptr = T.col = T.val = NULL;
done:
    if (owned)
        la_dcsr_release(&D);
    la_dcsr_release(&T);
    cl_mem *ms[] = {&cnt, &srow, &scol, &sa, &adiag, &l[0], &l[1], &d[0], &d[1], &dl, &dl2};
    lai_release_objects(NULL, 0, ms, (int)(sizeof ms / sizeof *ms));
    return rc;
}
