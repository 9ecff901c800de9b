/*
 * dsolve.c: the collective solve across ranks and devices (see dsolve.h).
 *
 * Phases, each ending in an agreement (every rank learns the first failing
 * rank's exit class and message, so all return the same):
 *   1. input: rank 0 parses and sends each rank its row block (or every
 *      rank parses, or every rank generates its rows); the layout
 *      (partition.h) is computed where the row lengths are known and
 *      broadcast as part boundaries; b and x0 follow the layout
 *   1e. scaling: A and b multiplied by powers of two that bring max |a_ij|
 *      and ||b|| near 1 when they are far from it (scale_phase), so no
 *      square the device forms underflows or overflows
 *   2. halo plans: each part renumbers its columns in place inside the
 *      rank's block (halo_plan_local) and the send lists are exchanged
 *   3. devices: dsys_open (contexts, kernels, matrix upload, staging)
 *   4. vectors: b, x0; the preconditioner (pc_setup: the Jacobi diagonal,
 *      the Chebyshev bounds, the IC(0) factors, the AMG hierarchies)
 *   5. the Krylov method: dcg_solve or pipecg_solve
 *   6. x downloaded; the true residual ||b - Ax|| / ||b|| recomputed in
 *      double on the host (host halo exchange, halo.h; scaled sums of
 *      squares); x gathered once on rank 0 and scaled back where the
 *      caller asks for it, else measured where it is (x_scan: max |x - 1|
 *      for b = A*1, the range of x scaled back); the report (one entry per
 *      part) gathered on rank 0.
 * All communication runs on a duplicate of the caller's communicator with
 * MPI_ERRORS_RETURN, so dsolve's messages never meet the daemon's and an MPI
 * failure is reported instead of aborting.
 */
#include "../common/parallel.h"
#include "../common/trace.h"
#include "dsolve.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/timer.h"
#include "../kernels/la_bcg.h"
#include "../matrices/gen_rows.h"
#include "../matrices/mm.h"
#include "krylov/dcg.h"
#include "krylov/ksp_device.h"
#include "krylov/ksp_stop.h"
#include "dist/dvec.h"
#include "devfig.h"
#include "dsolve_priv.h"
#include "dist/halo.h"
#include "dist/partition.h"

void dsolve_options_default(dsolve_options *o)
{
    memset(o, 0, sizeof *o);
    solve_options_default(&o->solve);
    pc_options_default(&o->pc);
}

const char *dsolve_engine_name(dsolve_engine e)
{
    return e == DSOLVE_ENGINE_LOCAL         ? "local"
           : e == DSOLVE_ENGINE_DISTRIBUTED ? "distributed"
                                            : "auto";
}

int dsolve_engine_parse(const char *name, dsolve_engine *e)
{
    for (int i = DSOLVE_ENGINE_AUTO; i <= DSOLVE_ENGINE_DISTRIBUTED; i++)
        if (!strcmp(name, dsolve_engine_name((dsolve_engine)i))) {
            *e = (dsolve_engine)i;
            return 0;
        }
    return -1;
}

static const char *const read_mode_names[] = {"auto", "rank0", "everywhere", "ranged"};

const char *dsolve_read_mode_name(dsolve_read_mode m)
{
    return m >= DSOLVE_READ_AUTO && m <= DSOLVE_READ_RANGED ? read_mode_names[m] : "auto";
}

int dsolve_read_mode_parse(const char *name, dsolve_read_mode *m)
{
    for (int i = DSOLVE_READ_AUTO; i <= DSOLVE_READ_RANGED; i++)
        if (!strcmp(name, read_mode_names[i])) {
            *m = (dsolve_read_mode)i;
            return 0;
        }
    return -1;
}

void dsolve_report_free(dsolve_report *rep)
{
    if (!rep)
        return;
    cg_result_free(&rep->cg);
    for (int c = 0; rep->cols && c < rep->nrhs; c++)
        cg_result_free(&rep->cols[c]);
    free(rep->cols);
    free(rep->true_rel_cols);
    if (rep->profile) {
        dprof_report_free(rep->profile);
        free(rep->profile);
        rep->profile = NULL;
    }
    rep->cols = NULL;
    rep->true_rel_cols = NULL;
}

/* --profile: this rank's profile closed, every rank's gathered on rank 0
 * (rep->profile); collective */
static void dsolve_profile_gather(MPI_Comm comm, dsys *s, dsolve_report *rep, int nrhs)
{
    int me = 0, size = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    dprof_rank_sum mine;
    dprof_close(s->prof, rep->cg.iterations, &mine);
    s->prof = NULL;
    mine.rank = me;
    dprof_report *pr = NULL;
    dprof_rank_sum *all = NULL;
    int ok = 1;
    if (me == 0) {
        pr = calloc(1, sizeof *pr);
        all = nrhs == 1 ? calloc((size_t)size, sizeof *all) : NULL;
        ok = pr && all;
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, comm); /* every rank gathers, or none */
    /* the same binary on every rank: the struct travels as bytes */
    if (ok && MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0,
                         comm) != MPI_SUCCESS)
        ok = 0;
    if (me != 0)
        return;
    if (pr && ok) {
        pr->nranks = size;
        pr->rank = all;
    } else {
        free(all);
        if (pr)
            snprintf(pr->note, sizeof pr->note, "%s",
                     nrhs > 1 ? "not profiled: --profile times the iteration of one right-hand "
                                "side, this solve has several"
                              : "not profiled: out of memory, or the gather failed");
    }
    rep->profile = pr;
}

/* rep->cg from the columns: converged when all are, the first failing
 * column's reason, the most iterations and the largest residual; column
 * 0's history moves there (the one the daemon's residuals.json shows) */
static void dsolve_summary(dsolve_report *rep)
{
    cg_result *s = &rep->cg;
    memset(s, 0, sizeof *s);
    if (!rep->cols || rep->nrhs < 1)
        return;
    *s = rep->cols[0];
    rep->cols[0].history = NULL;
    rep->cols[0].nhistory = 0;
    for (int c = 1; c < rep->nrhs; c++) {
        const cg_result *r = &rep->cols[c];
        if (!r->converged && s->converged) {
            s->converged = 0;
            s->reason = r->reason;
        }
        if (r->iterations > s->iterations)
            s->iterations = r->iterations;
        if (!(r->rel_residual <= s->rel_residual))
            s->rel_residual = r->rel_residual;
        s->start_s += rep->together ? 0.0 : r->start_s;
        s->confirm_s += r->confirm_s;
    }
}

/* --precond auto's evidence (issue 25, item 5; pc_auto_amg_budget): where
 * the rows rule chose jacobi for one part and one right-hand side, the
 * Jacobi solve is watched (a monitor). At `budget` iterations, about amg's
 * whole measured cost on such a device in Jacobi iterations, its residual
 * is the evidence: at the rate so far, the iterations left are
 * budget ln(rel / tol) / ln(1 / rel), more than amg's cost (budget again)
 * exactly when rel > sqrt(tol), i.e. when Jacobi, having spent what amg
 * would take, has not made half of the tolerance's digits. Then the solve
 * stops there and amg, set up now, continues from the Jacobi x (nothing of
 * it is lost); otherwise Jacobi runs on undisturbed, the rule's own solve.
 * The two phases report as one solve: the iterations and the residual
 * history run on, the monitor (the daemon's progress, cancels) sees one
 * count, and amg's set-up counts in setup_s. */
