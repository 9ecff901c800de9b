/*
 * deform.h: model-reduction deformers, u = U q and the vertex update
 * (after Wang 2015, "CUDA Deformers for Model Reduction").
 *
 * A model is one or more domains. Domain d owns n_d consecutive vertices
 * (vertex v0_d .. v0_d + n_d - 1 of the whole object), a basis U_d of
 * 3 n_d x r_d (rows x, y, z per vertex; r_d = 0 allowed: a rigid domain)
 * and, per frame, reduced coordinates q_d (r_d) and a rigid transform
 * T_d = (R_d, p_d). Globally U is block diagonal, 3n x R with R = sum r_d,
 * and q stacks the q_d, so u = U q holds for the whole object and a single
 * domain is the case ndomains = 1.
 *
 * Storage (host and device alike): each U_d column-major with a leading
 * dimension ld_d = 3 n_d rounded up to a multiple of 4 (padding rows are
 * zero), the blocks one after another. Column-major because the device
 * computes one group of 4 consecutive rows per work-item: for every column
 * j, consecutive work-items then read consecutive 16-byte pieces of column
 * j, so each load of a warp is one contiguous 512-byte run, U is read
 * exactly once, no reduction across work-items is needed and any r (not a
 * multiple of 4, or 0) costs nothing extra. (Wang's row-major layout needs a
 * shared-memory reduction per row and idles threads when r is not a
 * multiple of 4.) The packed u uses the same padded rows.
 *
 * Vertex update for an unfolded triangle list (every corner its own
 * vertex, as in Wang 2015 section 3.2.3): corner c of mesh vertex k in
 * domain d gets x = R_d (x0 + u_k) + p_d, n = R_d n0, t = R_d t0, where n0
 * is the rest vertex normal (area-weighted) and t0 the unit rest tangent
 * along the corner's outgoing edge, projected onto the plane normal to n0.
 *
 * The CPU double references (deform_ref_uq, deform_ref_update) read the
 * same float U and compute in double.
 */
#ifndef CLS_PHYSICS_DEFORM_H
#define CLS_PHYSICS_DEFORM_H

#include <stdint.h>

#include "../common/error.h"
#include "../kernels/ocl.h"
#include "mesh.h"

typedef struct deform_model {
    int64_t ndomains;
    int64_t nverts; /* sum of n_d */
    int64_t ncols;  /* R = sum of r_d, the length of the stacked q */
    int64_t *vert0; /* ndomains + 1: first vertex of each domain */
    int64_t *col0;  /* ndomains + 1: first entry of q_d in the stacked q */
    int64_t *row0;  /* ndomains + 1: first row of the domain in the packed u */
    int64_t *Uoff;  /* ndomains: first float of U_d in U */
    int32_t *r;     /* ndomains */
    int64_t ulen;   /* packed u length = row0[ndomains] (a multiple of 4) */
    int64_t Ulen;   /* floats in U */
    float *U;       /* zero-initialised by deform_model_alloc */
} deform_model;

/* Rigid transform: x' = R x + p, R row-major. */
typedef struct deform_xform {
    double R[9];
    double p[3];
} deform_xform;

void deform_xform_identity(deform_xform *T);

/* nv[d] vertices and r[d] modes per domain (nv[d] >= 1, r[d] >= 0). */
int deform_model_alloc(deform_model *M, int64_t ndomains, const int64_t *nv, const int32_t *r,
                       cls_error *err);
void deform_model_free(deform_model *M);
/* Address of U_d(row, col), row < 3 n_d, col < r_d. */
static inline float *deform_U_at(const deform_model *M, int64_t d, int64_t row, int64_t col)
{
    return M->U + M->Uoff[d] + col * (M->row0[d + 1] - M->row0[d]) + row;
}
/* Domain of a vertex (binary search over vert0). */
int64_t deform_domain_of(const deform_model *M, int64_t vertex);

/* u (3 nverts, natural order: vertex-major x, y, z) = U q, q stacked (ncols),
 * in double. */
void deform_ref_uq(const deform_model *M, const double *q, double *u);
/* Packed (padded) u -> natural order. */
void deform_unpack(const deform_model *M, const float *packed, double *u);

/* The unfolded triangle list of a mesh whose vertices are the model's. */
typedef struct deform_unfolded {
    int64_t ncorners;     /* 3 * faces */
    int32_t *vertex;      /* mesh vertex of each corner */
    double *x0, *n0, *t0; /* 3 per corner */
} deform_unfolded;

int deform_unfold(const mesh *m, deform_unfolded *uf, cls_error *err);
void deform_unfolded_free(deform_unfolded *uf);
/* x, n, t (3 per corner) of one frame, in double, from u in natural order
 * and one transform per domain. */
void deform_ref_update(const deform_model *M, const deform_unfolded *uf, const double *u,
                       const deform_xform *T, double *x, double *n, double *t);

/* Relative 2-norm difference ||a - b|| / ||b|| (||a - b|| when b = 0). */
double deform_rel_diff(const double *a, const double *b, int64_t n);

/* ------------------------------------------------------------------ device */

