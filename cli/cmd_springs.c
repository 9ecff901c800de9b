/*
 * cmd_springs.c: `clsolve springs`, a mass-spring body run locally: build
 * the springs from a mesh (or the N x N grid), place it, colour them, run
 * the steps on the OpenCL device, optionally beside the single-thread CPU
 * reference, write frames and report. The physics is in physics/springs*.c.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "physics/springs.h"

static const char springs_help[] =
    "usage: clsolve springs MESH|--grid N [options]\n"
    "\n"
    "A position-based mass-spring body (Campa 2010, after Jakobsen 2001) on an\n"
    "OpenCL device: damped Verlet, then per sweep every spring projected towards\n"
    "its rest length (colour by colour, race-free), shape matching, colliders.\n"
    "\n"
    "Body:\n"
    "  MESH                  OBJ, OFF or ASCII PLY; the red vertex colour is a\n"
    "                        per-vertex stiffness k (1 without colours)\n"
    "  --grid N              instead: N x N unit grid in the x-z plane (cloth)\n"
    "  --min-dist X          no spring shorter than X (mesh default 1e-6 of the\n"
    "                        bounding-box diagonal; grid 0.5)\n"
    "  --max-dist X          springs join vertices within X (k_i + k_j) / 2 (mesh\n"
    "                        default 3 mean edge lengths, ~16 springs per particle;\n"
    "                        grid 6.5, the thesis's Plano)\n"
    "  --edges               springs along the mesh edges only\n"
    "  --bend K              bending springs of stiffness K in [0, 1] across every\n"
    "                        interior edge (mesh default 1, grid 0)\n"
    "  --shape A             shape matching stiffness A in [0, 1] (mesh default 0.3,\n"
    "                        grid 0): pulls the body towards its rotated rest shape\n"
    "  --mass uniform|area   particle masses: all 1 (default) or by vertex area\n"
    "  --total-mass M        scale the masses to sum to M\n"
    "  --scale S, --rotate AX,AY,AZ,DEG, --translate X,Y,Z\n"
    "                        place the mesh (in this order) before building\n"
    "  --velocity VX,VY,VZ   initial velocity of every free particle\n"
    "  --pin I,J,...         pin particles by index\n"
    "  --pin-box X0,Y0,Z0,X1,Y1,Z1   pin every particle inside the box\n"
    "\n"
    "Dynamics:\n"
    "  --S S                 spring stiffness in (0, 1] (default 0.5)\n"
    "  --d D                 Verlet damping in [0, 1) (default 0.01)\n"
    "  --dt DT               time step (default 0.01)\n"
    "  --gravity G           along -y (default 9.81)\n"
    "  --iterations N        sweeps per step (default 1)\n"
    "  --projection P        gauss-seidel (default: colour by colour, the thesis's\n"
    "                        order) or jacobi (all springs at once, each particle\n"
    "                        moved by omega times the mean of its corrections: one\n"
    "                        launch per sweep on a GPU, weaker per sweep)\n"
    "  --omega W             Jacobi relaxation, W * S < 2 (default 1.75 / S)\n"
    "  --chebyshev R         Jacobi: Chebyshev acceleration with spectral radius R in\n"
    "                        [0, 1) (default 0: off; Wang 2015)\n"
    "  --chebyshev-delay K   Jacobi: plain sweeps per step before it (default 1)\n"
    "  --steps N             steps (default 100)\n"
    "  --floor Y             a floor plane y = Y\n"
    "  --plane PX,PY,PZ,NX,NY,NZ   a solid half space below the plane (normal out)\n"
    "  --sphere CX,CY,CZ,R   a solid sphere\n"
    "  --box X0,Y0,Z0,X1,Y1,Z1     a solid box\n"
    "  --friction MU         Coulomb friction at every collider (default 0)\n"
    "\n"
    "Device and output:\n"
    "  --launch P            Gauss-Seidel's plan: auto (default: time both), color\n"
    "                        (a launch per colour) or workgroup (one work-group,\n"
    "                        barriers between colours); Jacobi has its own\n"
    "  --cpu                 also run the CPU double reference: time and max difference\n"
    "  --device D            auto (default), cpu, gpu or an index (clsolve devices)\n"
    "  -o, --output FILE     .obj, .ply, .vtk (the final mesh, UVs and normals kept)\n"
    "                        or .pvd (VTK frames and a ParaView collection); another\n"
    "                        extension is a usage error\n"
    "  --every K             a frame every K steps (FILE_000000.EXT, ...) and the last\n"
    "  --energy-every K      record energy and strain every K steps in --json (default:\n"
    "                        every step up to 1000 steps, 1000 records beyond; 0: off)\n"
    "  --json                print the report as JSON\n"
    "  -h, --help            this text\n"
    "\n"
    "Exit codes: 0 done, 2 usage, 3 bad mesh (FILE:LINE: what), 1 other.\n";

/* "3,17,42" into a malloc'ed array */
static int64_t *springs_parse_pins(const cli_args *a, const char *s, int *n)
{
    int cap = 8;
    int64_t *v = malloc((size_t)cap * sizeof *v);
    *n = 0;
    const char *p = s;
    char buf[32];
    while (v) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len >= sizeof buf)
            cli_usage_error("springs", "--pin: '%s' is not a list of particle indices", s);
        memcpy(buf, p, len);
        buf[len] = '\0';
        if (*n == cap) {
            cap *= 2;
            int64_t *q = realloc(v, (size_t)cap * sizeof *q);
            if (!q) {
                free(v);
                return NULL;
            }
            v = q;
        }
        v[(*n)++] = cli_int(a, "--pin", buf, 0);
        if (!comma)
            break;
        p = comma + 1;
    }
    return v;
}

