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
 *  - devfig_measure on the real device (PoCL): two sizes, the larger slower.
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

/* t(nnz) = lat + nnz / rate at two sizes, into dev's database */
static void write_figures(const ocl_device *d, double lat, double rate)
{
    tunedb db;
    tunedb_init(&db, d);
    static const long long sizes[2] = {3200, 6137856};
    for (int k = 0; k < 2; k++) {
        tunedb_figure f = {"double", sizes[k] / 7, sizes[k], lat + (double)sizes[k] / rate};
        CHECK(tunedb_put_figure(&db, &f) == 0);
    }
    char path[4400];
    cls_error e;
    CHECK(tunedb_path(d, path, sizeof path));
    CHECK_MSG(tunedb_save(path, &db, &e) == CLS_OK, "%s", e.msg);
    tunedb_free(&db);
}

static void test_predict(void)
{
    tunedb_figure f[4] = {{"double", 100, 1000, 0.05},
                          {"double", 10000, 1001000, 1.05},
                          {"float", 100, 1000, 9.0},
                          {"double", 1000, 101000, 0.15}};
    double ms;
    /* between 1000 and 101000: slope 0.1/100000 */
    CHECK(devfig_predict(f, 4, LA_DOUBLE, 51000, &ms) == 0 && fabs(ms - 0.10) < 1e-12);
    /* between 101000 and 1001000: slope 0.9/900000 */
    CHECK(devfig_predict(f, 4, LA_DOUBLE, 551000, &ms) == 0 && fabs(ms - 0.60) < 1e-12);
    /* beyond the largest: the last two sizes extrapolated */
    CHECK(devfig_predict(f, 4, LA_DOUBLE, 2001000, &ms) == 0 && fabs(ms - 2.05) < 1e-12);
    /* below the smallest: latency is the floor */
    CHECK(devfig_predict(f, 4, LA_DOUBLE, 10, &ms) == 0 && fabs(ms - 0.05) < 1e-12);
    /* the float figure is alone: no prediction */
    CHECK(devfig_predict(f, 4, LA_FLOAT, 1000, &ms) == -1);
    CHECK(devfig_predict(f, 1, LA_DOUBLE, 1000, &ms) == -1);
    CHECK(devfig_predict(f, 0, LA_DOUBLE, 1000, &ms) == -1);
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
    tunedb_figure fig[2];
    int n = 0;
    int rc = devfig_measure(&dev, LA_DOUBLE, 1, fig, &n, &e);
    CHECK_MSG(rc == CLS_OK && n == 2, "devfig_measure: %s", e.msg);
    if (n == 2) {
        CHECK(fig[0].rows == 512 && fig[1].rows == 48 * 48 * 48);
        CHECK(fig[0].ms > 0 && fig[1].ms > fig[0].ms);
        printf("%s: %.4f ms/iteration at %lld rows, %.4f at %lld\n", dev.name, fig[0].ms,
               fig[0].rows, fig[1].ms, fig[1].rows);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    test_predict();
    test_choose();
    test_measure();
    return check_done("test_devfig");
}
