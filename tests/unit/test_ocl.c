/*
 * test_ocl.c: the OpenCL runtime: discovery order, device selection, the
 * program binary cache (hit, corrupt entry, broken source) and error names.
 * Needs an OpenCL device (PoCL in CI); skips (77) when there is none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "kernels/ocl.h"

static int type_rank(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return 0;
    if (t & CL_DEVICE_TYPE_ACCELERATOR)
        return 1;
    if (t & CL_DEVICE_TYPE_CPU)
        return 2;
    return 3;
}

static void test_errstr(void)
{
    CHECK(strcmp(ocl_errstr(CL_SUCCESS), "CL_SUCCESS") == 0);
    CHECK(strcmp(ocl_errstr(CL_INVALID_VALUE), "CL_INVALID_VALUE") == 0);
    CHECK(strcmp(ocl_errstr(-4), "CL_MEM_OBJECT_ALLOCATION_FAILURE") == 0);
    CHECK(strcmp(ocl_errstr(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE") == 0);
    CHECK(strcmp(ocl_errstr(CL_INVALID_DEVICE_PARTITION_COUNT),
                 "CL_INVALID_DEVICE_PARTITION_COUNT") == 0);
    CHECK(strcmp(ocl_errstr(-1001), "CL_PLATFORM_NOT_FOUND_KHR") == 0);
    CHECK(strcmp(ocl_errstr(-12345), "CL_UNKNOWN_ERROR") == 0);
    CHECK(strcmp(ocl_errstr(7), "CL_UNKNOWN_ERROR") == 0);
    /* every code of OpenCL 1.2 (0 .. -19, -30 .. -68) has a name */
    for (int c = 0; c >= -68; c--) {
        if (c < -19 && c > -30)
            continue;
        CHECK_MSG(strcmp(ocl_errstr(c), "CL_UNKNOWN_ERROR") != 0, "code %d", c);
    }
    CHECK(strcmp(ocl_type_name(CL_DEVICE_TYPE_GPU), "GPU") == 0);
    CHECK(strcmp(ocl_type_name(CL_DEVICE_TYPE_CPU), "CPU") == 0);
    CHECK(strcmp(ocl_type_name(CL_DEVICE_TYPE_ACCELERATOR), "ACCELERATOR") == 0);

}

static int occheck_helper(cls_error *err)
{
    OCL_CHECK(err, CL_OUT_OF_RESOURCES, "clFoo");
    return CLS_OK;
}

static void test_devices(ocl_device **devs_out, int *n_out)
{
    ocl_device *devs = NULL;
    int n = 0;
    cls_error err;
    cls_error_clear(&err);
    int rc = ocl_list_devices(&devs, &n, &err);
    if (rc)
        CHECK_SKIP("no OpenCL device: %s", err.msg);
    CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        CHECK(devs[i].index == i);
        CHECK(devs[i].name[0] != '\0');
        CHECK(devs[i].compute_units >= 1);
        CHECK(devs[i].max_work_group >= 1);
        CHECK(devs[i].max_alloc > 0);
        printf("  %d: %s %s (%s) CUs %u maxwg %zu fp64 %d\n", i, ocl_type_name(devs[i].type),
               devs[i].name, devs[i].platform_name, devs[i].compute_units,
               devs[i].max_work_group, devs[i].fp64);
        if (i > 0) {
            int ra = type_rank(devs[i - 1].type), rb = type_rank(devs[i].type);
            CHECK_MSG(ra <= rb, "device %d (%s) before %d (%s)", i - 1,
                      ocl_type_name(devs[i - 1].type), i, ocl_type_name(devs[i].type));
            if (ra == rb)
                CHECK(devs[i - 1].compute_units >= devs[i].compute_units);
        }
    }
    *devs_out = devs;
    *n_out = n;
}

