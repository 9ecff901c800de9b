/*
 * springs_job.c: a springs job's options (the JSON twin of the command
 * line's flags) and the job itself: the uploaded file is the mesh; the
 * outputs go to the job's directory (springs.obj, or springs_NNNNNN.EXT
 * frames with "every", and springs.pvd for "format": "pvd").
 *
 * Options: {"grid": N, "min_dist", "max_dist", "edges", "S", "d", "dt",
 * "gravity", "iterations", "projection": "gauss-seidel"|"jacobi", "omega",
 * "chebyshev", "chebyshev_delay",
 * "steps", "floor", "pin": [i, ...], "launch",
 * "cpu", "bend", "shape", "friction", "mass": "uniform"|"area",
 * "total_mass", "scale", "rotate": [ax, ay, az, degrees], "translate":
 * [x, y, z], "velocity": [vx, vy, vz], "pin_box": [x0, y0, z0, x1, y1, z1],
 * "colliders": [{"type": "plane", "point": [..], "normal": [..]} |
 * {"type": "sphere", "center": [..], "radius": r} | {"type": "box",
 * "min": [..], "max": [..]}], "every", "energy_every", "format":
 * "obj"|"ply"|"vtk"|"pvd"}.
 */
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "job.h"
#include "springs.h"

/* n numbers from a JSON array of exactly n numbers; -1 otherwise. */
static int springs_json_vec(const json_t *v, int n, double *out)
{
    if (!json_is_array(v) || (int)json_array_size(v) != n)
        return -1;
    for (int k = 0; k < n; k++) {
        json_t *e = json_array_get(v, (size_t)k);
        if (!json_is_number(e))
            return -1;
        out[k] = json_number_value(e);
    }
    return 0;
}

static int springs_job_collider(const json_t *c, springs_collider *k, int index, cls_error *err)
{
    const char *type = json_string_value(json_object_get(c, "type"));
    memset(k, 0, sizeof *k);
    int bad = 0;
    if (!json_is_object(c) || !type)
        bad = 1;
    else if (!strcmp(type, "plane")) {
        k->type = SPRINGS_PLANE;
        bad = springs_json_vec(json_object_get(c, "point"), 3, k->a) ||
              springs_json_vec(json_object_get(c, "normal"), 3, k->a + 3) ||
              json_object_size(c) != 3;
    } else if (!strcmp(type, "sphere")) {
        k->type = SPRINGS_SPHERE;
        json_t *r = json_object_get(c, "radius");
        bad = springs_json_vec(json_object_get(c, "center"), 3, k->a) || !json_is_number(r) ||
              json_object_size(c) != 3;
        if (!bad)
            k->a[3] = json_number_value(r);
    } else if (!strcmp(type, "box")) {
        k->type = SPRINGS_BOX;
        bad = springs_json_vec(json_object_get(c, "min"), 3, k->a) ||
              springs_json_vec(json_object_get(c, "max"), 3, k->a + 3) || json_object_size(c) != 3;
    } else
        bad = 1;
    if (bad)
        return cls_fail(err, CLS_EUSAGE,
                        "springs options: collider %d must be {\"type\": \"plane\", \"point\", "
                        "\"normal\"}, {\"type\": \"sphere\", \"center\", \"radius\"} or "
                        "{\"type\": \"box\", \"min\", \"max\"}",
                        index);
    if (k->type == SPRINGS_PLANE) {
        double l = sqrt(k->a[3] * k->a[3] + k->a[4] * k->a[4] + k->a[5] * k->a[5]);
        for (int q = 3; q < 6 && l > 0; q++)
            k->a[q] /= l;
    }
    return CLS_OK;
}

