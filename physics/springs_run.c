/*
 * springs_run.c: the `springs` run (clsolve springs and the job; model in
 * springs.h): read the mesh (or make the grid), place it (scale, rotate,
 * translate), build the springs with the default distance range from its
 * edge lengths, bending springs, masses, pins and the colouring; run the
 * steps on the device in chunks between frames and energy records; with
 * --cpu the same steps on the CPU reference.
 *
 * Defaults for a mesh (a grid keeps the thesis's Plano: 0.5 / 6.5, no
 * bending, no shape matching):
 *   min-dist 1e-6 of the bounding-box diagonal (coincident vertices are
 *     not joined);
 *   max-dist 3 mean edge lengths: on a surface mesh a vertex then has
 *     about pi 3^2 / 0.87 = 32 neighbours within reach, 16 springs per
 *     particle, the low end of the thesis's models (GeoEsfera 14.7,
 *     Teapot 36.9, Plano 60.7, Cochino 88.2 springs per particle), where
 *     1.5 mean edges left 5 to 9 and real meshes dropped on the floor
 *     collapsed flat;
 *   bending springs of stiffness 1 across every interior edge;
 *   shape matching alpha 0.3: with the springs alone a closed surface has
 *     nothing across its inside, and a hollow body sags under its own
 *     weight however stiff its skin.
 *
 * A state that stops being finite (a dt too large) fails the run with
 * CLS_EBREAKDOWN naming the step (springs_gpu_run), before the frame or
 * energy record of that chunk: frames written before it stay, no file
 * holds NaN. A body placed beyond the float range is refused as input.
 *
 * Timing: ms_per_step is the wall time of the device runs (which end in a
 * clFinish) per step, after the plan is chosen and the kernels built;
 * downloads, energy records and frames between the runs are outside it.
 * Recording energy every step splits the work-group plan into one launch
 * per step; benchmarks turn it off (--energy-every 0).
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
#include "springs.h"

#define SPRINGS_DEFAULT_REACH 3.0 /* max-dist in mean edge lengths */
#define SPRINGS_DEFAULT_BEND 1.0
#define SPRINGS_DEFAULT_SHAPE 0.3

void springs_options_default(springs_options *o)
{
    memset(o, 0, sizeof *o);
    o->grid = 0;
    o->min_dist = NAN;
    o->max_dist = NAN;
    o->bend = NAN;
    springs_params_default(&o->params);
    o->params.shape = NAN;
    o->steps = 100;
    o->scale = 1.0;
    o->launch = SPRINGS_LAUNCH_AUTO;
    o->device = "auto";
    o->energy_every = -1;
}

