/*
 * cmd_tune.c: `clsolve tune`: fills the device's tuning database ahead of
 * time (kernels/tune.h; the database: kernels/tunedb.h).
 *
 *   clsolve tune [--device auto|cpu|gpu|INDEX] [--sizes 64,128,256]
 *                [--stencil poisson3d|poisson3d27] [--exhaustive|--early-stop]
 *                [--precision double|float|mixed] [--reps N] [--no-formats]
 *                [--quick] [--dry-run] [--json]
 *
 * Sizes are poisson3d N; each lands in a size class (rows < 2^17, < 2^20,
 * < 2^23, larger) and one matrix per class is measured. For every kernel
 * the table shows the best configuration (local size x groups per compute
 * unit), its median time, the time of Bueno's start (one group per compute
 * unit at the largest local size) and the gain over it, the untuned
 * default's time, and the early-stopped choice with how close it comes to
 * the best. --exhaustive (default on GPUs) measures the whole grid and
 * replays the early stop over it; --early-stop (default on CPUs) measures
 * only what the walk visits, and its "best" is then the walk's own.
 * --quick caps the grid (tests); --dry-run does not write the database.
 * Last, the device's figures (solver/devfig.h: the whole CG iteration's
 * time at two sizes, which `--device auto` compares across devices, and on
 * GPUs cg-small's, which `--method auto` compares with cg's) are measured
 * and stored; --figures measures only them (seconds).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kernels/tune.h"
#include "solver/devfig.h"

static void tune_print_line(void *ctx, const char *line)
{
    if (!*(int *)ctx) {
        printf("%s\n", line);
        fflush(stdout);
    }
}

/* Measures dev's figures (devfig_measure) and, with save, stores them in
 * its database. json: 1 prints them as the whole output, 2 (after the
 * kernels' JSON) prints nothing, 0 prints a line each. */
static int tune_figures(const ocl_device *dev, la_precision prec, int quick, int save, int json,
                        cls_error *err)
{
    tunedb_figure fig[DEVFIG_MAX];
    int nf = 0, rc = devfig_measure(dev, prec, quick, fig, &nf, err);
    char path[4400] = "";
    if (!rc && save) {
        tunedb db;
        char warn[1200];
        if (!tunedb_path(dev, path, sizeof path))
            rc = cls_fail(err, CLS_EOTHER, "no directory for the tuning database");
        if (!rc) {
            if (tunedb_load(path, dev, &db, warn, sizeof warn) == 2)
                tunedb_init(&db, dev); /* ignored: replaced */
            for (int k = 0; k < nf; k++)
                tunedb_put_figure(&db, &fig[k]);
            rc = tunedb_save(path, &db, err);
            tunedb_free(&db);
        }
    }
    if (rc) {
        fprintf(stderr, "clsolve tune: figures of %s: %s\n", dev->name, err->msg);
        return rc;
    }
    if (json == 1) {
        json_t *arr = json_array();
        for (int k = 0; k < nf; k++)
            json_array_append_new(arr,
                                  json_pack("{s:s, s:s, s:I, s:I, s:f}", "method", fig[k].method,
                                            "precision", fig[k].precision, "rows",
                                            (json_int_t)fig[k].rows, "nnz", (json_int_t)fig[k].nnz,
                                            "ms_per_iteration", fig[k].ms));
        json_t *root = json_pack("{s:s, s:s, s:s, s:s, s:b, s:o}", "device", dev->name, "platform",
                                 dev->platform_name, "driver", dev->driver, "database", path,
                                 "saved", save, "figures", arr);
        char *s = json_dumps(root, JSON_INDENT(2));
        puts(s);
        free(s);
        json_decref(root);
    } else if (json == 0) {
        for (int k = 0; k < nf; k++)
            printf(
                "figure: %s: poisson3d, %lld rows, %lld entries: %.4f ms per %s iteration (%s)\n",
                dev->name, fig[k].rows, fig[k].nnz, fig[k].ms, fig[k].method, fig[k].precision);
        if (save)
            printf("figures written to %s\n", path);
    }
    return CLS_OK;
}

