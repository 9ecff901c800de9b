/*
 * amg.h: smoothed-aggregation algebraic multigrid (SA-AMG) as a
 * preconditioner of CG: one symmetric V-cycle per application, z = M^-1 r.
 *
 * Set-up runs on the host (multithreaded through common/parallel.h, every
 * result independent of the thread count), on one part's local block:
 *   strength of connection -> MIS(2) aggregation -> tentative prolongator
 *   from the constant near-nullspace -> smoothed prolongator
 *   P = (I - w D^-1 A) T -> Galerkin coarse operator R A P (R = P') ->
 *   recursion until the level is small -> dense Cholesky inverse there.
 * amg_upload copies the levels to one device; amg_apply runs the V-cycle
 * there on kernels/la.h (la_spmv, BLAS-1) and kernels/la_amg.h (the
 * smoother's fused updates, the dense coarsest solve). amg_apply_ref is the
 * plain double V-cycle on the host that the tests hold the device one to.
 * Algorithm, parameters and measured figures: docs/amg.md.
 *
 * Across parts, AMG is applied per part (block Jacobi across parts): the
 * caller builds one hierarchy from each part's diagonal block; aggregates
 * never cross a part.
 *
 * Lifetimes: amg_build borrows A (level 0's operator is A itself, not a
 * copy): A must stay alive and unchanged until amg_free. amg_upload copies
 * every level (level 0 included, unless amg_upload_fine lends the caller's
 * own device copy of A); the device hierarchy does not need h afterwards.
 */
#ifndef CLS_SOLVER_AMG_H
#define CLS_SOLVER_AMG_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/error.h"
#include "../../kernels/la.h"
#include "../../matrices/csr.h"
#include "../krylov/krylov.h"

#define AMG_MAX_LEVELS 25
/* amg_options.host_rows' default: below it the kernels' launches and reads
 * cost more than the host's work on a level */
#define AMG_DSETUP_HOST_ROWS 5000

typedef enum {
    AMG_SMOOTHER_CHEBYSHEV, /* Chebyshev polynomial in D^-1 A (PETSc GAMG's default) */
    AMG_SMOOTHER_L1_JACOBI  /* x += D_l1^-1 (b - A x), D_l1 = diag(sum_j |a_ij|) */
} amg_smoother;

typedef struct amg_options {
    /* keep the edge i-j when |a_ij| > threshold * sqrt(|a_ii a_jj|): 0 keeps
     * every nonzero (PETSc's -pc_gamg_threshold; default 0) */
    double threshold;
    amg_smoother smoother;
    /* Chebyshev: polynomial degree (SpMVs per smoothing); l1-Jacobi: sweeps
     * (default 2 for both, PETSc GAMG's -mg_levels_ksp_max_it) */
    int degree;
    /* Chebyshev interval [lower, upper] * lambda_max(D^-1 A) (PETSc's
     * eigenvalue targets 0.1 and 1.1; the estimate is a Lanczos one) */
    double cheb_lower, cheb_upper;
    /* prolongator smoothing P = (I - w D^-1 A) T, w = omega_scale / lambda_max
     * (Vanek-Mandel-Brezina: 4/3; PETSc GAMG: 1.4); 0 gives plain aggregation */
    double omega_scale;
    int lanczos_steps;   /* steps of the lambda_max estimate (default 10) */
    int64_t coarse_size; /* stop coarsening at this many rows or fewer (default 128) */
    int max_levels;      /* levels at most, the finest included (default 10) */
    /* amg_build_device: a level of at most this many rows, and the levels
     * below it, are set up on the host (default AMG_DSETUP_HOST_ROWS) */
    int64_t host_rows;
    /* amg_build_device: keep each device level's aggregates in the
     * hierarchy, for a numeric re-set-up of the same pattern
     * (amg_device_take_aggregates; 4 bytes a row of those levels) */
    int keep_aggregates;
} amg_options;

typedef struct amg_hierarchy amg_hierarchy;
typedef struct amg_device amg_device;