static int springs_check_params(const springs_options *o, cls_error *err)
{
    const springs_params *p = &o->params;
    if (!(p->S > 0.0 && p->S <= 1.0))
        return cls_fail(err, CLS_EUSAGE, "S must be in (0, 1], got %g", p->S);
    if (!(p->d >= 0.0 && p->d < 1.0))
        return cls_fail(err, CLS_EUSAGE, "damping d must be in [0, 1), got %g", p->d);
    if (!(p->dt > 0.0) || !isfinite(p->dt))
        return cls_fail(err, CLS_EUSAGE, "dt must be > 0, got %g", p->dt);
    if (!isfinite(p->gravity))
        return cls_fail(err, CLS_EUSAGE, "gravity must be finite");
    if (p->iterations < 1)
        return cls_fail(err, CLS_EUSAGE, "iterations must be >= 1, got %d", p->iterations);
    /* the linearised sweep moves an error mode by 1 - omega S lambda / 2,
     * lambda in [0, 2] (a degree-normalised Laplacian): stable for
     * omega S < 2 */
    if (!(p->omega == 0.0 || (p->omega > 0.0 && p->omega * p->S < 2.0)))
        return cls_fail(err, CLS_EUSAGE,
                        "omega must be > 0 with omega * S < 2 (the Jacobi sweep diverges "
                        "beyond), or 0 for 1.75 / S; got omega %g, S %g",
                        p->omega, p->S);
    if (p->projection == SPRINGS_PROJECT_JACOBI && o->launch != SPRINGS_LAUNCH_AUTO &&
        o->launch != SPRINGS_LAUNCH_JACOBI)
        return cls_fail(err, CLS_EUSAGE,
                        "launch %s is a plan of the Gauss-Seidel projection; the Jacobi "
                        "projection has its own (leave launch out)",
                        springs_launch_name(o->launch));
    if (!(p->rho >= 0.0 && p->rho < 1.0))
        return cls_fail(err, CLS_EUSAGE, "chebyshev must be in [0, 1), got %g", p->rho);
    if (p->rho_delay < 1)
        return cls_fail(err, CLS_EUSAGE,
                        "chebyshev-delay must be >= 1 (the first sweep has no iterate before "
                        "it), got %d",
                        p->rho_delay);
    if (p->projection != SPRINGS_PROJECT_JACOBI && (p->rho > 0.0 || p->omega != 0.0))
        return cls_fail(err, CLS_EUSAGE,
                        "omega and chebyshev belong to the Jacobi projection (add --projection "
                        "jacobi)");
    if (p->projection != SPRINGS_PROJECT_JACOBI && o->launch == SPRINGS_LAUNCH_JACOBI)
        return cls_fail(err, CLS_EUSAGE, "launch jacobi needs the Jacobi projection");
    if (p->floor_on && !isfinite(p->floor_y))
        return cls_fail(err, CLS_EUSAGE, "floor must be finite");
    if (!isnan(p->shape) && !(p->shape >= 0.0 && p->shape <= 1.0))
        return cls_fail(err, CLS_EUSAGE, "shape must be in [0, 1], got %g", p->shape);
    if (!(p->friction >= 0.0) || !isfinite(p->friction))
        return cls_fail(err, CLS_EUSAGE, "friction must be finite and >= 0, got %g", p->friction);
    if (!isnan(o->bend) && (!(o->bend >= 0.0 && o->bend <= 1.0)))
        return cls_fail(err, CLS_EUSAGE, "bend must be in [0, 1], got %g", o->bend);
    if (o->steps < 0)
        return cls_fail(err, CLS_EUSAGE, "steps must be >= 0");
    if (o->every < 0 || o->energy_every < -1)
        return cls_fail(err, CLS_EUSAGE, "every and energy-every must be >= 0");
    if (!o->mesh_path && o->grid < 1)
        return cls_fail(err, CLS_EUSAGE, "give a mesh or a grid size");
    /* NaN is "not given" (the mesh's default) */
    if (!isnan(o->min_dist) && !(o->min_dist >= 0.0 && isfinite(o->min_dist)))
        return cls_fail(err, CLS_EUSAGE, "min-dist must be finite and >= 0, got %g", o->min_dist);
    if (!isnan(o->max_dist) && !(o->max_dist >= 0.0 && isfinite(o->max_dist)))
        return cls_fail(err, CLS_EUSAGE, "max-dist must be finite and >= 0, got %g", o->max_dist);
    if (!(o->scale > 0.0) || !isfinite(o->scale))
        return cls_fail(err, CLS_EUSAGE, "scale must be finite and > 0, got %g", o->scale);
    if (!(o->total_mass >= 0.0) || !isfinite(o->total_mass))
        return cls_fail(err, CLS_EUSAGE, "total mass must be finite and >= 0");
    for (int k = 0; k < 3; k++)
        if (!isfinite(o->translate[k]) || !isfinite(o->velocity[k]) || !isfinite(o->rotate[k]) ||
            !isfinite(o->rotate[3]))
            return cls_fail(err, CLS_EUSAGE, "translate, rotate and velocity must be finite");
    if (o->pin_box_on)
        for (int k = 0; k < 6; k++)
            if (!isfinite(o->pin_box[k]))
                return cls_fail(err, CLS_EUSAGE, "pin-box must be finite");
    if (p->ncolliders < 0 || p->ncolliders > SPRINGS_MAX_COLLIDERS)
        return cls_fail(err, CLS_EUSAGE, "at most %d colliders", SPRINGS_MAX_COLLIDERS);
    for (int c = 0; c < p->ncolliders; c++) {
        const springs_collider *k = &p->colliders[c];
        for (int q = 0; q < 6; q++)
            if (!isfinite(k->a[q]))
                return cls_fail(err, CLS_EUSAGE, "collider %d: values must be finite", c);
        if (k->type == SPRINGS_SPHERE && !(k->a[3] > 0.0))
            return cls_fail(err, CLS_EUSAGE, "collider %d: sphere radius must be > 0", c);
        if (k->type == SPRINGS_BOX &&
            !(k->a[0] < k->a[3] && k->a[1] < k->a[4] && k->a[2] < k->a[5]))
            return cls_fail(err, CLS_EUSAGE, "collider %d: box min must be below max", c);
        if (k->type == SPRINGS_PLANE &&
            !(k->a[3] * k->a[3] + k->a[4] * k->a[4] + k->a[5] * k->a[5] > 0.0))
            return cls_fail(err, CLS_EUSAGE, "collider %d: plane normal must not be zero", c);
    }
    return CLS_OK;
}

