/*
 * cmd_solve.c: `clsolve solve`, the whole pipeline on one machine: read the
 * matrix (and b, x0), solve with CG on the chosen OpenCL device, write x,
 * and report. Without -b the right-hand side is b = A*1, so the exact
 * solution is all ones and the error is reported beside the residual.
 *
 * The JSON summary (--json) is the contract scripts and tests read: its keys
 * are listed in DESIGN.md and must not be renamed.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common/timer.h"
#include "matrices/mm.h"
#include "solver/solve.h"

typedef struct progress {
    double start, last;
    int tty, shown;
} progress;

/* Prints "iteration, residual, iterations per second" on a terminal, once a
 * solve has run for a second, at most four times a second. */
static int progress_monitor(void *ctx, int64_t it, double res)
{
    progress *p = ctx;
    double now = cls_now();
    if (!p->tty || now - p->start < 1.0 || now - p->last < 0.25)
        return 0;
    p->last = now;
    p->shown = 1;
    fprintf(stderr, "\r  iteration %-9lld residual %.3e  %8.0f it/s ", (long long)it, res,
            (double)it / (now - p->start));
    fflush(stderr);
    return 0;
}

static json_t *device_json(const solve_report *rep)
{
    return json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:{s:I, s:I, s:I, s:s, s:I}}",
                     "index", rep->device.index, "name", rep->device.name, "platform",
                     rep->device.platform_name, "type", ocl_type_name(rep->device.type),
                     "driver", rep->device.driver, "compute_units",
                     (int)rep->device.compute_units, "work_group", "local_size",
                     (json_int_t)rep->config.local_size, "groups_per_cu",
                     (json_int_t)rep->config.groups_per_cu, "spmv_local_size",
                     (json_int_t)rep->config.spmv_local_size, "spmv_variant",
                     la_spmv_variant_name(rep->spmv), "vector_width",
                     (json_int_t)rep->config.vector_width);
}

