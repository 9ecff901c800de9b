/*
 * sched_batch.c: the small cg jobs waiting in the queue, solved together in
 * one launch (issue 24, item 2).
 *
 * On a GPU a small system's solve is bound by latency, not bytes: cg-small
 * runs 1138_bus in one launch on one multiprocessor in about 8 ms, and a
 * thousand such systems side by side in one launch (krylov/cg_batch.c) take
 * about 45 ms. So when the scheduler takes a small cg job that a batch can
 * run (sched_batch_fits) and more such jobs are waiting behind it, it takes
 * those too, in queue order, up to --batch-max, and one lane runs them all
 * in one launch (sched_batch_run). Nothing waits for a batch to fill: a job
 * alone in the queue runs alone, as before; a batch forms only from what
 * is already waiting, so it costs no latency and gains most under load.
 *
 * Each job keeps its own life: its record (running, then its own final
 * state), its input read and checked on its own (a bad matrix fails that
 * job alone, with its file and line, as a job run alone would), its
 * cancel (a job cancelled before the launch leaves the batch; one
 * cancelled during the launch ends cancelled), its outputs written and
 * synced before its record says succeeded (sched_cg_finish, the end every
 * cg job has). What a batched job does not have: a residual history (the
 * launch keeps none; its record has the final iteration and residual), and
 * progress during the launch (it lasts milliseconds).
 *
 * Which jobs fit: a cg job with no initial guess and one right-hand side,
 * method auto or cg-small, no preconditioner or Jacobi, the default
 * backend, and a matrix small enough that cg-small would run it alone: on
 * a GPU the device's measured figures say so (devfig_method, the same
 * verdict as --method auto); on other devices (--batch on, for tests) a
 * declared size of at most SCHED_BATCH_MAX_ENTRIES. --batch auto (the
 * default) batches on GPUs and accelerators only: a CPU device runs small
 * systems as native loops (kernels/cpu/), faster than one work-group each.
 */
#include "sched_priv.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "../matrices/mm.h"
#include "../solver/dbatch.h"
#include "../solver/devfig.h"
#include "../solver/dist/dvec.h"
#include "../solver/solve.h"
#include "metrics.h"

/* the largest declared size a job may have to join a batch where no
 * figures decide (a CPU device under --batch on) */
#define SCHED_BATCH_MAX_ENTRIES 65536

/* the device the lanes run on (rank 0's first of --device), found once */
static struct {
    pthread_once_t once;
    int ok;
    ocl_device dev;
} batch_dev = {PTHREAD_ONCE_INIT, 0, {0}};
static const char *batch_dev_spec;

static void batch_dev_find(void)
{
    cls_error e;
    batch_dev.ok =
        dsys_pick_devices(MPI_COMM_SELF, batch_dev_spec, 1, 1, &batch_dev.dev, &e) == CLS_OK;
}

int sched_batch_enabled(const scheduler_config *cfg)
{
    if (cfg->batch == SCHED_BATCH_OFF || cfg->lanes <= 1)
        return 0;
    batch_dev_spec = cfg->device;
    pthread_once(&batch_dev.once, batch_dev_find);
    if (!batch_dev.ok)
        return 0;
    return cfg->batch == SCHED_BATCH_ON ||
           (batch_dev.dev.type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR));
}

int sched_batch_same(const job_claim *a, const job_claim *b)
{
    return !strcmp(a->params.precision, b->params.precision) &&
           !strcmp(a->params.precond, b->params.precond);
}

