/*
 * mesh_write.h: meshes and point sets out, in the formats people open
 * (ParaView, MeshLab, Blender, the dashboard viewer): Wavefront OBJ, ASCII
 * PLY and legacy VTK POLYDATA, with per-vertex values beside the geometry.
 *
 * What each format carries:
 *   OBJ  positions, vertex colours (v x y z r g b), texture coordinates
 *        (vt) and normals (vn) with their per-corner indices, triangles;
 *        per-vertex values have no place in OBJ and are left out.
 *   PLY  "format ascii 1.0": vertex x y z (double), nx ny nz, u v (float),
 *        red green blue (uchar), then every value as a double property;
 *        face vertex_indices.
 *   VTK  "# vtk DataFile Version 3.0" ASCII POLYDATA: POINTS, POLYGONS (or
 *        VERTICES for a point set), POINT_DATA with NORMALS,
 *        TEXTURE_COORDINATES, COLOR_SCALARS and one SCALARS (1 component)
 *        or VECTORS (3) array per value.
 * PLY and VTK hold one texture coordinate and one normal per point. Where
 * the mesh has a seam (a vertex whose corners carry different texture
 * coordinates or normals) those two formats split the vertex: one point
 * per distinct (vertex, texture coordinate, normal), values copied, and an
 * int property / SCALARS array "vertex_id" naming the mesh vertex, so
 * nothing is averaged away. Without seams points are the mesh's vertices.
 * Every file is written to PATH.tmp and renamed.
 */
#ifndef CLS_PHYSICS_MESH_WRITE_H
#define CLS_PHYSICS_MESH_WRITE_H

#include "frame.h"
#include "mesh.h"

/* A per-vertex value: ncomp (1 or 3) doubles per mesh vertex. */
typedef struct mesh_field {
    const char *name; /* PLY property / VTK array name: [A-Za-z0-9_] */
    const double *v;
    int ncomp;
} mesh_field;

typedef struct mesh_out {
    const mesh *m;            /* nfaces = 0: a point set */
    const mesh_field *fields; /* may be NULL */
    int nfields;
    const unsigned char *rgb; /* 3 per vertex (0..255): colours instead of m->color */
    const char *title;        /* one line: the OBJ/PLY comment, the VTK title */
} mesh_out;

/* The device kernels take positions as float: a coordinate beyond the
 * float range is CLS_EINPUT "NAME: vertex V: coordinate X is beyond the
 * float range the device computes in (|x| <= 3.40282e+38)". */
int mesh_check_float_range(const mesh *m, const char *name, cls_error *err);

/* Refuses (CLS_EBREAKDOWN, nothing written) a position or a field value
 * that is not finite: see phys_refuse_nonfinite.
 * fmt: PHYS_FMT_OBJ, PHYS_FMT_PLY or PHYS_FMT_VTK. */
int mesh_write(const char *path, phys_format fmt, const mesh_out *o, cls_error *err);

/* Moreland's smooth cool-warm diverging map (Moreland 2009, "Diverging
 * Color Maps for Scientific Visualization"): t in [-1, 1] (clamped) to
 * sRGB, blue for -1, neutral grey for 0, red for +1; perceptually even
 * steps and no false bands, so signed curvature reads right. */
void mesh_colormap_coolwarm(double t, unsigned char rgb[3]);

#endif
