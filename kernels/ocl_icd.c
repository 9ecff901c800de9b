/*
 * ocl_icd.c: the loader narrowed to the GPU's driver (see ocl_icd.h).
 *
 * The vendors directory is OPENCL_VENDOR_PATH or /etc/OpenCL/vendors, as
 * ocl-icd reads it (the Khronos loader knows only the second; with it, a
 * directory named by OPENCL_VENDOR_PATH decides what the loader gets, the
 * one driver it names, and that is still the narrowing asked for). An
 * .icd file's first line is the library, a name or a path; its file name
 * decides, since the runtimes are known by their libraries
 * (libpocl.so.2, libintelocl.so) and not by their .icd names.
 *
 * The Khronos loader opens OCL_ICD_FILENAMES' libraries and, from
 * OCL_ICD_VENDORS, only a directory: with the .icd file named there it
 * loads the list alone. So the kept library is added to a list the user
 * set (unless a library of that file name is in it already: a second
 * copy would list its platforms twice), and a list that names a CPU-only
 * runtime keeps every driver.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, strtok_r */
#include "ocl_icd.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "../common/trace.h"

/* a library's file name: the runtimes are told apart by it */
static const char *icd_base(const char *lib)
{
    const char *s = strrchr(lib, '/');
    return s ? s + 1 : lib;
}

int ocl_icd_cpu_only(const char *lib)
{
    const char *base = icd_base(lib);
    /* PoCL as Debian builds it serves CPU devices only (pthread, basic);
     * Intel's CPU runtime is libintelocl (its GPU driver is libigdrcl) */
    return strncmp(base, "libpocl", 7) == 0 || strncmp(base, "libintelocl", 11) == 0;
}

/* the first line of path, trimmed, into lib */
static int icd_library(const char *path, char *lib, size_t cap)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0; /* a FIFO would block the read; the Khronos loader skips them too */
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(lib, (int)cap, f) != NULL;
    fclose(f);
    if (!ok)
        return 0;
    size_t n = strlen(lib);
    while (n &&
           (lib[n - 1] == '\n' || lib[n - 1] == '\r' || lib[n - 1] == ' ' || lib[n - 1] == '\t'))
        lib[--n] = '\0';
    return n > 0;
}

int ocl_icd_gpu_only(const char *dir, ocl_icd_choice *c)
{
    memset(c, 0, sizeof *c);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int kept = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".icd") != 0)
            continue;
        char path[4096], lib[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path ||
            !icd_library(path, lib, sizeof lib))
            continue; /* the loaders skip an unreadable or empty file too */
        if (ocl_icd_cpu_only(lib)) {
            c->dropped++;
            continue;
        }
        if (kept++ == 0) {
            memcpy(c->icd, path, sizeof c->icd);
            memcpy(c->lib, lib, sizeof c->lib);
        }
    }
    closedir(d);
    return c->dropped > 0 && kept == 1;
}

/* written once by ocl_icd_narrow, before any thread; "" when nothing was
 * narrowed */
static char ocl_icd_hint_text[4300];

const char *ocl_icd_hint(void)
{
    return ocl_icd_hint_text;
}

int ocl_icd_narrow(const char *spec, char *kept, size_t cap)
{
    if (!spec || strcasecmp(spec, "gpu") != 0)
        return 0;
    const char *all = getenv("CLSOLVE_ICD_ALL");
    const char *vendors = getenv("OCL_ICD_VENDORS");
    if ((all && *all && strcmp(all, "0") != 0) || (vendors && *vendors))
        return 0; /* an empty OCL_ICD_VENDORS is unset to both loaders */
    const char *dir = getenv("OPENCL_VENDOR_PATH");
    ocl_icd_choice c;
    if (!ocl_icd_gpu_only(dir && *dir ? dir : "/etc/OpenCL/vendors", &c))
        return 0;
    const char *files = getenv("OCL_ICD_FILENAMES");
    char list[8200] = "";
    if (files && *files) {
        const char *kb = icd_base(c.lib);
        int has = 0;
        char copy[4096];
        if ((size_t)snprintf(copy, sizeof copy, "%s", files) >= sizeof copy)
            return 0; /* a list this long is left as it is */
        for (char *save = NULL, *f = strtok_r(copy, ":", &save); f;
             f = strtok_r(NULL, ":", &save)) {
            if (ocl_icd_cpu_only(f))
                return 0; /* a CPU runtime asked for by name stays */
            has |= strcmp(icd_base(f), kb) == 0;
        }
        if (!has)
            snprintf(list, sizeof list, "%s:%s", files, c.lib);
    } else {
        snprintf(list, sizeof list, "%s", c.lib);
    }
    setenv("OCL_ICD_VENDORS", c.icd, 1);
    if (list[0])
        setenv("OCL_ICD_FILENAMES", list, 1);
    snprintf(ocl_icd_hint_text, sizeof ocl_icd_hint_text,
             " (--device gpu opened only the OpenCL driver of %s; CLSOLVE_ICD_ALL=1 opens every "
             "driver)",
             c.icd);
    if (kept && cap)
        snprintf(kept, cap, "%s", c.icd);
    if (cls_trace_on()) {
        char line[4200];
        snprintf(line, sizeof line, "main: --device gpu: the OpenCL loader opens %s alone", c.icd);
        cls_trace(line);
    }
    return 1;
}

const char *ocl_icd_device_arg(int argc, char **argv, int first)
{
    const char *v = NULL;
    for (int k = first; k < argc && strcmp(argv[k], "--") != 0; k++)
        if (!strcmp(argv[k], "--device") && k + 1 < argc)
            v = argv[++k];
        else if (!strncmp(argv[k], "--device=", 9))
            v = argv[k] + 9;
    return v;
}
