/*
 * sched_cg.c: running one cg job (sched_priv.h). Announce, dsolve_file
 * (collective) with a monitor that publishes (iteration, residual) to the
 * store and returns the store's cancel flag (DELETE stops the solve at the
 * next iteration), then write the outputs durably (solution.bin,
 * residuals.json; the Matrix Market text is rendered from solution.bin
 * when downloaded) and only then the final job.json. Messages from the
 * reader name the file as the client knows it ("matrix.mtx" or the
 * uploaded name), never the daemon's path. The batch (sched_batch.c) runs
 * the same beginning and end around its one launch for many jobs.
 */
#include "../common/parallel.h"
#include "sched_priv.h"
#include "preparse.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "../common/numfmt.h"
#include "../common/timer.h"
#include "../common/trace.h"
#include "../solver/names.h"
#include "cluster.h"
#include "fileio.h"
#include "job_proto.h"
#include "metrics.h"
#include "report.h"

/* dsolve's phases (parsing, setting_up, solving, gathering) become the
 * job's progress.phase, each with the time it began */
static void sched_phase(void *ctx, const char *phase)
{
    sched_monitor_ctx *c = ctx;
    job_store_set_phase(c->store, c->id, phase);
}

static int sched_monitor(void *ctx, int64_t it, double res)
{
    sched_monitor_ctx *c = ctx;
    if (job_store_progress(c->store, c->id, it, res))
        c->cancelled = 1;
    if (!c->cancelled && sched_drain_over(c->cfg))
        c->drained = 1;
    return c->cancelled || c->drained;
}

/* Writes x as solution.mtx and solution.bin (little-endian float64); k
 * right-hand sides: an n x k array, the columns one after the other. */
/* What write_solution stored, for the record: each file's size, and
 * solution.bin's CRC-32 (zlib's), which the download route checks before it
 * serves the file (issue 27, item 7: a solution.bin cut to half was served
 * as 200 and cached for good). */
/* What a job writes of its solution: solution.bin, little-endian float64,
 * column after column, fsynced with its directory before the job is said
 * to have succeeded. It is the one durable copy: the Matrix Market text
 * (three times its size at %.17g, and 0.5 s of the 0.66 s a poisson3d 200
 * job spent writing on an H200) is rendered from it when it is downloaded
 * (routes_solution.c), as JSON and .npy are. */
typedef struct sched_files {
    int64_t bin_bytes;
    uint32_t bin_crc32;
} sched_files;

static json_t *sched_files_json(const sched_files *f)
{
    char crc[16];
    snprintf(crc, sizeof crc, "%08x", (unsigned)f->bin_crc32);
    return json_pack("{s:{s:I, s:s}}", "solution.bin", "bytes", (json_int_t)f->bin_bytes, "crc32",
                     crc);
}

/* little-endian float64 whatever the host's order, on every core */
typedef struct pack_ctx {
    const double *x;
    unsigned char *bin;
} pack_ctx;

static void pack_range(void *arg, int range, int64_t a, int64_t e)
{
    (void)range;
    const pack_ctx *p = arg;
    for (int64_t i = a; i < e; i++) {
        uint64_t u;
        memcpy(&u, &p->x[i], 8);
        for (int k = 0; k < 8; k++)
            p->bin[8 * i + k] = (unsigned char)(u >> (8 * k));
    }
}

static int write_solution(const char *dir, const double *x, int64_t rows, int k, sched_files *files,
                          cls_error *err)
{
    char path[PATH_MAX];
    const int64_t n = rows * (k > 1 ? k : 1);
    unsigned char *bin = malloc((size_t)(n ? n : 1) * 8);
    if (!bin)
        return cls_fail(err, CLS_EOTHER, "out of memory for solution.bin");
    pack_ctx pk = {x, bin};
    cls_parallel_for(n, 1 << 18, pack_range, &pk);
    files->bin_bytes = n * 8;
    files->bin_crc32 = fileio_crc32(bin, (size_t)n * 8);
    cls_trace("write: solution.bin packed, CRC-32");
    int rc = snprintf(path, sizeof path, "%s/solution.bin", dir) >= (int)sizeof path
                 ? cls_fail(err, CLS_EOTHER, "job directory path too long")
                 : fileio_write_durable(path, bin, (size_t)n * 8, err);
    free(bin);
    cls_trace("write: solution.bin written and synced");
    return rc;
}

