/*
 * cmd_springs.c: `clsolve springs`, a mass-spring body run locally: build
 * the springs from a mesh (or the N x N grid), colour them, run the steps on
 * the OpenCL device, optionally beside the single-thread CPU reference,
 * write the final mesh and report. The physics is in physics/springs.c.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "physics/springs.h"

static const char springs_usage[] =
    "usage: clsolve springs MESH|--grid N [--S 0.5] [--d 0.01] [--dt 0.01] [--gravity 9.81]\n"
    "                       [--iterations 1] [--steps 100] [--min-dist X] [--max-dist X]\n"
    "                       [--floor Y] [--edges] [--pin I,J,...] [--launch auto|color|workgroup]\n"
    "                       [--cpu] [--device auto|cpu|gpu|INDEX] [-o out.obj] [--json]\n";

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
        }
        else if (cli_opt(&a, "--floor", NULL, 1)) {
            o.params.floor_on = 1;
            o.params.floor_y = cli_double(&a, "--floor", a.value);
        } else if (cli_opt(&a, "--edges", NULL, 0))
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
            o.out_obj = a.value;
        else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (cli_opt(&a, "--help", "-h", 0)) {
            fputs(springs_usage, stdout);
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

    springs_report r;
    cls_error err;
    cls_error_clear(&err);
    int rc = springs_run(&o, &r, &err);
    free(pins);
    if (rc)
        return cli_report_failure("springs", rc, &err, json);
    if (json) {
        char *s = springs_report_json(&o, &r);
        if (!s) {
            fprintf(stderr, "clsolve springs: out of memory\n");
            return 1;
        }
        puts(s);
        free(s);
        return 0;
    }
    printf("particles %lld, springs %lld, colours %d (max degree %d)\n",
           (long long)r.particles, (long long)r.springs, r.colors, r.max_degree);
    printf("device %s: %lld steps, %.4f ms per step (launch %s, work-group %zu)\n",
           r.device.name, (long long)o.steps, r.gpu_ms_per_step, springs_launch_name(r.launch),
           r.wg_size);
    if (o.cpu)
        printf("cpu reference: %.4f ms per step (%.1fx), max |x_gpu - x_cpu| %.3g\n",
               r.cpu_ms_per_step, r.cpu_ms_per_step / r.gpu_ms_per_step, r.max_diff);
    if (o.out_obj)
        printf("wrote %s\n", o.out_obj);
    return 0;
}
