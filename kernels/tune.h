/*
 * tune.h: the work-group profiler, Bueno's cgKernelProfiler generalised
 * (../shared/references/bueno-2013-multigpu-cg-opencl.txt, section 4.3.3
 * and Table 4.4).
 *
 * Bueno started every kernel at one work-group per compute unit with the
 * largest local size and added one group per compute unit until the time
 * stopped falling. Here, for each kernel x size class (x matrix shape for
 * SpMV): every local size that is a multiple of the kernel's preferred
 * work-group size multiple up to its maximum, times a ladder of
 * work-groups per compute unit (1, 2, 3, 4, 6, 8, 12, ... up to one
 * work-item per element), each timed with OpenCL profiling events, median
 * of `reps` (>= 5) after a warm-up. SpMV formats are swept per parameter
 * (vector width, SELL chunk height) and the fastest format is recorded for
 * the shape. The result goes to the device's tuning database (tunedb.h).
 *
 * Early stop (Bueno's rule, generalised): starting from his configuration,
 * walk the groups ladder while the time falls and stop after two steps
 * that are no better than 2% under the best; then step down the local
 * sizes and stop after two that do not beat the best. With --exhaustive
 * the whole grid is measured and the early-stop walk is replayed over the
 * same measurements, so both choices are reported from one set of numbers:
 * the gain over Bueno's start, and how close the early choice comes to the
 * exhaustive best.
 */
#ifndef CLS_KERNELS_TUNE_H
#define CLS_KERNELS_TUNE_H

#include <stdint.h>

#include "../common/error.h"
#include "la.h"
#include "tunedb.h"

typedef struct tune_options {
    const char *device;   /* "auto", "gpu", "cpu", or an index */
    const int64_t *sizes; /* poisson N, one matrix per size class */
    int nsizes;
    const char *stencil;  /* "poisson3d" (7-point) or "poisson3d27" */
    int exhaustive;       /* 1: full grid + replayed early stop; 0: early stop only */
    int reps;             /* timed runs per configuration (>= 5) */
    la_precision prec;
    int save;             /* write the database */
    int max_local;        /* 0, or cap the local sizes swept (tests) */
    int max_ladder;       /* 0, or cap the groups-per-CU ladder (tests) */
    int formats;          /* 1: sweep the SpMV formats (default) */
    void (*progress)(void *ctx, const char *line);
    void *progress_ctx;
} tune_options;

typedef struct tune_report {
    ocl_device dev;
    char path[4400];   /* database written (or that would be) */
    int saved;
    int n;
    tunedb_entry *e;   /* what was measured this run */
    char (*matrix)[48]; /* the matrix each entry was measured on */
    double seconds;
} tune_report;

int tune_run(const tune_options *o, tune_report *rep, cls_error *err);
void tune_report_free(tune_report *rep);

#endif