static int springs_job_options(const char *json, springs_options *o, int64_t **pins,
                               phys_format *fmt, cls_error *err)
{
    *pins = NULL;
    if (!json || !*json)
        return CLS_OK;
    json_error_t je;
    json_t *j = json_loads(json, 0, &je);
    if (!j)
        return cls_fail(err, CLS_EUSAGE, "springs options: line %d: %s", je.line, je.text);
    int rc = CLS_OK;
    if (!json_is_object(j)) {
        rc = cls_fail(err, CLS_EUSAGE, "springs options: not a JSON object");
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v)
    {
        static const struct {
            const char *name;
            size_t off;
        } nums[] = {{"min_dist", offsetof(springs_options, min_dist)},
                    {"max_dist", offsetof(springs_options, max_dist)},
                    {"S", offsetof(springs_options, params.S)},
                    {"d", offsetof(springs_options, params.d)},
                    {"dt", offsetof(springs_options, params.dt)},
                    {"gravity", offsetof(springs_options, params.gravity)},
                    {"omega", offsetof(springs_options, params.omega)},
                    {"chebyshev", offsetof(springs_options, params.rho)},
                    {"bend", offsetof(springs_options, bend)},
                    {"shape", offsetof(springs_options, params.shape)},
                    {"friction", offsetof(springs_options, params.friction)},
                    {"total_mass", offsetof(springs_options, total_mass)},
                    {"scale", offsetof(springs_options, scale)}};
        static const struct {
            const char *name;
            size_t off;
            int n;
        } vecs[] = {{"rotate", offsetof(springs_options, rotate), 4},
                    {"translate", offsetof(springs_options, translate), 3},
                    {"velocity", offsetof(springs_options, velocity), 3},
                    {"pin_box", offsetof(springs_options, pin_box), 6}};
        int handled = 0;
        for (size_t q = 0; q < sizeof nums / sizeof nums[0] && !handled; q++)
            if (!strcmp(key, nums[q].name)) {
                if (!json_is_number(v)) {
                    rc = cls_fail(err, CLS_EUSAGE, "springs options: '%s' must be a number", key);
                    goto done;
                }
                *(double *)((char *)o + nums[q].off) = json_number_value(v);
                handled = 1;
            }
        for (size_t q = 0; q < sizeof vecs / sizeof vecs[0] && !handled; q++)
            if (!strcmp(key, vecs[q].name)) {
                if (springs_json_vec(v, vecs[q].n, (double *)((char *)o + vecs[q].off))) {
                    rc = cls_fail(err, CLS_EUSAGE,
                                  "springs options: '%s' must be an array of %d numbers", key,
                                  vecs[q].n);
                    goto done;
                }
                if (!strcmp(key, "pin_box"))
                    o->pin_box_on = 1;
                handled = 1;
            }
        if (handled)
            continue;
        if (!strcmp(key, "floor")) {
            if (json_is_null(v) || json_is_false(v)) {
                o->params.floor_on = 0;
                continue;
            }
            if (!json_is_number(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "springs options: 'floor' must be a number");
                goto done;
            }
            o->params.floor_on = 1;
            o->params.floor_y = json_number_value(v);
        } else if (!strcmp(key, "grid") || !strcmp(key, "iterations") || !strcmp(key, "steps") ||
                   !strcmp(key, "every") || !strcmp(key, "energy_every") ||
                   !strcmp(key, "chebyshev_delay")) {
            if (!json_is_integer(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "springs options: '%s' must be an integer", key);
                goto done;
            }
            json_int_t x = json_integer_value(v);
            if (!strcmp(key, "steps"))
                o->steps = x;
            else if (!strcmp(key, "every"))
                o->every = x;
            else if (!strcmp(key, "energy_every"))
                o->energy_every = x;
            else if (x < INT32_MIN || x > INT32_MAX) {
                rc = cls_fail(err, CLS_EUSAGE, "springs options: '%s' out of range", key);
                goto done;
            } else if (!strcmp(key, "grid"))
                o->grid = (int)x;
            else if (!strcmp(key, "chebyshev_delay"))
                o->params.rho_delay = (int)x;
            else
                o->params.iterations = (int)x;
        } else if (!strcmp(key, "edges") || !strcmp(key, "cpu")) {
            if (!json_is_boolean(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "springs options: '%s' must be true or false", key);
                goto done;
            }
            *(!strcmp(key, "edges") ? &o->edges : &o->cpu) = json_is_true(v);
        } else if (!strcmp(key, "launch")) {
            const char *s = json_string_value(v);
            if (s && !strcmp(s, "auto"))
                o->launch = SPRINGS_LAUNCH_AUTO;
            else if (s && !strcmp(s, "color"))
                o->launch = SPRINGS_LAUNCH_COLOR;
            else if (s && !strcmp(s, "workgroup"))
                o->launch = SPRINGS_LAUNCH_WORKGROUP;
            else {
                rc = cls_fail(err, CLS_EUSAGE,
                              "springs options: 'launch' must be auto, color or workgroup");
                goto done;
            }
        } else if (!strcmp(key, "projection")) {
            if (springs_projection_parse(json_string_value(v), &o->params.projection)) {
                rc = cls_fail(err, CLS_EUSAGE,
                              "springs options: 'projection' must be gauss-seidel or jacobi");
                goto done;
            }
        } else if (!strcmp(key, "mass")) {
            const char *s = json_string_value(v);
            if (!s || (strcmp(s, "uniform") && strcmp(s, "area"))) {
                rc = cls_fail(err, CLS_EUSAGE, "springs options: 'mass' must be uniform or area");
                goto done;
            }
            o->mass_by_area = !strcmp(s, "area");
        } else if (!strcmp(key, "format")) {
            phys_format f = phys_format_parse(json_string_value(v));
            if (!(f & (PHYS_FMT_OBJ | PHYS_FMT_PLY | PHYS_FMT_VTK | PHYS_FMT_PVD))) {
                rc = cls_fail(err, CLS_EUSAGE,
                              "springs options: 'format' must be obj, ply, vtk or pvd");
                goto done;
            }
            *fmt = f;
        } else if (!strcmp(key, "colliders")) {
            if (!json_is_array(v) || json_array_size(v) > SPRINGS_MAX_COLLIDERS) {
                rc = cls_fail(err, CLS_EUSAGE,
                              "springs options: 'colliders' must be an array of at most %d",
                              SPRINGS_MAX_COLLIDERS);
                goto done;
            }
            o->params.ncolliders = (int)json_array_size(v);
            for (int c = 0; c < o->params.ncolliders && !rc; c++)
                rc = springs_job_collider(json_array_get(v, (size_t)c), &o->params.colliders[c], c,
                                          err);
            if (rc)
                goto done;
        } else if (!strcmp(key, "pin")) {
            if (!json_is_array(v)) {
                rc = cls_fail(err, CLS_EUSAGE, "springs options: 'pin' must be an array");
                goto done;
            }
            size_t n = json_array_size(v);
            free(*pins);
            *pins = malloc((n ? n : 1) * sizeof **pins);
            if (!*pins) {
                rc = cls_fail(err, CLS_EOTHER, "springs: out of memory");
                goto done;
            }
            for (size_t i = 0; i < n; i++) {
                json_t *e = json_array_get(v, i);
                if (!json_is_integer(e)) {
                    rc = cls_fail(err, CLS_EUSAGE, "springs options: 'pin' holds a non-integer");
                    goto done;
                }
                (*pins)[i] = json_integer_value(e);
            }
            o->pins = *pins;
            o->npins = (int)n;
        } else {
            rc = cls_fail(err, CLS_EUSAGE, "springs options: unknown option '%s'", key);
            goto done;
        }
    }
done:
    json_decref(j);
    return rc;
}