static void test_pick(const ocl_device *devs, int n)
{
    ocl_device d;
    cls_error err;

    cls_error_clear(&err);
    CHECK(ocl_pick_device("auto", &d, &err) == CLS_OK);
    CHECK(d.index == 0 && d.id == devs[0].id);
    CHECK(ocl_pick_device(NULL, &d, &err) == CLS_OK && d.index == 0);

    CHECK(ocl_pick_device("0", &d, &err) == CLS_OK);
    CHECK(d.id == devs[0].id);
    char spec[32];
    snprintf(spec, sizeof spec, "%d", n - 1);
    CHECK(ocl_pick_device(spec, &d, &err) == CLS_OK && d.index == n - 1);

    int first_cpu = -1, first_gpu = -1;
    for (int i = n - 1; i >= 0; i--) {
        if (devs[i].type & CL_DEVICE_TYPE_CPU)
            first_cpu = i;
        if (devs[i].type & CL_DEVICE_TYPE_GPU)
            first_gpu = i;
    }
    cls_error_clear(&err);
    int rc = ocl_pick_device("cpu", &d, &err);
    if (first_cpu >= 0) {
        CHECK(rc == CLS_OK);
        CHECK(d.index == first_cpu && (d.type & CL_DEVICE_TYPE_CPU));
    } else {
        CHECK(rc != CLS_OK && strstr(err.msg, "no CPU") != NULL);
    }
    cls_error_clear(&err);
    rc = ocl_pick_device("GPU", &d, &err);
    if (first_gpu >= 0) {
        CHECK(rc == CLS_OK && d.index == first_gpu);
    } else {
        CHECK(rc == CLS_EOTHER);
        CHECK_MSG(strstr(err.msg, "no GPU") != NULL && strstr(err.msg, devs[0].name),
                  "message lists the devices: %s", err.msg);
    }

    snprintf(spec, sizeof spec, "%d", n);
    cls_error_clear(&err);
    CHECK(ocl_pick_device(spec, &d, &err) == CLS_EUSAGE);
    CHECK_MSG(strstr(err.msg, "out of range") != NULL, "%s", err.msg);
    cls_error_clear(&err);
    CHECK(ocl_pick_device("-1", &d, &err) == CLS_EUSAGE);
    cls_error_clear(&err);
    CHECK(ocl_pick_device("3x", &d, &err) == CLS_EUSAGE);
    CHECK(strstr(err.msg, "3x") != NULL);
    cls_error_clear(&err);
    CHECK(ocl_pick_device("tpu", &d, &err) == CLS_EUSAGE);
}

static void rm_rf_cache(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not clear %s\n", dir);
}

/* Runs kernel `fill_k` of prog and checks it writes v into 16 ints. */
static int run_fill(ocl_ctx *ctx, cl_program prog, int v)
{
    cls_error err;
    cl_kernel k;
    if (ocl_create_kernel(prog, "fill_k", &k, &err))
        return 0;
    cl_int st;
    cl_mem buf = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, 16 * sizeof(cl_int), NULL, &st);
    int out[16];
    for (int i = 0; i < 16; i++)
        out[i] = -7;
    clEnqueueWriteBuffer(ctx->queue, buf, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL);
    clSetKernelArg(k, 0, sizeof buf, &buf);
    clSetKernelArg(k, 1, sizeof v, &v);
    size_t g = 16;
    cl_event ev;
    st = clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &g, NULL, 0, NULL, &ev);
    int ok = st == CL_SUCCESS;
    if (ok) {
        double s = ocl_event_seconds(ev);
        CHECK(s >= 0.0 && s < 10.0);
        clReleaseEvent(ev);
    }
    clEnqueueReadBuffer(ctx->queue, buf, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL);
    for (int i = 0; i < 16; i++)
        ok = ok && out[i] == v + i;
    clReleaseMemObject(buf);
    clReleaseKernel(k);
    return ok;
}

