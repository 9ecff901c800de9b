/*
 * pc.h: the preconditioners of the one CG engine, z = M^-1 r, and the
 * interface every one of them meets.
 *
 *   none        M = I
 *   jacobi      M = D (pc_jacobi.c; cg.c / dcg.c keep the fused
 *               diagonal fast path)
 *   chebyshev   M^-1 = p(D^-1 A) D^-1, p the Chebyshev polynomial of chosen
 *               degree for 1/t on [lmin, 1.1 lmax] of D^-1 A, the bounds
 *               from a few Lanczos steps (pc_cheby.c): SpMVs and vector
 *               updates only, a true global polynomial (halo exchanges)
 *   ic0         incomplete Cholesky IC(0) of each part's diagonal block
 *               (block Jacobi across parts, as PETSc's parallel ICC), with
 *               a Manteuffel shift when a pivot is not positive
 *               (pc_ic0.c)
 *   amg         smoothed-aggregation AMG, one V-cycle per part's block
 *               (pc_amg.c over solver/amg/)
 *   auto        resolved before the solve (pc_resolve; docs/preconditioners.md)
 * Every M is symmetric positive definite, so preconditioned CG's theory
 * holds; tests/unit/test_pc.c checks y'Mx = x'My and x'Mx > 0.
 *
 * Names and parameters: pc_options.h (pc_options_set is the one function
 * every front end reads them with). The kinds are kinds.def's rows, each
 * one file that meets pc_kind.h; this header is what the engine sees.
 *
 * Lifetime. pc_setup is collective over the dsys (every rank, same
 * options): per-part set-ups run on the host (multithreaded where it
 * matters) and go up to each part's device; a set-up is reused by content
 * hash of the part's block (pc_cache: a process-wide cache, so a daemon's
 * rank that meets the same matrix again skips the build; info.reused says
 * so). pc_apply is the distributed z = M^-1 r over every part (errors are
 * sticky, as dvec.h's operations); pc_apply_one is the one-part form the
 * device-side fused loop calls.
 */
#ifndef CLS_SOLVER_PC_H
#define CLS_SOLVER_PC_H

#include <stdint.h>

#include "../../kernels/la_pc.h"
#include "pc_options.h"
#include "../krylov/krylov.h"
#include "../dist/dvec.h"

/* ------------------------------------------------------------------- info */

typedef struct pc_info {
    solver_precond type; /* as run (auto resolved) */
    int parts_built, parts_reused;
    int parts_resetup;   /* of the built: a numeric re-set-up of a cached one's pattern (amg) */
    double setup_s;      /* this rank's set-up (host build + upload), max over ranks */
    double build_s;      /* of which the host build (0 when reused) */
    int degree, lanczos; /* chebyshev */
    double lmin, lmax;   /* chebyshev: the Lanczos estimates of D^-1 A */
    double lo, hi;       /* chebyshev: the interval the polynomial is built on */
    int sweeps;          /* ic0 */
    double shift;        /* ic0: the largest diagonal shift any part needed (0: none) */
    int shifted_parts;   /* ic0: parts that needed one */
    int64_t factor_nnz;  /* ic0: entries of L over all parts */
    int levels;          /* ic0 exact / amg: the largest part's levels */
    int on_device;       /* ic0, amg: set up on the device (--precond-setup) */
    char note[256];      /* a human note (shift applied, ...), "" when none */
    char amg[1024];      /* amg: amg_describe's JSON object text, "" otherwise */
} pc_info;

/* ---------------------------------------------------------------- objects */

struct pc_kind;
/* per part: the kernels a kind may ask for, and the kind's own state */
typedef struct pc_part {
    la_ctx *la;
    la_pck k; /* made by pc_part_kernels at the first device apply */
    int have_k;
    void *state; /* the kind's (pc_ic0.c, pc_amg.c), freed by its release */
} pc_part;

typedef struct pc {
    solver_precond type;
    const struct pc_kind *kind; /* kinds.def's row for type */
    pc_options opt;
    pc_info info;
    dsys *s;
    int nmine;
    pc_part *part;
    dvec dinv;         /* D^-1 when the kind asks for it (jacobi, chebyshev) */
    double *dinv_host; /* one part: its host copy, in the part's (= device) order */
    void *state;       /* the kind's whole-system state (pc_cheby.c), freed by its release */
    int device_only;   /* the set-up left M on the device only (amg set up there):
                        * no native form */
    /* z = M^-1 r over every part when M is global (collective): the kind's
     * apply, or what its set-up chose (amg coupled across parts); NULL:
     * the kind's apply_part on each part */
    void (*apply)(struct pc *pc, const dvec *r, dvec *z);
} pc;

/* Collective: builds M for the system s (parts' matrices A, halo, device
 * order) with o->type already resolved. Returns this rank's outcome: a rank
 * whose own set-up worked returns CLS_OK even when another failed (the
 * collective steps are skipped on every rank then); the caller agrees
 * (dsolve_agree), which names the failing rank's message. */
int pc_setup(dsys *s, const pc_options *o, pc *pc, cls_error *err);
/* z = M^-1 r over every part (z, r local vectors); sticky errors (dvec.h).
 * Collective for chebyshev (halo exchanges); local for the others. */
void pc_apply(pc *pc, const dvec *r, dvec *z);
/* z[c] = M^-1 r[c] for ncols columns (several right-hand sides solved
 * together, krylov/dbcg.c): one block application where the kind has one
 * (amg: one V-cycle of SpMMs), else pc_apply column by column. */
