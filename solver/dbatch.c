/*
 * dbatch.c: many small systems from their files to x in one launch
 * (dbatch.h). The reading is dsolve_file's for one rank (dinput.c): the
 * matrix through mm_read_csr with the caller's reader options (a daemon's
 * memory budget, its cancel), b from its file or the row sums, the same
 * checks (solve_check_input) and so the same messages. What a batch does
 * not do that dsolve does: scale a system by a power of two (dsolve_scale)
 * when its values lie near the ends of the floating-point range; the
 * systems that come here are small and the true residual in double
 * (cg_batch.c) says how each one ended.
 */
#include "dbatch.h"

#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "../matrices/gen_rows.h"
#include "dist/dvec.h"
#include "dsolve_priv.h"
#include "solve.h"

void dbatch_input_free(dbatch_input *in)
{
    csr_free(&in->A);
    free(in->b);
    in->b = NULL;
}

int dbatch_read(const char *a_path, const char *b_path, const mm_read_options *ro, dbatch_input *in,
                cls_error *err)
{
    memset(in, 0, sizeof *in);
    csr_init(&in->A);
    int rc;
    if (!strncmp(a_path, "gen:", 4)) { /* gen:poisson2d:N and the like */
        gen_grid g;
        rc = gen_grid_parse(a_path + 4, &g, err)
                 ? CLS_EINPUT
                 : gen_grid_rows_csr(&g, 0, gen_grid_rows(&g), &in->A, err);
    } else {
        mm_read_stats st;
        memset(&st, 0, sizeof st);
        rc = mm_read_csr(a_path, ro, &in->A, NULL, &st, err);
        in->duplicates = st.duplicates;
    }
    const int64_t n = in->A.nrows;
    if (!rc && b_path) {
        int64_t rows = 0, cols = 0;
        rc = mm_read_block(b_path, 1, &in->b, &rows, &cols, err);
        if (!rc && rows != n)
            rc = cls_fail(err, CLS_EINPUT,
                          "%s: right-hand side has %lld entries but %s has %lld rows", b_path,
                          (long long)rows, a_path, (long long)n);
    } else if (!rc) {
        in->b = malloc((size_t)(n > 0 ? n : 1) * sizeof *in->b);
        if (!in->b)
            rc = cls_fail(err, CLS_EOTHER, "%s: out of memory for b", a_path);
        else
            dsolve_row_sums(&in->A, in->b); /* b = A*1, dsolve's default: x = 1 exactly */
    }
    if (!rc)
        rc = solve_check_input(&in->A, in->b, n, a_path, err);
    if (rc)
        dbatch_input_free(in);
    return rc;
}

int dbatch_solve(const char *device, la_precision prec, solver_precond pc, cg_batch_system *sys,
                 int k, dbatch_info *info, cls_error *err)
{
    memset(info, 0, sizeof *info);
    const double t0 = cls_now();
    dpart p;
    int rc = dsys_device_open(device, prec, &p, err);
    info->device = p.dev;
    info->warm = p.warm;
    info->init_s = cls_now() - t0;
    if (rc)
        return rc;
    const double t1 = cls_now();
    info->config = p.la.cfg;
    rc = cg_batch_solve(&p.la, sys, k, pc, &info->device_s, err);
    info->solve_s = cls_now() - t1;
    /* a device error leaves the state behind: it is rebuilt next time */
    dsys_device_close(&p, prec, rc == CLS_EOTHER);
    return rc;
}
