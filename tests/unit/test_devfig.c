/*
 * test_devfig.c: the device choice of solver/devfig.c.
 *
 *  - devfig_predict against the model written out by hand: interpolation
 *    between measured sizes, extrapolation from the two nearest, latency as
 *    the floor, other precisions ignored, fewer than two sizes refused;
 *  - devfig_choose on made-up devices whose figures sit in databases
 *    written to a temporary CLSOLVE_TUNE_DIR: a "GPU" with high latency and
 *    high bandwidth against a "CPU" with low latency and low bandwidth; a
 *    system below the crossover (solved from the figures) goes to the CPU,
 *    one above it to the GPU; one kind of device, or figures for one device
 *    only, keeps the fallback;
 *  - devfig_method (--method auto) on a made-up GPU whose cg and cg-small
 *    figures cross at a size solved by hand: cg-small below, cg above; cg
 *    without cg-small's figures, for another precision, on a CPU device;
 *  - devfig_measure on the real device (PoCL): two sizes, the larger slower;
 *    presented as a GPU, cg-small's two sizes too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "solver/devfig.h"

static ocl_device fake(const char *name, cl_device_type type)
{
    ocl_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", name);
    snprintf(d.driver, sizeof d.driver, "test-driver");
    snprintf(d.platform_name, sizeof d.platform_name, "test-platform");
    d.type = type;
    d.max_work_group = 1024;
    return d;
}

/* t(nnz) = lat + nnz / rate at two sizes of method ("cg": poisson3d 8 and
 * 96; "cg-small": 8 and 24), into dev's database beside what it holds */
static void put_figures(const ocl_device *d, const char *method, double lat, double rate)
{
    char path[4400], warn[1200];
    cls_error e;
    tunedb db;
    CHECK(tunedb_path(d, path, sizeof path));
    if (tunedb_load(path, d, &db, warn, sizeof warn) != 0)
        tunedb_init(&db, d);
    const int small = !strcmp(method, "cg-small");
    const long long sizes[2] = {3200, small ? 93888 : 6137856};
    for (int k = 0; k < 2; k++) {
        tunedb_figure f = {"double", sizes[k] / 7, sizes[k], lat + (double)sizes[k] / rate, ""};
        snprintf(f.method, sizeof f.method, "%s", method);
        CHECK(tunedb_put_figure(&db, &f) == 0);
    }
    CHECK_MSG(tunedb_save(path, &db, &e) == CLS_OK, "%s", e.msg);
    tunedb_free(&db);
    tunedb_forget();
}
static void write_figures(const ocl_device *d, double lat, double rate)
{
    put_figures(d, "cg", lat, rate);
}
static void add_small_figures(const ocl_device *d, double lat, double rate)
{
    put_figures(d, "cg-small", lat, rate);
}

static void test_predict(void)
{
    /* "" is cg (files written before cg-small's figures) */
    tunedb_figure f[6] = {{"double", 100, 1000, 0.05, "cg"},
                          {"double", 10000, 1001000, 1.05, ""},
                          {"float", 100, 1000, 9.0, "cg"},
                          {"double", 1000, 101000, 0.15, "cg"},
                          {"double", 100, 1000, 0.001, "cg-small"},
                          {"double", 1000, 101000, 1.001, "cg-small"}};
    double ms;
    /* between 1000 and 101000: slope 0.1/100000 */
    CHECK(devfig_predict(f, 6, "cg", LA_DOUBLE, 51000, &ms) == 0 && fabs(ms - 0.10) < 1e-12);
    /* between 101000 and 1001000: slope 0.9/900000 */
    CHECK(devfig_predict(f, 6, "cg", LA_DOUBLE, 551000, &ms) == 0 && fabs(ms - 0.60) < 1e-12);
    /* beyond the largest: the last two sizes extrapolated */
    CHECK(devfig_predict(f, 6, "cg", LA_DOUBLE, 2001000, &ms) == 0 && fabs(ms - 2.05) < 1e-12);
    /* below the smallest: latency is the floor */
    CHECK(devfig_predict(f, 6, "cg", LA_DOUBLE, 10, &ms) == 0 && fabs(ms - 0.05) < 1e-12);
    /* the float figure is alone: no prediction */
    CHECK(devfig_predict(f, 6, "cg", LA_FLOAT, 1000, &ms) == -1);
    CHECK(devfig_predict(f, 1, "cg", LA_DOUBLE, 1000, &ms) == -1);
    CHECK(devfig_predict(f, 0, "cg", LA_DOUBLE, 1000, &ms) == -1);
    /* cg-small's own sizes: slope 1/100000, floor 0.001 */
    CHECK(devfig_predict(f, 6, "cg-small", LA_DOUBLE, 51000, &ms) == 0 && fabs(ms - 0.501) < 1e-12);
    CHECK(devfig_predict(f, 6, "cg-small", LA_DOUBLE, 10, &ms) == 0 && fabs(ms - 0.001) < 1e-12);
    CHECK(devfig_predict(f, 6, "cg-small", LA_FLOAT, 1000, &ms) == -1);
    CHECK(devfig_predict(f, 6, "pipecg", LA_DOUBLE, 1000, &ms) == -1);
}