typedef struct deform_gpu {
    ocl_ctx *ctx;
    cl_program prog;
    cl_kernel k_single, k_multi, k_update;
    cl_mem U, q, u;                        /* basis, stacked q of one frame, packed u */
    cl_mem quad_dom, dom_info, dom_uoff;   /* multi-domain tables */
    cl_mem corner, x0, n0, t0, T, x, n, t; /* vertex update */
    const deform_model *M;
    int64_t ncorners;
    size_t local_size; /* 0: the runtime's choice */
    double upload_s;
} deform_gpu;

/* uf may be NULL (no vertex update). */
int deform_gpu_setup(deform_gpu *g, ocl_ctx *ctx, const deform_model *M, const deform_unfolded *uf,
                     cls_error *err);
/* Uploads q (ncols, converted to float) and computes u = U q on the device;
 * waits. *kernel_s (may be NULL): the kernel's profiled time. */
int deform_gpu_uq(deform_gpu *g, const double *q, double *kernel_s, cls_error *err);
/* Vertex update from the device u with one transform per domain; waits. */
int deform_gpu_update(deform_gpu *g, const deform_xform *T, double *kernel_s, cls_error *err);
/* u in natural order (3 nverts). */
int deform_gpu_read_u(deform_gpu *g, double *u, cls_error *err);
/* x, n, t: 3 per corner (any may be NULL). */
int deform_gpu_read_vertices(deform_gpu *g, double *x, double *n, double *t, cls_error *err);
void deform_gpu_release(deform_gpu *g);

/* ------------------------------------------------------------------- files */

/* Domains file (text; '#' starts a comment; blank lines ignored):
 *
 *   domains D
 *   domain INDEX NVERTS R          one line per domain, INDEX = 0 .. D-1 in order
 *   transform FRAME INDEX r00 r01 r02 r10 r11 r12 r20 r21 r22 p0 p1 p2
 *
 * Domain INDEX owns the next NVERTS vertices (in mesh / basis order) and
 * R modes (the next R entries of q and columns of U). A transform applies to
 * its domain from frame FRAME on, until a later transform of that domain;
 * before the first one the transform is the identity. R must be a rotation
 * (R^T R = I within 1e-4, det > 0). Errors are CLS_EINPUT "FILE:LINE: ...". */
typedef struct deform_domains {
    int64_t ndomains;
    int64_t *nv;
    int32_t *r;
    int64_t ntransforms;
    int64_t *tf_frame, *tf_domain; /* sorted by frame, file order within a frame */
    deform_xform *tf;
} deform_domains;

int deform_domains_read(const char *path, deform_domains *D, cls_error *err);
int deform_domains_parse(const char *text, size_t len, const char *name, deform_domains *D,
                         cls_error *err);
void deform_domains_free(deform_domains *D);
/* Fills T[ndomains] with the transforms in force at `frame`. */
void deform_domains_transforms(const deform_domains *D, int64_t frame, deform_xform *T);

/* Basis U: Matrix Market (array or coordinate, real or integer), 3n x R,
 * block diagonal over the domains when D is given (an entry outside its
 * domain's block is an input error), or raw little-endian binary chosen by
 * the extension: ".f32" float32, ".f64" float64, holding the blocks U_d one
 * after another, each column-major 3 n_d x r_d (without padding). Raw files
 * carry no sizes: with D the sizes come from it, without D a single domain
 * with `rank` columns (rank > 0 required) and 3n = values / rank rows.
 * D may be NULL (one domain: n = rows / 3, r = columns). */
int deform_read_basis(const char *path, const deform_domains *D, int64_t rank, deform_model *M,
                      cls_error *err);

/* q sequence: Matrix Market array or coordinate R x F (column f = frame f),
 * or raw ".f32"/".f64" holding F frames of R values one after another
 * (F = values / R). *q is malloc'ed, R * F doubles, frame-major. */
int deform_read_q(const char *path, int64_t R, double **q, int64_t *frames, cls_error *err);

/* Writes u frames (3n x F, column f = frame f) as a Matrix Market array
 * ("%.9g": floats round-trip), via a temporary file and rename. */
int deform_write_u(const char *path, const double *u, int64_t rows, int64_t frames,
                   const char *comment, cls_error *err);

/* The whole run, shared by `clsolve deform` and the `deform` job: basis
 * and q from files or (q_inline != NULL) from memory, optional mesh and
 * domains; each frame computed on `device`; u written to out_u, the
 * unfolded vertices (CSV: frame, corner, vertex, domain, x, y, z, nx, ny,
 * nz, tx, ty, tz) to out_unfolded when given, and with a mesh the deformed
 * mesh of every frame to out_mesh (.obj, .ply, .vtk or .pvd by its
 * extension; several frames make a sequence OUT_000000.EXT ..., one frame
 * the file itself; .pvd always a sequence of VTK files and the
 * collection): positions x_v = R_d (x0_v + u_v) + p_d, the mesh's UVs, and
 * normals recomputed from the deformed positions. check != 0 compares
 * every frame with the CPU double reference. *summary: the JSON record
 * (always set, also on failure), the caller's to json_decref. */
typedef struct deform_run_opts {
    const char *basis, *q, *mesh, *domains, *device;
    const double *q_inline; /* instead of q: q_frames frames of q_inline_r values */
    int64_t q_frames, q_inline_r;
    int64_t rank; /* raw basis without domains */
    const char *out_u, *out_unfolded, *out_mesh;
    int check;
} deform_run_opts;

struct json_t;
int deform_run_local(const deform_run_opts *o, struct json_t **summary, cls_error *err);

#endif