typedef struct auto_mon {
    cg_monitor_fn fn;
    void *ctx;
    int64_t offset;  /* amg's phase: the Jacobi phase's iterations */
    int64_t budget;  /* the Jacobi phase: the iteration of the evidence (0: none) */
    int64_t maxiter; /* the whole solve's */
    double tol;      /* the recurrence's relative tolerance */
    int fired;       /* the Jacobi phase: stopped for amg */
    int64_t at;      /* the iteration it was stopped at, */
    double rel;      /* and its ||r||/||b|| */
} auto_mon;

/* amg needs room to pay back its set-up: no switch with fewer iterations
 * than this left (beyond the few queued past the stop) */
#define AUTO_AMG_MIN_LEFT 32

static int auto_monitor(void *ctx, int64_t it, double rel)
{
    auto_mon *m = ctx;
    if (m->offset > 0 && it == 0) /* amg's start is where Jacobi ended: reported already */
        return 0;
    if (m->fn && m->fn(m->ctx, it + m->offset, rel))
        return 1; /* the caller's cancel */
    if (m->budget > 0 && it >= m->budget && !m->fired) {
        m->budget = 0; /* asked once */
        if (rel > sqrt(m->tol) && m->maxiter - it > AUTO_AMG_MIN_LEFT) {
            m->fired = 1;
            m->at = it;
            m->rel = rel;
            return 1;
        }
    }
    return 0;
}

/* the Jacobi phase stopped by the evidence (res: its result, x its
 * iterate): amg set up and run from x, the two reported as one solve. If
 * amg cannot be set up (memory, say), Jacobi is set up again and goes on:
 * the solve never fails for the switch. A cancel by the caller while amg
 * is set up is honoured before and after the set-up. */
static int auto_amg_continue(dsys *sys, pc *pc, const pc_options *base, const ksp_method *method,
                             dvec *vb, dvec *vx, cg_options co, const auto_mon *am, cg_result *res,
                             double *setup_dt, char *why, size_t cap, cls_error *err)
{
    const int64_t done = res->iterations, maxiter = co.maxiter;
    cg_result first = *res;
    memset(res, 0, sizeof *res);
    const double t0 = cls_now();
    dpart *p = &sys->parts[0];
    int rc = CLS_OK;
    if (co.monitor && co.monitor(co.monitor_ctx, done, am->rel)) {
        *res = first;
        return ksp_fail_cancelled(res, done, err);
    }
    pc_options po = *base;
    po.type = PRECOND_AMG;
    cls_error ne;
    cls_error_clear(&ne);
    int nrc = CLS_OK;
    po.native_apply = ksp_device_native(&p->la, &p->Ai, co.backend, &nrc, &ne);
    pc_release(pc);
    /* amg's loop keeps r, w, p, s and u (n + ghosts), Jacobi's two fewer */
    cls_error serr;
    cls_error_clear(&serr);
    rc = la_pool_reserve(&p->la, p->halo.nlocal, 4, &serr);
    if (!rc)
        rc = la_pool_reserve(&p->la, p->halo.nlocal + p->halo.nghost, 1, &serr);
    if (!rc)
        rc = pc_setup(sys, &po, pc, &serr);
    *setup_dt = cls_now() - t0;
    const int amg = rc == CLS_OK;
    if (!amg) { /* Jacobi again, from where it stopped */
        pc_release(pc);
        po.type = PRECOND_JACOBI;
        po.native_apply = 0;
        if ((rc = pc_setup(sys, &po, pc, err))) {
            *res = first;
            return rc;
        }
    } else if (co.monitor && co.monitor(co.monitor_ctx, done, am->rel)) {
        *res = first;
        return ksp_fail_cancelled(res, done, err);
    }
    co.precond = po.type;
    co.maxiter = maxiter - done;
    auto_mon m = {.fn = co.monitor, .ctx = co.monitor_ctx, .offset = done};
    if (co.monitor) {
        co.monitor = auto_monitor;
        co.monitor_ctx = &m;
    }
    rc = method->solve(sys, vb, vx, pc, &co, res, err);
    if (amg)
        snprintf(why, cap,
                 "jacobi, then amg: at %lld Jacobi iterations (about amg's measured cost here) "
                 "||r||/||b|| was %.3g > sqrt(tol), so Jacobi's rate needed more than amg's "
                 "cost again; amg (set up in %.3f s) went on from its x",
                 (long long)am->at, am->rel, *setup_dt);
    else
        snprintf(why, cap,
                 "jacobi: the evidence at %lld iterations asked for amg, whose set-up "
                 "failed (%.120s); Jacobi went on",
                 (long long)am->at, serr.msg);
    /* one solve: the histories joined. amg's [0] is the true residual
     * where it started, after the iterations queued past the stop (whose
     * own records were not read: the history may lack up to two) */
    if (first.history && res->history && res->nhistory > 0) {
        double *h = realloc(first.history, (size_t)(first.nhistory + res->nhistory) * sizeof *h);
        if (h) {
            memcpy(h + first.nhistory, res->history, (size_t)res->nhistory * sizeof *h);
            first.history = h;
            first.nhistory += res->nhistory;
            free(res->history);
            res->history = first.history;
            res->nhistory = first.nhistory;
            first.history = NULL;
        }
    }
    res->iterations += done;
    res->start_s += first.start_s;
    res->confirm_s += first.confirm_s;
    cg_result_free(&first);
    /* the messages count the whole solve's iterations */
    if (rc == CLS_ENOTCONV && res->reason == CG_DIVERGED_MAXITER)
        ksp_fail_maxiter(res, res->iterations, res->rel_residual, co.tol, err);
    else if (res->reason == CG_CANCELLED)
        ksp_fail_cancelled(res, res->iterations, err);
    else if (rc && err) {
        char m0[sizeof err->msg];
        snprintf(m0, sizeof m0, "%s", err->msg);
        cls_fail(err, rc, "after %lld Jacobi iterations, with %s: %s", (long long)done,
                 amg ? "amg" : "jacobi", m0);
    }
    return rc;
}

/* --method auto's bcg with two or three columns: systems of at least this
 * many rows (poisson3d 128, 2.1 M rows, on an H200: 0.176 s against cg's
 * 0.165 with two, 0.238 against 0.218 with three; 256, 16.8 M: 1.45
 * against 1.86 and 2.10 against 2.48; a fixed cost per iteration plus one
 * per row puts the two columns' crossing near 3.4 M) */
#define BCG_AUTO_ROWS23 4000000

/* 1 when --method auto takes block CG for nrhs columns of nrows rows (GPU,
 * one part, none or jacobi): 4 to 8 columns at every size measured
 * (poisson3d 64-320 on an H200: 1.01-1.85x cg's columns in lockstep; 4 at
 * 64^3 tied), 2 and 3 on large systems only (an iteration's fixed cost,
 * two host reads and a Cholesky, outweighs the saved bytes below). */
static int dsolve_bcg_pays(int nrhs, int64_t nrows)
{
    return nrhs >= 4 || nrows >= BCG_AUTO_ROWS23;
}

#define AGREE(expr)                                                                                \
    do {                                                                                           \
        rc = dsolve_agree(comm, (expr), err);                                                      \
        if (rc)                                                                                    \
            goto done;                                                                             \
    } while (0)

/* ------------------------------------------------------------- the solve */

static int count_list(const char *spec)
{
    if (!spec || !*spec || spec[0] < '0' || spec[0] > '9')
        return 0;
    int n = 1;
    for (const char *c = spec; *c; c++)
        n += *c == ',';
    return n;
}

