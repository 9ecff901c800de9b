/*
 * dbatch.h: many small systems on one device in one launch, from their
 * files. Each system's input is read and checked on its own, as
 * dsolve_file reads one (a bad one fails alone, with its file and line);
 * then krylov/cg_batch.c solves the good ones together on the device a
 * one-part solve would take, its OpenCL state from the warm set
 * (dist/dvec.h: a daemon's batch costs no context). The CLI's
 * `clsolve solve A1.mtx A2.mtx ...` (cli/solve_batch.c) and the daemon's
 * batches of queued small jobs (net/sched_batch.c) both run it.
 */
#ifndef CLS_SOLVER_DBATCH_H
#define CLS_SOLVER_DBATCH_H

#include <stdint.h>

#include "../kernels/ocl.h"
#include "../matrices/csr.h"
#include "../matrices/mm.h"
#include "krylov/cg_batch.h"

/* One system's input. */
typedef struct dbatch_input {
    csr_matrix A;
    double *b; /* A.nrows values: the file's, else A*1 (the row sums, as dsolve's default) */
    int64_t duplicates;
} dbatch_input;

/* Reads a_path (a Matrix Market file, or gen:KIND:N as for one matrix) with
 * the reader's options ro (may be NULL) and b from b_path (NULL: b = A*1),
 * then solve_check_input's checks. A b_path with more than one column is
 * CLS_EINPUT (a batch system has one right-hand side). On failure in is
 * left empty and err names the file (and line). */
int dbatch_read(const char *a_path, const char *b_path, const mm_read_options *ro, dbatch_input *in,
                cls_error *err);
void dbatch_input_free(dbatch_input *in);

/* What dbatch_solve ran on and how long it took. */
typedef struct dbatch_info {
    ocl_device device;
    la_config config; /* la's configuration there */
    int warm;         /* the device state came from the warm set */
    double init_s;    /* the device state, taken or built */
    double solve_s;   /* cg_batch_solve, wall */
    double device_s;  /* of which its launches and reads */
} dbatch_info;

/* Solves sys[0..k) together (cg_batch_solve's contract: each system ends
 * in sys[s].rc) on the device `device` names (NULL or "auto": the first;
 * dsys_pick_devices) at precision prec with no preconditioner or Jacobi.
 * Returns CLS_OK unless the batch as a whole could not run. */
int dbatch_solve(const char *device, la_precision prec, solver_precond pc, cg_batch_system *sys,
                 int k, dbatch_info *info, cls_error *err);

#endif
