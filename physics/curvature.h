/*
 * curvature.h: the per-vertex curvature tensor of a triangle mesh on its
 * 1-ring (Rusinkiewicz 2004, "Estimating curvatures and their derivatives
 * on triangle meshes"; the GPU setting of Camillo 2018), two estimators:
 *
 *   CURV_FACE   per face: vertex normals (face normals with Max's weights), the
 *               face's second fundamental form by least squares over its
 *               three edges (dn_e = II e), rotated into each corner's vertex
 *               frame and averaged with the corner areas of Camillo's
 *               Pseudocode 3.2 (Rusinkiewicz: Voronoi areas, obtuse
 *               triangles split by the perpendicular bisectors), then
 *               diagonalised.
 *   CURV_VERTEX per vertex: the same least-squares system set up directly
 *               over the 1-ring edges (x_j - x_i, n_j - n_i) in the vertex
 *               frame (Costa and Wu 2012, the variant Camillo implements).
 *
 * Both run as gathers over CSR adjacency (vertex -> incident faces, vertex
 * -> 1-ring neighbours), one vertex at a time: the CPU double reference
 * here and the OpenCL kernels in kernels/curvature.cl (one work-item per
 * vertex) do the same arithmetic in the same order, deterministically and
 * without atomics.
 *
 * Sign convention: normals follow the triangle winding (counter-clockwise
 * seen from outside is outward), and the shape operator is dn/dx, so a
 * sphere with outward normals has k1 = k2 = +1/R and H = +1/R. k1 >= k2
 * (algebraically); dir1, dir2 are the unit principal directions of k1, k2
 * with dir2 = n x dir1; H = (k1 + k2) / 2, K = k1 k2. A vertex with no
 * incident face, a zero normal or a singular system gets all zeros.
 */
#ifndef CLS_PHYSICS_CURVATURE_H
#define CLS_PHYSICS_CURVATURE_H

#include <stdint.h>

#include "../common/error.h"
#include "../kernels/ocl.h"
#include "mesh.h"

typedef enum { CURV_FACE = 0, CURV_VERTEX = 1 } curv_estimator;

const char *curv_estimator_name(curv_estimator e); /* "face", "vertex" */
/* Returns 0 and sets *e for "face" or "vertex", -1 otherwise. */
int curv_estimator_parse(const char *s, curv_estimator *e);

/* CSR adjacency: incident faces of vertex i are vf_idx[vf_ptr[i] ..
 * vf_ptr[i+1]) in ascending face order; its 1-ring neighbours are
 * vv_idx[vv_ptr[i] .. vv_ptr[i+1]), ascending and without repeats. 32-bit
 * throughout (the device kernels index with int); meshes with 3 * faces or
 * the neighbour count beyond 2^31 - 1 are refused. */
typedef struct curv_adjacency {
    int64_t nverts, nfaces;
    int32_t *vf_ptr, *vf_idx;
    int32_t *vv_ptr, *vv_idx;
} curv_adjacency;

/* Also checks every vertex index (CLS_EINPUT when out of range). */
int curv_adjacency_build(const mesh *m, curv_adjacency *adj, cls_error *err);
void curv_adjacency_free(curv_adjacency *adj);

/* Per-vertex output, all arrays of nverts (x3 for vectors). */
typedef struct curv_result {
    int64_t nverts;
    double *k1, *k2, *H, *K;
    double *dir1, *dir2, *normal; /* 3 * nverts */
} curv_result;

int curv_result_alloc(curv_result *res, int64_t nverts, cls_error *err);
void curv_result_free(curv_result *res);

/* CPU double reference, in two passes so that a caller may split each pass
 * over threads by vertex range [v0, v1): first every vertex normal
 * (normals: 3 * nverts), then the tensors, which read the normals of the
 * whole 1-ring. Results for a vertex do not depend on the split. */
void curv_ref_normals(const mesh *m, const curv_adjacency *adj, double *normals, int64_t v0,
                      int64_t v1);
void curv_ref_tensors(const mesh *m, const curv_adjacency *adj, curv_estimator est,
                      const double *normals, curv_result *res, int64_t v0, int64_t v1);
