/*
 * frame.h: the plumbing the four physics kinds share, so that a kind is a
 * kernel, a driver page and a test (issue 16, item 8):
 *
 *   - the device: pick and open one OpenCL device, describe it in JSON;
 *   - buffers and launches: create / read / write a buffer and enqueue a
 *     1-D launch with errors that name the buffer or kernel;
 *   - the JSON report: every kind's summary starts with "kind" and ends
 *     with "device", "times" and, on failure, "error" / "exit_code" /
 *     "line"; a job's result is that summary plus "files";
 *   - output files: the format chosen by the extension of -o (an unknown
 *     one is a usage error), written to a temporary file and renamed,
 *     refused when they would hold NaN or inf, and frame sequences (NAME_000010.EXT every K steps,
 * with a ParaView .pvd collection for VTK).
 *
 * Nothing here knows a physics model; physics/mesh_write.c writes meshes
 * and point sets in the formats named here.
 */
#ifndef CLS_PHYSICS_FRAME_H
#define CLS_PHYSICS_FRAME_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/error.h"
#include "../kernels/ocl.h"

struct json_t;

/* ---- device ------------------------------------------------------------- */

typedef struct phys_device {
    ocl_device dev;
    ocl_ctx ctx;
    int open;
} phys_device;

/* spec: "auto", "cpu", "gpu", "accelerator" or an index (ocl_pick_device). */
int phys_device_open(phys_device *d, const char *spec, cls_error *err);
void phys_device_close(phys_device *d);
/* {"index", "name", "platform", "type", "local_size"} (local_size 0: the
 * runtime's choice); NULL when the device never opened. */
struct json_t *phys_device_json(const phys_device *d, size_t local_size);
/* The same for a device description (a driver that keeps its own). */
struct json_t *phys_device_json_of(const ocl_device *d, size_t local_size);
/* The work-group size for per-item kernels: gpu_ls on a GPU (capped by the
 * device), 0 (the runtime's choice) on a CPU device, where PoCL picks
 * better. */
size_t phys_local_size(const ocl_ctx *ctx, size_t gpu_ls);

/* ---- buffers and launches ------------------------------------------------ */

/* A buffer of `bytes` (16 when 0: kernels still take it as an argument),
 * filled from host when host != NULL and bytes > 0. */
int phys_buffer(ocl_ctx *ctx, cl_mem *b, cl_mem_flags flags, size_t bytes, const void *host,
                const char *what, cls_error *err);
/* Releases every non-NULL buffer of the list and zeroes it. */
void phys_release(cl_mem *const *bufs, size_t n);
int phys_read(ocl_ctx *ctx, cl_mem b, size_t bytes, void *dst, const char *what, cls_error *err);
int phys_write(ocl_ctx *ctx, cl_mem b, size_t bytes, const void *src, const char *what,
               cls_error *err);
/* Enqueues k over n work-items, rounded up to a multiple of ls (ls 0: the
 * runtime's choice); n = 0 enqueues nothing. ev may be NULL. */
int phys_launch(ocl_ctx *ctx, cl_kernel k, const char *name, size_t n, size_t ls, cl_event *ev,
                cls_error *err);
int phys_finish(ocl_ctx *ctx, const char *what, cls_error *err);

/* Sets argument i of kernel k from a variable: returns from the enclosing
 * function with CLS_EOTHER on failure (err must be in scope). */
#define PHYS_ARG(k, i, v)                                                                          \
    do {                                                                                           \
        cl_int phys_arg_st_ = clSetKernelArg((k), (cl_uint)(i), sizeof(v), &(v));                  \
        if (phys_arg_st_ != CL_SUCCESS)                                                            \
            return cls_fail(err, CLS_EOTHER, "clSetKernelArg(%s, %d) failed: %s (%d)", #k,         \
                            (int)(i), ocl_errstr(phys_arg_st_), (int)phys_arg_st_);                \
    } while (0)

/* ---- timing -------------------------------------------------------------- */

/* Named durations in the order they were first added; the JSON "times". */
typedef struct phys_times {
    int n;
    struct {
        char name[32];
        double v;
    } t[24];
} phys_times;

void phys_times_init(phys_times *t);
/* Adds v to the entry `name` (created on first use; ignored beyond 24). */
void phys_times_add(phys_times *t, const char *name, double v);
struct json_t *phys_times_json(const phys_times *t);

/* ---- the JSON report ------------------------------------------------------- */

/* {"kind": kind} to be filled by the driver. */
struct json_t *phys_report_new(const char *kind);
/* Adds "error", "exit_code" and, for a parse error, "line". */
void phys_report_fail(struct json_t *o, int rc, const cls_error *err);
/* A job's result: the report (consumed) plus "files" (consumed; NULL: []),
 * as compact JSON text into *result_json (malloc'ed). */
