/*
 * ocl.c: the host runtime that owns OpenCL (see ocl.h for the contract).
 *
 * Three jobs:
 *  1. Discovery: every device of every platform, ordered GPU, ACCELERATOR,
 *     CPU, other; within a type by compute units, descending; ties keep the
 *     platform/driver order (the sort is stable), so indices are reproducible.
 *  2. Contexts: one per solve, or the process's shared one per device
 *     (ocl_ctx_create_shared) with the programs built in it kept in memory.
 *  3. Error reporting: every call checked, codes named (ocl_errstr).
 * Program builds and their binary cache: ocl_build.c.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "ocl.h"
#include "ocl_gate.h"
#include "ocl_icd.h"
#include "ocl_priv.h"

#include "../common/sysres.h"

#include <sched.h>
#include <unistd.h>

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

/* ------------------------------------------------------------------ errors */

const char *ocl_errstr(cl_int code)
{
    switch (code) {
#define E(c)                                                                                       \
    case c:                                                                                        \
        return #c;
        E(CL_SUCCESS)
        E(CL_DEVICE_NOT_FOUND)
        E(CL_DEVICE_NOT_AVAILABLE)
        E(CL_COMPILER_NOT_AVAILABLE)
        E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        E(CL_OUT_OF_RESOURCES)
        E(CL_OUT_OF_HOST_MEMORY)
        E(CL_PROFILING_INFO_NOT_AVAILABLE)
        E(CL_MEM_COPY_OVERLAP)
        E(CL_IMAGE_FORMAT_MISMATCH)
        E(CL_IMAGE_FORMAT_NOT_SUPPORTED)
        E(CL_BUILD_PROGRAM_FAILURE)
        E(CL_MAP_FAILURE)
        E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        E(CL_COMPILE_PROGRAM_FAILURE)
        E(CL_LINKER_NOT_AVAILABLE)
        E(CL_LINK_PROGRAM_FAILURE)
        E(CL_DEVICE_PARTITION_FAILED)
        E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
        E(CL_INVALID_VALUE)
        E(CL_INVALID_DEVICE_TYPE)
        E(CL_INVALID_PLATFORM)
        E(CL_INVALID_DEVICE)
        E(CL_INVALID_CONTEXT)
        E(CL_INVALID_QUEUE_PROPERTIES)
        E(CL_INVALID_COMMAND_QUEUE)
        E(CL_INVALID_HOST_PTR)
        E(CL_INVALID_MEM_OBJECT)
        E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
        E(CL_INVALID_IMAGE_SIZE)
        E(CL_INVALID_SAMPLER)
        E(CL_INVALID_BINARY)
        E(CL_INVALID_BUILD_OPTIONS)
        E(CL_INVALID_PROGRAM)
        E(CL_INVALID_PROGRAM_EXECUTABLE)
        E(CL_INVALID_KERNEL_NAME)
        E(CL_INVALID_KERNEL_DEFINITION)
        E(CL_INVALID_KERNEL)
        E(CL_INVALID_ARG_INDEX)
        E(CL_INVALID_ARG_VALUE)
        E(CL_INVALID_ARG_SIZE)
        E(CL_INVALID_KERNEL_ARGS)
        E(CL_INVALID_WORK_DIMENSION)
        E(CL_INVALID_WORK_GROUP_SIZE)
        E(CL_INVALID_WORK_ITEM_SIZE)
        E(CL_INVALID_GLOBAL_OFFSET)
        E(CL_INVALID_EVENT_WAIT_LIST)
        E(CL_INVALID_EVENT)
        E(CL_INVALID_OPERATION)
        E(CL_INVALID_GL_OBJECT)
        E(CL_INVALID_BUFFER_SIZE)
        E(CL_INVALID_MIP_LEVEL)
        E(CL_INVALID_GLOBAL_WORK_SIZE)
        E(CL_INVALID_PROPERTY)
        E(CL_INVALID_IMAGE_DESCRIPTOR)
        E(CL_INVALID_COMPILER_OPTIONS)
        E(CL_INVALID_LINKER_OPTIONS)
        E(CL_INVALID_DEVICE_PARTITION_COUNT)
        E(CL_PLATFORM_NOT_FOUND_KHR)
#undef E
    default:
        return "CL_UNKNOWN_ERROR";
    }
}

