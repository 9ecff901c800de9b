/*
 * estimate.h: what a physics job will cost before it runs (issue 27,
 * "every job kind bounded"): rank 0's host memory, the device's memory
 * and the bytes of output it writes, from its options and the size of its
 * uploaded input. The daemon's admission (net/admission.h,
 * adm_decide_physics) compares them with the machine and the data
 * directory's free space; the cost model and its numbers are in
 * estimate.c.
 *
 * Two steps, so that the model is a pure function the unit test drives:
 *   physics_estimate_scan   reads an uploaded input once, streaming, and
 *                           counts what it holds (lines, OBJ vertices and
 *                           triangles, a Matrix Market basis's header
 *                           clamped by its text): never a declared count
 *                           beyond what the bytes can back;
 *   physics_estimate_job    the model: kind + options + the counts.
 */
#ifndef CLS_PHYSICS_ESTIMATE_H
#define CLS_PHYSICS_ESTIMATE_H

#include <jansson.h>
#include <stdint.h>

#include "../common/error.h"

/* What an uploaded input holds, as far as the estimate needs it. */
typedef struct physics_input_counts {
    int present;        /* an input was uploaded */
    uint64_t bytes;     /* its size on disk */
    int64_t lines;      /* text lines (a bound on anything one a line) */
    int64_t verts;      /* mesh vertices (OBJ "v"; other formats: lines) */
    int64_t tris;       /* triangles after ear clipping (OBJ "f" with k corners: k - 2) */
    int64_t basis_rows; /* deform's basis: rows and columns (Matrix Market) */
    int64_t basis_cols;
    int64_t basis_entries; /* stored values the basis text or raw file can hold */
} physics_input_counts;

typedef struct physics_estimate {
    int64_t items;         /* bodies, particles or vertices */
    int64_t faces;         /* triangles (meshes); 0 for bodies */
    int64_t springs;       /* springs: the springs expected; 0 otherwise */
    int64_t frames;        /* output files the run writes */
    uint64_t host_bytes;   /* rank 0's peak resident memory, the OpenCL runtime's included */
    uint64_t device_bytes; /* the device's buffers */
    uint64_t output_bytes; /* bytes written into the job's directory (files and the record) */
} physics_estimate;

/* Counts what the input at `path` holds (kind decides how it is read: a
 * mesh, bodies CSV or a basis). CLS_OK, or an error when it cannot be
 * opened (the run would fail the same way). Reads the file once, in 64 KiB
 * blocks; allocates nothing from the file's content. */
int physics_estimate_scan(const char *kind, const char *path, physics_input_counts *in,
                          cls_error *err);

/* The estimate for a job of `kind` with `options` (a JSON object, may be
 * NULL) and input `in` (NULL: none). Options of the wrong type are read as
 * their defaults: the run refuses them anyway. Returns CLS_OK, or
 * CLS_EUSAGE for an unknown kind. Pure. */
int physics_estimate_job(const char *kind, const json_t *options, const physics_input_counts *in,
                         physics_estimate *e, cls_error *err);

#endif
