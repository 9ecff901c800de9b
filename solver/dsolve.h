/*
 * dsolve.h: a solve across MPI ranks and their OpenCL devices, the one entry
 * point for `mpirun -np K clsolve solve` and for the daemon's workers.
 *
 * dsolve_file is collective over comm: every rank calls it with the same
 * arguments (paths readable by rank 0 at least). Rank 0 reads the system and
 * distributes it, the parts are solved together, and the solution and the
 * report are gathered on rank 0. Failures are agreed: every rank returns the
 * same exit class, and rank 0's err holds the message.
 */
#ifndef CLS_SOLVER_DSOLVE_H
#define CLS_SOLVER_DSOLVE_H

#include <mpi.h>
#include <stdint.h>

#include "solve.h"

#define DSOLVE_MAX_PARTS 64

typedef struct dsolve_part_info {
    int rank;
    int64_t row_begin, row_end, nnz;
    ocl_device device;
    la_config config;
    la_spmv_variant spmv;
} dsolve_part_info;

typedef struct dsolve_report {
    cg_result cg;                 /* iterations, reason, history (rank 0) */
    double true_rel_residual;
    int64_t rows, nnz, duplicates;
    int ranks, devices_per_rank, nparts;
    dsolve_part_info parts[DSOLVE_MAX_PARTS]; /* rank 0 */
    double parse_s, setup_s, solve_s;
} dsolve_report;

typedef struct dsolve_options {
    solve_options solve;  /* tol, maxiter, precond, precision, device, monitor (rank 0) */
    int devices_per_rank; /* 0: one */
} dsolve_options;

/* Collective. x (rank 0 only, may be NULL elsewhere) receives a malloc'ed
 * solution of rep->rows entries when the solve produced an iterate (converged
 * or not). b_path NULL: b = A*1. x0_path NULL: zero initial guess. */
int dsolve_file(MPI_Comm comm, const char *a_path, const char *b_path, const char *x0_path,
                const dsolve_options *opt, dsolve_report *rep, double **x, cls_error *err);

void dsolve_report_free(dsolve_report *rep);

#endif