/* --method auto's verdict (devfig_method): cg-small below the crossover of
 * its figures with cg's, cg above it; cg on a CPU device, without cg-small's
 * figures, and for a precision without figures */
static void test_method(void)
{
    char dir[] = "/tmp/test_devfig.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("CLSOLVE_TUNE_DIR", dir, 1);
    tunedb_forget();
    ocl_device gpu = fake("fake GPU", CL_DEVICE_TYPE_GPU), cpu = fake("fake CPU", CL_DEVICE_TYPE_CPU);
    char why[256];
    CHECK(devfig_method(&gpu, LA_DOUBLE, 4000, why, sizeof why) == 0);
    CHECK_MSG(strstr(why, "no figures") != NULL, "%s", why);
    /* cg: 0.05 ms + nnz / 2e8; cg-small: 0.008 ms + nnz / 1e6. Equal where
     * 0.042 = nnz (1e-6 - 5e-9): nnz = 42211 */
    write_figures(&gpu, 0.05, 2e8);
    tunedb_forget();
    CHECK(devfig_method(&gpu, LA_DOUBLE, 4000, why, sizeof why) == 0); /* cg's figures alone */
    add_small_figures(&gpu, 0.008, 1e6);
    CHECK(devfig_complete(tunedb_for_device(&gpu), &gpu, LA_DOUBLE));
    CHECK(!devfig_complete(tunedb_for_device(&gpu), &gpu, LA_FLOAT));
    int m = devfig_method(&gpu, LA_DOUBLE, 4054, why, sizeof why);
    CHECK_MSG(m == 1 && strstr(why, "cg-small:") == why, "1138_bus's 4054 entries: %d (%s)", m, why);
    m = devfig_method(&gpu, LA_DOUBLE, 42000, why, sizeof why);
    CHECK_MSG(m == 1, "42.0k entries (just below the crossover): %d (%s)", m, why);
    m = devfig_method(&gpu, LA_DOUBLE, 42500, why, sizeof why);
    CHECK_MSG(m == 0 && strstr(why, "cg:") == why, "42.5k entries (just above): %d (%s)", m, why);
    m = devfig_method(&gpu, LA_DOUBLE, 6000000, why, sizeof why);
    CHECK_MSG(m == 0, "6M entries: %d (%s)", m, why);
    CHECK(devfig_method(&gpu, LA_FLOAT, 4000, why, sizeof why) == 0);
    /* a CPU device: cg (native loops), whatever its figures say */
    write_figures(&cpu, 0.05, 2e8);
    add_small_figures(&cpu, 0.0001, 1e9);
    CHECK(devfig_method(&cpu, LA_DOUBLE, 4000, why, sizeof why) == 0);
    CHECK(devfig_complete(tunedb_for_device(&cpu), &cpu, LA_DOUBLE));
    /* the method survives the file: saved and loaded back */
    const tunedb *db = tunedb_for_device(&gpu);
    int small = 0;
    for (int i = 0; db && i < db->nfig; i++)
        small += !strcmp(tunedb_figure_method(&db->fig[i]), "cg-small");
    CHECK_MSG(small == 2, "cg-small figures after a reload: %d", small);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    unsetenv("CLSOLVE_TUNE_DIR");
    tunedb_forget();
}

