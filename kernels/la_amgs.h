/*
 * la_amgs.h: host side of amg_setup.cl, the steps of one level of the
 * smoothed-aggregation set-up on the device. solver/amg/amg_dsetup.c runs
 * the level loop with them; each step's host twin is named beside it and
 * the tests (tests/unit/test_amg_dsetup.c) hold the two to the same
 * aggregates and operators.
 *
 * Every call enqueues its kernels on la's queue; the calls that return a
 * count to the host (the aggregation's rounds, the row pointers' totals,
 * the Lanczos sums) read it back, which also orders what came before.
 */
#ifndef CLS_KERNELS_LA_AMGS_H
#define CLS_KERNELS_LA_AMGS_H

#include "la.h"
#include "la_sparse.h"

typedef struct la_amgs {
    cl_program prog;
    cl_kernel k_diag, k_mis_init, k_mis_m1, k_mis_m2, k_root_flags, k_agg1, k_agg2, k_agg_sizes,
        k_tval, k_prolong_rows, k_compact, k_tr_count, k_tr_scatter, k_rank_sort, k_dinv,
        k_lz_start, k_lz_w, k_lz_orth, k_from_sell, k_mis_m1_team, k_mis_m2_team;
    size_t ls, groups; /* the grid of every grid-stride kernel */
    cl_mem part;       /* per-group partial sums (groups doubles) */
    cl_mem ctr;        /* one int counter read back by the host */
    la_sparse sp;      /* the scan and the sparse product */
} la_amgs;

int la_amgs_init(la_ctx *la, la_amgs *k, cls_error *err);
void la_amgs_release(la_amgs *k);

/* kr over rows [0, n) on the set-up's grid (grid-stride kernels) */
int la_amgs_run(la_ctx *la, la_amgs *k, cl_kernel kr, const char *name, int64_t n, cls_error *err);
/* count int32 entries of m set to v; one int32 of m read back (blocking) */
int la_amgs_fill_int(la_ctx *la, cl_mem m, cl_int v, size_t count, cls_error *err);
int la_amgs_read_int(la_ctx *la, cl_mem m, cl_int *v, cls_error *err);

/* a device buffer of `bytes` (la's context, read-write) */
int la_amgs_buffer(la_ctx *la, size_t bytes, cl_mem *m, cls_error *err);

/* int32 row pointers of n rows (n + 1 entries, converted in parallel), or
 * NULL out of memory; the caller frees */
cl_int *la_amgs_rowptr32(const int64_t *rowptr, int64_t n);

/* D = the CSR arrays of S, a SELL-C-sigma la_csr of the host matrix whose
 * row pointers are rowptr (only those are uploaded): D's buffers made */
int la_amgs_csr_from_sell(la_ctx *la, la_amgs *k, const la_csr *S, const int64_t *rowptr,
                          la_dcsr *D, cls_error *err);

/* A's CSR arrays on the device for a set-up: dA0's own when it is in a
 * CSR form (borrowed, *owned = 0), else rebuilt from dA0's SELL copy, else
 * uploaded from the host's A (*owned = 1: D's buffers are the caller's).
 * dA0 (may be NULL) must be A's device copy. */
int la_amgs_csr_of(la_ctx *la, la_amgs *k, const csr_matrix *A, const la_csr *dA0, la_dcsr *D,
                   int *owned, cls_error *err);

/* diag = a_ii, dsq = 1/sqrt|a_ii| (amg_par_diag, amg_strength.c); *bad =
 * the first row whose a_ii is not positive, or -1 */
int la_amgs_diag(la_ctx *la, la_amgs *k, const la_dcsr *A, cl_mem diag, cl_mem dsq, int64_t *bad,
                 cls_error *err);

/* agg = the aggregates of A's strength graph at threshold theta
 * (amg_aggregate.c: the distance-2 MIS of the same tuples, phases 1 and
 * 2); *naggs = the roots; *left = nodes with strong edges that phase 2
 * left free (phase 3 is the host's: the caller falls back when > 0);
 * *rounds = MIS rounds run. Rows of AMGS_TEAM_MIN_ROW entries or more on
 * average are walked by a team of work-items each in the MIS rounds
 * (amgs_mis_*_team; CLSOLVE_AMGS_TEAM=0 or 1 forces one way, for the
 * tests and measurements) */
#define AMGS_TEAM_MIN_ROW 6.0
int la_amgs_aggregate(la_ctx *la, la_amgs *k, const la_dcsr *A, cl_mem dsq, double theta,
                      cl_mem agg, int64_t *naggs, int64_t *left, int *rounds, cls_error *err);

/* the same as la_amgs_prolong with T's values given per aggregate (tval,
 * naggs doubles; NULL: from the sizes): a part's rows of a prolongator
 * coupled across parts, whose ghost columns (A rectangular, local columns
 * first) belong to other parts' aggregates (agg: one per column, global) */
int la_amgs_prolong_t(la_ctx *la, la_amgs *k, const la_dcsr *A, cl_mem diag, cl_mem agg,
                      cl_mem tval, int64_t naggs, double omega, la_dcsr *P, cls_error *err);
/* P = (I - omega D^-1 A) T(agg) (amg_prolongator); P's buffers created */
int la_amgs_prolong(la_ctx *la, la_amgs *k, const la_dcsr *A, cl_mem diag, cl_mem agg,
                    int64_t naggs, double omega, la_dcsr *P, cls_error *err);

/* T = M' with sorted rows (amg_transpose); T's buffers created */
int la_amgs_transpose(la_ctx *la, la_amgs *k, const la_dcsr *M, la_dcsr *T, cls_error *err);

/* dinv = 1/a_ii, or 1/sum_j |a_ij| with l1 */
int la_amgs_dinv(la_ctx *la, la_amgs *k, const la_dcsr *A, cl_mem diag, int l1, cl_mem dinv,
                 cls_error *err);

/* `steps` Lanczos steps for lambda_max(D^-1 A) in the D inner product
 * (amg_eig.c), the SpMV by la_spmv on dA: alpha[0..*k), beta[0..*k) of the
 * tridiagonal T_k (steps <= 64) */
int la_amgs_lanczos(la_ctx *la, la_amgs *k, const la_csr *dA, cl_mem diag, int steps, double *alpha,
                    double *beta, int *kout, cls_error *err);

#endif
