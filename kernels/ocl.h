/*
 * ocl.h: the host runtime that owns OpenCL. Nothing outside kernels/ calls
 * the OpenCL API directly.
 *
 * - Discovery lists every device of every platform, ordered GPUs first, then
 *   accelerators, then CPUs (then by compute units), and numbers them in that
 *   order: the index `--device N` takes and `clsolve devices` prints.
 * - Kernel sources (the kernels/ *.cl files) are embedded at build time (see
 *   cmake/embed_cl.cmake); ocl_source("spmv_csr.cl") returns the text.
 * - Programs are built once per (device, driver, options, source hash) and
 *   the binary cached under $CLSOLVE_CACHE_DIR or ~/.cache/clsolve/programs;
 *   a miss there looks in the prebuilt programs the build made (programs/
 *   beside the executable): on PoCL a first build and its binary cost a
 *   new user 15-30 s before the first solve (issue 23, item 5);
 *   a corrupt or foreign cache entry is ignored and rebuilt. A compile
 *   failure returns the build log in the error.
 * - Every call is checked: OCL_CHECK names the call and the code
 *   ("clCreateBuffer failed: CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)").
 */
#ifndef CLS_KERNELS_OCL_H
#define CLS_KERNELS_OCL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stddef.h>

#include "../common/error.h"

typedef struct ocl_device {
    int index; /* position in discovery order, what --device INDEX selects */
    cl_platform_id platform;
    cl_device_id id;
    cl_device_type type;
    char platform_name[128];
    char name[256];
    char vendor[128];
    char driver[128];  /* CL_DRIVER_VERSION */
    char version[128]; /* CL_DEVICE_VERSION */
    cl_uint compute_units;
    cl_ulong global_mem, local_mem, max_alloc;
    size_t max_work_group;
    int fp64; /* cl_khr_fp64 or CL_DEVICE_DOUBLE_FP_CONFIG != 0 */
} ocl_device;

typedef struct ocl_ctx {
    ocl_device dev;
    cl_context context;
    cl_command_queue queue; /* in order, profiling enabled */
    int shared;             /* the context is the process's one for dev (ocl_ctx_create_shared) */
    int gated;              /* its kernels go through ocl_gate.h (PoCL before 6.0) */
} ocl_ctx;

/* Readable name of an OpenCL error code ("CL_INVALID_VALUE"). */
const char *ocl_errstr(cl_int code);
const char *ocl_type_name(cl_device_type t); /* "GPU", "CPU", "ACCELERATOR" */

/* Checks an OpenCL status: on failure fills err with "CALL failed: NAME (code)"
 * and returns CLS_EOTHER from the enclosing function. */
#define OCL_CHECK(err, status, call)                                                               \
    do {                                                                                           \
        cl_int ocl_check_st_ = (status);                                                           \
        if (ocl_check_st_ != CL_SUCCESS)                                                           \
            return cls_fail((err), CLS_EOTHER, "%s failed: %s (%d)", (call),                       \
                            ocl_errstr(ocl_check_st_), (int)ocl_check_st_);                        \
    } while (0)

/* All devices, sorted as above. *devs is malloc'ed (free()). A machine with
 * no platform gives CLS_EOTHER with a hint to install pocl-opencl-icd. */
int ocl_list_devices(ocl_device **devs, int *n, cls_error *err);

/* spec: "auto" (first in discovery order), "gpu", "cpu", "accelerator", or a
 * decimal index. */
int ocl_pick_device(const char *spec, ocl_device *out, cls_error *err);
/* "0: GPU NAME (PLATFORM), 1: ..." into buf (cap bytes, truncated to fit),
 * the list the error messages of device selection show. */
void ocl_describe_devices(const ocl_device *d, int n, char *buf, size_t cap);
/* "no GPU OpenCL device; available: ..." (with the narrowed loader's hint,
 * kernels/ocl_icd.h) into err: the one wording of both device pickers
 * (ocl_pick_device, dsys_pick_local). Returns CLS_EOTHER. */
int ocl_fail_no_type(cls_error *err, cl_device_type want, const ocl_device *devs, int n);

int ocl_ctx_create(const ocl_device *dev, ocl_ctx *ctx, cls_error *err);
/* As ocl_ctx_create, but the context is the process's one for dev, made at
 * the first call and kept: several solves at once on one device (the
 * daemon's lanes) then share one context, each with its own queue, so the
 * GPU runs them side by side instead of switching between contexts (which
 * NVIDIA's driver time-slices), and programs built for it are kept in
 * memory (ocl_build_program's second call for the same source and options
 * costs a reference). ocl_ctx_release gives the caller's reference back. */
