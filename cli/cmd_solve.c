/*
 * cmd_solve.c: `clsolve solve`, the whole pipeline: read the matrix (and b,
 * x0), solve with CG or pipelined CG, write x, and report. Without -b the
 * right-hand side is b = A*1, so the exact solution is all ones and the
 * error is reported beside the residual.
 *
 * It is an MPI program: `clsolve solve A.mtx` runs as a singleton (one rank),
 * `mpirun -np K clsolve solve A.mtx` splits the system over K ranks and
 * each rank's devices (--devices-per-rank, or a device list --device 0,1),
 * through the collective dsolve_file. Options are parsed before MPI starts,
 * so a usage error exits 2 on every rank without touching MPI. Only rank 0
 * prints and writes; every rank exits with the same (agreed) code, after a
 * barrier that follows rank 0's output, so mpirun's abort-on-first-nonzero
 * cannot cut rank 0 short.
 *
 * The JSON summary (--json) is the contract scripts and tests read: its keys
 * are listed in DESIGN.md and must not be renamed. The solve report in it
 * is net/report.c's, the same serialiser as the daemon's job record, so the
 * two cannot drift apart; this file adds only what the command line knows.
 */
#include <jansson.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common/eta.h"
#include "common/numfmt.h"
#include "common/timer.h"
#include "common/trace.h"
#include "kernels/ocl.h"
#include "progress.h"
#include "matrices/mm.h"
#include "net/job_params.h"
#include "net/report.h"
#include "common/sysres.h"
#include "solver/dsolve.h"
#include "solver/names.h"

/* The memory the host has free (/proc/meminfo's MemAvailable, or what the
 * container's cgroup leaves when less: common/sysres.h) less 256 MB for
 * the rest of the solve's set-up; 0 (no limit) when unknown. */
static uint64_t solve_memory_available(void)
{
    cls_sysres r;
    cls_sysres_read(&r);
    uint64_t b = r.mem_available, slack = (uint64_t)256 << 20;
    return b > 2 * slack ? b - slack : b / 2;
}
#include "solver/dist/dvec.h"

typedef struct progress {
    cli_progress line; /* on a terminal: phase, elapsed, iteration, ETA (cli/progress.h) */
    cls_eta eta;
    double tol;
    int64_t maxiter; /* --maxiter (<= 0: the default, max(1000, 10 n), not known here) */
    FILE *monitor;   /* --monitor: one line per iteration here */
} progress;

/* --monitor prints every iteration as PETSc's -ksp_monitor does ("K KSP
 * relative residual norm R", R = ||r_K||/||b||, K = 0 the initial one);
 * otherwise, on a terminal, the progress line, once the solve has run for a
 * second. */
static int progress_monitor(void *ctx, int64_t it, double res)
{
    progress *p = ctx;
    if (p->monitor) {
        fprintf(p->monitor, "%5lld KSP relative residual norm %.12e\n", (long long)it, res);
        return 0;
    }
    double eta = cls_eta_update(&p->eta, cls_now(), it, p->maxiter, res, p->tol);
    if (cls_now() - p->line.start >= 1.0)
        cli_progress_draw(&p->line, it, res, p->tol, eta, 0);
    return 0;
}

/* dsolve's phases: parsing, setting_up, solving, gathering */
static void progress_phase(void *ctx, const char *phase)
{
    progress *p = ctx;
    cli_progress_phase(&p->line, phase);
    if (!strcmp(phase, "solving"))
        cls_eta_reset(&p->eta);
    if (!p->monitor && cls_now() - p->line.start >= 1.0)
        cli_progress_draw(&p->line, -1, NAN, p->tol, -1, 1);
}

static json_t *device_json(const dsolve_part_info *p)
{
    return json_pack(
        "{s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:s, s:s, s:i, "
        "s:{s:I, s:I, s:I, s:s, s:I, s:s, s:s}}",
        "rank", p->rank, "slot", p->slot, "index", p->device.index, "row_begin",
        (json_int_t)p->row_begin, "rows", (json_int_t)(p->row_end - p->row_begin), "nnz",
        (json_int_t)p->nnz, "ghosts", (json_int_t)p->ghosts, "interior_rows",
        (json_int_t)p->interior_rows, "name", p->device.name, "platform", p->device.platform_name,
        "type", ocl_type_name(p->device.type), "driver", p->device.driver, "compute_units",
        (int)p->device.compute_units, "work_group", "local_size", (json_int_t)p->config.local_size,
        "groups_per_cu", (json_int_t)p->config.groups_per_cu, "spmv_local_size",
        (json_int_t)p->config.spmv_local_size, "spmv_variant", la_spmv_variant_name(p->spmv),
        "vector_width", (json_int_t)p->config.vector_width, "format", la_spmv_variant_name(p->spmv),
        "source", p->config.source[0] ? p->config.source : "default");
}

