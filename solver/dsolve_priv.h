/*
 * dsolve_priv.h: what dsolve.c (the solve's phases), dinput.c and
 * dinput_ranged.c (phase 1: reading, generating or scattering the system;
 * the layout; the scaling) and dcomm.c (agreement, big transfers, the
 * shared layout) share. Not for other modules: dsolve.h is the contract.
 */
#ifndef CLS_SOLVER_DSOLVE_PRIV_H
#define CLS_SOLVER_DSOLVE_PRIV_H

#include <mpi.h>
#include <stdint.h>

#include "../matrices/csr.h"
#include "../matrices/mm.h"
#include "dsolve.h"
#include "dist/partition.h"

#define DS_TAG_SCATTER 7
#define DS_TAG_GATHER 8
#define DS_CHUNK ((int64_t)1 << 26) /* elements per MPI message of the big transfers */

/* What every rank knows after phase 1. */
typedef struct ds_input {
    int64_t nrows, nnz, duplicates;
    int preparsed; /* rank 0 took a matrix parsed while its upload arrived */
    int has_b, has_x0;
    int nrhs; /* right-hand sides: b and x0 hold nrhs columns of re - rb */
    part_layout L;
    int64_t rb, re; /* this rank's rows */
    csr_matrix blk; /* those rows, rowptr from 0, global columns */
    double *b, *x0; /* this rank's entries, column c at c (re - rb) (x0 NULL: zero) */
    double bnorm[DSOLVE_MAX_RHS]; /* ||b|| of each column as given (before dsolve_scale),
                                   * every rank: for an absolute tolerance */
    double amax;                  /* max |a_ij| of the whole matrix where the input check found it
                                   * (rank 0 of a file read whole), else -1: dsolve_scale reads
                                   * the block's values for it */
    double *b1;   /* one rank, no b given: A*1 from the input check, which becomes b */
    double *dinv; /* one rank: 1 / a_ii from the input check (NULL once scaled or
                   * taken): the one part's preconditioner takes it (dpart.dinv) */
} ds_input;

int dsolve_agree(MPI_Comm comm, int rc, cls_error *err);
/* The same without the "rank N: " prefix: for messages that say where
 * already (a file's line, a matrix entry), the same from any rank. */
int dsolve_agree_plain(MPI_Comm comm, int rc, cls_error *err);
int dsolve_send_big(const void *buf, int64_t count, MPI_Datatype t, size_t tsize, int dest,
                    MPI_Comm comm, cls_error *err);
int dsolve_recv_big(void *buf, int64_t count, MPI_Datatype t, size_t tsize, int src, MPI_Comm comm,
                    cls_error *err);
int dsolve_input(MPI_Comm comm, const char *a_path, const char *const *b_paths, int nb_paths,
                 const char *x0_path, const dsolve_options *opt, int G, ds_input *in,
                 cls_error *err);
/* Collective: rank 0's layout (planned when root_rc is CLS_OK; its error
 * otherwise) given to every rank; the agreed outcome. */
int dsolve_share_layout(MPI_Comm comm, int64_t nrows, int G, int root_rc, part_layout *L,
                        cls_error *err);
/* The ranged read (dinput_ranged.c). dsolve_ranged_possible is collective:
 * 1 on every rank when every rank sees rank 0's file and it can be read in
 * ranges (its header and where in h, w; for the binary form, every row
 * pointer in *bin_rowptr, malloc'ed). A text file that rank 0 holds and
 * some rank cannot see is read in ranges too: *stream is set on such a
 * rank, which gets its span's bytes from rank 0. dsolve_read_ranged reads it so,
 * leaving the layout and this rank's block, the stored entries and the
 * duplicates summed, checked as solve_check_input checks; agreed. */
int dsolve_ranged_possible(MPI_Comm comm, const char *a_path, mm_header *h, mm_where *w,
                           int64_t **bin_rowptr, int *stream);
int dsolve_read_ranged(MPI_Comm comm, const char *a_path, const mm_header *h, const mm_where *w,
                       const int64_t *bin_rowptr, int stream, const dsolve_options *opt, int G,
                       part_layout *L, csr_matrix *blk, int64_t *nnz, int64_t *duplicates,
                       cls_error *err);
/* x_exp[c] per right-hand side */
int dsolve_scale(MPI_Comm comm, ds_input *in, int *x_exp, cls_error *err);
int dsolve_unscale_x(double *x, int64_t n, int x_exp, cls_error *err);
/* dsolve_unscale_x's failure: entry i (0-based) beyond double's range */
int dsolve_unscale_fail(int64_t i, cls_error *err);
void dsolve_input_free(ds_input *in);
/* b = A * 1, the row sums (the default right-hand side), on the host's cores */
void dsolve_row_sums(const csr_matrix *A, double *b);

#endif
