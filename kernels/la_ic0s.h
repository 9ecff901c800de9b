/*
 * la_ic0s.h: the IC(0) factor built on the device (ic0_setup.cl): Chow and
 * Patel's fixed-point sweeps instead of the host's row-by-row
 * factorization in dependency order (solver/pc/pc_ic0.c), so a GPU solve
 * with --precond ic0 does not wait seconds for the host. The result is the
 * la_tri pair pc_ic0.c applies (L's strict part and 1/l_ii, U = L' by the
 * device transpose), in double precision. With enough sweeps (the depth of
 * the dependency graph) it is the host's factor within rounding
 * (tests/unit/test_ic0s.c); with the default few it is a close
 * approximation whose preconditioner costs the same iterations within a
 * few percent (docs/preconditioners.md).
 */
#ifndef CLS_KERNELS_LA_IC0S_H
#define CLS_KERNELS_LA_IC0S_H

#include "la.h"
#include "la_amgs.h"
#include "la_pc.h"

/* sweeps of the device factorization unless CLSOLVE_IC0_SETUP_SWEEPS says */
#define LA_IC0S_SWEEPS 5

typedef struct la_ic0s {
    cl_program prog;
    cl_kernel k_count, k_fill, k_guess, k_sweep, k_dl;
    la_amgs a; /* the scan, the transpose, the CSR arrays of A */
} la_ic0s;

int la_ic0s_init(la_ctx *la, la_ic0s *k, cls_error *err);
void la_ic0s_release(la_ic0s *k);

/* L and U = L' of IC(0) of the SPD matrix A (host copy A, device copy dA
 * or NULL: la_amgs_csr_of) with the diagonal scaled by 1 + shift, by
 * `sweeps` sweeps (0: LA_IC0S_SWEEPS or CLSOLVE_IC0_SETUP_SWEEPS). *bad: the
 * first row without a positive diagonal or whose pivot failed, or -1
 * (then L and U are made; otherwise nothing is kept). */
int la_ic0s_factor(la_ctx *la, la_ic0s *k, const csr_matrix *A, const la_csr *dA, double shift,
                   int sweeps, la_tri *L, la_tri *U, int64_t *bad, cls_error *err);

#endif