/* Bounding-box diagonal and mean triangle edge of a mesh. */
static void springs_mesh_scale(const mesh *m, double *diag, double *mean_edge)
{
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int64_t i = 0; i < m->nverts; i++)
        for (int c = 0; c < 3; c++) {
            double v = m->v[3 * i + c];
            if (i == 0 || v < lo[c])
                lo[c] = v;
            if (i == 0 || v > hi[c])
                hi[c] = v;
        }
    *diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                 (hi[2] - lo[2]) * (hi[2] - lo[2]));
    double sum = 0.0;
    int64_t cnt = 0;
    for (int64_t t = 0; t < m->nfaces; t++)
        for (int c = 0; c < 3; c++) {
            const double *a = m->v + 3 * (int64_t)m->tri[3 * t + c];
            const double *b = m->v + 3 * (int64_t)m->tri[3 * t + (c + 1) % 3];
            sum += sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                        (a[2] - b[2]) * (a[2] - b[2]));
            cnt++;
        }
    *mean_edge = cnt ? sum / (double)cnt : 0.0;
}

/* x <- R(axis, degrees) (scale x) + translate, normals rotated. */
static void springs_place(mesh *m, const springs_options *o)
{
    double ax[3] = {o->rotate[0], o->rotate[1], o->rotate[2]};
    double l = sqrt(ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2]);
    double R[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    if (l > 0.0 && o->rotate[3] != 0.0) {
        for (int k = 0; k < 3; k++)
            ax[k] /= l;
        double th = o->rotate[3] * M_PI / 180.0, c = cos(th), s = sin(th), t = 1.0 - c;
        double x = ax[0], y = ax[1], z = ax[2];
        double r[9] = {t * x * x + c,     t * x * y - s * z, t * x * z + s * y,
                       t * x * y + s * z, t * y * y + c,     t * y * z - s * x,
                       t * x * z - s * y, t * y * z + s * x, t * z * z + c};
        memcpy(R, r, sizeof R);
    }
    for (int64_t i = 0; i < m->nverts; i++) {
        double *p = m->v + 3 * i, q[3];
        for (int k = 0; k < 3; k++)
            q[k] = o->scale * p[k];
        for (int k = 0; k < 3; k++)
            p[k] = R[3 * k] * q[0] + R[3 * k + 1] * q[1] + R[3 * k + 2] * q[2] + o->translate[k];
    }
    for (int64_t i = 0; i < m->nnrm; i++) {
        float *n = m->nrm + 3 * i;
        double q[3] = {n[0], n[1], n[2]};
        for (int k = 0; k < 3; k++)
            n[k] = (float)(R[3 * k] * q[0] + R[3 * k + 1] * q[1] + R[3 * k + 2] * q[2]);
    }
}

static json_t *springs_energy_json(const springs_energy *e)
{
    return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "kinetic", e->kinetic, "potential",
                     e->potential, "elastic", e->elastic, "total", e->kinetic + e->potential,
                     "max_strain", e->max_strain, "rms_strain", e->rms_strain, "height", e->height,
                     "min_y", e->min_y);
}

typedef struct springs_state {
    mesh m, out;
    springs_model s, ref;
    phys_device dev;
    springs_gpu *g;
    phys_frames seq;
    int have_seq, normals;
} springs_state;

static int springs_write_frame(springs_state *S, int64_t step, double time, cls_error *err)
{
    memcpy(S->out.v, S->s.x, 3 * (size_t)S->s.np * sizeof *S->out.v);
    int rc = S->normals ? mesh_normals_recompute(&S->out, err) : CLS_OK;
    char path[4200], title[96];
    if (!rc)
        rc = phys_frames_path(&S->seq, step, path, sizeof path, err);
    if (rc)
        return rc;
    snprintf(title, sizeof title, "clsolve springs, step %lld, t = %.9g", (long long)step, time);
    mesh_out mo = {.m = &S->out, .title = title};
    rc = mesh_write(path, phys_frames_file_format(&S->seq), &mo, err);
    if (!rc)
        rc = phys_frames_added(&S->seq, path, time, err);
    return rc;
}

