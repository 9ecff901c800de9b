/*
 * nbody_run.c: the `nbody` run (clsolve nbody and the job; see nbody.h).
 *
 * The steps run in chunks between frames (every `every` steps, and the
 * last); at each frame the state is read back, its energy E = K + W (W
 * from the device's compensated potential sums), momentum and angular
 * momentum recorded, and the frame written. Besides, the device measures
 * the energy of every step in the step's own launch (nbody_gpu_run's
 * trace), so a drift that peaks between frames (a close encounter) is
 * seen: on a Plummer sphere of 64 leapfrog's drift reached 5.4e-3 at
 * step 45 of 200 and ended at 2.7e-4. Reported drifts:
 *   energy   |E_end - E_0| / |E_0| (end), and the largest over every step
 *            and the frames, with its step (max);
 *   momentum |P_end - P_0| / sum_i m_i |v_i| (pairwise forces cancel in
 *            exact arithmetic, so with damping 1 this is float rounding);
 *   angular  |L_end - L_0| / sum_i m_i |x_i x v_i| at the start.
 * Timing: ms_per_step is the kernel time (profiling events) per step;
 * leapfrog's synchronising half kicks are counted in it.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "frame.h"
#include "job.h"
#include "mesh_write.h"
#include "nbody.h"

void nbody_options_default(nbody_options *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->steps = 10;
    o->dt = 1e-3;
    o->softening = 1e-2;
    o->damping = 1.0;
    o->integrator = NBODY_EULER;
    o->ic = NBODY_IC_RANDOM;
    o->check = 1;
    o->device = "auto";
}

double nbody_eps2(const nbody_options *o)
{
    return o->softening_thesis > 0 ? o->softening_thesis : o->softening * o->softening;
}

static int nbody_check_options(const nbody_options *o, cls_error *err)
{
    if (!o->bodies_path && o->random_n < 1)
        return cls_fail(err, CLS_EUSAGE, "give --bodies FILE or --random N");
    if (o->bodies_path && o->random_n)
        return cls_fail(err, CLS_EUSAGE, "give --bodies or --random, not both");
    if (o->random_n > INT32_MAX)
        return cls_fail(err, CLS_EUSAGE, "at most %d bodies", INT32_MAX);
    if (o->steps < 0)
        return cls_fail(err, CLS_EUSAGE, "steps must be >= 0");
    if (o->every < 0)
        return cls_fail(err, CLS_EUSAGE, "every must be >= 0");
    if (!isfinite(o->dt) || o->dt < 0)
        return cls_fail(err, CLS_EUSAGE, "dt must be finite and >= 0");
    if (o->softening_thesis != 0 && (!(o->softening_thesis > 0) || !isfinite(o->softening_thesis)))
        return cls_fail(err, CLS_EUSAGE, "softening-thesis must be finite and > 0");
    if (!o->softening_thesis && (!(o->softening > 0) || !isfinite(o->softening)))
        return cls_fail(err, CLS_EUSAGE,
                        "softening must be > 0 (it keeps the "
                        "self-interaction and close encounters finite)");
    if (!(nbody_eps2(o) > 0) || !isfinite((float)nbody_eps2(o)) || (float)nbody_eps2(o) == 0.0f)
        return cls_fail(err, CLS_EUSAGE, "softening^2 %g is not a positive float", nbody_eps2(o));
    if (!(o->damping >= 0 && o->damping <= 1))
        return cls_fail(err, CLS_EUSAGE, "damping must be in [0, 1]");
    if (o->tile != 0 && (o->tile < 1 || o->tile > 1024 || (o->tile & (o->tile - 1))))
        return cls_fail(err, CLS_EUSAGE, "tile must be a power of two up to 1024");
    return CLS_OK;
}

static double nbody_norm3(const double *a, const double *b)
{
    double d[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
    return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

/* One frame of the bodies: CSV, or a point set with velocity and mass. */
static int nbody_write_frame(const nbody_system *s, phys_frames *seq, int64_t step, double time,
                             cls_error *err)
{
    char path[4200], title[96];
    int rc = phys_frames_path(seq, step, path, sizeof path, err);
    if (rc)
        return rc;
    phys_format f = phys_frames_file_format(seq);
    if (f == PHYS_FMT_CSV) {
        rc = nbody_write_csv(path, s, err);
    } else {
        mesh pts;
        mesh_init(&pts);
        pts.nverts = s->n;
        pts.v = s->x;
        mesh_field fields[2] = {{"velocity", s->v, 3}, {"mass", s->m, 1}};
        snprintf(title, sizeof title, "clsolve nbody, step %lld, t = %.9g", (long long)step, time);
        mesh_out mo = {.m = &pts, .fields = fields, .nfields = 2, .title = title};
        rc = mesh_write(path, f, &mo, err);
    }
    if (!rc)
        rc = phys_frames_added(seq, path, time, err);
    return rc;
}

