/*
 * amg_priv.h: what the files of the AMG set-up share (amg.h is the public
 * contract). One operation per file:
 *   amg.c           options, the level loop of amg_build, info, describe
 *   amg_par.c       parallel loops: chunks, SpMV, dot, diagonal
 *   amg_strength.c  strength-of-connection graph
 *   amg_aggregate.c MIS(2) aggregation
 *   amg_eig.c       lambda_max(D^-1 A) by Lanczos
 *   amg_prolong.c   smoothed prolongator
 *   amg_rap.c       transpose, sparse product, Galerkin triple product
 *   amg_coarse.c    dense Cholesky inverse of the coarsest operator
 *   amg_ref.c       the plain host V-cycle (reference)
 *   amg_device.c    upload and the device V-cycle
 *
 * Determinism: every set-up loop runs over fixed chunks of rows, writes
 * only its own rows or per-chunk outputs, and every sum runs in a fixed
 * order (reductions over fixed blocks of AMG_BLOCK rows, added in block
 * order), so a hierarchy is the same bits on any number of threads.
 */
#ifndef CLS_SOLVER_AMG_PRIV_H
#define CLS_SOLVER_AMG_PRIV_H

#include <stdint.h>

#include "amg.h"
#include "../../kernels/la_amg.h"
#include "../../kernels/la_spmm.h"

/* rows per fixed block of the deterministic reductions and per parallel
 * grain (large enough that a block's work dwarfs a thread start) */
#define AMG_BLOCK 4096
#define AMG_GRAIN 8192
/* the coarsest level is inverted densely up to this many rows; beyond it
 * (coarsening stalled at max_levels) it is smoothed instead */
#define AMG_DENSE_MAX 2048

/* A graph in CSR form without values: the strength graph S (no diagonal). */
typedef struct amg_graph {
    int64_t n;
    int64_t *ptr; /* n + 1 */
    int32_t *adj;
    float *w; /* |a_ij| / sqrt(|a_ii a_jj|) per edge: the strength */
} amg_graph;

typedef struct amg_level {
    csr_matrix A; /* the level's operator; level 0: a borrowed view of the input */
    int own_A;
    csr_matrix P, R; /* to the next level (empty on the coarsest); R = P' */
    double *dinv;    /* the smoother's inverse diagonal (1/a_ii or 1/sum|a_ij|) */
    double lmax;     /* estimate of lambda_max(D^-1 A), D = diag(A) */
    int64_t naggs;
    int32_t *agg; /* row i's aggregate (-1: none), kept for amg_rebuild; NULL on the last */
} amg_level;

struct amg_hierarchy {
    amg_options opt;
    int nlevels;
    amg_level lev[AMG_MAX_LEVELS];
    int coarse_direct;  /* 1: coarse_inv holds the coarsest level's inverse */
    double *coarse_inv; /* n x n, row major, exactly symmetric */
    double t_strength, t_aggregate, t_prolong, t_rap, t_coarse, t_build;
    int threads;
    int rebuilt; /* amg_rebuild made it: the aggregates of an earlier hierarchy */
};

/* Chebyshev coefficients of one level: pre- and post-smoothing use the same
 * polynomial, so the V-cycle is symmetric. d0 = c0 D^-1 r0, then for
 * k = 1..degree-1: d_k = c1[k] d_{k-1} + c2[k] D^-1 r_k (Saad, Iterative
 * Methods, 2nd ed., Algorithm 12.1). */
typedef struct amg_cheb {
    int degree;
    double c0, c1[32], c2[32];
} amg_cheb;
void amg_cheb_coeffs(const amg_options *opt, double lmax, amg_cheb *c);

/* parallel loops (amg_par.c): fn(ctx, thread, chunk, begin, end) over the
 * fixed chunks [k chunk, (k+1) chunk) of [0, n), handed out dynamically;
 * thread < amg_nthreads() indexes per-thread scratch */
typedef void (*amg_chunk_fn)(void *ctx, int thread, int64_t chunk, int64_t begin, int64_t end);
void amg_par_chunks(int64_t n, int64_t chunk, amg_chunk_fn fn, void *ctx);
int64_t amg_nchunks(int64_t n, int64_t chunk);
int amg_nthreads(void);
/* ptr[i + 1] holds row i's count on entry, the offsets on return (ptr[0]
 * = 0); returns ptr[n] */
int64_t amg_par_offsets(int64_t *ptr, int64_t n);
double amg_par_dot(const double *x, const double *y, int64_t n);
void amg_par_spmv(const csr_matrix *A, const double *x, double *y);
/* d[i] = a_ii of each row (0 where absent) */
void amg_par_diag(const csr_matrix *A, double *d);

int amg_strength(const csr_matrix *A, const double *diag, double threshold, amg_graph *S,
                 cls_error *err);
void amg_graph_free(amg_graph *S);

/* agg[i] = the aggregate of row i, or -1 (no strong connection: left out
 * of the coarse space); *naggs gets the count. */
int amg_aggregate(const amg_graph *S, int32_t *agg, int64_t *naggs, cls_error *err);

