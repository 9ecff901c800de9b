/*
 * report.h: a solve's report (solver/dsolve.h's dsolve_report) as JSON,
 * written once for both places a client reads it: `clsolve solve --json`
 * (cli/cmd_solve.c) and the daemon's job record, whose `result` and
 * `timings` are these objects (net/scheduler.c). The keys are listed once,
 * in docs/api.md ("The solve report"); a key added here appears in both.
 *
 * What only one side knows is added by that side: the command line its
 * file names, the error against x = 1 and the residual history; the daemon
 * whether the solution was stored and how long the job waited. The devices
 * stay with each caller too (the job record's carry the device's whole
 * description from net/cluster.c).
 */
#ifndef CLS_NET_REPORT_H
#define CLS_NET_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "../solver/dsolve.h"

/* The result object (new reference): converged, exit_code, reason,
 * iterations, residuals (relative and true), rows, nnz, duplicates, the
 * right-hand side columns, tol, atol, method, precond (as run),
 * preconditioner, precision, engine, parts, warm_devices, device_choice.
 * rc is the solve's exit code (CLS_OK: converged); opt the options it ran
 * with. Residual keys are present once an iteration history exists; rows,
 * nnz and duplicates once the matrix was read (absent when it was refused). */
json_t *report_json(const dsolve_report *rep, const dsolve_options *opt, int rc);

/* The phase times (new reference): parse_s, setup_s and its phases,
 * solve_s and its start and confirmations, gather_s, precond_setup_s,
 * ms_per_iteration, loop_ms_per_iteration, warm_devices. The caller adds
 * total_s and the times around the solve only it measured (write_s, ...). */
json_t *report_times_json(const dsolve_report *rep);

/* --profile (dprof.h): each rank's host wall time and waits, each device's
 * busy, idle and per-step time, in microseconds per iteration; and the same
 * as a table */
json_t *report_profile_json(const dprof_report *pr);
void report_profile_print(FILE *f, const dprof_report *pr);

#endif
