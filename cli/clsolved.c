/*
 * clsolved.c: the daemon.
 *
 *   mpirun -np K clsolved --listen ADDR:PORT --data-dir DIR [--token-file F]
 *          [--max-upload BYTES] [--max-queued N] [--max-job-restarts N] [--keep N|DURATION]
 *          [--device auto|cpu|gpu|INDEX] [--max-connections N] [--timeout S]
 *          [--header-timeout S] [--min-body-rate BYTES] [--connections-per-address N]
 *          [--health-reserve N]
 *          [--drain-timeout S] [--max-nnz N] [--max-matrix-bytes BYTES]
 *          [--keep-bytes SIZE|P%] [--disk-reserve SIZE|P%] [--lanes N]
 *          [--shared-max-entries N] [--batch auto|on|off] [--batch-max N]
 *          [--parse-while-uploading on|off]
 *          [--port-file F] [--pid-file F] [--config FILE]
 *          [--version]
 *
 * The options (cli/usage/clsolved.txt, the source of --help and of the man
 * page clsolved(8)) may also come from --config FILE, one "key = value" per
 * line with the options' names as keys; the command line wins over the
 * file. Under systemd (Type=notify) rank 0 tells the service manager when
 * it is ready (listening, port and pid files written) and when it starts
 * draining, through sd_notify(3) from a small thread of its own (the signal
 * handler only sets a flag).
 *
 * Every rank starts here. MPI is initialised with MPI_THREAD_MULTIPLE: on
 * rank 0 the scheduler's thread and its lanes (small jobs solved at once on
 * MPI_COMM_SELF, net/scheduler.h) call MPI; the HTTP threads never do. Rank 0
 * opens the job store (re-queueing what a crash interrupted) and starts the
 * HTTP server first, so /healthz answers while the devices start (and
 * /readyz says "starting"); then all ranks gather the device list, rank 0
 * hands it to the server, writes the port and pid files (the sign that it is
 * ready) and runs the scheduler, while the other ranks wait for jobs
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
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <mpi.h>
#ifdef CLS_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif
#include <time.h>

#include "common/affinity.h"
#include "common/mpi_env.h"
#include "common/version.h"
#include "kernels/ocl.h"
#include "kernels/ocl_icd.h"
#include "solver/devfig.h"
#include "solver/dist/dvec.h"
#include "solver/pc/pc.h"
#include "kernels/tunedb.h"
#include "net/admission.h"
#include "net/cluster.h"
#include "net/fileio.h"
#include "net/http_server.h"
#include "net/job_proto.h"
#include "net/job_store.h"
#include "net/metrics.h"
#include "net/preparse.h"
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
    int max_job_restarts; /* 0: the store's default (2) */
    double keep_min_age;  /* seconds; --keep-bytes spares younger finished jobs */
    int64_t keep_count;
    double keep_seconds;
    unsigned max_connections, timeout_s, per_address, health_reserve;
    double header_timeout_s, drain_timeout_s;
    uint64_t min_body_rate;            /* bytes/s; 0: none */
    int64_t max_nnz;                   /* 0: from the machine */
    uint64_t max_matrix_bytes;         /* 0: from the machine */
    uint64_t keep_bytes, disk_reserve; /* bytes, or (with the _pct flag) percent of the disk */
    int keep_bytes_pct, disk_reserve_pct;
    int lanes;
    int64_t shared_max_entries;
    int batch, batch_max; /* SCHED_BATCH_*, jobs per launch */
    int preparse;         /* --parse-while-uploading on (net/preparse.h) */
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
        case 't':
        case 'T':
            mul = 1024ull * 1024 * 1024 * 1024;
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

/* A duration: N followed by s, m, h or d (a bare N is seconds). */
static int parse_duration(const char *s, double *out)
{
    size_t n = strlen(s);
    if (n == 0)
        return -1;
    char unit = s[n - 1];
    double mul = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : unit == 'd' ? 86400 : 0;
    char num[32];
    size_t k = mul ? n - 1 : n;
    if (!mul)
        mul = 1;
    if (k == 0 || k >= sizeof num)
        return -1;
    memcpy(num, s, k);
    num[k] = '\0';
    uint64_t v;
    if (parse_u64(num, &v, 0) || v > 100000000)
        return -1;
    *out = (double)v * mul;
    return 0;
}

