/*
 * cmd_check.c: `clsolve check A.mtx`: parse a Matrix Market file and say
 * what it is (size, stored entries, symmetry, duplicates, diagonal) and
 * whether CG can solve it, before anyone spends GPU time on it.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "matrices/mm.h"
#include "solver/solve.h"

int cmd_check(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "check"};
    const char *path = NULL;
    int json = 0, threads = 0;
    while (a.i < argc) {
        if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (cli_opt(&a, "--threads", NULL, 1))
            threads = (int)cli_int(&a, "--threads", a.value, 0);
        else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("check", "unknown option '%s'", argv[a.i]);
        else if (!path)
            path = argv[a.i++];
        else
            cli_usage_error("check", "unexpected argument '%s'", argv[a.i]);
    }
    if (!path)
        cli_usage_error("check", "no matrix file given");

    csr_matrix A;
    mm_header h;
    mm_read_stats st;
    cls_error err;
    mm_read_options ro = {.threads = threads};
    memset(&st, 0, sizeof st);
    csr_init(&A);
    int rc = mm_read_csr(path, &ro, &A, &h, &st, &err);
    if (rc) {
        if (json) {
            json_t *o = json_pack("{s:s, s:b, s:s, s:i}", "matrix", path, "valid", 0, "error",
                                  err.msg, "exit_code", rc);
            if (err.line)
                json_object_set_new(o, "line", json_integer(err.line));
            char *s = json_dumps(o, JSON_INDENT(2));
            puts(s);
            free(s);
            json_decref(o);
        }
        fprintf(stderr, "clsolve check: %s\n", err.msg);
        return rc;
    }
    csr_stats cs;
    csr_compute_stats(&A, &cs);
    cls_error cgerr;
    cls_error_clear(&cgerr);
    int cg_ok = solve_check_input(&A, NULL, 0, path, &cgerr) == CLS_OK;
    double mbps = st.seconds > 0 ? (double)st.bytes / st.seconds / 1e6 : 0.0;

    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "matrix", json_string(path));
        json_object_set_new(o, "valid", json_true());
        json_object_set_new(o, "banner", json_pack("{s:s, s:s, s:s}", "layout",
                                                   mm_layout_name(h.layout), "field",
                                                   mm_field_name(h.field), "symmetry",
                                                   mm_symmetry_name(h.symmetry)));
        json_object_set_new(o, "rows", json_integer(A.nrows));
        json_object_set_new(o, "cols", json_integer(A.ncols));
        json_object_set_new(o, "stored_entries", json_integer(st.stored_entries));
        json_object_set_new(o, "nnz", json_integer(A.nnz));
        json_object_set_new(o, "duplicates", json_integer(st.duplicates));
        json_object_set_new(o, "symmetric", json_boolean(cs.symmetric));
        json_object_set_new(o, "max_relative_asymmetry",
                            isfinite(cs.max_asym) ? json_real(cs.max_asym) : json_null());
        json_object_set_new(o, "row_length",
                            json_pack("{s:I, s:f, s:I, s:f, s:I}", "min", (json_int_t)cs.min_row,
                                      "mean", cs.mean_row, "max", (json_int_t)cs.max_row,
                                      "stddev", cs.stddev_row, "empty_rows",
                                      (json_int_t)cs.empty_rows));
        json_object_set_new(o, "diagonal",
                            json_pack("{s:I, s:I, s:I, s:I}", "missing",
                                      (json_int_t)cs.missing_diag, "zero",
                                      (json_int_t)cs.zero_diag, "negative",
                                      (json_int_t)cs.negative_diag, "first_bad_row",
                                      (json_int_t)(cs.first_bad_diag + 1)));
        json_object_set_new(o, "cg_applicable", json_boolean(cg_ok));
        if (!cg_ok)
            json_object_set_new(o, "cg_problem", json_string(cgerr.msg));
        json_object_set_new(o, "parse", json_pack("{s:f, s:I, s:i, s:f}", "seconds", st.seconds,
                                                  "bytes", (json_int_t)st.bytes, "threads",
                                                  st.threads, "mb_per_s", mbps));
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        puts(s);
        free(s);
        json_decref(o);
    } else {
        printf("%s\n", path);
        printf("  banner:       matrix %s %s %s\n", mm_layout_name(h.layout),
               mm_field_name(h.field), mm_symmetry_name(h.symmetry));
        printf("  size:         %lld x %lld\n", (long long)A.nrows, (long long)A.ncols);
        printf("  entries:      %lld stored, %lld nonzeros after expansion\n",
               (long long)st.stored_entries, (long long)A.nnz);
        printf("  duplicates:   %lld (summed)\n", (long long)st.duplicates);
        printf("  symmetric:    %s", cs.symmetric ? "yes" : "no");
        if (!cs.symmetric && isfinite(cs.max_asym))
            printf(" (max |a_ij - a_ji| / max |a_ij| = %.3g)", cs.max_asym);
        printf("\n  row length:   min %lld, mean %.2f, max %lld, %lld empty rows\n",
               (long long)cs.min_row, cs.mean_row, (long long)cs.max_row,
               (long long)cs.empty_rows);
        printf("  diagonal:     %lld missing, %lld zero, %lld negative", (long long)cs.missing_diag,
               (long long)cs.zero_diag, (long long)cs.negative_diag);
        if (cs.first_bad_diag >= 0)
            printf(" (first at row %lld)", (long long)cs.first_bad_diag + 1);
        printf("\n  CG:           %s\n", cg_ok ? "applicable (symmetric, positive diagonal)"
                                              : cgerr.msg);
        printf("  parsed:       %.1f MB in %.3f s (%.0f MB/s, %d threads)\n",
               (double)st.bytes / 1e6, st.seconds, mbps, st.threads);
    }
    csr_free(&A);
    return 0;
}