/* Both passes over all vertices into res (allocated by the caller). */
void curv_reference(const mesh *m, const curv_adjacency *adj, curv_estimator est, curv_result *res);

/* The device side: buffers for one mesh on one device, kernels built once,
 * then any number of estimates. Positions go up as two floats (hi, lo) so
 * that edges keep float accuracy (see kernels/curvature.cl). */
typedef struct curv_gpu {
    ocl_ctx *ctx;
    cl_program prog;
    cl_kernel k_normals, k_face, k_vertex;
    cl_mem pos, pos_lo, tri, vf_ptr, vf_idx, vv_ptr, vv_idx; /* inputs */
    cl_mem normal, curv, dir1, dir2;                         /* float4 per vertex */
    int64_t nverts, nfaces;
    size_t local_size; /* work-group size used (0: the runtime's choice) */
    double upload_s;   /* host -> device transfer of the mesh and adjacency */
} curv_gpu;

int curv_gpu_setup(curv_gpu *g, ocl_ctx *ctx, const mesh *m, const curv_adjacency *adj,
                   cls_error *err);
/* One full estimate (normals + tensors); waits for it. The kernel time of
 * both launches (profiling events) goes to *kernel_s when not NULL. */
int curv_gpu_run(curv_gpu *g, curv_estimator est, double *kernel_s, cls_error *err);
/* Reads the last estimate back into res (allocated for nverts). */
int curv_gpu_read(curv_gpu *g, curv_result *res, cls_error *err);
void curv_gpu_release(curv_gpu *g);

/* Largest of the relative differences ||a - b|| / ||b|| over k1, k2, H
 * and K (2-norms over all vertices). */
double curv_rel_diff(const curv_result *a, const curv_result *b);

/* The face estimator's corner areas a[3] (Camillo 2018, Pseudocode 3.2
 * and appendix B, after Rusinkiewicz): Meyer et al.'s Voronoi areas when
 * no angle is obtuse; in an obtuse triangle each acute corner gets the
 * right triangle cut off by the perpendicular bisector of its edge to the
 * obtuse corner, the obtuse corner the rest (Meyer's mixed area, which
 * K_defect uses, gives area/4 and area/2 there instead). e_j is the edge
 * opposite corner j, tarea the triangle's area. */
void curv_corner_areas(const double e0[3], const double e1[3], const double e2[3], double tarea,
                       double a[3]);

/* ---- what the geometry says (curvature_check.c) ----------------------------- */

enum {
    CURV_FLAG_USED = 1,       /* some face uses the vertex */
    CURV_FLAG_BOUNDARY = 2,   /* on an edge with one face: one-sided 1-ring */
    CURV_FLAG_NONMANIFOLD = 4 /* on an edge with three or more faces */
};

typedef struct curv_topology {
    int64_t vertices, edges, faces; /* those faces use; faces (polygons) without repeated corners */
    int64_t euler;                  /* chi = V - E + F */
    int64_t surface_vertices;       /* fans: a vertex where k sheets touch counts k times */
    int64_t surface_euler;          /* chi of that surface, what Gauss-Bonnet meets */
    int64_t boundary_edges, boundary_vertices, nonmanifold_edges, nonmanifold_vertices;
    int closed; /* no boundary, manifold edges, some faces */
} curv_topology;

/* Counts the topology of the faces as the file gave them (m's polygons,
 * else its triangles; a face repeating a vertex counts by its triangles
 * that do not) and sets flag[i] (nverts bytes, BOUNDARY and NONMANIFOLD;
 * call curv_flag_used for USED) and base[i] = 2 pi per closed fan + pi per
 * open fan (0 for an unused vertex). */
int curv_topology_build(const mesh *m, unsigned char *flag, double *base, curv_topology *t,
                        cls_error *err);
void curv_flag_used(const curv_adjacency *adj, unsigned char *flag);
/* Angle defect d_i = base_i - the corner angles at i, and Meyer et al.'s
 * mixed area A_i (2003: Voronoi, or for an obtuse triangle half its area
 * to the obtuse corner and a quarter to the others), per vertex: K_defect
 * = d_i / A_i. */
void curv_angle_defect(const mesh *m, const unsigned char *flag, const double *base, double *defect,
                       double *area);
