/*
 * dsolve.h: a solve across MPI ranks and their OpenCL devices, the one entry
 * point for `mpirun -np K clsolve solve` and for the daemon's workers.
 *
 * dsolve_file is collective over comm: every rank calls it with the same
 * arguments (paths readable by rank 0 at least). The system is read and
 * distributed, the parts are solved together, and the solution and the
 * report are gathered on rank 0. Failures are agreed: every rank returns the
 * same exit class, and rank 0's err holds the message (a failure first seen
 * on another rank is prefixed "rank N: ", but for an input's file line or
 * entry, which says where already).
 *
 * The system comes from one of four sources (read_mode):
 *   - a Matrix Market file of which every rank parses only its share of the
 *     bytes, the entries routed to their rows' ranks (RANGED, the default on
 *     several ranks; a rank that cannot see the file gets its bytes from
 *     rank 0; dinput_ranged.c);
 *   - the file read by rank 0, which sends every other rank its row block
 *     and keeps only its own (RANK0: the default on one rank, and for gzip
 *     and array files; rank 0 never holds more than one copy of the matrix);
 *   - the same file read by every rank (EVERYWHERE: the path must be
 *     readable on every host, e.g. a shared file system), each keeping its
 *     block: no scatter traffic, each rank's memory holds the whole matrix
 *     while it parses;
 *   - a generator spec "gen:poisson3d:320" or "gen:poisson3d:256x256x512"
 *     (matrices/gen_rows.h) in place of the path: every rank builds only its
 *     rows, no file and no scatter (for benchmarks at 10^8 rows).
 * b and x0 files are read by rank 0 and scattered (or read by every rank
 * with read_everywhere); without b, b = A*1 computed from each rank's rows.
 * See docs/distributed.md.
 */
#ifndef CLS_SOLVER_DSOLVE_H
#define CLS_SOLVER_DSOLVE_H

#include <mpi.h>
#include <stdint.h>

#include "../matrices/mm.h"
#include "krylov/dcg.h"
#include "pc/pc.h"
#include "solve.h"

#define DSOLVE_MAX_PARTS 64
#define DSOLVE_MAX_RHS DSOLVE_MAX_RHS_BLOCK /* right-hand sides of one solve */

/* Several right-hand sides: TOGETHER iterates them in lockstep reading the
 * matrix once per iteration (dbcg.c); SEQUENTIAL solves one after the other
 * on the same devices, matrix and preconditioner (the preconditioner's
 * set-up is paid once either way); AUTO is TOGETHER for CG and SEQUENTIAL
 * for pipelined CG. */
typedef enum { DSOLVE_RHS_AUTO, DSOLVE_RHS_TOGETHER, DSOLVE_RHS_SEQUENTIAL } dsolve_rhs_mode;

/* --engine, accepted for one more release and ignored: one engine runs
 * every layout (dcg.c hands a one-part solve to cg.c's device-scalar loop)
 * and the report says AUTO. */
typedef enum { DSOLVE_ENGINE_AUTO, DSOLVE_ENGINE_LOCAL, DSOLVE_ENGINE_DISTRIBUTED } dsolve_engine;

/* Who reads a matrix file on several ranks: RANK0 reads it and sends each
 * rank its rows; EVERYWHERE: every rank reads all of it and keeps its rows;
 * RANGED: every rank parses only its share of the file's bytes and the
 * entries are routed to their rows' ranks (dinput_ranged.c; plain
 * coordinate files, a rank that cannot see the file getting its bytes from
 * rank 0; the binary form where every rank sees it); AUTO: RANGED where it can,
 * on more than one rank, else RANK0. Gzip, array and binary files are read
 * by rank 0 in every mode but EVERYWHERE; RANGED asked for such a file is
 * refused (CLS_EINPUT). */
typedef enum {
    DSOLVE_READ_AUTO,
    DSOLVE_READ_RANK0,
    DSOLVE_READ_EVERYWHERE,
    DSOLVE_READ_RANGED
} dsolve_read_mode;

const char *dsolve_read_mode_name(dsolve_read_mode m);
/* "auto", "rank0", "everywhere", "ranged": 0, or -1 for an unknown name */
int dsolve_read_mode_parse(const char *name, dsolve_read_mode *m);

const char *dsolve_engine_name(dsolve_engine e);
/* "auto", "local", "distributed": 0, or -1 for an unknown name */
int dsolve_engine_parse(const char *name, dsolve_engine *e);

typedef struct dsolve_part_info {
    int rank;
    int slot; /* the device's index among its rank's */
    int64_t row_begin, row_end, nnz;
    int64_t ghosts, interior_rows; /* halo size; rows computed while it flies */
    int neighbours;                /* parts it exchanges halos with */
    ocl_device device;
    la_config config;
    la_spmv_variant spmv;
} dsolve_part_info;