/* Energy of the current device state (s must hold it: velocities for K). */
static int nbody_energy(nbody_gpu *g, const nbody_system *s, double eps2, double *E, double *K,
                        cls_error *err)
{
    double W = 0;
    int rc = nbody_gpu_potential(g, s->m, eps2, &W, err);
    *K = nbody_kinetic(s);
    *E = *K + W;
    return rc;
}

int nbody_run(const nbody_options *o, nbody_report *r, cls_error *err)
{
    memset(r, 0, sizeof *r);
    r->accel_rel_error = NAN;
    r->momentum_drift = r->angmom_drift = r->energy_drift = r->energy_max_drift = NAN;
    int rc = nbody_check_options(o, err);
    if (rc)
        return rc;
    phys_format fmt = PHYS_FMT_NONE;
    if (o->out_path &&
        (rc = phys_format_of_path(
             o->out_path, PHYS_FMT_CSV | PHYS_FMT_PLY | PHYS_FMT_VTK | PHYS_FMT_OBJ | PHYS_FMT_PVD,
             "nbody", &fmt, err)))
        return rc;
    nbody_system s;
    nbody_init(&s);
    switch (o->bodies_path ? NBODY_IC_FILE : o->ic) {
    case NBODY_IC_FILE:
        rc = nbody_read_csv(o->bodies_path, &s, err);
        break;
    case NBODY_IC_PLUMMER:
        rc = nbody_plummer(&s, o->random_n, o->seed, err);
        break;
    case NBODY_IC_DISK:
        rc = nbody_disk(&s, o->random_n, o->seed, err);
        break;
    default:
        rc = nbody_random(&s, o->random_n, o->seed, err);
    }
    /* the device holds the bodies as float */
    for (int64_t i = 0; i < 7 * s.n && !rc; i++) {
        int64_t b = i / 7, c = i % 7;
        double x = c < 3 ? s.x[3 * b + c] : c < 6 ? s.v[3 * b + c - 3] : s.m[b];
        if (phys_beyond_float(x))
            rc = cls_fail(err, CLS_EINPUT,
                          "%s: body %lld: %s = %g is beyond the float range the device computes "
                          "in (|x| <= %g)",
                          o->bodies_path ? o->bodies_path : "bodies", (long long)b,
                          (const char *[]){"x", "y", "z", "vx", "vy", "vz", "m"}[c], x,
                          (double)FLT_MAX);
    }
    if (rc) {
        nbody_free(&s);
        return rc;
    }
    phys_device dev;
    memset(&dev, 0, sizeof dev);
    nbody_gpu *g = NULL;
    float *acc = NULL;
    phys_frames seq;
    int have_seq = 0;
    double eps2 = nbody_eps2(o);
    r->bodies = s.n;
    r->steps = o->steps;
    r->energy_series = json_array();
    if ((rc = phys_device_open(&dev, o->device, err)))
        goto done;
    r->device = dev.dev;
    if ((rc = nbody_gpu_create(&dev.ctx, &s, o->tile, &g, err)))
        goto done;
    r->tile = nbody_gpu_tile(g);
    if (o->check) {
        /* up to 256 bodies spread over the index range against the double sum */
        acc = malloc(16 * (size_t)s.n);
        if (!acc) {
            rc = cls_fail(err, CLS_EOTHER, "nbody: out of memory");
            goto done;
        }
        if ((rc = nbody_gpu_accel(g, eps2, acc, err)))
            goto done;
        int64_t k = s.n < 256 ? s.n : 256;
        double num = 0, den = 0;
        for (int64_t t = 0; t < k; t++) {
            int64_t i = t * s.n / k;
            double a[3];
            nbody_accel_ref_one(&s, eps2, i, a);
            for (int c = 0; c < 3; c++) {
                double d = (double)acc[4 * i + c] - a[c];
                num += d * d;
                den += a[c] * a[c];
            }
        }
        r->accel_rel_error = den > 0 ? sqrt(num / den) : sqrt(num);
        r->checked_bodies = k;
    }
    nbody_momentum(&s, r->momentum0);
    nbody_angular_momentum(&s, r->angmom0);
    if ((rc = nbody_energy(g, &s, eps2, &r->energy0, &r->kinetic0, err)))
        goto done;
    json_array_append_new(r->energy_series, json_pack("[i, f]", 0, r->energy0));
    double lscale = 0;
    for (int64_t i = 0; i < s.n; i++) {
        double l[3];
        const double *x = s.x + 3 * i, *v = s.v + 3 * i;
        l[0] = x[1] * v[2] - x[2] * v[1], l[1] = x[2] * v[0] - x[0] * v[2],
        l[2] = x[0] * v[1] - x[1] * v[0];
        lscale += s.m[i] * sqrt(l[0] * l[0] + l[1] * l[1] + l[2] * l[2]);
    }
    if (o->out_path) {
        if ((rc = phys_frames_init(&seq, o->out_path, fmt, o->every > 0, err)))
            goto done;
        have_seq = 1;
        if (o->every > 0 && (rc = nbody_write_frame(&s, &seq, 0, 0.0, err)))
            goto done;
    }
    double w0 = cls_now(), write_s = 0;
    r->energy_max_drift = 0;
    r->energy_max_step = 0;
    nbody_energy_trace trace;
    nbody_trace_init(&trace);
    for (int64_t done = 0; done < o->steps || (o->steps == 0 && done == 0);) {
        int64_t chunk = o->every > 0 ? o->every : o->steps;
        if (chunk > o->steps - done)
            chunk = o->steps - done;
        double ks = 0;
        if ((rc = nbody_gpu_run(g, o->integrator, done, chunk, o->dt, eps2, o->damping, &ks, &trace,
                                err)))
            goto done;
        r->kernel_s += ks;
        done += chunk;
        double tw = cls_now();
        if ((rc = nbody_gpu_download(g, &s, err)) ||
            (rc = nbody_energy(g, &s, eps2, &r->energy1, &r->kinetic1, err)))
            goto done;
        json_array_append_new(r->energy_series, json_pack("[I, f]", (json_int_t)done, r->energy1));
        double drift = fabs(r->energy1 - r->energy0) / fmax(fabs(r->energy0), 1e-300);
        if (drift > r->energy_max_drift) {
            r->energy_max_drift = drift;
            r->energy_max_step = done;
        }
        /* a frame every `every` steps and the last; with no steps, the
         * initial state once */
        int frame = chunk > 0 ? (o->every > 0 || done == o->steps) : o->every == 0;
        if (have_seq && frame &&
            (rc = nbody_write_frame(&s, &seq, done, (double)done * o->dt, err)))
            goto done;
        write_s += cls_now() - tw;
        if (chunk == 0)
            break;
    }
    r->wall_s = cls_now() - w0 - write_s;
    /* every step, measured on the device against its own first step */
    if (trace.measured > 0 && trace.max_rel > r->energy_max_drift) {
        r->energy_max_drift = trace.max_rel;
        r->energy_max_step = trace.max_step;
    }
    r->energy_measured = trace.measured;
    if (have_seq && (rc = phys_frames_finish(&seq, err)))
        goto done;
    nbody_momentum(&s, r->momentum1);
    nbody_angular_momentum(&s, r->angmom1);
    double scale = 0;
    for (int64_t i = 0; i < s.n; i++)
        scale += s.m[i] * sqrt(s.v[3 * i] * s.v[3 * i] + s.v[3 * i + 1] * s.v[3 * i + 1] +
                               s.v[3 * i + 2] * s.v[3 * i + 2]);
    double dp = nbody_norm3(r->momentum1, r->momentum0);
    r->momentum_drift = scale > 0 ? dp / scale : dp;
    double dl = nbody_norm3(r->angmom1, r->angmom0);
    r->angmom_drift = lscale > 0 ? dl / lscale : dl;
    r->energy_drift = fabs(r->energy1 - r->energy0) / fmax(fabs(r->energy0), 1e-300);
    double inter = (double)s.n * (double)s.n * (double)o->steps;
    r->ms_per_step = o->steps ? 1e3 * r->kernel_s / (double)o->steps : 0.0;
    r->interactions_per_s = r->kernel_s > 0 ? inter / r->kernel_s : 0.0;
    r->gflops = 20.0 * r->interactions_per_s * 1e-9;
    if (have_seq) {
        r->frames = seq.count;
        r->output = phys_frames_json(&seq);
    }
done:
    if (have_seq)
        phys_frames_free(&seq);
    free(acc);
    nbody_gpu_free(g);
    phys_device_close(&dev);
    nbody_free(&s);
    return rc;
}