int phys_report_result(struct json_t *o, struct json_t *files, char **result_json, cls_error *err);

/* ---- output files -------------------------------------------------------- */

typedef enum {
    PHYS_FMT_NONE = 0,
    PHYS_FMT_OBJ = 1 << 0, /* Wavefront OBJ */
    PHYS_FMT_PLY = 1 << 1, /* ASCII PLY */
    PHYS_FMT_VTK = 1 << 2, /* legacy VTK POLYDATA, one file per frame */
    PHYS_FMT_PVD = 1 << 3, /* VTK frames plus a ParaView collection */
    PHYS_FMT_CSV = 1 << 4,
    PHYS_FMT_MTX = 1 << 5 /* Matrix Market array */
} phys_format;

const char *phys_format_name(phys_format f); /* "obj", "ply", ... */
/* The format of a name ("obj", "vtk", ...: job options), PHYS_FMT_NONE if
 * unknown. */
phys_format phys_format_parse(const char *name);
/* The format chosen by the extension of path (case-insensitive). A missing
 * or unknown extension, or one outside `allowed` (a mask of phys_format),
 * is CLS_EUSAGE: "PATH: unknown output extension '.x' (KIND writes .a, .b)". */
int phys_format_of_path(const char *path, unsigned allowed, const char *kind, phys_format *f,
                        cls_error *err);

/* A whole file into *buf (malloc'ed, *len bytes, not terminated). A file
 * that cannot be opened or read is an I/O failure (CLS_EOTHER), as for the
 * mesh and Matrix Market readers; only what the file holds can be bad
 * input. */
int phys_read_file(const char *path, char **buf, size_t *len, cls_error *err);

/* Whether a double lies beyond the range of float, what every kernel
 * computes in (NaN too): such an input would reach the device as inf. */
static inline int phys_beyond_float(double x)
{
    return !(fabs(x) <= FLT_MAX);
}

/* The last line of defence of every writer: a file that would hold NaN
 * or inf is not written. CLS_EBREAKDOWN "PATH: not written: WHAT of item
 * I is not finite" when one of the count * ncomp values is not finite
 * (the drivers check their states first and name the step; this catches
 * what they miss). */
int phys_refuse_nonfinite(const char *path, const char *what, const double *v, int64_t count,
                          int ncomp, cls_error *err);

/* Atomic output: writes go to PATH.tmp, renamed onto PATH on commit (a
 * failed write leaves no partial file under the final name). */
typedef struct phys_file {
    FILE *f;
    char path[4096], tmp[4110];
} phys_file;

int phys_file_open(phys_file *pf, const char *path, cls_error *err);
int phys_file_commit(phys_file *pf, cls_error *err);
void phys_file_abort(phys_file *pf);

/* ---- frame sequences --------------------------------------------------------- */

/* One output of a run: a single file, or a sequence of frames
 * BASE_NNNNNN.EXT (NNNNNN the step or frame number) plus, for .pvd, the
 * collection BASE.pvd listing the VTK frames with their times. */
typedef struct phys_frames {
    phys_format fmt; /* as chosen by -o; PVD writes VTK frames */
    int sequence;    /* 1: numbered frames; 0: the one file `path` */
    char path[4096]; /* as given */
    char base[4096]; /* path without its extension */
    int64_t count;   /* frames written */
    int64_t cap;
    double *time; /* per frame */
    char **name;  /* per frame, the file name without directories */
} phys_frames;

int phys_frames_init(phys_frames *s, const char *path, phys_format fmt, int sequence,
                     cls_error *err);
/* The file format frames are written in (VTK for PVD). */
phys_format phys_frames_file_format(const phys_frames *s);
/* The path of frame `number` into buf. */
int phys_frames_path(const phys_frames *s, int64_t number, char *buf, size_t cap, cls_error *err);
/* Records a frame written at `path` (its time for the .pvd). */
int phys_frames_added(phys_frames *s, const char *path, double time, cls_error *err);
/* Writes the .pvd collection (PVD only; temp file and rename). */
int phys_frames_finish(phys_frames *s, cls_error *err);
/* {"path", "format", "frames", "files": [names], "collection"}. */
struct json_t *phys_frames_json(const phys_frames *s);
/* Appends the file names (and the collection) to a job's "files" list;
 * phys_output_files does the same from a phys_frames_json object (NULL:
 * nothing). */
void phys_frames_list_files(const phys_frames *s, struct json_t *files);
void phys_output_files(struct json_t *output, struct json_t *files);
void phys_frames_free(phys_frames *s);

#endif
