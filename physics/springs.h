/*
 * springs.h: position-based mass-spring bodies (Campa 2010, after Jakobsen
 * 2001), with the constraints that keep a body's shape (bending springs,
 * shape matching after Mueller et al. 2005), per-vertex mass, colliders
 * with friction, on an OpenCL device and as a CPU double reference.
 *
 * The model
 *   - particles: position x, previous position x_prev, mass m and inverse
 *     mass w = 1/m (w = 0: pinned, never moves);
 *   - springs: (i, j, rest, k), k the per-spring stiffness in [0, 1]:
 *     proximity springs (Campa's rule), and bending springs across every
 *     interior edge (between the two vertices opposite it) with stiffness
 *     `bend`;
 *   - one step: Verlet for every free particle,
 *         x' = (2 - d) x - (1 - d) x_prev + a dt^2,  x_prev' = x,
 *     a = (0, -gravity, 0); then `iterations` sweeps, each:
 *       1. every spring once, colour by colour:
 *            D = x_j - x_i,  diff = (|D| - rest) / |D|,  c = S k diff D,
 *            x_i += w_i / (w_i + w_j) c,   x_j -= w_j / (w_i + w_j) c
 *          (|D| = 0 or both ends pinned: skipped);
 *          or, with the Jacobi projection, every spring at once from the
 *          positions the sweep starts from, each free particle moved by
 *          the mean of its springs' corrections times omega:
 *            x_i += omega / n_i  sum_{springs (i,j)} w_i / (w_i + w_j) c_ij
 *          (n_i the springs at i; Macklin, Mueller, Chentanez and Kim 2014,
 *          "Unified particle physics for real-time applications", sec. 4.2).
 *          Gauss-Seidel is the thesis's order and the default; its
 *          colours are dependent rounds (as many as the largest degree),
 *          which a GPU runs in one work-group. Jacobi has no order, so a
 *          sweep is one launch over the whole device, at the price of a
 *          weaker sweep (a correction reaches a neighbour one sweep
 *          later, and the mean damps it): it needs more sweeps for the
 *          same strain (docs/benchmarks.md measures how many). Chebyshev
 *          acceleration (rho > 0, Wang 2015) extrapolates each sweep's
 *          result from the iterate before: q^(k+1) = w_k (y - q^(k-1)) +
 *          q^(k-1);
 *       2. shape matching (shape = alpha > 0): c = sum m x / M,
 *          A = sum m (x - c) q^T with q = x0 - c0 the rest offsets, R the
 *          rotation of A (Mueller et al. 2016's quaternion iteration, warm
 *          started from the last step's), every free particle
 *          x += alpha (R q + c - x);
 *       3. colliders (the floor, planes, spheres, boxes, all solid): a
 *          free particle inside one is moved to its surface along the
 *          contact normal n by the depth d; with friction mu the
 *          tangential part t of this step's motion x - x_prev is removed
 *          (|t| <= mu d: sticks) or shortened by mu d (slides).
 *   - springs are partitioned into matchings and stored colour by colour:
 *     within a colour no two springs share a particle, so they can be
 *     projected in parallel with no race, and the result equals the
 *     sequential sweep in the same colour order. The colouring is greedy
 *     over the springs in a fixed pseudo-random order (which reaches the
 *     max-degree lower bound or one above on the thesis's models, where
 *     (i, j) order needs 20% more), then balanced: springs move from
 *     colours above the mean size to smaller colours free at both ends.
 */
#ifndef CLS_PHYSICS_SPRINGS_H
#define CLS_PHYSICS_SPRINGS_H

#include <stdint.h>

#include "../common/error.h"
#include "../kernels/ocl.h"
#include "mesh.h"

#define SPRINGS_MAX_COLLIDERS 8

typedef enum { SPRINGS_PLANE = 0, SPRINGS_SPHERE = 1, SPRINGS_BOX = 2 } springs_collider_type;

