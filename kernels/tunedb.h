/*
 * tunedb.h: the per-device tuning database the work-group profiler
 * (kernels/tune.c, `clsolve tune`) fills and la_init / la_csr_upload read.
 *
 * One JSON file per device, named after the device, driver and platform
 * (a hash of the three keeps the name short and safe), in the first of:
 *   $CLSOLVE_TUNE_DIR
 *   DATA/tuning, when the daemon named its data directory (tunedb_set_data_dir)
 *   $XDG_CACHE_HOME/clsolve/tuning, ~/.cache/clsolve/tuning
 * The file names its format and version and the device, driver and
 * platform it was measured on; a file that does not parse, has the wrong
 * format or version, belongs to another device or driver, or holds an entry
 * outside what the device allows is ignored as a whole, with a warning, and
 * the defaults are used: a tuning file is never trusted blindly.
 *
 * An entry is the best configuration of one kernel for one precision, size
 * class and (for SpMV kernels) matrix shape, with what the profiler measured
 * around it: the untuned default's time (Bueno's start: one group per
 * compute unit at the largest local size), the exhaustive best, and the
 * early-stopped choice. Entries of kernel "format" record which SpMV format
 * won for a shape and size class. An optional "figures" array holds the
 * whole iteration's measured time at a few sizes (tunedb_figure); files
 * without it load as before.
 */
#ifndef CLS_KERNELS_TUNEDB_H
#define CLS_KERNELS_TUNEDB_H

#include <stddef.h>

#include "../common/error.h"
#include "ocl.h"

#define TUNEDB_FORMAT "clsolve-tuning"
#define TUNEDB_VERSION 1
#define TUNEDB_NCLASSES 4 /* size classes, by rows: < 2^17, < 2^20, < 2^23, larger */

typedef struct tunedb_entry {
    char kernel[32];       /* "dot", "cgf_update", "spmv_scalar", ..., "format" */
    char precision[8];     /* "double", "float", "mixed" */
    int size_class;        /* 0..TUNEDB_NCLASSES-1 */
    char shape[16];        /* SpMV and format entries: "short", "long", ...; else "" */
    size_t local_size;     /* best over every multiple of the preferred multiple */
    size_t groups_per_cu;
    size_t param;          /* vector width, SELL chunk height; 0 if none */
    size_t pow2_local_size; /* best among power-of-two local sizes */
    size_t pow2_groups_per_cu;
    char format[16];       /* "format" entries: the winning format */
    double ms;             /* best time (ms per launch, median) */
    double bueno_ms;       /* one group per CU at the largest local size */
    double default_ms;     /* la_config_default */
    double early_ms;       /* the early-stopped choice */
    size_t early_local_size, early_groups_per_cu;
    int points, early_points; /* configurations measured: full grid, early stop */
    int exhaustive;        /* 1: ms is the exhaustive best */
} tunedb_entry;

/* A measured figure of the whole CG iteration (solver/devfig.h): the wall
 * time per iteration of poisson3d N on this device for one method, so that
 * a solve can predict its time here from its size and go to the device (and
 * on a GPU the method: cg or the one-launch cg-small) that finishes it
 * first. */
#define TUNEDB_MAX_FIGURES 12
typedef struct tunedb_figure {
    char precision[8];
    long long rows, nnz;
    double ms;      /* wall ms per CG iteration, best of the runs */
    char method[16]; /* "cg" (also when empty: files before cg-small's figures) or "cg-small" */
} tunedb_figure;

/* f's method: "cg" when the file named none */
const char *tunedb_figure_method(const tunedb_figure *f);

typedef struct tunedb {
    char device[256], driver[128], platform[128];
    int n, cap;
    tunedb_entry *e;
    int nfig;
    tunedb_figure fig[TUNEDB_MAX_FIGURES];
} tunedb;

/* Size class of a vector / matrix of n rows. */
int tunedb_size_class(long long n);
const char *tunedb_class_name(int size_class); /* "<128k", "<1M", "<8M", ">=8M" */

/* The daemon's data directory: the database goes to DIR/tuning unless
 * $CLSOLVE_TUNE_DIR is set. NULL clears it. */
void tunedb_set_data_dir(const char *dir);
/* Directory and file path for dev; 0 when no directory can be found. */
int tunedb_dir(char *buf, size_t cap);
int tunedb_path(const ocl_device *dev, char *buf, size_t cap);

void tunedb_init(tunedb *db, const ocl_device *dev);
void tunedb_free(tunedb *db);

/* Loads path for dev: 0 loaded, 1 no file (db empty), 2 ignored: the file
 * is corrupt or foreign (db empty, the reason in warn). */
int tunedb_load(const char *path, const ocl_device *dev, tunedb *db, char *warn, size_t wcap);
/* Writes atomically (temporary file, rename); creates the directory. */
int tunedb_save(const char *path, const tunedb *db, cls_error *err);

/* Inserts or replaces the entry with the same key (kernel, precision,
 * size class, shape). */
int tunedb_put(tunedb *db, const tunedb_entry *e);
/* Inserts or replaces the figure of the same method, precision and rows;
 * 0, or -1 when the table is full. */
int tunedb_put_figure(tunedb *db, const tunedb_figure *f);

/* The entry for the key; if the size class is missing, the nearest tuned
 * class (*exact = 0). NULL when the kernel was never tuned. */
const tunedb_entry *tunedb_find(const tunedb *db, const char *kernel, const char *precision,
                                int size_class, const char *shape, int *exact);

/* The process-wide database of dev, loaded once (warning printed once to
 * stderr when ignored). NULL when there is none. tunedb_forget drops it so
 * the next call reloads (after `clsolve tune` wrote it, or in tests). */
const tunedb *tunedb_for_device(const ocl_device *dev);
void tunedb_forget(void);
/* The next tunedb_for_device(dev) reads the file again (another process
 * wrote it); the database held until now stays valid for whoever holds it
 * (unlike tunedb_forget, safe while other threads solve). */
void tunedb_refresh(const ocl_device *dev);

#endif
