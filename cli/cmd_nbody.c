/*
 * cmd_nbody.c: `clsolve nbody`, all-pairs gravity run locally: bodies from
 * a CSV (x,y,z,vx,vy,vz,m) or generated, steps on the OpenCL device with
 * the tile size swept at start, accelerations spot-checked against the CPU
 * double sum, final bodies written as CSV. The physics is in
 * physics/nbody.c.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "physics/nbody.h"

static const char nbody_usage[] =
    "usage: clsolve nbody [--bodies in.csv | --random N] [--steps 10] [--dt 1e-3]\n"
    "                     [--softening 1e-2] [--damping 1] [--seed 1] [--tile 0|64..1024]\n"
    "                     [--no-check] [--device auto|cpu|gpu|INDEX] [-o out.csv] [--json]\n";

int cmd_nbody(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "nbody"};
    nbody_options o;
    nbody_options_default(&o);
    int json = 0;
    while (a.i < argc) {
        if (cli_opt(&a, "--bodies", NULL, 1))
            o.bodies_path = a.value;
        else if (cli_opt(&a, "--random", NULL, 1))
            o.random_n = cli_int(&a, "--random", a.value, 1);
        else if (cli_opt(&a, "--steps", NULL, 1))
            o.steps = cli_int(&a, "--steps", a.value, 0);
        else if (cli_opt(&a, "--dt", NULL, 1))
            o.dt = cli_double(&a, "--dt", a.value);
        else if (cli_opt(&a, "--softening", "--eps", 1))
            o.softening = cli_double(&a, "--softening", a.value);
        else if (cli_opt(&a, "--damping", NULL, 1))
            o.damping = cli_double(&a, "--damping", a.value);
        else if (cli_opt(&a, "--seed", NULL, 1))
            o.seed = (uint64_t)cli_int(&a, "--seed", a.value, 0);
        else if (cli_opt(&a, "--tile", NULL, 1))
            o.tile = (int)cli_int(&a, "--tile", a.value, 0);
        else if (cli_opt(&a, "--no-check", NULL, 0))
            o.check = 0;
        else if (cli_opt(&a, "--device", NULL, 1))
            o.device = a.value;
        else if (cli_opt(&a, "-o", "--output", 1))
            o.out_csv = a.value;
        else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (cli_opt(&a, "--help", "-h", 0)) {
            fputs(nbody_usage, stdout);
            return 0;
        } else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("nbody", "unknown option '%s'", argv[a.i]);
        else
            cli_usage_error("nbody", "unexpected argument '%s' (bodies go after --bodies)",
                            argv[a.i]);
    }
    if (!o.bodies_path && !o.random_n)
        cli_usage_error("nbody", "give --bodies FILE or --random N");
    if (o.bodies_path && o.random_n)
        cli_usage_error("nbody", "give --bodies or --random, not both");

    nbody_report r;
    cls_error err;
    cls_error_clear(&err);
    int rc = nbody_run(&o, &r, &err);
    if (rc)
        return cli_report_failure("nbody", rc, &err, json);
    if (json) {
        char *s = nbody_report_json(&o, &r);
        if (!s) {
            fprintf(stderr, "clsolve nbody: out of memory\n");
            return 1;
        }
        puts(s);
        free(s);
        return 0;
    }
    printf("bodies %lld, %lld steps on %s (tile %zu)\n", (long long)r.bodies,
           (long long)r.steps, r.device.name, r.tile);
    printf("%.4f ms per step, %.4g interactions/s, %.1f GFLOP/s (20 flops per interaction)\n",
           r.ms_per_step, r.interactions_per_s, r.gflops);
    printf("momentum drift %.3g", r.momentum_drift);
    if (r.checked_bodies)
        printf(", accelerations vs CPU double: %.3g relative (%lld bodies)", r.accel_rel_error,
               (long long)r.checked_bodies);
    printf("\n");
    if (o.out_csv)
        printf("wrote %s\n", o.out_csv);
    return 0;
}
