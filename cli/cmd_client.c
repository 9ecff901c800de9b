/*
 * cmd_client.c: the commands that talk to a clsolved daemon:
 *
 *   clsolve submit A.mtx [-b b.mtx] [--x0 x0.mtx] [--tol T] [--atol A] [--maxiter N]
 *                  [--precond NAME] [--precond-degree N ...]
 *                  [--method auto|cg|cg-single|cg-small|pipecg|bcg]
 *                  [--precision double|float|mixed]
 *                  [--backend auto|opencl|native]
 *                  [--wait] [--monitor] [-o x.mtx] [--json]
 *   clsolve status ID [--json]
 *   clsolve wait ID [-o x.mtx] [--json] [--timeout S] [--monitor]
 *   clsolve fetch ID -o x.mtx [--format mtx|json|binary]
 *   clsolve cancel ID
 *
 * Every command takes --server URL (else $CLSOLVE_SERVER, else
 * http://127.0.0.1:8080; http or https), --token-file F (else
 * $CLSOLVE_TOKEN), --cacert F (else $CLSOLVE_CACERT, else the system's CA
 * store), --connect-timeout S, --request-timeout S and --retries N (of a
 * 503, after its Retry-After): http_client.h, on libcurl. submit
 * sends the matrix as the raw body, or as multipart/form-data when a
 * right-hand side or an initial guess goes with it, streaming the files
 * from disk. wait polls (0.1 s, backing off to 1 s) and draws a progress
 * bar on a terminal: the residual's way from 1 down to tol on a log scale.
 *
 * Exit codes are those of `clsolve solve`: 0 converged (or, for status,
 * cancel and submit without --wait, the request worked and the job is not
 * failed), 3 bad input (a 400 answer, or a job failed on its input), 4 not
 * converged, 5 breakdown, 1 anything else (unreachable server, 401, 404,
 * cancelled job, a file to send that cannot be read: as FILE-OPEN of
 * `clsolve solve`), 2 usage (a token too long or holding a control
 * character too). submit checks its files before it connects.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common/error.h"
#include "common/numfmt.h"
#include "common/timer.h"
#include "net/fileio.h"
#include "net/job_params.h"
#include "http_client.h"
#include "progress.h"

typedef struct client {
    const char *cmd;
    http_url url;
    char *token;
    http_client_opts opts;
} client;

/* The connection options every client command takes. */
typedef struct conn_args {
    const char *server, *token_file, *cacert;
    double connect_timeout, request_timeout;
    int64_t retries; /* -1: the default */
} conn_args;

/* Consumes --server, --token-file, --cacert, --connect-timeout,
 * --request-timeout and --retries; returns 1 when argv[a->i] was one. */
static int client_opt(cli_args *a, conn_args *ca)
{
    if (cli_opt(a, "--server", NULL, 1))
        ca->server = a->value;
    else if (cli_opt(a, "--token-file", NULL, 1))
        ca->token_file = a->value;
    else if (cli_opt(a, "--cacert", NULL, 1))
        ca->cacert = a->value;
    else if (cli_opt(a, "--connect-timeout", NULL, 1)) {
        ca->connect_timeout = cli_double(a, "--connect-timeout", a->value);
        if (!(ca->connect_timeout > 0))
            cli_usage_error(a->cmd, "--connect-timeout must be > 0, got %s", a->value);
    } else if (cli_opt(a, "--request-timeout", NULL, 1)) {
        ca->request_timeout = cli_double(a, "--request-timeout", a->value);
        if (!(ca->request_timeout >= 1))
            cli_usage_error(a->cmd, "--request-timeout must be >= 1, got %s", a->value);
    } else if (cli_opt(a, "--retries", NULL, 1))
        ca->retries = cli_int(a, "--retries", a->value, 0);
    else
        return 0;
    return 1;
}