static void test_choose(void)
{
    char dir[] = "/tmp/test_devfig.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("CLSOLVE_TUNE_DIR", dir, 1);
    tunedb_forget();
    ocl_device devs[3] = {fake("fake GPU", CL_DEVICE_TYPE_GPU),
                          fake("fake CPU", CL_DEVICE_TYPE_CPU),
                          fake("second fake GPU", CL_DEVICE_TYPE_GPU)};
    char why[512];
    /* no figures at all: the fallback, and the reason */
    CHECK(devfig_choose(devs, 3, 2, LA_DOUBLE, 5000, why, sizeof why) == 2);
    CHECK(strstr(why, "no measured figures") != NULL);
    /* GPU: 0.05 ms + nnz / 2e8 per ms; CPU: 0.004 ms + nnz / 1e6 per ms.
     * Equal where 0.046 = nnz (1e-6 - 5e-9): nnz = 46231 */
    write_figures(&devs[0], 0.05, 2e8);
    /* figures for the GPU only: still the fallback */
    CHECK(devfig_choose(devs, 3, 0, LA_DOUBLE, 5000, why, sizeof why) == 0);
    write_figures(&devs[1], 0.004, 1e6);
    tunedb_forget();
    int c = devfig_choose(devs, 3, 0, LA_DOUBLE, 30000, why, sizeof why);
    CHECK_MSG(c == 1, "30k entries: chose %d (%s)", c, why);
    CHECK(strstr(why, "fake CPU") && strstr(why, "fake GPU"));
    c = devfig_choose(devs, 3, 0, LA_DOUBLE, 70000, why, sizeof why);
    CHECK_MSG(c == 0, "70k entries: chose %d (%s)", c, why);
    c = devfig_choose(devs, 3, 0, LA_DOUBLE, 46000, why, sizeof why);
    CHECK_MSG(c == 1, "46k entries (just below the crossover): chose %d (%s)", c, why);
    c = devfig_choose(devs, 3, 0, LA_DOUBLE, 46500, why, sizeof why);
    CHECK_MSG(c == 0, "46.5k entries (just above): chose %d (%s)", c, why);
    /* only GPUs on the host: nothing to choose, no reason */
    ocl_device gpus[2] = {devs[0], devs[2]};
    CHECK(devfig_choose(gpus, 2, 1, LA_DOUBLE, 30000, why, sizeof why) == 1 && why[0] == '\0');
    /* other precisions have no figures */
    CHECK(devfig_choose(devs, 3, 0, LA_FLOAT, 30000, why, sizeof why) == 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    unsetenv("CLSOLVE_TUNE_DIR");
    tunedb_forget();
}

static void test_measure(void)
{
    ocl_device dev;
    cls_error e;
    if (ocl_pick_device("auto", &dev, &e) != CLS_OK)
        CHECK_SKIP("no OpenCL device: %s", e.msg);
    tunedb_figure fig[DEVFIG_MAX];
    int n = 0;
    int rc = devfig_measure(&dev, LA_DOUBLE, 1, fig, &n, &e);
    int want = dev.type & CL_DEVICE_TYPE_CPU ? 2 : 4; /* cg-small's figures on GPUs only */
    CHECK_MSG(rc == CLS_OK && n == want, "devfig_measure: %d figures: %s", n, e.msg);
    if (n >= 2) {
        CHECK(fig[0].rows == 512 && fig[1].rows == 48 * 48 * 48);
        CHECK(fig[0].ms > 0 && fig[1].ms > fig[0].ms);
        CHECK(!strcmp(fig[0].method, "cg") && !strcmp(fig[1].method, "cg"));
        printf("%s: cg %.4f ms/iteration at %lld rows, %.4f at %lld\n", dev.name, fig[0].ms,
               fig[0].rows, fig[1].ms, fig[1].rows);
    }
    /* cg-small's figures, taken on this device presented as a GPU (PoCL runs
     * the one-launch kernel as any other): its larger system slower */
    if (dev.type & CL_DEVICE_TYPE_CPU) {
        dev.type = CL_DEVICE_TYPE_GPU;
        rc = devfig_measure(&dev, LA_DOUBLE, 1, fig, &n, &e);
        CHECK_MSG(rc == CLS_OK && n == 4, "devfig_measure as a GPU: %d figures: %s", n, e.msg);
    }
    if (n == 4) {
        CHECK(!strcmp(fig[2].method, "cg-small") && !strcmp(fig[3].method, "cg-small"));
        CHECK(fig[2].rows == 512 && fig[3].rows == 16 * 16 * 16);
        CHECK(fig[2].ms > 0 && fig[3].ms > fig[2].ms);
        printf("%s: cg-small %.4f ms/iteration at %lld rows, %.4f at %lld\n", dev.name, fig[2].ms,
               fig[2].rows, fig[3].ms, fig[3].rows);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    test_predict();
    test_choose();
    test_method();
    test_measure();
    return check_done("test_devfig");
}
