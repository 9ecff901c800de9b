/*
 * clsolved.c: the daemon.
 *
 *   mpirun -np K clsolved --listen ADDR:PORT --data-dir DIR [--token-file F]
 *          [--max-upload BYTES] [--max-queued N] [--keep N|DURATION]
 *          [--device auto|cpu|gpu|INDEX] [--max-connections N] [--timeout S]
 *          [--port-file F] [--pid-file F] [--config FILE] [--version]
 *
 * The options (cli/usage/clsolved.txt, the source of --help and of the man
 * page clsolved(8)) may also come from --config FILE, one "key = value" per
 * line with the options' names as keys; the command line wins over the
 * file. Under systemd (Type=notify) rank 0 tells the service manager when
 * it is ready (listening, port and pid files written) and when it starts
 * draining, through sd_notify(3) from a small thread of its own (the signal
 * handler only sets a flag).
 *
 * Every rank starts here. MPI is initialised with MPI_THREAD_FUNNELED: only
 * the main thread of each rank calls MPI (on rank 0 that is the scheduler;
 * the HTTP threads never do). All ranks gather the device list, then rank
 * 0 opens the job store (re-queueing what a crash interrupted), starts the
 * HTTP server and runs the scheduler, while the other ranks wait for jobs
 * (net/job_proto.h: sleeping, not spinning).
 *
 * SIGTERM or SIGINT on rank 0 drains: new jobs get 503, the running job
 * finishes, queued jobs stay queued on disk for the next start, the
 * workers are told to exit, and every rank calls MPI_Finalize and exits 0.
 * Worker ranks ignore SIGTERM (mpirun forwards it to every rank) and wait
 * for rank 0's word. Signal rank 0 itself (its pid is in --pid-file) to
 * drain: mpirun, when it gets SIGTERM, forwards it but kills the ranks
 * after its odls_base_sigkill_timeout (1 s), so a long job would be cut
 * short and re-queued at the next start instead of finishing.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>
#ifdef CLS_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif
#include <time.h>

#include "common/mpi_env.h"
#include "common/version.h"
#include "kernels/ocl.h"
#include "solver/dvec.h"
#include "kernels/tunedb.h"
#include "net/cluster.h"
#include "net/fileio.h"
#include "net/http_server.h"
#include "net/job_proto.h"
#include "net/job_store.h"
#include "net/metrics.h"
#include "net/scheduler.h"

static volatile sig_atomic_t clsolved_stop;

static void clsolved_on_signal(int sig)
{
    (void)sig;
    clsolved_stop = 1;
}

/* generated from cli/usage/clsolved.txt (cmake/gen_cli_docs.py) */
const char *clsolved_help(const char *cmd);

typedef struct clsolved_opts {
    const char *listen, *data_dir, *token_file, *device, *port_file, *pid_file;
    uint64_t max_upload;
    int max_queued;
    int64_t keep_count;
    double keep_seconds;
    unsigned max_connections, timeout_s;
} clsolved_opts;

static int parse_u64(const char *s, uint64_t *out, int suffixes)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || s[0] == '-')
        return -1;
    uint64_t mul = 1;
    if (suffixes && *end) {
        switch (*end) {
        case 'k':
        case 'K':
            mul = 1024ull;
            break;
        case 'm':
        case 'M':
            mul = 1024ull * 1024;
            break;
        case 'g':
        case 'G':
            mul = 1024ull * 1024 * 1024;
            break;
        default:
            return -1;
        }
        end++;
        if (*end == 'B' || *end == 'b' || *end == 'i')
            end += (*end == 'i' && (end[1] == 'B' || end[1] == 'b')) ? 2 : 1;
    }
    if (*end || (mul > 1 && v > UINT64_MAX / mul))
        return -1;
    *out = v * mul;
    return 0;
}

static int parse_keep(const char *s, clsolved_opts *o)
{
    uint64_t v;
    size_t n = strlen(s);
    if (n == 0)
        return -1;
    char unit = s[n - 1];
    if (unit >= '0' && unit <= '9') {
        if (parse_u64(s, &v, 0) || v > INT64_MAX)
            return -1;
        o->keep_count = (int64_t)v;
        return 0;
    }
    double mul = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : unit == 'd' ? 86400 : 0;
    if (mul == 0 || n < 2)
        return -1;
    char num[32];
    if (n - 1 >= sizeof num)
        return -1;
    memcpy(num, s, n - 1);
    num[n - 1] = '\0';
    if (parse_u64(num, &v, 0))
        return -1;
    o->keep_seconds = (double)v * mul;
    return 0;
}