/* 1 when a write failed for lack of space (or quota): worth a retry */
static int write_residuals(const char *dir, const char *id, const double *h, int64_t n,
                           int64_t first, cls_error *err)
{
    json_t *arr = json_array();
    for (int64_t i = 0; i < n; i++)
        json_array_append_new(arr, isfinite(h[i]) ? json_real(h[i]) : json_null());
    json_t *o = json_pack("{s:s, s:I, s:o}", "id", id, "first_iteration", (json_int_t)first,
                          "residuals", arr);
    char *text = cls_json_shorten(json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)));
    json_decref(o);
    if (!text)
        return cls_fail(err, CLS_EOTHER, "out of memory for residuals.json");
    char path[PATH_MAX];
    int rc = snprintf(path, sizeof path, "%s/residuals.json", dir) >= (int)sizeof path
                 ? cls_fail(err, CLS_EOTHER, "job directory path too long")
                 : fileio_write_durable(path, text, strlen(text), err);
    free(text);
    return rc;
}

static int fill_msg(job_proto_msg *m, const job_claim *c, cls_error *err)
{
    memset(m, 0, sizeof *m);
    m->cmd = JOB_PROTO_CG;
    memcpy(m->id, c->id, sizeof m->id);
    if (snprintf(m->a_path, sizeof m->a_path, "%s/matrix.mtx", c->dir) >= (int)sizeof m->a_path ||
        (c->in.has_rhs &&
         snprintf(m->b_path, sizeof m->b_path, "%s/rhs.mtx", c->dir) >= (int)sizeof m->b_path) ||
        (c->in.has_x0 &&
         snprintf(m->x0_path, sizeof m->x0_path, "%s/x0.mtx", c->dir) >= (int)sizeof m->x0_path))
        return cls_fail(err, CLS_EOTHER, "data directory path too long for the job protocol");
    /* the parameters were checked at submission (job_params_set); this
     * is the same conversion `clsolve solve` makes of its options */
    solve_options so;
    solve_options_default(&so);
    if (job_params_solve_options(&c->params, &so, err))
        return CLS_EUSAGE;
    m->tol = so.tol;
    m->atol = so.atol;
    m->maxiter = so.maxiter;
    m->precond = (int32_t)so.precond;
    m->pc = c->params.pc;
    m->method = (int32_t)so.method;
    m->precision = (int32_t)so.precision;
    m->backend = (int32_t)so.backend;
    m->devices_per_rank = 1;
    return CLS_OK;
}

static void msg_options(const job_proto_msg *m, const char *device, dsolve_options *o)
{
    memset(o, 0, sizeof *o);
    solve_options_default(&o->solve);
    o->solve.tol = m->tol;
    o->solve.atol = m->atol;
    o->solve.maxiter = m->maxiter;
    o->solve.precond = (solver_precond)m->precond;
    o->pc = m->pc;
    o->solve.precision = (la_precision)m->precision;
    o->solve.method = (solver_method)m->method;
    o->solve.backend = (la_backend)m->backend;
    o->solve.device = device;
    o->devices_per_rank = m->devices_per_rank > 1 ? m->devices_per_rank : 1;
}

static int sched_take_matrix(void *ctx, const char *path, csr_matrix *A, mm_header *h,
                             mm_read_stats *st)
{
    (void)ctx;
    return preparse_take(path, A, h, st);
}

/* The job's messages, options and monitor; CLS_OK, or the job has been
 * failed (its parameters could not be made the solver's options). */
