/*
 * cmd_bench.c: `clsolve bench`: milliseconds per CG iteration and per
 * kernel on generated stencil systems, judged against the bandwidth floor.
 *
 *   clsolve bench [--sizes 64,128,256,320] [--stencil poisson3d|poisson3d27]
 *                 [--iters N] [--reps N] [--device D] [--format F]
 *                 [--precision double|float|mixed] [--no-classic] [--json]
 *
 * The floor (DESIGN.md, Performance method) is the time the bytes a CG
 * iteration must move take at the device's copy bandwidth, measured in the
 * same process (kernels/bandwidth.c):
 *   matrix once        (8 + 4) nnz + 4 (n + 1)   (CSR: double values, int32 columns, row pointers)
 *   vectors            8 n x 8                   (p read, Ap written and read, x and r read and
 *                                                 written, p written)
 * Three CG loops are timed, wall clock over `iters` iterations with an
 * unreachable tolerance after a warm-up: the default solver (the
 * Hestenes-Stiefel recurrence with its scalars on the device, cg_classic.cl:
 * five launches, 11 n vector traffic; "ms_per_iteration"), the
 * single-reduction loop with beta from the Chronopoulos-Gear identity
 * (cg_fused.cl: SpMV with p'Ap and (Ap)'(Ap), a one-group scalar kernel, one
 * update of x, r, p; 9 n; "single_reduction") and the host-synchronised
 * textbook loop (13 n; "classic"). "x floor" is time over floor, "% floor"
 * the floor as a percentage of the time (100% = at the floor).
 * Each kernel is also timed alone with profiling events (median of --reps
 * launches after a warm-up) and reported as ms and GB/s of the bytes it
 * must move in the format it runs (the SpMV's own matrix bytes: SELL padding
 * or BCSR fill included, row pointers excluded where the format has none).
 * The format AUTO chose (or --format), its parameters and the work-group
 * configuration with its source (default / tuned) are printed per row.
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

#define BK_MAX 8

typedef struct bench_kernel {
    const char *name;
    double ms, bytes;
} bench_kernel;

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double med(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n ? v[n / 2] : 0;
}

/* bytes the SpMV of dA must move: its matrix arrays, x read, y written */
static double spmv_matrix_bytes(const la_ctx *la, const la_csr *A)
{
    double me = (double)la->melem, nr = (double)A->nrows;
    switch (A->variant) {
    case LA_SPMV_SELL:
        return (double)A->stored * (me + 4.0) + 4.0 * (double)(A->naux + 1) +
               (A->perm ? 4.0 * nr : 0.0);
    case LA_SPMV_BCSR: {
        double nb = A->block_k ? (double)A->stored / (double)(A->block_k * A->block_k) : 0;
        return (double)A->stored * me + 4.0 * nb + 4.0 * (double)(A->naux + 1);
    }
    case LA_SPMV_ADAPTIVE:
        return (double)A->nnz * (me + 4.0) + 4.0 * (nr + 1.0) + 4.0 * (double)(A->naux + 1);
    default:
        return (double)A->nnz * (me + 4.0) + 4.0 * (nr + 1.0);
    }
}

/* times one operation `reps` times with profiling events; median ms of the
 * summed device time of its kernels */
#define EV_TIME(ms_out, reps, call)                                                                \
    do {                                                                                           \
        double v_[256];                                                                            \
        int n_ = (reps) > 256 ? 256 : (reps);                                                      \
        int brc_ = 0;                                                                              \
        for (int r_ = -1; r_ < n_ && !brc_; r_++) {                                                \
            la_capture_begin(&la);                                                                 \
            brc_ = (call);                                                                         \
            if (!brc_)                                                                             \
                brc_ = la_finish(&la, &err);                                                       \
            double s_ = la_capture_end(&la, NULL, 0, NULL);                                        \
            if (r_ >= 0)                                                                           \
                v_[r_] = s_;                                                                       \
        }                                                                                          \
        if (brc_) {                                                                                \
            rc = brc_;                                                                             \
            goto fail;                                                                             \
        }                                                                                          \
        (ms_out) = 1e3 * med(v_, n_);                                                              \
    } while (0)