/* The discrete Gauss-Bonnet check: {"euler_characteristic",
 * "expected_over_2pi", "angle_defect_over_2pi", "angle_defect_rel_error",
 * "holds", "area", "estimator_over_2pi", "estimator_rel_error"} (the
 * estimator's sum K_i A_i on a closed mesh, else null). Relative errors
 * are over 2 pi max(|chi|, 1); *holds: manifold and the angle-defect error
 * within 1e-6. res may be NULL. */
struct json_t;
struct json_t *curv_gauss_bonnet(const mesh *m, const curv_topology *t, const unsigned char *flag,
                                 const double *defect, const double *area, const curv_result *res,
                                 int *holds);
struct json_t *curv_topology_json(const curv_topology *t);

/* ---- test meshes (curvature_mesh.c) ------------------------------------------- */

/* saddle: k x k vertices on [-a, a]^2 lifted to z = x^2 - y^2, 2 (k-1)^2
 * triangles wound counter-clockwise seen from +z (normals point up), each
 * grid square split along the same diagonal. icosphere: the icosahedron
 * subdivided `level` times (20 * 4^level faces), every vertex on the
 * sphere of radius R, outward winding. torus: nu x nv vertices, tube radius
 * r around a circle of radius R in the x-y plane, outward. irregular
 * sphere: the icosphere with every vertex slid by up to jitter times the
 * mean edge length in each coordinate and put back on the sphere (the
 * uneven triangles of a scan, exact positions). */
int curv_mesh_saddle(int k, double a, mesh *m, cls_error *err);
int curv_mesh_icosphere(int level, double R, mesh *m, cls_error *err);
int curv_mesh_torus(int nu, int nv, double R, double r, mesh *m, cls_error *err);
int curv_mesh_sphere_irregular(int level, double R, double jitter, uint64_t seed, mesh *m,
                               cls_error *err);

/* Analytic values for the saddle z = x^2 - y^2 with the upward normal,
 * in the convention above: H = 4 (x^2 - y^2) / W^3, K = -4 / W^4,
 * W = sqrt(1 + 4 x^2 + 4 y^2). */
void curv_saddle_exact(double x, double y, double *H, double *K);
/* The torus's, outward normals, at a point p on it (tube angle v from p):
 * K = cos v / (r (R + r cos v)), H = (R + 2 r cos v) / (2 r (R + r cos v)). */
void curv_torus_exact(double R, double r, const double p[3], double *H, double *K);

/* ---- writers and the run (curvature_run.c) ------------------------------------- */

/* Writers: CSV (vertex, x, y, z, k1, k2, H, K, d1x..d1z, d2x..d2z,
 * nx..nz), and the mesh formats (PLY, VTK) with the values as vertex
 * properties / point data. Both via a temporary file and rename. */
int curv_write_csv(const char *path, const mesh *m, const curv_result *res, cls_error *err);
int curv_write_ply(const char *path, const mesh *m, const curv_result *res, cls_error *err);

typedef struct curv_run_opts {
    const char *mesh_path; /* NULL: the saddle */
    int saddle_k;
    curv_estimator est;
    const char *device;
    int check;            /* also the CPU double reference */
    const char *out_path; /* NULL: none; the format from its extension (.csv, .ply, .vtk) */
    const char *color_by; /* the coloured value: "H" (NULL), "K", "k1", "k2", "K_defect" */
    double color_range;   /* colours span [-range, range]; NAN: the 90th percentile of
                             |value| over the interior vertices */
} curv_run_opts;

/* Returns 0 and sets *which (0..4) for a colour-by name, -1 otherwise. */
int curv_color_by_parse(const char *s, int *which);

/* The whole run on one mesh, shared by the `curvature` job and `clsolve
 * curvature`: read (or generate the saddle), adjacency and topology,
 * estimate on the device (a warm-up run, then a timed one), the angle
 * defect and Gauss-Bonnet check, with check != 0 the CPU double reference,
 * write out_path. *summary always gets a JSON object (also on failure:
 * "error", "exit_code"), the caller's to json_decref. */
int curv_run_local(const curv_run_opts *o, struct json_t **summary, cls_error *err);

#endif
