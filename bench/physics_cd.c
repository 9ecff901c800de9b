/*
 * physics_cd.c: benchmark driver for the `deform` and `curvature` physics
 * kinds (bench/physics-curvature-deform.sh runs it on the GPU machine).
 *
 *   bench_physics_cd deform    [--logn 14,16,18,20,22] [--ranks 10,20,30]
 *                              [--reps 50] [--device gpu] [--no-check]
 *   bench_physics_cd curvature [--faces 200000,...,1000000] [--reps 20]
 *                              [--device gpu] [--no-check]
 *
 * deform: Wang 2015's grid (Table 4.4): random U (3n x r) and q, the
 * device kernel u = U q timed with profiling events (median of reps after a
 * warm-up) beside an OpenMP CPU run of the same product (float, same
 * column-major layout, row blocks over all threads, median of reps) on the
 * same machine; the floor is the bytes the product must move (U once, q,
 * u written) over the device's measured copy bandwidth; the last column is
 * the thesis's CPU/GPU ratio (GTX 680 vs 16 OpenMP threads).
 *
 * curvature: saddle z = x^2 - y^2 grids of about the requested face
 * counts (Camillo 2018 measured 200 k - 500 k; the headline is 1 M
 * polygons in 8.3 ms on a GTX Titan X): ms per full estimate (both
 * launches, profiling events, median) for each estimator beside the CPU
 * double reference on one thread and on all OpenMP threads.
 *
 * Built only by bench/CMakeLists.txt, with OpenMP when the compiler has it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/timer.h"
#include "kernels/bandwidth.h"
#include "physics/curvature.h"
#include "physics/deform.h"

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int parse_list(const char *s, long *out, int cap)
{
    int n = 0;
    while (*s && n < cap) {
        char *end;
        out[n++] = strtol(s, &end, 10);
        if (end == s)
            return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static int threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* ------------------------------------------------------------------ deform */

/* u = U q in float on the CPU, all threads: blocks of rows, each block
 * streams through the r columns once (U read once, like the kernel). */
static void cpu_uq(const float *U, int64_t ld, int r, const float *q, float *u)
{
    const int64_t B = 2048;
    const int64_t nb = (ld + B - 1) / B;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t b = 0; b < nb; b++) {
        float acc[2048];
        int64_t i0 = b * B, len = ld - i0 < B ? ld - i0 : B;
        for (int64_t i = 0; i < len; i++)
            acc[i] = 0.0f;
        for (int j = 0; j < r; j++) {
            const float *col = U + (int64_t)j * ld + i0;
            const float qj = q[j];
            for (int64_t i = 0; i < len; i++)
                acc[i] += col[i] * qj;
        }
        for (int64_t i = 0; i < len; i++)
            u[i0 + i] = acc[i];
    }
}

static const double thesis_ratio[3][5] = {
    /* Wang 2015 Table 4.4, CPU / GPU, rows r = 10, 20, 30; n = 2^14 .. 2^22 */
    {2.53, 0.68, 1.44, 1.6, 1.77},
    {6.47, 2.76, 5.01, 6.54, 7.04},
    {5.32, 3.67, 6.60, 8.02, 9.69}};