static void client_init(client *c, const char *cmd, const conn_args *ca)
{
    cls_error err;
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    const char *server = ca->server, *token_file = ca->token_file;
    if (!server)
        server = getenv("CLSOLVE_SERVER");
    if (!server || !*server)
        server = "http://127.0.0.1:8080";
    if (http_url_parse(server, &c->url, &err))
        cli_usage_error(cmd, "%s", err.msg);
    http_client_opts_default(&c->opts);
    c->opts.cmd = cmd;
    c->opts.cacert = ca->cacert;
    if (!c->opts.cacert && getenv("CLSOLVE_CACERT") && *getenv("CLSOLVE_CACERT"))
        c->opts.cacert = getenv("CLSOLVE_CACERT");
    if (c->opts.cacert && access(c->opts.cacert, R_OK) != 0)
        cli_usage_error(cmd, "--cacert: %s: cannot open: %s", c->opts.cacert, strerror(errno));
    if (ca->connect_timeout > 0)
        c->opts.connect_timeout_s = ca->connect_timeout;
    if (ca->request_timeout > 0)
        c->opts.stall_timeout_s = ca->request_timeout;
    if (ca->retries >= 0)
        c->opts.retries = (int)ca->retries;
    const char *source = NULL;
    char srcbuf[4200];
    if (token_file) {
        char *text = NULL;
        if (fileio_read_small(token_file, 4096, &text, NULL, &err))
            cli_usage_error(cmd, "--token-file: %s", err.msg);
        char *s = text;
        while (*s == ' ' || *s == '\t')
            s++;
        size_t n = strcspn(s, "\r\n");
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
            n--;
        s[n] = '\0';
        c->token = strdup(s);
        free(text);
        snprintf(srcbuf, sizeof srcbuf, "--token-file: %s", token_file);
        source = srcbuf;
    } else if (getenv("CLSOLVE_TOKEN") && *getenv("CLSOLVE_TOKEN")) {
        c->token = strdup(getenv("CLSOLVE_TOKEN"));
        source = "$CLSOLVE_TOKEN";
    }
    if (source && !c->token) {
        fprintf(stderr, "clsolve %s: out of memory for the token\n", cmd);
        exit(CLS_EOTHER);
    }
    /* checked here, as a usage error, before any request is built */
    if (c->token && http_token_check(c->token, source, &err))
        cli_usage_error(cmd, "%s", err.msg);
}

/* One request of this client (see http_client.h). */
static int client_request(const client *c, const char *method, const char *target,
                          const char *ctype, const char *header, const http_part *parts, int nparts,
                          int out_fd, http_response *r, cls_error *err)
{
    return http_request(&c->url, &c->opts, method, target, c->token, ctype, header, parts, nparts,
                        out_fd, r, err);
}

static void client_free(client *c) { free(c->token); }

static int valid_id(const char *s)
{
    size_t n = strlen(s);
    return n == 32 && strspn(s, "0123456789abcdef") == 32;
}

/* A non-2xx answer as a message and an exit code. */
static int client_http_error(const client *c, const http_response *r)
{
    char d[1200];
    long long line;
    http_problem_detail(r, d, sizeof d, &line);
    fprintf(stderr, "clsolve %s: %s (HTTP %d)\n", c->cmd, d, r->status);
    if (r->status == 401)
        fprintf(stderr, "clsolve %s: give the token with --token-file or $CLSOLVE_TOKEN\n", c->cmd);
    if (r->status == 503 && r->retry_after[0])
        fprintf(stderr,
                "clsolve %s: the server asks to retry after %s s (retried %d time%s; "
                "--retries N)\n",
                c->cmd, r->retry_after, r->retried, r->retried == 1 ? "" : "s");
    return r->status == 400 ? CLS_EINPUT : CLS_EOTHER;
}

/* wait_s > 0: a long poll (the server answers when the job ends, or after
 * wait_s: net/job_wait.h). */
static int client_get_job(const client *c, const char *id, double wait_s, json_t **job)
{
    char target[96];
    if (wait_s > 0)
        snprintf(target, sizeof target, "/v1/jobs/%s?wait=%.3g", id, wait_s);
    else
        snprintf(target, sizeof target, "/v1/jobs/%s", id);
    http_response r;
    cls_error err;
    *job = NULL;
    if (client_request(c, "GET", target, NULL, NULL, NULL, 0, -1, &r, &err)) {
        fprintf(stderr, "clsolve %s: %s\n", c->cmd, err.msg);
        return CLS_EOTHER;
    }
    int rc = CLS_OK;
    if (r.status != 200) {
        rc = client_http_error(c, &r);
    } else if (!(*job = json_loads(r.body, 0, NULL))) {
        fprintf(stderr, "clsolve %s: the server's answer is not JSON\n", c->cmd);
        rc = CLS_EOTHER;
    }
    http_response_free(&r);
    return rc;
}