/* Builds the body of o into S->s; the defaults it chose into r. */
static int springs_build(const springs_options *o, springs_state *S, springs_params *p,
                         springs_report *r, cls_error *err)
{
    int rc =
        o->mesh_path ? mesh_read(o->mesh_path, &S->m, err) : springs_grid_mesh(o->grid, &S->m, err);
    if (rc)
        return rc;
    springs_place(&S->m, o);
    /* after --scale / --rotate / --translate: the device holds positions as float */
    rc = mesh_check_float_range(&S->m, o->mesh_path ? o->mesh_path : "the grid", err);
    if (rc)
        return rc;
    double min_dist = o->min_dist, max_dist = o->max_dist;
    springs_mesh_scale(&S->m, &r->extent, &r->mean_edge);
    if (isnan(min_dist))
        min_dist = o->mesh_path ? 1e-6 * r->extent : 0.5 * o->scale;
    if (isnan(max_dist))
        max_dist = !o->mesh_path        ? 6.5 * o->scale
                   : r->mean_edge > 0.0 ? SPRINGS_DEFAULT_REACH * r->mean_edge
                                        : 0.01 * r->extent;
    r->min_dist = min_dist;
    r->max_dist = max_dist;
    r->bend = isnan(o->bend) ? (o->mesh_path ? SPRINGS_DEFAULT_BEND : 0.0) : o->bend;
    p->shape = isnan(p->shape) ? (o->mesh_path ? SPRINGS_DEFAULT_SHAPE : 0.0) : p->shape;
    r->shape = p->shape;
    rc = o->edges ? springs_from_mesh_edges(&S->m, min_dist, &S->s, err)
                  : springs_from_mesh_proximity(&S->m, min_dist, max_dist, &S->s, err);
    if (!rc)
        rc = springs_add_bending(&S->s, &S->m, r->bend, min_dist, err);
    if (!rc)
        rc = springs_set_mass(&S->s, &S->m, o->mass_by_area, o->total_mass, err);
    for (int i = 0; i < o->npins && !rc; i++)
        rc = springs_pin(&S->s, o->pins[i], err);
    if (rc)
        return rc;
    if (o->pin_box_on) {
        int64_t n;
        springs_pin_box(&S->s, o->pin_box, o->pin_box + 3, &n);
    }
    for (int64_t i = 0; i < S->s.np; i++)
        r->pinned += S->s.w[i] == 0.0;
    springs_set_velocity(&S->s, o->velocity, p->dt);
    return springs_color(&S->s, err);
}