typedef struct springs_collider {
    springs_collider_type type;
    /* plane: a point (a[0..2]) and the unit normal (a[3..5]) pointing out of
     * the solid half space; sphere: centre and radius (a[3]); box: min
     * corner and max corner */
    double a[6];
} springs_collider;

/* How a sweep projects the springs (see the model above). */
typedef enum {
    SPRINGS_PROJECT_GAUSS_SEIDEL = 0, /* colour by colour, each colour sees the last (default) */
    SPRINGS_PROJECT_JACOBI            /* all at once from the sweep's start, averaged, relaxed */
} springs_projection;

const char *springs_projection_name(springs_projection p);
/* "gauss-seidel" or "jacobi" into *p; -1 for anything else. */
int springs_projection_parse(const char *s, springs_projection *p);

typedef struct springs_params {
    double S;       /* global stiffness in (0, 1] */
    double d;       /* Verlet damping in [0, 1) */
    double dt;      /* time step */
    double gravity; /* acceleration along -y */
    int iterations; /* sweeps per step */
    springs_projection projection;
    double omega;   /* Jacobi relaxation, omega S < 2; 0 (default): SPRINGS_OMEGA_AUTO / S */
    double rho;     /* Jacobi: Chebyshev acceleration's spectral radius in [0, 1); 0 off */
    int rho_delay;  /* Jacobi: plain sweeps of a step before the acceleration (default 1) */
    int floor_on;   /* the plane y = floor_y, normal +y, among the colliders */
    double floor_y;
    double shape;    /* shape-matching stiffness alpha in [0, 1]; 0: off */
    double friction; /* mu >= 0 at every collider */
    int ncolliders;
    springs_collider colliders[SPRINGS_MAX_COLLIDERS];
} springs_params;

void springs_params_default(springs_params *p);
/* The colliders a step uses: the floor (when on) first, then p's list;
 * returns their number. */
int springs_colliders(const springs_params *p, springs_collider *out);

/* The Jacobi relaxation when none is given: 1.75 / S, 7/8 of the
 * stability bound omega S < 2; a sweep's effect grows about with omega
 * (measured on the Cochino-sized body: omega 3.5 at S = 0.5 kept the
 * body best of 1, 2, 3, 3.5). */
#define SPRINGS_OMEGA_AUTO 1.75
double springs_jacobi_omega(const springs_params *p);

/* The Chebyshev semi-iterative weight of Jacobi sweep k (0-based) of a
 * step (Wang 2015, "A Chebyshev semi-iterative approach for accelerating
 * projective and position-based dynamics"): 1 before rho_delay (and
 * without rho), 2 / (2 - rho^2) at it, then 4 / (4 - rho^2 w_(k-1)); the
 * sweep's result is w (y - q^(k-1)) + q^(k-1). prev is w_(k-1). */
double springs_chebyshev_weight(const springs_params *p, int k, double prev);

typedef struct springs_model {
    int64_t np, ns;
    double *x, *xprev;  /* 3 * np */
    double *x0;         /* 3 * np rest positions (shape matching) */
    double *w;          /* np inverse masses, 0 = pinned */
    double *m;          /* np masses (pinned particles keep theirs) */
    int32_t *ij;        /* 2 * ns particle pairs, in colour order once coloured */
    double *rest, *k;   /* ns */
    int64_t nbend;      /* bending springs among them */
    int ncolors;        /* 0 until springs_color */
    double *jacobi;     /* 7 * np scratch of the Jacobi sweep (springs_color sizes it) */
    int64_t *color_off; /* ncolors + 1 offsets into the springs */
    int max_degree;
    double q[4]; /* shape matching: the last rotation, a unit quaternion (w, x, y, z) */
} springs_model;

void springs_model_init(springs_model *s);
void springs_model_free(springs_model *s);
int springs_model_copy(const springs_model *a, springs_model *b, cls_error *err);

/* Particles at the mesh vertices (at rest, unit mass) and a spring between
 * i and j whenever min_dist <= |x_i - x_j| <= max_dist (k_i + k_j) / 2,
 * k_v the red channel of the vertex colour (1 without colours); rest = the
 * initial distance, k = (k_i + k_j) / 2. A uniform cell list makes this
 * O(n * neighbours), not O(n^2). Springs come out ordered by (i, j). */