int sched_cg_begin(const scheduler_config *cfg, const job_claim *c, const adm_estimate *est,
                   uint64_t read_budget, sched_cg_run *r)
{
    memset(r, 0, sizeof *r);
    cls_error err;
    cls_error_clear(&err);
    int bad = fill_msg(&r->m, c, &err);
    r->m.devices_per_rank = est && est->devices_per_rank > 1 ? est->devices_per_rank : 1;
    if (bad) {
        if (job_store_complete(cfg->store, c->id, JOB_FAILED, NULL,
                               sched_error_json("internal", CLS_EOTHER, err.msg, 0), NULL, NULL,
                               &err))
            fprintf(stderr, "clsolved: job %s: %s\n", c->id, err.msg);
        return CLS_EOTHER;
    }
    sched_log_started(c);
    r->t0 = cls_now();
    msg_options(&r->m, cfg->device, &r->o);
    r->mc = (sched_monitor_ctx){.store = cfg->store, .id = c->id, .cfg = cfg};
    r->o.solve.monitor = sched_monitor;
    r->o.solve.monitor_ctx = &r->mc;
    r->o.phase = sched_phase;
    r->o.phase_ctx = &r->mc;
    r->o.read_progress = sched_read_progress;
    r->o.take_matrix = sched_take_matrix; /* parsed while it was uploaded (preparse.h) */
    r->o.read_ctx = &r->mc;
    r->o.read_max_memory = read_budget;
    return CLS_OK;
}

/* Runs a cg job. collective: every rank of comm is told (job_proto) and
 * solves it with rank 0; otherwise comm is MPI_COMM_SELF and the job runs
 * on this rank alone, in a lane. est and read_budget: the admission's
 * estimate and the reader's memory budget (admission.h). */
void sched_run_cg(MPI_Comm comm, int collective, const scheduler_config *cfg, const job_claim *c,
                  const adm_estimate *est, uint64_t read_budget)
{
    sched_cg_run r;
    if (sched_cg_begin(cfg, c, est, read_budget, &r))
        return;
    sched_cg_solve(comm, collective, cfg, c, &r);
}

void sched_cg_solve(MPI_Comm comm, int collective, const scheduler_config *cfg, const job_claim *c,
                    sched_cg_run *r)
{
    if (collective)
        job_proto_send(comm, &r->m);
    dsolve_report rep;
    double *x = NULL;
    cls_error err;
    cls_error_clear(&err);
    int rc = dsolve_file(comm, r->m.a_path, r->m.b_path[0] ? r->m.b_path : NULL,
                         r->m.x0_path[0] ? r->m.x0_path : NULL, &r->o, &rep, &x, &err);
    cls_trace("write: the solve returned");
    sched_cg_finish(cfg, c, r, rc, &err, &rep, x);
}

/* What became of the job: the outputs written durably (a full disk waits),
 * then the record; frees x and rep. */
