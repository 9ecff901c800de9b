/*
 * cmd_nbody.c: `clsolve nbody`, all-pairs gravity run locally: bodies from
 * a CSV (x,y,z,vx,vy,vz,m) or generated (uniform ball, Plummer sphere,
 * disk), steps on the OpenCL device with the tile size swept at start,
 * accelerations spot-checked against the CPU double sum, energy and
 * momentum drifts, frames written every K steps. The physics is in
 * physics/nbody*.c.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "physics/nbody.h"

static const char nbody_help[] =
    "usage: clsolve nbody --bodies in.csv | --random N | --plummer N | --disk N [options]\n"
    "\n"
    "All-pairs gravity (G = 1), tiled in local memory (Nyland et al. 2007):\n"
    "a_i = sum_j m_j r_ij / (|r_ij|^2 + eps2)^(3/2) on an OpenCL device.\n"
    "\n"
    "  --bodies FILE          CSV with columns x,y,z,vx,vy,vz,m (optional header)\n"
    "  --random N             N bodies uniform in the unit ball, small random velocities\n"
    "  --plummer N            a Plummer sphere in Henon units (G = M = 1, E = -1/4)\n"
    "  --disk N               a central mass 1 and N-1 bodies (mass 0.1 in all) on\n"
    "                         circular orbits in the x-y plane\n"
    "  --seed S               generator seed (default 1)\n"
    "  --steps N              steps (default 10)\n"
    "  --dt DT                time step (default 1e-3)\n"
    "  --integrator I         euler (default: v += a dt, x += v dt, the thesis's order)\n"
    "                         or leapfrog (kick-drift-kick, second order, symplectic)\n"
    "  --softening EPS        Plummer softening length: eps2 = EPS^2 is added to\n"
    "                         |r|^2 (default 1e-2)\n"
    "  --softening-thesis S   the thesis's convention (Camillo 2018, eq. 4.2): S itself\n"
    "                         is added to |r|^2 (eps2 = S); overrides --softening\n"
    "  --damping D            velocities scaled by D in [0, 1] each step (default 1)\n"
    "  --tile T               work-group size, a power of two up to 1024 (default 0:\n"
    "                         timed sweep)\n"
    "  --no-check             skip the accelerations check against the CPU double sum\n"
    "  -o, --output FILE      by extension: .csv (the bodies), .ply, .vtk, .obj (points\n"
    "                         with velocity and mass), .pvd (VTK frames and a ParaView\n"
    "                         collection); another extension is a usage error\n"
    "  --every K              a frame every K steps (FILE_000000.EXT, ...) and the last;\n"
    "                         without it only the final state is written\n"
    "  --device D             auto (default), cpu, gpu or an index (clsolve devices)\n"
    "  --json                 print the report as JSON: ms_per_step, GFLOP/s, energy\n"
    "                         (start, end, drift, series), momentum and angular\n"
    "                         momentum drift, softening and its convention\n"
    "  -h, --help             this text\n"
    "\n"
    "Exit codes: 0 done, 2 usage, 3 bad bodies file (FILE:LINE: what), 5 the state\n"
    "stopped being finite (the message names the step), 1 other.\n";

int cmd_nbody(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "nbody"};
    nbody_options o;
    nbody_options_default(&o);
    int json = 0, generators = 0;
    while (a.i < argc) {
        if (cli_opt(&a, "--bodies", NULL, 1))
            o.bodies_path = a.value;
        else if (cli_opt(&a, "--random", NULL, 1)) {
            o.random_n = cli_int(&a, "--random", a.value, 1);
            o.ic = NBODY_IC_RANDOM;
            generators++;
        } else if (cli_opt(&a, "--plummer", NULL, 1)) {
            o.random_n = cli_int(&a, "--plummer", a.value, 1);
            o.ic = NBODY_IC_PLUMMER;
            generators++;
        } else if (cli_opt(&a, "--disk", NULL, 1)) {
            o.random_n = cli_int(&a, "--disk", a.value, 2);
            o.ic = NBODY_IC_DISK;
            generators++;
        } else if (cli_opt(&a, "--steps", NULL, 1))
            o.steps = cli_int(&a, "--steps", a.value, 0);
        else if (cli_opt(&a, "--dt", NULL, 1))
            o.dt = cli_double(&a, "--dt", a.value);
        else if (cli_opt(&a, "--softening", "--eps", 1))
            o.softening = cli_double(&a, "--softening", a.value);
        else if (cli_opt(&a, "--softening-thesis", NULL, 1)) {
            o.softening_thesis = cli_double(&a, "--softening-thesis", a.value);
            if (!(o.softening_thesis > 0))
                cli_usage_error("nbody", "--softening-thesis: '%s' is not a number > 0", a.value);
        } else if (cli_opt(&a, "--damping", NULL, 1))
            o.damping = cli_double(&a, "--damping", a.value);
        else if (cli_opt(&a, "--integrator", NULL, 1)) {
            if (nbody_integrator_parse(a.value, &o.integrator))
                cli_usage_error("nbody", "--integrator: '%s' is not euler or leapfrog", a.value);
        } else if (cli_opt(&a, "--seed", NULL, 1))
            o.seed = (uint64_t)cli_int(&a, "--seed", a.value, 0);
        else if (cli_opt(&a, "--tile", NULL, 1))
            o.tile = (int)cli_int(&a, "--tile", a.value, 0);
        else if (cli_opt(&a, "--no-check", NULL, 0))
            o.check = 0;
        else if (cli_opt(&a, "--every", NULL, 1))
            o.every = cli_int(&a, "--every", a.value, 1);
        else if (cli_opt(&a, "--device", NULL, 1))
            o.device = a.value;
        else if (cli_opt(&a, "-o", "--output", 1))
            o.out_path = a.value;
        else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (cli_opt(&a, "--help", "-h", 0)) {
            fputs(nbody_help, stdout);
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
    if (generators > 1)
        cli_usage_error("nbody", "give one of --random, --plummer and --disk");
    if (o.every && !o.out_path)
        cli_usage_error("nbody", "--every needs -o");

    nbody_report r;
    cls_error err;
    cls_error_clear(&err);
    int rc = nbody_run(&o, &r, &err);
    if (rc) {
        nbody_report_free(&r);
        return cli_report_failure("nbody", rc, &err, json);
    }
    if (json) {
        char *s = nbody_report_json(&o, &r);
        nbody_report_free(&r);
        if (!s) {
            fprintf(stderr, "clsolve nbody: out of memory\n");
            return 1;
        }
        puts(s);
        free(s);
        return 0;
    }
    printf("bodies %lld, %lld steps (%s) on %s (tile %zu)\n", (long long)r.bodies,
           (long long)r.steps, nbody_integrator_name(o.integrator), r.device.name, r.tile);
    printf("%.4f ms per step, %.4g interactions/s, %.1f GFLOP/s (20 flops per interaction)\n",
           r.ms_per_step, r.interactions_per_s, r.gflops);
    printf("energy %.9g -> %.9g (relative drift at the end %.3g, largest %.3g at step %lld); "
           "momentum drift %.3g, angular %.3g\n",
           r.energy0, r.energy1, r.energy_drift, r.energy_max_drift, (long long)r.energy_max_step,
           r.momentum_drift, r.angmom_drift);
    if (r.checked_bodies)
        printf("accelerations vs CPU double: %.3g relative (%lld bodies)\n", r.accel_rel_error,
               (long long)r.checked_bodies);
    if (o.out_path)
        printf("wrote %s (%lld frame(s))\n", o.out_path, (long long)r.frames);
    nbody_report_free(&r);
    return 0;
}