int cmd_tune(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "tune"};
    const char *sizes = NULL, *device = "auto", *stencil = "poisson3d";
    int json = 0, mode = -1, reps = 5, formats = 1, quick = 0, dry = 0, figures_only = 0;
    la_precision prec = LA_DOUBLE;
    while (a.i < argc) {
        if (cli_opt(&a, "--sizes", NULL, 1))
            sizes = a.value;
        else if (cli_opt(&a, "--device", NULL, 1))
            device = a.value;
        else if (cli_opt(&a, "--stencil", NULL, 1))
            stencil = a.value;
        else if (cli_opt(&a, "--exhaustive", NULL, 0))
            mode = 1;
        else if (cli_opt(&a, "--early-stop", NULL, 0))
            mode = 0;
        else if (cli_opt(&a, "--reps", NULL, 1))
            reps = (int)cli_int(&a, "--reps", a.value, 5);
        else if (cli_opt(&a, "--no-formats", NULL, 0))
            formats = 0;
        else if (cli_opt(&a, "--quick", NULL, 0))
            quick = 1;
        else if (cli_opt(&a, "--dry-run", NULL, 0))
            dry = 1;
        else if (cli_opt(&a, "--figures", NULL, 0))
            figures_only = 1;
        else if (cli_opt(&a, "--precision", NULL, 1)) {
            if (!strcmp(a.value, "double"))
                prec = LA_DOUBLE;
            else if (!strcmp(a.value, "float"))
                prec = LA_FLOAT;
            else if (!strcmp(a.value, "mixed"))
                prec = LA_MIXED;
            else
                cli_usage_error("tune", "--precision: '%s' is not double, float or mixed", a.value);
        } else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("tune", "unknown option '%s'", argv[a.i]);
        else
            cli_usage_error("tune", "unexpected argument '%s'", argv[a.i]);
    }

    cls_error err;
    cls_error_clear(&err);
    ocl_device dev;
    int rc = ocl_pick_device(device, &dev, &err);
    if (rc) {
        fprintf(stderr, "clsolve tune: %s\n", err.msg);
        return rc;
    }
    if (figures_only)
        return tune_figures(&dev, prec, quick, !dry, json, &err);
    int cpu = (dev.type & CL_DEVICE_TYPE_CPU) != 0;
    if (!sizes)
        sizes = cpu ? "40,64" : "64,128,256";
    if (mode < 0)
        mode = cpu ? 0 : 1;
    int64_t ns[16];
    int nn = 0;
    char *list = strdup(sizes);
    for (char *tok = strtok(list, ","); tok && nn < 16; tok = strtok(NULL, ","))
        ns[nn++] = cli_int(&a, "--sizes", tok, 2);
    free(list);

    tune_options o = {.device = device,
                      .sizes = ns,
                      .nsizes = nn,
                      .stencil = stencil,
                      .exhaustive = mode,
                      .reps = reps,
                      .prec = prec,
                      .save = !dry,
                      .max_local = quick ? 256 : 0,
                      .max_ladder = quick ? 5 : 0,
                      .formats = formats,
                      .progress = tune_print_line,
                      .progress_ctx = &json};
    if (!json) {
        printf("device: %s (%s, driver %s), %u compute units, max work-group %zu\n", dev.name,
               dev.platform_name, dev.driver, dev.compute_units, dev.max_work_group);
        printf("mode: %s, median of %d runs after a warm-up, precision %s\n",
               mode ? "exhaustive grid (early stop replayed on it)" : "early stop", reps,
               la_precision_str(prec));
        printf("%-14s %-10s %-6s %-9s %s\n", "kernel", "matrix", "size", "shape",
               "best (local x groups/CU), Bueno's start (1 group/CU, largest local) and gain, "
               "early-stopped choice");
    }
    tune_report rep;
    rc = tune_run(&o, &rep, &err);
    if (rc) {
        fprintf(stderr, "clsolve tune: %s\n", err.msg);
        tune_report_free(&rep);
        if (!dry && (rc = tune_figures(&dev, prec, quick, 1, json ? 2 : 0, &err)))
            return rc;
        return rc;
    }
    /* summary: geometric mean gain and early/best ratio over the kernels */
    double lg = 0, le = 0, ld = 0;
    int cnt = 0;
    for (int i = 0; i < rep.n; i++) {
        const tunedb_entry *e = &rep.e[i];
        if (!strcmp(e->kernel, "format") || !(e->ms > 0) || !(e->bueno_ms > 0) ||
            !(e->early_ms > 0))
            continue;
        lg += log(e->bueno_ms / e->ms);
        le += log(e->early_ms / e->ms);
        ld += e->default_ms > 0 ? log(e->default_ms / e->ms) : 0;
        cnt++;
    }
    double gain = cnt ? exp(lg / cnt) : 0, early = cnt ? exp(le / cnt) : 0,
           gdef = cnt ? exp(ld / cnt) : 0;
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < rep.n; i++) {
            const tunedb_entry *e = &rep.e[i];
            json_t *o2 = json_pack("{s:s, s:s, s:s, s:s, s:s}", "kernel", e->kernel, "matrix",
                                   rep.matrix[i], "size_class", tunedb_class_name(e->size_class),
                                   "shape", e->shape, "precision", e->precision);
            if (!strcmp(e->kernel, "format")) {
                json_object_set_new(o2, "format", json_string(e->format));
                json_object_set_new(o2, "ms", json_real(e->ms));
            } else {
                json_object_set_new(o2, "best",
                                    json_pack("{s:I, s:I, s:I, s:f}", "local_size",
                                              (json_int_t)e->local_size, "groups_per_cu",
                                              (json_int_t)e->groups_per_cu, "param",
                                              (json_int_t)e->param, "ms", e->ms));
                json_object_set_new(o2, "bueno_start",
                                    json_pack("{s:f, s:f}", "ms", e->bueno_ms, "gain",
                                              e->ms > 0 ? e->bueno_ms / e->ms : 0.0));
                json_object_set_new(o2, "default",
                                    json_pack("{s:f, s:f}", "ms", e->default_ms, "gain",
                                              e->ms > 0 ? e->default_ms / e->ms : 0.0));
                json_object_set_new(o2, "early_stop",
                                    json_pack("{s:I, s:I, s:f, s:f, s:i}", "local_size",
                                              (json_int_t)e->early_local_size, "groups_per_cu",
                                              (json_int_t)e->early_groups_per_cu, "ms", e->early_ms,
                                              "ratio_to_best",
                                              e->ms > 0 ? e->early_ms / e->ms : 0.0, "points",
                                              e->early_points));
                json_object_set_new(o2, "grid_points", json_integer(e->points));
                json_object_set_new(o2, "exhaustive", json_boolean(e->exhaustive));
            }
            json_array_append_new(arr, o2);
        }
        json_t *root = json_pack("{s:s, s:s, s:s, s:s, s:b, s:s, s:f, s:o, s:{s:f, s:f, s:f}}",
                                 "device", rep.dev.name, "platform", rep.dev.platform_name,
                                 "driver", rep.dev.driver, "database", rep.path, "saved", rep.saved,
                                 "mode", mode ? "exhaustive" : "early-stop", "seconds", rep.seconds,
                                 "entries", arr, "summary", "gain_over_bueno_start", gain,
                                 "gain_over_default", gdef, "early_stop_over_best", early);
        char *s = json_dumps(root, JSON_INDENT(2));
        puts(s);
        free(s);
        json_decref(root);
    } else {
        printf("summary over %d kernels (geometric mean): best is %.2fx faster than Bueno's "
               "start and %.2fx faster than the untuned default; the early-stopped choice "
               "takes %.3fx the %s best\n",
               cnt, gain, gdef, early, mode ? "exhaustive" : "walk's");
        printf("database: %s (%s), %.1f s\n", rep.path, rep.saved ? "written" : "not written",
               rep.seconds);
    }
    tune_report_free(&rep);
    return 0;
}