/* Every option takes a value; each is also a key of --config FILE. */
static const char *const clsolved_options[] = {
    "--listen",    "--data-dir",        "--token-file", "--device",
    "--port-file", "--pid-file",        "--max-upload", "--max-queued",
    "--keep",      "--max-connections", "--timeout",
};

static int clsolved_option_known(const char *name)
{
    for (size_t k = 0; k < sizeof clsolved_options / sizeof clsolved_options[0]; k++)
        if (!strcmp(name, clsolved_options[k]))
            return 1;
    return 0;
}

static void opts_default(clsolved_opts *o)
{
    memset(o, 0, sizeof *o);
    o->listen = "127.0.0.1:8080";
    o->device = "auto";
    o->max_upload = 1024ull * 1024 * 1024;
    o->max_queued = 1000;
    o->keep_count = -1;
    o->keep_seconds = -1;
    o->max_connections = 64;
    o->timeout_s = 60;
}

/* One known option and its value (kept by pointer: argv or the config
 * text, both live as long as the process). 0, or -1 for a bad value. */
static int apply_option(const char *name, const char *v, clsolved_opts *o)
{
    uint64_t u;
    if (!strcmp(name, "--listen"))
        o->listen = v;
    else if (!strcmp(name, "--data-dir"))
        o->data_dir = v;
    else if (!strcmp(name, "--token-file"))
        o->token_file = v;
    else if (!strcmp(name, "--device"))
        o->device = v;
    else if (!strcmp(name, "--port-file"))
        o->port_file = v;
    else if (!strcmp(name, "--pid-file"))
        o->pid_file = v;
    else if (!strcmp(name, "--max-upload")) {
        if (parse_u64(v, &u, 1) || u == 0)
            return -1;
        o->max_upload = u;
    } else if (!strcmp(name, "--max-queued")) {
        if (parse_u64(v, &u, 0) || u == 0 || u > 10000000)
            return -1;
        o->max_queued = (int)u;
    } else if (!strcmp(name, "--keep")) {
        if (parse_keep(v, o))
            return -1;
    } else if (!strcmp(name, "--max-connections")) {
        if (parse_u64(v, &u, 0) || u == 0 || u > 100000)
            return -1;
        o->max_connections = (unsigned)u;
    } else if (!strcmp(name, "--timeout")) {
        if (parse_u64(v, &u, 0) || u == 0 || u > 86400)
            return -1;
        o->timeout_s = (unsigned)u;
    } else {
        return -1;
    }
    return 0;
}

/* --config FILE: "key = value" lines (keys: the options without "--"),
 * '#' comments, blank lines. The text is kept for the process's life: the
 * options point into it. Returns 0, or 2 after printing FILE:LINE: what. */
static int apply_config(const char *path, clsolved_opts *o, int rank)
{
    static char *text; /* one config per process */
    cls_error err;
    if (fileio_read_small(path, 64 * 1024, &text, NULL, &err)) {
        if (rank == 0)
            fprintf(stderr, "clsolved: --config: %s\n", err.msg);
        return 2;
    }
    int line = 0;
    for (char *p = text; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        line++;
        char *s = p;
        p = nl ? nl + 1 : NULL;
        while (*s == ' ' || *s == '\t')
            s++;
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
            s[--n] = '\0';
        if (!*s || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            if (rank == 0)
                fprintf(stderr, "clsolved: %s:%d: expected 'key = value', got '%.80s'\n", path,
                        line, s);
            return 2;
        }
        char *k = s, *v = eq + 1;
        char *ke = eq;
        while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
            ke--;
        *ke = '\0';
        while (*v == ' ' || *v == '\t')
            v++;
        size_t vn = strlen(v);
        if (vn >= 2 && v[0] == '"' && v[vn - 1] == '"') {
            v[vn - 1] = '\0';
            v++;
        }
        char name[80];
        snprintf(name, sizeof name, "--%.70s", k);
        if (!clsolved_option_known(name)) {
            if (rank == 0)
                fprintf(stderr,
                        "clsolved: %s:%d: unknown key '%.64s' (keys: the options of "
                        "'clsolved --help' without the leading --)\n",
                        path, line, k);
            return 2;
        }
        if (apply_option(name, v, o)) {
            if (rank == 0)
                fprintf(stderr, "clsolved: %s:%d: %s: '%s' is not a valid value\n", path, line, k,
                        v);
            return 2;
        }
    }
    return 0;
}

/* Returns 0, 1 after --help or --version (exit 0), or 2 after printing a
 * usage error (rank 0 only prints). */
