/*
 * clsolve.c: the command-line program's entry point. Each subcommand lives
 * in its own cmd_*.c and returns the process exit code (DESIGN.md: 0
 * converged, 2 usage, 3 bad input, 4 not converged, 5 breakdown, 1 other).
 *
 * Help is answered here for every subcommand, before it parses anything:
 * `clsolve CMD --help` (or -h anywhere before a lone "--") prints CMD's
 * text and exits 0. The texts come from cli/usage/clsolve.txt, the one
 * source of --help, the man page and the bash completion (generated at
 * build time by cmake/gen_cli_docs.py).
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/error.h"
#include "common/affinity.h"
#include "common/mpi_env.h"
#include "common/numfmt.h"
#include "common/trace.h"
#include "common/version.h"
#include "kernels/ocl.h"
#include "kernels/ocl_icd.h"
#include "net/job_params.h"
#include "solver/pc/pc_options.h"

void cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "clsolve %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(run 'clsolve %s --help' for usage)\n", cmd);
    exit(CLS_EUSAGE);
}

int cli_report_failure(const char *cmd, int rc, const cls_error *err, int json)
{
    fprintf(stderr, "clsolve %s: %s\n", cmd, err->msg);
    if (rc == CLS_EUSAGE)
        fprintf(stderr, "(run 'clsolve %s --help' for usage)\n", cmd);
    if (json) {
        json_t *j = json_pack("{s:s, s:i}", "error", err->msg, "exit_code", rc);
        if (j && err->line)
            json_object_set_new(j, "line", json_integer(err->line));
        char *s = j ? cls_json_shorten(json_dumps(j, JSON_PRESERVE_ORDER)) : NULL;
        if (s)
            puts(s);
        free(s);
        json_decref(j);
    }
    return rc;
}

int cli_report_job(const char *cmd, int rc, json_t *js, int json, const cls_error *err)
{
    if (json && js) {
        char *s = json_dumps(js, JSON_INDENT(2) | JSON_REAL_PRECISION(9) | JSON_PRESERVE_ORDER);
        if (s)
            puts(s);
        free(s);
    }
    if (rc)
        cli_report_failure(cmd, rc, err, json && !js); /* one JSON document on stdout */
    return rc == 0 && !json && js;
}

int cli_precond(cli_args *a, pc_options *o, const char **key)
{
    static char k[64];
    char opt[64];
    const char *arg = a->argv[a->i];
    size_t len = strcspn(arg, "=");
    if (strncmp(arg, "--precond", 9) || len >= sizeof opt || len - 2 >= sizeof k)
        return 0;
    memcpy(opt, arg, len);
    opt[len] = '\0';
    memcpy(k, arg + 2, len - 2);
    k[len - 2] = '\0';
    for (char *c = k; *c; c++)
        if (*c == '-')
            *c = '_';
    if (!pc_options_key(k) || !cli_opt(a, opt, NULL, 1))
        return 0;
    cls_error e;
    if (pc_options_set(o, k, a->value, &e)) {
        const char *why = strchr(e.msg, ':'); /* "key: 'x' is not ..." */
        cli_usage_error(a->cmd, "%s%s", opt, why ? why : e.msg);
    }
    *key = k;
    return 1;
}

int cli_solve_param(cli_args *a, job_params *p, const char **key)
{
    static const char *const keys[] = {"tol", "atol", "maxiter", "method", "precision", "backend"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char opt[16];
        snprintf(opt, sizeof opt, "--%s", keys[k]);
        if (!cli_opt(a, opt, NULL, 1))
            continue;
        cls_error e;
        if (job_params_set(p, keys[k], a->value, &e))
            cli_usage_error(a->cmd, "--%s", e.msg); /* "tol: '2' is not ..." */
        *key = keys[k];
        return 1;
    }
    return 0;
}

int cli_opt(cli_args *a, const char *name, const char *alias, int want_value)
{
    const char *arg = a->argv[a->i];
    const char *names[2] = {name, alias};
    for (int n = 0; n < 2; n++) {
        const char *nm = names[n];
        if (!nm)
            continue;
        size_t len = strlen(nm);
        if (strncmp(arg, nm, len) != 0)
            continue;
        if (arg[len] == '\0') {
            if (want_value) {
                if (a->i + 1 >= a->argc)
                    cli_usage_error(a->cmd, "%s needs a value", nm);
                a->value = a->argv[++a->i];
            } else {
                a->value = NULL;
            }
            a->i++;
            return 1;
        }
        if (want_value && arg[len] == '=' && nm[1] == '-') {
            a->value = arg + len + 1;
            a->i++;
            return 1;
        }
    }
    return 0;
}

double cli_double(const cli_args *a, const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno)
        cli_usage_error(a->cmd, "%s: '%s' is not a number", opt, s);
    return v;
}

int64_t cli_int(const cli_args *a, const char *opt, const char *s, int64_t min)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno)
        cli_usage_error(a->cmd, "%s: '%s' is not an integer", opt, s);
    if (v < min)
        cli_usage_error(a->cmd, "%s: %lld is below the minimum %lld", opt, v, (long long)min);
    return v;
}

/* The end of a command in CLSOLVE_TRACE (trace.h): with the trace's wall
 * clock start, what the exit costs after it shows from outside. (Leaving
 * by _exit, or without releasing the devices, saves nothing on one H200:
 * the driver's teardown moves into the exit, 60-70 ms either way.) */
static int main_exit(int rc)
{
    cls_trace("main: command returned");
    return rc;
}

int main(int argc, char **argv)
{
    cls_trace("main: start");
    cls_affinity_share(NULL, 0); /* before any thread: mpirun -np 2 binds a rank to a core */
    ocl_threads_from_affinity(); /* before MPI or OpenCL starts a thread */
    ocl_env_before_threads();    /* PoCL's own setenv, done before any thread */
    ocl_icd_narrow(ocl_icd_device_arg(argc, argv, 2), NULL, 0); /* --device gpu: no PoCL */
    cls_mpi_singleton_env();     /* before MPI_Init: no mpirun, no cluster start-up */
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } cmds[] = {
        {"solve", cmd_solve},         {"check", cmd_check},   {"gen", cmd_gen},
        {"devices", cmd_devices},     {"bench", cmd_bench},   {"tune", cmd_tune},
        {"curvature", cmd_curvature}, {"deform", cmd_deform}, {"springs", cmd_springs},
        {"nbody", cmd_nbody},         {"submit", cmd_submit}, {"status", cmd_status},
        {"wait", cmd_wait},           {"fetch", cmd_fetch},   {"cancel", cmd_cancel},
        {"rm", cmd_rm},
    };
    if (argc < 2) {
        fputs(clsolve_help(NULL), stderr);
        return CLS_EUSAGE;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("clsolve %s (commit %s)\n", cls_version(), cls_commit());
        return 0;
    }
    if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        const char *text = argc > 2 ? clsolve_help(argv[2]) : clsolve_help(NULL);
        if (!text) {
            fprintf(stderr, "clsolve help: unknown command '%s'\n\n%s", argv[2],
                    clsolve_help(NULL));
            return CLS_EUSAGE;
        }
        fputs(text, stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name)) {
            for (int k = 2; k < argc && strcmp(argv[k], "--") != 0; k++)
                if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
                    const char *text = clsolve_help(cmds[i].name);
                    fputs(text ? text : clsolve_help(NULL), stdout);
                    return 0;
                }
            return main_exit(cmds[i].run(argc - 1, argv + 1));
        }
    fprintf(stderr, "clsolve: unknown command '%s'\n\n%s", argv[1], clsolve_help(NULL));
    return CLS_EUSAGE;
}
