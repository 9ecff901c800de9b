/*
 * cmd_curvature.c: `clsolve curvature`, the per-vertex curvature tensor of
 * a triangle mesh on the chosen OpenCL device (physics/curvature.h), with
 * the angle-defect Gauss-Bonnet check; the output format follows the
 * extension of -o. The JSON summary is what the `curvature` job records.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "physics/curvature.h"

int cmd_curvature(int argc, char **argv);

static const char curvature_help[] =
    "usage: clsolve curvature MESH|--saddle K -o OUT.csv|.ply|.vtk [options]\n"
    "       clsolve curvature MESH|--saddle K --json [options]\n"
    "\n"
    "Per-vertex principal curvatures k1 >= k2, directions, mean H and Gaussian K\n"
    "of a triangle mesh (OBJ, OFF, ASCII PLY) on the 1-ring (Rusinkiewicz 2004),\n"
    "on an OpenCL device. Outward normals: a sphere of radius R has H = +1/R.\n"
    "\n"
    "  MESH                 the mesh file\n"
    "  --saddle K           instead of a mesh: K x K saddle z = x^2 - y^2 on [-1,1]^2\n"
    "  --estimator E        face (default: per-face tensors averaged with mixed\n"
    "                       Voronoi areas) or vertex (least squares on the 1-ring)\n"
    "  -o, --output FILE    .csv: one line per vertex; .ply / .vtk: the mesh with the\n"
    "                       values as vertex properties / point data and vertex\n"
    "                       colours (cool-warm diverging map); another extension is\n"
    "                       a usage error\n"
    "  --color-by V         the coloured value: H (default), K, k1, k2, K_defect\n"
    "  --color-range X      colours span [-X, X] (default: the 90th percentile of\n"
    "                       |value| over the interior vertices)\n"
    "  --check              also run the CPU double reference and report the\n"
    "                       relative difference\n"
    "  --device D           auto (default), cpu, gpu or an index (clsolve devices)\n"
    "  --json               print the summary as JSON: topology (Euler\n"
    "                       characteristic, boundary), gauss_bonnet (angle defect\n"
    "                       and the estimator's integral of K against 2 pi chi),\n"
    "                       ranges, device, times\n"
    "  -h, --help           this text\n"
    "\n"
    "Boundary vertices (on an edge with one face) get a one-sided estimate; they\n"
    "are flagged (boundary = 1), drawn grey and left out of the ranges.\n"
    "Exit codes: 0 done, 2 usage, 3 bad mesh (FILE:LINE: what), 1 other.\n";

int cmd_curvature(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "curvature"};
    curv_run_opts o = {.est = CURV_FACE, .device = "auto", .color_range = NAN};
    int json = 0, which;
    while (a.i < argc) {
        if (cli_opt(&a, "-o", "--output", 1))
            o.out_path = a.value;
        else if (cli_opt(&a, "--estimator", NULL, 1)) {
            if (curv_estimator_parse(a.value, &o.est))
                cli_usage_error("curvature", "--estimator: '%s' is not face or vertex", a.value);
        } else if (cli_opt(&a, "--device", NULL, 1))
            o.device = a.value;
        else if (cli_opt(&a, "--saddle", NULL, 1))
            o.saddle_k = (int)cli_int(&a, "--saddle", a.value, 2);
        else if (cli_opt(&a, "--color-by", NULL, 1)) {
            if (curv_color_by_parse(a.value, &which))
                cli_usage_error("curvature", "--color-by: '%s' is not H, K, k1, k2 or K_defect",
                                a.value);
            o.color_by = a.value;
        } else if (cli_opt(&a, "--color-range", NULL, 1)) {
            o.color_range = cli_double(&a, "--color-range", a.value);
            if (!(o.color_range > 0.0) || !isfinite(o.color_range))
                cli_usage_error("curvature", "--color-range: '%s' is not a number > 0", a.value);
        } else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (cli_opt(&a, "--check", NULL, 0))
            o.check = 1;
        else if (cli_opt(&a, "--help", "-h", 0)) {
            fputs(curvature_help, stdout);
            return 0;
        } else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("curvature", "unknown option '%s'", argv[a.i]);
        else if (!o.mesh_path)
            o.mesh_path = argv[a.i++];
        else
            cli_usage_error("curvature", "unexpected argument '%s'", argv[a.i]);
    }
    if (!o.mesh_path && !o.saddle_k)
        cli_usage_error("curvature", "no mesh given (MESH or --saddle K)");
    if (o.mesh_path && o.saddle_k)
        cli_usage_error("curvature", "give a mesh or --saddle, not both");
    if (o.saddle_k > 32767)
        cli_usage_error("curvature", "--saddle: %d is above 32767", o.saddle_k);
    if (!o.out_path && !json)
        cli_usage_error("curvature", "no output: give -o out.csv|out.ply|out.vtk (or --json)");

    cls_error err;
    cls_error_clear(&err);
    json_t *js = NULL;
    int rc = curv_run_local(&o, &js, &err);
    if (cli_report_job("curvature", rc, js, json, &err)) {
        json_t *t = json_object_get(js, "times"), *d = json_object_get(js, "device");
        json_t *gb = json_object_get(js, "gauss_bonnet");
        long long nf = (long long)json_integer_value(json_object_get(js, "faces"));
        long long nt = (long long)json_integer_value(json_object_get(js, "triangles"));
        char tris[48] = "";
        if (nt != nf) /* polygons: the triangles they became too */
            snprintf(tris, sizeof tris, " (%lld triangles)", nt);
        printf("%s: %lld vertices, %lld faces%s, %lld on the boundary, estimator %s\n",
               o.mesh_path ? o.mesh_path : "saddle",
               (long long)json_integer_value(json_object_get(js, "vertices")), nf, tris,
               (long long)json_integer_value(json_object_get(js, "boundary_vertices")),
               curv_estimator_name(o.est));
        printf("device: %s (%s)\n", json_string_value(json_object_get(d, "name")),
               json_string_value(json_object_get(d, "platform")));
        printf("estimate: %.3f ms in the kernels, %.3f ms wall; adjacency %.3f s\n",
               json_real_value(json_object_get(t, "kernel_ms")),
               json_real_value(json_object_get(t, "estimate_wall_ms")),
               json_real_value(json_object_get(t, "adjacency_s")));
        json_t *h = json_object_get(js, "H_range"), *k = json_object_get(js, "K_range");
        if (h && k)
            printf("interior H in [%.6g, %.6g], K in [%.6g, %.6g]\n",
                   json_real_value(json_array_get(h, 0)), json_real_value(json_array_get(h, 1)),
                   json_real_value(json_array_get(k, 0)), json_real_value(json_array_get(k, 1)));
        if (gb) {
            printf("Gauss-Bonnet: chi = %lld; angle defect / 2 pi = %.9g (relative error %.2g)",
                   (long long)json_integer_value(json_object_get(gb, "euler_characteristic")),
                   json_real_value(json_object_get(gb, "angle_defect_over_2pi")),
                   json_real_value(json_object_get(gb, "angle_defect_rel_error")));
            json_t *e = json_object_get(gb, "estimator_over_2pi");
            if (json_is_number(e))
                printf("; estimator's integral of K / 2 pi = %.6g", json_real_value(e));
            printf("\n");
        }
        if (o.check)
            printf("against the CPU double reference: relative difference %.3e (CPU %.1f ms)\n",
                   json_real_value(json_object_get(js, "rel_diff_vs_cpu_double")),
                   json_real_value(json_object_get(t, "cpu_reference_ms")));
        if (o.out_path)
            printf("written to %s (%s)\n", o.out_path,
                   json_string_value(json_object_get(js, "format")));
    }
    json_decref(js);
    return rc;
}