/* What a hierarchy is (amg_info) and what its set-up cost, per phase. */
typedef struct amg_info {
    int levels;
    int64_t rows[AMG_MAX_LEVELS], nnz[AMG_MAX_LEVELS];
    double lambda_max[AMG_MAX_LEVELS]; /* estimated lambda_max(D^-1 A) per level */
    double operator_complexity;        /* sum nnz / nnz(A) */
    double grid_complexity;            /* sum rows / rows(A) */
    int coarse_direct;                 /* 1: coarsest solved by its dense inverse */
    /* seconds of amg_build by phase, summed over levels */
    double strength_s, aggregate_s, prolong_s, rap_s, coarse_s, build_s;
    int threads; /* host threads the set-up ran on */
    /* amg_build_device: levels set up by kernels (the rest on the host),
     * seconds of the host's levels and of the MIS rounds of level 0 */
    int device_levels, mis_rounds;
    double host_levels_s;
    double fine_csr_s; /* level 0's CSR arrays for the kernels (0: the solve's) */
} amg_info;

void amg_options_default(amg_options *opt);

/* Builds the hierarchy of A (square, symmetric positive definite; one
 * part's local block). opt NULL: the defaults. */
int amg_build(const csr_matrix *A, const amg_options *opt, amg_hierarchy **out, cls_error *err);
/* The numeric re-set-up (AmgX's resetup): the hierarchy of A, whose
 * pattern is that of the matrix `like` was built on (same rows, entries
 * and columns: compared here with like's level 0, which amg_build
 * borrowed and which must still be alive; another pattern is CLS_EUSAGE),
 * keeping like's aggregates and depth and making every value anew: the
 * diagonals, lambda_max, P, R, the coarse operators and the coarsest
 * inverse, with like's options. The strength graph and the MIS(2) rounds
 * are skipped. Where a level does not fit like's (its rows, or its P's
 * pattern), the levels below it are set up afresh (amg_is_rebuilt then
 * says 0). like stays the caller's and may be freed afterwards. */
int amg_rebuild(const csr_matrix *A, const amg_hierarchy *like, amg_hierarchy **out,
                cls_error *err);
/* 1: every level's aggregates came from the hierarchy amg_rebuild was given */
int amg_is_rebuilt(const amg_hierarchy *h);
void amg_free(amg_hierarchy *h);

/* Copies the hierarchy to la's device. la's configuration (la->cfg) is
 * left as it was: the levels keep their own SpMV formats. The V-cycle's
 * vectors come from la_vec_create, so a workspace the solve set aside with
 * la_pool_reserve should be reserved after amg_upload (or with 4 more
 * vectors of rows(A)): level 0 takes the smoother's diagonal and 3 work
 * vectors of that size. */
int amg_upload(amg_hierarchy *h, la_ctx *la, amg_device **out, cls_error *err);
/* As amg_upload, but level 0 uses dA0 (the caller's device copy of A, which
 * must outlive the device hierarchy) instead of a second copy. */
int amg_upload_fine(amg_hierarchy *h, la_ctx *la, const la_csr *dA0, amg_device **out,
                    cls_error *err);
/* As amg_upload_fine, with every uploaded matrix (A, P, R of each level) in
 * the given SpMV format instead of the one la_csr_upload picks for each
 * (LA_SPMV_AUTO); a format that cannot hold a matrix falls back as in
 * la_csr_upload. For tests and benchmarks. */
int amg_upload_with(amg_hierarchy *h, la_ctx *la, const la_csr *dA0, la_spmv_variant format,
                    amg_device **out, cls_error *err);
/* z = M^-1 r: one V-cycle from z = 0 (r and z: rows(A) entries, distinct).
 * Enqueues only; nothing is read back. */
int amg_apply(amg_device *d, la_ctx *la, const la_vec *r, la_vec *z, cls_error *err);
/* z[c] = M^-1 r[c] for k columns at once (k <= 8): one V-cycle whose
 * SpMVs are block SpMMs (kernels/la_spmm.h), so each level's A, R and P
 * are read once for the k columns; the vector updates stay per column.
 * Each column is amg_apply's V-cycle (within rounding: the SpMM sums in
 * its own order). Vectors for the extra columns are made at the first
 * call. Enqueues only. */
int amg_apply_block(amg_device *d, la_ctx *la, int k, const la_vec *const *r, la_vec *const *z,
                    cls_error *err);