int sched_batch_fits(const scheduler_config *cfg, const job_claim *c)
{
    if (!job_params_is_cg(&c->params) || c->in.has_x0 || !sched_batch_enabled(cfg))
        return 0;
    solve_options so;
    cls_error e;
    solve_options_default(&so);
    if (job_params_solve_options(&c->params, &so, &e) ||
        (so.method != SOLVER_AUTO && so.method != SOLVER_CG_SMALL) ||
        (so.precond != PRECOND_NONE && so.precond != PRECOND_JACOBI) ||
        so.backend != LA_BACKEND_AUTO)
        return 0;
    char path[PATH_MAX + 16];
    mm_header h;
    if (c->in.has_rhs) {
        if (snprintf(path, sizeof path, "%s/rhs.mtx", c->dir) >= (int)sizeof path ||
            mm_read_header(path, &h, &e) || h.cols != 1)
            return 0;
    }
    if (snprintf(path, sizeof path, "%s/matrix.mtx", c->dir) >= (int)sizeof path ||
        mm_read_header(path, &h, &e) || h.rows != h.cols || h.entries <= 0)
        return 0; /* a bad header fails alone, with the reader's message */
    /* the stored entries: a symmetric file declares one triangle */
    const int64_t nnz = h.symmetry != MM_GENERAL ? 2 * h.entries : h.entries;
    if (!(batch_dev.dev.type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)))
        return nnz <= SCHED_BATCH_MAX_ENTRIES;
    char why[256];
    return devfig_method(&batch_dev.dev, so.precision, nnz, why, sizeof why) == 1;
}

/* one job of the batch on its way through */
typedef struct batch_item {
    job_claim *c;
    sched_cg_run r;
    int begun;       /* sched_cg_begin worked: sched_cg_finish ends it */
    dbatch_input in; /* read and checked */
    int have_in;
    int rc; /* before the launch: the reading's class */
    cls_error err;
    double read_s;
    double *x;
    cg_batch_system *sys; /* in the launch, NULL if it failed or left before */
} batch_item;

/* The report a job run alone would have had, from its part of the batch. */
static void batch_report(const batch_item *it, const dbatch_info *info, solver_precond pc, int n,
                         int launched, dsolve_report *rep)
{
    memset(rep, 0, sizeof *rep);
    rep->rows = it->in.A.nrows;
    rep->nnz = it->in.A.nnz;
    rep->duplicates = it->in.duplicates;
    rep->ranks = rep->devices_per_rank = rep->nparts = 1;
    rep->engine = DSOLVE_ENGINE_LOCAL;
    rep->nrhs = 1;
    rep->parse_s = it->read_s;
    rep->setup_s = rep->init_s = info->init_s;
    rep->warm_parts = info->warm;
    rep->method = SOLVER_CG_SMALL;
    rep->method_known = 1;
    snprintf(rep->method_choice, sizeof rep->method_choice,
             "batched: this job and %d other queued job%s solved in one launch, one work-group "
             "each (cg-small's recurrence)",
             n - 1, n == 2 ? "" : "s");
    rep->pc.type = pc;
    dsolve_part_info *p = &rep->parts[0];
    p->row_end = rep->rows;
    p->nnz = rep->nnz;
    p->interior_rows = rep->rows;
    p->device = info->device;
    p->spmv = LA_SPMV_SCALAR; /* one work-group sweeps its rows */
    p->config = info->config;
    if (!it->sys || !launched) /* not in the launch, or the launch failed: no iterate */
        return;
    rep->solve_s = info->solve_s;
    rep->cg.reason = it->sys->res.reason;
    rep->cg.converged = it->sys->res.converged;
    rep->cg.iterations = it->sys->res.iterations;
    rep->cg.rel_residual = it->sys->res.rel_residual;
    rep->true_rel_residual = solve_true_residual(&it->in.A, it->in.b, it->x);
}