/* wall ms per iteration of cg_solve with an unreachable tolerance */
static int time_cg(la_ctx *la, const la_csr *dA, const la_vec *b, la_vec *x, int classic,
                   int single_reduction, int iters, double *ms, int64_t *its, cls_error *err)
{
    cg_options co = {.tol = 1e-300,
                     .maxiter = 5,
                     .precond = PRECOND_NONE,
                     .classic = classic,
                     .single_reduction = single_reduction};
    cg_result res;
    int rc = la_fill(la, 0.0, x, err);
    if (!rc) {
        rc = cg_solve(la, dA, b, x, NULL, &co, &res, err); /* warm-up */
        cg_result_free(&res);
    }
    if (rc && rc != CLS_ENOTCONV)
        return rc;
    co.maxiter = iters;
    if ((rc = la_fill(la, 0.0, x, err)) || (rc = la_finish(la, err)))
        return rc;
    double t0 = cls_now();
    rc = cg_solve(la, dA, b, x, NULL, &co, &res, err);
    if (rc && rc != CLS_ENOTCONV) {
        cg_result_free(&res);
        return rc;
    }
    if ((rc = la_finish(la, err))) {
        cg_result_free(&res);
        return rc;
    }
    *its = res.iterations;
    *ms = 1e3 * (cls_now() - t0) / (double)(res.iterations ? res.iterations : 1);
    cg_result_free(&res);
    return CLS_OK;
}