/* Exactly n comma-separated finite numbers, else a usage error. */
static void springs_vec(const char *opt, const char *s, int n, double *out)
{
    const char *p = s;
    for (int k = 0; k < n; k++) {
        char *end;
        out[k] = strtod(p, &end);
        if (end == p || !isfinite(out[k]) || (k + 1 < n ? *end != ',' : *end != '\0'))
            cli_usage_error("springs", "%s: '%s' is not %d comma-separated numbers", opt, s, n);
        p = end + 1;
    }
}

static void springs_add_collider(springs_options *o, springs_collider_type t, const char *opt,
                                 const char *value)
{
    if (o->params.ncolliders == SPRINGS_MAX_COLLIDERS)
        cli_usage_error("springs", "%s: at most %d colliders", opt, SPRINGS_MAX_COLLIDERS);
    springs_collider *c = &o->params.colliders[o->params.ncolliders++];
    memset(c, 0, sizeof *c);
    c->type = t;
    springs_vec(opt, value, t == SPRINGS_SPHERE ? 4 : 6, c->a);
    if (t == SPRINGS_PLANE) {
        double l = sqrt(c->a[3] * c->a[3] + c->a[4] * c->a[4] + c->a[5] * c->a[5]);
        if (!(l > 0))
            cli_usage_error("springs", "%s: the normal is zero", opt);
        for (int k = 3; k < 6; k++)
            c->a[k] /= l;
    }
}