const char *ocl_type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return "GPU";
    if (t & CL_DEVICE_TYPE_ACCELERATOR)
        return "ACCELERATOR";
    if (t & CL_DEVICE_TYPE_CPU)
        return "CPU";
    if (t & CL_DEVICE_TYPE_CUSTOM)
        return "CUSTOM";
    return "OTHER";
}

/* --------------------------------------------------------------- discovery */

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

/* a before b in discovery order? */
static int dev_before(const ocl_device *a, const ocl_device *b)
{
    int ra = type_rank(a->type), rb = type_rank(b->type);
    if (ra != rb)
        return ra < rb;
    return a->compute_units > b->compute_units;
}

static void get_str(cl_device_id d, cl_device_info what, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(d, what, cap, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[cap - 1] = '\0';
}

/* Whole-token match in a space-separated extension list. */
static int has_token(const char *list, const char *tok)
{
    size_t n = strlen(tok);
    for (const char *p = list; (p = strstr(p, tok)) != NULL; p += n) {
        int start = p == list || p[-1] == ' ';
        int end = p[n] == '\0' || p[n] == ' ';
        if (start && end)
            return 1;
    }
    return 0;
}

static void fill_device(cl_platform_id plat, cl_device_id id, ocl_device *d)
{
    memset(d, 0, sizeof *d);
    d->platform = plat;
    d->id = id;
    if (clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof d->platform_name, d->platform_name,
                          NULL) != CL_SUCCESS)
        d->platform_name[0] = '\0';
    d->platform_name[sizeof d->platform_name - 1] = '\0';
    clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof d->type, &d->type, NULL);
    get_str(id, CL_DEVICE_NAME, d->name, sizeof d->name);
    get_str(id, CL_DEVICE_VENDOR, d->vendor, sizeof d->vendor);
    get_str(id, CL_DRIVER_VERSION, d->driver, sizeof d->driver);
    get_str(id, CL_DEVICE_VERSION, d->version, sizeof d->version);
    clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof d->compute_units, &d->compute_units,
                    NULL);
    clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof d->global_mem, &d->global_mem, NULL);
    clGetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof d->local_mem, &d->local_mem, NULL);
    clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL);
    clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_work_group, &d->max_work_group,
                    NULL);
    if (d->compute_units == 0)
        d->compute_units = 1;
    if (d->max_work_group == 0)
        d->max_work_group = 1;

    cl_device_fp_config fp = 0;
    if (clGetDeviceInfo(id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL) != CL_SUCCESS)
        fp = 0;
    d->fp64 = fp != 0;
    if (!d->fp64) {
        size_t len = 0;
        if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &len) == CL_SUCCESS && len) {
            char *ext = malloc(len + 1);
            if (ext && clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, len, ext, NULL) == CL_SUCCESS) {
                ext[len] = '\0';
                d->fp64 = has_token(ext, "cl_khr_fp64");
            }
            free(ext);
        }
    }
}

void ocl_threads_from_affinity(void)
{
    if (getenv("POCL_MAX_PTHREAD_COUNT"))
        return;
    int n = cls_sysres_cpus(); /* the affinity mask and the cgroup's CPU quota */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1 || (online > 0 && n >= online))
        return; /* not restricted: PoCL's own default */
    char v[16];
    snprintf(v, sizeof v, "%d", n);
    setenv("POCL_MAX_PTHREAD_COUNT", v, 0);
}