static int parse_keep(const char *s, clsolved_opts *o)
{
    uint64_t v;
    size_t n = strlen(s);
    if (n == 0)
        return -1;
    /* given: replaces the default age (a count alone is then the rule) */
    o->keep_count = -1;
    o->keep_seconds = -1;
    if (!strcmp(s, "all"))
        return 0;
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
    "--listen",
    "--data-dir",
    "--token-file",
    "--device",
    "--port-file",
    "--pid-file",
    "--max-upload",
    "--max-queued",
    "--max-job-restarts",
    "--keep",
    "--max-connections",
    "--timeout",
    "--header-timeout",
    "--min-body-rate",
    "--connections-per-address",
    "--health-reserve",
    "--drain-timeout",
    "--max-nnz",
    "--max-matrix-bytes",
    "--keep-bytes",
    "--keep-min-age",
    "--disk-reserve",
    "--lanes",
    "--shared-max-entries",
    "--batch",
    "--batch-max",
    "--parse-while-uploading",
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
    o->keep_min_age = 600;
    o->keep_count = -1;
    o->keep_seconds = 30 * 86400.0;
    o->keep_bytes = 25;
    o->keep_bytes_pct = 1;
    o->disk_reserve = 5;
    o->disk_reserve_pct = 1;
    o->max_connections = 256;
    o->timeout_s = 30;
    o->per_address = 128;
    o->health_reserve = 8;
    o->header_timeout_s = 10;
    o->min_body_rate = 16384;
    o->drain_timeout_s = 600;
    o->lanes = 4;
    o->shared_max_entries = 4194304;
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
    } else if (!strcmp(name, "--keep-min-age")) {
        if (parse_duration(v, &o->keep_min_age))
            return -1;
    } else if (!strcmp(name, "--max-job-restarts")) {
        if (parse_u64(v, &u, 0) || u == 0 || u > 1000)
            return -1;
        o->max_job_restarts = (int)u;
    } else if (!strcmp(name, "--keep")) {
        if (parse_keep(v, o))
            return -1;
    } else if (!strcmp(name, "--max-connections")) {
        if (parse_u64(v, &u, 0) || u == 0 || u > 100000)
            return -1;
        o->max_connections = (unsigned)u;
    } else if (!strcmp(name, "--lanes")) {
        if (parse_u64(v, &u, 0) || u == 0 || u > 32)
            return -1;
        o->lanes = (int)u;
    } else if (!strcmp(name, "--batch")) {
        if (!strcmp(v, "auto"))
            o->batch = SCHED_BATCH_AUTO;
        else if (!strcmp(v, "off"))
            o->batch = SCHED_BATCH_OFF;
        else if (!strcmp(v, "on"))
            o->batch = SCHED_BATCH_ON;
        else
            return -1;
    } else if (!strcmp(name, "--parse-while-uploading")) {
        if (!strcmp(v, "on"))
            o->preparse = 1;
        else if (!strcmp(v, "off"))
            o->preparse = 0;
        else
            return -1;
    } else if (!strcmp(name, "--batch-max")) {
        if (parse_u64(v, &u, 0) || u == 0 || u > 4096)
            return -1;
        o->batch_max = (int)u;
    } else if (!strcmp(name, "--shared-max-entries")) {
        if (parse_u64(v, &u, 1) || u > INT64_MAX)
            return -1;
        o->shared_max_entries = (int64_t)u;
    } else if (!strcmp(name, "--timeout")) {
        if (parse_u64(v, &u, 0) || u == 0 || u > 86400)
            return -1;
        o->timeout_s = (unsigned)u;
    } else if (!strcmp(name, "--header-timeout")) {
        if (parse_u64(v, &u, 0) || u == 0 || u > 3600)
            return -1;
        o->header_timeout_s = (double)u;
    } else if (!strcmp(name, "--min-body-rate")) {
        if (parse_u64(v, &u, 1) || u > ((uint64_t)1 << 40))
            return -1;
        o->min_body_rate = u;
    } else if (!strcmp(name, "--connections-per-address")) {
        if (parse_u64(v, &u, 0) || u == 0 || u > 100000)
            return -1;
        o->per_address = (unsigned)u;
    } else if (!strcmp(name, "--health-reserve")) {
        if (parse_u64(v, &u, 0) || u > 1000)
            return -1;
        o->health_reserve = (unsigned)u;
    } else if (!strcmp(name, "--keep-bytes") || !strcmp(name, "--disk-reserve")) {
        int pct = strlen(v) > 1 && v[strlen(v) - 1] == '%';
        char num[64];
        snprintf(num, sizeof num, "%.*s", (int)strlen(v) - pct, v);
        if (parse_u64(num, &u, !pct) || (pct && u > 100))
            return -1;
        if (!strcmp(name, "--keep-bytes")) {
            o->keep_bytes = u;
            o->keep_bytes_pct = pct;
        } else {
            o->disk_reserve = u;
            o->disk_reserve_pct = pct;
        }
    } else if (!strcmp(name, "--max-nnz")) {
        if (parse_u64(v, &u, 0) || u == 0 || u > INT64_MAX)
            return -1;
        o->max_nnz = (int64_t)u;
    } else if (!strcmp(name, "--max-matrix-bytes")) {
        if (parse_u64(v, &u, 1) || u == 0)
            return -1;
        o->max_matrix_bytes = u;
    } else if (!strcmp(name, "--drain-timeout")) {
        if (parse_u64(v, &u, 0) || u > 7 * 86400)
            return -1;
        o->drain_timeout_s = (double)u;
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

/* ------------------------------------------------------- device figures
 *
 * --device auto sends a one-part job to the device that finishes it first,
 * and --method auto (the default) a small one on a GPU to cg-small when it
 * beats cg, both judged by each device's measured figures
 * (solver/devfig.h). What the devices lack is measured in the background
 * at start (cg's figures where this host has devices of two kinds,
 * cg-small's on every GPU), each device by a child `clsolve tune --figures`
 * writing to this daemon's tuning directory: a driver that crashes while
 * building the kernels (one PoCL release aborts) takes the child down, not
 * the daemon, and that device then simply has no figures and is never
 * chosen. Jobs before the figures are in use discovery order and cg.
 */
extern char **environ;

typedef struct figures_job {
    char clsolve[PATH_MAX];
} figures_job;

static void *figures_run(void *arg)
{
    figures_job *j = arg;
    ocl_device *devs = NULL;
    int n = 0;
    cls_error err;
    if (ocl_list_devices(&devs, &n, &err) == CLS_OK) {
        char dir[4096];
        int have_dir = tunedb_dir(dir, sizeof dir);
        for (int i = 0; i < n && have_dir; i++) {
            if (devfig_complete(tunedb_for_device(&devs[i]), &devs[i], LA_DOUBLE))
                continue; /* measured before */
            char idx[16], env_dir[4200];
            snprintf(idx, sizeof idx, "%d", i);
            snprintf(env_dir, sizeof env_dir, "CLSOLVE_TUNE_DIR=%s", dir);
            char *argv[] = {j->clsolve, "tune", "--figures", "--device", idx, NULL};
            /* the child's environment: ours, with the tuning directory set */
            size_t ne = 0;
            while (environ[ne])
                ne++;
            char **envp = calloc(ne + 2, sizeof *envp);
            if (!envp)
                break;
            size_t k = 0;
            for (size_t e = 0; e < ne; e++)
                if (strncmp(environ[e], "CLSOLVE_TUNE_DIR=", 17))
                    envp[k++] = environ[e];
            envp[k++] = env_dir;
            posix_spawn_file_actions_t fa;
            posix_spawn_file_actions_init(&fa);
            posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
            pid_t pid;
            int st = 0, src = posix_spawn(&pid, j->clsolve, &fa, NULL, argv, envp);
            posix_spawn_file_actions_destroy(&fa);
            free(envp);
            if (src == 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
                tunedb_refresh(&devs[i]);
                fprintf(stderr, "clsolved: measured device %d (%s) for --device auto\n", i,
                        devs[i].name);
            } else {
                fprintf(stderr,
                        "clsolved: measuring device %d (%s) failed (%s %d): --device auto "
                        "will not choose it\n",
                        i, devs[i].name,
                        src               ? "spawn error"
                        : WIFSIGNALED(st) ? "signal"
                                          : "exit code",
                        src               ? src
                        : WIFSIGNALED(st) ? WTERMSIG(st)
                                          : WEXITSTATUS(st));
            }
        }
        free(devs);
    }
    free(j);
    return NULL;
}

/* Starts figures_run when this host has devices of more than one kind or
 * one that is not a CPU (cg-small's figures). */
static void figures_start(void)
{
    ocl_device *devs = NULL;
    int n = 0, kinds = 0, gpus = 0;
    cls_error err;
    if (ocl_list_devices(&devs, &n, &err) != CLS_OK)
        return;
    cl_device_type seen = 0;
    for (int i = 0; i < n; i++) {
        cl_device_type t =
            devs[i].type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_ACCELERATOR);
        if (t && !(seen & t))
            kinds++;
        seen |= t;
        gpus += !(devs[i].type & CL_DEVICE_TYPE_CPU);
    }
    free(devs);
    if (kinds < 2 && !gpus)
        return; /* nothing to choose between */
    figures_job *j = calloc(1, sizeof *j);
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (!j || len <= 0) {
        free(j);
        return;
    }
    self[len] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash ||
        snprintf(j->clsolve, sizeof j->clsolve, "%.*s/clsolve", (int)(slash - self), self) >=
            (int)sizeof j->clsolve ||
        access(j->clsolve, X_OK)) {
        free(j);
        return;
    }
    pthread_t tid;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&tid, &at, figures_run, j))
        free(j);
    pthread_attr_destroy(&at);
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

