/*
 * dcg.h: the methods over a partitioned system: conjugate gradients across
 * ranks and devices (dcg.c, dpcg.c), pipelined CG (pipecg.c) and k
 * right-hand sides together (dbcg.c), written against dvec.h as cg.c is
 * against la.h; and the table of methods (methods.c) dsolve runs them by.
 *
 * All take the options and fill the result of krylov.h, with its meaning: stop
 * on the unpreconditioned ||r||/||b|| <= tol, confirmed on the true residual
 * b - Ax (restarting from it when the recurrence has drifted), or at maxiter;
 * breakdown on p'Ap <= 0 or NaN/Inf; the monitor (rank 0 only) may cancel.
 * Collective: every rank of the dsys calls with the same options, and all
 * return the same exit class at the same iteration. b and x are local
 * (x ghosted: it is the x of the true-residual SpMV); pc is the
 * preconditioner (pc.h; NULL: none): Jacobi takes the fused diagonal path,
 * any other runs the preconditioned single-reduction loop (dpcg.c; one part:
 * pcg.c).
 */
#ifndef CLS_SOLVER_DCG_H
#define CLS_SOLVER_DCG_H

#include "krylov.h"
#include "../dist/dvec.h"
#include "../pc/pc.h"

/* ||b|| across ranks, and the two ends every distributed method meets
 * before its first iteration: a non-finite b is CLS_EBREAKDOWN; b = 0 sets
 * x = 0, fills res as converged and sets *zero_rhs (the solve is over).
 * cap is the residual history's capacity (ksp_history_push). */
int ksp_dist_rhs_norm(dsys *s, const dvec *b, dvec *x, cg_result *res, int64_t *cap, double *bnorm,
                      int *zero_rhs, cls_error *err);

int dcg_solve(dsys *s, const dvec *b, dvec *x, pc *pc, const cg_options *opt, cg_result *res,
              cls_error *err);
/* The same with one reduction per iteration (cg_options.single_reduction):
 * --method cg-single. */
int dcg_single_solve(dsys *s, const dvec *b, dvec *x, pc *pc, const cg_options *opt, cg_result *res,
                     cls_error *err);

/* CG with its loop in one launch, one work-group (cg_small.c): --method
 * cg-small; one part only, no preconditioner or Jacobi (else CLS_EINPUT). */
int dcg_small_solve(dsys *s, const dvec *b, dvec *x, pc *pc, const cg_options *opt, cg_result *res,
                    cls_error *err);

/* The general-preconditioner loop over several parts (dcg_solve calls it). */
int dpcg_solve(dsys *s, const dvec *b, dvec *x, pc *pc, const cg_options *opt, cg_result *res,
               cls_error *err);

int pipecg_solve(dsys *s, const dvec *b, dvec *x, pc *pc, const cg_options *opt, cg_result *res,
                 cls_error *err);

/* k right-hand sides solved together (dbcg.c): b[c], x[c] (x ghosted) for
 * c < k <= DSOLVE_MAX_RHS_BLOCK, res[c] per column (filled in every case).
 * The matrix is read once per iteration for all active columns; each column
 * converges (and restarts) on its own. Returns the first failing column's
 * class with "right-hand side C: ..." in err, CLS_OK when all converged. */
#define DSOLVE_MAX_RHS_BLOCK 64
int dbcg_solve(dsys *s, const dvec *b, dvec *x, int k, pc *pc, const cg_options *opt,
               cg_result *res, cls_error *err);
/* Block CG (bcg.c, --method bcg): the k columns share one search space, so
 * each needs fewer iterations than alone. One part and k <= 8 (la_bcg.h);
 * elsewhere, or when the block loses rank, dbcg_solve's columns. The same
 * contract as dbcg_solve; the columns' iterations are the block's. */
int bcg_solve(dsys *s, const dvec *b, dvec *x, int k, pc *pc, const cg_options *opt, cg_result *res,
              cls_error *err);

/* The table of methods (methods.def's rows, methods.c): what dsolve runs. */
typedef struct ksp_method {
    const char *name;
    solver_method id;
    int (*solve)(dsys *s, const dvec *b, dvec *x, pc *pc, const cg_options *opt, cg_result *res,
                 cls_error *err);
    int (*solve_block)(dsys *s, const dvec *b, dvec *x, int k, pc *pc, const cg_options *opt,
                       cg_result *res, cls_error *err); /* NULL: one column after another */
    const char *summary;
} ksp_method;

/* the row of a method (NULL for a value no row has) */
const ksp_method *ksp_method_get(solver_method id);

#endif