void ocl_env_before_threads(void)
{
    setenv("HWLOC_PLUGINS_PATH", "/dev/null", 0); /* PoCL's own value (pocl_topology) */
}

int ocl_list_devices(ocl_device **devs, int *n, cls_error *err)
{
    *devs = NULL;
    *n = 0;
    cl_uint np = 0;
    cl_int st = clGetPlatformIDs(0, NULL, &np);
    if (st == CL_PLATFORM_NOT_FOUND_KHR || (st == CL_SUCCESS && np == 0))
        return cls_fail(err, CLS_EOTHER,
                        "no OpenCL platform found: install pocl-opencl-icd (CPU) or a "
                        "GPU driver%s",
                        ocl_icd_hint());
    OCL_CHECK(err, st, "clGetPlatformIDs");
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats)
        return cls_fail(err, CLS_EOTHER, "out of memory listing OpenCL platforms");
    st = clGetPlatformIDs(np, plats, NULL);
    if (st != CL_SUCCESS) {
        free(plats);
        OCL_CHECK(err, st, "clGetPlatformIDs");
    }

    ocl_device *list = NULL;
    int count = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        st = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
        if (st != CL_SUCCESS || nd == 0)
            continue; /* a platform with no usable device is not an error */
        cl_device_id *ids = calloc(nd, sizeof *ids);
        ocl_device *grown = realloc(list, (size_t)(count + (int)nd) * sizeof *list);
        if (!ids || !grown) {
            free(ids);
            free(grown ? grown : list);
            free(plats);
            return cls_fail(err, CLS_EOTHER, "out of memory listing OpenCL devices");
        }
        list = grown;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL) == CL_SUCCESS)
            for (cl_uint i = 0; i < nd; i++)
                fill_device(plats[p], ids[i], &list[count++]);
        free(ids);
    }
    free(plats);
    if (count == 0) {
        free(list);
        return cls_fail(err, CLS_EOTHER,
                        "no OpenCL device found on %u platform(s): install "
                        "pocl-opencl-icd (CPU) or a GPU driver%s",
                        (unsigned)np, ocl_icd_hint());
    }
    /* insertion sort: stable, and device counts are tiny */
    for (int i = 1; i < count; i++) {
        ocl_device t = list[i];
        int j = i - 1;
        while (j >= 0 && dev_before(&t, &list[j])) {
            list[j + 1] = list[j];
            j--;
        }
        list[j + 1] = t;
    }
    for (int i = 0; i < count; i++)
        list[i].index = i;
    *devs = list;
    *n = count;
    return CLS_OK;
}