/* Rank 0's parts: the token, the job store and the HTTP server. */
typedef struct clsolved_root {
    char *token;
    job_store *store;
    http_server *srv;
} clsolved_root;

static void root_close(clsolved_root *r)
{
    http_server_stop(r->srv);
    job_store_close(r->store);
    free(r->token);
    memset(r, 0, sizeof *r);
}

/* The upload limits (admission.h): from the machine, or the options. The
 * devices count once they are known (cluster). */
static void root_limits(const clsolved_opts *o, json_t *cluster)
{
    uint64_t host, avail, dev = cluster ? adm_cluster_device_total(cluster) : 0;
    adm_memory(&host, &avail);
    adm_limits l;
    adm_default_limits(host, dev, &l);
    if (o->max_nnz)
        l.max_nnz = o->max_nnz;
    if (o->max_matrix_bytes)
        l.max_matrix_bytes = o->max_matrix_bytes;
    else if (o->max_nnz)
        l.max_matrix_bytes = (uint64_t)l.max_nnz * 64u;
    adm_limits_set(&l);
    if (cluster)
        fprintf(stderr,
                "clsolved: limits: --max-nnz %lld, --max-matrix-bytes %llu (%s; %llu MB of memory "
                "on rank 0, %llu MB on the devices)\n",
                (long long)l.max_nnz, (unsigned long long)l.max_matrix_bytes,
                o->max_nnz || o->max_matrix_bytes ? "as given" : "from the machine",
                (unsigned long long)(host >> 20), (unsigned long long)(dev >> 20));
}

