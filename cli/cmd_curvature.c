/*
 * cmd_curvature.c: `clsolve curvature`, the per-vertex curvature tensor of
 * a triangle mesh on the chosen OpenCL device (physics/curvature.h):
 *
 *   clsolve curvature MESH [--estimator face|vertex] -o out.csv|out.ply
 *                    [--json] [--device auto|cpu|gpu|INDEX] [--check]
 *   clsolve curvature --saddle K ...      (a K x K saddle z = x^2 - y^2
 *                                          instead of a mesh file)
 *
 * The output format follows the extension of -o (.ply: ASCII PLY with the
 * curvature as vertex properties; anything else: CSV). --check also runs
 * the CPU double reference and reports the relative difference. The JSON
 * summary is what the `curvature` job records.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "physics/curvature.h"

int cmd_curvature(int argc, char **argv);

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int cmd_curvature(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "curvature"};
    const char *path = NULL, *out = NULL, *device = "auto";
    curv_estimator est = CURV_FACE;
    int json = 0, check = 0, saddle = 0;
    while (a.i < argc) {
        if (cli_opt(&a, "-o", "--output", 1))
            out = a.value;
        else if (cli_opt(&a, "--estimator", NULL, 1)) {
            if (curv_estimator_parse(a.value, &est))
                cli_usage_error("curvature", "--estimator: '%s' is not face or vertex", a.value);
        } else if (cli_opt(&a, "--device", NULL, 1))
            device = a.value;
        else if (cli_opt(&a, "--saddle", NULL, 1))
            saddle = (int)cli_int(&a, "--saddle", a.value, 2);
        else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (cli_opt(&a, "--check", NULL, 0))
            check = 1;
        else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("curvature", "unknown option '%s'", argv[a.i]);
        else if (!path)
            path = argv[a.i++];
        else
            cli_usage_error("curvature", "unexpected argument '%s'", argv[a.i]);
    }
    if (!path && !saddle)
        cli_usage_error("curvature", "no mesh given (MESH or --saddle K)");
    if (path && saddle)
        cli_usage_error("curvature", "give a mesh or --saddle, not both");
    if (saddle > 32767)
        cli_usage_error("curvature", "--saddle: %d is above 32767", saddle);
    if (!out && !json)
        cli_usage_error("curvature", "no output: give -o out.csv|out.ply (or --json)");
    const char *fmt = out && (ends_with(out, ".ply") || ends_with(out, ".PLY")) ? "ply" : "csv";

    cls_error err;
    cls_error_clear(&err);
    json_t *o = NULL;
    int rc = curv_run_local(path, saddle, est, device, check, out, fmt, &o, &err);
    if (json && o) {
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
        if (s)
            puts(s);
        free(s);
    }
    if (rc)
        fprintf(stderr, "clsolve curvature: %s\n", err.msg);
    else if (!json && o) {
        json_t *t = json_object_get(o, "times"), *d = json_object_get(o, "device");
        printf("%s: %lld vertices, %lld faces, estimator %s\n", path ? path : "saddle",
               (long long)json_integer_value(json_object_get(o, "vertices")),
               (long long)json_integer_value(json_object_get(o, "faces")),
               curv_estimator_name(est));
        printf("device: %s (%s)\n", json_string_value(json_object_get(d, "name")),
               json_string_value(json_object_get(d, "platform")));
        printf("estimate: %.3f ms in the kernels, %.3f ms wall; adjacency %.3f s\n",
               json_real_value(json_object_get(t, "kernel_ms")),
               json_real_value(json_object_get(t, "estimate_wall_ms")),
               json_real_value(json_object_get(t, "adjacency_s")));
        json_t *h = json_object_get(o, "H_range"), *k = json_object_get(o, "K_range");
        if (h && k)
            printf("H in [%.6g, %.6g], K in [%.6g, %.6g]\n", json_real_value(json_array_get(h, 0)),
                   json_real_value(json_array_get(h, 1)), json_real_value(json_array_get(k, 0)),
                   json_real_value(json_array_get(k, 1)));
        if (check)
            printf("against the CPU double reference: relative difference %.3e (CPU %.1f ms)\n",
                   json_real_value(json_object_get(o, "rel_diff_vs_cpu_double")),
                   json_real_value(json_object_get(t, "cpu_reference_ms")));
        if (out)
            printf("written to %s (%s)\n", out, fmt);
    }
    json_decref(o);
    return rc;
}