int cmd_bench(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "bench"};
    const char *sizes = "64,128", *device = "auto", *stencil = "poisson3d";
    int iters = 200, json = 0, reps = 20, classic = 1;
    la_precision prec = LA_DOUBLE;
    la_spmv_variant fmt = LA_SPMV_AUTO;
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
        else if (cli_opt(&a, "--no-classic", NULL, 0))
            classic = 0;
        else if (cli_opt(&a, "--format", NULL, 1)) {
            if (la_spmv_variant_parse(a.value, &fmt) != 0)
                cli_usage_error("bench",
                                "--format: '%s' is not auto, csr, csr-vector, csr-adaptive, "
                                "sell or bcsr",
                                a.value);
        } else if (cli_opt(&a, "--precision", NULL, 1)) {
            if (!strcmp(a.value, "float"))
                prec = LA_FLOAT;
            else if (!strcmp(a.value, "mixed"))
                prec = LA_MIXED;
            else if (strcmp(a.value, "double") != 0)
                cli_usage_error("bench", "--precision: '%s' is not double, float or mixed",
                                a.value);
        } else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("bench", "unknown option '%s'", argv[a.i]);
        else
            cli_usage_error("bench", "unexpected argument '%s'", argv[a.i]);
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
        printf("device: %s (%s, driver %s), copy bandwidth %.1f GB/s, precision %s, %s\n", dev.name,
               dev.platform_name, dev.driver, bw, la_precision_str(prec), gen_kind_name(kind));
        printf("%-5s %9s %10s %-9s %9s %9s %7s %7s %9s %7s  %s\n", "N", "rows", "nnz", "format",
               "ms/iter", "floor ms", "x floor", "%floor", "classic", "x floor",
               "per kernel: ms (GB/s); config");
    }

    char *list = strdup(sizes);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int64_t n = cli_int(&a, "--sizes", tok, 1);
        csr_matrix A;
        la_csr dA = {0};
        la_vec b = {0}, x = {0}, p = {0}, q = {0}, r = {0};
        la_cgf w;
        memset(&w, 0, sizeof w);
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
        rc = la_csr_upload(&la, &A, fmt, &dA, &err);
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
        const double mbytes = spmv_matrix_bytes(&la, &dA);
        bench_kernel k[BK_MAX] = {
            {"spmv", 0, mbytes + 2 * es * nr},
            {"cgf_spmv_dots", 0, mbytes + 2 * es * nr},
            {"cgf_scalars", 0, 0},
            {"cgf_update", 0, 7 * es * nr},
            {"dot", 0, 2 * es * nr},
            {"cg_update", 0, 6 * es * nr},
            {"xpay", 0, 3 * es * nr},
        };
        int nk = classic ? 7 : 4;
        double dv;
        EV_TIME(k[0].ms, reps, la_spmv(&la, &dA, &p, &q, &err));
        /* the fused iteration's three kernels, one at a time from the events */
        {
            double rr0, rz0, t3[3][256];
            int nrep = reps > 256 ? 256 : reps;
            if ((rc = la_fill(&la, 0.0, &x, &err)) ||
                (rc = la_cgf_create(&la, &dA, &b, &x, NULL, 0.0, LA_CGF_FUSED, &w, &err)) ||
                (rc = la_cgf_start(&w, 0, &rr0, &rz0, &err)))
                goto fail;
            for (int it = -1; it < nrep; it++) {
                la_cgf_record rec;
                double each[8];
                int cnt = 0;
                if (it > 0 && it % 50 == 0 && (rc = la_cgf_start(&w, 0, &rr0, &rz0, &err)))
                    goto fail;
                la_capture_begin(&la);
                rc = la_cgf_enqueue(&w, &err);
                if (!rc)
                    rc = la_cgf_next(&w, &rec, &err);
                if (!rc)
                    rc = la_finish(&la, &err);
                la_capture_end(&la, each, 8, &cnt);
                if (rc)
                    goto fail;
                if (it >= 0 && cnt >= 3)
                    for (int j = 0; j < 3; j++)
                        t3[j][it] = each[j];
            }
            for (int j = 0; j < 3; j++)
                k[1 + j].ms = 1e3 * med(t3[j], nrep);
            la_cgf_release(&w);
        }
        if (classic) {
            EV_TIME(k[4].ms, reps, la_dot(&la, &p, &q, &dv, &err));
            EV_TIME(k[5].ms, reps, la_cg_update(&la, 1e-30, &p, &q, &x, &r, &dv, &err));
            EV_TIME(k[6].ms, reps, la_xpay(&la, &r, 0.5, &p, &err));
        }

        double ms = 0, cms = 0, sms = 0;
        int64_t its = 0, cits = 0, sits = 0;
        if ((rc = time_cg(&la, &dA, &b, &x, 0, 0, iters, &ms, &its, &err)) ||
            (rc = time_cg(&la, &dA, &b, &x, 0, 1, iters, &sms, &sits, &err)))
            goto fail;
        if (classic && (rc = time_cg(&la, &dA, &b, &x, 1, 0, iters, &cms, &cits, &err)))
            goto fail;
        rc = CLS_OK;

        const double floor_bytes = (es + 4.0) * nnz + 4.0 * (nr + 1.0) + 8.0 * es * nr;
        const double fused_bytes = mbytes + 9.0 * es * nr;
        const double floor_ms = 1e3 * floor_bytes / (bw * 1e9);
        char fdesc[64];
        if (dA.variant == LA_SPMV_SELL)
            snprintf(fdesc, sizeof fdesc, "sell-%zu-%zu", dA.sell_c, dA.sell_sigma);
        else if (dA.variant == LA_SPMV_BCSR)
            snprintf(fdesc, sizeof fdesc, "bcsr-%zu", dA.block_k);
        else if (dA.variant == LA_SPMV_VECTOR)
            snprintf(fdesc, sizeof fdesc, "vector-%zu", dA.vector_width);
        else
            snprintf(fdesc, sizeof fdesc, "%s", la_spmv_variant_name(dA.variant));
        if (json) {
            json_t *kj = json_object();
            for (int i = 0; i < nk; i++) {
                json_t *o = json_pack("{s:f, s:f}", "ms", k[i].ms, "bytes", k[i].bytes);
                if (k[i].bytes > 0 && k[i].ms > 0)
                    json_object_set_new(o, "gb_per_s",
                                        json_real(k[i].bytes / (k[i].ms * 1e-3) / 1e9));
                json_object_set_new(kj, k[i].name, o);
            }
            json_t *cfg = json_pack(
                "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "local_size",
                (json_int_t)dA.cfg.local_size, "groups_per_cu", (json_int_t)dA.cfg.groups_per_cu,
                "spmv_local_size", (json_int_t)dA.local_size, "spmv_max_groups",
                (json_int_t)dA.max_groups, "cg_local_size", (json_int_t)dA.cfg.cg_local_size,
                "cg_groups_per_cu", (json_int_t)dA.cfg.cg_groups_per_cu, "vector_width",
                (json_int_t)(dA.variant == LA_SPMV_VECTOR ? dA.vector_width : 0), "source",
                dA.cfg.source);
            json_t *row = json_pack(
                "{s:s, s:I, s:I, s:I, s:s, s:s, s:I, s:f, s:f, s:f, s:f, s:f, s:o, s:o}", "stencil",
                gen_kind_name(kind), "n", (json_int_t)n, "rows", (json_int_t)N, "nnz",
                (json_int_t)A.nnz, "format", la_spmv_variant_name(dA.variant), "format_detail",
                fdesc, "format_stored", (json_int_t)dA.stored, "floor_ms", floor_ms, "floor_bytes",
                floor_bytes, "fused_bytes", fused_bytes, "ms_per_iteration", ms, "ratio_to_floor",
                ms / floor_ms, "config", cfg, "kernels", kj);
            json_object_set_new(row, "percent_of_floor", json_real(100.0 * floor_ms / ms));
            json_object_set_new(row, "iterations", json_integer((json_int_t)its));
            json_object_set_new(row, "single_reduction",
                                json_pack("{s:f, s:f, s:I}", "ms_per_iteration", sms,
                                          "ratio_to_floor", sms / floor_ms, "iterations",
                                          (json_int_t)sits));
            if (classic)
                json_object_set_new(row, "classic",
                                    json_pack("{s:f, s:f, s:I}", "ms_per_iteration", cms,
                                              "ratio_to_floor", cms / floor_ms, "iterations",
                                              (json_int_t)cits));
            json_array_append_new(rows, row);
        } else {
            printf("%-5lld %9lld %10lld %-9s %9.4f %9.4f %7.2f %6.0f%% ", (long long)n,
                   (long long)N, (long long)A.nnz, fdesc, ms, floor_ms, ms / floor_ms,
                   100.0 * floor_ms / ms);
            if (classic)
                printf("%9.4f %7.2f ", cms, cms / floor_ms);
            else
                printf("%9s %7s ", "-", "-");
            for (int i = 0; i < nk; i++) {
                if (k[i].bytes > 0)
                    printf(" %s %.4f (%.0f)", k[i].name, k[i].ms,
                           k[i].bytes / (k[i].ms * 1e-3) / 1e9);
                else
                    printf(" %s %.4f", k[i].name, k[i].ms);
            }
            printf("; spmv %zu x %zu, cg %zu x %zu/CU, %s\n", dA.local_size, dA.max_groups,
                   dA.cfg.cg_local_size, dA.cfg.cg_groups_per_cu, dA.cfg.source);
            fflush(stdout);
        }
    fail:
        la_cgf_release(&w);
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
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:f, s:i, s:o}", "device", dev.name,
                              "platform", dev.platform_name, "driver", dev.driver, "precision",
                              la_precision_str(prec), "stencil", gen_kind_name(kind),
                              "copy_bandwidth_gb_per_s", bw, "iterations", iters, "results", rows);
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
