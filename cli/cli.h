/*
 * cli.h: what the clsolve subcommands share: a small option parser that
 * accepts "--name value" and "--name=value", number parsing that rejects
 * trailing junk, and the usage-error exit.
 */
#ifndef CLS_CLI_CLI_H
#define CLS_CLI_CLI_H

#include <stdint.h>

/* Option cursor over argv[first..argc). */
typedef struct cli_args {
    int argc, i;
    char **argv;
    const char *cmd; /* subcommand, for messages */
    const char *value;
} cli_args;

/* Returns 1 and sets a->value when argv[i] is the option `name` (taking a
 * value if want_value), advancing the cursor; 0 otherwise. A missing value
 * exits with code 2. */
int cli_opt(cli_args *a, const char *name, const char *alias, int want_value);

/* Parsers that exit 2 with "clsolve CMD: --opt: 'x' is not ..." on error. */
double cli_double(const cli_args *a, const char *opt, const char *s);
int64_t cli_int(const cli_args *a, const char *opt, const char *s, int64_t min);

/* Reports a failed command: "clsolve CMD: message" on stderr (plus the
 * --help hint for a usage error) and, with json, {"error", "exit_code",
 * "line"} on stdout for scripts. Returns rc. */
struct cls_error;
int cli_report_failure(const char *cmd, int rc, const struct cls_error *err, int json);

/* The end of a job command that reports in a JSON object js (curvature,
 * deform): js on stdout with --json (also a failed job's, as far as it
 * got), the failure as cli_report_failure says it. Returns 1 where the
 * caller's text summary follows (success, no --json). */
struct json_t;
int cli_report_job(const char *cmd, int rc, struct json_t *js, int json,
                   const struct cls_error *err);

/* The preconditioner's options, --precond NAME and --precond-KEY VALUE
 * (--precond-degree, --precond-sweeps, ...: the keys of
 * solver/pc_options.h with '-' for '_'): when argv[i] is one, consumes it,
 * checks it with pc_options_set (a usage error, exit 2, names the option)
 * and returns 1 with *key (pc_options_set's key, a static buffer) and
 * a->value set; 0 otherwise. */
struct pc_options;
int cli_precond(cli_args *a, struct pc_options *o, const char **key);

/* The solve's parameters, --tol, --atol, --maxiter, --method and
 * --precision: when argv[i] is one, consumes it, checks it with
 * net/job_params.h's job_params_set (the daemon's check of the same query
 * parameter: one rule and one message, "--tol: '2' is not a number in
 * (0, 1)", a usage error, exit 2) and returns 1 with *key (the parameter's
 * name) and a->value set; 0 otherwise. */
struct job_params;
int cli_solve_param(cli_args *a, struct job_params *p, const char **key);

/* Prints "clsolve CMD: message" and the usage hint, exits 2. */
void cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* Generated from cli/usage/clsolve.txt (cmake/gen_cli_docs.py): the text
 * `clsolve CMD --help` prints (cmd NULL: `clsolve --help`), NULL for an
 * unknown command; and the commands, NULL-terminated. */
const char *clsolve_help(const char *cmd);
extern const char *const clsolve_help_commands[];

int cmd_solve(int argc, char **argv);
/* clsolve solve A1.mtx A2.mtx ...: the batch (solve_batch.c); the exit code */
struct solve_options;
int cli_solve_batch(const char *const *paths, int n, const struct solve_options *opt, int json,
                    const char *out_dir);
int cmd_check(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_curvature(int argc, char **argv);
int cmd_deform(int argc, char **argv);
int cmd_springs(int argc, char **argv);
int cmd_nbody(int argc, char **argv);
int cmd_submit(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_fetch(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_rm(int argc, char **argv);

#endif