/* The exit code a finished (or not) job stands for. */
static int job_exit_code(json_t *job)
{
    const char *st = json_string_value(json_object_get(job, "status"));
    if (!st)
        return CLS_EOTHER;
    if (!strcmp(st, "succeeded") || !strcmp(st, "queued") || !strcmp(st, "running"))
        return CLS_OK;
    if (!strcmp(st, "failed")) {
        json_t *e = json_object_get(json_object_get(job, "error"), "exit_code");
        int code = json_is_integer(e) ? (int)json_integer_value(e) : CLS_EOTHER;
        return code >= 1 && code <= 5 && code != CLS_EUSAGE ? code : CLS_EOTHER;
    }
    return CLS_EOTHER; /* cancelled */
}

static double jnum(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The job for people (or as JSON). with_error: also its error message (a
 * status report); a wait prints that once, on stderr, instead. */
static void print_job(json_t *job, int json, int with_error)
{
    if (json) {
        char *s = cls_json_shorten(json_dumps(job, JSON_INDENT(2) | JSON_REAL_PRECISION(17)));
        if (s)
            puts(s);
        free(s);
        return;
    }
    const char *st = json_string_value(json_object_get(job, "status"));
    json_t *in = json_object_get(job, "inputs");
    const char *name = json_string_value(json_object_get(in, "matrix"));
    if (!name)
        name = json_string_value(json_object_get(in, "input"));
    printf("job %s: %s %s%s%s\n", json_string_value(json_object_get(job, "id")),
           json_string_value(json_object_get(job, "kind")), st ? st : "?", name ? ", " : "",
           name ? name : "");
    json_t *pr = json_object_get(job, "progress");
    json_t *res = json_object_get(job, "result");
    json_t *e = json_object_get(job, "error");
    if (st && (!strcmp(st, "queued") || !strcmp(st, "running"))) {
        const char *ph = json_string_value(json_object_get(pr, "phase"));
        printf("progress: %s", ph ? ph : "?");
        if (ph && !strcmp(ph, "solving"))
            printf(", iteration %lld, residual %.3e",
                   (long long)json_integer_value(json_object_get(pr, "iteration")),
                   jnum(pr, "residual"));
        if (json_is_number(json_object_get(pr, "eta_s")))
            printf(", about %.0f s left", jnum(pr, "eta_s"));
        putchar('\n');
    }
    if (st && !strcmp(st, "cancelled")) {
        /* a cancel is not a solve that ran out of iterations: say so, with
         * the iteration and residual the record shows (its progress, which
         * `status --json` shows too), and no true residual, never computed */
        json_t *it = json_object_get(pr, "iteration");
        if (!json_is_integer(it) || json_integer_value(it) <= 0)
            it = json_object_get(res, "iterations");
        if (json_is_integer(it) && json_integer_value(it) > 0) {
            printf("cancelled after %lld iterations", (long long)json_integer_value(it));
            if (isfinite(jnum(pr, "residual")))
                printf(": relative residual %.3e", jnum(pr, "residual"));
            putchar('\n');
        }
    } else if (json_is_object(res) && json_object_get(res, "iterations")) {
        printf("%s after %lld iterations: relative residual %.3e",
               json_is_true(json_object_get(res, "converged")) ? "converged" : "not converged",
               (long long)json_integer_value(json_object_get(res, "iterations")),
               jnum(res, "relative_residual"));
        /* the true residual only when there is one (null or absent: not
         * computed), never "(true nan)" */
        if (isfinite(jnum(res, "true_relative_residual")))
            printf(" (true %.3e)", jnum(res, "true_relative_residual"));
        putchar('\n');
    }
    if (with_error && json_is_object(e))
        printf("error: %s\n", json_string_value(json_object_get(e, "message")));
}

/* The progress line while waiting (cli/progress.h), from the job's progress. */
static void wait_progress(cli_progress *p, json_t *job, int force)
{
    json_t *pr = json_object_get(job, "progress");
    const char *st = json_string_value(json_object_get(job, "status"));
    const char *ph = json_string_value(json_object_get(pr, "phase"));
    cli_progress_phase(p, st && !strcmp(st, "queued") ? "queued" : ph ? ph : "?");
    json_t *it = json_object_get(pr, "iteration");
    double eta = jnum(pr, "eta_s");
    cli_progress_draw(p, json_is_integer(it) ? json_integer_value(it) : -1, jnum(pr, "residual"),
                      jnum(json_object_get(job, "parameters"), "tol"), isfinite(eta) ? eta : -1,
                      force);
}

/* Downloads the solution into path (temporary file, then rename). */
static int client_fetch(const client *c, const char *id, const char *path, const char *format)
{
    char tmp[4200], target[96];
    snprintf(tmp, sizeof tmp, "%s.part", path);
    snprintf(target, sizeof target, "/v1/jobs/%s/solution?format=%s", id, format);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "clsolve %s: %s: cannot create: %s\n", c->cmd, tmp, strerror(errno));
        return CLS_EOTHER;
    }
    http_response r;
    cls_error err;
    int rc = client_request(c, "GET", target, NULL, NULL, NULL, 0, fd, &r, &err);
    if (close(fd) != 0 && !rc)
        rc = cls_fail(&err, CLS_EOTHER, "%s: close failed: %s", tmp, strerror(errno));
    if (rc) {
        fprintf(stderr, "clsolve %s: %s\n", c->cmd, err.msg);
        unlink(tmp);
        return CLS_EOTHER;
    }
    if (r.status != 200) {
        rc = client_http_error(c, &r);
        http_response_free(&r);
        unlink(tmp);
        return rc == CLS_EINPUT ? CLS_EOTHER : rc;
    }
    http_response_free(&r);
    if (rename(tmp, path) != 0) {
        fprintf(stderr, "clsolve %s: %s: rename failed: %s\n", c->cmd, path, strerror(errno));
        unlink(tmp);
        return CLS_EOTHER;
    }
    return CLS_OK;
}

