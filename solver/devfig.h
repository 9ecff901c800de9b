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
 */
#ifndef CLS_SOLVER_DEVFIG_H
#define CLS_SOLVER_DEVFIG_H

#include <stdint.h>

#include "../kernels/la.h"
#include "../kernels/tunedb.h"

/* Measures dev's figures at prec (quick: smaller systems, for tests) into
 * fig[0..*n). Creates its own context; every failure (a device that cannot
 * build the kernels, say) is returned, so a device that fails here is never
 * chosen. */
int devfig_measure(const ocl_device *dev, la_precision prec, int quick, tunedb_figure *fig, int *n,
                   cls_error *err);

/* Measures what dev's database lacks for prec and saves it (tunedb_save,
 * then the cache is reloaded). *measured: 1 if it measured. */
int devfig_ensure(const ocl_device *dev, la_precision prec, int quick, int *measured,
                  cls_error *err);

/* Predicted ms per iteration of a system of nnz entries from figures
 * (any order; those of other precisions ignored); -1 without two sizes. */
int devfig_predict(const tunedb_figure *fig, int nfig, la_precision prec, int64_t nnz, double *ms);

/* The choice for a one-part solve: among devs[0..n) (one of each type is
 * considered: the first GPU, accelerator and CPU), the index of the one
 * with the least predicted time, or `fallback` when fewer than two have
 * figures. why (cap bytes) says what was compared, or why nothing was;
 * it is empty when devs holds one kind of device only (no choice). */
int devfig_choose(const ocl_device *devs, int n, int fallback, la_precision prec, int64_t nnz,
                  char *why, size_t cap);

#endif