void sched_cg_finish(const scheduler_config *cfg, const job_claim *c, sched_cg_run *r, int rc,
                     cls_error *errp, dsolve_report *repp, double *x)
{
    job_store *s = cfg->store;
    job_proto_msg m = r->m;
    dsolve_options o = r->o;
    sched_monitor_ctx mc = r->mc;
    dsolve_report rep = *repp;
    cls_error err = *errp;
    const double t0 = r->t0;
    double t_solved = cls_now();
    sched_user_message(err.msg, sizeof err.msg, c, m.a_path, m.b_path, m.x0_path);

    if (mc.drained) {
        /* the drain ran out of time: the job runs again at the next start */
        free(x);
        dsolve_report_free(&rep);
        if (job_store_requeue(s, c->id, &err))
            fprintf(stderr, "clsolved: job %s: %s\n", c->id, err.msg);
        fprintf(stderr, "clsolved: job %s stopped by the drain after %.0f s; queued again\n", c->id,
                cfg->drain_timeout_s);
        return;
    }
    job_store_set_phase(s, c->id, "writing");
    job_status st = rc == CLS_OK ? JOB_SUCCEEDED : JOB_FAILED;
    if (mc.cancelled)
        st = JOB_CANCELLED;
    json_t *error = NULL;
    cls_error werr;
    cls_error_clear(&werr);
    sched_files files = {-1, 0};
    if (x) {
        int wrc;
        /* a full disk keeps the solve: the job waits (its note and /readyz
         * say why) and the write is retried every second until space
         * returns, the job is cancelled, or a drain runs out of time
         * (queued again) -- never failed for lack of space (issue 27,
         * item 4) */
        while ((wrc = write_solution(c->dir, x, rep.rows, rep.nrhs, &files, &werr)) &&
               sched_disk_full(&werr)) {
            char note[240];
            snprintf(note, sizeof note,
                     "waits for disk space to write its solution (%.1f MB): the data directory's "
                     "disk is full",
                     (double)rep.rows * (rep.nrhs > 1 ? rep.nrhs : 1) * 8.0 / 1048576.0);
            job_store_set_note(s, c->id, note);
            job_store_set_disk_wait(s, "the data directory's disk is full: a finished job waits "
                                       "to write its solution");
            if (job_store_cancel_requested(s, c->id)) {
                mc.cancelled = 1;
                break;
            }
            if (sched_drain_over(cfg)) {
                job_store_set_disk_wait(s, NULL);
                free(x);
                dsolve_report_free(&rep);
                if (job_store_requeue(s, c->id, &err))
                    fprintf(stderr, "clsolved: job %s: %s\n", c->id, err.msg);
                return;
            }
            cls_error_clear(&werr);
            nanosleep(&(struct timespec){1, 0}, NULL);
        }
        job_store_set_disk_wait(s, NULL);
        job_store_set_note(s, c->id, "");
        if (wrc && mc.cancelled) {
            st = JOB_CANCELLED;
            cls_error_clear(&werr);
        } else if (wrc) {
            st = JOB_FAILED;
            rc = CLS_EOTHER;
            sched_user_message(werr.msg, sizeof werr.msg, c, m.a_path, m.b_path, m.x0_path);
            error = sched_error_json("internal", CLS_EOTHER, werr.msg, 0);
        }
    }
    int hrc = 0;
    /* the residual history waits for space as the solution does (a few KB;
     * a cancel or a drain ends the wait, the job then ends as it would) */
    for (int tries = 0; rep.cg.nhistory > 0; tries++) {
        cls_error_clear(&werr);
        hrc = write_residuals(c->dir, c->id, rep.cg.history, rep.cg.nhistory, 0, &werr);
        if (!hrc || !sched_disk_full(&werr) || job_store_cancel_requested(s, c->id) ||
            sched_drain_over(cfg))
            break;
        job_store_set_disk_wait(s, "the data directory's disk is full: a finished job waits "
                                   "to write its residual history");
        nanosleep(&(struct timespec){1, 0}, NULL);
    }
    job_store_set_disk_wait(s, NULL);
    cls_trace("write: residuals.json written");
    if (hrc && !error) {
        st = JOB_FAILED;
        rc = CLS_EOTHER;
        sched_user_message(werr.msg, sizeof werr.msg, c, m.a_path, m.b_path, m.x0_path);
        error = sched_error_json("internal", CLS_EOTHER, werr.msg, 0);
    }
    double write_s = cls_now() - t_solved, total = cls_now() - t0;
    if (!error && st == JOB_CANCELLED)
        error = sched_error_json("cancelled", CLS_EOTHER,
                                 strstr(err.msg, "reading stopped")
                                     ? "cancelled while reading the matrix"
                                 : err.msg[0] ? err.msg
                                              : "cancelled",
                                 0);
    else if (!error && rc != CLS_OK)
        error = sched_error_json(sched_error_code(rc), rc, err.msg, err.line);

    json_t *result = NULL;
    if (rep.rows > 0 || rep.cg.nhistory > 0) {
        /* the report's keys are net/report.c's, shared with `clsolve solve
         * --json`; the job adds its right-hand side and whether x was kept */
        result = report_json(&rep, &o, rc);
        json_object_set_new(result, "rhs", json_string(c->in.has_rhs ? c->in.rhs_name : "A*ones"));
        json_object_set_new(result, "solution_available", json_boolean(x != NULL && !werr.msg[0]));
        if (x && !werr.msg[0])
            json_object_set_new(result, "solution_files", sched_files_json(&files));
    }
    json_t *devices = json_array();
    for (int i = 0; i < rep.nparts && i < DSOLVE_MAX_PARTS; i++) {
        const dsolve_part_info *p = &rep.parts[i];
        json_t *d = cluster_device_json(&p->device);
        json_object_set_new(d, "rank", json_integer(p->rank));
        json_object_set_new(d, "rows",
                            json_pack("[I, I]", (json_int_t)p->row_begin, (json_int_t)p->row_end));
        json_object_set_new(d, "nnz", json_integer(p->nnz));
        /* the configuration this part ran with, not the device default */
        json_object_set_new(d, "work_group",
                            json_pack("{s:I, s:I, s:I, s:I, s:s}", "local_size",
                                      (json_int_t)p->config.local_size, "groups_per_cu",
                                      (json_int_t)p->config.groups_per_cu, "spmv_local_size",
                                      (json_int_t)p->config.spmv_local_size, "vector_width",
                                      (json_int_t)p->config.vector_width, "spmv_variant",
                                      la_spmv_variant_name(p->spmv)));
        json_array_append_new(devices, d);
        metrics_device_busy(p->rank, p->device.index, p->device.name, rep.setup_s + rep.solve_s);
    }
    json_t *timings = report_times_json(&rep);
    json_object_set_new(timings, "total_s", json_real(total));
    json_object_set_new(timings, "write_s", json_real(write_s));
    sched_wait_timings(timings, c);
    metrics_job_finished(st, rep.solve_s, rep.cg.iterations);
    sched_log_finished(c, st, error, timings, rep.cg.iterations, rep.cg.rel_residual);
    if (rep.rows > 0) { /* the phases it reached */
        metrics_job_phase("parse", rep.parse_s);
        metrics_job_phase("partition", rep.partition_s);
        metrics_job_phase("init", rep.init_s);
        metrics_job_phase("upload", rep.upload_s);
        metrics_job_phase("solve", rep.solve_s);
        metrics_job_phase("gather", rep.gather_s);
    }
    metrics_job_phase("total", total);
    if (job_store_complete(s, c->id, st, result, error, timings, devices, &werr))
        fprintf(stderr, "clsolved: job %s: %s\n", c->id, werr.msg);
    free(x);
    dsolve_report_free(&rep);
}

/* A worker rank: every cg job rank 0 announces, solved with it. */
int scheduler_run_worker(MPI_Comm comm, const char *device)
{
    for (;;) {
        job_proto_msg m;
        if (job_proto_wait(comm, &m) != MPI_SUCCESS)
            return 1;
        if (m.cmd == JOB_PROTO_EXIT)
            return 0;
        if (m.cmd != JOB_PROTO_CG)
            continue;
        dsolve_options o;
        msg_options(&m, device, &o);
        dsolve_report rep;
        cls_error err;
        cls_error_clear(&err);
        /* x is passed on every rank although only rank 0 receives one: the
         * call is then identical everywhere, whatever dsolve does with it */
        double *x = NULL;
        dsolve_file(comm, m.a_path, m.b_path[0] ? m.b_path : NULL, m.x0_path[0] ? m.x0_path : NULL,
                    &o, &rep, &x, &err);
        free(x);
        dsolve_report_free(&rep);
    }
}