typedef struct resid_part {
    double sc[2], sq[2]; /* scaled sums of squares of r and b (solve_ssq_add) */
    int finite;
} resid_part;

typedef struct resid_ctx {
    const csr_matrix *A;
    const double *x, *b;
    resid_part *part;
    int unused;
} resid_ctx;

/* --method auto. A system names no method: it runs cg, or cg-small when it
 * could (one part, one right-hand side, no preconditioner or Jacobi, not
 * forced onto the native CPU loops) and the device it lands on predicts a
 * shorter iteration for it (devfig_method: the device's measured figures).
 * The device is known only inside dsys_open, and the format follows the
 * method (cg-small reads CSR), so the verdict is its on_device hook. */
typedef struct method_pick {
    solver_method method;
    la_precision prec;
    int64_t nnz;
    int candidate; /* 1: the device decides (method_on_device) */
    char why[256];
} method_pick;

static void method_candidate(method_pick *mp, int nparts, int nrhs, solver_precond ptype,
                             la_backend backend, char *why, size_t cap)
{
    const char *keep = nparts > 1 ? "the system is split into parts"
                       : nrhs > 1 ? "several right-hand sides (cg iterates them together)"
                       : ptype != PRECOND_NONE && ptype != PRECOND_JACOBI
                           ? "its preconditioner needs launches of its own"
                       : backend == LA_BACKEND_NATIVE ? "backend native"
                                                      : NULL;
    mp->method = SOLVER_CG;
    mp->candidate = keep == NULL;
    if (keep)
        snprintf(why, cap, "cg: %s (cg-small runs one part, one right-hand side, none or jacobi)",
                 keep);
}

static void method_on_device(void *ctx, const ocl_device *dev, la_spmv_variant *spmv)
{
    method_pick *mp = ctx;
    if (devfig_method(dev, mp->prec, mp->nnz, mp->why, sizeof mp->why)) {
        mp->method = SOLVER_CG_SMALL;
        if (*spmv == LA_SPMV_AUTO)
            *spmv = LA_SPMV_SCALAR;
    }
}

static void resid_rows(void *arg, int range, int64_t i0, int64_t i1)
{
    const resid_ctx *c = arg;
    const csr_matrix *A = c->A;
    const int64_t base = A->rowptr[0];
    resid_part p = {{0.0, 0.0}, {1.0, 1.0}, 1};
    for (int64_t i = i0; i < i1; i++) {
        double ax = 0.0;
        for (int64_t j = A->rowptr[i] - base; j < A->rowptr[i + 1] - base; j++)
            ax += A->val[j] * c->x[A->col[j]];
        double ri = c->b[i] - ax;
        p.finite &= isfinite(ri) != 0;
        solve_ssq_add(&p.sc[0], &p.sq[0], ri);
        solve_ssq_add(&p.sc[1], &p.sq[1], c->b[i]);
    }
    c->part[range] = p;
}

/* (scale, ssq) += (s2, q2): both as scale^2 * ssq */
static void ssq_merge(double *scale, double *ssq, double s2, double q2)
{
    if (s2 <= 0.0)
        return;
    if (*scale < s2) {
        *ssq = q2 + *ssq * (*scale / s2) * (*scale / s2);
        *scale = s2;
    } else {
        *ssq += q2 * (s2 / *scale) * (s2 / *scale);
    }
}

/* true residual in double on the host: x[k] has nlocal + nghost entries */
static int true_residual(MPI_Comm comm, const part_layout *L, const dpart *parts, int nmine,
                         double *const *xs, double *const *bs, double *out, cls_error *err)
{
    halo_plan *plans = calloc((size_t)(nmine ? nmine : 1), sizeof *plans);
    if (!plans)
        return cls_fail(err, CLS_EOTHER, "out of memory for the residual check");
    for (int k = 0; k < nmine; k++)
        plans[k] = parts[k].halo;
    halo_comm hc;
    int rc = halo_comm_init(&hc, comm, L, plans, nmine, sizeof(double), NULL, NULL, err);
    /* scaled sums of squares (solve_ssq_add): ||r|| = sc[0] sqrt(sq[0]),
     * ||b|| = sc[1] sqrt(sq[1]); a residual or b far from 1 neither
     * underflows to 0 nor overflows */
    double sc[2] = {0.0, 0.0}, sq[2] = {1.0, 1.0};
    int finite = 1;
    if (!rc) {
        rc = halo_exchange_host(&hc, xs, err);
        halo_comm_free(&hc);
    }
    for (int k = 0; k < nmine && !rc; k++) {
        const csr_matrix *A = &parts[k].A;
        int t = cls_parallel_ranges(A->nrows, 65536);
        resid_ctx rc_ = {A, xs[k], bs[k], calloc((size_t)t, sizeof(resid_part)), 1};
        if (!rc_.part) {
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the residual check");
            break;
        }
        cls_parallel_for(A->nrows, 65536, resid_rows, &rc_);
        for (int q = 0; q < t; q++) { /* ranges in order: the same sums on any run */
            for (int v = 0; v < 2; v++)
                ssq_merge(&sc[v], &sq[v], rc_.part[q].sc[v], rc_.part[q].sq[v]);
            finite &= rc_.part[q].finite;
        }
        free(rc_.part);
    }
    free(plans);
    /* combine: every rank rescales its sums to the largest scale */
    double g[3] = {sc[0], sc[1], finite ? 0.0 : 1.0};
    if (MPI_Allreduce(MPI_IN_PLACE, g, 3, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS && !rc)
        rc = cls_fail(err, CLS_EOTHER, "MPI_Allreduce(true residual) failed");
    double t[2];
    for (int q = 0; q < 2; q++) {
        double r = g[q] > 0.0 ? sc[q] / g[q] : 0.0;
        t[q] = sc[q] > 0.0 ? sq[q] * r * r : 0.0;
    }
    if (MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS && !rc)
        rc = cls_fail(err, CLS_EOTHER, "MPI_Allreduce(true residual) failed");
    if (g[2] != 0.0)
        *out = NAN;
    else if (g[1] > 0.0)
        *out = (g[0] / g[1]) * sqrt(t[0] / t[1]);
    else
        *out = g[0] * sqrt(t[0]);
    return rc;
}

static int finish_all(dpart *parts, int nmine, cls_error *err)
{
    for (int k = 0; k < nmine; k++) {
        int rc = la_finish(&parts[k].la, err);
        if (rc)
            return rc;
    }
    return CLS_OK;
}

/* rank 0 tells the caller which phase begins (dsolve_options.phase) */
#define DS_PHASE(name)                                                                             \
    do {                                                                                           \
        if (me == 0 && opt->phase)                                                                 \
            opt->phase(opt->phase_ctx, name);                                                      \
    } while (0)

/* The report's entry for each of this rank's parts, read from the parts
 * (their devices' formats and configurations) while they are still open */
static dsolve_part_info *part_infos(const dpart *parts, int nmine, int me, const part_layout *L)
{
    dsolve_part_info *mine = calloc((size_t)(nmine ? nmine : 1), sizeof *mine);
    for (int k = 0; mine && k < nmine; k++) {
        const dpart *p = &parts[k];
        dsolve_part_info *pi = &mine[k];
        pi->rank = me;
        pi->slot = k;
        pi->row_begin = L->begin[p->part];
        pi->row_end = L->begin[p->part + 1];
        pi->nnz = p->A.nnz;
        pi->ghosts = p->halo.nghost;
        pi->interior_rows = p->halo.ninterior;
        pi->neighbours = p->halo.nrecv > p->halo.nsend ? p->halo.nrecv : p->halo.nsend;
        pi->device = p->dev;
        pi->device.platform = NULL;
        pi->device.id = NULL;
        if (p->have_Ai) { /* the fused engine: la's format and configuration */
            pi->config = p->Ai.cfg;
            pi->spmv = p->Ai.variant;
        } else {
            pi->config = p->la.cfg;
            pi->spmv = p->dA.vector_width ? LA_SPMV_VECTOR : LA_SPMV_SCALAR;
            pi->config.vector_width = p->dA.vector_width;
        }
    }
    return mine;
}

/* The devices' release: the vectors, the preconditioner, the parts (back
 * to the warm set), then the caller's release_then. At dsolve's end, or
 * (dsolve_options.release_early) on a thread from the moment x is down,
 * beside the host's true residual, the gather and its frees: on one H200
 * the parts took 9 ms and the CLI's warm devices 92 ms after them, the
 * host's share 50-60 ms. The thread calls no MPI (dsys_close_comm ran
 * first) and touches only the parts' device state, which the host's
 * remaining work does not read (part_infos took the report's share). */
typedef struct ds_release {
    dvec *vb, *vx;
    int nrhs, have_pc, have_sys;
    pc *pc;
    dsys *sys;
    void (*then)(void *ctx);
    void *then_ctx;
} ds_release;

static void *ds_release_run(void *arg)
{
    ds_release *r = arg;
    for (int c = 0; c < r->nrhs && r->vb && r->vx; c++) {
        dvec_release(&r->vb[c]);
        dvec_release(&r->vx[c]);
    }
    if (r->have_pc)
        pc_release(r->pc);
    if (r->have_sys)
        dsys_close(r->sys);
    cls_trace("dsolve: devices released");
    if (r->then)
        r->then(r->then_ctx);
    return NULL;
}

/* Column c's x, already down in xs: its true residual ||b - Ax|| / ||b||
 * in double on the host, and (xfull not NULL on rank 0) gathered into
 * xfull. Host work only (the devices may be going away meanwhile).
 * Collective; the outcome is agreed. */
static int gather_column(MPI_Comm comm, const dpart *parts, int nmine, double **xs, double **bs,
                         const ds_input *in, double *xfull, double *true_rel, cls_error *err)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    const part_layout *L = &in->L;
    const int64_t nblk = in->re - in->rb;
    int want = 0;
    if (me == 0)
        want = xfull != NULL;
    MPI_Bcast(&want, 1, MPI_INT, 0, comm);
    int rc = dsolve_agree(comm, true_residual(comm, L, parts, nmine, xs, bs, true_rel, err), err);
    cls_trace("gather: true residual");
    if (rc || !want)
        return rc;
    if (me == 0) {
        for (int k = 0; k < nmine; k++)
            cls_parallel_memcpy(xfull + L->begin[parts[k].part], xs[k],
                                (size_t)parts[k].halo.nlocal * sizeof *xfull);
        for (int r = 1; r < size && !rc; r++) {
            int64_t a = L->begin[L->first[r]], e = L->begin[L->first[r + 1]];
            rc = dsolve_recv_big(xfull + a, e - a, MPI_DOUBLE, sizeof(double), r, comm, err);
        }
    } else if (nblk > 0) {
        /* the rank's parts are consecutive: one block, as rank 0 expects */
        double *blk = malloc((size_t)nblk * sizeof *blk);
        if (!blk)
            rc = cls_fail(err, CLS_EOTHER, "out of memory gathering x");
        for (int k = 0; k < nmine && blk; k++)
            cls_parallel_memcpy(blk + (L->begin[parts[k].part] - in->rb), xs[k],
                                (size_t)parts[k].halo.nlocal * sizeof *blk);
        if (!rc)
            rc = dsolve_send_big(blk, nblk, MPI_DOUBLE, sizeof(double), 0, comm, err);
        free(blk);
    }
    return dsolve_agree(comm, rc, err);
}

