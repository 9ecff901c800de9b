/*
 * test_amg_gen.h: the random SPD matrices the AMG tests (test_amg.c,
 * test_amg_device.c) run on, fresh each run from check.h's generator:
 *   kind 0: 2D grid, log-uniform random edge weights (jumping coefficients)
 *   kind 1: 2D grid, anisotropic (a random small eps in x)
 *   kind 2: random sparse graph, off-diagonals of both signs
 * Each is a weighted graph Laplacian (|w| on the diagonal for every edge)
 * plus a small positive shift on every row: strictly diagonally dominant
 * with a positive diagonal, hence SPD.
 */
#ifndef CLS_TEST_AMG_GEN_H
#define CLS_TEST_AMG_GEN_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "matrices/csr.h"

static void coo_put(coo_matrix *C, int64_t i, int64_t j, double v)
{
    if (C->nnz == C->cap) {
        C->cap = C->cap ? 2 * C->cap : 1024;
        C->row = realloc(C->row, (size_t)C->cap * sizeof *C->row);
        C->col = realloc(C->col, (size_t)C->cap * sizeof *C->col);
        C->val = realloc(C->val, (size_t)C->cap * sizeof *C->val);
    }
    C->row[C->nnz] = (int32_t)i;
    C->col[C->nnz] = (int32_t)j;
    C->val[C->nnz++] = v;
}

/* a symmetric edge of weight w (> 0 couples like a Laplacian: -w off the
 * diagonal, +|w| on both diagonals) */
static void coo_edge(coo_matrix *C, int64_t i, int64_t j, double off)
{
    coo_put(C, i, j, off);
    coo_put(C, j, i, off);
    coo_put(C, i, i, fabs(off));
    coo_put(C, j, j, fabs(off));
}

/* kind 0: 2D grid, random log-uniform edge weights (jumping coefficients)
 * kind 1: 2D grid, anisotropic (eps in x)
 * kind 2: random sparse graph, off-diagonals of both signs
 * every row gets a small positive shift: SPD (diagonally dominant) */
static void random_spd(int kind, int64_t n_hint, csr_matrix *A)
{
    coo_matrix C;
    coo_init(&C);
    int64_t n;
    if (kind < 2) {
        int64_t nx = (int64_t)sqrt((double)n_hint), ny = n_hint / nx;
        n = nx * ny;
        double eps = 1e-3 + 0.1 * check_uniform();
        for (int64_t y = 0; y < ny; y++)
            for (int64_t x = 0; x < nx; x++) {
                int64_t i = y * nx + x;
                double wx = kind == 0 ? pow(10.0, -2.0 * check_uniform()) : eps;
                double wy = kind == 0 ? pow(10.0, -2.0 * check_uniform()) : 1.0;
                if (x + 1 < nx)
                    coo_edge(&C, i, i + 1, -wx);
                if (y + 1 < ny)
                    coo_edge(&C, i, i + nx, -wy);
            }
    } else {
        n = n_hint;
        for (int64_t i = 0; i < n; i++) {
            int k = 1 + (int)(check_rand() % 4);
            for (int e = 0; e < k; e++) {
                int64_t j = (int64_t)(check_rand() % (unsigned long long)n);
                if (j != i)
                    coo_edge(&C, i, j, check_uniform() < 0.8 ? -check_uniform() : check_uniform());
            }
        }
    }
    for (int64_t i = 0; i < n; i++)
        coo_put(&C, i, i, 1e-3 + 0.05 * check_uniform());
    C.nrows = C.ncols = n;
    cls_error e;
    if (csr_from_coo(&C, A, NULL, &e)) {
        fprintf(stderr, "csr_from_coo: %s\n", e.msg);
        exit(1);
    }
    coo_free(&C);
}

#endif