void amg_device_release(amg_device *d);
/* Keeping a device hierarchy past its solve (pc_amg.c's device set-ups,
 * reused by later jobs on the same OpenCL context): amg_device_detach
 * takes its vectors out of the solve's la pool (released on their own from
 * then on) and forgets a level-0 operator borrowed from the solve (returns
 * 1 if it was); before the next apply, amg_device_bind_fine gives it that
 * solve's device copy of the same matrix (NULL where level 0 is its own). */
int amg_device_detach(amg_device *d);
int amg_device_bind_fine(amg_device *d, const la_csr *dA0, cls_error *err);
/* Seconds amg_upload took (host conversions, transfers, kernel build). */
double amg_device_upload_seconds(const amg_device *d);

/* The plain double V-cycle on the host (the reference the device one is
 * tested against, HPCG style): z = M^-1 r. */
int amg_apply_ref(const amg_hierarchy *h, const double *r, double *z, cls_error *err);

/* The same V-cycle on a team of threads (amg_native.c: the native CPU
 * loops' preconditioner), with work vectors made once per hierarchy:
 * z = M^-1 r, the reference's bits on any number of threads. */
typedef struct amg_native_ws amg_native_ws;
struct cls_team;
int amg_native_ws_create(const amg_hierarchy *h, amg_native_ws **out, cls_error *err);
void amg_native_ws_free(amg_native_ws *w);
int amg_apply_native(const amg_hierarchy *h, amg_native_ws *w, struct cls_team *team,
                     const double *r, double *z, cls_error *err);

/* The reference preconditioned CG (krylov/pcg_ref.c) with M = one V-cycle,
 * or NULL with dinv for Jacobi, or neither (amg_pcg.c): the solve of the
 * AMG tests and bench/amg_bench.c. Stops on the recurrence's
 * ||r|| / ||b|| <= tol or maxiter; breakdown: p'Ap or r'z not positive or
 * not finite (M or A not SPD). */
typedef pcg_ref_result amg_pcg_result;
int amg_pcg(la_ctx *la, const la_csr *A, const la_vec *b, la_vec *x, amg_device *M,
            const la_vec *dinv, double tol, int64_t maxiter, amg_pcg_result *res, cls_error *err);

/* Builds the hierarchy of A on la's device (amg_dsetup.c) and returns it
 * ready to apply: each level of more than opt->host_rows rows is set
 * up by kernels (kernels/amg_setup.cl, la_sparse.h: the same aggregates,
 * prolongator and R as amg_build's, RAP within rounding), the levels below
 * on the host by amg_build from the downloaded coarse operator. dA0: the
 * caller's device copy of A for level 0's SpMV (outlives the hierarchy),
 * or NULL (A is uploaded); A: the host copy (its CSR arrays are uploaded
 * for the set-up unless dA0 is in a CSR form). Double precision only: any
 * other is CLS_EUSAGE, and the caller builds on the host. A phase 3 of the
 * aggregation (a node left without an aggregate, rare: a strength graph
 * that is not symmetric) hands the level and the rest to the host. */
int amg_build_device(const csr_matrix *A, const amg_options *opt, la_ctx *la, const la_csr *dA0,
                     amg_device **out, cls_error *err);
/* The numeric re-set-up on the device (AmgX's resetup): a hierarchy of a
 * matrix with the pattern of an earlier one's keeps that one's aggregates,
 * and everything numeric is made anew (the diagonals, lambda_max, P, R,
 * R A P), the same as amg_rebuild on the host. amg_device_take_aggregates
 * moves the kept aggregates of d's device levels (amg_options.
 * keep_aggregates) into g; d keeps the rest and may be released at once,
 * so the two hierarchies are never on the device together.
 * amg_rebuild_device is amg_build_device with g's aggregates for the
 * device levels whose rows match, in order from level 0 (from a mismatch
 * on, the levels are aggregated afresh); it takes g's buffers (the unused
 * ones released) and leaves g empty. The few small levels set up on the
 * host are set up afresh. Whether the pattern is the same is the caller's
 * to know (pc_amg.c: the part's pattern hash); any aggregates of A's row
 * count give a valid prolongator, only a weaker one for another pattern. */
typedef struct amg_dagg {
    int levels;
    int64_t n[AMG_MAX_LEVELS], naggs[AMG_MAX_LEVELS];
    cl_mem agg[AMG_MAX_LEVELS]; /* n int32 each: the aggregate of each row */
} amg_dagg;
void amg_device_take_aggregates(amg_device *d, amg_dagg *g);
void amg_dagg_release(amg_dagg *g);
int amg_rebuild_device(const csr_matrix *A, const amg_options *opt, la_ctx *la, const la_csr *dA0,
                       amg_dagg *g, amg_device **out, cls_error *err);
