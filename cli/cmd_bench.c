/*
 * cmd_bench.c: `clsolve bench`: milliseconds per CG iteration on generated
 * stencil systems, judged against the bandwidth floor.
 *
 * The floor is the time the bytes a CG iteration must move take at the
 * device's copy bandwidth, measured in the same process (kernels/bandwidth.c):
 *   matrix once        12 nnz + 4 (n + 1)    (double values, int32 columns and row pointers)
 *   vectors            8 n x 8               (p read, Ap written and read, x and r read and
 *                                             written, p written)
 * The kernels as they are move more (this implementation's own count is
 * printed beside it); the ratio measured / floor is the figure of merit.
 * Each kernel is also timed alone (host clock around repeated launches and a
 * finish), reported as ms and GB/s of the bytes it must move.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/timer.h"
#include "kernels/bandwidth.h"
#include "matrices/gen.h"
#include "solver/solve.h"

typedef struct bench_kernel {
    const char *name;
    double ms, bytes;
} bench_kernel;

/* Times `reps` launches of one operation; returns ms per launch or -1. */
#define BENCH_TIME(ms_out, reps, call)                                                 \
    do {                                                                               \
        double bt0_ = 0;                                                               \
        int brc_ = 0;                                                                  \
        for (int br_ = -1; br_ < (reps) && !brc_; br_++) {                             \
            if (br_ == 0) {                                                            \
                brc_ = la_finish(&la, &err);                                           \
                bt0_ = cls_now();                                                      \
            }                                                                          \
            brc_ = brc_ ? brc_ : (call);                                               \
        }                                                                              \
        brc_ = brc_ ? brc_ : la_finish(&la, &err);                                     \
        if (brc_)                                                                      \
            goto fail;                                                                 \
        (ms_out) = 1e3 * (cls_now() - bt0_) / (reps);                                  \
    } while (0)

