/*
 * nbody.h: all-pairs gravitational N-body (the 1-ring thesis's arbitrary-
 * valence case, after Nyland et al. 2007) on an OpenCL device, with a CPU
 * double-precision reference.
 *
 * Units with G = 1:
 *     a_i = sum_j m_j r_ij / (|r_ij|^2 + eps2)^(3/2),  r_ij = x_j - x_i
 * Softening, stated: eps2 is what is added to |r|^2. With --softening EPS
 * (the Plummer softening length of Aarseth 2003 and Dyer & Ip 1993) eps2 =
 * EPS^2; with --softening-thesis S (Camillo 2018, eq. 4.2: (|r|^2 +
 * epsilon)^(3/2)) eps2 = S. eps2 > 0 keeps close encounters finite and
 * makes a body's pull on itself exactly zero. The matching potential is
 * phi_i = -sum_{j != i} m_j / sqrt(|r_ij|^2 + eps2), energy
 * E = sum 1/2 m v^2 + 1/2 sum m_i phi_i.
 *
 * Integrators:
 *   euler     v <- (v + a dt) damping, x <- x + v dt (semi-implicit Euler,
 *             the order of the thesis's kernel; first order);
 *   leapfrog  kick-drift-kick: v += a dt/2, x += v dt, v += a(x) dt/2,
 *             second order and symplectic (time-reversible) with damping 1;
 *             consecutive half kicks are merged into one launch, and
 *             velocities are brought back in step (a closing half kick)
 *             only where they are read: frames, energy, the end.
 *
 * Bodies come from CSV (columns x,y,z,vx,vy,vz,m; an optional header line
 * naming them; '#' comments and blank lines skipped; errors "FILE:LINE:
 * what") or are generated: uniform in the unit ball (random), a Plummer
 * sphere (plummer) or a disk around a central mass (disk).
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
/* Positions uniform in the unit ball, velocities uniform in
 * [-0.05, 0.05]^3, masses uniform in [0.5, 1.5] / n. */
int nbody_random(nbody_system *s, int64_t n, uint64_t seed, cls_error *err);
/* A Plummer sphere in Henon units (G = M = 1, E = -1/4, scale radius
 * a = 3 pi / 16), sampled as Aarseth, Henon and Wielen 1974 (radii with
 * the mass fraction below 0.999, speeds by von Neumann rejection from
 * q^2 (1 - q^2)^(7/2) of the local escape speed), equal masses 1/n,
 * moved to the centre-of-mass frame. */
int nbody_plummer(nbody_system *s, int64_t n, uint64_t seed, cls_error *err);
/* Body 0 a central mass 1 at rest; the other n - 1 share mass 0.1 on
 * circular orbits in the x-y plane (counter-clockwise seen from +z), radii
 * uniform in area between 0.2 and 1, heights uniform in +-0.01 R, speeds
 * sqrt(M(<R) / R) from the mass inside R; centre-of-mass frame. n >= 2. */
int nbody_disk(nbody_system *s, int64_t n, uint64_t seed, cls_error *err);
int nbody_read_csv(const char *path, nbody_system *s, cls_error *err);
int nbody_read_csv_buf(const char *buf, size_t len, const char *name, nbody_system *s,
                       cls_error *err);
int nbody_write_csv(const char *path, const nbody_system *s, cls_error *err);

typedef enum { NBODY_EULER = 0, NBODY_LEAPFROG = 1 } nbody_integrator;
const char *nbody_integrator_name(nbody_integrator k); /* "euler", "leapfrog" */
int nbody_integrator_parse(const char *s, nbody_integrator *k);

/* CPU double reference: accelerations (3 n), one step, energies,
 * momenta. eps2 is what is added to |r|^2. */
void nbody_accel_ref(const nbody_system *s, double eps2, double *acc);
/* The acceleration of body i alone (O(n)), for spot checks of large runs. */
void nbody_accel_ref_one(const nbody_system *s, double eps2, int64_t i, double a[3]);
/* steps steps of the integrator (leapfrog: kick-drift-kick each step,
 * velocities synchronous at the end). */
void nbody_run_ref(nbody_system *s, nbody_integrator k, int64_t steps, double dt, double eps2,
                   double damping);