/* 1: every device level of d took the aggregates amg_rebuild_device was given */
int amg_device_is_rebuilt(const amg_device *d);
/* The levels and set-up times of a hierarchy amg_build_device made (0), or
 * -1 for one uploaded from the host (use amg_get_info on that). */
int amg_device_info(const amg_device *d, amg_info *info);

void amg_get_info(const amg_hierarchy *h, amg_info *info);
/* One line per level and the totals into buf (truncated to len); returns
 * the length the whole text needs, as snprintf does. */
int amg_describe(const amg_hierarchy *h, char *buf, size_t len);

/* ------------------------- a hierarchy coupled across parts (amg_coupled.c) */
/* Level 0's aggregates of one part's block B (square, local numbering):
 * amg_build's diagonal check, strength and MIS(2) aggregation, the same
 * aggregates; agg has B->nrows entries (-1: in none). opt NULL: defaults. */
int amg_part_aggregates(const csr_matrix *B, const amg_options *opt, int32_t *agg, int64_t *naggs,
                        cls_error *err);
/* The same aggregates by the device set-up's kernels on la's device (B
 * uploaded): its diagonal check and MIS(2) rounds, the host's aggregates
 * (la_amgs_aggregate), downloaded into agg. Double precision only
 * (CLS_EUSAGE otherwise); a node the kernels leave free (the host's phase
 * 3) hands the whole aggregation to amg_part_aggregates. */
int amg_device_aggregates(const csr_matrix *B, const amg_options *opt, la_ctx *la, int32_t *agg,
                          int64_t *naggs, cls_error *err);
/* t[i] = T(i, agg[i]) = 1/sqrt(|aggregate of i|), 0 for a node in none */
void amg_tentative_values(const int32_t *agg, int64_t n, int64_t naggs, double *t);
/* A part's rows of P = (I - omega D^-1 A) T: A its rows (nlocal x (nlocal +
 * nghost), local columns first, rowptr from 0), agg and tnode per column
 * (the global aggregate and T's value of every local and ghost node, -1
 * and 0 for none), nc the global aggregates. P: nlocal x nc. */
int amg_part_prolongator(const csr_matrix *A, const int32_t *agg, const double *tnode, int64_t nc,
                         double omega, csr_matrix *P, cls_error *err);
/* The same rows by the device set-up's prolongator kernel on la's device
 * (A, agg and T's values per aggregate uploaded, P downloaded): the host's
 * P. Double precision only (CLS_EUSAGE otherwise, and past 32-bit indices). */
int amg_device_prolongator(la_ctx *la, const csr_matrix *A, const int32_t *agg,
                           const double *tnode, int64_t nc, double omega, csr_matrix *P,
                           cls_error *err);
/* A part's share of the coarse operator P'AP (the global P's rows: P for
 * the part's rows, G for its ghosts, nghost x nc): C = P' (A [P; G]),
 * nc x nc with sorted columns, nonzero in the rows of the aggregates P
 * touches; the coarse operator is the sum of the parts' C. */
int amg_coupled_rows(const csr_matrix *A, const csr_matrix *P, const csr_matrix *G,
                     csr_matrix *C, cls_error *err);
/* The same share by the device set-up's kernels on la's device (A, [P; G]
 * and P uploaded; la_spgemm twice, la_amgs_transpose; C downloaded): equal
 * within rounding (the products sum in another order), the same pattern.
 * Double precision only (CLS_EUSAGE otherwise, and past 32-bit indices). */
int amg_device_coupled_rows(la_ctx *la, const csr_matrix *A, const csr_matrix *P,
                            const csr_matrix *G, csr_matrix *C, cls_error *err);
/* T = A' (amg_rap.c's transpose) */
int amg_csr_transpose(const csr_matrix *A, csr_matrix *T, cls_error *err);
/* "chebyshev" | "l1-jacobi" (also "l1jacobi", "jacobi"); -1 if unknown. */
int amg_smoother_parse(const char *name, amg_smoother *s);
const char *amg_smoother_name(amg_smoother s);

#endif