/* GET /v1/jobs/ID/residuals?since=K as JSON (NULL on any failure: the
 * monitor and the history are extras, never a reason to fail a wait). */
static json_t *client_residuals(const client *c, const char *id, int64_t since)
{
    char target[128];
    snprintf(target, sizeof target, "/v1/jobs/%s/residuals?since=%lld", id, (long long)since);
    http_response r;
    cls_error err;
    if (client_request(c, "GET", target, NULL, NULL, NULL, 0, -1, &r, &err))
        return NULL;
    json_t *o = r.status == 200 ? json_loads(r.body, 0, NULL) : NULL;
    http_response_free(&r);
    return o;
}

/* --monitor: prints the iterations from *next on as `clsolve solve
 * --monitor` does ("K KSP relative residual norm R"). Entry j of an answer
 * is iteration first_iteration + start + j; the live history and the final
 * one may start at different iterations, so lines are chosen by iteration
 * number, never printed twice. */
static void client_monitor(const client *c, const char *id, int64_t *next, int64_t *first, FILE *to)
{
    json_t *o = client_residuals(c, id, *next - *first > 0 ? *next - *first : 0);
    if (!o)
        return;
    int64_t f = json_integer_value(json_object_get(o, "first_iteration"));
    int64_t st = json_integer_value(json_object_get(o, "start"));
    json_t *a = json_object_get(o, "residuals");
    for (size_t j = 0; j < json_array_size(a); j++) {
        int64_t it = f + st + (int64_t)j;
        json_t *v = json_array_get(a, j);
        if (it < *next || !json_is_number(v))
            continue;
        fprintf(to, "%5lld KSP relative residual norm %.12e\n", (long long)it,
                json_number_value(v));
        *next = it + 1;
    }
    *first = f;
    fflush(to);
    json_decref(o);
}