void nbody_report_free(nbody_report *r)
{
    json_decref(r->energy_series);
    json_decref(r->output);
    r->energy_series = r->output = NULL;
}

static const char *nbody_ic_name(const nbody_options *o)
{
    if (o->bodies_path)
        return "file";
    return o->ic == NBODY_IC_PLUMMER ? "plummer" : o->ic == NBODY_IC_DISK ? "disk" : "random";
}

static json_t *nbody_report_object(const nbody_options *o, const nbody_report *r)
{
    json_t *j = phys_report_new("nbody");
    json_object_set_new(
        j, "input", o->bodies_path ? json_string(o->bodies_path) : json_string(nbody_ic_name(o)));
    json_object_set_new(j, "initial_conditions", json_string(nbody_ic_name(o)));
    if (!o->bodies_path)
        json_object_set_new(j, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(j, "bodies", json_integer(r->bodies));
    json_object_set_new(j, "steps", json_integer(r->steps));
    json_object_set_new(j, "integrator", json_string(nbody_integrator_name(o->integrator)));
    json_object_set_new(j, "dt", json_real(o->dt));
    double eps2 = nbody_eps2(o);
    json_object_set_new(j, "softening", json_real(sqrt(eps2)));
    json_object_set_new(j, "softening_added_to_r2", json_real(eps2));
    json_object_set_new(j, "softening_convention",
                        json_string(o->softening_thesis > 0
                                        ? "thesis: (|r|^2 + epsilon)^(3/2), Camillo eq. 4.2"
                                        : "plummer: (|r|^2 + eps^2)^(3/2)"));
    json_object_set_new(j, "damping", json_real(o->damping));
    json_object_set_new(j, "tile", json_integer((json_int_t)r->tile));
    json_object_set_new(j, "ms_per_step", json_real(r->ms_per_step));
    json_object_set_new(j, "interactions_per_s", json_real(r->interactions_per_s));
    json_object_set_new(j, "gflops", json_real(r->gflops));
    json_object_set_new(j, "flops_per_interaction", json_integer(20));
    json_object_set_new(j, "kernel_s", json_real(r->kernel_s));
    json_object_set_new(j, "wall_s", json_real(r->wall_s));
    json_object_set_new(j, "momentum_start",
                        json_pack("[f, f, f]", r->momentum0[0], r->momentum0[1], r->momentum0[2]));
    json_object_set_new(j, "momentum_end",
                        json_pack("[f, f, f]", r->momentum1[0], r->momentum1[1], r->momentum1[2]));
    json_object_set_new(j, "momentum_drift",
                        isfinite(r->momentum_drift) ? json_real(r->momentum_drift) : json_null());
    json_object_set_new(j, "angular_momentum_drift",
                        isfinite(r->angmom_drift) ? json_real(r->angmom_drift) : json_null());
    json_t *e = json_pack("{s:f, s:f, s:f, s:f}", "start", r->energy0, "end", r->energy1,
                          "kinetic_start", r->kinetic0, "kinetic_end", r->kinetic1);
    json_object_set_new(e, "rel_drift",
                        isfinite(r->energy_drift) ? json_real(r->energy_drift) : json_null());
    json_object_set_new(e, "max_rel_drift",
                        isfinite(r->energy_max_drift) ? json_real(r->energy_max_drift)
                                                      : json_null());
    json_object_set_new(e, "max_drift_step", json_integer((json_int_t)r->energy_max_step));
    json_object_set_new(e, "steps_measured", json_integer((json_int_t)r->energy_measured));
    json_object_set_new(e, "series",
                        r->energy_series ? json_incref(r->energy_series) : json_array());
    json_object_set_new(j, "energy", e);
    json_object_set_new(j, "energy_drift",
                        isfinite(r->energy_drift) ? json_real(r->energy_drift) : json_null());
    json_object_set_new(j, "energy_max_drift",
                        isfinite(r->energy_max_drift) ? json_real(r->energy_max_drift)
                                                      : json_null());
    if (isfinite(r->accel_rel_error)) {
        json_object_set_new(j, "accel_rel_error", json_real(r->accel_rel_error));
        json_object_set_new(j, "accel_checked_bodies", json_integer(r->checked_bodies));
    }
    if (r->output)
        json_object_set_new(j, "output", json_incref(r->output));
    json_object_set_new(j, "device", phys_device_json_of(&r->device, r->tile));
    return j;
}

char *nbody_report_json(const nbody_options *o, const nbody_report *r)
{
    json_t *j = nbody_report_object(o, r);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    return s;
}

/* Options of an nbody job: {"random" | "plummer" | "disk": N, "seed",
 * "steps", "dt", "softening", "softening_thesis", "damping", "integrator",
 * "tile", "check", "every", "format": "csv"|"ply"|"vtk"|"obj"|"pvd"}; the
 * input file, when given, is the bodies CSV. */
static int nbody_job_options(const char *json, nbody_options *o, phys_format *fmt, cls_error *err)
{
    if (!json || !*json)
        return CLS_OK;
    json_error_t je;
    json_t *j = json_loads(json, 0, &je);
    if (!j)
        return cls_fail(err, CLS_EUSAGE, "nbody options: line %d: %s", je.line, je.text);
    int rc = CLS_OK, generators = 0;
    if (!json_is_object(j)) {
        rc = cls_fail(err, CLS_EUSAGE, "nbody options: not a JSON object");
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v)
    {
        if (!strcmp(key, "dt") || !strcmp(key, "softening") || !strcmp(key, "damping") ||
            !strcmp(key, "softening_thesis")) {
            if (!json_is_number(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "nbody options: '%s' must be a number", key);
                goto done;
            }
            double x = json_number_value(v);
            *(!strcmp(key, "dt")                 ? &o->dt
              : !strcmp(key, "softening")        ? &o->softening
              : !strcmp(key, "softening_thesis") ? &o->softening_thesis
                                                 : &o->damping) = x;
        } else if (!strcmp(key, "random") || !strcmp(key, "plummer") || !strcmp(key, "disk") ||
                   !strcmp(key, "seed") || !strcmp(key, "steps") || !strcmp(key, "tile") ||
                   !strcmp(key, "every")) {
            if (!json_is_integer(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "nbody options: '%s' must be an integer", key);
                goto done;
            }
            json_int_t x = json_integer_value(v);
            if (!strcmp(key, "random") || !strcmp(key, "plummer") || !strcmp(key, "disk")) {
                o->random_n = x;
                o->ic = key[0] == 'r'   ? NBODY_IC_RANDOM
                        : key[0] == 'p' ? NBODY_IC_PLUMMER
                                        : NBODY_IC_DISK;
                generators++;
            } else if (!strcmp(key, "seed"))
                o->seed = (uint64_t)x;
            else if (!strcmp(key, "steps"))
                o->steps = x;
            else if (!strcmp(key, "every"))
                o->every = x;
            else if (x < 0 || x > 1024) {
                rc = cls_fail(err, CLS_EUSAGE, "nbody options: 'tile' out of range");
                goto done;
            } else
                o->tile = (int)x;
        } else if (!strcmp(key, "check")) {
            if (!json_is_boolean(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "nbody options: 'check' must be true or false");
                goto done;
            }
            o->check = json_is_true(v);
        } else if (!strcmp(key, "integrator")) {
            if (nbody_integrator_parse(json_string_value(v), &o->integrator)) {
                rc = cls_fail(err, CLS_EUSAGE,
                              "nbody options: 'integrator' must be euler or leapfrog");
                goto done;
            }
        } else if (!strcmp(key, "format")) {
            phys_format f = phys_format_parse(json_string_value(v));
            if (!(f & (PHYS_FMT_CSV | PHYS_FMT_PLY | PHYS_FMT_VTK | PHYS_FMT_OBJ | PHYS_FMT_PVD))) {
                rc = cls_fail(err, CLS_EUSAGE,
                              "nbody options: 'format' must be csv, ply, vtk, obj or pvd");
                goto done;
            }
            *fmt = f;
        } else {
            rc = cls_fail(err, CLS_EUSAGE, "nbody options: unknown option '%s'", key);
            goto done;
        }
    }
    if (generators > 1)
        rc = cls_fail(err, CLS_EUSAGE, "nbody options: give one of random, plummer and disk");
done:
    json_decref(j);
    return rc;
}

int nbody_job_run(const char *options_json, const char *input_path, const char *out_dir,
                  const char *device, char **result_json, cls_error *err)
{
    *result_json = NULL;
    nbody_options o;
    nbody_options_default(&o);
    phys_format fmt = PHYS_FMT_CSV;
    int rc = nbody_job_options(options_json, &o, &fmt, err);
    if (rc)
        return rc;
    if (input_path) {
        o.bodies_path = input_path;
        o.random_n = 0; /* an uploaded file wins over a generator option */
    }
    o.device = device ? device : "auto";
    char out[4096];
    if (out_dir) {
        int n = snprintf(out, sizeof out, "%s/bodies.%s", out_dir, phys_format_name(fmt));
        if (n < 0 || (size_t)n >= sizeof out)
            return cls_fail(err, CLS_EUSAGE, "nbody: output directory name too long");
        o.out_path = out;
    }
    nbody_report r;
    rc = nbody_run(&o, &r, err);
    if (rc) {
        nbody_report_free(&r);
        return rc;
    }
    json_t *j = nbody_report_object(&o, &r);
    json_t *files = json_array();
    phys_output_files(r.output, files);
    nbody_report_free(&r);
    return phys_report_result(j, files, result_json, err);
}