static int parse_args(int argc, char **argv, clsolved_opts *o, int rank)
{
    opts_default(o);
    /* --help, --version and --config first: the file's values come before
     * the command line's, which win */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            if (rank == 0)
                fputs(clsolved_help(NULL), stdout);
            return 1;
        }
        if (!strcmp(a, "--version")) {
            if (rank == 0)
                printf("clsolved %s (commit %s)\n", cls_version(), cls_commit());
            return 1;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *path = NULL;
        if (!strncmp(a, "--config=", 9))
            path = a + 9;
        else if (!strcmp(a, "--config")) {
            if (i + 1 >= argc) {
                if (rank == 0)
                    fprintf(stderr, "clsolved: --config needs a value\n");
                return 2;
            }
            path = argv[i + 1];
        }
        if (path) {
            int rc = apply_config(path, o, rank);
            if (rc)
                return rc;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = NULL;
        const char *eq = strchr(a, '=');
        char name[64];
        if (strncmp(a, "--", 2) != 0)
            goto bad_arg;
        if (eq) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
            v = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
        }
        if (!strcmp(name, "--config")) {
            if (!eq)
                i++; /* applied above */
            continue;
        }
        /* the name is checked before a value is taken: `--bogus` as the last
         * argument is an unknown argument, not one that needs a value */
        if (!clsolved_option_known(name))
            goto bad_arg;
        if (!eq) {
            if (i + 1 >= argc) {
                if (rank == 0)
                    fprintf(stderr, "clsolved: %s needs a value\n", name);
                return 2;
            }
            v = argv[++i];
        }
        if (apply_option(name, v, o)) {
            if (rank == 0)
                fprintf(stderr, "clsolved: %s: '%s' is not a valid value\n", name, v);
            return 2;
        }
        continue;
    bad_arg:
        if (rank == 0)
            fprintf(stderr, "clsolved: unknown argument '%s'\n%s", a, clsolved_help(NULL));
        return 2;
    }
    if (!o->data_dir) {
        if (rank == 0)
            fprintf(stderr, "clsolved: --data-dir is required\n%s", clsolved_help(NULL));
        return 2;
    }
    /* every rank looks its devices' tuned configurations up in DATA/tuning
     * (unless $CLSOLVE_TUNE_DIR says otherwise): `clsolve tune` fills it */
    tunedb_set_data_dir(o->data_dir);
    return 0;
}

/* sd_notify(3), when built with libsystemd: a no-op without $NOTIFY_SOCKET
 * (not started by systemd) and in a build without it. */
static void clsolved_notify(const char *state)
{
#ifdef CLS_HAVE_SYSTEMD
    int rc = sd_notify(0, state);
    if (rc < 0)
        fprintf(stderr, "clsolved: sd_notify: %s\n", strerror(-rc));
#else
    (void)state;
#endif
}

static _Atomic int clsolved_watch_done;

/* Tells systemd STOPPING=1 as soon as a drain begins (the signal handler
 * only sets clsolved_stop; sd_notify is not async-signal-safe). */
static void *clsolved_drain_watch(void *arg)
{
    (void)arg;
    while (!clsolved_stop && !clsolved_watch_done) {
        struct timespec ts = {0, 50000000L};
        nanosleep(&ts, NULL);
    }
    if (clsolved_stop)
        clsolved_notify("STOPPING=1\nSTATUS=draining: the running job finishes, new jobs get 503");
    return NULL;
}

/* The token: the file's first line, surrounding white space removed. */
static int read_token(const char *path, char **token, cls_error *err)
{
    char *text = NULL;
    size_t len = 0;
    if (fileio_read_small(path, 4096, &text, &len, err))
        return CLS_EUSAGE;
    char *s = text;
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strcspn(s, "\r\n");
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    s[n] = '\0';
    if (n < 8) {
        free(text);
        return cls_fail(err, CLS_EUSAGE, "%s: the token must be at least 8 characters", path);
    }
    *token = strdup(s);
    free(text);
    return *token ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory");
}

