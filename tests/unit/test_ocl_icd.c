/*
 * test_ocl_icd.c: ocl_icd_narrow (kernels/ocl_icd.h), the OpenCL loader
 * pointed at the GPU's driver alone when a process asks for --device gpu.
 *
 * First the choice over vendors directories made here (PoCL and Intel's CPU
 * runtime dropped, exactly one other kept, empty, non-regular and non-.icd
 * files ignored), then the conditions that keep every driver (another device
 * spec, OCL_ICD_VENDORS set, CLSOLVE_ICD_ALL=1, OCL_ICD_FILENAMES naming
 * PoCL), the user's OCL_ICD_FILENAMES with the kept library added, the
 * error hint, and last the loader itself in a child process: with a directory of
 * this host's PoCL and a driver that does not exist, the narrowed loader
 * lists no platform (PoCL was not opened) and the full one lists PoCL's.
 */
#define _POSIX_C_SOURCE 200809L
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "kernels/ocl_icd.h"

static char root[64];

static void put(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static const char *mkdir_in(const char *name)
{
    static char d[8][256];
    static int k;
    char *p = d[k++ % 8];
    snprintf(p, 256, "%s/%s", root, name);
    mkdir(p, 0755);
    return p;
}

static void clean_env(void)
{
    unsetenv("OCL_ICD_VENDORS");
    unsetenv("OCL_ICD_FILENAMES");
    unsetenv("CLSOLVE_ICD_ALL");
}

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* in a child: narrow (or not), then count the loader's platforms */
static int platforms_in_child(const char *dir, int narrow)
{
    pid_t pid = fork();
    if (pid == 0) {
        clean_env();
        setenv("OPENCL_VENDOR_PATH", dir, 1);
        if (!narrow)
            setenv("CLSOLVE_ICD_ALL", "1", 1);
        int did = ocl_icd_narrow("gpu", NULL, 0);
        if (did != narrow)
            _exit(100 + did);
        cl_uint np = 0;
        cl_int st = clGetPlatformIDs(0, NULL, &np);
        _exit(st == CL_SUCCESS ? (int)(np > 50 ? 50 : np) : 0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/test_ocl_icd.XXXXXX");
    if (!mkdtemp(root))
        return fprintf(stderr, "mkdtemp failed\n"), 1;
    ocl_icd_choice c;

    CHECK(ocl_icd_cpu_only("libpocl.so.2"));
    CHECK(ocl_icd_cpu_only("/usr/lib/x86_64-linux-gnu/libpocl.so.2.10.0"));
    CHECK(ocl_icd_cpu_only("libintelocl.so"));
    CHECK(!ocl_icd_cpu_only("/usr/lib/libnvidia-opencl.so.1"));
    CHECK(!ocl_icd_cpu_only("libigdrcl.so"));
    CHECK(!ocl_icd_cpu_only("/opt/pocl/libamdocl64.so")); /* the directory does not count */

    /* PoCL and one GPU driver: the driver kept */
    const char *d1 = mkdir_in("gpu-and-pocl");
    put(d1, "pocl.icd", "libpocl.so.2.10.0\n");
    put(d1, "nvidia.icd", "/usr/lib/libnvidia-opencl.so.1\r\n");
    put(d1, "README", "libsomething.so\n"); /* not an .icd */
    put(d1, "empty.icd", "");               /* skipped, as the loaders skip it */
    {
        char sub[300];
        snprintf(sub, sizeof sub, "%s/dir.icd", d1); /* not a regular file */
        mkdir(sub, 0755);
        snprintf(sub, sizeof sub, "%s/fifo.icd", d1); /* a FIFO would block a read */
        mkfifo(sub, 0644);
    }
    CHECK(ocl_icd_gpu_only(d1, &c) == 1);
    CHECK(c.dropped == 1);
    CHECK_MSG(ends_with(c.icd, "/nvidia.icd"), "kept %s", c.icd);
    CHECK_MSG(strcmp(c.lib, "/usr/lib/libnvidia-opencl.so.1") == 0, "lib '%s'", c.lib);

    /* Intel's CPU runtime and its GPU driver */
    const char *d2 = mkdir_in("intel");
    put(d2, "intel-cpu.icd", "/opt/intel/oclcpuexp/x64/libintelocl.so\n");
    put(d2, "intel.icd", "libigdrcl.so\n");
    CHECK(ocl_icd_gpu_only(d2, &c) == 1 && strcmp(c.lib, "libigdrcl.so") == 0);

    /* nothing to drop, nothing but PoCL, two GPU drivers, no directory */
    const char *d3 = mkdir_in("gpu-only");
    put(d3, "nvidia.icd", "libnvidia-opencl.so.1\n");
    CHECK(ocl_icd_gpu_only(d3, &c) == 0);
    const char *d4 = mkdir_in("pocl-only");
    put(d4, "pocl.icd", "libpocl.so.2\n");
    CHECK(ocl_icd_gpu_only(d4, &c) == 0 && c.dropped == 1);
    const char *d5 = mkdir_in("two-gpus");
    put(d5, "pocl.icd", "libpocl.so.2\n");
    put(d5, "nvidia.icd", "libnvidia-opencl.so.1\n");
    put(d5, "amd.icd", "libamdocl64.so\n");
    CHECK(ocl_icd_gpu_only(d5, &c) == 0);
    CHECK(ocl_icd_gpu_only("/nonexistent/clsolve/vendors", &c) == 0);

    /* ocl_icd_narrow: only for "gpu", and never over the user's choice */
    char kept[4096];
    clean_env();
    setenv("OPENCL_VENDOR_PATH", d1, 1);
    CHECK(ocl_icd_narrow("auto", kept, sizeof kept) == 0);
    CHECK(ocl_icd_narrow("cpu", kept, sizeof kept) == 0);
    CHECK(ocl_icd_narrow("0", kept, sizeof kept) == 0);
    CHECK(ocl_icd_narrow(NULL, kept, sizeof kept) == 0);
    CHECK(getenv("OCL_ICD_VENDORS") == NULL && getenv("OCL_ICD_FILENAMES") == NULL);
    CHECK(ocl_icd_narrow("GPU", kept, sizeof kept) == 1);
    CHECK(ends_with(kept, "/nvidia.icd"));
    CHECK(getenv("OCL_ICD_VENDORS") && strcmp(getenv("OCL_ICD_VENDORS"), kept) == 0);
    CHECK(getenv("OCL_ICD_FILENAMES") &&
          strcmp(getenv("OCL_ICD_FILENAMES"), "/usr/lib/libnvidia-opencl.so.1") == 0);

    clean_env();
    setenv("OCL_ICD_VENDORS", "/etc/OpenCL/mine", 1);
    CHECK(ocl_icd_narrow("gpu", NULL, 0) == 0);
    CHECK(strcmp(getenv("OCL_ICD_VENDORS"), "/etc/OpenCL/mine") == 0);
    clean_env();
    setenv("CLSOLVE_ICD_ALL", "1", 1);
    CHECK(ocl_icd_narrow("gpu", NULL, 0) == 0 && getenv("OCL_ICD_VENDORS") == NULL);
    clean_env();
    setenv("CLSOLVE_ICD_ALL", "0", 1); /* "0" keeps the narrowing */
    CHECK(ocl_icd_narrow("gpu", NULL, 0) == 1);
    clean_env();
    setenv("OCL_ICD_FILENAMES", "libnvidia-opencl.so.1:/usr/lib/libpocl.so.2", 1);
    CHECK(ocl_icd_narrow("gpu", NULL, 0) == 0 && getenv("OCL_ICD_VENDORS") == NULL);
    clean_env();
    setenv("OCL_ICD_FILENAMES", "libnvidia-opencl.so.1", 1); /* the same library by name */
    CHECK(ocl_icd_narrow("gpu", NULL, 0) == 1);
    CHECK(strcmp(getenv("OCL_ICD_FILENAMES"), "libnvidia-opencl.so.1") == 0);
    clean_env();
    setenv("OCL_ICD_FILENAMES", "/opt/x/libother.so", 1); /* the Khronos loader loads the list */
    CHECK(ocl_icd_narrow("gpu", NULL, 0) == 1);
    CHECK_MSG(strcmp(getenv("OCL_ICD_FILENAMES"),
                     "/opt/x/libother.so:/usr/lib/libnvidia-opencl.so.1") == 0,
              "OCL_ICD_FILENAMES=%s", getenv("OCL_ICD_FILENAMES"));
    clean_env();
    setenv("OCL_ICD_VENDORS", "", 1); /* empty is unset to both loaders */
    CHECK(ocl_icd_narrow("gpu", NULL, 0) == 1);
    {
        const char *hint = ocl_icd_hint();
        CHECK_MSG(strstr(hint, "/nvidia.icd") && strstr(hint, "CLSOLVE_ICD_ALL=1"), "hint '%s'",
                  hint);
    }
    clean_env();
    unsetenv("OPENCL_VENDOR_PATH");

    /* --device's value as the option parsers read it */
    {
        char *a1[] = {"clsolve", "solve", "A.mtx", "--device", "cpu", "--device=gpu", NULL};
        CHECK(strcmp(ocl_icd_device_arg(6, a1, 2), "gpu") == 0);
        char *a2[] = {"clsolve", "solve",    "A.mtx", "--device", "gpu",
                      "--",      "--device", "cpu",   NULL};
        CHECK(strcmp(ocl_icd_device_arg(8, a2, 2), "gpu") == 0);
        char *a3[] = {"clsolve", "solve", "A.mtx", "--device", NULL};
        CHECK(ocl_icd_device_arg(4, a3, 2) == NULL);
        char *a4[] = {"clsolved", "--device", "gpu", NULL};
        CHECK(strcmp(ocl_icd_device_arg(3, a4, 1), "gpu") == 0);
        CHECK(ocl_icd_device_arg(3, a4, 3) == NULL);
    }

    /* the loader itself: this host's PoCL beside a driver that is not there */
    char pocl[4096] = "";
    FILE *f = fopen("/etc/OpenCL/vendors/pocl.icd", "r");
    if (f) {
        if (!fgets(pocl, sizeof pocl, f))
            pocl[0] = '\0';
        fclose(f);
    }
    if (pocl[0]) {
        const char *d6 = mkdir_in("loader");
        put(d6, "pocl.icd", pocl);
        put(d6, "gone.icd", "libclsolve-test-no-such-driver.so\n");
        int all = platforms_in_child(d6, 0), narrowed = platforms_in_child(d6, 1);
        CHECK_MSG(all >= 1 && all < 100, "the full loader listed %d platform(s)", all);
        CHECK_MSG(narrowed == 0, "the narrowed loader listed %d platform(s) (PoCL opened?)",
                  narrowed);
    } else {
        fprintf(stderr,
                "test_ocl_icd: no /etc/OpenCL/vendors/pocl.icd, the loader check left out\n");
    }

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return check_done("test_ocl_icd");
}