int cmd_bench(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "bench"};
    const char *sizes = "64,128", *device = "auto", *stencil = "poisson3d";
    int iters = 200, json = 0, reps = 20;
    la_precision prec = LA_DOUBLE;
    while (a.i < argc) {
        if (cli_opt(&a, "--sizes", NULL, 1))
            sizes = a.value;
        else if (cli_opt(&a, "--stencil", NULL, 1))
            stencil = a.value;
        else if (cli_opt(&a, "--iters", NULL, 1))
            iters = (int)cli_int(&a, "--iters", a.value, 1);
        else if (cli_opt(&a, "--reps", NULL, 1))
            reps = (int)cli_int(&a, "--reps", a.value, 1);
        else if (cli_opt(&a, "--device", NULL, 1))
            device = a.value;
        else if (cli_opt(&a, "--precision", NULL, 1)) {
            if (!strcmp(a.value, "float"))
                prec = LA_FLOAT;
            else if (strcmp(a.value, "double") != 0)
                cli_usage_error("bench", "--precision: '%s' is not double or float", a.value);
        } else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else
            cli_usage_error("bench", "unknown argument '%s'", argv[a.i]);
    }
    gen_kind kind;
    if (gen_kind_parse(stencil, &kind) != 0)
        cli_usage_error("bench", "--stencil: '%s' is not poisson2d, poisson3d or poisson3d27",
                        stencil);

    cls_error err;
    cls_error_clear(&err);
    ocl_device dev;
    ocl_ctx ocl;
    la_ctx la;
    int rc = ocl_pick_device(device, &dev, &err);
    if (rc || (rc = ocl_ctx_create(&dev, &ocl, &err))) {
        fprintf(stderr, "clsolve bench: %s\n", err.msg);
        return rc;
    }
    if ((rc = la_init(&la, &ocl, prec, NULL, &err))) {
        fprintf(stderr, "clsolve bench: %s\n", err.msg);
        ocl_ctx_release(&ocl);
        return rc;
    }
    double bw = 0;
    if ((rc = ocl_copy_bandwidth(&ocl, (size_t)1 << 29, 10, &bw, &err))) {
        fprintf(stderr, "clsolve bench: %s\n", err.msg);
        goto out;
    }
    const double es = (double)la.elem;
    json_t *rows = json_array();
    if (!json) {
        printf("device: %s (%s), copy bandwidth %.1f GB/s, precision %s\n", dev.name,
               dev.platform_name, bw, la_precision_name(prec));
        printf("%-6s %10s %11s %10s %10s %8s %9s  %s\n", "N", "rows", "nnz", "ms/iter",
               "floor ms", "x floor", "GB/s", "per kernel: ms (GB/s)");
    }

    char *list = strdup(sizes);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int64_t n = cli_int(&a, "--sizes", tok, 1);
        csr_matrix A;
        la_csr dA = {0};
        la_vec b = {0}, x = {0}, p = {0}, q = {0}, r = {0};
        cg_result res = {0};
        if ((rc = gen_matrix(kind, n, &A, &err)))
            goto fail_nomat;
        int64_t N = A.nrows;
        double *ones = malloc((size_t)N * sizeof *ones), *hb = malloc((size_t)N * sizeof *hb);
        if (!ones || !hb) {
            free(ones);
            free(hb);
            rc = cls_fail(&err, CLS_EOTHER, "out of memory");
            goto fail;
        }
        for (int64_t i = 0; i < N; i++)
            ones[i] = 1.0;
        csr_spmv_ref(&A, ones, hb);
        free(ones);
        rc = la_csr_upload(&la, &A, LA_SPMV_AUTO, &dA, &err);
        if (!rc)
            rc = la_vec_create(&la, N, &b, &err);
        if (!rc)
            rc = la_vec_upload(&la, &b, hb, &err);
        free(hb);
        if (!rc)
            rc = la_vec_create(&la, N, &x, &err);
        if (!rc)
            rc = la_vec_create(&la, N, &p, &err);
        if (!rc)
            rc = la_vec_create(&la, N, &q, &err);
        if (!rc)
            rc = la_vec_create(&la, N, &r, &err);
        if (!rc)
            rc = la_fill(&la, 1.0, &p, &err);
        if (!rc)
            rc = la_fill(&la, 0.5, &r, &err);
        if (rc)
            goto fail;

        const double nnz = (double)A.nnz, nr = (double)N;
        const double mat_bytes = (es + 4.0) * nnz + 4.0 * (nr + 1.0);
        bench_kernel k[4] = {
            {"spmv", 0, mat_bytes + 2 * es * nr},
            {"dot", 0, 2 * es * nr},
            {"cg_update", 0, 6 * es * nr},
            {"xpay", 0, 3 * es * nr},
        };
        double dv;
        BENCH_TIME(k[0].ms, reps, la_spmv(&la, &dA, &p, &q, &err));
        BENCH_TIME(k[1].ms, reps, la_dot(&la, &p, &q, &dv, &err));
        BENCH_TIME(k[2].ms, reps, la_cg_update(&la, 1e-30, &p, &q, &x, &r, &dv, &err));
        BENCH_TIME(k[3].ms, reps, la_xpay(&la, &r, 0.5, &p, &err));

        /* whole CG iterations: tol unreachable, so exactly `iters` run */
        cg_options co = {.tol = 1e-300, .maxiter = 5, .precond = PRECOND_NONE};
        rc = la_fill(&la, 0.0, &x, &err);
        if (!rc) {
            rc = cg_solve(&la, &dA, &b, &x, NULL, &co, &res, &err); /* warm-up */
            cg_result_free(&res);
        }
        if (rc && rc != CLS_ENOTCONV)
            goto fail;
        co.maxiter = iters;
        rc = la_fill(&la, 0.0, &x, &err);
        if (!rc)
            rc = la_finish(&la, &err);
        if (rc)
            goto fail;
        double t0 = cls_now();
        rc = cg_solve(&la, &dA, &b, &x, NULL, &co, &res, &err);
        if (rc && rc != CLS_ENOTCONV)
            goto fail;
        if ((rc = la_finish(&la, &err)))
            goto fail;
        double ms = 1e3 * (cls_now() - t0) / (double)res.iterations;
        int64_t its = res.iterations;
        cg_result_free(&res);
        rc = CLS_OK;

        const double floor_bytes = (es + 4.0) * nnz + 4.0 * (nr + 1.0) + 8.0 * es * nr;
        const double impl_bytes = k[0].bytes + k[1].bytes + k[2].bytes + k[3].bytes;
        const double floor_ms = 1e3 * floor_bytes / (bw * 1e9);
        if (json) {
            json_t *kj = json_object();
            for (int i = 0; i < 4; i++)
                json_object_set_new(kj, k[i].name,
                                    json_pack("{s:f, s:f, s:f}", "ms", k[i].ms, "bytes", k[i].bytes,
                                              "gb_per_s", k[i].bytes / (k[i].ms * 1e-3) / 1e9));
            json_array_append_new(
                rows, json_pack("{s:s, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:o}",
                                "stencil", gen_kind_name(kind), "n", (json_int_t)n, "rows",
                                (json_int_t)N, "nnz", (json_int_t)A.nnz, "iterations",
                                (json_int_t)its, "ms_per_iteration", ms, "floor_ms", floor_ms,
                                "ratio_to_floor", ms / floor_ms, "floor_bytes", floor_bytes,
                                "implementation_bytes", impl_bytes, "kernels", kj));
        } else {
            printf("%-6lld %10lld %11lld %10.4f %10.4f %8.2f %9.1f ", (long long)n, (long long)N,
                   (long long)A.nnz, ms, floor_ms, ms / floor_ms, floor_bytes / (ms * 1e-3) / 1e9);
            for (int i = 0; i < 4; i++)
                printf(" %s %.4f (%.0f)", k[i].name, k[i].ms,
                       k[i].bytes / (k[i].ms * 1e-3) / 1e9);
            printf("\n");
            fflush(stdout);
        }
    fail:
        la_vec_release(&b);
        la_vec_release(&x);
        la_vec_release(&p);
        la_vec_release(&q);
        la_vec_release(&r);
        la_csr_release(&dA);
        csr_free(&A);
    fail_nomat:
        if (rc) {
            fprintf(stderr, "clsolve bench: N=%s: %s\n", tok, err.msg);
            break;
        }
    }
    free(list);
    if (json) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:f, s:i, s:o}", "device", dev.name, "platform",
                              dev.platform_name, "precision", la_precision_name(prec),
                              "copy_bandwidth_gb_per_s", bw, "iterations", iters, "results", rows);
        json_object_set_new(o, "config", json_pack("{s:I, s:I, s:I}", "local_size",
                                                   (json_int_t)la.cfg.local_size, "groups_per_cu",
                                                   (json_int_t)la.cfg.groups_per_cu,
                                                   "spmv_local_size",
                                                   (json_int_t)la.cfg.spmv_local_size));
        char *s = json_dumps(o, JSON_INDENT(2));
        puts(s);
        free(s);
        json_decref(o);
    } else {
        json_decref(rows);
    }
out:
    la_release(&la);
    ocl_ctx_release(&ocl);
    return rc;
}