static int bench_deform(ocl_ctx *ctx, long *logn, int nn, long *ranks, int nr, int reps, int check)
{
    cls_error err;
    double bw = 0;
    if (ocl_copy_bandwidth(ctx, (size_t)512 << 20, 10, &bw, &err)) {
        fprintf(stderr, "bandwidth: %s\n", err.msg);
        return 1;
    }
    printf("deform: u = U q, single domain, float; device %s; copy bandwidth %.1f GB/s; "
           "CPU: %d OpenMP threads\n",
           ctx->dev.name, bw, threads());
    printf("%8s %3s %11s %11s %9s %9s %9s %8s %8s %10s\n", "n", "r", "GPU ms", "CPU ms", "CPU/GPU",
           "thesis", "GB/s", "% floor", "U MB", "rel err");
    for (int a = 0; a < nn; a++)
        for (int b = 0; b < nr; b++) {
            int64_t n = (int64_t)1 << logn[a];
            int32_t r = (int32_t)ranks[b];
            deform_model M;
            if (deform_model_alloc(&M, 1, &n, &r, &err)) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
            uint64_t s = 0x9E3779B97F4A7C15ULL ^ (uint64_t)(n * 131 + r);
            for (int64_t k = 0; k < M.Ulen; k++) {
                s ^= s << 13, s ^= s >> 7, s ^= s << 17;
                M.U[k] = (float)((double)(s >> 40) / (double)(1 << 24) * 2.0 - 1.0);
            }
            double *q = malloc((size_t)r * sizeof(double));
            float *qf = malloc((size_t)r * sizeof(float));
            for (int j = 0; j < r; j++)
                q[j] = qf[j] = (float)sin(1.0 + j);
            deform_gpu g;
            if (deform_gpu_setup(&g, ctx, &M, NULL, &err)) {
                fprintf(stderr, "n=%lld r=%d: %s\n", (long long)n, r, err.msg);
                free(q), free(qf);
                deform_model_free(&M);
                return 1;
            }
            double *tg = malloc((size_t)reps * sizeof(double));
            double *tc = malloc((size_t)reps * sizeof(double));
            int rc = deform_gpu_uq(&g, q, NULL, &err); /* warm-up */
            for (int k = 0; k < reps && !rc; k++)
                rc = deform_gpu_uq(&g, q, &tg[k], &err);
            if (rc) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
            double rel = NAN;
            if (check) {
                double *u = malloc((size_t)(3 * n) * sizeof(double));
                double *ur = malloc((size_t)(3 * n) * sizeof(double));
                if (!deform_gpu_read_u(&g, u, &err)) {
                    deform_ref_uq(&M, q, ur);
                    rel = deform_rel_diff(u, ur, 3 * n);
                }
                free(u), free(ur);
            }
            deform_gpu_release(&g);
            float *uc = malloc((size_t)M.ulen * sizeof(float));
            cpu_uq(M.U, M.ulen, r, qf, uc); /* warm-up: page in */
            for (int k = 0; k < reps; k++) {
                double t0 = cls_now();
                cpu_uq(M.U, M.ulen, r, qf, uc);
                tc[k] = cls_now() - t0;
            }
            double g_s = median(tg, reps), c_s = median(tc, reps);
            double bytes = 4.0 * ((double)M.ulen * r + r + (double)M.ulen);
            double floor_s = bytes / (bw * 1e9);
            int col =
                logn[a] >= 14 && logn[a] <= 22 && logn[a] % 2 == 0 ? (int)(logn[a] - 14) / 2 : -1;
            int row = r == 10 ? 0 : r == 20 ? 1 : r == 30 ? 2 : -1;
            char th[16] = "-";
            if (col >= 0 && row >= 0)
                snprintf(th, sizeof th, "%.2f", thesis_ratio[row][col]);
            printf("%8lld %3d %11.4f %11.4f %9.2f %9s %9.1f %7.1f%% %8.1f %10.2e\n", (long long)n,
                   r, 1e3 * g_s, 1e3 * c_s, c_s / g_s, th, bytes / g_s / 1e9, 100.0 * floor_s / g_s,
                   4.0 * (double)M.Ulen / 1e6, rel);
            fflush(stdout);
            free(uc), free(tg), free(tc), free(q), free(qf);
            deform_model_free(&M);
        }
    return 0;
}

/* --------------------------------------------------------------- curvature */

static double cpu_curv(const mesh *m, const curv_adjacency *adj, curv_estimator est,
                       curv_result *res, int nthreads)
{
    double t0 = cls_now();
    const int64_t nv = m->nverts;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
    {
        int t = omp_get_thread_num(), T = omp_get_num_threads();
        int64_t a = nv * t / T, b = nv * (t + 1) / T;
        curv_ref_normals(m, adj, res->normal, a, b);
#pragma omp barrier
        curv_ref_tensors(m, adj, est, res->normal, res, a, b);
    }
#else
    (void)nthreads;
    curv_ref_normals(m, adj, res->normal, 0, nv);
    curv_ref_tensors(m, adj, est, res->normal, res, 0, nv);
#endif
    return cls_now() - t0;
}