/* Waits until the job ends; prints it; fetches x when asked and there.
 * Each request is a long poll (?wait=S): answered as soon as the job ends,
 * so a finished job is seen at once and nothing polls meanwhile. While
 * progress or residuals are shown (redrawn at each answer) S grows from
 * 0.02 s to 1 s by half each time, so that short phases are seen (from
 * 0.1 s, a parse and set-up of 80 ms, 12 MB on the 2-core machine, went
 * unseen: the first answer already said "solving"); else it is 20 s; within
 * --timeout and the request's stall limit (--request-timeout).
 * monitor: print the residuals as they come (to stdout, or stderr with
 * --json). With --json the printed job carries its residual history. */
static int client_wait(const client *c, const char *id, const char *out, int json, double timeout_s,
                       int monitor)
{
    int64_t mon_next = 0, mon_first = 0;
    FILE *mon_to = json ? stderr : stdout;
    double start = cls_now(), step = 0.02;
    cli_progress prog;
    cli_progress_init(&prog, isatty(2) && !monitor);
    json_t *job = NULL;
    for (;;) {
        json_decref(job);
        double wait_s = prog.tty || monitor ? step : 20.0;
        step = step * 1.5 > 1.0 ? 1.0 : step * 1.5;
        if (wait_s > c->opts.stall_timeout_s / 2)
            wait_s = c->opts.stall_timeout_s / 2;
        if (timeout_s > 0 && wait_s > timeout_s - (cls_now() - start))
            wait_s = timeout_s - (cls_now() - start);
        int rc = client_get_job(c, id, wait_s > 0.05 ? wait_s : 0.05, &job);
        if (rc) {
            cli_progress_end(&prog);
            return rc;
        }
        const char *st = json_string_value(json_object_get(job, "status"));
        if (monitor && st && strcmp(st, "queued") != 0)
            client_monitor(c, id, &mon_next, &mon_first, mon_to);
        if (st && strcmp(st, "queued") != 0 && strcmp(st, "running") != 0)
            break;
        wait_progress(&prog, job, 0);
        if (timeout_s > 0 && cls_now() - start > timeout_s) {
            cli_progress_end(&prog);
            fprintf(stderr, "clsolve %s: job %s still %s after %.0f s\n", c->cmd, id, st,
                    timeout_s);
            json_decref(job);
            return CLS_EOTHER;
        }
    }
    cli_progress_end(&prog); /* erased: the result follows */
    if (json && !strcmp(json_string_value(json_object_get(job, "kind")), "cg")) {
        /* the residual history beside the job, as `clsolve solve --json` */
        json_t *h = client_residuals(c, id, 0);
        json_t *a = json_object_get(h, "residuals");
        if (json_is_array(a))
            json_object_set(job, "residuals", a);
        json_decref(h);
    }
    print_job(job, json, 0);
    int rc = job_exit_code(job);
    json_t *res = json_object_get(job, "result");
    if (out && json_is_true(json_object_get(res, "solution_available"))) {
        int frc = client_fetch(c, id, out, "mtx");
        if (frc && rc == CLS_OK)
            rc = frc;
        else if (!frc && !json)
            printf("solution written to %s\n", out);
    } else if (out && rc == CLS_OK) {
        fprintf(stderr, "clsolve %s: job %s has no solution to write\n", c->cmd, id);
        rc = CLS_EOTHER;
    }
    /* the error, once (not in the summary above too) */
    json_t *e = json_object_get(job, "error");
    if (json_is_object(e))
        fprintf(stderr, "clsolve %s: %s\n", c->cmd, json_string_value(json_object_get(e, "message")));
    json_decref(job);
    return rc;
}

typedef struct up_ctx {
    cli_progress *p;
    const char *name;
} up_ctx;

static void upload_progress(void *ctx, double sent, double total)
{
    up_ctx *u = ctx;
    /* small uploads finish before a line is worth drawing */
    if (total > 4e6 || cls_now() - u->p->start > 1.0)
        cli_progress_upload(u->p, u->name, sent, total);
}

static void append_q(char *q, size_t cap, const char *k, const char *v)
{
    size_t n = strlen(q);
    snprintf(q + n, cap - n, "%s%s=%s", n ? "&" : "?", k, v);
}