/* Estimate of lambda_max(D^-1 A) by `steps` Lanczos steps in the D inner
 * product from a fixed start vector (amg_eig.c). */
int amg_lambda_max(const csr_matrix *A, const double *diag, int steps, double *lmax,
                   cls_error *err);
/* P = (I - omega D^-1 A) T with T the normalised aggregate indicator. */
int amg_prolongator(const csr_matrix *A, const double *diag, const int32_t *agg, int64_t naggs,
                    double omega, csr_matrix *P, cls_error *err);

/* the same with T(j, agg(j)) given per column j of A (tnode; agg and tnode
 * have A->ncols entries, aggregates numbered below naggs) */
int amg_prolongator_t(const csr_matrix *A, const double *diag, const int32_t *agg,
                      const double *tnode, int64_t naggs, double omega, csr_matrix *P,
                      cls_error *err);
int amg_transpose(const csr_matrix *A, csr_matrix *T, cls_error *err);
/* amg_coupled_rows' pieces, shared with its device twin (amg_dsetup.c):
 * the shapes checked; X = [P; G] stacked */
int amg_coupled_check(const csr_matrix *A, const csr_matrix *P, const csr_matrix *G,
                      cls_error *err);
int amg_coupled_stack(const csr_matrix *P, const csr_matrix *G, csr_matrix *X, cls_error *err);
/* C = A B (sorted: columns sorted in each row; otherwise in the order the
 * row first met them) */
int amg_spgemm(const csr_matrix *A, const csr_matrix *B, int sorted, csr_matrix *C, cls_error *err);
/* Ac = R A P */
int amg_rap(const csr_matrix *A, const csr_matrix *P, const csr_matrix *R, csr_matrix *Ac,
            cls_error *err);

/* The same three with the result's pattern given (amg_rebuild: an earlier
 * hierarchy's T, C, Ac for the same patterns): only the values are made,
 * the full steps' bits; CLS_EOTHER when the pattern does not fit. */
int amg_transpose_values(const csr_matrix *A, csr_matrix *T, cls_error *err);
int amg_spgemm_values(const csr_matrix *A, const csr_matrix *B, csr_matrix *C, cls_error *err);
int amg_rap_values(const csr_matrix *A, const csr_matrix *P, const csr_matrix *R, csr_matrix *Ac,
                   cls_error *err);

/* inv = A^-1 (dense, symmetrised) by Cholesky; CLS_EBREAKDOWN when a pivot
 * is not positive (A not SPD to working precision). */
int amg_dense_inverse(const csr_matrix *A, double **inv, cls_error *err);

/* The hierarchy on one device (amg_device.c uploads a host hierarchy into
 * it, amg_dsetup.c builds its fine levels there): per level the operator,
 * P and R = P' as la_csr, the smoother's inverse diagonal and Chebyshev
 * coefficients, and the V-cycle's vectors. */
typedef struct dev_level {
    la_csr A, P, R;
    const la_csr *Ause; /* &A, or the caller's fine matrix */
    la_vec dinv, x, b, r, d, q;
    /* amg_apply_block: the same five of columns 1..7 (column 0: the above),
     * made at the first block apply */
    la_vec cx[8], cb[8], cr[8], cd[8], cq[8];
    int ncols; /* columns with vectors (1: only the above) */
    /* amg_apply_block's row-major blocks of bkw columns (x, b, r, d, q of
     * n x bkw entries; made at the first block apply of that width) */
    la_vec bx, bb, br, bd, bq;
    int bkw;
    amg_cheb cheb;
    int64_t n;
    cl_mem agg; /* amg_options.keep_aggregates: the device set-up's aggregates */
    int64_t naggs;
} dev_level;

struct amg_device {
    la_amg k;
    int nlevels;
    amg_smoother smoother;
    int degree;
    dev_level lev[AMG_MAX_LEVELS];
    cl_mem coarse_inv;
    int coarse_direct;
    double upload_s;
    int built;   /* 1: amg_build_device made it (info below) */
    la_spmmk sk; /* amg_apply_block's SpMM kernels (made at its first use) */
    int have_sk;
    int fuse;      /* the row-major V-cycle's SpMMs fused with their updates */
    amg_info info; /* its levels and set-up times */
    int fine_borrowed; /* amg_device_detach: level 0's operator was the solve's */
    int rebuilt;       /* amg_rebuild_device: every device level's aggregates given */
};

/* Uploads host level l of h as device level ld of d (ld > 0 gets the
 * V-cycle's x and b); dA0: level 0's operator already on the device. */
int amg_upload_level(amg_device *d, const amg_hierarchy *h, int l, int ld, la_ctx *la,
                     const la_csr *dA0, la_spmv_variant fmt, cls_error *err);
/* CLS_EUSAGE with a message when an option is out of range */
int amg_options_check(const amg_options *o, cls_error *err);
/* largest eigenvalue of the symmetric tridiagonal (a[0..k), b[0..k-1)) */
double amg_tridiag_max_eig(const double *a, const double *b, int k);

#endif
