/*
 * cg_batch.h: many small systems solved together, one launch for all
 * (`clsolve solve A1.mtx A2.mtx ...`; cg_batch.c).
 */
#ifndef CLS_SOLVER_KRYLOV_CG_BATCH_H
#define CLS_SOLVER_KRYLOV_CG_BATCH_H

#include <stdint.h>

#include "../../matrices/csr.h"
#include "krylov.h"

/* One system of a batch: its input, and what became of it. */
typedef struct cg_batch_system {
    const csr_matrix *A; /* square, checked SPD-plausible by the caller (solve_check_input) */
    const double *b;     /* n values */
    double tol;          /* relative: ||b - Ax|| <= tol ||b|| */
    int64_t maxiter;     /* <= 0: max(1000, 10 n) as scipy */
    double *x;           /* out: n values (the caller's), from x = 0 */
    cg_result res;       /* reason, converged, iterations, rel_residual (no history) */
    int rc;              /* CLS_OK, CLS_ENOTCONV or CLS_EBREAKDOWN, with msg */
    char msg[256];
} cg_batch_system;

/* Solves sys[0..k) on la's device, all in one launch of cg_batch.cl (and
 * one more for the systems whose true residual asks for a restart), with
 * no preconditioner or Jacobi. Each system ends in sys[s].rc as a solve of
 * its own would (the same rules: ksp_stop.h), whatever the others do.
 * *device_s: the seconds of the launches and their reads. Returns CLS_OK
 * unless the batch as a whole could not run (CLS_EINPUT: a preconditioner
 * other than none or jacobi, or over 2^31 rows in all; CLS_EOTHER: the
 * device failed). */
int cg_batch_solve(la_ctx *la, cg_batch_system *sys, int k, solver_precond precond,
                   double *device_s, cls_error *err);

#endif
