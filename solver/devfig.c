/*
 * devfig.c: the measured figures of a device's CG iteration and the device
 * choice they drive (see devfig.h for the model).
 *
 * The figures are taken with the solver itself: cg_solve's fused loop with
 * an unreachable tolerance for a fixed number of iterations on poisson3d N,
 * wall clock around the whole solve divided by its iterations (the initial
 * residual is one SpMV against hundreds of iterations), best of three runs
 * after a warm-up. Two sizes: one small enough that only latency counts
 * (N = 8, 512 rows) and one that moves enough bytes to show bandwidth
 * (N = 96, 6.1 M entries; 48 with quick). cg-small (GPUs and accelerators)
 * at N = 8 and N = 24 (13,824 rows, 94 k entries; 16 with quick): its
 * time is one work-group's sweep, linear in the entries, and the crossover
 * with cg lies between (about 50 k entries on an H200, docs/benchmarks.md),
 * so the prediction there interpolates.
 */
#include "devfig.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "../matrices/gen.h"
#include "krylov/krylov.h"

static int measure_size(la_ctx *la, int n, int iters, int one_launch, tunedb_figure *f,
                        cls_error *err)
{
    csr_matrix A;
    la_csr dA;
    la_vec b = {0}, x = {0};
    int have_dA = 0, rc = gen_matrix(GEN_POISSON3D, n, &A, err);
    if (rc)
        return rc;
    /* cg-small reads CSR (la_cgs.h); cg the format a solve would choose */
    if (!(rc = la_csr_upload(la, &A, one_launch ? LA_SPMV_SCALAR : LA_SPMV_AUTO, &dA, err)))
        have_dA = 1;
    if (!rc && !(rc = la_vec_create(la, A.nrows, &b, err)) &&
        !(rc = la_vec_create(la, A.nrows, &x, err)))
        rc = la_fill(la, 1.0, &b, err);
    double best = INFINITY;
    for (int run = -1; run < 3 && !rc; run++) { /* run -1: the warm-up */
        cg_options co = {.tol = 1e-300,
                         .maxiter = run < 0 ? iters / 4 + 1 : iters,
                         .one_launch = one_launch};
        cg_result res;
        memset(&res, 0, sizeof res);
        if ((rc = la_fill(la, 0.0, &x, err)) || (rc = la_finish(la, err)))
            break;
        double t0 = cls_now();
        rc = cg_solve(la, &dA, &b, &x, NULL, &co, &res, err);
        if (rc == CLS_ENOTCONV) /* the point: it runs to maxiter */
            rc = la_finish(la, err);
        double ms = 1e3 * (cls_now() - t0) / (double)(res.iterations > 0 ? res.iterations : 1);
        if (!rc && run >= 0 && res.iterations > 0 && ms < best)
            best = ms;
        cg_result_free(&res);
    }
    if (!rc && !(best > 0.0 && isfinite(best)))
        rc = cls_fail(err, CLS_EOTHER, "device figures: no iteration was timed");
    if (!rc) {
        memset(f, 0, sizeof *f);
        snprintf(f->precision, sizeof f->precision, "%s", la_precision_str(la->prec));
        snprintf(f->method, sizeof f->method, "%s", one_launch ? "cg-small" : "cg");
        f->rows = A.nrows;
        f->nnz = A.nnz;
        f->ms = best;
    }
    la_vec_release(&b);
    la_vec_release(&x);
    if (have_dA)
        la_csr_release(&dA);
    csr_free(&A);
    return rc;
}

int devfig_measure(const ocl_device *dev, la_precision prec, int quick, tunedb_figure *fig, int *n,
                   cls_error *err)
{
    ocl_ctx ocl;
    la_ctx la;
    *n = 0;
    int rc = ocl_ctx_create(dev, &ocl, err);
    if (rc)
        return rc;
    rc = la_init_flags(&la, &ocl, prec, NULL, LA_FLAG_ONE_PART, err);
    if (!rc) {
        /* {N, iterations, one launch}: cg's two sizes, then cg-small's */
        static const int plan[2][DEVFIG_MAX][3] = {{{8, 300, 0}, {96, 30, 0}, {8, 300, 1}, {24, 300, 1}},
                                                   {{8, 300, 0}, {48, 30, 0}, {8, 300, 1}, {16, 300, 1}}};
        const int kmax = (dev->type & CL_DEVICE_TYPE_CPU) ? 2 : DEVFIG_MAX;
        for (int k = 0; k < kmax && !rc; k++) {
            const int *q = plan[quick ? 1 : 0][k];
            if (!(rc = measure_size(&la, q[0], q[1], q[2], &fig[k], err)))
                *n = k + 1;
        }
        la_release(&la);
    }
    ocl_ctx_release(&ocl);
    return rc;
}

/* the number of sizes db holds for method at prec */
static int sizes_held(const tunedb *db, const char *method, la_precision prec)
{
    int k = 0;
    for (int i = 0; db && i < db->nfig; i++)
        k += !strcmp(db->fig[i].precision, la_precision_str(prec)) &&
             !strcmp(tunedb_figure_method(&db->fig[i]), method);
    return k;
}

