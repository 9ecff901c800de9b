/*
 * nbody.h: all-pairs gravitational N-body (the 1-ring thesis's arbitrary-
 * valence case, after Nyland et al. 2007) on an OpenCL device, with a CPU
 * double-precision reference.
 *
 * Units with G = 1:
 *     a_i = sum_j m_j r_ij / (|r_ij|^2 + eps^2)^(3/2),  r_ij = x_j - x_i
 *     v <- (v + a dt) * damping,   x <- x + v dt
 * (semi-implicit Euler, the order the thesis's kernel uses). eps > 0 is the
 * softening; it also makes a body's pull on itself exactly zero.
 *
 * Bodies come from CSV (columns x,y,z,vx,vy,vz,m; an optional header line
 * naming them; '#' comments and blank lines skipped; errors "FILE:LINE:
 * what") or are generated: positions uniform in the unit ball, velocities
 * uniform in [-0.05, 0.05]^3, masses uniform in [0.5, 1.5] / N, from a seed.
 */
#ifndef CLS_PHYSICS_NBODY_H
#define CLS_PHYSICS_NBODY_H

#include <stddef.h>
#include <stdint.h>

#include "../common/error.h"
#include "../kernels/ocl.h"

typedef struct nbody_system {
    int64_t n;
    double *x, *v; /* 3 n */
    double *m;     /* n */
} nbody_system;

void nbody_init(nbody_system *s);
void nbody_free(nbody_system *s);
int nbody_random(nbody_system *s, int64_t n, uint64_t seed, cls_error *err);
int nbody_read_csv(const char *path, nbody_system *s, cls_error *err);
int nbody_read_csv_buf(const char *buf, size_t len, const char *name, nbody_system *s,
                       cls_error *err);
int nbody_write_csv(const char *path, const nbody_system *s, cls_error *err);

/* CPU double reference: accelerations (3 n), one step, total momentum. */
void nbody_accel_ref(const nbody_system *s, double eps, double *acc);
/* The acceleration of body i alone (O(n)), for spot checks of large runs. */
void nbody_accel_ref_one(const nbody_system *s, double eps, int64_t i, double a[3]);
void nbody_step_ref(nbody_system *s, double dt, double eps, double damping);
void nbody_momentum(const nbody_system *s, double p[3]);

/* ---- device -------------------------------------------------------------- */

typedef struct nbody_gpu nbody_gpu;

/* Uploads the bodies (as float) and builds the kernel; tile 0 sweeps the
 * tile (= work-group) sizes 64 .. 1024 the device allows, timing a step of
 * min(n, 32768) bodies with profiling events, and keeps the fastest. */
int nbody_gpu_create(ocl_ctx *ctx, const nbody_system *s, int tile, nbody_gpu **out,
                     cls_error *err);
size_t nbody_gpu_tile(const nbody_gpu *g);
/* Accelerations of the current state (4 n floats: ax, ay, az, 0); the state
 * is not advanced. */
int nbody_gpu_accel(nbody_gpu *g, double eps, float *acc, cls_error *err);
/* steps steps; *kernel_s gets the summed kernel time (profiling events). */
int nbody_gpu_run(nbody_gpu *g, int64_t steps, double dt, double eps, double damping,
                  double *kernel_s, cls_error *err);
int nbody_gpu_download(nbody_gpu *g, nbody_system *s, cls_error *err);
void nbody_gpu_free(nbody_gpu *g);

/* ---- the whole job (CLI and daemon) --------------------------------------- */

typedef struct nbody_options {
    const char *bodies_path; /* NULL: random */
    int64_t random_n;
    uint64_t seed;
    int64_t steps;
    double dt, softening, damping;
    int tile;                /* 0: sweep */
    int check;               /* compare accelerations with the CPU double sum */
    const char *device;
    const char *out_csv;     /* NULL: none */
} nbody_options;

void nbody_options_default(nbody_options *o);

typedef struct nbody_report {
    int64_t bodies, steps;
    size_t tile;
    double kernel_s, wall_s;
    double ms_per_step, interactions_per_s, gflops;
    double momentum0[3], momentum1[3];
    double momentum_drift;     /* |P1 - P0| / sum m |v| (end) */
    double accel_rel_error;    /* norm-wise, on up to 256 sampled bodies; NAN if unchecked */
    int64_t checked_bodies;
    ocl_device device;
} nbody_report;

int nbody_run(const nbody_options *o, nbody_report *r, cls_error *err);

/* The report as JSON text (malloc'ed; free()). */
char *nbody_report_json(const nbody_options *o, const nbody_report *r);

#endif
