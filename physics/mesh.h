/*
 * mesh.h: triangle meshes for the physics jobs, read from Wavefront OBJ,
 * OFF and ASCII PLY (chosen by content, then by extension), written as OBJ,
 * ASCII PLY and legacy VTK (physics/mesh_write.c).
 *
 * Polygons are triangulated on read (physics/mesh_poly.c: ear clipping,
 * no folded, degenerate or duplicate triangle where one can be avoided)
 * and, when some face is not a triangle, also kept as the file gave them,
 * for what counts faces and edges (the curvature kind's topology).
 * Vertex colours (OBJ "v x y z r g b", PLY red/green/blue, OFF COFF) are
 * kept when present, as floats in [0, 1]. Texture coordinates and normals
 * are kept the way OBJ holds them: arrays of their own, indexed per
 * triangle corner (so a UV seam, where one vertex has two texture
 * coordinates, survives); PLY and NOFF per-vertex attributes are the case
 * where corner index = vertex index.
 * Like the Matrix Market reader, the mesh readers never allocate from a
 * declared count the file does not back, and every error is CLS_EINPUT
 * with "FILE:LINE: what is wrong".
 */
#ifndef CLS_PHYSICS_MESH_H
#define CLS_PHYSICS_MESH_H

#include <stdint.h>

#include "../common/error.h"

typedef struct mesh {
    int64_t nverts, nfaces;
    double *v;    /* 3 * nverts positions */
    float *color; /* 3 * nverts in [0, 1], or NULL */
    int32_t *tri; /* 3 * nfaces vertex indices, 0-based */
    int64_t nuv, nnrm;
    float *uv;       /* 2 * nuv texture coordinates (u, v), or NULL */
    float *nrm;      /* 3 * nnrm normals, or NULL */
    int32_t *tri_uv; /* 3 * nfaces indices into uv (-1: none), NULL without uv */
    int32_t *tri_n;  /* 3 * nfaces indices into nrm (-1: none), NULL without normals */
    /* The faces as the file gave them, kept when some face is not a
     * triangle (npolys 0 and NULL when every face is one: the triangles
     * are the faces): polygon p has the corners poly_v[poly_off[p] ..
     * poly_off[p + 1]), and its k - 2 triangles (k its corners) come next
     * in tri, in polygon order, the first at poly_off[p] - 2 p. */
    int64_t npolys;
    int64_t *poly_off; /* npolys + 1 */
    int32_t *poly_v;
} mesh;

void mesh_init(mesh *m);
void mesh_free(mesh *m);

/* Reads OBJ, OFF or ASCII PLY. */
int mesh_read(const char *path, mesh *m, cls_error *err);

/* Same, from a memory buffer (for HTTP uploads and fuzzing); name is used in
 * messages and, when the content is ambiguous, its extension decides. */
int mesh_read_buf(const char *buf, size_t len, const char *name, mesh *m, cls_error *err);

/* Deep copy of a (read or generated) mesh. */
int mesh_copy(const mesh *a, mesh *b, cls_error *err);

/* vn (3 nverts) = the unit area-weighted vertex normals of the positions
 * (zero at a vertex no face with area touches). */
void mesh_vertex_normals(const mesh *m, double *vn);

/* Replaces the normals by area-weighted vertex normals of the current
 * positions (nnrm = nverts, tri_n = tri): what a moved mesh's normals are. */
int mesh_normals_recompute(mesh *m, cls_error *err);

/* Writes OBJ (positions, colours, texture coordinates, normals, triangles). */
int mesh_write_obj(const char *path, const mesh *m, cls_error *err);

#endif
