/*
 * clsolve.c: the command-line program's entry point. Each subcommand lives
 * in its own cmd_*.c and returns the process exit code (DESIGN.md: 0
 * converged, 2 usage, 3 bad input, 4 not converged, 5 breakdown, 1 other).
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/error.h"
#include "common/mpi_env.h"
#include "kernels/ocl.h"

static const char usage[] =
    "usage: clsolve COMMAND [options]\n"
    "\n"
    "  solve A.mtx [-b b.mtx] [--x0 x0.mtx] [-o x.mtx] [--tol 1e-8] [--maxiter N]\n"
    "              [--precond none|jacobi] [--method cg|pipecg]\n"
    "              [--precision double|float|mixed]\n"
    "              [--format auto|csr|csr-vector|csr-adaptive|sell|bcsr]\n"
    "              [--device auto|cpu|gpu|INDEX[,INDEX...]] [--devices-per-rank N]\n"
    "              [--min-rows-per-part R] [--read-everywhere] [--json] [-v]\n"
    "      solve A x = b with conjugate gradients; without -b, b = A*1; under\n"
    "      mpirun -np K the system is split across ranks and their devices\n"
    "  check A.mtx [--json]        parse and describe: size, entries, symmetry, diagonal\n"
    "  gen poisson2d|poisson3d|poisson3d27 N -o A.mtx\n"
    "                              write a standard stencil matrix\n"
    "  devices [--json]            list OpenCL devices in the order --device counts them\n"
    "  bench [--sizes 64,128] [--stencil poisson3d|poisson3d27] [--iters N] [--json]\n"
    "                              ms per CG iteration and per kernel against the\n"
    "                              bandwidth floor\n"
    "  curvature MESH|--saddle K [--estimator face|vertex] -o out.csv|out.ply [--check]\n"
    "            [--device auto|cpu|gpu|INDEX] [--json]\n"
    "                              per-vertex curvature: k1, k2, directions, H, K\n"
    "  deform --basis U.mtx --q q.mtx [--mesh M --domains D] -o u.mtx [--unfolded x.csv]\n"
    "         [--rank R] [--check] [--device auto|cpu|gpu|INDEX] [--json]\n"
    "                              u = U q per frame and the rigid vertex update\n"
    "  springs MESH|--grid N [--S --d --dt --gravity --iterations --steps --min-dist\n"
    "          --max-dist --floor --edges] [-o out.obj] [--json]\n"
    "                              position-based mass-spring body (see --help)\n"
    "  nbody [--bodies in.csv | --random N] --steps S --dt --softening -o out.csv [--json]\n"
    "                              all-pairs gravity (see --help)\n"
    "  submit A.mtx [-b b.mtx] [--x0 x0.mtx] [--tol T] [--maxiter N] [--precond none|jacobi]\n"
    "         [--wait] [-o x.mtx] [--json] [--server URL] [--token-file F]\n"
    "                              send a system to a clsolved daemon ($CLSOLVE_SERVER, "
    "$CLSOLVE_TOKEN)\n"
    "  status ID [--json] | wait ID [-o x.mtx] [--timeout S] | fetch ID -o x.mtx [--format "
    "mtx|json|binary]\n"
    "  cancel ID                   follow, download or cancel a daemon job\n"
    "\n"
    "exit codes: 0 ok, 1 other error, 2 usage, 3 bad input, 4 not converged, 5 breakdown\n";

void cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "clsolve %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(run 'clsolve help' for usage)\n");
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
        char *s = j ? json_dumps(j, JSON_PRESERVE_ORDER) : NULL;
        if (s)
            puts(s);
        free(s);
        json_decref(j);
    }
    return rc;
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

int main(int argc, char **argv)
{
    ocl_threads_from_affinity(); /* before MPI or OpenCL starts a thread */
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
        fputs(usage, stderr);
        return CLS_EUSAGE;
    }
    if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "clsolve: unknown command '%s'\n\n%s", argv[1], usage);
    return CLS_EUSAGE;
}