void ocl_describe_devices(const ocl_device *d, int n, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used + 1 < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s%d: %s %s (%s)", i ? ", " : "", i,
                         ocl_type_name(d[i].type), d[i].name, d[i].platform_name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

int ocl_fail_no_type(cls_error *err, cl_device_type want, const ocl_device *devs, int n)
{
    char list[700];
    ocl_describe_devices(devs, n, list, sizeof list);
    return cls_fail(err, CLS_EOTHER, "no %s OpenCL device; available: %s%s", ocl_type_name(want),
                    list, ocl_icd_hint());
}

int ocl_pick_device(const char *spec, ocl_device *out, cls_error *err)
{
    ocl_device *devs;
    int n;
    int rc = ocl_list_devices(&devs, &n, err);
    if (rc)
        return rc;
    if (!spec || !*spec)
        spec = "auto";

    int pick = -1;
    cl_device_type want = 0;
    if (strcasecmp(spec, "auto") == 0)
        pick = 0;
    else if (strcasecmp(spec, "gpu") == 0)
        want = CL_DEVICE_TYPE_GPU;
    else if (strcasecmp(spec, "cpu") == 0)
        want = CL_DEVICE_TYPE_CPU;
    else if (strcasecmp(spec, "accelerator") == 0)
        want = CL_DEVICE_TYPE_ACCELERATOR;
    else {
        char *end = NULL;
        errno = 0;
        long v = strtol(spec, &end, 10);
        if (end == spec || *end != '\0' || errno) {
            free(devs);
            return cls_fail(err, CLS_EUSAGE,
                            "bad device '%s': expected auto, gpu, cpu, accelerator or an "
                            "index (see `clsolve devices`)",
                            spec);
        }
        if (v < 0 || v >= n) {
            char list[700];
            ocl_describe_devices(devs, n, list, sizeof list);
            free(devs);
            return cls_fail(err, CLS_EUSAGE, "device index %ld out of range: %d device(s): %s", v,
                            n, list);
        }
        pick = (int)v;
    }
    if (want) {
        for (int i = 0; i < n && pick < 0; i++)
            if (devs[i].type & want)
                pick = i;
        if (pick < 0) {
            ocl_fail_no_type(err, want, devs, n);
            free(devs);
            return CLS_EOTHER;
        }
    }
    *out = devs[pick];
    free(devs);
    return CLS_OK;
}

/* ----------------------------------------------------------------- context */

int ocl_ctx_create(const ocl_device *dev, ocl_ctx *ctx, cls_error *err)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->dev = *dev;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev->platform, 0};
    cl_int st;
    ctx->context = clCreateContext(props, 1, &dev->id, NULL, NULL, &st);
    OCL_CHECK(err, st, "clCreateContext");
    ctx->queue = clCreateCommandQueue(ctx->context, dev->id, CL_QUEUE_PROFILING_ENABLE, &st);
    if (st != CL_SUCCESS) {
        clReleaseContext(ctx->context);
        ctx->context = NULL;
        OCL_CHECK(err, st, "clCreateCommandQueue");
    }
    ocl_gate_join(ctx);
    return CLS_OK;
}

/* The process's shared contexts, one per device, and the programs built in
 * them (kept in memory: the contexts live as long as the process, so a
 * cl_program never outlives the context it names). On a gated device
 * (ocl_gate.h: PoCL before 6.0) the shared context's users share its one
 * in-order queue as well: with a queue each, the gate would have to finish
 * every kernel before the next launch (the daemon's four lanes on PoCL 3.1
 * ran 5.1-5.8 jobs/s that way, one lane 25.6-28); on one queue the kernels
 * of all lanes still run one after another, as the PoCL bug needs, but
 * without a host round trip per launch. */
#define OCL_SHARED_MAX 16
#define OCL_PROGRAMS_MAX 64
static struct {
    cl_device_id id;
    cl_context context;
    cl_command_queue queue; /* the users' one queue on a gated device, else NULL */
} ocl_shared[OCL_SHARED_MAX];
static int ocl_nshared;
static struct {
    cl_context context;
    uint64_t key;
    char *options;
    cl_program prog;
} ocl_programs[OCL_PROGRAMS_MAX];
static int ocl_nprograms;
static pthread_mutex_t ocl_shared_mu = PTHREAD_MUTEX_INITIALIZER;