static int run_root(const clsolved_opts *o, int size, json_t *cluster)
{
    cls_error err;
    cls_error_clear(&err);
    char *token = NULL;
    job_store *store = NULL;
    http_server *srv = NULL;
    int rc = 0;
    if (o->token_file && read_token(o->token_file, &token, &err)) {
        fprintf(stderr, "clsolved: %s\n", err.msg);
        rc = 2;
        goto out;
    }
    job_store_config sc = {.data_dir = o->data_dir,
                           .keep_count = o->keep_count,
                           .keep_seconds = o->keep_seconds,
                           .max_queued = o->max_queued};
    int src = job_store_open(&store, &sc, &err);
    if (src) {
        /* a --data-dir too long for the store's paths is a usage error */
        fprintf(stderr, "clsolved: %s\n", err.msg);
        rc = src == CLS_EUSAGE ? 2 : 1;
        goto out;
    }
    metrics_init(size);
    http_server_config hc = {.listen = o->listen,
                             .max_upload = o->max_upload,
                             .max_connections = o->max_connections,
                             .timeout_s = o->timeout_s,
                             .threads = 4,
                             .token = token,
                             .store = store,
                             .cluster = cluster,
                             .draining = &clsolved_stop};
    /* the HTTP threads inherit a mask without SIGTERM/SIGINT, so the
     * signals reach the main thread */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    int hrc = http_server_start(&srv, &hc, &err);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (hrc) {
        fprintf(stderr, "clsolved: %s\n", err.msg);
        rc = hrc == CLS_EUSAGE ? 2 : 1;
        goto out;
    }
    fprintf(stderr, "clsolved: listening on %s (port %u), %d rank%s, data in %s%s\n", o->listen,
            http_server_port(srv), size, size == 1 ? "" : "s", o->data_dir,
            token ? ", bearer token required" : "");
    if (o->pid_file) {
        char buf[24];
        int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
        if (fileio_write_durable(o->pid_file, buf, (size_t)n, &err))
            fprintf(stderr, "clsolved: %s\n", err.msg);
    }
    if (o->port_file) {
        char buf[16];
        int n = snprintf(buf, sizeof buf, "%u\n", http_server_port(srv));
        if (fileio_write_durable(o->port_file, buf, (size_t)n, &err))
            fprintf(stderr, "clsolved: %s\n", err.msg);
    }
    /* ready: listening, port and pid files written */
    {
        char st[600];
        snprintf(st, sizeof st, "READY=1\nSTATUS=listening on %s (port %u), %d rank%s", o->listen,
                 http_server_port(srv), size, size == 1 ? "" : "s");
        clsolved_notify(st);
    }
    pthread_t watch;
    pthread_sigmask(SIG_BLOCK, &set, &old);
    int have_watch = pthread_create(&watch, NULL, clsolved_drain_watch, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    scheduler_config sched = {
        .store = store, .device = o->device, .stop = &clsolved_stop, .retention_every_s = 60};
    scheduler_run_root(MPI_COMM_WORLD, &sched);
    clsolved_watch_done = 1;
    if (have_watch)
        pthread_join(watch, NULL);
    fprintf(stderr, "clsolved: drained, exiting\n");
    http_server_stop(srv);
    srv = NULL;
    job_store_close(store);
    free(token);
    return 0;
out : {
    /* the workers are waiting for a job: tell them to exit */
    job_proto_msg m;
    memset(&m, 0, sizeof m);
    m.cmd = JOB_PROTO_EXIT;
    job_proto_send(MPI_COMM_WORLD, &m);
}
    http_server_stop(srv);
    job_store_close(store);
    free(token);
    return rc;
}

int main(int argc, char **argv)
{
    ocl_threads_from_affinity(); /* before MPI or OpenCL starts a thread */
    cls_mpi_singleton_env();     /* before MPI_Init: no mpirun, no cluster start-up */
    int provided = 0, rank = 0, size = 1;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "clsolved: MPI_Init_thread failed\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_FUNNELED && rank == 0)
        fprintf(stderr, "clsolved: warning: MPI gives thread level %d, below FUNNELED\n", provided);
    clsolved_opts o;
    int prc = parse_args(argc, argv, &o, rank);
    if (prc) {
        MPI_Finalize();
        return prc == 1 ? 0 : 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = rank == 0 ? clsolved_on_signal : SIG_IGN;
    sa.sa_flags = SA_RESTART; /* never an EINTR inside MPI, OpenCL or the store */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    json_t *cluster = NULL;
    cls_error err;
    cls_error_clear(&err);
    if (cluster_gather(MPI_COMM_WORLD, o.device, &cluster, &err) && rank == 0)
        fprintf(stderr, "clsolved: %s\n", err.msg);
    int rc;
    if (rank == 0)
        rc = run_root(&o, size, cluster);
    else
        rc = scheduler_run_worker(MPI_COMM_WORLD, o.device);
    json_decref(cluster);
    dsys_warm_release_all(); /* the devices kept warm between jobs */
    MPI_Finalize();
    return rc;
}
