/*
 * gen_rows.h: the stencil systems of gen.h on a possibly anisotropic grid,
 * generated one row block at a time, so every rank of a distributed solve
 * builds only its own rows and no rank ever holds the whole matrix.
 *
 * A spec names the system: "poisson3d:320" (320^3), "poisson3d:256x256x512"
 * (nx x ny x nz), "poisson2d:1000" or "poisson2d:2000x500", "poisson3d27:64".
 * Row i is grid point (x, y, z) with i = x + nx (y + ny z), x fastest, and
 * the values are gen.c's (diagonal 4, 6 or 26, neighbours -1, Dirichlet
 * boundaries), so "poisson3d:N" is exactly `clsolve gen poisson3d N`.
 *
 * The kinds and their names live here, at the bottom, because both the
 * spec parser below and gen.h's one-size matrices need them; gen.h builds
 * on this file and never the reverse.
 */
#ifndef CLS_MATRICES_GEN_ROWS_H
#define CLS_MATRICES_GEN_ROWS_H

#include <stdint.h>

#include "../common/error.h"
#include "csr.h"

typedef enum { GEN_POISSON2D, GEN_POISSON3D, GEN_POISSON3D27 } gen_kind;

/* Parses "poisson2d" | "poisson3d" | "poisson3d27"; returns -1 if unknown. */
int gen_kind_parse(const char *name, gen_kind *k);
const char *gen_kind_name(gen_kind k);

typedef struct gen_grid {
    gen_kind kind;
    int64_t nx, ny, nz; /* nz = 1 for poisson2d */
} gen_grid;

/* Parses a spec (above). Fails with CLS_EUSAGE naming what is wrong, also
 * when the rows exceed 32-bit column indices. */
int gen_grid_parse(const char *spec, gen_grid *g, cls_error *err);

int64_t gen_grid_rows(const gen_grid *g);
int64_t gen_grid_row_nnz(const gen_grid *g, int64_t row);
int64_t gen_grid_nnz(const gen_grid *g);

/* Rows [r0, r1) with global column indices; B->nrows = r1 - r0,
 * B->ncols = all rows, B->rowptr starts at 0. */
int gen_grid_rows_csr(const gen_grid *g, int64_t r0, int64_t r1, csr_matrix *B,
                      cls_error *err);

#endif