int cmd_solve(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "solve"};
    const char *path = NULL, *bpath = NULL, *x0path = NULL, *out = NULL;
    int json = 0;
    solve_options opt;
    solve_options_default(&opt);

    while (a.i < argc) {
        if (cli_opt(&a, "-b", "--rhs", 1))
            bpath = a.value;
        else if (cli_opt(&a, "--x0", NULL, 1))
            x0path = a.value;
        else if (cli_opt(&a, "-o", "--output", 1))
            out = a.value;
        else if (cli_opt(&a, "--tol", NULL, 1)) {
            opt.tol = cli_double(&a, "--tol", a.value);
            if (!(opt.tol > 0.0 && opt.tol < 1.0))
                cli_usage_error("solve", "--tol must be in (0, 1), got %s", a.value);
        } else if (cli_opt(&a, "--maxiter", NULL, 1))
            opt.maxiter = cli_int(&a, "--maxiter", a.value, 1);
        else if (cli_opt(&a, "--precond", NULL, 1)) {
            if (!strcmp(a.value, "none"))
                opt.precond = PRECOND_NONE;
            else if (!strcmp(a.value, "jacobi"))
                opt.precond = PRECOND_JACOBI;
            else
                cli_usage_error("solve", "--precond: '%s' is not none or jacobi", a.value);
        } else if (cli_opt(&a, "--method", NULL, 1)) {
            if (strcmp(a.value, "cg") != 0)
                cli_usage_error("solve", "--method: '%s' is not a method this build has (cg)",
                                a.value);
        } else if (cli_opt(&a, "--precision", NULL, 1)) {
            if (!strcmp(a.value, "double"))
                opt.precision = LA_DOUBLE;
            else if (!strcmp(a.value, "float"))
                opt.precision = LA_FLOAT;
            else
                cli_usage_error("solve", "--precision: '%s' is not double or float", a.value);
        } else if (cli_opt(&a, "--device", NULL, 1))
            opt.device = a.value;
        else if (cli_opt(&a, "--spmv", NULL, 1)) {
            if (!strcmp(a.value, "auto"))
                opt.spmv = LA_SPMV_AUTO;
            else if (!strcmp(a.value, "scalar"))
                opt.spmv = LA_SPMV_SCALAR;
            else if (!strcmp(a.value, "vector"))
                opt.spmv = LA_SPMV_VECTOR;
            else
                cli_usage_error("solve", "--spmv: '%s' is not auto, scalar or vector", a.value);
        } else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("solve", "unknown option '%s'", argv[a.i]);
        else if (!path)
            path = argv[a.i++];
        else
            cli_usage_error("solve", "unexpected argument '%s'", argv[a.i]);
    }
    if (!path)
        cli_usage_error("solve", "no matrix file given");
    opt.name = path;

    double t0 = cls_now();
    csr_matrix A;
    mm_header h;
    mm_read_stats st;
    cls_error err;
    cls_error_clear(&err);
    double *b = NULL, *x0 = NULL, *x = NULL;
    int64_t nb = 0, nx0 = 0;
    int rc;
    int rhs_is_A1 = 0;
    solve_report rep;
    memset(&rep, 0, sizeof rep);
    rep.true_rel_residual = NAN;
    double parse_s = 0;

    csr_init(&A);
    memset(&st, 0, sizeof st);
    rc = mm_read_csr(path, NULL, &A, &h, &st, &err);
    if (rc)
        goto report;
    if (bpath) {
        rc = mm_read_vector(bpath, &b, &nb, &err);
        if (rc)
            goto report;
        if (nb != A.nrows) {
            rc = cls_fail(&err, CLS_EINPUT, "%s: right-hand side has %lld entries but %s has %lld rows",
                          bpath, (long long)nb, path, (long long)A.nrows);
            goto report;
        }
    }
    if (x0path) {
        rc = mm_read_vector(x0path, &x0, &nx0, &err);
        if (rc)
            goto report;
        if (nx0 != A.ncols) {
            rc = cls_fail(&err, CLS_EINPUT, "%s: initial guess has %lld entries but %s has %lld columns",
                          x0path, (long long)nx0, path, (long long)A.ncols);
            goto report;
        }
    }
    parse_s = cls_now() - t0;
    if (A.nrows != A.ncols) {
        rc = solve_check_input(&A, NULL, 0, path, &err);
        goto report;
    }
    x = malloc((size_t)(A.nrows ? A.nrows : 1) * sizeof *x);
    if (!b) {
        /* b = A * 1: the exact solution is the vector of ones */
        b = malloc((size_t)(A.nrows ? A.nrows : 1) * sizeof *b);
        double *ones = malloc((size_t)(A.ncols ? A.ncols : 1) * sizeof *ones);
        if (!b || !ones || !x) {
            free(ones);
            rc = cls_fail(&err, CLS_EOTHER, "out of memory for the vectors");
            goto report;
        }
        for (int64_t i = 0; i < A.ncols; i++)
            ones[i] = 1.0;
        csr_spmv_ref(&A, ones, b);
        free(ones);
        rhs_is_A1 = 1;
    }
    if (!x) {
        rc = cls_fail(&err, CLS_EOTHER, "out of memory for the solution");
        goto report;
    }

    progress pr = {.start = cls_now(), .tty = isatty(2)};
    opt.monitor = progress_monitor;
    opt.monitor_ctx = &pr;
    rc = solve_run(&A, b, x0, x, &opt, &rep, &err);
    if (pr.shown)
        fputc('\n', stderr);
    if (out && (rc == CLS_OK || rc == CLS_ENOTCONV)) {
        char comment[256];
        snprintf(comment, sizeof comment, "clsolve solution of %s: %s, %lld iterations", path,
                 rep.cg.converged ? "converged" : "not converged", (long long)rep.cg.iterations);
        cls_error werr;
        if (mm_write_vector(out, x, A.nrows, comment, &werr)) {
            fprintf(stderr, "clsolve solve: %s\n", werr.msg);
            if (rc == CLS_OK)
                rc = CLS_EOTHER;
        }
    }