/* A column of x where each rank's rows are, scaled back (ldexp by x_exp,
 * as dsolve_unscale_x): max |x_i - 1| (the error when b = A*1) and the
 * first row whose x, scaled back by a non-zero x_exp, is beyond double's
 * range (-1 if none: what dsolve_unscale_x refuses). On every core, then
 * across the ranks: when x is not asked for, neither needs x gathered on
 * rank 0 (1.3 s at 2.6e8 rows a rank). A maximum and a minimum do not
 * depend on the order: the figures a loop over the gathered x gives.
 * Collective. */
typedef struct ones_ctx {
    const double *x;
    int x_exp;
    int64_t row0; /* the global row of x[0] */
    double *max;  /* per range */
    int64_t *bad; /* per range: the first row out of range, or INT64_MAX */
} ones_ctx;

static void ones_range(void *arg, int range, int64_t a, int64_t e)
{
    const ones_ctx *c = arg;
    double m = 0.0;
    int64_t bad = INT64_MAX;
    for (int64_t i = a; i < e; i++) {
        const double v = c->x_exp ? ldexp(c->x[i], c->x_exp) : c->x[i];
        if (c->x_exp && !isfinite(v) && bad == INT64_MAX) /* dsolve_unscale_x's test */
            bad = c->row0 + i;
        if (fabs(v - 1.0) > m)
            m = fabs(v - 1.0);
    }
    c->max[range] = m;
    c->bad[range] = bad;
}

static int x_scan(MPI_Comm comm, const part_layout *L, const dpart *parts, int nmine,
                  double *const *xs, int x_exp, double *max_err, int64_t *first_bad, cls_error *err)
{
    double m = 0.0;
    int64_t bad = INT64_MAX;
    int rc = CLS_OK;
    for (int k = 0; k < nmine && !rc; k++) {
        const int64_t n = parts[k].halo.nlocal;
        const int t = n ? cls_parallel_ranges(n, 65536) : 0;
        double *pm = calloc((size_t)t + 1, sizeof *pm);
        int64_t *pb = calloc((size_t)t + 1, sizeof *pb);
        if (!pm || !pb)
            rc = cls_fail(err, CLS_EOTHER, "out of memory measuring x against 1");
        ones_ctx c = {xs[k], x_exp, L->begin[parts[k].part], pm, pb};
        if (!rc && n)
            cls_parallel_for(n, 65536, ones_range, &c);
        for (int q = 0; !rc && q < t; q++) {
            m = pm[q] > m ? pm[q] : m;
            bad = pb[q] < bad ? pb[q] : bad;
        }
        free(pm);
        free(pb);
    }
    /* both, on every rank, whatever the first gave: the same collectives everywhere */
    const int r1 = MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
    const int r2 = MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT64_T, MPI_MIN, comm);
    if ((r1 != MPI_SUCCESS || r2 != MPI_SUCCESS) && !rc)
        rc = cls_fail(err, CLS_EOTHER, "MPI_Allreduce(x against 1) failed");
    *max_err = m;
    *first_bad = bad == INT64_MAX ? -1 : bad;
    return rc;
}

int dsolve_file(MPI_Comm comm, const char *a_path, const char *b_path, const char *x0_path,
                const dsolve_options *opt, dsolve_report *rep, double **x, cls_error *err)
{
    return dsolve_file_rhs(comm, a_path, b_path ? &b_path : NULL, b_path ? 1 : 0, x0_path, opt, rep,
                           x, err);
}

