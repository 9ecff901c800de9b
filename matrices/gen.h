/*
 * gen.h: generated test systems, the standard finite-difference stencils.
 *
 * poisson2d N : 5-point Laplacian on an N x N grid (N^2 rows), diag 4, off -1
 * poisson3d N : 7-point Laplacian on N^3 (N^3 rows), diag 6, off -1
 * poisson3d27 N: 27-point stencil on N^3 as in HPCG (diag 26, off -1)
 * Dirichlet boundaries (neighbours outside the grid are dropped), so every
 * matrix is symmetric positive definite. Rows are built in parallel straight
 * into CSR: poisson3d 320 (32.8 M rows) takes no triplet detour.
 *
 * The kinds (gen_kind and its names) belong to gen_rows.h, the row-block
 * generator beneath this file: this file only picks the cubic grid of one
 * size, so the includes run one way, gen.h -> gen_rows.h.
 */
#ifndef CLS_MATRICES_GEN_H
#define CLS_MATRICES_GEN_H

#include <stdint.h>

#include "../common/error.h"
#include "csr.h"
#include "gen_rows.h"

/* Builds the matrix for grid size n (n >= 1). Fails (CLS_EUSAGE) when the
 * row count or nonzeros would overflow 32-bit column indices. */
int gen_matrix(gen_kind k, int64_t n, csr_matrix *A, cls_error *err);

#endif