/* Opens the store and starts serving before the devices are up (see the
 * top). Returns 0, or the exit code after printing why. */
static int root_open(const clsolved_opts *o, int size, clsolved_root *r)
{
    cls_error err;
    cls_error_clear(&err);
    memset(r, 0, sizeof *r);
    if (o->token_file && read_token(o->token_file, &r->token, &err)) {
        fprintf(stderr, "clsolved: %s\n", err.msg);
        return 2;
    }
    /* the disk's size decides the percentages (the directory first) */
    uint64_t disk = 0;
    struct statvfs fs;
    if (fileio_mkdir(o->data_dir, &err) == CLS_OK && statvfs(o->data_dir, &fs) == 0)
        disk = (uint64_t)fs.f_blocks * (uint64_t)fs.f_frsize;
    uint64_t keep_bytes = o->keep_bytes_pct ? disk / 100 * o->keep_bytes : o->keep_bytes;
    uint64_t reserve = o->disk_reserve_pct ? disk / 100 * o->disk_reserve : o->disk_reserve;
    if (o->disk_reserve_pct && reserve > ((uint64_t)1 << 30))
        reserve = (uint64_t)1 << 30;
    job_store_config sc = {.data_dir = o->data_dir,
                           .keep_count = o->keep_count,
                           .keep_seconds = o->keep_seconds,
                           .keep_bytes = keep_bytes,
                           .keep_min_age = o->keep_min_age,
                           .disk_reserve = reserve,
                           .max_queued = o->max_queued,
                           .max_job_restarts = o->max_job_restarts};
    int src = job_store_open(&r->store, &sc, &err);
    if (src) {
        /* a --data-dir too long for the store's paths is a usage error */
        fprintf(stderr, "clsolved: %s\n", err.msg);
        root_close(r);
        return src == CLS_EUSAGE ? 2 : 1;
    }
    metrics_init(size);
    metrics_add_source(job_store_metrics, r->store);
    root_limits(o, NULL);
    http_server_config hc = {.listen = o->listen,
                             .max_upload = o->max_upload,
                             .max_connections = o->max_connections,
                             .health_reserve = o->health_reserve,
                             .per_address = o->per_address,
                             .header_timeout_s = o->header_timeout_s,
                             .min_body_rate = (double)o->min_body_rate,
                             .timeout_s = o->timeout_s,
                             .threads = 4,
                             .token = r->token,
                             .store = r->store,
                             .cluster = NULL,
                             .draining = &clsolved_stop};
    /* the HTTP threads inherit a mask without SIGTERM/SIGINT, so the
     * signals reach the main thread */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    int hrc = http_server_start(&r->srv, &hc, &err);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (hrc) {
        fprintf(stderr, "clsolved: %s\n", err.msg);
        root_close(r);
        return hrc == CLS_EUSAGE ? 2 : 1;
    }
    return 0;
}

