/*
 * cmd_devices.c: `clsolve devices` lists the OpenCL devices in discovery
 * order (GPUs first), the numbering `--device INDEX` uses.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "kernels/ocl.h"

int cmd_devices(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "devices"};
    int json = 0;
    while (a.i < argc) {
        if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("devices", "unknown option '%s'", argv[a.i]);
        else
            cli_usage_error("devices", "unexpected argument '%s'", argv[a.i]);
    }
    ocl_device *devs = NULL;
    int n = 0;
    cls_error err;
    int rc = ocl_list_devices(&devs, &n, &err);
    if (rc) {
        fprintf(stderr, "clsolve devices: %s\n", err.msg);
        return rc;
    }
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(
                arr, json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:b}",
                               "index", devs[i].index, "type", ocl_type_name(devs[i].type),
                               "platform", devs[i].platform_name, "name", devs[i].name,
                               "driver", devs[i].driver, "version", devs[i].version,
                               "compute_units", (int)devs[i].compute_units, "global_mem",
                               (json_int_t)devs[i].global_mem, "max_alloc",
                               (json_int_t)devs[i].max_alloc, "local_mem",
                               (json_int_t)devs[i].local_mem, "max_work_group",
                               (json_int_t)devs[i].max_work_group, "fp64", devs[i].fp64));
        char *s = json_dumps(arr, JSON_INDENT(2));
        puts(s);
        free(s);
        json_decref(arr);
    } else {
        printf("%-5s %-11s %-28s %-40s %5s %10s %5s\n", "index", "type", "platform", "name",
               "CUs", "memory", "fp64");
        for (int i = 0; i < n; i++)
            printf("%-5d %-11s %-28.28s %-40.40s %5u %7.1f GB %5s\n", devs[i].index,
                   ocl_type_name(devs[i].type), devs[i].platform_name, devs[i].name,
                   devs[i].compute_units, (double)devs[i].global_mem / 1e9,
                   devs[i].fp64 ? "yes" : "no");
    }
    free(devs);
    return 0;
}
