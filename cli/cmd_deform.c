/*
 * cmd_deform.c: `clsolve deform`, model-reduction deformers on the chosen
 * OpenCL device (physics/deform.h). -o may be given more than once; each
 * output's extension says what it is: .mtx the displacements u (one column
 * per frame), .obj / .ply / .vtk / .pvd the deformed mesh of every frame
 * (needs --mesh).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "physics/deform.h"
#include "physics/frame.h"

int cmd_deform(int argc, char **argv);

static const char deform_help[] =
    "usage: clsolve deform --basis U --q q.mtx [--mesh M [--domains D]] -o OUT [-o OUT ...]\n"
    "                      [--unfolded x.csv] [--rank R] [--check] [--json] [--device D]\n"
    "\n"
    "Model-reduction deformer (Wang 2015): per frame u = U q and, with a mesh, the\n"
    "vertex update x = R_d (x0 + u) + p_d of every domain d, on an OpenCL device.\n"
    "\n"
    "  --basis, -U FILE   the basis U, 3n x R: Matrix Market (array, or coordinate\n"
    "                     block diagonal over the domains) or raw little-endian\n"
    "                     .f32 / .f64 (blocks one after another, column-major)\n"
    "  --q, -q FILE       reduced coordinates, R x F (column f = frame f): Matrix\n"
    "                     Market or raw .f32 / .f64; not needed for rigid domains only\n"
    "  --rank R           columns of a raw basis without --domains\n"
    "  --mesh FILE        the rest mesh (OBJ, OFF, ASCII PLY) whose n vertices U moves\n"
    "  --domains FILE     domains and their rigid transforms per frame (see\n"
    "                     docs/physics-curvature-deform.md)\n"
    "  -o, --output FILE  by extension: .mtx writes u (3n x F); .obj, .ply, .vtk\n"
    "                     write the deformed mesh of each frame (one frame: FILE;\n"
    "                     several: FILE_000000.EXT, ...); .pvd writes VTK frames and\n"
    "                     the ParaView collection FILE.pvd. Give -o more than once\n"
    "                     for several outputs; another extension is a usage error\n"
    "  --unfolded FILE    the updated unfolded triangle list as CSV (frame, corner,\n"
    "                     vertex, domain, x, y, z, nx, ny, nz, tx, ty, tz); needs --mesh\n"
    "  --check            compare every frame with the CPU double reference\n"
    "  --device D         auto (default), cpu, gpu or an index (clsolve devices)\n"
    "  --json             print the summary as JSON\n"
    "  -h, --help         this text\n"
    "\n"
    "Exit codes: 0 done, 2 usage, 3 bad input (FILE:LINE: what), 1 other.\n";

int cmd_deform(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "deform"};
    deform_run_opts o;
    memset(&o, 0, sizeof o);
    o.device = "auto";
    int json = 0;
    while (a.i < argc) {
        if (cli_opt(&a, "--basis", "-U", 1))
            o.basis = a.value;
        else if (cli_opt(&a, "--q", "-q", 1))
            o.q = a.value;
        else if (cli_opt(&a, "--mesh", NULL, 1))
            o.mesh = a.value;
        else if (cli_opt(&a, "--domains", NULL, 1))
            o.domains = a.value;
        else if (cli_opt(&a, "-o", "--output", 1)) {
            phys_format f;
            cls_error e;
            if (phys_format_of_path(a.value,
                                    PHYS_FMT_MTX | PHYS_FMT_OBJ | PHYS_FMT_PLY | PHYS_FMT_VTK |
                                        PHYS_FMT_PVD,
                                    "deform", &f, &e))
                cli_usage_error("deform", "%s", e.msg);
            if (f == PHYS_FMT_MTX)
                o.out_u = a.value;
            else
                o.out_mesh = a.value;
        } else if (cli_opt(&a, "--unfolded", NULL, 1))
            o.out_unfolded = a.value;
        else if (cli_opt(&a, "--rank", NULL, 1))
            o.rank = cli_int(&a, "--rank", a.value, 1);
        else if (cli_opt(&a, "--device", NULL, 1))
            o.device = a.value;
        else if (cli_opt(&a, "--check", NULL, 0))
            o.check = 1;
        else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (cli_opt(&a, "--help", "-h", 0)) {
            fputs(deform_help, stdout);
            return 0;
        } else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("deform", "unknown option '%s'", argv[a.i]);
        else
            cli_usage_error("deform", "unexpected argument '%s'", argv[a.i]);
    }
    if (!o.basis)
        cli_usage_error("deform", "no basis given (--basis U.mtx)");
    if (!o.out_u && !o.out_mesh && !json)
        cli_usage_error("deform", "no output: give -o u.mtx (or --json)");
    if (o.out_unfolded && !o.mesh)
        cli_usage_error("deform", "--unfolded needs --mesh");
    if (o.out_mesh && !o.mesh)
        cli_usage_error("deform", "-o %s: a deformed mesh needs --mesh", o.out_mesh);

    cls_error err;
    cls_error_clear(&err);
    json_t *js = NULL;
    int rc = deform_run_local(&o, &js, &err);
    if (cli_report_job("deform", rc, js, json, &err)) {
        json_t *t = json_object_get(js, "times"), *d = json_object_get(js, "device");
        printf("%s: %lld vertices, %lld domain(s), %lld modes, %lld frame(s)\n", o.basis,
               (long long)json_integer_value(json_object_get(js, "vertices")),
               (long long)json_integer_value(json_object_get(js, "domains")),
               (long long)json_integer_value(json_object_get(js, "modes")),
               (long long)json_integer_value(json_object_get(js, "frames")));
        printf("device: %s (%s)\n", json_string_value(json_object_get(d, "name")),
               json_string_value(json_object_get(d, "platform")));
        printf("per frame: u = U q %.4f ms",
               json_real_value(json_object_get(t, "uq_kernel_ms_per_frame")));
        if (o.mesh)
            printf(", vertex update %.4f ms (%lld corners)",
                   json_real_value(json_object_get(t, "update_kernel_ms_per_frame")),
                   (long long)json_integer_value(json_object_get(js, "corners")));
        printf("\n");
        if (o.check) {
            printf("against the CPU double reference: max relative error u %.3e",
                   json_real_value(json_object_get(js, "max_rel_err_u")));
            if (o.mesh)
                printf(", vertices %.3e",
                       json_real_value(json_object_get(js, "max_rel_err_vertices")));
            printf("\n");
        }
        if (o.out_u)
            printf("u written to %s\n", o.out_u);
        json_t *mo = json_object_get(js, "mesh_output");
        if (mo)
            printf("deformed mesh: %lld frame(s) from %s\n",
                   (long long)json_integer_value(json_object_get(mo, "frames")), o.out_mesh);
        if (o.out_unfolded)
            printf("unfolded vertices written to %s\n", o.out_unfolded);
    }
    json_decref(js);
    return rc;
}