void sched_batch_run(const scheduler_config *cfg, job_claim *c, int n, uint64_t read_budget)
{
    job_store *s = cfg->store;
    metrics_batch(n);
    batch_item *it = calloc((size_t)n, sizeof *it);
    cg_batch_system *sys = calloc((size_t)n, sizeof *sys);
    if (!it || !sys) { /* no room for the batch: each job alone */
        free(it);
        free(sys);
        for (int i = 0; i < n; i++)
            sched_run_cg(MPI_COMM_SELF, 0, cfg, &c[i], NULL, read_budget);
        return;
    }
    /* each job's input, read and checked on its own */
    la_precision prec = LA_DOUBLE;
    solver_precond pc = PRECOND_NONE;
    int ns = 0, have_kind = 0;
    for (int i = 0; i < n; i++) {
        batch_item *t = &it[i];
        t->c = &c[i];
        cls_error_clear(&t->err);
        if (sched_cg_begin(cfg, t->c, NULL, read_budget, &t->r))
            continue; /* failed already */
        t->begun = 1;
        job_store_set_phase(s, t->c->id, "parsing");
        mm_read_options ro = {
            .progress = sched_read_progress, .progress_ctx = &t->r.mc, .max_memory = read_budget};
        const double t0 = cls_now();
        t->rc = dbatch_read(t->r.m.a_path, t->r.m.b_path[0] ? t->r.m.b_path : NULL, &ro, &t->in,
                            &t->err);
        t->read_s = cls_now() - t0;
        if (t->rc)
            continue;
        t->have_in = 1;
        if (job_store_cancel_requested(s, t->c->id)) {
            t->r.mc.cancelled = 1;
            continue;
        }
        /* the batch's precision and preconditioner are its first job's;
         * another's runs alone after the batch (the gathering keeps them
         * apart, sched_batch_same: this is a guard) */
        if (!have_kind) {
            prec = t->r.o.solve.precision;
            pc = t->r.o.solve.precond;
            have_kind = 1;
        }
        if (t->r.o.solve.precision != prec || t->r.o.solve.precond != pc)
            continue;
        t->x = calloc((size_t)(t->in.A.nrows > 0 ? t->in.A.nrows : 1), sizeof *t->x);
        if (!t->x) {
            t->rc = cls_fail(&t->err, CLS_EOTHER, "out of memory for x");
            continue;
        }
        double bb = 0.0;
        for (int64_t r = 0; r < t->in.A.nrows; r++)
            bb += t->in.b[r] * t->in.b[r];
        t->sys = &sys[ns++];
        *t->sys = (cg_batch_system){
            .A = &t->in.A,
            .b = t->in.b,
            .tol = solve_effective_tol(t->r.o.solve.tol, t->r.o.solve.atol, sqrt(bb)),
            .maxiter = t->r.o.solve.maxiter,
            .x = t->x};
    }
    /* the launch */
    dbatch_info info;
    cls_error berr;
    cls_error_clear(&berr);
    memset(&info, 0, sizeof info);
    int brc = CLS_OK;
    if (ns > 0) {
        for (int i = 0; i < n; i++)
            if (it[i].sys)
                job_store_set_phase(s, it[i].c->id, "solving");
        brc = dbatch_solve(cfg->device, prec, pc, sys, ns, &info, &berr);
    }
    /* each job's end */
    for (int i = 0; i < n; i++) {
        batch_item *t = &it[i];
        if (!t->begun)
            continue;
        if (t->have_in && !t->sys && !t->rc && !t->r.mc.cancelled) {
            /* left out of the launch (see above): alone, as begun */
            dbatch_input_free(&t->in);
            free(t->x);
            sched_cg_solve(MPI_COMM_SELF, 0, cfg, t->c, &t->r);
            continue;
        }
        dsolve_report rep;
        batch_report(t, &info, pc, ns, brc == CLS_OK, &rep);
        int rc = t->rc;
        if (t->sys) {
            if (brc) { /* the device failed: every job of the launch with it */
                rc = brc;
                t->err = berr;
                free(t->x);
                t->x = NULL;
            } else {
                rc = t->sys->rc;
                if (rc)
                    cls_fail(&t->err, rc, "%s", t->sys->msg);
                job_store_progress(s, t->c->id, t->sys->res.iterations, t->sys->res.rel_residual);
                if (job_store_cancel_requested(s, t->c->id))
                    t->r.mc.cancelled = 1; /* asked during the launch */
            }
        } else if (t->r.mc.cancelled && !rc) {
            rc = CLS_EOTHER;
        }
        dbatch_input_free(&t->in);
        sched_cg_finish(cfg, t->c, &t->r, rc, &t->err, &rep, t->x);
    }
    free(it);
    free(sys);
}
