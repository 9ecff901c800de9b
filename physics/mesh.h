/*
 * mesh.h: triangle meshes for the physics jobs, read from Wavefront OBJ,
 * OFF and ASCII PLY (chosen by content, then by extension).
 *
 * Polygons are fan-triangulated on read. Vertex colours (OBJ "v x y z r g b",
 * PLY red/green/blue, OFF COFF) are kept when present, as floats in [0, 1].
 * Like the Matrix Market reader, the mesh readers never allocate from a
 * declared count the file does not back, and every error is CLS_EINPUT with
 * "FILE:LINE: what is wrong".
 */
#ifndef CLS_PHYSICS_MESH_H
#define CLS_PHYSICS_MESH_H

#include <stdint.h>

#include "../common/error.h"

typedef struct mesh {
    int64_t nverts, nfaces;
    double *v;     /* 3 * nverts positions */
    float *color;  /* 3 * nverts in [0, 1], or NULL */
    int32_t *tri;  /* 3 * nfaces vertex indices, 0-based */
} mesh;

void mesh_init(mesh *m);
void mesh_free(mesh *m);

/* Reads OBJ, OFF or ASCII PLY. */
int mesh_read(const char *path, mesh *m, cls_error *err);

/* Same, from a memory buffer (for HTTP uploads and fuzzing); name is used in
 * messages and, when the content is ambiguous, its extension decides. */
int mesh_read_buf(const char *buf, size_t len, const char *name, mesh *m, cls_error *err);

/* Writes OBJ (positions and triangles; colours when present). */
int mesh_write_obj(const char *path, const mesh *m, cls_error *err);

#endif