double nbody_kinetic(const nbody_system *s);
double nbody_potential_ref(const nbody_system *s, double eps2); /* W, O(n^2) */
void nbody_momentum(const nbody_system *s, double p[3]);
void nbody_angular_momentum(const nbody_system *s, double l[3]);

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
int nbody_gpu_accel(nbody_gpu *g, double eps2, float *acc, cls_error *err);
/* The energy E = K + W at every step a run passes, measured on the device
 * in the step's own launch (the potential from the force loop's rsqrt,
 * velocities brought in step with the positions), the groups' float sums
 * added in double. Drifts are relative to the first step measured. */
typedef struct nbody_energy_trace {
    int64_t measured; /* steps measured */
    double e_ref;     /* the energy of the first of them (NAN before) */
    double max_rel;   /* max |E_s - e_ref| / |e_ref| */
    int64_t max_step; /* the step of that maximum (-1 before) */
} nbody_energy_trace;

void nbody_trace_init(nbody_energy_trace *t);

/* steps steps from the synchronous state; velocities synchronous again at
 * the end; *kernel_s gets the summed kernel time (profiling events).
 * first_step numbers the steps for the non-finite check: a state that
 * stops being finite fails with CLS_EBREAKDOWN naming the step. With a
 * trace (may be NULL) every step's energy goes into it: steps first_step
 * .. first_step + steps - 1, and with leapfrog first_step + steps too. */
int nbody_gpu_run(nbody_gpu *g, nbody_integrator k, int64_t first_step, int64_t steps, double dt,
                  double eps2, double damping, double *kernel_s, nbody_energy_trace *trace,
                  cls_error *err);
/* The potential energy W of the current state (float sums compensated per
 * body, added in double). */
int nbody_gpu_potential(nbody_gpu *g, const double *mass, double eps2, double *W, cls_error *err);
int nbody_gpu_download(nbody_gpu *g, nbody_system *s, cls_error *err);
void nbody_gpu_free(nbody_gpu *g);

/* ---- the whole job (CLI and daemon) --------------------------------------- */

typedef enum { NBODY_IC_FILE = 0, NBODY_IC_RANDOM, NBODY_IC_PLUMMER, NBODY_IC_DISK } nbody_ic;

typedef struct nbody_options {
    const char *bodies_path; /* NULL: generated (ic, n) */
    nbody_ic ic;
    int64_t random_n; /* bodies to generate */
    uint64_t seed;
    int64_t steps;
    double dt, damping;
    double softening;        /* Plummer length eps (eps2 = eps^2) */
    double softening_thesis; /* > 0: Camillo's epsilon, eps2 = this (overrides softening) */
    nbody_integrator integrator;
    int tile;      /* 0: sweep */
    int check;     /* compare accelerations with the CPU double sum */
    int64_t every; /* > 0: a frame every `every` steps (and the last) */
    const char *device;
    const char *out_path; /* NULL: none; .csv, .ply, .vtk, .obj or .pvd */
} nbody_options;

void nbody_options_default(nbody_options *o);
/* What is added to |r|^2: softening_thesis if set, else softening^2. */
double nbody_eps2(const nbody_options *o);

typedef struct nbody_report {
    int64_t bodies, steps;
    size_t tile;
    double kernel_s, wall_s;
    double ms_per_step, interactions_per_s, gflops;
    double momentum0[3], momentum1[3];
    double momentum_drift; /* |P1 - P0| / sum m |v| (end) */
    double angmom0[3], angmom1[3];
    double angmom_drift; /* |L1 - L0| / sum m |x x v| (start) */
    double energy0, energy1, kinetic0, kinetic1;
    double energy_drift;     /* |E1 - E0| / |E0| */
    double energy_max_drift; /* the largest over every step (device trace) and the frames */
    int64_t energy_max_step; /* where it was */
    int64_t energy_measured; /* steps whose energy the device measured */
    double accel_rel_error;  /* norm-wise, on up to 256 sampled bodies; NAN if unchecked */
    int64_t checked_bodies;
    int64_t frames; /* written */
    ocl_device device;
    struct json_t *energy_series; /* [[step, E], ...] at the frames, start and end */
    struct json_t *output;        /* phys_frames_json of the output, or NULL */
} nbody_report;

/* r's JSON members are the caller's: nbody_report_free. */
int nbody_run(const nbody_options *o, nbody_report *r, cls_error *err);
void nbody_report_free(nbody_report *r);

/* The report as JSON text (malloc'ed; free()). */
char *nbody_report_json(const nbody_options *o, const nbody_report *r);

#endif