int springs_from_mesh_proximity(const mesh *m, double min_dist, double max_dist, springs_model *s,
                                cls_error *err);

/* Same particles, one spring per distinct triangle edge of length >= min_dist. */
int springs_from_mesh_edges(const mesh *m, double min_dist, springs_model *s, cls_error *err);

/* Adds a bending spring of stiffness k between the two vertices opposite
 * every edge shared by two triangles, unless the pair is joined already
 * or nearer than min_dist; before colouring. */
int springs_add_bending(springs_model *s, const mesh *m, double k, double min_dist, cls_error *err);

/* Masses: "uniform" (all 1) or by the lumped vertex area (a third of the
 * incident triangles' areas), scaled so the mean mass is 1; then
 * everything times total / np when total > 0. Pinned particles stay
 * pinned. */
int springs_set_mass(springs_model *s, const mesh *m, int by_area, double total, cls_error *err);

/* The N x N unit grid (spacing 1) in the x-z plane at y = 0, vertex r*N + c
 * at (c, 0, r), two triangles per cell. */
int springs_grid_mesh(int n, mesh *m, cls_error *err);

/* Greedy edge colouring into matchings (pseudo-random spring order, then
 * balanced; deterministic); reorders the springs colour by colour and sets
 * ncolors, color_off, max_degree. */
int springs_color(springs_model *s, cls_error *err);

/* Pins particle i (w = 0). */
int springs_pin(springs_model *s, int64_t i, cls_error *err);
/* Pins every particle inside the box [lo, hi]; returns how many in *n. */
void springs_pin_box(springs_model *s, const double lo[3], const double hi[3], int64_t *n);
/* Gives every free particle the initial velocity v (x_prev = x - v dt). */
void springs_set_velocity(springs_model *s, const double v[3], double dt);

/* One step of the CPU double reference (Gauss-Seidel: sequential, in
 * colour order; Jacobi: in spring order; after springs_color). */
void springs_step_ref(springs_model *s, const springs_params *p);

/* The rotation of the 3x3 matrix A (row-major) as a unit quaternion q
 * (w, x, y, z), refined from the q given (Mueller et al. 2016); what both
 * the reference and the kernel compute. */
void springs_rotation_of(const double A[9], double q[4]);

/* Energy and strain of the current state: kinetic sum 1/2 m |v|^2 with
 * v = (x - x_prev) / dt, potential sum m g y, the springs' elastic measure
 * 1/2 sum k (|D| - rest)^2 (position-based springs have no physical
 * stiffness: k is dimensionless, the measure is in length^2), the strain
 * |D| / rest - 1 (largest magnitude and root mean square), the body's
 * height (max y - min y) and lowest point, and its shape error: the RMS
 * distance from the best rigid placement of the rest shape over the rest
 * bounding-box diagonal (0: the shape is kept exactly, however the body
 * moved or turned; a body that tips over changes its height, not this). */
typedef struct springs_energy {
    double kinetic, potential, elastic, max_strain, rms_strain, height, min_y, shape_error;
} springs_energy;

void springs_measure(const springs_model *s, const springs_params *p, springs_energy *e);

/* ---- device -------------------------------------------------------------- */

typedef enum {
    SPRINGS_LAUNCH_AUTO = 0,  /* time both below on a few batches of steps, keep the faster */
    SPRINGS_LAUNCH_COLOR,     /* one launch per colour (and per shape/collider pass) */
    SPRINGS_LAUNCH_WORKGROUP, /* one work-group looping over colours with barriers,
                                 several steps per launch */
    SPRINGS_LAUNCH_JACOBI     /* the Jacobi projection: one launch per sweep, a team of
                                 work-items per particle (its own plan, not timed by AUTO) */
} springs_launch;

const char *springs_launch_name(springs_launch l);

typedef struct springs_gpu springs_gpu;