int ocl_ctx_create_shared(const ocl_device *dev, ocl_ctx *ctx, cls_error *err);
/* Releases the shared contexts and their programs (at exit). */
void ocl_shared_release_all(void);
void ocl_ctx_release(ocl_ctx *ctx);

/* Embedded source by file name, NULL if unknown. */
const char *ocl_source(const char *name);

/* Builds (or loads from the binary cache) the program made of the named
 * embedded sources concatenated in order, with the given build options. */
int ocl_build_program(ocl_ctx *ctx, const char *const *sources, int nsources, const char *options,
                      cl_program *prog, cls_error *err);

int ocl_create_kernel(cl_program prog, const char *name, cl_kernel *k, cls_error *err);

/* Builds (or loads from the cache) a program from one source text: what
 * ocl_build_program does after concatenating the named sources. Exported
 * for tests (a deliberately broken source) and for one-off kernels. */
int ocl_build_program_text(ocl_ctx *ctx, const char *text, const char *options, cl_program *prog,
                           cls_error *err);

/* Process-wide build counters, for tests and `clsolve devices -v`. A
 * rejected entry is a cache file that existed but was unusable (corrupt,
 * foreign, refused by the driver); it is rebuilt from source. */
typedef struct ocl_cache_stats_t {
    int hits, prebuilt, source_builds, rejected, write_failures; /* prebuilt: of the hits */
    long long launches; /* kernels enqueued (ocl_enqueue_kernel) */
} ocl_cache_stats_t;
void ocl_cache_stats(ocl_cache_stats_t *s);
/* One trace line (CLSOLVE_TRACE) with the counters above: what a command
 * built and launched (a solve on the native CPU loops launches nothing, so
 * on PoCL it compiles nothing: tests/cli/test_native_nobuild.sh). */
void ocl_trace_stats(const char *when);

/* Path of the cache file for (ctx's device, text, options) into buf; returns
 * 0 when there is no cache directory (no $CLSOLVE_CACHE_DIR, $XDG_CACHE_HOME
 * or $HOME). */
int ocl_cache_path(const ocl_ctx *ctx, const char *text, const char *options, char *buf,
                   size_t cap);

/* The same file among the prebuilt programs (read only, after a miss in
 * the user's cache): $CLSOLVE_PROGRAMS_DIR, else programs/ beside the
 * executable, which the build fills by solving a small system once
 * (CMake's `programs` target: README command 1's first solve then builds
 * nothing on PoCL). 0 when there is no such directory. */
int ocl_prebuilt_path(const ocl_ctx *ctx, const char *text, const char *options, char *buf,
                      size_t cap);

/* Waits for ev to complete: CL_SUCCESS, or the command's (negative)
 * status or the wait's error. On a GPU it polls the event's status (a
 * blocking clWaitForEvents puts the thread to sleep, and the driver's
 * wake-up is paid on every reduction of a distributed iteration), falling
 * back to blocking after 100 ms; on a CPU device it blocks (a polling host
 * thread takes a core from the device's own threads). CLSOLVE_EVENT_WAIT=
 * poll|block overrides the choice (a benchmark's A/B). */
cl_int ocl_event_wait(const ocl_device *dev, cl_event ev);

/* Seconds between the START and END of a profiled event (waits for it);
 * -1.0 if the event failed or has no profiling information. */
double ocl_event_seconds(cl_event ev);

/* PoCL's CPU device starts one thread per online core; a process that MPI
 * bound to fewer cores (mpirun's default --bind-to core for np <= 2) then
 * runs that many threads on its one core: 2.24 ms per CG iteration at
 * poisson3d 64 on 2 ranks of the 2-core machine, against 1.99 ms with one
 * thread per bound core. Sets POCL_MAX_PTHREAD_COUNT to the number of CPUs
 * in this process's affinity mask or its cgroup's CPU quota (common/sysres.h),
 * unless the user set it or neither restricts it; call before the first OpenCL call (PoCL reads it once). */
void ocl_threads_from_affinity(void);
/* The variables an OpenCL runtime sets for itself, set first, by the main
 * thread before any other starts. PoCL's CPU device sets
 * HWLOC_PLUGINS_PATH=/dev/null (setenv, replacing) when it starts, and
 * clsolve starts it on a thread beside the parse (the prewarm). A setenv
 * that adds a variable may move the environment while another thread's
 * getenv reads it: the sanitized suite saw the parse's getenv crash there
 * (SEGV in getenv, test_native_nobuild). With the variable already there,
 * PoCL's setenv replaces one pointer and moves nothing. */
void ocl_env_before_threads(void);

#endif