int springs_job_run(const char *options_json, const char *input_path, const char *out_dir,
                    const char *device, char **result_json, cls_error *err)
{
    *result_json = NULL;
    springs_options o;
    springs_options_default(&o);
    int64_t *pins = NULL;
    phys_format fmt = PHYS_FMT_OBJ;
    int rc = springs_job_options(options_json, &o, &pins, &fmt, err);
    if (rc) {
        free(pins);
        return rc;
    }
    o.mesh_path = input_path;
    o.device = device ? device : "auto";
    if (input_path && o.grid)
        o.grid = 0; /* an uploaded mesh wins over a grid option */
    char out[4096];
    if (out_dir) {
        int n = snprintf(out, sizeof out, "%s/springs.%s", out_dir, phys_format_name(fmt));
        if (n < 0 || (size_t)n >= sizeof out) {
            free(pins);
            return cls_fail(err, CLS_EUSAGE, "springs: output directory name too long");
        }
        o.out_path = out;
    }
    springs_report r;
    rc = springs_run(&o, &r, err);
    free(pins);
    if (rc) {
        springs_report_free(&r);
        return rc;
    }
    json_t *j = springs_report_object(&o, &r);
    json_t *files = json_array();
    phys_output_files(r.output, files);
    springs_report_free(&r);
    return phys_report_result(j, files, result_json, err);
}