/* Uploads the model (as float) and builds the kernels. */
int springs_gpu_create(ocl_ctx *ctx, const springs_model *s, springs_launch mode, springs_gpu **out,
                       cls_error *err);
/* Runs nsteps steps; in AUTO mode the first call picks the mode (timing a
 * few steps of each from the current state, which is then restored). A
 * state that stops being finite fails with CLS_EBREAKDOWN naming the
 * first step whose end state was not finite (steps counted from the
 * state the body was created with). */
int springs_gpu_run(springs_gpu *g, const springs_params *p, int64_t nsteps, cls_error *err);
/* Before timing: AUTO's choice, or one step of the forced plan, undone. */
int springs_gpu_warm(springs_gpu *g, const springs_params *p, cls_error *err);
/* The launch mode in use (AUTO until the first run decides). */
springs_launch springs_gpu_mode(const springs_gpu *g);
/* 1 when built with CLSOLVE_SPRINGS_FENCE=local (a diagnostic, see
 * kernels/springs.cl). */
int springs_gpu_fence_local(const springs_gpu *g);
/* Work-group size of the mode in use. */
size_t springs_gpu_wg_size(const springs_gpu *g);
/* Copies positions and previous positions back into s (as doubles). */
int springs_gpu_download(springs_gpu *g, springs_model *s, cls_error *err);
void springs_gpu_free(springs_gpu *g);

/* ---- the whole job (CLI and daemon) --------------------------------------- */

typedef struct springs_options {
    const char *mesh_path;     /* NULL: grid */
    int grid;                  /* N for the N x N grid when mesh_path is NULL */
    double min_dist, max_dist; /* NAN: defaults (grid 0.5 / 6.5; mesh 1e-6 of the
                                  bounding-box diagonal / 3 mean edge lengths) */
    int edges;                 /* springs from mesh edges only */
    double bend;               /* bending springs' stiffness; NAN: default (mesh 1, grid 0) */
    springs_params params;     /* params.shape NAN: default (mesh 0.2, grid 0) */
    int64_t steps;
    int64_t *pins;
    int npins;
    int pin_box_on;
    double pin_box[6];
    int mass_by_area;
    double total_mass;                     /* > 0: masses scaled to sum to it */
    double scale, rotate[4], translate[3]; /* rotate: axis (3) and degrees */
    double velocity[3];
    springs_launch launch;
    int cpu; /* also run the CPU reference: time and difference */
    const char *device;
    const char *out_path; /* NULL: none; .obj, .ply, .vtk or .pvd */
    int64_t every;        /* > 0: a frame every `every` steps (and the first and last) */
    int64_t energy_every; /* record energy and strain every this many steps; 0: off */
} springs_options;

void springs_options_default(springs_options *o);

typedef struct springs_report {
    int64_t particles, springs, bending, pinned;
    int colors, max_degree;
    double min_dist, max_dist, mean_edge;
    double bend, shape;
    double build_s; /* mesh read, springs, colouring */
    double gpu_ms_per_step;
    double cpu_ms_per_step; /* NAN without --cpu */
    double max_diff;        /* max |x_gpu - x_cpu| with --cpu, else NAN */
    double extent;          /* bounding-box diagonal of the initial particles */
    springs_energy e0, e1;  /* at the start and the end */
    springs_launch launch;
    size_t wg_size;
    int fence_local; /* the diagnostic build (CLSOLVE_SPRINGS_FENCE=local) */
    ocl_device device;
    struct json_t *series; /* energy and strain every energy_every steps */
    struct json_t *output; /* phys_frames_json of the output, or NULL */
    int64_t frames;
} springs_report;

int springs_run(const springs_options *o, springs_report *r, cls_error *err);
void springs_report_free(springs_report *r);

/* The report as a JSON object text (malloc'ed; free()): what `clsolve
 * springs --json` prints and a springs job records; and as a jansson
 * object (the caller's). */
char *springs_report_json(const springs_options *o, const springs_report *r);
struct json_t *springs_report_object(const springs_options *o, const springs_report *r);

#endif
