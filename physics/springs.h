/*
 * springs.h: position-based mass-spring bodies (Campa 2010, after Jakobsen
 * 2001): damped Verlet particles and springs projected towards their rest
 * length by relaxation, on an OpenCL device and as a CPU double reference.
 *
 * The model
 *   - particles: position x, previous position x_prev, inverse mass w
 *     (w = 0: pinned, never moves);
 *   - springs: (i, j, rest, k), k the per-spring stiffness in [0, 1];
 *   - one step: Verlet for every free particle,
 *         x' = (2 - d) x - (1 - d) x_prev + a dt^2,  x_prev' = x,
 *     a = (0, -gravity, 0); then `iterations` relaxation sweeps, each
 *     projecting every spring once, colour by colour:
 *         D = x_j - x_i,  diff = (|D| - rest) / |D|,  c = S k diff D,
 *         x_i += w_i / (w_i + w_j) c,   x_j -= w_j / (w_i + w_j) c
 *     (equal masses: the 1/2 S k diff D each; a pinned end gives its
 *     share to the free end, so the spring still removes the fraction S k of
 *     its error; |D| = 0 or both ends pinned: the spring is skipped), and,
 *     when the floor is on, y = max(y, y0) for every free particle at the
 *     end of each sweep.
 *   - springs are partitioned into matchings (greedy edge colouring, at most
 *     2 max_degree - 1 colours, at least max_degree) and stored colour by
 *     colour: within a colour no two springs share a particle, so they can
 *     be projected in parallel with no race, and the result equals the
 *     sequential sweep in the same colour order.
 */
#ifndef CLS_PHYSICS_SPRINGS_H
#define CLS_PHYSICS_SPRINGS_H

#include <stdint.h>

#include "../common/error.h"
#include "../kernels/ocl.h"
#include "mesh.h"

typedef struct springs_params {
    double S;        /* global stiffness in (0, 1] */
    double d;        /* Verlet damping in [0, 1) */
    double dt;       /* time step */
    double gravity;  /* acceleration along -y */
    int iterations;  /* relaxation sweeps per step */
    int floor_on;    /* clamp y >= floor_y inside each sweep */
    double floor_y;
} springs_params;

void springs_params_default(springs_params *p);

typedef struct springs_model {
    int64_t np, ns;
    double *x, *xprev; /* 3 * np */
    double *w;         /* np inverse masses, 0 = pinned */
    int32_t *ij;       /* 2 * ns particle pairs, in colour order once coloured */
    double *rest, *k;  /* ns */
    int ncolors;       /* 0 until springs_color */
    int64_t *color_off; /* ncolors + 1 offsets into the springs */
    int max_degree;
} springs_model;

void springs_model_init(springs_model *s);
void springs_model_free(springs_model *s);

/* Particles at the mesh vertices (at rest, w = 1) and a spring between i
 * and j whenever min_dist <= |x_i - x_j| <= max_dist (k_i + k_j) / 2, k_v
 * the red channel of the vertex colour (1 without colours); rest = the
 * initial distance, k = (k_i + k_j) / 2. A uniform cell list makes this
 * O(n * neighbours), not O(n^2). Springs come out ordered by (i, j). */
int springs_from_mesh_proximity(const mesh *m, double min_dist, double max_dist,
                                springs_model *s, cls_error *err);

/* Same particles, one spring per distinct triangle edge of length >= min_dist. */
int springs_from_mesh_edges(const mesh *m, double min_dist, springs_model *s, cls_error *err);

/* The N x N unit grid (spacing 1) in the x-z plane at y = 0, vertex r*N + c
 * at (c, 0, r), two triangles per cell. */
int springs_grid_mesh(int n, mesh *m, cls_error *err);

/* Greedy edge colouring into matchings; reorders the springs colour by
 * colour (stable within a colour) and sets ncolors, color_off, max_degree. */
int springs_color(springs_model *s, cls_error *err);

/* Pins particle i (w = 0). */
int springs_pin(springs_model *s, int64_t i, cls_error *err);

/* One step of the CPU double reference (sequential, in colour order). */
void springs_step_ref(springs_model *s, const springs_params *p);

/* ---- device -------------------------------------------------------------- */

typedef enum {
    SPRINGS_LAUNCH_AUTO = 0,   /* time both below on a few batches of steps, keep the faster */
    SPRINGS_LAUNCH_COLOR,      /* one launch per colour (and per floor pass) */
    SPRINGS_LAUNCH_WORKGROUP   /* one work-group looping over colours with barriers,
                                  several steps per launch */
} springs_launch;

const char *springs_launch_name(springs_launch l);

typedef struct springs_gpu springs_gpu;

/* Uploads the model (as float) and builds the kernels. */
int springs_gpu_create(ocl_ctx *ctx, const springs_model *s, springs_launch mode,
                       springs_gpu **out, cls_error *err);
/* Runs nsteps steps; in AUTO mode the first call picks the mode (timing a
 * few steps of each from the current state, which is then restored). */
int springs_gpu_run(springs_gpu *g, const springs_params *p, int64_t nsteps, cls_error *err);
/* The launch mode in use (AUTO until the first run decides). */
springs_launch springs_gpu_mode(const springs_gpu *g);
/* Work-group size of the workgroup mode. */
size_t springs_gpu_wg_size(const springs_gpu *g);
/* Copies positions and previous positions back into s (as doubles). */
int springs_gpu_download(springs_gpu *g, springs_model *s, cls_error *err);
void springs_gpu_free(springs_gpu *g);

/* ---- the whole job (CLI and daemon) --------------------------------------- */

typedef struct springs_options {
    const char *mesh_path; /* NULL: grid */
    int grid;              /* N for the N x N grid when mesh_path is NULL */
    double min_dist, max_dist; /* NAN: defaults (grid 0.5 / 6.5; mesh 1e-6 of the
                                  bounding-box diagonal / 1.5 mean edge length) */
    int edges;             /* springs from mesh edges only */
    springs_params params;
    int64_t steps;
    int64_t *pins;
    int npins;
    springs_launch launch;
    int cpu;               /* also run the CPU reference: time and difference */
    const char *device;
    const char *out_obj;   /* NULL: no output mesh */
} springs_options;

void springs_options_default(springs_options *o);

typedef struct springs_report {
    int64_t particles, springs;
    int colors, max_degree;
    double min_dist, max_dist;
    double build_s;        /* mesh read, springs, colouring */
    double gpu_ms_per_step;
    double cpu_ms_per_step; /* NAN without --cpu */
    double max_diff;        /* max |x_gpu - x_cpu| with --cpu, else NAN */
    double extent;          /* bounding-box diagonal of the initial particles */
    springs_launch launch;
    size_t wg_size;
    ocl_device device;
} springs_report;

int springs_run(const springs_options *o, springs_report *r, cls_error *err);

/* The report as a JSON object text (malloc'ed; free()): what `clsolve
 * springs --json` prints and a springs job records. */
char *springs_report_json(const springs_options *o, const springs_report *r);

#endif