report:;
    double total_s = cls_now() - t0;
    double err_ones = NAN;
    if (rhs_is_A1 && x && (rc == CLS_OK || rc == CLS_ENOTCONV)) {
        err_ones = 0;
        for (int64_t i = 0; i < A.nrows; i++)
            if (fabs(x[i] - 1.0) > err_ones)
                err_ones = fabs(x[i] - 1.0);
    }
    int solved = rep.cg.nhistory > 0;
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "matrix", json_string(path));
        json_object_set_new(o, "converged", json_boolean(rc == CLS_OK));
        json_object_set_new(o, "exit_code", json_integer(rc));
        if (rc != CLS_OK) {
            json_object_set_new(o, "error", json_string(err.msg));
            if (err.line)
                json_object_set_new(o, "line", json_integer(err.line));
        }
        if (solved) {
            json_object_set_new(o, "reason", json_string(cg_reason_name(rep.cg.reason)));
            json_object_set_new(o, "iterations", json_integer(rep.cg.iterations));
            json_object_set_new(o, "relative_residual", json_real(rep.cg.rel_residual));
            json_object_set_new(o, "true_relative_residual",
                                isfinite(rep.true_rel_residual) ? json_real(rep.true_rel_residual)
                                                                : json_null());
            if (rhs_is_A1)
                json_object_set_new(o, "max_error_vs_exact",
                                    isfinite(err_ones) ? json_real(err_ones) : json_null());
        }
        json_object_set_new(o, "rows", json_integer(A.nrows));
        json_object_set_new(o, "nnz", json_integer(A.nnz));
        json_object_set_new(o, "duplicates", json_integer(st.duplicates));
        json_object_set_new(o, "rhs", json_string(bpath ? bpath : "A*ones"));
        json_object_set_new(o, "tol", json_real(opt.tol));
        json_object_set_new(o, "method", json_string(solver_method_name(opt.method)));
        json_object_set_new(o, "precond", json_string(solver_precond_name(opt.precond)));
        json_object_set_new(o, "precision", json_string(la_precision_name(opt.precision)));
        json_object_set_new(o, "parts", json_pack("{s:i, s:i, s:i}", "ranks", 1,
                                                  "devices_per_rank", 1, "total", 1));
        json_t *devs = json_array();
        if (rep.device.name[0])
            json_array_append_new(devs, device_json(&rep));
        json_object_set_new(o, "devices", devs);
        double per_it = rep.cg.iterations ? rep.solve_s / (double)rep.cg.iterations : 0.0;
        json_object_set_new(o, "times",
                            json_pack("{s:f, s:f, s:f, s:f, s:f}", "parse_s", parse_s, "setup_s",
                                      rep.setup_s, "solve_s", rep.solve_s, "total_s", total_s,
                                      "ms_per_iteration", 1e3 * per_it));
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        if (s)
            puts(s);
        free(s);
        json_decref(o);
    }
    if (rc != CLS_OK)
        fprintf(stderr, "clsolve solve: %s\n", err.msg);
    if (!json && solved) {
        printf("%s: %lld rows, %lld nonzeros\n", path, (long long)A.nrows, (long long)A.nnz);
        printf("device: %s (%s, %s)\n", rep.device.name, rep.device.platform_name,
               ocl_type_name(rep.device.type));
        printf("method: %s, precond %s, precision %s, spmv %s\n", solver_method_name(opt.method),
               solver_precond_name(opt.precond), la_precision_name(opt.precision),
               la_spmv_variant_name(rep.spmv));
        printf("%s after %lld iterations: relative residual %.3e (true %.3e)%s\n",
               rep.cg.converged ? "converged" : "not converged", (long long)rep.cg.iterations,
               rep.cg.rel_residual, rep.true_rel_residual, "");
        if (rhs_is_A1 && isfinite(err_ones))
            printf("b = A*1: max |x_i - 1| = %.3e\n", err_ones);
        printf("times: parse %.3f s, setup %.3f s, solve %.3f s (%.4f ms/iteration), total %.3f s\n",
               parse_s, rep.setup_s, rep.solve_s,
               rep.cg.iterations ? 1e3 * rep.solve_s / (double)rep.cg.iterations : 0.0, total_s);
        if (out && (rc == CLS_OK || rc == CLS_ENOTCONV))
            printf("solution written to %s\n", out);
    }
    solve_report_free(&rep);
    csr_free(&A);
    free(b);
    free(x0);
    free(x);
    return rc;
}
