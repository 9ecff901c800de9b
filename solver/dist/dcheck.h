/*
 * dcheck.h: solve_check_input's checks on a matrix spread over ranks, for
 * the ranged read, where no rank holds the whole matrix. The outcome and
 * message are the single-rank check's (solve.h): the first failing row in
 * row order, the diagonal before the mirrors within a row, whichever rank
 * holds it.
 */
#ifndef CLS_SOLVER_DIST_DCHECK_H
#define CLS_SOLVER_DIST_DCHECK_H

#include <mpi.h>
#include <stdint.h>

#include "../../common/error.h"
#include "../../matrices/csr.h"

/* Collective. blk: this rank's rows [rank_begin[me], rank_begin[me + 1])
 * with sorted global columns. exact_symmetric: the storage makes the
 * matrix symmetric bit for bit (symmetric or skew Matrix Market storage,
 * mirrored by the reader), so the mirrors are not compared. Returns the
 * agreed outcome on every rank; err holds the message. */
int dcheck_matrix(MPI_Comm comm, const int64_t *rank_begin, const csr_matrix *blk,
                  int exact_symmetric, const char *name, cls_error *err);

#endif