int springs_run(const springs_options *o, springs_report *r, cls_error *err)
{
    memset(r, 0, sizeof *r);
    r->cpu_ms_per_step = r->max_diff = r->gpu_ms_per_step = NAN;
    int rc = springs_check_params(o, err);
    if (rc)
        return rc;
    phys_format fmt = PHYS_FMT_NONE;
    if (o->out_path && (rc = phys_format_of_path(
                            o->out_path, PHYS_FMT_OBJ | PHYS_FMT_PLY | PHYS_FMT_VTK | PHYS_FMT_PVD,
                            "springs", &fmt, err)))
        return rc;
    double t0 = cls_now();
    springs_state S;
    memset(&S, 0, sizeof S);
    springs_model_init(&S.s);
    springs_model_init(&S.ref);
    springs_params p = o->params;
    r->series = json_array();
    CLS_TRY(springs_build(o, &S, &p, r, err));
    r->particles = S.s.np;
    r->springs = S.s.ns;
    r->bending = S.s.nbend;
    r->colors = S.s.ncolors;
    r->max_degree = S.s.max_degree;
    r->build_s = cls_now() - t0;
    if (o->cpu)
        CLS_TRY(springs_model_copy(&S.s, &S.ref, err));
    if (o->out_path) {
        CLS_TRY(mesh_copy(&S.m, &S.out, err));
        S.normals = S.m.tri_n != NULL;
        CLS_TRY(phys_frames_init(&S.seq, o->out_path, fmt, o->every > 0, err));
        S.have_seq = 1;
    }
    CLS_TRY(phys_device_open(&S.dev, o->device, err));
    r->device = S.dev.dev;
    CLS_TRY(springs_gpu_create(
        &S.dev.ctx, &S.s,
        p.projection == SPRINGS_PROJECT_JACOBI ? SPRINGS_LAUNCH_JACOBI : o->launch, &S.g, err));
    CLS_TRY(springs_gpu_warm(S.g, &p, err)); /* AUTO decides here; a forced plan warms */
    r->launch = springs_gpu_mode(S.g);
    r->wg_size = springs_gpu_wg_size(S.g);
    r->fence_local = springs_gpu_fence_local(S.g);

    springs_measure(&S.s, &p, &r->e0);
    int64_t ee =
        o->energy_every < 0 ? (o->steps > 1000 ? (o->steps + 999) / 1000 : 1) : o->energy_every;
    if (ee) {
        json_t *row = springs_energy_json(&r->e0);
        json_object_set_new(row, "step", json_integer(0));
        json_array_append_new(r->series, row);
    }
    if (S.have_seq && o->every > 0)
        CLS_TRY(springs_write_frame(&S, 0, 0.0, err));
    double run_s = 0;
    for (int64_t done = 0; done < o->steps || (o->steps == 0 && done == 0);) {
        /* run to the next frame, energy record or the end */
        int64_t next = o->steps;
        if (o->every > 0 && (done / o->every + 1) * o->every < next)
            next = (done / o->every + 1) * o->every;
        if (ee > 0 && (done / ee + 1) * ee < next)
            next = (done / ee + 1) * ee;
        double g0 = cls_now();
        CLS_TRY(springs_gpu_run(S.g, &p, next - done, err));
        run_s += cls_now() - g0;
        int64_t chunk = next - done;
        done = next;
        int frame =
            chunk > 0 ? (o->every > 0 && done % o->every == 0) || done == o->steps : o->every == 0;
        int record = ee > 0 && chunk > 0 && (done % ee == 0 || done == o->steps);
        if (frame || record || done == o->steps)
            CLS_TRY(springs_gpu_download(S.g, &S.s, err));
        if (record) {
            springs_energy e;
            springs_measure(&S.s, &p, &e);
            json_t *row = springs_energy_json(&e);
            json_object_set_new(row, "step", json_integer(done));
            json_array_append_new(r->series, row);
        }
        if (frame && S.have_seq)
            CLS_TRY(springs_write_frame(&S, done, (double)done * p.dt, err));
        if (chunk == 0)
            break;
    }
    r->gpu_ms_per_step = o->steps ? 1e3 * run_s / (double)o->steps : 0.0;
    springs_measure(&S.s, &p, &r->e1);
    if (S.have_seq) {
        CLS_TRY(phys_frames_finish(&S.seq, err));
        r->frames = S.seq.count;
        r->output = phys_frames_json(&S.seq);
    }
    if (o->cpu) {
        double c0 = cls_now();
        for (int64_t t = 0; t < o->steps; t++)
            springs_step_ref(&S.ref, &p);
        r->cpu_ms_per_step = o->steps ? 1e3 * (cls_now() - c0) / (double)o->steps : 0.0;
        double md = 0.0;
        for (int64_t i = 0; i < 3 * S.s.np; i++)
            md = fmax(md, fabs(S.s.x[i] - S.ref.x[i]));
        r->max_diff = md;
    }
done:
    springs_gpu_free(S.g);
    phys_device_close(&S.dev);
    springs_model_free(&S.s);
    springs_model_free(&S.ref);
    mesh_free(&S.m);
    mesh_free(&S.out);
    if (S.have_seq)
        phys_frames_free(&S.seq);
    return rc;
}

void springs_report_free(springs_report *r)
{
    json_decref(r->series);
    json_decref(r->output);
    r->series = r->output = NULL;
}

/* ---- JSON (CLI --json and job results) ----------------------------------------- */

static const char *const springs_collider_names[3] = {"plane", "sphere", "box"};

