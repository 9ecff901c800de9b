/*
 * cmd_deform.c: `clsolve deform`, model-reduction deformers on the chosen
 * OpenCL device (physics/deform.h):
 *
 *   clsolve deform --basis U.mtx --q q.mtx [--mesh M --domains D] -o u.mtx
 *                  [--unfolded out.csv] [--rank R] [--check] [--json]
 *                  [--device auto|cpu|gpu|INDEX]
 *
 * U: Matrix Market (array, or coordinate block diagonal over the domains)
 * or raw little-endian .f32/.f64 (--rank R gives the columns of a single
 * domain). q: one column per frame. u.mtx gets one column per frame. With
 * --mesh the unfolded triangle list is updated per frame (x = R (x0 + u) +
 * p, n = R n0, t = R t0) and, with --unfolded, written as CSV. --check
 * compares every frame with the CPU double reference.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "physics/deform.h"

int cmd_deform(int argc, char **argv);

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
        else if (cli_opt(&a, "-o", "--output", 1))
            o.out_u = a.value;
        else if (cli_opt(&a, "--unfolded", NULL, 1))
            o.out_unfolded = a.value;
        else if (cli_opt(&a, "--rank", NULL, 1))
            o.rank = cli_int(&a, "--rank", a.value, 1);
        else if (cli_opt(&a, "--device", NULL, 1))
            o.device = a.value;
        else if (cli_opt(&a, "--check", NULL, 0))
            o.check = 1;
        else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("deform", "unknown option '%s'", argv[a.i]);
        else
            cli_usage_error("deform", "unexpected argument '%s'", argv[a.i]);
    }
    if (!o.basis)
        cli_usage_error("deform", "no basis given (--basis U.mtx)");
    if (!o.out_u && !json)
        cli_usage_error("deform", "no output: give -o u.mtx (or --json)");
    if (o.out_unfolded && !o.mesh)
        cli_usage_error("deform", "--unfolded needs --mesh");

    cls_error err;
    cls_error_clear(&err);
    json_t *js = NULL;
    int rc = deform_run_local(&o, &js, &err);
    if (json && js) {
        char *s = json_dumps(js, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
        if (s)
            puts(s);
        free(s);
    }
    if (rc)
        fprintf(stderr, "clsolve deform: %s\n", err.msg);
    else if (!json && js) {
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
        if (o.out_unfolded)
            printf("unfolded vertices written to %s\n", o.out_unfolded);
    }
    json_decref(js);
    return rc;
}