/* The devices are up: ready. Runs the scheduler until a drain. */
static int root_run(const clsolved_opts *o, int size, clsolved_root *r, json_t *cluster, int lanes)
{
    cls_error err;
    cls_error_clear(&err);
    http_server_set_cluster(r->srv, cluster);
    root_limits(o, cluster);
    fprintf(stderr, "clsolved: listening on %s (port %u), %d rank%s, data in %s%s\n", o->listen,
            http_server_port(r->srv), size, size == 1 ? "" : "s", o->data_dir,
            r->token ? ", bearer token required" : "");
    if (o->pid_file) {
        char buf[24];
        int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
        if (fileio_write_durable(o->pid_file, buf, (size_t)n, &err))
            fprintf(stderr, "clsolved: %s\n", err.msg);
    }
    if (o->port_file) {
        char buf[16];
        int n = snprintf(buf, sizeof buf, "%u\n", http_server_port(r->srv));
        if (fileio_write_durable(o->port_file, buf, (size_t)n, &err))
            fprintf(stderr, "clsolved: %s\n", err.msg);
    }
    /* ready: listening, port and pid files written */
    {
        char st[600];
        snprintf(st, sizeof st, "READY=1\nSTATUS=listening on %s (port %u), %d rank%s", o->listen,
                 http_server_port(r->srv), size, size == 1 ? "" : "s");
        clsolved_notify(st);
    }
    /* the watch thread must not take SIGTERM/SIGINT from the main thread */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_t watch;
    pthread_sigmask(SIG_BLOCK, &set, &old);
    int have_watch = pthread_create(&watch, NULL, clsolved_drain_watch, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    scheduler_config sched = {.store = r->store,
                              .device = o->device,
                              .stop = &clsolved_stop,
                              .retention_every_s = 60,
                              .drain_timeout_s = o->drain_timeout_s,
                              .cluster = cluster,
                              .nranks = size,
                              .lanes = lanes,
                              .shared_max_entries = o->shared_max_entries,
                              .batch = o->batch,
                              .batch_max = o->batch_max};
    figures_start(); /* in the background: jobs do not wait for it */
    /* asked for: parse uploads on rank 0 as they arrive (net/preparse.h);
     * under mpirun the other ranks then get their rows from rank 0's
     * parsed matrix (dsolve_input) instead of parsing their byte ranges
     * after the upload, which they still do for a matrix not parsed so */
    preparse_enable(o->preparse); /* CLSOLVE_PREPARSE=0|1 overrides (benchmarks) */
    scheduler_run_root(MPI_COMM_WORLD, &sched);
    preparse_enable(0);
    clsolved_watch_done = 1;
    if (have_watch)
        pthread_join(watch, NULL);
    fprintf(stderr, "clsolved: drained, exiting\n");
    root_close(r);
    preparse_clear(); /* after the server stopped: no upload holds an entry now */
    return 0;
}

int main(int argc, char **argv)
{
    char bound[320];
    int widened = cls_affinity_share(bound, sizeof bound); /* before any thread */
    ocl_threads_from_affinity(); /* before MPI or OpenCL starts a thread */
    ocl_env_before_threads();    /* PoCL's own setenv, done before any thread */
    /* --device gpu on the command line: PoCL is not started beside the GPU
     * driver (a value from --config comes too late for the environment) */
    ocl_icd_narrow(ocl_icd_device_arg(argc, argv, 1), NULL, 0);
    cls_mpi_singleton_env(); /* before MPI_Init: no mpirun, no cluster start-up */
    int provided = 0, rank = 0, size = 1;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
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
    if (widened)
        fprintf(stderr, "clsolved: rank %d: %s\n", rank, bound);
    signal(SIGPIPE, SIG_IGN);
    pc_cache_device_enable(1); /* later jobs reuse a hierarchy built on a device */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = rank == 0 ? clsolved_on_signal : SIG_IGN;
    sa.sa_flags = SA_RESTART; /* never an EINTR inside MPI, OpenCL or the store */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    clsolved_root root;
    int rc = rank == 0 ? root_open(&o, size, &root) : 0;
    json_t *cluster = NULL;
    cls_error err;
    cls_error_clear(&err);
    if (cluster_gather(MPI_COMM_WORLD, o.device, &cluster, &err) && rank == 0)
        fprintf(stderr, "clsolved: %s\n", err.msg);
    /* the lanes call MPI (on MPI_COMM_SELF) beside the scheduler's thread */
    int lanes = o.lanes;
    if (lanes > 1 && provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr,
                    "clsolved: MPI gives thread level %d, not MPI_THREAD_MULTIPLE: one job at a "
                    "time (--lanes 1)\n",
                    provided);
        lanes = 1;
    }
    if (rank == 0 && rc) {
        /* the workers are waiting for a job: tell them to exit */
        job_proto_msg m;
        memset(&m, 0, sizeof m);
        m.cmd = JOB_PROTO_EXIT;
        job_proto_send(MPI_COMM_WORLD, &m);
    } else if (rank == 0) {
        rc = root_run(&o, size, &root, cluster, lanes);
    } else {
        rc = scheduler_run_worker(MPI_COMM_WORLD, o.device);
    }
    json_decref(cluster);
    pc_cache_clear();        /* the preconditioner set-ups kept for reuse (some on the devices) */
    dsys_warm_release_all(); /* the devices kept warm between jobs */
    MPI_Finalize();
    return rc;
}