json_t *springs_report_object(const springs_options *o, const springs_report *r)
{
    const springs_params *p = &o->params;
    json_t *j = phys_report_new("springs");
    json_object_set_new(j, "mesh", o->mesh_path ? json_string(o->mesh_path) : json_null());
    if (!o->mesh_path)
        json_object_set_new(j, "grid", json_integer(o->grid));
    json_object_set_new(j, "particles", json_integer(r->particles));
    json_object_set_new(j, "springs", json_integer(r->springs));
    json_object_set_new(j, "bending_springs", json_integer(r->bending));
    json_object_set_new(j, "springs_per_particle",
                        json_real(r->particles ? (double)r->springs / (double)r->particles : 0));
    json_object_set_new(j, "colors", json_integer(r->colors));
    json_object_set_new(j, "max_degree", json_integer(r->max_degree));
    json_object_set_new(j, "source", json_string(o->edges ? "edges" : "proximity"));
    json_object_set_new(j, "min_dist", json_real(r->min_dist));
    json_object_set_new(j, "max_dist", json_real(r->max_dist));
    json_object_set_new(j, "mean_edge", json_real(r->mean_edge));
    json_object_set_new(j, "steps", json_integer(o->steps));
    json_object_set_new(j, "S", json_real(p->S));
    json_object_set_new(j, "d", json_real(p->d));
    json_object_set_new(j, "dt", json_real(p->dt));
    json_object_set_new(j, "gravity", json_real(p->gravity));
    json_object_set_new(j, "iterations", json_integer(p->iterations));
    json_object_set_new(j, "projection", json_string(springs_projection_name(p->projection)));
    json_object_set_new(j, "omega",
                        p->projection == SPRINGS_PROJECT_JACOBI ? json_real(springs_jacobi_omega(p))
                                                                : json_null());
    json_object_set_new(j, "chebyshev", json_real(p->rho));
    json_object_set_new(j, "chebyshev_delay", json_integer(p->rho_delay));
    json_object_set_new(j, "bend", json_real(r->bend));
    json_object_set_new(j, "shape", json_real(r->shape));
    json_object_set_new(j, "friction", json_real(p->friction));
    json_object_set_new(j, "mass", json_string(o->mass_by_area ? "area" : "uniform"));
    json_object_set_new(j, "floor", p->floor_on ? json_real(p->floor_y) : json_null());
    json_t *cols = json_array();
    for (int c = 0; c < p->ncolliders; c++) {
        const double *a = p->colliders[c].a;
        json_array_append_new(cols, json_pack("{s:s, s:[f, f, f, f, f, f]}", "type",
                                              springs_collider_names[p->colliders[c].type],
                                              "values", a[0], a[1], a[2], a[3], a[4], a[5]));
    }
    json_object_set_new(j, "colliders", cols);
    json_object_set_new(j, "pinned", json_integer(r->pinned));
    json_object_set_new(j, "ms_per_step",
                        isfinite(r->gpu_ms_per_step) ? json_real(r->gpu_ms_per_step) : json_null());
    json_object_set_new(j, "launch", json_string(springs_launch_name(r->launch)));
    json_object_set_new(j, "work_group_size", json_integer((json_int_t)r->wg_size));
    if (r->fence_local)
        json_object_set_new(j, "fence",
                            json_string("local (CLSOLVE_SPRINGS_FENCE=local: a "
                                        "diagnostic, not conformant)"));
    json_object_set_new(j, "build_s", json_real(r->build_s));
    if (o->cpu) {
        json_object_set_new(j, "cpu_ms_per_step", json_real(r->cpu_ms_per_step));
        json_object_set_new(j, "speedup", json_real(r->cpu_ms_per_step / r->gpu_ms_per_step));
        /* the double reference may blow up where the float device did not */
        json_object_set_new(j, "max_diff_vs_cpu",
                            isfinite(r->max_diff) ? json_real(r->max_diff) : json_null());
    }
    json_object_set_new(j, "height_start", json_real(r->e0.height));
    json_object_set_new(j, "height_end", json_real(r->e1.height));
    json_object_set_new(j, "height_ratio",
                        json_real(r->e0.height > 0 ? r->e1.height / r->e0.height : 1.0));
    json_object_set_new(j, "shape_error", json_real(r->e1.shape_error));
    json_t *e = json_object();
    json_object_set_new(e, "start", springs_energy_json(&r->e0));
    json_object_set_new(e, "end", springs_energy_json(&r->e1));
    json_object_set_new(e, "series", r->series ? json_incref(r->series) : json_array());
    json_object_set_new(j, "energy", e);
    if (r->output)
        json_object_set_new(j, "output", json_incref(r->output));
    json_object_set_new(j, "device", phys_device_json_of(&r->device, r->wg_size));
    return j;
}

char *springs_report_json(const springs_options *o, const springs_report *r)
{
    json_t *j = springs_report_object(o, r);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    return s;
}