static void test_build_cache(const ocl_device *dev)
{
    cls_error err;
    cls_error_clear(&err);
    char dir[1024];
    const char *base = getenv("CLSOLVE_CACHE_DIR");
    snprintf(dir, sizeof dir, "%s/test_ocl.%ld", base && *base ? base : "/tmp",
             (long)getpid());
    setenv("CLSOLVE_CACHE_DIR", dir, 1);
    rm_rf_cache(dir);
    /* the suite runs with the cache off (tests/CMakeLists.txt); this test
     * is where it is on, after a check that off means off */
    const char *was = getenv("CLSOLVE_PROGRAM_CACHE");
    char saved[16];
    snprintf(saved, sizeof saved, "%s", was ? was : "");
    setenv("CLSOLVE_PROGRAM_CACHE", "0", 1);
    {
        char off[1100];
        ocl_ctx c0;
        memset(&c0, 0, sizeof c0);
        CHECK_MSG(!ocl_cache_path(&c0, "x", "", off, sizeof off),
                  "CLSOLVE_PROGRAM_CACHE=0 still names a cache file");
    }
    setenv("CLSOLVE_PROGRAM_CACHE", "1", 1);

    ocl_ctx ctx;
    if (ocl_ctx_create(dev, &ctx, &err)) {
        CHECK_MSG(0, "ocl_ctx_create: %s", err.msg);
        return;
    }
    /* a source unique to this run, so no earlier cache can interfere */
    char text[512];
    snprintf(text, sizeof text,
             "/* run %llu */\n__kernel void fill_k(__global int *o, int v) "
             "{ o[get_global_id(0)] = v + (int)get_global_id(0); }\n",
             check_rand());
    ocl_cache_stats_t s0, s1, s2, s3;
    cl_program p;

    ocl_cache_stats(&s0);
    CHECK(ocl_build_program_text(&ctx, text, "", &p, &err) == CLS_OK);
    ocl_cache_stats(&s1);
    CHECK(s1.source_builds == s0.source_builds + 1 && s1.hits == s0.hits);
    CHECK(run_fill(&ctx, p, 5));
    clReleaseProgram(p);

    char path[1100];
    CHECK(ocl_cache_path(&ctx, text, "", path, sizeof path));
    struct stat sb;
    CHECK_MSG(stat(path, &sb) == 0 && sb.st_size > 40, "cache file %s written", path);

    /* second build: from the cache */
    CHECK(ocl_build_program_text(&ctx, text, "", &p, &err) == CLS_OK);
    ocl_cache_stats(&s2);
    CHECK(s2.hits == s1.hits + 1 && s2.source_builds == s1.source_builds);
    CHECK(run_fill(&ctx, p, 11));
    clReleaseProgram(p);

    /* an empty user cache reads the prebuilt programs (CLSOLVE_PROGRAMS_DIR,
     * here the first cache) and writes nothing of its own */
    {
        char user[1100], upath[1200];
        snprintf(user, sizeof user, "%s.user", dir);
        rm_rf_cache(user);
        setenv("CLSOLVE_CACHE_DIR", user, 1);
        setenv("CLSOLVE_PROGRAMS_DIR", dir, 1);
        ocl_cache_stats_t a, b;
        ocl_cache_stats(&a);
        CHECK(ocl_build_program_text(&ctx, text, "", &p, &err) == CLS_OK);
        ocl_cache_stats(&b);
        CHECK_MSG(b.hits == a.hits + 1 && b.prebuilt == a.prebuilt + 1 &&
                      b.source_builds == a.source_builds,
                  "prebuilt: hits %d -> %d, prebuilt %d -> %d, source builds %d -> %d", a.hits,
                  b.hits, a.prebuilt, b.prebuilt, a.source_builds, b.source_builds);
        CHECK(run_fill(&ctx, p, 13));
        clReleaseProgram(p);
        CHECK(ocl_cache_path(&ctx, text, "", upath, sizeof upath));
        CHECK_MSG(stat(upath, &sb) != 0, "a prebuilt hit wrote %s", upath);
        /* no prebuilt directory: a source build into the user's cache */
        setenv("CLSOLVE_PROGRAMS_DIR", "/nonexistent/clsolve-programs", 1);
        CHECK(ocl_build_program_text(&ctx, text, "", &p, &err) == CLS_OK);
        ocl_cache_stats(&a);
        CHECK(a.source_builds == b.source_builds + 1 && a.prebuilt == b.prebuilt);
        clReleaseProgram(p);
        unsetenv("CLSOLVE_PROGRAMS_DIR");
        rm_rf_cache(user);
        setenv("CLSOLVE_CACHE_DIR", dir, 1);
        ocl_cache_stats(&s2);
    }

    /* other options: another key, a source build */
    CHECK(ocl_build_program_text(&ctx, text, "-DUNUSED_OPTION=1", &p, &err) == CLS_OK);
    ocl_cache_stats(&s3);
    CHECK(s3.source_builds == s2.source_builds + 1 && s3.hits == s2.hits);
    clReleaseProgram(p);

    /* corrupt the binary part (past the 40-byte header) and the header */
    long offs[2] = {40 + (long)(check_rand() % (unsigned long long)(sb.st_size - 40)), 17};
    for (int t = 0; t < 2; t++) {
        FILE *f = fopen(path, "r+b");
        CHECK(f != NULL);
        if (!f)
            break;
        fseek(f, offs[t], SEEK_SET);
        int c = fgetc(f);
        fseek(f, offs[t], SEEK_SET);
        fputc(c ^ 0x5a, f);
        fclose(f);
        ocl_cache_stats(&s0);
        CHECK(ocl_build_program_text(&ctx, text, "", &p, &err) == CLS_OK);
        ocl_cache_stats(&s1);
        CHECK_MSG(s1.rejected == s0.rejected + 1 && s1.source_builds == s0.source_builds + 1,
                  "corruption at byte %ld detected", offs[t]);
        CHECK(run_fill(&ctx, p, 3));
        clReleaseProgram(p);
        /* and the rebuilt entry is good again */
        CHECK(ocl_build_program_text(&ctx, text, "", &p, &err) == CLS_OK);
        ocl_cache_stats(&s2);
        CHECK(s2.hits == s1.hits + 1);
        clReleaseProgram(p);
    }
    /* truncated file */
    CHECK(truncate(path, 20) == 0);
    ocl_cache_stats(&s0);
    CHECK(ocl_build_program_text(&ctx, text, "", &p, &err) == CLS_OK);
    ocl_cache_stats(&s1);
    CHECK(s1.rejected == s0.rejected + 1);
    clReleaseProgram(p);

    /* the embedded sources build through the named-source entry point */
    const char *names[] = {"real.cl", "blas1.cl"};
    CHECK(ocl_source("real.cl") != NULL && ocl_source("no_such.cl") == NULL);
    cls_error_clear(&err);
    CHECK(ocl_build_program(&ctx, names, 2, "", &p, &err) == CLS_OK);
    if (!err.code)
        clReleaseProgram(p);
    const char *bad_names[] = {"real.cl", "no_such.cl"};
    CHECK(ocl_build_program(&ctx, bad_names, 2, "", &p, &err) == CLS_EOTHER);
    CHECK(strstr(err.msg, "no_such.cl") != NULL);

    /* a broken source: the error carries the compiler's log */
    const char *broken = "__kernel void broken_k(__global int *o) { o[0] = "
                         "undeclared_identifier_xyz; }\n";
    cls_error_clear(&err);
    p = NULL;
    CHECK(ocl_build_program_text(&ctx, broken, "", &p, &err) == CLS_EOTHER);
    CHECK(p == NULL);
    CHECK_MSG(strstr(err.msg, "undeclared_identifier_xyz") != NULL, "build log in: %s",
              err.msg);
    CHECK(strstr(err.msg, "build failed") != NULL);

    /* a very long build log is truncated, not overflowed */
    size_t cap = 200000;
    char *many = malloc(cap);
    size_t used = 0;
    for (int i = 0; i < 300 && used + 200 < cap; i++)
        used += (size_t)snprintf(many + used, cap - used,
                                 "__kernel void k%d(__global int *o) { o[0] = nope_%d; }\n", i, i);
    cls_error_clear(&err);
    CHECK(ocl_build_program_text(&ctx, many, "", &p, &err) == CLS_EOTHER);
    CHECK(strlen(err.msg) < sizeof err.msg);
    CHECK(strstr(err.msg, "nope_0") != NULL);
    free(many);

    /* an unwritable cache directory is a warning, not an error */
    setenv("CLSOLVE_CACHE_DIR", "/proc/clsolve-cannot-write-here", 1);
    ocl_cache_stats(&s0);
    snprintf(text, sizeof text,
             "/* run %llu */\n__kernel void fill_k(__global int *o, int v) "
             "{ o[get_global_id(0)] = v + (int)get_global_id(0); }\n",
             check_rand());
    cls_error_clear(&err);
    CHECK(ocl_build_program_text(&ctx, text, "", &p, &err) == CLS_OK);
    ocl_cache_stats(&s1);
    CHECK(s1.write_failures == s0.write_failures + 1);
    if (!err.code) {
        CHECK(run_fill(&ctx, p, 1));
        clReleaseProgram(p);
    }
    setenv("CLSOLVE_CACHE_DIR", dir, 1);

    /* CLSOLVE_PROGRAM_CACHE=0: a source build that writes no file, twice */
    setenv("CLSOLVE_PROGRAM_CACHE", "0", 1);
    snprintf(text, sizeof text,
             "/* run %llu */\n__kernel void fill_k(__global int *o, int v) "
             "{ o[get_global_id(0)] = v + (int)get_global_id(0); }\n",
             check_rand());
    for (int t = 0; t < 2; t++) {
        ocl_cache_stats(&s0);
        CHECK(ocl_build_program_text(&ctx, text, "", &p, &err) == CLS_OK);
        ocl_cache_stats(&s1);
        /* from source both times: no file was written to load (this
         * context is not shared, so none is kept in memory either) */
        CHECK(s1.source_builds == s0.source_builds + 1 && s1.hits == s0.hits);
        CHECK(s1.write_failures == s0.write_failures);
        CHECK(run_fill(&ctx, p, 7));
        clReleaseProgram(p);
    }
    setenv("CLSOLVE_PROGRAM_CACHE", "1", 1);
    char offpath[1100];
    CHECK(ocl_cache_path(&ctx, text, "", offpath, sizeof offpath));
    struct stat ob;
    CHECK_MSG(stat(offpath, &ob) != 0, "CLSOLVE_PROGRAM_CACHE=0 wrote %s", offpath);
    if (saved[0])
        setenv("CLSOLVE_PROGRAM_CACHE", saved, 1);
    else
        unsetenv("CLSOLVE_PROGRAM_CACHE");

    ocl_ctx_release(&ctx);
    rm_rf_cache(dir);
}

int main(void)
{
    check_seed("test_ocl");
    test_errstr();
    cls_error err;
    cls_error_clear(&err);
    CHECK(occheck_helper(&err) == CLS_EOTHER);
    CHECK_MSG(strcmp(err.msg, "clFoo failed: CL_OUT_OF_RESOURCES (-5)") == 0, "%s", err.msg);

    ocl_device *devs;
    int n;
    test_devices(&devs, &n);
    test_pick(devs, n);
    test_build_cache(&devs[0]);
    free(devs);
    return check_done("test_ocl");
}
