/*
 * partition.h: how the rows of a system are split across MPI ranks and each
 * rank's OpenCL devices.
 *
 * Parts are contiguous row blocks, numbered in row order: part k holds rows
 * [begin[k], begin[k+1]). The split is hierarchical, as DESIGN.md asks: first
 * the rows are cut into one block per rank in use, each weighted by the number
 * of parts that rank drives, then each rank's block is cut into one part per
 * device. Both cuts balance a per-row cost
 *
 *     w(i) = nnz(i) + PART_ROW_COST
 *
 * i.e. the bytes a CG iteration moves for the row in units of one stored
 * nonzero (12 bytes: an 8-byte value and a 4-byte column): the SpMV reads
 * nnz(i) entries, and the vector work of an iteration (about 12 vector
 * reads and writes of 8 bytes, ~96 bytes) costs about 8 nonzeros more. So
 * rows of a stencil are balanced by count, and a matrix with a few dense
 * rows is balanced by nonzeros.
 *
 * Small systems use fewer parts: at most nrows / min_rows parts (at least
 * one), so a part never has fewer than min_rows rows unless the whole system
 * does. Why a row floor: every part beyond the first adds a fixed cost per
 * iteration (a halo message each way, a few more kernel launches, a
 * reduction partner) of tens of microseconds, while a row costs a CPU device
 * about a nanosecond and a GPU tens of picoseconds; below ~65 k rows a part's
 * arithmetic is smaller than that fixed cost on any device, so splitting
 * only slows the solve down. PART_MIN_ROWS_DEFAULT is that floor; tests
 * lower it (to 1) to force many parts on small matrices.
 *
 * When fewer parts than ranks x devices are used, they are spread one per
 * rank first (more memory bandwidth and host threads per part), then a second
 * per rank, and so on: the first P mod R ranks get one more.
 */
#ifndef CLS_SOLVER_PARTITION_H
#define CLS_SOLVER_PARTITION_H

#include <stdint.h>
#include <stdio.h>

#include "../../common/error.h"

#define PART_ROW_COST 8
#define PART_MIN_ROWS_DEFAULT 65536

/* Stored nonzeros of row i (for the cost model). */
typedef int64_t (*part_row_nnz_fn)(const void *ctx, int64_t row);

typedef struct part_layout {
    int64_t nrows;
    int nparts;           /* parts in use, >= 1 (0 only when nrows == 0) */
    int ranks;            /* ranks in the communicator */
    int devices_per_rank; /* the most parts a rank may drive */
    int64_t *begin;       /* nparts + 1 row boundaries, begin[0] = 0 */
    int64_t *nnz;         /* nparts: stored nonzeros per part */
    int *rank;            /* nparts: the rank that drives the part */
    int *slot;            /* nparts: the part's index among its rank's parts */
    int *first;           /* ranks + 1: rank r drives parts [first[r], first[r+1]) */
} part_layout;

/* Plans the layout of nrows rows over `ranks` ranks of `devices_per_rank`
 * devices, at most max_parts parts (0: no cap) and at least min_rows rows per
 * part (<= 0: PART_MIN_ROWS_DEFAULT). row_nnz gives each row's nonzeros.
 * Deterministic: every rank computing it from the same input gets the same
 * layout. */
int part_plan(int64_t nrows, part_row_nnz_fn row_nnz, const void *ctx, int ranks,
              int devices_per_rank, int64_t min_rows, int max_parts, part_layout *L,
              cls_error *err);

/* The same from explicit boundaries (nparts + 1 entries), for tests and for a
 * caller that knows better; parts are given to ranks as part_plan does. nnz
 * may be NULL (counted as 0). */
int part_from_bounds(int64_t nrows, const int64_t *begin, const int64_t *nnz, int nparts,
                     int ranks, int devices_per_rank, part_layout *L, cls_error *err);

/* The part that owns global row `row` (binary search); -1 if out of range. */
int part_owner(const part_layout *L, int64_t row);

/* One line per part: "part 2: rank 1 device 0, rows [100, 200) (100 rows, 480 nnz)". */
void part_print(const part_layout *L, FILE *f);

void part_free(part_layout *L);

#endif
