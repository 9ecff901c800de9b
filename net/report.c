/*
 * report.c: the solve report as JSON (see report.h).
 *
 * One function per object, so the command line's --json and the job
 * record cannot drift apart again: they had grown two hand-built copies
 * whose keys differed (the job lacked the per-column relative residual,
 * the engine and the phase split of the solve; the command line lacked the
 * preconditioner's set-up time). The key set is the union of the two.
 * A residual that is not finite (a breakdown) is null: JSON has no NaN.
 */
#include "report.h"

#include <math.h>
#include <stdlib.h>

#include "../common/sysres.h"

#include "../solver/names.h"

static json_t *report_real(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* The preconditioner as run: auto resolved to what it chose, or, when none
 * ran, the one asked for (so "auto" that chose none reads "auto"). */
static const char *report_precond(const dsolve_report *rep, const dsolve_options *opt)
{
    return pc_name(rep->pc.type != PRECOND_NONE || opt->solve.precond == PRECOND_NONE
                       ? rep->pc.type
                       : opt->solve.precond);
}

static json_t *report_columns(const dsolve_report *rep)
{
    json_t *cols = json_array();
    for (int c = 0; c < rep->nrhs; c++) {
        const cg_result *r = &rep->cols[c];
        json_array_append_new(
            cols, json_pack("{s:b, s:s, s:I, s:o, s:o}", "converged", r->converged, "reason",
                            cg_reason_name(r->reason), "iterations", (json_int_t)r->iterations,
                            "relative_residual", report_real(r->rel_residual),
                            "true_relative_residual", report_real(rep->true_rel_cols[c])));
    }
    return cols;
}

json_t *report_json(const dsolve_report *rep, const dsolve_options *opt, int rc)
{
    json_t *o = json_object();
    json_object_set_new(o, "converged", json_boolean(rc == CLS_OK));
    json_object_set_new(o, "exit_code", json_integer(rc));
    /* the solve ran (a failed read has no residuals; a batched job no
     * history, but its reason) */
    if (rep->cg.nhistory > 0 || rep->cg.reason != 0) {
        json_object_set_new(o, "reason", json_string(cg_reason_name(rep->cg.reason)));
        json_object_set_new(o, "iterations", json_integer(rep->cg.iterations));
        json_object_set_new(o, "relative_residual", report_real(rep->cg.rel_residual));
        json_object_set_new(o, "true_relative_residual", report_real(rep->true_rel_residual));
    }
    if (rep->rows > 0) { /* a matrix that could not be read has no size: not "rows": 0 */
        json_object_set_new(o, "rows", json_integer(rep->rows));
        json_object_set_new(o, "nnz", json_integer(rep->nnz));
        json_object_set_new(o, "duplicates", json_integer(rep->duplicates));
    }
    const int k = rep->nrhs > 0 ? rep->nrhs : 1;
    json_object_set_new(o, "rhs_columns", json_integer(k));
    if (k > 1 && rep->cols) {
        json_object_set_new(o, "rhs_mode", json_string(rep->together ? "together" : "sequential"));
        json_object_set_new(o, "columns", report_columns(rep));
    }
    json_object_set_new(o, "tol", json_real(opt->solve.tol));
    json_object_set_new(o, "atol", json_real(opt->solve.atol));
    json_object_set_new(
        o, "method",
        json_string(solver_method_name(rep->method_known ? rep->method : opt->solve.method)));
    if (rep->method_choice[0]) /* --method auto: what was compared, or why cg */
        json_object_set_new(o, "method_choice", json_string(rep->method_choice));
    if (rep->cg.kernel[0]) /* cg-small: which one-launch kernel ran, and how */
        json_object_set_new(o, "loop_kernel", json_string(rep->cg.kernel));
    json_object_set_new(o, "precond", json_string(report_precond(rep, opt)));
    if (rep->precond_choice[0]) /* --precond auto: what it chose and why */
        json_object_set_new(o, "precond_choice", json_string(rep->precond_choice));
    json_object_set_new(o, "preconditioner", pc_info_json(&rep->pc));
    json_object_set_new(o, "precision", json_string(la_precision_name(opt->solve.precision)));
    /* what ran the loop: the native CPU loops (kernels/cpu/) and their
     * threads, or the OpenCL kernels */
    json_object_set_new(o, "backend", json_string(rep->cg.cpu_threads > 0 ? "native" : "opencl"));
    if (rep->cg.cpu_threads > 0)
        json_object_set_new(o, "cpu_threads", json_integer(rep->cg.cpu_threads));
    else if (rep->nparts > 0 && (rep->parts[0].device.type & CL_DEVICE_TYPE_CPU)) {
        /* PoCL's kernels: its thread pool, sized from this process's CPUs
         * (ocl_threads_from_affinity) unless POCL_MAX_PTHREAD_COUNT says */
        const char *v = getenv("POCL_MAX_PTHREAD_COUNT");
        int t = v && *v ? atoi(v) : cls_sysres_cpus();
        json_object_set_new(o, "cpu_threads", json_integer(t > 0 ? t : 1));
    }
    /* one engine (la's tuned format blocks, fused updates); the key stays
     * for scripts that read it */
    json_object_set_new(o, "engine", json_string("fused"));
    json_object_set_new(o, "parts",
                        json_pack("{s:i, s:i, s:i}", "ranks", rep->ranks, "devices_per_rank",
                                  rep->devices_per_rank, "total", rep->nparts));
    json_object_set_new(o, "warm_devices", json_integer(rep->warm_parts));
    if (rep->device_choice[0]) /* --device auto on one part: what was compared */
        json_object_set_new(o, "device_choice", json_string(rep->device_choice));
    if (rep->profile)
        json_object_set_new(o, "profile", report_profile_json(rep->profile));
    return o;
}

/* --profile: each rank's iteration in microseconds per iteration (dprof.h) */
json_t *report_profile_json(const dprof_report *pr)
{
    json_t *o = json_object(), *ranks = json_array();
    if (pr->note[0])
        json_object_set_new(o, "note", json_string(pr->note));
    int64_t its = 0;
    for (int r = 0; r < pr->nranks; r++) {
        const dprof_rank_sum *rs = &pr->rank[r];
        const double per = rs->iterations > 0 ? 1e6 / (double)rs->iterations : 0.0;
        if (rs->iterations > its)
            its = rs->iterations;
        json_t *jr = json_object(), *waits = json_object(), *parts = json_array();
        double waited = 0.0;
        for (int w = 0; w < DPROF_NWAITS; w++) {
            json_object_set_new(waits, dprof_wait_name(w), json_real(rs->wait_s[w] * per));
            waited += rs->wait_s[w];
        }
        json_object_set_new(jr, "rank", json_integer(rs->rank));
        json_object_set_new(jr, "wall", json_real(rs->wall_s * per));
        json_object_set_new(jr, "host_waits", waits);
        /* the rest of the host's time: enqueueing, the scalars, the tests */
        json_object_set_new(jr, "host_other", json_real((rs->wall_s - waited) * per));
        for (int k = 0; k < rs->nparts; k++) {
            const dprof_part_sum *ps = &rs->part[k];
            json_t *jp = json_object(), *steps = json_object();
            double busy = 0.0;
            for (int q = 0; q < DPROF_NSTEPS; q++) {
                json_object_set_new(steps, dprof_step_name(q), json_real(ps->step_s[q] * per));
                busy += ps->step_s[q];
            }
            json_object_set_new(jp, "slot", json_integer(k));
            json_object_set_new(jp, "steps", steps);
            /* the main queue's busy time; the copy queue's beside it */
            json_object_set_new(jp, "device_busy", json_real((busy - ps->copy_s) * per));
            json_object_set_new(jp, "copy_queue_busy", json_real(ps->copy_s * per));
            /* the idle time by the step whose command waited (what the
             * device waited for: a halo before boundary_spmv, the
             * reduction's turnaround before update) */
            json_t *ib = json_object();
            for (int q = 0; q < DPROF_NSTEPS; q++)
                json_object_set_new(ib, dprof_step_name(q), json_real(ps->idle_before_s[q] * per));
            json_object_set_new(jp, "idle_before", ib);
            json_object_set_new(jp, "device_idle", json_real(ps->idle_s * per));
            json_object_set_new(jp, "device_span", json_real(ps->span_s * per));
            /* a negative count: an event was lost, the figures are partial */
            json_object_set_new(jp, "commands",
                                ps->commands < 0 ? json_integer(-1)
                                                 : json_real((double)ps->commands * per * 1e-6));
            json_array_append_new(parts, jp);
        }
        json_object_set_new(jr, "parts", parts);
        json_array_append_new(ranks, jr);
    }
    json_object_set_new(o, "unit", json_string("microseconds per iteration"));
    json_object_set_new(o, "iterations", json_integer(its));
    json_object_set_new(o, "ranks", ranks);
    return o;
}

void report_profile_print(FILE *f, const dprof_report *pr)
{
    if (pr->note[0]) {
        fprintf(f, "profile: %s\n", pr->note);
        return;
    }
    json_t *o = report_profile_json(pr);
    fprintf(f, "profile: microseconds per iteration over %lld iterations\n",
            (long long)json_integer_value(json_object_get(o, "iterations")));
    size_t i, j;
    json_t *r, *p;
    json_array_foreach(json_object_get(o, "ranks"), i, r)
    {
        const char *key;
        json_t *v;
        fprintf(f, "rank %lld: wall %.1f; host waits:",
                (long long)json_integer_value(json_object_get(r, "rank")),
                json_real_value(json_object_get(r, "wall")));
        json_object_foreach(json_object_get(r, "host_waits"), key, v)
            fprintf(f, " %s %.1f", key, json_real_value(v));
        fprintf(f, "; other %.1f\n", json_real_value(json_object_get(r, "host_other")));
        json_array_foreach(json_object_get(r, "parts"), j, p)
        {
            fprintf(f, "  device %lld: busy %.1f, idle %.1f, copy queue %.1f;",
                    (long long)json_integer_value(json_object_get(p, "slot")),
                    json_real_value(json_object_get(p, "device_busy")),
                    json_real_value(json_object_get(p, "device_idle")),
                    json_real_value(json_object_get(p, "copy_queue_busy")));
            json_object_foreach(json_object_get(p, "steps"), key, v)
                fprintf(f, " %s %.1f", key, json_real_value(v));
            fprintf(f, "\n");
        }
    }
    json_decref(o);
}

json_t *report_times_json(const dsolve_report *rep)
{
    const double its = (double)rep->cg.iterations;
    /* solve_s holds the start (workspace, initial residual) and the
     * true-residual confirmations; the loop's own time is what remains */
    const double loop_s = rep->solve_s - rep->cg.start_s - rep->cg.confirm_s;
    json_t *t = json_object();
    json_object_set_new(t, "parse_s", json_real(rep->parse_s));
    /* the matrix was parsed while its upload arrived (net/preparse.h):
     * parse_s is then what was left after the last byte */
    json_object_set_new(t, "parsed_while_uploading", json_boolean(rep->preparsed));
    json_object_set_new(t, "setup_s", json_real(rep->setup_s));
    json_object_set_new(t, "partition_s", json_real(rep->partition_s));
    json_object_set_new(t, "init_s", json_real(rep->init_s));
    json_object_set_new(t, "upload_s", json_real(rep->upload_s));
    json_object_set_new(t, "precond_setup_s", json_real(rep->pc.setup_s));
    json_object_set_new(t, "solve_s", json_real(rep->solve_s));
    json_object_set_new(t, "solve_start_s", json_real(rep->cg.start_s));
    json_object_set_new(t, "solve_confirm_s", json_real(rep->cg.confirm_s));
    json_object_set_new(t, "gather_s", json_real(rep->gather_s));
    json_object_set_new(t, "ms_per_iteration", json_real(its > 0 ? 1e3 * rep->solve_s / its : 0.0));
    json_object_set_new(t, "loop_ms_per_iteration", json_real(its > 0 ? 1e3 * loop_s / its : 0.0));
    json_object_set_new(t, "warm_devices", json_integer(rep->warm_parts));
    return t;
}