/* The warm devices and the cached preconditioners, released (the end of
 * cmd_solve, on a thread of its own when one starts). */
static void *solve_release_run(void *arg)
{
    (void)arg;
    pc_cache_clear(); /* first: a set-up kept on a device holds its buffers */
    dsys_warm_release_all();
    cls_trace("solve: devices torn down");
    return NULL;
}

static void solve_release_then(void *ctx)
{
    solve_release_run(ctx);
}

int cmd_solve(int argc, char **argv)
{
    cli_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "solve"};
    const char *path = NULL, *bpath = NULL, *x0path = NULL, *out = NULL;
    const char *bpaths[DSOLVE_MAX_RHS]; /* -b, given once per file */
    int nb = 0;
    /* several matrices: a batch (solve_batch.c); solo: an option it refuses */
    const char **paths = calloc((size_t)argc, sizeof *paths);
    int npaths = 0;
    const char *solo = NULL;
    if (!paths) {
        fprintf(stderr, "clsolve solve: out of memory\n");
        return CLS_EOTHER;
    }
    const double t_entry = cls_now(); /* before MPI starts: its start-up is reported too */
    int json = 0, engine_note = 0, monitor = 0;
    const char *pkey;
    job_params params; /* the solve's parameters, as a job's (net/job_params.h) */
    job_params_init(&params);
    dsolve_options dopt;
    dsolve_options_default(&dopt);
    dopt.prewarm = 1; /* the device's OpenCL start overlaps reading the matrix */
    solve_options *opt = &dopt.solve;

    while (a.i < argc) {
        const int at = a.i;
        if (cli_opt(&a, "-b", "--rhs", 1)) {
            solo = argv[at];
            if (nb == DSOLVE_MAX_RHS)
                cli_usage_error("solve", "more than %d right-hand side files", DSOLVE_MAX_RHS);
            bpaths[nb++] = bpath = a.value;
        } else if (cli_opt(&a, "--rhs-mode", NULL, 1)) {
            solo = argv[at];
            if (!strcmp(a.value, "together"))
                dopt.rhs_mode = DSOLVE_RHS_TOGETHER;
            else if (!strcmp(a.value, "sequential"))
                dopt.rhs_mode = DSOLVE_RHS_SEQUENTIAL;
            else
                cli_usage_error("solve", "--rhs-mode: '%s' is not together or sequential", a.value);
        } else if (cli_opt(&a, "--x0", NULL, 1)) {
            x0path = a.value;
            solo = argv[at];
        } else if (cli_opt(&a, "-o", "--output", 1))
            out = a.value;
        else if (cli_solve_param(&a, &params, &pkey) || cli_precond(&a, &params.pc, &pkey)) {
            /* --tol, --atol, --maxiter, --method, --precision, --precond
             * NAME, --precond-degree N, ...: checked by the daemon's own
             * check of its query parameters (net/job_params.h) */
        } else if (cli_opt(&a, "--monitor", NULL, 0)) {
            monitor = 1;
            solo = argv[at];
        } else if (cli_opt(&a, "--device", NULL, 1))
            opt->device = a.value;
        else if (cli_opt(&a, "--devices-per-rank", NULL, 1)) {
            dopt.devices_per_rank = (int)cli_int(&a, "--devices-per-rank", a.value, 1);
            solo = argv[at];
        } else if (cli_opt(&a, "--min-rows-per-part", NULL, 1)) {
            dopt.min_rows_per_part = cli_int(&a, "--min-rows-per-part", a.value, 1);
            solo = argv[at];
        } else if (cli_opt(&a, "--read-everywhere", NULL, 0)) {
            dopt.read_mode = DSOLVE_READ_EVERYWHERE;
            solo = argv[at];
        } else if (cli_opt(&a, "--read", NULL, 1)) {
            if (dsolve_read_mode_parse(a.value, &dopt.read_mode) != 0)
                cli_usage_error("solve", "--read: '%s' is not auto, rank0, everywhere or ranged",
                                a.value);
            solo = argv[at];
        } else if (cli_opt(&a, "--verbose", "-v", 0))
            dopt.verbose = 1;
        else if (cli_opt(&a, "--profile", NULL, 0))
            dopt.profile = 1;
        else if (cli_opt(&a, "--format", NULL, 1) || cli_opt(&a, "--spmv", NULL, 1)) {
            /* --spmv auto|scalar|vector is the old name of --format */
            if (la_spmv_variant_parse(a.value, &opt->spmv) != 0)
                cli_usage_error("solve",
                                "--format: '%s' is not auto, csr, csr-vector, csr-adaptive, "
                                "sell or bcsr",
                                a.value);
        } else if (cli_opt(&a, "--engine", NULL, 1)) {
            /* kept for one release: there is one engine now (docs/distributed.md) */
            if (dsolve_engine_parse(a.value, &dopt.engine) != 0)
                cli_usage_error("solve", "--engine: '%s' is not auto, local or distributed",
                                a.value);
            engine_note = 1;
        } else if (cli_opt(&a, "--json", NULL, 0))
            json = 1;
        else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0')
            cli_usage_error("solve", "unknown option '%s'", argv[a.i]);
        else
            paths[npaths++] = argv[a.i++];
    }
    if (!npaths)
        cli_usage_error("solve", "no matrix file given");
    path = paths[0];
    opt->name = path;
    cls_error perr;
    if (job_params_solve_options(&params, opt, &perr))
        cli_usage_error("solve", "%s", perr.msg);
    dopt.pc = params.pc;
    if (npaths > 1) { /* a batch: one launch, one device, one rank (solve_batch.c) */
        const char *size = getenv("OMPI_COMM_WORLD_SIZE");
        if (solo)
            cli_usage_error("solve",
                            "a batch (several matrices) takes no %s: it applies to one "
                            "matrix (b = A*1 for each)",
                            solo);
        if (opt->method != SOLVER_AUTO && opt->method != SOLVER_CG &&
            opt->method != SOLVER_CG_SMALL)
            cli_usage_error("solve",
                            "a batch (several matrices) runs cg's recurrence; --method "
                            "%s applies to one matrix",
                            solver_method_name(opt->method));
        if (opt->backend == LA_BACKEND_NATIVE)
            cli_usage_error("solve", "a batch (several matrices) runs as one OpenCL launch; "
                                     "--backend native applies to one matrix");
        if (opt->precond != PRECOND_NONE && opt->precond != PRECOND_JACOBI &&
            opt->precond != PRECOND_AUTO)
            cli_usage_error("solve",
                            "a batch (several matrices) runs no preconditioner but "
                            "none or jacobi, not %s",
                            pc_name(opt->precond));
        if (size && atoi(size) > 1)
            cli_usage_error("solve",
                            "a batch (several matrices) runs on one device of one "
                            "rank: run it without mpirun -np %s",
                            size);
        int brc = cli_solve_batch(paths, npaths, opt, json, out);
        free(paths);
        return brc;
    }
    free(paths);

    /* MPI: a singleton without mpirun; the daemon or a test may have
     * started it already */
    int inited = 0, own_mpi = 0, rank = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "clsolve solve: MPI_Init_thread failed\n");
            return CLS_EOTHER;
        }
        own_mpi = 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (engine_note && rank == 0)
        fprintf(stderr, "clsolve solve: note: --engine does nothing any more: every layout "
                        "runs the one fused engine (it will be removed in the next release)\n");

    double t0 = cls_now();
    cls_error err;
    cls_error_clear(&err);
    double *x = NULL;
    dsolve_report rep;
    progress pr = {.tol = opt->tol, .maxiter = opt->maxiter};
    cli_progress_init(&pr.line, rank == 0 && isatty(2) && !monitor);
    if (monitor && rank == 0)
        pr.monitor = json ? stderr : stdout; /* --json keeps stdout one object */
    opt->monitor = progress_monitor;
    opt->monitor_ctx = &pr;
    dopt.phase = progress_phase;
    dopt.phase_ctx = &pr;
    /* never the OOM killer: the reader stops, with the figures, before it
     * outgrows the memory the host has free (mm_read_options.max_memory) */
    dopt.read_max_memory = solve_memory_available();
    /* the devices go as soon as x is down, beside the true residual and
     * the report (one rank); without -o the warm devices' teardown goes
     * with them, with -o it runs beside the write of x (below) */
    dopt.release_early = 1;
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (!out && world == 1) /* several ranks release at dsolve's end: on this thread, below */
        dopt.release_then = solve_release_then;
    /* x comes to rank 0 only for -o: the error against x = 1 (b = A*1) is
     * measured where each rank's rows are (dsolve_report.max_err_ones) */
    int rc = dsolve_file_rhs(MPI_COMM_WORLD, path, bpaths, nb, x0path, &dopt, &rep, out ? &x : NULL,
                             &err);
    /* with -o, the devices' teardown (60-90 ms on one H200: the driver
     * frees the context, its buffers and pinned staging) runs beside the
     * write of x and the report; nothing here touches a device after the
     * solve (without -o, dsolve ran it beside its own host work) */
    pthread_t rel;
    const int rel_started =
        !dopt.release_then && pthread_create(&rel, NULL, solve_release_run, NULL) == 0;
    const int k = rep.nrhs > 0 ? rep.nrhs : 1;
    const int rhs_is_A1 = bpath == NULL;
    double write_s = 0.0;
    if (rank != 0)
        goto out;
    cli_progress_end(&pr.line);
    if (out && x && (rc == CLS_OK || rc == CLS_ENOTCONV)) {
        char comment[256];
        snprintf(comment, sizeof comment, "clsolve solution of %s: %s, %lld iterations", path,
                 rep.cg.converged ? "converged" : "not converged", (long long)rep.cg.iterations);
        cls_error werr;
        const double tw = cls_now();
        int wrc = k > 1 ? mm_write_block(out, x, rep.rows, k, comment, &werr)
                        : mm_write_vector(out, x, rep.rows, comment, &werr);
        write_s = cls_now() - tw;
        if (wrc) {
            /* the one error to report (printed once, below) */
            if (rc == CLS_OK) {
                rc = CLS_EOTHER;
                err = werr;
            } else {
                fprintf(stderr, "clsolve solve: %s\n", werr.msg);
            }
        }
    }

    double total_s = cls_now() - t0, startup_s = t0 - t_entry;
    const double err_ones =
        rhs_is_A1 && (rc == CLS_OK || rc == CLS_ENOTCONV) ? rep.max_err_ones : NAN;
    int solved = rep.cg.nhistory > 0;
    if (json) {
        /* the report's keys are net/report.c's, shared with the job record;
         * here only what this command alone knows: the files, the error
         * against x = 1, the devices, the history and its own times */
        json_t *o = json_object();
        json_object_set_new(o, "matrix", json_string(path));
        json_t *r = report_json(&rep, &dopt, rc);
        json_object_update(o, r);
        json_decref(r);
        if (rc != CLS_OK) {
            json_object_set_new(o, "error", json_string(err.msg));
            if (err.line)
                json_object_set_new(o, "line", json_integer(err.line));
        }
        if (solved && rhs_is_A1)
            json_object_set_new(o, "max_error_vs_exact",
                                isfinite(err_ones) ? json_real(err_ones) : json_null());
        if (nb > 1) {
            json_t *rl = json_array();
            for (int f = 0; f < nb; f++)
                json_array_append_new(rl, json_string(bpaths[f]));
            json_object_set_new(o, "rhs", rl);
        } else {
            json_object_set_new(o, "rhs", json_string(bpath ? bpath : "A*ones"));
        }
        json_t *devs = json_array();
        for (int k = 0; k < rep.nparts && k < DSOLVE_MAX_PARTS; k++)
            if (rep.parts[k].device.name[0])
                json_array_append_new(devs, device_json(&rep.parts[k]));
        json_object_set_new(o, "devices", devs);
        /* every phase, in order: MPI start-up; read (or generate); halo
         * plans; devices (contexts, programs); matrix, vectors and workspace
         * to the devices; solve; x back and the true residual; -o file */
        json_t *times = report_times_json(&rep);
        json_object_set_new(times, "total_s", json_real(total_s));
        json_object_set_new(times, "startup_s", json_real(startup_s));
        json_object_set_new(times, "write_s", json_real(write_s));
        /* the residual history: ||r_k||/||b|| for k = 0 (the initial) on */
        json_t *hist = json_array();
        for (int64_t h = 0; h < rep.cg.nhistory; h++)
            json_array_append_new(hist, isfinite(rep.cg.history[h]) ? json_real(rep.cg.history[h])
                                                                    : json_null());
        json_object_set_new(o, "residuals", hist);
        json_object_set_new(o, "times", times);
        char *s = cls_json_shorten(json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17)));
        if (s)
            puts(s);
        free(s);
        json_decref(o);
    }
    if (rc != CLS_OK)
        fprintf(stderr, "clsolve solve: %s\n", err.msg);
    if (rep.pc.note[0])
        fprintf(stderr, "clsolve solve: note: %s\n", rep.pc.note);
    if (!json && solved) {
        printf("%s: %lld rows, %lld nonzeros\n", path, (long long)rep.rows, (long long)rep.nnz);
        if (rep.nparts > 1)
            printf("parts: %d over %d rank(s), up to %d device(s) per rank\n", rep.nparts,
                   rep.ranks, rep.devices_per_rank);
        for (int k = 0; k < rep.nparts && k < DSOLVE_MAX_PARTS; k++) {
            const dsolve_part_info *p = &rep.parts[k];
            if (!p->device.name[0])
                continue;
            if (rep.nparts > 1)
                printf("part %d: rank %d, rows [%lld, %lld), %lld ghosts: ", k, p->rank,
                       (long long)p->row_begin, (long long)p->row_end, (long long)p->ghosts);
            printf("device: %s (%s, %s)\n", p->device.name, p->device.platform_name,
                   ocl_type_name(p->device.type));
        }
        printf("method: %s, precond %s, precision %s, spmv %s",
               solver_method_name(rep.method_known ? rep.method : opt->method),
               pc_name(rep.pc.type), la_precision_name(opt->precision),
               la_spmv_variant_name(rep.nparts ? rep.parts[0].spmv : LA_SPMV_SCALAR));
        if (rep.cg.cpu_threads > 0) /* kernels/cpu/: the loop ran natively, not in OpenCL */
            printf(", native CPU loops on %d thread%s", rep.cg.cpu_threads,
                   rep.cg.cpu_threads == 1 ? "" : "s");
        printf("\n");
        printf("%s after %lld iterations: relative residual %.3e (true %.3e)\n",
               rep.cg.converged ? "converged" : "not converged", (long long)rep.cg.iterations,
               rep.cg.rel_residual, rep.true_rel_residual);
        for (int c = 0; k > 1 && rep.cols && c < k; c++)
            printf("  right-hand side %d: %s after %lld iterations, true residual %.3e\n", c + 1,
                   rep.cols[c].converged ? "converged" : "not converged",
                   (long long)rep.cols[c].iterations, rep.true_rel_cols[c]);
        if (k > 1)
            printf("%d right-hand sides solved %s\n", k,
                   rep.together ? "together (the matrix read once per iteration)"
                                : "one after the other");
        if (rhs_is_A1 && isfinite(err_ones))
            printf("b = A*1: max |x_i - 1| = %.3e\n", err_ones);
        if (rep.pc.type != PRECOND_NONE && rep.pc.type != PRECOND_JACOBI)
            printf("preconditioner: %s, set-up %.3f s (%s)\n", pc_name(rep.pc.type), rep.pc.setup_s,
                   rep.pc.parts_reused    ? "reused"
                   : rep.pc.parts_resetup ? "re-set-up from a set-up of the same pattern"
                                          : "built");

        printf(
            "times: parse %.3f s, setup %.3f s, solve %.3f s (%.4f ms/iteration), total %.3f s\n",
            rep.parse_s, rep.setup_s, rep.solve_s,
            rep.cg.iterations ? 1e3 * rep.solve_s / (double)rep.cg.iterations : 0.0, total_s);
        if (out && x && (rc == CLS_OK || rc == CLS_ENOTCONV))
            printf("solution written to %s\n", out);
    }
    if (!json && rep.profile)
        report_profile_print(stderr, rep.profile);

out:
    fflush(stdout);
    fflush(stderr);
    {
        /* rank 0's write of x may have failed after the agreement: share it */
        int agreed = rc;
        MPI_Bcast(&agreed, 1, MPI_INT, 0, MPI_COMM_WORLD);
        rc = agreed;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    dsolve_report_free(&rep);
    free(x);
    if (rel_started)
        pthread_join(rel, NULL);
    else if (!dopt.release_then) /* dsolve ran it */
        solve_release_run(NULL);
    cls_trace("solve: released");
    ocl_trace_stats("solve");
    if (own_mpi)
        MPI_Finalize();
    cls_trace("solve: MPI finalized");
    return rc;
}