int dsolve_file_rhs(MPI_Comm comm_in, const char *a_path, const char *const *b_paths, int nb_paths,
                    const char *x0_path, const dsolve_options *opt, dsolve_report *rep, double **x,
                    cls_error *err)
{
    int me, size, rc = CLS_OK;
    MPI_Comm comm = MPI_COMM_NULL;
    ds_input in;
    dsys sys;
    dpart *parts = NULL;
    dvec *vb = NULL, *vx = NULL; /* per right-hand side */
    pc pc;
    double **xs = NULL, **bs = NULL, *xfull = NULL; /* [c * nmine + part] */
    int have_sys = 0, have_pc = 0, nmine = 0, nrhs = 0, x_exp[DSOLVE_MAX_RHS];
    double t0 = cls_now(), t1 = t0, t2 = t0, tg = t0;
    dsolve_part_info *mine = NULL; /* the report's parts, taken before their release */
    ds_release rel;
    pthread_t rel_tid;
    int rel_started = 0;
    cls_trace("dsolve: start");

    memset(&in, 0, sizeof in);
    memset(&sys, 0, sizeof sys);
    memset(&pc, 0, sizeof pc);
    memset(rep, 0, sizeof *rep);
    rep->true_rel_residual = NAN;
    rep->max_err_ones = NAN;
    if (x)
        *x = NULL;
    if (MPI_Comm_dup(comm_in, &comm) != MPI_SUCCESS) {
        if (opt->release_then) /* once on every path, as promised */
            opt->release_then(opt->release_ctx);
        return cls_fail(err, CLS_EOTHER, "MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int G = opt->devices_per_rank > 0 ? opt->devices_per_rank : count_list(opt->solve.device);
    if (G < 1)
        G = 1;
    rep->ranks = size;
    rep->devices_per_rank = G;

    /* 1. input and layout, then the scaling; the device starts meanwhile */
    DS_PHASE("parsing");
    /* a file's size (its rank's share under mpirun) sizes the prewarm's
     * staging for the matrix's upload; a generator or a pipe has none */
    struct stat ast;
    const int64_t abytes = opt->prewarm && a_path && stat(a_path, &ast) == 0 && S_ISREG(ast.st_mode)
                               ? (int64_t)ast.st_size / size
                               : 0;
    if (opt->prewarm && size == 1 && G == 1)
        dsys_prewarm_start(opt->solve.device, opt->solve.precision, abytes);
    else if (opt->prewarm && G == 1) {
        /* every rank starts the device its part will use; a system that
         * turns out to be one part (or a rank left without one) leaves
         * that state unused in the warm set: a device start, no error */
        int lr = 0;
        cls_error pe;
        if (dsys_node_rank(comm, &lr, &pe) == CLS_OK)
            dsys_prewarm_start_part(opt->solve.device, opt->solve.precision, lr, abytes);
    }
    rc = dsolve_input(comm, a_path, b_paths, nb_paths, x0_path, opt, G, &in, err);
    if (rc) /* the prewarm is joined just before the devices open (3.) */
        goto done;
    if ((rc = dsolve_agree(comm, dsolve_scale(comm, &in, x_exp, err), err)))
        goto done;
    cls_trace("dsolve: scaled");
    nrhs = in.nrhs;
    rep->nrhs = nrhs;
    rep->cols = calloc((size_t)nrhs, sizeof *rep->cols);
    rep->true_rel_cols = malloc((size_t)nrhs * sizeof *rep->true_rel_cols);
    if ((rc = dsolve_agree(comm,
                           rep->cols && rep->true_rel_cols
                               ? CLS_OK
                               : cls_fail(err, CLS_EOTHER, "out of memory for the report"),
                           err)))
        goto done;
    for (int c = 0; c < nrhs; c++)
        rep->true_rel_cols[c] = NAN;
    const part_layout *L = &in.L;
    rep->rows = in.nrows;
    rep->nnz = in.nnz;
    rep->duplicates = in.duplicates;
    rep->preparsed = in.preparsed;
    rep->nparts = L->nparts;
    if (me == 0 && opt->verbose)
        part_print(L, stderr);
    t1 = cls_now();
    rep->parse_s = t1 - t0;

    /* one engine for every layout (dcg.c): --engine is accepted and ignored */
    rep->engine = DSOLVE_ENGINE_AUTO;
    /* the native CPU loops run one part (kernels/cpu/la_cgn.h): a split
     * system asked to run them is refused before any set-up (every rank
     * sees the same layout, so all refuse together) */
    if (opt->solve.backend == LA_BACKEND_NATIVE && L->nparts > 1) {
        rc = cls_fail(err, CLS_EINPUT,
                      "backend native runs a system in one part; this one is split into %d "
                      "(run one rank with one device, or backend auto)",
                      L->nparts);
        goto done;
    }
    if (opt->solve.backend == LA_BACKEND_NATIVE && opt->solve.method == SOLVER_PIPECG) {
        rc = cls_fail(err, CLS_EINPUT,
                      "backend native runs cg and cg-single, not pipecg (use backend auto)");
        goto done;
    }

    /* 2. halo plans: parts view the rank's block, renumbered in place */
    DS_PHASE("setting_up");
    double tp = cls_now();
    cls_trace("dsolve: input read");
    nmine = L->first[me + 1] - L->first[me];
    parts = calloc((size_t)(nmine ? nmine : 1), sizeof *parts);
    rc = parts ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory for the parts");
    for (int k = 0; k < nmine && !rc; k++) {
        int pi = L->first[me] + k;
        int64_t off = L->begin[pi] - in.rb, n = L->begin[pi + 1] - L->begin[pi];
        csr_matrix *A = &parts[k].A;
        A->rowptr = in.blk.rowptr + off;
        A->col = in.blk.col + in.blk.rowptr[off];
        A->val = in.blk.val + in.blk.rowptr[off];
        A->nrows = n;
        A->ncols = in.nrows;
        A->nnz = in.blk.rowptr[off + n] - in.blk.rowptr[off];
        parts[k].part = pi;
        parts[k].slot = k;
        rc = halo_plan_local(&parts[k].halo, A, L, pi, err);
    }
    if (!rc && nmine == 1 && L->nparts == 1) { /* the whole matrix's D^-1, as A's rows */
        parts[0].dinv = in.dinv;
        in.dinv = NULL;
    }
    AGREE(rc);
    {
        halo_plan *plans = calloc((size_t)(nmine ? nmine : 1), sizeof *plans);
        rc = plans ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory for the halo plans");
        AGREE(rc);
        for (int k = 0; k < nmine; k++)
            plans[k] = parts[k].halo;
        rc = halo_plan_exchange(comm, L, plans, nmine, err);
        for (int k = 0; k < nmine; k++)
            parts[k].halo = plans[k]; /* the send lists were filled in the copies */
        free(plans);
        AGREE(rc);
    }

    /* 3. devices, and the method of --method auto */
    rep->partition_s = cls_now() - tp;
    cls_trace("dsolve: halo plans");
    const double to = cls_now();
    solver_precond ptype = pc_resolve(opt->solve.precond, in.nrows, in.nnz, L->nparts);
    method_pick mp = {.method = opt->solve.method, .prec = opt->solve.precision, .nnz = in.nnz};
    if (mp.method == SOLVER_AUTO)
        method_candidate(&mp, L->nparts, nrhs, ptype, opt->solve.backend, rep->method_choice,
                         sizeof rep->method_choice);
    /* cg-small reads the matrix in CSR (la_cgs.h): the automatic format is CSR for it */
    const la_spmv_variant spmv = mp.method == SOLVER_CG_SMALL && opt->solve.spmv == LA_SPMV_AUTO
                                     ? LA_SPMV_SCALAR
                                     : opt->solve.spmv;
    /* the device's start (dwarm.c) ran beside the parse, the scaling and
     * the halo plans, none of which needs it; what it still takes counts
     * as init (a driver's start can outlast a parse: 0.5 s on a 2-GPU host) */
    dsys_prewarm_join();
    cls_trace("dsolve: prewarm joined");
    rc = dsys_open(&sys, comm, L, parts, nmine, opt->solve.device, G, opt->solve.precision, spmv, 1,
                   mp.candidate ? method_on_device : NULL, &mp, err);
    const double open_s = cls_now() - to;
    cls_trace("dsolve: devices open");
    have_sys = 1;
    AGREE(rc);
    if (mp.candidate) { /* the rank that holds the one part decided: every rank runs it */
        int owner = 0, m = (int)mp.method;
        while (owner < size - 1 && L->first[owner + 1] == 0)
            owner++;
        if (MPI_Bcast(&m, 1, MPI_INT, owner, comm) != MPI_SUCCESS ||
            MPI_Bcast(rep->method_choice, (int)sizeof rep->method_choice, MPI_CHAR, owner, comm) !=
                MPI_SUCCESS)
            rc = cls_fail(err, CLS_EOTHER, "MPI_Bcast(method) failed");
        mp.method = (solver_method)m;
        if (me == owner)
            snprintf(rep->method_choice, sizeof rep->method_choice, "%s", mp.why);
    }
    AGREE(rc);
    /* --precond auto once the device is known (one rank, one part: nothing
     * to agree on); a method chosen for jacobi (cg-small) keeps it */
    if (opt->solve.precond == PRECOND_AUTO && size == 1 && nmine == 1 &&
        mp.method != SOLVER_CG_SMALL) {
        const ocl_device *dv = &parts[0].la.ocl->dev;
        ptype = pc_resolve_device(
            PRECOND_AUTO, in.nrows, in.nnz, L->nparts, !(dv->type & CL_DEVICE_TYPE_CPU),
            opt->solve.precision == LA_DOUBLE, rep->precond_choice, sizeof rep->precond_choice);
    }
    /* --method auto with the columns dsolve_bcg_pays takes, on one part,
     * none or jacobi: block CG (bcg.c), whose shared search space took up
     * to 46% off cg's columns in lockstep on a GPU (poisson3d 64-320, H200;
     * docs/preconditioners.md has the table). On a CPU device only where
     * its native passes run (double, CSR, no --backend opencl:
     * kernels/cpu/cpu_bcg.c; PoCL ran its kernels 5-7x slower) and from 4
     * columns (2-core machine,
     * poisson3d 64: 0.74-0.88x the time of the columns in turn on the
     * native loops with 8, 0.84x with 4; a tie with 2, and with 4 at 32).
     * With a stronger M its iterations barely drop (docs/preconditioners.md). */
    const int bcg_cpu = nmine == 1 && (parts[0].la.ocl->dev.type & CL_DEVICE_TYPE_CPU) != 0;
    if (opt->solve.method == SOLVER_AUTO && nrhs >= 2 && nrhs <= LA_BCG_MAXK &&
        (bcg_cpu ? nrhs >= 4 : dsolve_bcg_pays(nrhs, in.nrows)) && size == 1 && nmine == 1 &&
        L->nparts == 1 && parts[0].have_Ai && la_bcg_supports(&parts[0].Ai) &&
        (!bcg_cpu || (opt->solve.backend != LA_BACKEND_OPENCL &&
                      la_bcg_native_usable(&parts[0].la, &parts[0].Ai))) &&
        (ptype == PRECOND_NONE || ptype == PRECOND_JACOBI) &&
        opt->rhs_mode != DSOLVE_RHS_SEQUENTIAL) {
        mp.method = SOLVER_BCG;
        snprintf(rep->method_choice, sizeof rep->method_choice,
                 "bcg: %d right-hand sides on one %s part with %s: one search space for all "
                 "(fewer iterations each than cg's columns together)",
                 nrhs, bcg_cpu ? "CPU (native loops)" : "GPU", pc_name(ptype));
    }
    const solver_method method_id = mp.method;
    /* the input check's D^-1 waits for a preconditioner that reads it; the
     * one resolved (auto's choice above) may not: 8 bytes a row back now */
    if (nmine == 1 && parts[0].dinv && !pc_may_use_diag(ptype)) {
        free(parts[0].dinv);
        parts[0].dinv = NULL;
    }
    rep->method = method_id;
    rep->method_known = 1;

    /* 4. vectors: host arrays per column and part (x with room for its halo) */
    const int nm = nmine ? nmine : 1;
    xs = calloc((size_t)(nrhs * nm), sizeof *xs);
    bs = calloc((size_t)(nrhs * nm), sizeof *bs);
    vb = calloc((size_t)nrhs, sizeof *vb);
    vx = calloc((size_t)nrhs, sizeof *vx);
    int64_t nblk = in.re - in.rb;
    rc = xs && bs && vb && vx ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory for the vectors");
    for (int c = 0; c < nrhs && !rc; c++)
        for (int k = 0; k < nmine && !rc; k++) {
            const halo_plan *h = &parts[k].halo;
            int64_t off = L->begin[parts[k].part] - in.rb;
            double *xk = malloc((size_t)(h->nlocal + h->nghost) * sizeof *xk);
            if (!xk) {
                rc = cls_fail(err, CLS_EOTHER, "out of memory for the vectors");
                break;
            }
            xs[c * nm + k] = xk;
            bs[c * nm + k] = in.b + c * nblk + off;
            /* x0 = 0 is not copied: the device's x starts zeroed (dvec_create
             * fills a ghosted vector) and xk is x's download target */
            if (in.x0) /* on every core: 64 MB at 8 M rows took 34 ms on one */
                cls_parallel_memcpy(xk, in.x0 + c * nblk + off, (size_t)h->nlocal * sizeof *xk);
        }
    AGREE(rc);
    cls_trace("dsolve: host vectors");
    const int general = ptype != PRECOND_NONE && ptype != PRECOND_JACOBI;
    {
        for (int c = 0; c < nrhs && !rc; c++) {
            if (!rc)
                rc = dvec_create(&sys, 0, &vb[c], err);
            if (!rc)
                rc = dvec_create(&sys, 1, &vx[c], err);
            if (!rc)
                rc = dvec_upload(&sys, &vb[c], bs + c * nm, err);
            if (!rc && in.x0)
                rc = dvec_upload(&sys, &vx[c], xs + c * nm, err);
        }
        cls_trace("dsolve: vectors up");
        /* the method's workspace, allocated and touched now, not in the
         * solve (la_pool_reserve): CG r, q (n) and p (n + ghosts), with a
         * general preconditioner r, w, p, s (n) and u (n + ghosts);
         * pipelined CG its nine (six without a preconditioner) vectors */
        for (int k = 0; k < nmine && !rc; k++) {
            la_ctx *la = &parts[k].la;
            int64_t n = parts[k].halo.nlocal, ng = n + parts[k].halo.nghost;
            const int pre = ptype != PRECOND_NONE;
            if (method_id != SOLVER_PIPECG) {
                if (!(rc = la_pool_reserve(la, n, general ? 4 : 2, err)))
                    rc = la_pool_reserve(la, ng, 1, err);
            } else {
                if (!(rc = la_pool_reserve(la, n, pre ? 3 : 2, err)))
                    rc = la_pool_reserve(la, ng, pre ? 6 : 4, err);
            }
        }
        if (!rc)
            rc = finish_all(parts, nmine, err);
    }
    AGREE(rc);
    /* the preconditioner (collective: pc_setup agrees on its outcome) */
    {
        pc_options po = opt->pc;
        po.type = ptype;
        if (general && nrhs == 1 && size == 1 && nmine == 1 && L->nparts == 1 && parts[0].have_Ai &&
            (method_id == SOLVER_CG || method_id == SOLVER_CG_SINGLE)) {
            /* one column of cg on the native CPU loops applies M on the
             * host: the kind may leave M's device copy to a device apply.
             * One rank only: a set-up's collective steps (Chebyshev's
             * Lanczos) must run the same way on every rank */
            cls_error ne;
            cls_error_clear(&ne);
            int nrc = CLS_OK;
            po.native_apply =
                ksp_device_native(&parts[0].la, &parts[0].Ai, opt->solve.backend, &nrc, &ne);
        }
        rc = pc_setup(&sys, &po, &pc, err);
        have_pc = 1;
        rep->pc = pc.info;
    }
    AGREE(rc);
    t2 = cls_now();
    cls_trace("dsolve: workspace reserved");
    rep->init_s = open_s - sys.upload_s;                        /* discovery, contexts, programs */
    rep->upload_s = (t2 - t1) - rep->partition_s - rep->init_s; /* matrix, vectors, workspace */
    rep->setup_s = rep->partition_s + rep->init_s + rep->upload_s;
    rep->warm_parts = sys.warm_parts;
    snprintf(rep->device_choice, sizeof rep->device_choice, "%s", sys.device_choice);

    /* 5. the method */
    DS_PHASE("solving");
    cg_options co = {
        .tol = solve_effective_tol(opt->solve.tol, opt->solve.atol, in.bnorm[0]),
        .maxiter = opt->solve.maxiter > 0 ? opt->solve.maxiter
                                          : (in.nrows * 10 > 1000 ? in.nrows * 10 : 1000),
        .precond = ptype,
        .backend = opt->solve.backend,
        .monitor = me == 0 ? opt->solve.monitor : NULL,
        .monitor_ctx = opt->solve.monitor_ctx,
    };
    double col_tol[DSOLVE_MAX_RHS]; /* an absolute tolerance is per column (its own ||b||) */
    for (int c = 0; c < nrhs; c++)
        col_tol[c] = solve_effective_tol(opt->solve.tol, opt->solve.atol, in.bnorm[c]);
    co.tols = nrhs > 1 ? col_tol : NULL;
    const ksp_method *method = ksp_method_get(method_id); /* methods.def's row */
    /* --rhs-mode auto: together, except where one column runs on the
     * native CPU loops (one part on a CPU device): there the columns go in
     * turn, natively (poisson3d 64, 8 columns on the 2-core PoCL machine:
     * jacobi 1.9 s in turn against 4.5 s together on the kernels,
     * chebyshev 1.9 / 3.1, ic0 2.5 / 3.9), unless the preconditioner
     * applies the columns at once (amg: 0.97 s together, 1.06 in turn) */
    int native_cols = 0; /* bcg's columns share one space: together is the method */
    double auto_setup_s = 0.0;
    if (opt->rhs_mode == DSOLVE_RHS_AUTO && nrhs > 1 && size == 1 && nmine == 1 && L->nparts == 1 &&
        parts[0].have_Ai && method_id != SOLVER_BCG) {
        cls_error ne;
        cls_error_clear(&ne);
        int nrc = CLS_OK;
        native_cols =
            ksp_device_native(&parts[0].la, &parts[0].Ai, opt->solve.backend, &nrc, &ne) &&
            (!general || (pc_has_host(&pc) && !pc_has_block(&pc)));
    }
    rep->together =
        nrhs > 1 && method->solve_block && opt->rhs_mode != DSOLVE_RHS_SEQUENTIAL && !native_cols;
    if (opt->profile && nrhs == 1) { /* --profile: the loop's steps timed (dprof.h) */
        la_ctx *las[DPROF_MAX_PARTS];
        int np = nmine < DPROF_MAX_PARTS ? nmine : DPROF_MAX_PARTS;
        for (int k = 0; k < np; k++)
            las[k] = &parts[k].la;
        sys.prof = dprof_open(las, np);
    }
    if (rep->together) { /* the columns in lockstep, the matrix read once (dbcg.c) */
        rc = method->solve_block(&sys, vb, vx, nrhs, &pc, &co, rep->cols, err);
    } else { /* one after the other on the same set-up */
        /* auto's evidence: jacobi within amg's cost, else amg from its x */
        const int64_t budget =
            opt->solve.precond == PRECOND_AUTO && ptype == PRECOND_JACOBI && nrhs == 1 &&
                    size == 1 && nmine == 1 && L->nparts == 1 && parts[0].have_Ai &&
                    (method_id == SOLVER_CG || method_id == SOLVER_CG_SINGLE) && !opt->profile &&
                    !(getenv("CLSOLVE_AUTO_SWITCH") && !strcmp(getenv("CLSOLVE_AUTO_SWITCH"), "0"))
                ? pc_auto_amg_budget(!(parts[0].la.ocl->dev.type & CL_DEVICE_TYPE_CPU))
                : 0;
        auto_mon am = {
            .fn = co.monitor, .ctx = co.monitor_ctx, .budget = budget, .maxiter = co.maxiter};
        cg_options cj = co;
        if (budget && budget < co.maxiter) {
            cj.monitor = auto_monitor;
            cj.monitor_ctx = &am;
        }
        for (int c = 0; c < nrhs && !sys.failed; c++) {
            cls_error cerr;
            cls_error_clear(&cerr);
            co.tol = cj.tol = am.tol = col_tol[c];
            int crc = method->solve(&sys, &vb[c], &vx[c], &pc, &cj, &rep->cols[c], &cerr);
            cls_error ferr;
            cls_error_clear(&ferr);
            if (am.fired && crc == CLS_EOTHER && rep->cols[c].reason == CG_CANCELLED &&
                sys.failed && sys.ferr.code == CLS_EOTHER && finish_all(parts, nmine, &ferr) == 0) {
                /* our own stop (a cancel marks the system failed, so that
                 * a cancelled part is not kept warm), and the queue drains
                 * without an error: nothing went wrong */
                double dt = 0.0;
                sys.failed = 0;
                cls_error_clear(&sys.ferr);
                cls_error_clear(&cerr);
                crc = auto_amg_continue(&sys, &pc, &opt->pc, method, &vb[c], &vx[c], co, &am,
                                        &rep->cols[c], &dt, rep->precond_choice,
                                        sizeof rep->precond_choice, &cerr);
                rep->pc = pc.info;
                auto_setup_s = dt;
            }
            if (crc && (!rc || crc == CLS_EOTHER)) { /* the first failure, a device's first */
                rc = crc;
                if (nrhs > 1)
                    cls_fail(err, crc, "right-hand side %d: %s", c + 1, cerr.msg);
                else if (err)
                    *err = cerr;
            }
            if (crc == CLS_EOTHER) /* a device failure or a cancel: stop */
                break;
        }
    }
    dsolve_summary(rep);
    {
        cls_error ferr;
        cls_error_clear(&ferr);
        if (!sys.failed && finish_all(parts, nmine, &ferr))
            dsys_fail(&sys, &ferr);
    }
    rep->solve_s = cls_now() - t2 - auto_setup_s;
    rep->setup_s += auto_setup_s; /* amg's, where auto's evidence switched to it */
    if (opt->profile) /* after solve_s: the gather is not the solve's time */
        dsolve_profile_gather(comm, &sys, rep, nrhs);
    /* a device failure anywhere outranks the method's own verdict */
    {
        cls_error ferr = sys.ferr;
        int frc = dsolve_agree(
            comm, sys.failed ? (sys.ferr.code ? sys.ferr.code : CLS_EOTHER) : CLS_OK, &ferr);
        if (frc) {
            if (err)
                *err = ferr;
            rc = frc;
            goto report;
        }
    }

    /* 6. x, the true residual, the gather */
    DS_PHASE("gathering");
    tg = cls_now();
    cls_trace("dsolve: solved");
    int want_x = x != NULL; /* collective: every rank follows rank 0's wish for x */
    MPI_Bcast(&want_x, 1, MPI_INT, 0, comm);
    if (rc == CLS_OK || rc == CLS_ENOTCONV || rep->cg.reason == CG_DIVERGED_INDEFINITE ||
        nrhs > 1) {
        cls_error derr;
        cls_error_clear(&derr);
        int drc = CLS_OK;
        if (want_x && me == 0) {
            xfull = malloc((size_t)(in.nrows * nrhs > 0 ? in.nrows * nrhs : 1) * sizeof *xfull);
            drc = xfull ? CLS_OK : cls_fail(&derr, CLS_EOTHER, "out of memory for x");
        }
        drc = dsolve_agree(comm, drc, &derr);
        for (int c = 0; c < nrhs && !drc; c++)
            drc = dsolve_agree(comm, dvec_download(&sys, &vx[c], xs + c * nm, &derr), &derr);
        cls_trace("gather: x down");
        /* the devices are done with: their release goes beside what follows */
        if (!drc && opt->release_early && size == 1) {
            mine = part_infos(parts, nmine, me, L);
            dsys_close_comm(&sys);
            rel = (ds_release){
                vb, vx, nrhs, have_pc, have_sys, &pc, &sys, opt->release_then, opt->release_ctx};
            rel_started = mine && pthread_create(&rel_tid, NULL, ds_release_run, &rel) == 0;
        }
        for (int c = 0; c < nrhs && !drc; c++)
            drc = gather_column(comm, parts, nmine, xs + c * nm, bs + c * nm, &in,
                                xfull ? xfull + c * in.nrows : NULL, &rep->true_rel_cols[c], &derr);
        /* b = A*1: the error against 1; x not asked for: its range, which
         * scaling x back on rank 0 checks otherwise (below) */
        /* nb_paths and x_exp are alike on every rank (a collective call's
         * arguments; x_exp from all-reduced scales): the same scans everywhere */
        const int ones = nb_paths == 0 && nrhs == 1;
        for (int c = 0; c < nrhs && !drc && (ones || !want_x); c++) {
            if (!ones && !x_exp[c]) /* unscaled: nothing to refuse */
                continue;
            double m = NAN;
            int64_t bad = -1;
            drc = dsolve_agree(
                comm, x_scan(comm, L, parts, nmine, xs + c * nm, x_exp[c], &m, &bad, &derr), &derr);
            if (!drc && ones)
                rep->max_err_ones = bad >= 0 ? NAN : m;
            if (!drc && bad >= 0 && !want_x) {
                /* as scaling a gathered x back refuses it (below): the first
                 * column out of range decides */
                rc = dsolve_unscale_fail(bad, err);
                rep->cg.converged = rep->cols[c].converged = 0;
                rep->cg.reason = rep->cols[c].reason = CG_DIVERGED_NANORINF;
                break;
            }
        }
        if (drc) {
            for (int c = 0; c < nrhs; c++)
                rep->true_rel_cols[c] = NAN;
            if (rc == CLS_OK)
                rc = cls_fail(err, CLS_EOTHER, "reading the solution back failed: %s", derr.msg);
        } else if (me == 0 && x && xfull) {
            *x = xfull;
            xfull = NULL;
        }
        rep->true_rel_residual = rep->true_rel_cols[0];
        for (int c = 1; c < nrhs; c++) /* the worst column's */
            if (!(rep->true_rel_cols[c] <= rep->true_rel_residual))
                rep->true_rel_residual = rep->true_rel_cols[c];
    }

report:
    cls_trace("dsolve: gathered"); /* gather_s is taken after the release, at the end */
    /* the layout, one entry per part, on rank 0 */
    {
        if (!mine) /* not taken before an early release */
            mine = part_infos(parts, nmine, me, L);
        int *counts = me == 0 ? calloc((size_t)size, sizeof *counts) : NULL;
        int *displs = me == 0 ? calloc((size_t)size, sizeof *displs) : NULL;
        int ok = mine && (me != 0 || (counts && displs));
        if (me == 0 && ok)
            for (int r = 0; r < size; r++) {
                counts[r] = (L->first[r + 1] - L->first[r]) * (int)sizeof *mine;
                displs[r] = L->first[r] * (int)sizeof *mine;
            }
        /* every rank reaches this gather with a layout, so it is collective */
        int gm = MPI_Gatherv(mine, ok ? nmine * (int)sizeof *mine : 0, MPI_BYTE, rep->parts, counts,
                             displs, MPI_BYTE, 0, comm);
        if (gm != MPI_SUCCESS && rc == CLS_OK)
            rc = cls_fail(err, CLS_EOTHER, "MPI_Gatherv(report) failed");
        free(mine);
        mine = NULL;
        free(counts);
        free(displs);
    }

    /* x of the scaled system back to the caller's (rank 0), column by column */
    for (int c = 0; me == 0 && x && *x && c < nrhs; c++) {
        int urc = dsolve_unscale_x(*x + c * in.nrows, in.nrows, x_exp[c], err);
        if (urc) {
            free(*x);
            *x = NULL;
            rc = urc;
            rep->cg.converged = rep->cols[c].converged = 0;
            rep->cg.reason = rep->cols[c].reason = CG_DIVERGED_NANORINF;
        }
    }

done:
    dsys_prewarm_join(); /* an error before the devices opened */
    free(mine);
    /* the host memory the devices' release does not touch (x, b, x0, the
     * matrix; the parts and the layout stay), beside it when it runs early */
    for (int k = 0; xs && k < nrhs * (nmine ? nmine : 1); k++)
        free(xs[k]);
    free(xs);
    free(bs);
    free(xfull);
    csr_free(&in.blk);
    free(in.b);
    in.b = NULL;
    free(in.x0);
    in.x0 = NULL;
    if (rel_started) {
        pthread_join(rel_tid, NULL);
    } else {
        rel = (ds_release){
            vb, vx, nrhs, have_pc, have_sys, &pc, &sys, opt->release_then, opt->release_ctx};
        ds_release_run(&rel);
    }
    free(vb);
    free(vx);
    for (int k = 0; parts && k < nmine; k++) {
        halo_plan_free(&parts[k].halo);
        free(parts[k].dinv);
    }
    free(parts);
    dsolve_input_free(&in);
    cls_trace("dsolve: host memory released");
    if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
    /* the release of device and host memory ends the last phase: a few ms,
     * tens on a loaded machine, that would otherwise fall between the
     * phases and total_s */
    if (tg > t0)
        rep->gather_s = cls_now() - tg;
    return rc;
}