void pc_apply_block(pc *pc, int ncols, const dvec *const *r, dvec *const *z);
/* 1: the kind applies several columns at once (pc_apply_block shares work) */
int pc_has_block(const pc *pc);
/* 1: the type reads D^-1 (pc_diag; auto may resolve to such a type), so
 * the input's check makes it while it reads the values (dsolve) */
int pc_may_use_diag(solver_precond t);
/* The one-part form, for cg_options.apply (ctx = the pc): z = M^-1 r on
 * part 0's device, enqueued without blocking. */
int pc_apply_one(void *ctx, const la_vec *r, la_vec *z, cls_error *err);
/* The native form (kernels/cpu/, for solver/krylov/pcg.c's native loop):
 * pc_has_host says whether the kind has one and the system is one part
 * in its own order (no ghosts, no renumbering); pc_apply_host (a
 * cg_apply_host_fn, ctx = the pc) computes z = M^-1 r on host arrays with
 * the workspace's team: the same M as pc_apply_one's kernels. */
int pc_has_host(const pc *pc);
struct cpu_ws;
struct cpu_csr;
int pc_apply_host(void *ctx, const struct cpu_ws *ws, const struct cpu_csr *A, const double *r,
                  double *z, cls_error *err);
void pc_release(pc *pc);

/* The info as a JSON object (for --json and the job record). */
struct json_t;
struct json_t *pc_info_json(const pc_info *info);

/* Process-wide cache of host set-ups (pc_base.c): emptied at exit by the CLI,
 * never by the daemon between jobs. CLSOLVE_PC_CACHE=0 turns it off. */
void pc_cache_clear(void);
/* 1: also keep set-ups that live on a device (pc_kind.h); the daemon's
 * processes call it, the CLI does not. pc_cache_clear must then come
 * before the warm devices' release. */
void pc_cache_device_enable(int on);

/* ------------------------------- host pieces the tests call, _ref twins */

/* the part's local block (own rows and columns) in device order, CSR with
 * 64-bit row pointers from 0; malloc'ed arrays */
int pc_local_block(const dpart *p, csr_matrix *B, cls_error *err);
/* the part's rows in device order: local_only keeps the own columns (the
 * block), else ghost columns stay nlocal + g; local columns in device
 * order; sorted: columns ascending in each row, else in A's order. On
 * every core; pc_local_block is (p, 1, 1) */
int pc_part_rows(const dpart *p, int local_only, int sorted, csr_matrix *B, cls_error *err);
/* 64-bit content hash of a CSR block (rows, columns, values) */
uint64_t pc_hash_csr(const csr_matrix *B);
/* 64-bit content hash of a part's rows (global rows, columns and values) */
uint64_t pc_hash_part(const dpart *p);

/* the host double reference of M^-1 r for tests (one part, natural order) */
void pc_cheby_ref(const csr_matrix *A, const double *dinv, int degree, double lo, double hi,
                  const double *r, double *z);
/* coefficients of the recurrence for [lo, hi] and degree */
void pc_cheby_coeffs(int degree, double lo, double hi, double *c0, double *c1, double *c2);
/* A set-up chebyshev pc's recurrence (degree and coefficients; its diagonal
 * is pc->dinv), for a loop that applies it itself (cg-small's kernel).
 * CLS_EOTHER for another kind. */
int pc_cheby_coef(const pc *pc, la_cheb_coef *out, cls_error *err);
/* A set-up ic0 pc's device triangles on part 0 (L, U = L^T) and its sweeps,
 * for a loop that applies them itself (cg-small's kernel). CLS_EINPUT for
 * the exact level solve (--precond-sweeps 0), CLS_EOTHER for another kind. */
int pc_ic0_tri(const pc *pc, const la_tri **l, const la_tri **u, int *sweeps, cls_error *err);
/* the extreme eigenvalues of a symmetric tridiagonal matrix (diag a[0..m),
 * off-diagonal b[0..m-1)) by bisection on Sturm counts */
void pc_tridiag_extremes(int m, const double *a, const double *b, double *lmin, double *lmax);

/* An IC(0) factor on the host: L = D_L + N, N strictly lower in CSR
 * (int32), dl = 1/diag(L), and the transposed U = D_L + N' with its own
 * CSR; levels of both for the exact solve. */
typedef struct pc_ic0_factor pc_ic0_factor;
struct pc_ic0_factor {
    int64_t n;
    int32_t *lrow, *lcol, *urow, *ucol;
    double *lval, *uval, *dl;
    int32_t *lrows, *urows; /* rows by level */
    int64_t *llev, *ulev;   /* level offsets */
    int nllev, nulev;
    double shift; /* the diagonal shift used (fraction of a_ii) */
    int restarts; /* factorizations tried before it */
};
/* IC(0) of the SPD block B (sorted columns, diagonal present) with the
 * smallest shift from shift0, 1e-3, 2e-3, ... that keeps every pivot
 * positive. */
int pc_ic0_factor_build(const csr_matrix *B, double shift0, pc_ic0_factor *f, cls_error *err);
void pc_ic0_factor_free(pc_ic0_factor *f);
/* z = U^-1 L^-1 r on the host (exact, double): the tests' reference */
void pc_ic0_ref(const pc_ic0_factor *f, int sweeps, const double *r, double *z);

#endif