int ocl_ctx_create_shared(const ocl_device *dev, ocl_ctx *ctx, cls_error *err)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->dev = *dev;
    cl_int st = CL_SUCCESS;
    pthread_mutex_lock(&ocl_shared_mu);
    int i;
    for (i = 0; i < ocl_nshared && ocl_shared[i].id != dev->id; i++)
        ;
    if (i == ocl_nshared) {
        if (ocl_nshared == OCL_SHARED_MAX) {
            pthread_mutex_unlock(&ocl_shared_mu);
            return ocl_ctx_create(dev, ctx, err); /* more devices than a host has: unshared */
        }
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev->platform,
                                         0};
        cl_context c = clCreateContext(props, 1, &dev->id, NULL, NULL, &st);
        if (st == CL_SUCCESS) {
            ocl_shared[i].id = dev->id;
            ocl_shared[i].context = c;
            ocl_shared[i].queue = NULL;
            ocl_nshared++;
        }
    }
    cl_int qst = CL_SUCCESS;
    if (st == CL_SUCCESS) {
        ctx->context = ocl_shared[i].context;
        clRetainContext(ctx->context); /* the caller's reference */
        if (ocl_gate_wanted(dev)) {    /* one queue for every user (why: above) */
            if (!ocl_shared[i].queue)  /* the table's reference */
                ocl_shared[i].queue =
                    clCreateCommandQueue(ctx->context, dev->id, CL_QUEUE_PROFILING_ENABLE, &qst);
            if (qst == CL_SUCCESS &&
                (qst = clRetainCommandQueue(ocl_shared[i].queue)) == CL_SUCCESS)
                ctx->queue = ocl_shared[i].queue; /* the caller's reference */
        }
    }
    pthread_mutex_unlock(&ocl_shared_mu);
    OCL_CHECK(err, st, "clCreateContext");
    ctx->shared = 1;
    if (qst == CL_SUCCESS && !ctx->queue)
        ctx->queue = clCreateCommandQueue(ctx->context, dev->id, CL_QUEUE_PROFILING_ENABLE, &qst);
    if (qst != CL_SUCCESS) {
        clReleaseContext(ctx->context);
        ctx->context = NULL;
        ctx->queue = NULL;
        OCL_CHECK(err, qst, "clCreateCommandQueue");
    }
    ocl_gate_join(ctx);
    return CLS_OK;
}

void ocl_shared_release_all(void)
{
    pthread_mutex_lock(&ocl_shared_mu);
    for (int i = 0; i < ocl_nprograms; i++) {
        clReleaseProgram(ocl_programs[i].prog);
        free(ocl_programs[i].options);
    }
    ocl_nprograms = 0;
    for (int i = 0; i < ocl_nshared; i++) {
        if (ocl_shared[i].queue)
            clReleaseCommandQueue(ocl_shared[i].queue);
        ocl_shared[i].queue = NULL;
        clReleaseContext(ocl_shared[i].context);
    }
    ocl_nshared = 0;
    pthread_mutex_unlock(&ocl_shared_mu);
}

/* A program already built in a shared context: a new reference, or NULL. */
cl_program ocl_shared_program_find(const ocl_ctx *ctx, uint64_t key, const char *options)
{
    cl_program p = NULL;
    if (!ctx->shared)
        return NULL;
    pthread_mutex_lock(&ocl_shared_mu);
    for (int i = 0; i < ocl_nprograms && !p; i++)
        if (ocl_programs[i].context == ctx->context && ocl_programs[i].key == key &&
            !strcmp(ocl_programs[i].options, options)) {
            p = ocl_programs[i].prog;
            clRetainProgram(p);
        }
    pthread_mutex_unlock(&ocl_shared_mu);
    return p;
}

void ocl_shared_program_keep(const ocl_ctx *ctx, uint64_t key, const char *options, cl_program p)
{
    if (!ctx->shared)
        return;
    pthread_mutex_lock(&ocl_shared_mu);
    char *o = ocl_nprograms < OCL_PROGRAMS_MAX ? strdup(options) : NULL;
    if (o) {
        clRetainProgram(p);
        ocl_programs[ocl_nprograms].context = ctx->context;
        ocl_programs[ocl_nprograms].key = key;
        ocl_programs[ocl_nprograms].options = o;
        ocl_programs[ocl_nprograms].prog = p;
        ocl_nprograms++;
    }
    pthread_mutex_unlock(&ocl_shared_mu);
}

void ocl_ctx_release(ocl_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->queue) {
        clFinish(ctx->queue);
        ocl_gate_leave(ctx);
        clReleaseCommandQueue(ctx->queue);
    }
    if (ctx->context)
        clReleaseContext(ctx->context);
    ctx->queue = NULL;
    ctx->context = NULL;
}