int cmd_submit(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "submit"};
    const char *path = NULL, *bpath = NULL, *x0path = NULL, *out = NULL;
    conn_args ca = {.retries = -1};
    int wait = 0, json = 0, monitor = 0;
    char q[512] = "";
    double timeout_s = 0;
    job_params params; /* checked as the daemon checks them; sent in the query */
    const char *pkey;
    job_params_init(&params);
    while (a.i < argc) {
        if (client_opt(&a, &ca))
            continue;
        if (cli_opt(&a, "-b", "--rhs", 1))
            bpath = a.value;
        else if (cli_opt(&a, "--x0", NULL, 1))
            x0path = a.value;
        else if (cli_opt(&a, "-o", "--output", 1))
            out = a.value;
        else if (cli_solve_param(&a, &params, &pkey) || cli_precond(&a, &params.pc, &pkey)) {
            /* --tol, --atol, --maxiter, --method, --precision, --precond
             * NAME, --precond-degree N, ...: checked here by the function
             * the daemon checks the query with (net/job_params.h), so a bad
             * value is a usage error before any upload; numbers go as
             * parsed (strtod takes text a URL must not carry, e.g. " 1") */
            char num[40];
            const char *v = a.value;
            if (!strcmp(pkey, "tol") || !strcmp(pkey, "atol")) {
                cls_fmt_double(num, sizeof num, !strcmp(pkey, "tol") ? params.tol : params.atol);
                v = num;
            } else if (!strcmp(pkey, "maxiter")) {
                snprintf(num, sizeof num, "%lld", (long long)params.maxiter);
                v = num;
            }
            append_q(q, sizeof q, pkey, v);
        } else if (cli_opt(&a, "--monitor", NULL, 0))
            monitor = 1;
        else if (cli_opt(&a, "--timeout", NULL, 1))
            timeout_s = cli_double(&a, "--timeout", a.value);
        else if (cli_opt(&a, "--wait", NULL, 0))
            wait = 1;
        else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("submit", "unknown option '%s'", argv[a.i]);
        else if (!path)
            path = argv[a.i++];
        else
            cli_usage_error("submit", "unexpected argument '%s'", argv[a.i]);
    }
    if (!path)
        cli_usage_error("submit", "no matrix file given");
    if (out && !wait)
        cli_usage_error("submit", "-o needs --wait (or use 'clsolve fetch ID -o FILE' later)");
    if (monitor && !wait)
        cli_usage_error("submit", "--monitor needs --wait");
    client c;
    client_init(&c, "submit", &ca);

    char target[600];
    snprintf(target, sizeof target, "/v1/jobs%s", q);
    http_part parts[16];
    int np = 0;
    char boundary[64], heads[3][600], tail[80];
    const char *ctype = "application/octet-stream";
    char ctype_buf[128];
    char disp[400] = "";
    if (!bpath && !x0path) {
        /* the daemon's messages and the job's inputs name the file as the
         * user knows it, not matrix.mtx */
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        snprintf(disp, sizeof disp, "Content-Disposition: attachment; filename=\"");
        for (size_t i = 0, n = strlen(disp); base[i] && n + 3 < sizeof disp; i++) {
            unsigned char ch = (unsigned char)base[i];
            disp[n++] = ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\' ? (char)ch : '_';
            disp[n] = '\0';
        }
        strcat(disp, "\"");
        parts[np++] = (http_part){.path = path};
    } else {
        unsigned char rnd[12];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
            memset(rnd, 0x5a, sizeof rnd);
        int bn = snprintf(boundary, sizeof boundary, "clsolve-");
        for (size_t i = 0; i < sizeof rnd; i++)
            bn += snprintf(boundary + bn, sizeof boundary - (size_t)bn, "%02x", rnd[i]);
        const char *names[3] = {"matrix", "rhs", "x0"};
        const char *files[3] = {path, bpath, x0path};
        for (int k = 0; k < 3; k++) {
            if (!files[k])
                continue;
            const char *base = strrchr(files[k], '/');
            base = base ? base + 1 : files[k];
            snprintf(heads[k], sizeof heads[k],
                     "%s--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%.200s\"\r\n"
                     "Content-Type: application/octet-stream\r\n\r\n",
                     np ? "\r\n" : "", boundary, names[k], base);
            parts[np++] = (http_part){.data = heads[k], .len = strlen(heads[k])};
            parts[np++] = (http_part){.path = files[k]};
        }
        snprintf(tail, sizeof tail, "\r\n--%s--\r\n", boundary);
        parts[np++] = (http_part){.data = tail, .len = strlen(tail)};
        snprintf(ctype_buf, sizeof ctype_buf, "multipart/form-data; boundary=%s", boundary);
        ctype = ctype_buf;
    }
    http_response r;
    cls_error err;
    /* on a terminal: the upload's progress (a big matrix takes a while) */
    cli_progress up;
    cli_progress_init(&up, isatty(2));
    const char *base = strrchr(path, '/');
    up_ctx uc = {&up, base ? base + 1 : path};
    if (up.tty) {
        c.opts.upload_progress = upload_progress;
        c.opts.progress_ctx = &uc;
    }
    int rc =
        client_request(&c, "POST", target, ctype, disp[0] ? disp : NULL, parts, np, -1, &r, &err);
    cli_progress_end(&up);
    c.opts.upload_progress = NULL;
    if (rc) {
        /* a file that cannot be read is exit 1, as for `clsolve solve`
         * (FILE-OPEN): bad input (3) is what the daemon finds in a file */
        fprintf(stderr, "clsolve submit: %s\n", err.msg);
        client_free(&c);
        return rc == CLS_EUSAGE ? CLS_EUSAGE : CLS_EOTHER;
    }
    if (r.status != 202) {
        rc = client_http_error(&c, &r);
        http_response_free(&r);
        client_free(&c);
        return rc;
    }
    json_t *job = json_loads(r.body, 0, NULL);
    http_response_free(&r);
    const char *id = json_string_value(json_object_get(job, "id"));
    if (!id || !valid_id(id)) {
        fprintf(stderr, "clsolve submit: the server's answer has no job id\n");
        json_decref(job);
        client_free(&c);
        return CLS_EOTHER;
    }
    char idbuf[33];
    snprintf(idbuf, sizeof idbuf, "%s", id);
    if (!wait) {
        if (json)
            print_job(job, 1, 1);
        else
            printf("%s\n", idbuf);
        json_decref(job);
        client_free(&c);
        return CLS_OK;
    }
    json_decref(job);
    if (!json)
        printf("submitted job %s (%s)\n", idbuf, uc.name);
    fflush(stdout);
    rc = client_wait(&c, idbuf, out, json, timeout_s, monitor);
    client_free(&c);
    return rc;
}

