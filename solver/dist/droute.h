/*
 * droute.h: triplets sent to the ranks that own their rows.
 *
 * A ranged read (dinput_ranged.c) leaves every rank with the entries of
 * its byte span, whose rows may belong to any rank; the distributed check
 * (dcheck.c) sends each upper entry to the owner of its mirror. Both are
 * this one collective: a count per destination, the triplets packed by
 * destination on every core, three MPI_Alltoallv (rows, columns, values;
 * a rank's own entries are copied, not sent). Rows belong to ranks
 * in contiguous blocks (rank_begin, as partition.h lays them out), so the
 * owner of a row is a binary search over size + 1 bounds.
 */
#ifndef CLS_SOLVER_DIST_DROUTE_H
#define CLS_SOLVER_DIST_DROUTE_H

#include <mpi.h>
#include <stdint.h>

#include "../../common/error.h"
#include "../../matrices/csr.h"

/* The rank whose rows [rank_begin[r], rank_begin[r + 1]) hold row. */
int droute_owner(const int64_t *rank_begin, int size, int64_t row);

/* Collective. Sends every triplet of C (global rows and columns) to the
 * owner of its row, with mirror +1 also (j, i, v) and with -1 (j, i, -v)
 * for each i != j (symmetric and skew storage); C is consumed (freed as
 * soon as it is packed). *out receives this rank's triplets, rows still
 * global, in rank order and within a rank in C's order. The outcome is
 * this rank's: the caller agrees. */
int droute_coo(MPI_Comm comm, const int64_t *rank_begin, coo_matrix *C, int mirror, coo_matrix *out,
               cls_error *err);

/* Collective. As droute_coo, but only the records (mirrors included) that
 * other ranks own move: C is left as it is, with this rank's own records
 * in it, and *out receives what the other ranks' C hold for this rank's
 * rows (rows global). The caller assembles its rows from both
 * (csr_from_coo_rows_take). */
int droute_foreign(MPI_Comm comm, const int64_t *rank_begin, const coo_matrix *C, int mirror,
                   coo_matrix *out, cls_error *err);

#endif