int devfig_complete(const tunedb *db, const ocl_device *dev, la_precision prec)
{
    return sizes_held(db, "cg", prec) >= 2 &&
           ((dev->type & CL_DEVICE_TYPE_CPU) || sizes_held(db, "cg-small", prec) >= 2);
}

int devfig_ensure(const ocl_device *dev, la_precision prec, int quick, int *measured,
                  cls_error *err)
{
    *measured = 0;
    if (devfig_complete(tunedb_for_device(dev), dev, prec))
        return CLS_OK;
    tunedb_figure fig[DEVFIG_MAX];
    int nf = 0;
    int rc = devfig_measure(dev, prec, quick, fig, &nf, err);
    if (rc)
        return rc;
    char path[4400], warn[1200];
    if (!tunedb_path(dev, path, sizeof path))
        return cls_fail(err, CLS_EOTHER, "device figures: no directory for the tuning database");
    tunedb db;
    if (tunedb_load(path, dev, &db, warn, sizeof warn) == 2) /* a foreign file is replaced */
        tunedb_init(&db, dev);
    for (int k = 0; k < nf; k++)
        tunedb_put_figure(&db, &fig[k]);
    rc = tunedb_save(path, &db, err); /* and tunedb_forget: the next lookup reloads */
    tunedb_free(&db);
    if (!rc)
        *measured = 1;
    return rc;
}

int devfig_predict(const tunedb_figure *fig, int nfig, const char *method, la_precision prec,
                   int64_t nnz, double *ms)
{
    /* this method's and precision's sizes, ascending by entries */
    const tunedb_figure *f[TUNEDB_MAX_FIGURES];
    int k = 0;
    for (int i = 0; i < nfig && k < TUNEDB_MAX_FIGURES; i++) {
        if (strcmp(fig[i].precision, la_precision_str(prec)) ||
            strcmp(tunedb_figure_method(&fig[i]), method))
            continue;
        int j = k++;
        for (; j > 0 && f[j - 1]->nnz > fig[i].nnz; j--)
            f[j] = f[j - 1];
        f[j] = &fig[i];
    }
    if (k < 2)
        return -1;
    /* the two sizes around nnz, or the two nearest it */
    int j = 1;
    while (j < k - 1 && f[j]->nnz < nnz)
        j++;
    const tunedb_figure *lo = f[j - 1], *hi = f[j];
    if (hi->nnz == lo->nnz)
        return -1;
    double slope = (hi->ms - lo->ms) / (double)(hi->nnz - lo->nnz);
    if (slope < 0.0)
        slope = 0.0;
    double t = lo->ms + slope * (double)(nnz - lo->nnz);
    *ms = t > f[0]->ms ? t : f[0]->ms; /* latency is the floor */
    return 0;
}

int devfig_choose(const ocl_device *devs, int n, int fallback, la_precision prec, int64_t nnz,
                  char *why, size_t cap)
{
    static const cl_device_type types[3] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ACCELERATOR,
                                            CL_DEVICE_TYPE_CPU};
    int best = -1, considered = 0, present = 0;
    double best_ms = INFINITY;
    size_t used = 0;
    if (why && cap)
        why[0] = '\0';
    for (int t = 0; t < 3; t++) {
        int i;
        for (i = 0; i < n && !(devs[i].type & types[t]); i++)
            ;
        if (i == n)
            continue;
        present++;
        const tunedb *db = tunedb_for_device(&devs[i]);
        double ms;
        if (!db || devfig_predict(db->fig, db->nfig, "cg", prec, nnz, &ms))
            continue;
        considered++;
        if (why && used < cap) {
            int w = snprintf(why + used, cap - used, "%s%s %s %.4g ms/iteration", used ? ", " : "",
                             ocl_type_name(devs[i].type), devs[i].name, ms);
            if (w > 0)
                used += (size_t)w;
        }
        if (ms < best_ms) {
            best_ms = ms;
            best = i;
        }
    }
    if (present < 2) { /* one kind of device: nothing to choose */
        if (why && cap)
            why[0] = '\0';
        return fallback;
    }
    if (considered < 2) {
        if (why && cap)
            snprintf(why, cap, "%s",
                     "first in discovery order (GPUs first): no measured figures "
                     "to compare (clsolve tune --figures)");
        return fallback;
    }
    return best;
}

int devfig_method(const ocl_device *dev, la_precision prec, int64_t nnz, char *why, size_t cap)
{
    if (dev->type & CL_DEVICE_TYPE_CPU) {
        snprintf(why, cap, "cg: a CPU device runs cg's loop natively (kernels/cpu/)");
        return 0;
    }
    const tunedb *db = tunedb_for_device(dev);
    double small_ms, cg_ms;
    if (!db || devfig_predict(db->fig, db->nfig, "cg-small", prec, nnz, &small_ms) ||
        devfig_predict(db->fig, db->nfig, "cg", prec, nnz, &cg_ms)) {
        snprintf(why, cap,
                 "cg: no figures of cg-small and cg at %s on this device to compare "
                 "(clsolve tune --figures measures them)",
                 la_precision_str(prec));
        return 0;
    }
    const int small = small_ms < cg_ms;
    snprintf(why, cap, "%s: predicted %.4g ms per iteration for cg-small, %.4g for cg at %lld entries",
             small ? "cg-small" : "cg", small_ms, cg_ms, (long long)nnz);
    return small;
}