/* The ID argument and the common options of status/wait/fetch/cancel. */
typedef struct id_args {
    const char *id, *out, *format;
    int json, monitor;
    double timeout_s;
} id_args;

static void parse_id_cmd(int argc, char **argv, const char *cmd, client *c, id_args *ia,
                         int want_out, int want_format, int want_timeout)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = cmd};
    conn_args ca = {.retries = -1};
    memset(ia, 0, sizeof *ia);
    ia->format = "mtx";
    while (a.i < argc) {
        if (client_opt(&a, &ca))
            continue;
        if (want_out && cli_opt(&a, "-o", "--output", 1))
            ia->out = a.value;
        else if (want_format && cli_opt(&a, "--format", NULL, 1)) {
            if (strcmp(a.value, "mtx") && strcmp(a.value, "json") && strcmp(a.value, "binary"))
                cli_usage_error(cmd, "--format: '%s' is not mtx, json or binary", a.value);
            ia->format = a.value;
        } else if (want_timeout && cli_opt(&a, "--timeout", NULL, 1))
            ia->timeout_s = cli_double(&a, "--timeout", a.value);
        else if (want_timeout && cli_opt(&a, "--monitor", NULL, 0))
            ia->monitor = 1;
        else if (cli_opt(&a, "--json", NULL, 0))
            ia->json = 1;
        else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error(cmd, "unknown option '%s'", argv[a.i]);
        else if (!ia->id)
            ia->id = argv[a.i++];
        else
            cli_usage_error(cmd, "unexpected argument '%s'", argv[a.i]);
    }
    if (!ia->id)
        cli_usage_error(cmd, "no job id given");
    if (!valid_id(ia->id))
        cli_usage_error(cmd, "'%s' is not a job id (32 lowercase hexadecimal digits)", ia->id);
    client_init(c, cmd, &ca);
}