typedef struct dsolve_report {
    cg_result cg; /* iterations, reason, history (rank 0) */
    double true_rel_residual;
    int64_t rows, nnz, duplicates;
    int preparsed; /* the matrix was parsed while its upload arrived (take_matrix) */
    int ranks, devices_per_rank, nparts;
    dsolve_engine engine;                     /* the engine that ran: LOCAL or DISTRIBUTED */
    dsolve_part_info parts[DSOLVE_MAX_PARTS]; /* rank 0 */
    double parse_s, setup_s, solve_s;
    /* setup_s in phases (rank 0's view): halo plans; devices opened
     * (contexts, programs: the OpenCL start-up a solve cannot avoid); the
     * matrix, vectors and workspace uploaded; then after the solve: x read
     * back, the true residual recomputed and x gathered on rank 0 where
     * it is asked for, the memory released */
    double partition_s, init_s, upload_s, gather_s;
    int warm_parts;          /* parts (rank 0's view) whose device state was kept warm */
    char device_choice[512]; /* one part, --device auto: the device compared figures (devfig.h) */
    /* the method that ran: the one asked for, or --method auto's choice and why
     * (method_known: 0 until dsolve set it) */
    solver_method method;
    int method_known;
    char method_choice[256];
    char precond_choice[256]; /* --precond auto: what it chose and why */
    pc_info pc;              /* the preconditioner: type as run, set-up time, built or reused */
    /* right-hand sides: nrhs columns; cols[c] and true_rel_cols[c] per
     * column (malloc'ed, rank 0); cg above sums them up: converged when
     * every column is, the most iterations, the largest residual, column
     * 0's history */
    int nrhs;
    int together; /* 1: the columns iterated together (dbcg.c) */
    cg_result *cols;
    double *true_rel_cols;
    /* b = A*1 (no right-hand side given, one column): max |x_i - 1| over
     * every rank's rows, x as returned (scaled back; NaN entries skipped, as
     * a loop of `>` skips them); NAN with right-hand sides given, with an x
     * out of range or when x could not be read back. Every rank's share of
     * x is measured where it is: `clsolve solve` without -o gathers no x. */
    double max_err_ones;
    /* --profile (rank 0): each rank's iteration profile (dprof.h); NULL
     * when not asked for */
    dprof_report *profile;
} dsolve_report;

typedef struct dsolve_options {
    solve_options solve;       /* tol, maxiter, method, precond, precision, device, spmv,
                                * monitor (rank 0): a non-zero return cancels on every
                                * rank within one iteration's reduction */
    int devices_per_rank;      /* 0: the length of a device list, else one */
    int64_t min_rows_per_part; /* 0: PART_MIN_ROWS_DEFAULT (partition.h) */
    int read_everywhere;       /* every rank reads the file itself (read_mode EVERYWHERE) */
    dsolve_read_mode read_mode; /* who reads a Matrix Market file (AUTO: ranged on
                                 * several ranks when every rank sees the file) */
    int (*read_progress)(void *ctx,
                         int64_t bytes); /* the reader's progress callback
                                          * (rank 0; mm_read_options): non-zero stops the read */
    void *read_ctx;
    uint64_t read_max_memory; /* the reader's memory limit (mm_read_options), 0: none */
    int verbose;              /* rank 0 prints the layout to stderr */
    int profile;              /* time each step of an iteration (dprof.h): rep->profile */
    dsolve_engine engine;     /* AUTO: local for one part (CG), else distributed */
    int prewarm;              /* one rank, one device: start the device's OpenCL
                               * state while the input is read (dsys_prewarm_*;
                               * a one-shot process: the daemon keeps it warm) */
    pc_options pc;            /* the preconditioner's parameters (degree, sweeps, reuse);
                               * its type is solve.precond */
    dsolve_rhs_mode rhs_mode; /* several right-hand sides: together or one by one */
    /* rank 0 (read modes auto and rank0): a matrix already parsed from
     * that file (the daemon parses an upload as it arrives:
     * net/preparse.h), taken instead of reading it, on any number of ranks
     * (the others then get their rows from rank 0, not by a ranged read);
     * 0 when there is none (the file is read). */
    int (*take_matrix)(void *ctx, const char *path, csr_matrix *A, mm_header *h,
                       mm_read_stats *st);
    void *take_ctx;
    /* rank 0, when set: told as each phase begins ("parsing", "setting_up",
     * "solving", "gathering"), for progress that says what is going on */
    void (*phase)(void *ctx, const char *phase);
    void *phase_ctx;
    /* A one-shot process (the CLI): the devices are released as soon as x
     * is down, on a thread of their own, beside the true residual, the
     * gather and the host memory's release (one rank; several release at
     * the end as before); then `release_then(release_ctx)`, when set, runs
     * on that thread (the CLI's warm devices: 0.09 s of driver teardown on
     * an H200). dsolve calls release_then exactly once, after its devices
     * are released, on every path, and joins the thread before it returns. */
    int release_early;
    void (*release_then)(void *ctx);
    void *release_ctx;
} dsolve_options;

void dsolve_options_default(dsolve_options *o);

/* Collective. x (rank 0 only, may be NULL elsewhere) receives a malloc'ed
 * solution of rep->rows entries when the solve produced an iterate (converged
 * or not). b_path NULL: b = A*1. x0_path NULL: zero initial guess. An x that
 * is beyond double's range once scaled back is refused (CLS_EBREAKDOWN)
 * whether x is asked for or not (NULL: each rank checks its rows). */
int dsolve_file(MPI_Comm comm, const char *a_path, const char *b_path, const char *x0_path,
                const dsolve_options *opt, dsolve_report *rep, double **x, cls_error *err);

/* The same with nb_paths right-hand side files (0: b = A*1), each a vector
 * or an n x k array (mm_read_block): DSOLVE_MAX_RHS columns in all. x
 * receives the n x nrhs solutions, column-major. */
int dsolve_file_rhs(MPI_Comm comm, const char *a_path, const char *const *b_paths, int nb_paths,
                    const char *x0_path, const dsolve_options *opt, dsolve_report *rep, double **x,
                    cls_error *err);

void dsolve_report_free(dsolve_report *rep);

#endif