int cmd_springs(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "springs"};
    springs_options o;
    springs_options_default(&o);
    int json = 0;
    int64_t *pins = NULL;
    while (a.i < argc) {
        if (cli_opt(&a, "--grid", NULL, 1))
            o.grid = (int)cli_int(&a, "--grid", a.value, 1);
        else if (cli_opt(&a, "--S", "-S", 1))
            o.params.S = cli_double(&a, "--S", a.value);
        else if (cli_opt(&a, "--d", "-d", 1))
            o.params.d = cli_double(&a, "--d", a.value);
        else if (cli_opt(&a, "--dt", NULL, 1))
            o.params.dt = cli_double(&a, "--dt", a.value);
        else if (cli_opt(&a, "--gravity", NULL, 1))
            o.params.gravity = cli_double(&a, "--gravity", a.value);
        else if (cli_opt(&a, "--iterations", NULL, 1))
            o.params.iterations = (int)cli_int(&a, "--iterations", a.value, 1);
        else if (cli_opt(&a, "--projection", NULL, 1)) {
            if (springs_projection_parse(a.value, &o.params.projection))
                cli_usage_error("springs", "--projection: '%s' is not gauss-seidel or jacobi",
                                a.value);
        } else if (cli_opt(&a, "--omega", NULL, 1))
            o.params.omega = cli_double(&a, "--omega", a.value);
        else if (cli_opt(&a, "--chebyshev", NULL, 1))
            o.params.rho = cli_double(&a, "--chebyshev", a.value);
        else if (cli_opt(&a, "--chebyshev-delay", NULL, 1))
            o.params.rho_delay = (int)cli_int(&a, "--chebyshev-delay", a.value, 1);
        else if (cli_opt(&a, "--steps", NULL, 1))
            o.steps = cli_int(&a, "--steps", a.value, 0);
        else if (cli_opt(&a, "--min-dist", NULL, 1)) {
            /* the driver takes NaN for "not given": a NaN given is refused */
            o.min_dist = cli_double(&a, "--min-dist", a.value);
            if (isnan(o.min_dist))
                cli_usage_error("springs", "min-dist must be finite and >= 0, got %s", a.value);
        } else if (cli_opt(&a, "--max-dist", NULL, 1)) {
            o.max_dist = cli_double(&a, "--max-dist", a.value);
            if (isnan(o.max_dist))
                cli_usage_error("springs", "max-dist must be finite and >= 0, got %s", a.value);
        } else if (cli_opt(&a, "--bend", NULL, 1)) {
            o.bend = cli_double(&a, "--bend", a.value);
            if (isnan(o.bend))
                cli_usage_error("springs", "bend must be in [0, 1], got %s", a.value);
        } else if (cli_opt(&a, "--shape", NULL, 1)) {
            o.params.shape = cli_double(&a, "--shape", a.value);
            if (isnan(o.params.shape))
                cli_usage_error("springs", "shape must be in [0, 1], got %s", a.value);
        } else if (cli_opt(&a, "--friction", NULL, 1))
            o.params.friction = cli_double(&a, "--friction", a.value);
        else if (cli_opt(&a, "--mass", NULL, 1)) {
            if (strcmp(a.value, "uniform") && strcmp(a.value, "area"))
                cli_usage_error("springs", "--mass: '%s' is not uniform or area", a.value);
            o.mass_by_area = !strcmp(a.value, "area");
        } else if (cli_opt(&a, "--total-mass", NULL, 1))
            o.total_mass = cli_double(&a, "--total-mass", a.value);
        else if (cli_opt(&a, "--scale", NULL, 1))
            o.scale = cli_double(&a, "--scale", a.value);
        else if (cli_opt(&a, "--rotate", NULL, 1))
            springs_vec("--rotate", a.value, 4, o.rotate);
        else if (cli_opt(&a, "--translate", NULL, 1))
            springs_vec("--translate", a.value, 3, o.translate);
        else if (cli_opt(&a, "--velocity", NULL, 1))
            springs_vec("--velocity", a.value, 3, o.velocity);
        else if (cli_opt(&a, "--pin-box", NULL, 1)) {
            springs_vec("--pin-box", a.value, 6, o.pin_box);
            o.pin_box_on = 1;
        } else if (cli_opt(&a, "--floor", NULL, 1)) {
            o.params.floor_on = 1;
            o.params.floor_y = cli_double(&a, "--floor", a.value);
        } else if (cli_opt(&a, "--plane", NULL, 1))
            springs_add_collider(&o, SPRINGS_PLANE, "--plane", a.value);
        else if (cli_opt(&a, "--sphere", NULL, 1))
            springs_add_collider(&o, SPRINGS_SPHERE, "--sphere", a.value);
        else if (cli_opt(&a, "--box", NULL, 1))
            springs_add_collider(&o, SPRINGS_BOX, "--box", a.value);
        else if (cli_opt(&a, "--edges", NULL, 0))
            o.edges = 1;
        else if (cli_opt(&a, "--pin", NULL, 1)) {
            free(pins);
            pins = springs_parse_pins(&a, a.value, &o.npins);
            if (!pins) {
                fprintf(stderr, "clsolve springs: out of memory\n");
                return 1;
            }
            o.pins = pins;
        } else if (cli_opt(&a, "--launch", NULL, 1)) {
            if (!strcmp(a.value, "auto"))
                o.launch = SPRINGS_LAUNCH_AUTO;
            else if (!strcmp(a.value, "color"))
                o.launch = SPRINGS_LAUNCH_COLOR;
            else if (!strcmp(a.value, "workgroup"))
                o.launch = SPRINGS_LAUNCH_WORKGROUP;
            else
                cli_usage_error("springs", "--launch: '%s' is not auto, color or workgroup",
                                a.value);
        } else if (cli_opt(&a, "--cpu", NULL, 0))
            o.cpu = 1;
        else if (cli_opt(&a, "--device", NULL, 1))
            o.device = a.value;
        else if (cli_opt(&a, "-o", "--output", 1))
            o.out_path = a.value;
        else if (cli_opt(&a, "--every", NULL, 1))
            o.every = cli_int(&a, "--every", a.value, 1);
        else if (cli_opt(&a, "--energy-every", NULL, 1))
            o.energy_every = cli_int(&a, "--energy-every", a.value, 0);
        else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (cli_opt(&a, "--help", "-h", 0)) {
            fputs(springs_help, stdout);
            free(pins);
            return 0;
        } else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("springs", "unknown option '%s'", argv[a.i]);
        else if (!o.mesh_path)
            o.mesh_path = argv[a.i++];
        else
            cli_usage_error("springs", "unexpected argument '%s'", argv[a.i]);
    }
    if (!o.mesh_path && !o.grid)
        cli_usage_error("springs", "give a mesh file or --grid N");
    if (o.mesh_path && o.grid)
        cli_usage_error("springs", "give a mesh file or --grid N, not both");
    if (o.every && !o.out_path)
        cli_usage_error("springs", "--every needs -o");

    springs_report r;
    cls_error err;
    cls_error_clear(&err);
    int rc = springs_run(&o, &r, &err);
    free(pins);
    if (rc) {
        springs_report_free(&r);
        return cli_report_failure("springs", rc, &err, json);
    }
    if (json) {
        char *s = springs_report_json(&o, &r);
        springs_report_free(&r);
        if (!s) {
            fprintf(stderr, "clsolve springs: out of memory\n");
            return 1;
        }
        puts(s);
        free(s);
        return 0;
    }
    printf("particles %lld, springs %lld (%lld bending), colours %d (max degree %d)\n",
           (long long)r.particles, (long long)r.springs, (long long)r.bending, r.colors,
           r.max_degree);
    printf("device %s: %lld steps, %.4f ms per step (launch %s, work-group %zu)\n", r.device.name,
           (long long)o.steps, r.gpu_ms_per_step, springs_launch_name(r.launch), r.wg_size);
    printf("height %.6g -> %.6g (%.1f%%), largest strain %.3g\n", r.e0.height, r.e1.height,
           r.e0.height > 0 ? 100.0 * r.e1.height / r.e0.height : 100.0, r.e1.max_strain);
    if (o.cpu)
        printf("cpu reference: %.4f ms per step (%.1fx), max |x_gpu - x_cpu| %.3g\n",
               r.cpu_ms_per_step, r.cpu_ms_per_step / r.gpu_ms_per_step, r.max_diff);
    if (o.out_path)
        printf("wrote %s (%lld frame(s))\n", o.out_path, (long long)r.frames);
    springs_report_free(&r);
    return 0;
}
