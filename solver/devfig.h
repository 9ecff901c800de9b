/*
 * devfig.h: each job on the device that finishes it first.
 *
 * A small system leaves a GPU idle: its CG iteration costs the GPU's
 * launch-and-synchronise latency (tens of microseconds) whatever its size,
 * while a CPU device's latency is a few microseconds and its bandwidth a
 * fraction of the GPU's. Which finishes first is a question of figures, not
 * of a fixed row count: per device and precision, the measured wall time of
 * one fused CG iteration (cg_solve, the solver's own loop) on poisson3d
 * systems of two sizes, stored with the device's tuning database
 * (kernels/tunedb.h, "figures"). A system of nnz entries then takes
 *     t(nnz) = t_small + (nnz - nnz_small) (t_large - t_small) / (nnz_large - nnz_small)
 * per iteration there (at least t_small: latency is the floor), and a
 * one-part solve with --device auto goes to the device where t is least;
 * the iteration count is the same everywhere, so it cancels. Devices
 * without figures keep today's order (GPUs first). `clsolve tune` measures
 * the figures (also `clsolve tune --figures`, seconds), and the daemon
 * measures what its devices lack when it starts.
 *
 * The same figures choose the method on a GPU. There a small system's
 * iteration is launch-bound under cg (five launches) and one work-group's
 * sweep under cg-small (the whole loop in one launch, krylov/cg_small.c):
 * cg-small's time grows with nnz from a floor of microseconds, cg's stays
 * at its launch latency until bandwidth counts. So cg-small is measured at
 * two sizes too (method "cg-small" in the database; GPUs and accelerators
 * only: a CPU device runs cg as native loops, kernels/cpu/), and a solve
 * that names no method (--method auto, the default), runs one part and one
 * right-hand side, with no preconditioner or Jacobi, takes cg-small where
 * its predicted iteration is shorter than cg's (devfig_method). The two
 * recurrences are the same (Hestenes-Stiefel), so the iteration count
 * cancels here too. Without cg-small's figures the method is cg.
 */
#ifndef CLS_SOLVER_DEVFIG_H
#define CLS_SOLVER_DEVFIG_H

#include <stdint.h>

#include "../kernels/la.h"
#include "../kernels/tunedb.h"

#define DEVFIG_MAX 4 /* figures one devfig_measure returns: two sizes of two methods */

/* Measures dev's figures at prec (quick: smaller systems, for tests) into
 * fig[0..*n) (room for DEVFIG_MAX): cg's two sizes and, on a GPU or an
 * accelerator, cg-small's. Creates its own context; every failure (a device
 * that cannot build the kernels, say) is returned, so a device that fails
 * here is never chosen. */
int devfig_measure(const ocl_device *dev, la_precision prec, int quick, tunedb_figure *fig, int *n,
                   cls_error *err);

/* Measures what dev's database lacks for prec (devfig_complete) and saves
 * it (tunedb_save, then the cache is reloaded). *measured: 1 if it measured. */
int devfig_ensure(const ocl_device *dev, la_precision prec, int quick, int *measured,
                  cls_error *err);

/* 1 when db holds every figure devfig_measure takes on dev at prec. */
int devfig_complete(const tunedb *db, const ocl_device *dev, la_precision prec);

/* Predicted ms per iteration of method ("cg", "cg-small") on a system of
 * nnz entries from figures (any order; those of other methods and
 * precisions ignored); -1 without two sizes. */
int devfig_predict(const tunedb_figure *fig, int nfig, const char *method, la_precision prec,
                   int64_t nnz, double *ms);

/* The method for a solve that names none on dev (one part, one right-hand
 * side, no preconditioner or Jacobi): 1 for cg-small, 0 for cg. why (cap
 * bytes) says what was compared, or why cg was kept. */
int devfig_method(const ocl_device *dev, la_precision prec, int64_t nnz, char *why, size_t cap);

/* The choice for a one-part solve: among devs[0..n) (one of each type is
 * considered: the first GPU, accelerator and CPU), the index of the one
 * with the least predicted time, or `fallback` when fewer than two have
 * figures. why (cap bytes) says what was compared, or why nothing was;
 * it is empty when devs holds one kind of device only (no choice). */
int devfig_choose(const ocl_device *devs, int n, int fallback, la_precision prec, int64_t nnz,
                  char *why, size_t cap);

#endif