int cmd_status(int argc, char **argv)
{
    client c;
    id_args ia;
    parse_id_cmd(argc, argv, "status", &c, &ia, 0, 0, 0);
    json_t *job;
    int rc = client_get_job(&c, ia.id, 0, &job);
    if (!rc) {
        print_job(job, ia.json, 1);
        rc = job_exit_code(job);
        json_decref(job);
    }
    client_free(&c);
    return rc;
}

int cmd_wait(int argc, char **argv)
{
    client c;
    id_args ia;
    parse_id_cmd(argc, argv, "wait", &c, &ia, 1, 0, 1);
    int rc = client_wait(&c, ia.id, ia.out, ia.json, ia.timeout_s, ia.monitor);
    client_free(&c);
    return rc;
}

int cmd_fetch(int argc, char **argv)
{
    client c;
    id_args ia;
    parse_id_cmd(argc, argv, "fetch", &c, &ia, 1, 1, 0);
    if (!ia.out)
        cli_usage_error("fetch", "-o FILE is required");
    int rc = client_fetch(&c, ia.id, ia.out, ia.format);
    client_free(&c);
    return rc;
}

/* The 409 of a cancel or a delete: the job's state decides the message. */
static int client_conflict(const client *c, const http_response *r, const char *id)
{
    json_t *p = json_loads(r->body ? r->body : "", 0, NULL);
    const char *st = json_string_value(json_object_get(p, "job_status"));
    if (!st)
        st = "in another state";
    if (!strcmp(c->cmd, "cancel"))
        fprintf(stderr, "clsolve cancel: job %s already %s: nothing to cancel (its results are kept)\n",
                id, st);
    else
        fprintf(stderr, "clsolve rm: job %s is %s: cancel it first (clsolve cancel %s)\n", id, st,
                id);
    json_decref(p);
    return CLS_EOTHER;
}

int cmd_cancel(int argc, char **argv)
{
    client c;
    id_args ia;
    parse_id_cmd(argc, argv, "cancel", &c, &ia, 0, 0, 0);
    char target[80];
    snprintf(target, sizeof target, "/v1/jobs/%s/cancel", ia.id);
    http_response r;
    cls_error err;
    int rc = client_request(&c, "POST", target, NULL, NULL, NULL, 0, -1, &r, &err);
    if (rc) {
        fprintf(stderr, "clsolve cancel: %s\n", err.msg);
        client_free(&c);
        return CLS_EOTHER;
    }
    json_t *job = r.status == 202 ? json_loads(r.body, 0, NULL) : NULL;
    const char *st = json_string_value(json_object_get(job, "status"));
    if (r.status == 202 && st && !strcmp(st, "cancelled"))
        printf("job %s cancelled\n", ia.id);
    else if (r.status == 202)
        printf("job %s: cancel requested; it stops at its next iteration\n", ia.id);
    else if (r.status == 409)
        rc = client_conflict(&c, &r, ia.id);
    else
        rc = client_http_error(&c, &r);
    json_decref(job);
    http_response_free(&r);
    client_free(&c);
    return rc;
}

int cmd_rm(int argc, char **argv)
{
    client c;
    id_args ia;
    parse_id_cmd(argc, argv, "rm", &c, &ia, 0, 0, 0);
    char target[64];
    snprintf(target, sizeof target, "/v1/jobs/%s", ia.id);
    http_response r;
    cls_error err;
    int rc = client_request(&c, "DELETE", target, NULL, NULL, NULL, 0, -1, &r, &err);
    if (rc) {
        fprintf(stderr, "clsolve rm: %s\n", err.msg);
        client_free(&c);
        return CLS_EOTHER;
    }
    if (r.status == 204)
        printf("job %s removed with its files\n", ia.id);
    else if (r.status == 409)
        rc = client_conflict(&c, &r, ia.id);
    else
        rc = client_http_error(&c, &r);
    http_response_free(&r);
    client_free(&c);
    return rc;
}
