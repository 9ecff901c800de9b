/*
 * amg_bench.c: set-up and solve times of the AMG preconditioner on one
 * device, for bench/amg.sh (GPU hosts) and the PoCL figures in docs/amg.md.
 *
 *   bench_amg [options] MATRIX        MATRIX: gen:KIND:N (poisson2d,
 *                                     poisson3d, poisson3d27) or a .mtx file
 *   --device SPEC     auto | cpu | gpu | INDEX          (default auto)
 *   --precision P     double | float | mixed            (default double)
 *   --tol T --maxiter N                                 (1e-8, 1000)
 *   --smoother S --degree K --threshold T --coarse N --omega W --levels L
 *   --reps R          set-ups and solves repeated; min and median reported
 *   --vcycles K       V-cycles timed alone (default 20)
 *   --setup WHERE     host | device (amg_build_device)   (default host)
 *   --resetup         host: also the numeric re-set-up (amg_rebuild from a
 *                     first hierarchy, the aggregates kept), R times:
 *                     resetup_s (median), resetup_min_s and its phases
 *   --host-rows N     device set-up: levels of <= N rows on the host
 *   --jacobi          also Jacobi-PCG, for the iteration ratio
 *   -v                the hierarchy (amg_describe) on stderr
 *
 * b = A 1, x0 = 0. Prints one JSON object: the hierarchy, set-up seconds by
 * phase (host) and upload, ms per V-cycle, PCG iterations and seconds,
 * time to solution (set-up + upload + solve), the true residual.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timer.h"
#include "kernels/la.h"
#include "matrices/gen.h"
#include "matrices/mm.h"
#include "solver/amg/amg.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

static int load(const char *spec, csr_matrix *A, cls_error *err)
{
    if (!strncmp(spec, "gen:", 4)) {
        char kind[32];
        long long n = 0;
        if (sscanf(spec + 4, "%31[^:]:%lld", kind, &n) != 2)
            return cls_fail(err, CLS_EUSAGE, "bad generator spec %s (gen:KIND:N)", spec);
        gen_kind k;
        if (gen_kind_parse(kind, &k))
            return cls_fail(err, CLS_EUSAGE, "unknown generator %s", kind);
        return gen_matrix(k, n, A, err);
    }
    return mm_read_csr(spec, NULL, A, NULL, NULL, err);
}

int main(int argc, char **argv)
{
    const char *dev_spec = "auto", *mat = NULL;
    la_precision prec = LA_DOUBLE;
    double tol = 1e-8;
    long long maxiter = 1000;
    int reps = 3, vcycles = 20, jacobi = 0, verbose = 0, on_device = 0, resetup = 0;
    amg_options opt;
    amg_options_default(&opt);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1;
        if (!strcmp(a, "--device") && v)
            dev_spec = v;
        else if (!strcmp(a, "--precision") && v)
            prec = !strcmp(v, "float") ? LA_FLOAT : !strcmp(v, "mixed") ? LA_MIXED : LA_DOUBLE;
        else if (!strcmp(a, "--tol") && v)
            tol = atof(v);
        else if (!strcmp(a, "--maxiter") && v)
            maxiter = atoll(v);
        else if (!strcmp(a, "--smoother") && v) {
            if (amg_smoother_parse(v, &opt.smoother)) {
                fprintf(stderr, "bench_amg: unknown smoother %s\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--degree") && v)
            opt.degree = atoi(v);
        else if (!strcmp(a, "--threshold") && v)
            opt.threshold = atof(v);
        else if (!strcmp(a, "--coarse") && v)
            opt.coarse_size = atoll(v);
        else if (!strcmp(a, "--omega") && v)
            opt.omega_scale = atof(v);
        else if (!strcmp(a, "--setup") && v)
            on_device = !strcmp(v, "device");
        else if (!strcmp(a, "--host-rows") && v)
            opt.host_rows = atoll(v);
        else if (!strcmp(a, "--levels") && v)
            opt.max_levels = atoi(v);
        else if (!strcmp(a, "--reps") && v)
            reps = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(a, "--vcycles") && v)
            vcycles = atoi(v);
        else {
            used = 0;
            if (!strcmp(a, "--jacobi"))
                jacobi = 1;
            else if (!strcmp(a, "--resetup"))
                resetup = 1;
            else if (!strcmp(a, "-v"))
                verbose = 1;
            else if (a[0] == '-') {
                fprintf(stderr, "bench_amg: unknown option %s\n", a);
                return 2;
            } else
                mat = a;
        }
        i += used;
    }
    if (!mat || reps > 64) {
        fprintf(stderr, "usage: bench_amg [options] MATRIX (see bench/amg_bench.c)\n");
        return 2;
    }
    cls_error err;
    cls_error_clear(&err);
    csr_matrix A;
    double t = cls_now();
    if (load(mat, &A, &err)) {
        fprintf(stderr, "bench_amg: %s\n", err.msg);
        return 3;
    }
    double parse_s = cls_now() - t;
    ocl_device dev;
    ocl_ctx ocl;
    la_ctx la;
    if (ocl_pick_device(dev_spec, &dev, &err) || ocl_ctx_create(&dev, &ocl, &err) ||
        la_init_flags(&la, &ocl, prec, NULL, LA_FLAG_ONE_PART, &err)) {
        fprintf(stderr, "bench_amg: %s\n", err.msg);
        return 1;
    }
    la_csr dA;
    la_vec b, x, ones, dinv;
    double *h1 = malloc((size_t)A.nrows * sizeof *h1), *hb = malloc((size_t)A.nrows * sizeof *hb);
    for (int64_t i = 0; i < A.nrows; i++)
        h1[i] = 1.0;
    csr_spmv_ref(&A, h1, hb);
    t = cls_now();
    if (la_csr_upload(&la, &A, LA_SPMV_AUTO, &dA, &err) || la_vec_create(&la, A.nrows, &b, &err) ||
        la_vec_create(&la, A.nrows, &x, &err) || la_vec_create(&la, A.nrows, &ones, &err) ||
        la_vec_upload(&la, &b, hb, &err) || la_finish(&la, &err)) {
        fprintf(stderr, "bench_amg: %s\n", err.msg);
        return 1;
    }
    double matrix_upload_s = cls_now() - t;

    double setup[64], upload[64], solve[64], vcyc[64], tts[64];
    amg_info info = {0};
    amg_pcg_result res = {0};
    int failed = 0;
    double ph[5] = {1e30, 1e30, 1e30, 1e30, 1e30};
    for (int r = 0; r < reps && !failed; r++) {
        amg_hierarchy *h = NULL;
        amg_device *d = NULL;
        t = cls_now();
        if (on_device) {
            if (amg_build_device(&A, &opt, &la, &dA, &d, &err)) {
                fprintf(stderr, "bench_amg: %s\n", err.msg);
                failed = 1;
                break;
            }
            amg_device_info(d, &info);
        } else if (amg_build(&A, &opt, &h, &err) || amg_upload_fine(h, &la, &dA, &d, &err)) {
            fprintf(stderr, "bench_amg: %s\n", err.msg);
            failed = 1;
            amg_free(h);
            break;
        } else
            amg_get_info(h, &info);
        double cur[5] = {info.strength_s, info.aggregate_s, info.prolong_s, info.rap_s,
                         info.coarse_s};
        for (int k = 0; k < 5; k++)
            ph[k] = fmin(ph[k], cur[k]);
        setup[r] = info.build_s;
        upload[r] = on_device ? 0.0 : amg_device_upload_seconds(d);
        if (verbose && r == 0 && h) {
            char buf[4096];
            amg_describe(h, buf, sizeof buf);
            fputs(buf, stderr);
        }
        amg_free(h); /* the device hierarchy needs nothing of it */
        /* V-cycles alone */
        double t1 = cls_now();
        for (int k = 0; k < vcycles && !failed; k++)
            failed = amg_apply(d, &la, &b, &x, &err) != CLS_OK;
        failed = failed || la_finish(&la, &err);
        vcyc[r] = vcycles ? 1e3 * (cls_now() - t1) / vcycles : 0.0;
        failed = failed || la_fill(&la, 0.0, &x, &err) || la_finish(&la, &err) ||
                 amg_pcg(&la, &dA, &b, &x, d, NULL, tol, maxiter, &res, &err);
        solve[r] = res.seconds;
        tts[r] = setup[r] + upload[r] + solve[r];
        amg_device_release(d);
        if (failed)
            fprintf(stderr, "bench_amg: %s\n", err.msg);
    }
    if (failed)
        return 1;
    /* the true residual of the last solve, on the host in double */
    double *hx = malloc((size_t)A.nrows * sizeof *hx), *hr = malloc((size_t)A.nrows * sizeof *hr);
    la_vec_download(&la, &x, hx, &err);
    csr_spmv_ref(&A, hx, hr);
    double rn = 0.0, bn = 0.0, emax = 0.0;
    for (int64_t i = 0; i < A.nrows; i++) {
        rn += (hb[i] - hr[i]) * (hb[i] - hr[i]);
        bn += hb[i] * hb[i];
        emax = fmax(emax, fabs(hx[i] - 1.0));
    }
    amg_pcg_result jres = {0};
    if (jacobi) {
        double *hd = malloc((size_t)A.nrows * sizeof *hd);
        csr_diagonal(&A, hd);
        for (int64_t i = 0; i < A.nrows; i++)
            hd[i] = 1.0 / hd[i];
        if (la_vec_create(&la, A.nrows, &dinv, &err) || la_vec_upload(&la, &dinv, hd, &err) ||
            la_fill(&la, 0.0, &x, &err) ||
            amg_pcg(&la, &dA, &b, &x, NULL, &dinv, tol, maxiter * 20, &jres, &err))
            fprintf(stderr, "bench_amg: jacobi: %s\n", err.msg);
        free(hd);
    }
    double ms = median(setup, reps), mu = median(upload, reps), mv = median(vcyc, reps),
           msv = median(solve, reps), mt = median(tts, reps);
    printf(
        "{\"matrix\": \"%s\", \"device\": \"%s\", \"precision\": \"%s\", \"rows\": %lld, "
        "\"nnz\": %lld, \"levels\": %d, \"operator_complexity\": %.4f, "
        "\"grid_complexity\": %.4f, \"coarse_rows\": %lld, \"smoother\": \"%s\", \"degree\": %d, "
        "\"threads\": %d, \"parse_s\": %.4f, \"matrix_upload_s\": %.4f, "
        "\"setup_s\": %.4f, \"setup_min_s\": %.4f, \"strength_s\": %.4f, "
        "\"aggregate_s\": %.4f, \"prolong_s\": %.4f, \"rap_s\": %.4f, \"coarse_s\": %.4f, "
        "\"upload_s\": %.4f, \"vcycle_ms\": %.3f, \"iterations\": %lld, \"converged\": %d, "
        "\"solve_s\": %.4f, \"solve_min_s\": %.4f, \"ms_per_iteration\": %.3f, "
        "\"time_to_solution_s\": %.4f, \"true_relative_residual\": %.3e, \"max_error\": %.3e",
        mat, dev.name, la_precision_str(prec), (long long)A.nrows, (long long)A.nnz, info.levels,
        info.operator_complexity, info.grid_complexity, (long long)info.rows[info.levels - 1],
        amg_smoother_name(opt.smoother), opt.degree, info.threads, parse_s, matrix_upload_s, ms,
        setup[0], ph[0], ph[1], ph[2], ph[3], ph[4], mu, mv, (long long)res.iterations,
        res.converged, msv, solve[0], res.iterations ? 1e3 * msv / (double)res.iterations : 0.0, mt,
        bn > 0 ? sqrt(rn / bn) : 0.0, emax);
    printf(
        ", \"setup\": \"%s\", \"device_levels\": %d, \"host_levels_s\": %.4f, \"mis_rounds\": %d, "
        "\"fine_csr_s\": %.4f, \"spmv\": \"%s\"",
        on_device ? "device" : "host", info.device_levels, info.host_levels_s, info.mis_rounds,
        info.fine_csr_s, la_spmv_variant_name(dA.variant));
    if (jacobi)
        printf(", \"jacobi_iterations\": %lld, \"jacobi_converged\": %d, \"jacobi_solve_s\": %.4f",
               (long long)jres.iterations, jres.converged, jres.seconds);
    if (resetup && !on_device) { /* amg_rebuild from a first hierarchy of A */
        amg_hierarchy *h0 = NULL;
        double rs[64], rph[5] = {1e30, 1e30, 1e30, 1e30, 1e30};
        if (amg_build(&A, &opt, &h0, &err)) {
            fprintf(stderr, "bench_amg: %s\n", err.msg);
            return 1;
        }
        for (int r = 0; r < reps; r++) {
            amg_hierarchy *h = NULL;
            if (amg_rebuild(&A, h0, &h, &err)) {
                fprintf(stderr, "bench_amg: resetup: %s\n", err.msg);
                return 1;
            }
            amg_info ri;
            amg_get_info(h, &ri);
            rs[r] = ri.build_s;
            double cur[5] = {ri.strength_s, ri.aggregate_s, ri.prolong_s, ri.rap_s, ri.coarse_s};
            for (int k = 0; k < 5; k++)
                rph[k] = fmin(rph[k], cur[k]);
            amg_free(h);
        }
        amg_free(h0);
        double rmin = rs[0];
        for (int r = 1; r < reps; r++)
            rmin = fmin(rmin, rs[r]);
        printf(", \"resetup_s\": %.4f, \"resetup_min_s\": %.4f, \"resetup_aggregate_s\": %.4f, "
               "\"resetup_prolong_s\": %.4f, \"resetup_rap_s\": %.4f",
               median(rs, reps), rmin, rph[0] + rph[1], rph[2], rph[3]);
    }
    printf("}\n");
    return res.converged ? 0 : 4;
}