static int bench_curvature(ocl_ctx *ctx, long *faces, int nf, int reps, int check)
{
    cls_error err;
    printf("curvature: saddle z = x^2 - y^2 on [-1,1]^2; device %s; CPU: double reference, 1 and "
           "%d threads\n",
           ctx->dev.name, threads());
    printf("%9s %8s %7s %10s %10s %10s %12s %10s %10s\n", "faces", "vertices", "est", "GPU ms",
           "GPU wall", "CPU 1t ms", "CPU all ms", "1t/GPU", "rel diff");
    for (int a = 0; a < nf; a++) {
        int k = (int)lround(sqrt((double)faces[a] / 2.0)) + 1;
        mesh m;
        curv_adjacency adj;
        if (curv_mesh_saddle(k, 1.0, &m, &err) || curv_adjacency_build(&m, &adj, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        curv_gpu g;
        if (curv_gpu_setup(&g, ctx, &m, &adj, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        for (int e = 0; e < 2; e++) {
            curv_estimator est = e ? CURV_VERTEX : CURV_FACE;
            double *tg = malloc((size_t)reps * sizeof(double));
            double *tw = malloc((size_t)reps * sizeof(double));
            int rc = curv_gpu_run(&g, est, NULL, &err);
            for (int r = 0; r < reps && !rc; r++) {
                double t0 = cls_now();
                rc = curv_gpu_run(&g, est, &tg[r], &err);
                tw[r] = cls_now() - t0;
            }
            if (rc) {
                fprintf(stderr, "%s\n", err.msg);
                return 1;
            }
            curv_result ref, gpu;
            curv_result_alloc(&ref, m.nverts, &err);
            curv_result_alloc(&gpu, m.nverts, &err);
            double c1 = cpu_curv(&m, &adj, est, &ref, 1);
            double cn = cpu_curv(&m, &adj, est, &ref, threads());
            double cn2 = cpu_curv(&m, &adj, est, &ref, threads());
            cn = fmin(cn, cn2);
            double rel = NAN;
            if (check && !curv_gpu_read(&g, &gpu, &err))
                rel = curv_rel_diff(&gpu, &ref);
            double gm = median(tg, reps), wm = median(tw, reps);
            printf("%9lld %8lld %7s %10.4f %10.4f %10.2f %12.2f %10.1f %10.2e\n",
                   (long long)m.nfaces, (long long)m.nverts, curv_estimator_name(est), 1e3 * gm,
                   1e3 * wm, 1e3 * c1, 1e3 * cn, c1 / gm, rel);
            fflush(stdout);
            curv_result_free(&ref);
            curv_result_free(&gpu);
            free(tg), free(tw);
        }
        curv_gpu_release(&g);
        curv_adjacency_free(&adj);
        mesh_free(&m);
    }
    printf("thesis (Camillo 2018, GTX Titan X): above 120 frames/s at 1 M polygons = 8.3 ms per "
           "estimate; target here: <= 1 ms at 1 M faces\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "deform") && strcmp(argv[1], "curvature"))) {
        fprintf(stderr, "usage: %s deform|curvature [options] (see the file's header)\n", argv[0]);
        return 2;
    }
    long logn[16] = {14, 16, 18, 20, 22}, ranks[16] = {10, 20, 30},
         faces[16] = {200000, 400000, 600000, 800000, 1000000};
    int nn = 5, nr = 3, nf = 5, reps = -1, check = 1;
    const char *device = "auto";
    for (int i = 2; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--logn") && v)
            nn = parse_list(v, logn, 16), i++;
        else if (!strcmp(argv[i], "--ranks") && v)
            nr = parse_list(v, ranks, 16), i++;
        else if (!strcmp(argv[i], "--faces") && v)
            nf = parse_list(v, faces, 16), i++;
        else if (!strcmp(argv[i], "--reps") && v)
            reps = atoi(v), i++;
        else if (!strcmp(argv[i], "--device") && v)
            device = v, i++;
        else if (!strcmp(argv[i], "--no-check"))
            check = 0;
        else {
            fprintf(stderr, "unknown or incomplete option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (nn < 1 || nr < 1 || nf < 1) {
        fprintf(stderr, "bad list option\n");
        return 2;
    }
    ocl_device dev;
    ocl_ctx ctx;
    cls_error err;
    if (ocl_pick_device(device, &dev, &err) || ocl_ctx_create(&dev, &ctx, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int rc;
    if (!strcmp(argv[1], "deform"))
        rc = bench_deform(&ctx, logn, nn, ranks, nr, reps > 0 ? reps : 50, check);
    else
        rc = bench_curvature(&ctx, faces, nf, reps > 0 ? reps : 20, check);
    ocl_ctx_release(&ctx);
    return rc;
}
