/*
 * dsolve.c: the collective solve entry point (see dsolve.h).
 *
 * Rank 0 reads the system, solves it on its device through solve_run, and
 * shares the outcome (exit class, message, iteration count, residuals) with
 * every rank, so all ranks return the same exit class. The other ranks take
 * no part in the arithmetic here; the partitioned solve across ranks and
 * devices (the distributed-solve issue) replaces the middle of this function
 * and keeps its contract.
 */
#include "dsolve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "../matrices/mm.h"

void dsolve_report_free(dsolve_report *rep)
{
    if (rep)
        cg_result_free(&rep->cg);
}

/* Rank 0's side: read, solve, fill rep and x. */
static int dsolve_root(const char *a_path, const char *b_path, const char *x0_path,
                       const dsolve_options *opt, dsolve_report *rep, double **x,
                       cls_error *err)
{
    csr_matrix A;
    mm_header h;
    mm_read_stats st;
    double *b = NULL, *x0 = NULL, *xs = NULL;
    int64_t nb = 0, nx0 = 0;
    solve_report sr;
    int rc;
    double t0 = cls_now();

    memset(&sr, 0, sizeof sr);
    memset(&st, 0, sizeof st);
    csr_init(&A);
    if ((rc = mm_read_csr(a_path, NULL, &A, &h, &st, err)))
        goto done;
    rep->rows = A.nrows;
    rep->nnz = A.nnz;
    rep->duplicates = st.duplicates;
    if (b_path) {
        if ((rc = mm_read_vector(b_path, &b, &nb, err)))
            goto done;
        if (nb != A.nrows) {
            rc = cls_fail(err, CLS_EINPUT,
                          "%s: right-hand side has %lld entries but %s has %lld rows", b_path,
                          (long long)nb, a_path, (long long)A.nrows);
            goto done;
        }
    }
    if (x0_path) {
        if ((rc = mm_read_vector(x0_path, &x0, &nx0, err)))
            goto done;
        if (nx0 != A.ncols) {
            rc = cls_fail(err, CLS_EINPUT,
                          "%s: initial guess has %lld entries but %s has %lld columns", x0_path,
                          (long long)nx0, a_path, (long long)A.ncols);
            goto done;
        }
    }
    if (A.nrows != A.ncols) {
        rc = solve_check_input(&A, NULL, 0, a_path, err);
        goto done;
    }
    if (!b) {
        b = malloc((size_t)(A.nrows ? A.nrows : 1) * sizeof *b);
        double *ones = malloc((size_t)(A.ncols ? A.ncols : 1) * sizeof *ones);
        if (!b || !ones) {
            free(ones);
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the right-hand side");
            goto done;
        }
        for (int64_t i = 0; i < A.ncols; i++)
            ones[i] = 1.0;
        csr_spmv_ref(&A, ones, b); /* b = A * 1 */
        free(ones);
    }
    xs = malloc((size_t)(A.nrows ? A.nrows : 1) * sizeof *xs);
    if (!xs) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the solution");
        goto done;
    }
    rep->parse_s = cls_now() - t0;
    solve_options so = opt->solve;
    so.name = a_path;
    rc = solve_run(&A, b, x0, xs, &so, &sr, err);
    rep->cg = sr.cg;
    memset(&sr.cg, 0, sizeof sr.cg);
    rep->true_rel_residual = sr.true_rel_residual;
    rep->setup_s = sr.setup_s;
    rep->solve_s = sr.solve_s;
    if (sr.device.name[0]) {
        rep->nparts = 1;
        rep->parts[0] = (dsolve_part_info){.rank = 0,
                                           .row_begin = 0,
                                           .row_end = A.nrows,
                                           .nnz = A.nnz,
                                           .device = sr.device,
                                           .config = sr.config,
                                           .spmv = sr.spmv};
    }
    if (rep->cg.nhistory > 0 && isfinite(rep->true_rel_residual) && x) {
        *x = xs;
        xs = NULL;
    }

done:
    solve_report_free(&sr);
    csr_free(&A);
    free(b);
    free(x0);
    free(xs);
    return rc;
}

int dsolve_file(MPI_Comm comm, const char *a_path, const char *b_path, const char *x0_path,
                const dsolve_options *opt, dsolve_report *rep, double **x, cls_error *err)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    memset(rep, 0, sizeof *rep);
    rep->true_rel_residual = NAN;
    rep->ranks = size;
    rep->devices_per_rank = 1;
    if (x)
        *x = NULL;

    int rc = CLS_OK;
    if (rank == 0)
        rc = dsolve_root(a_path, b_path, x0_path, opt, rep, x, err);

    /* every rank learns the outcome, so all return the same exit class */
    struct {
        int rc;
        long long iterations, line;
        double rel, true_rel;
        char msg[sizeof err->msg];
    } out;
    memset(&out, 0, sizeof out);
    if (rank == 0) {
        out.rc = rc;
        out.iterations = rep->cg.iterations;
        out.rel = rep->cg.rel_residual;
        out.true_rel = rep->true_rel_residual;
        if (rc && err) {
            out.line = err->line;
            memcpy(out.msg, err->msg, sizeof out.msg);
        }
    }
    MPI_Bcast(&out, (int)sizeof out, MPI_BYTE, 0, comm);
    if (rank != 0) {
        rc = out.rc;
        rep->cg.iterations = out.iterations;
        rep->cg.rel_residual = out.rel;
        rep->true_rel_residual = out.true_rel;
        if (rc)
            cls_fail_line(err, rc, out.line, "%s", out.msg);
    }
    return rc;
}
