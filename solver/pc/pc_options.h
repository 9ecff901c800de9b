/*
 * pc_options.h: the preconditioners' names and parameters, and THE one
 * function that reads them (pc_options_set): the command line (--precond
 * NAME, --precond-degree N, ...), the HTTP query (precond=NAME,
 * precond_degree=N, ...) and the options JSON of a job all go through it,
 * so every front end accepts the same names, PETSc's aliases included.
 * Pure C over strings (no OpenCL, no MPI), so the request parsers' fuzz
 * targets link it as they are; the preconditioners themselves are pc.h's.
 * The kinds, their names and PETSc's aliases are the rows of kinds.def.
 */
#ifndef CLS_SOLVER_PC_OPTIONS_H
#define CLS_SOLVER_PC_OPTIONS_H

#include <stdint.h>

#include "../../common/error.h"

/* AUTO is resolved to one of the others before a solve starts (pc_resolve). */
typedef enum {
#define PC_KIND(id, name, aliases, kind) id,
#include "kinds.def"
#undef PC_KIND
} solver_precond;

/* the most Lanczos steps a Chebyshev set-up takes (precond_lanczos's bound;
 * pc_cheby_bounds keeps their coefficients on the stack) */
#define PC_LANCZOS_MAX 100

typedef struct pc_options {
    solver_precond type; /* PRECOND_*; AUTO until pc_resolve */
    int degree;          /* chebyshev: polynomial degree, 1..32 (default 4) */
    int lanczos;         /* chebyshev: Lanczos steps for the bounds, 2..100 (default 10) */
    int sweeps;          /* ic0: Jacobi sweeps per triangular solve, 0..32 (default 3);
                          * 0: exact level-scheduled solves */
    double shift;        /* ic0: initial diagonal shift, a fraction of a_ii in [0, 10] (0) */
    int reuse;           /* 1 (default): reuse a cached set-up of the same matrix */
    int setup;           /* amg: where the hierarchy is set up, PC_SETUP_* (default auto) */
    int coupling;        /* amg over several parts: PC_COUPLING_* (default auto) */
    /* set by the solve, not by users: it will apply M on the native CPU
     * loops (pc_apply_host), so a kind may leave its device copy of M to
     * the first device apply (amg: the hierarchy's upload and its program) */
    int native_apply;
} pc_options;

/* amg's set-up: auto (on a GPU's double-precision solve of one part the
 * device, else the host), host, device (refused where it cannot run) */
enum { PC_SETUP_AUTO, PC_SETUP_HOST, PC_SETUP_DEVICE };
const char *pc_setup_name(int setup);

/* amg over several parts: auto (coupled), coupled (one hierarchy over every
 * part: the fine level smoothed with halo exchanges, the coarse levels of
 * the global Galerkin operator on one device; iterations that do not grow
 * with the parts) or block (one hierarchy per part's block, block Jacobi
 * across parts, no communication inside M) */
enum { PC_COUPLING_AUTO, PC_COUPLING_COUPLED, PC_COUPLING_BLOCK };
const char *pc_coupling_name(int coupling);

void pc_options_default(pc_options *o);

/* Sets one option by key: "precond" (a name or alias below), "precond_degree",
 * "precond_lanczos", "precond_sweeps", "precond_shift", "precond_reuse" (0 or 1),
 * "precond_setup" (auto, host or device), "precond_coupling" (auto, coupled or
 * block).
 * A bad value is CLS_EINPUT with a message naming the key; a key that is not
 * one of these is CLS_EUSAGE (callers ask pc_options_key first). */
int pc_options_set(pc_options *o, const char *key, const char *value, cls_error *err);
/* 1 when key is one of pc_options_set's */
int pc_options_key(const char *key);

/* name -> type, exactly (lower case, as PETSc's -pc_type): none|jacobi|chebyshev|ic0|amg|auto and
 * PETSc's names (none: "identity"; jacobi: "pbjacobi", "diagonal";
 * chebyshev: "cheby", "cheb"; ic0: "icc", "ic", "bjacobi" (block Jacobi with
 * ICC per block, PETSc's default parallel ICC); amg: "gamg", "sa", "ml").
 * 0, or -1 for an unknown name. */
int pc_parse_name(const char *name, solver_precond *t);
const char *pc_name(solver_precond t);
/* the names and aliases, for messages */
const char *pc_names_help(void);

/* auto -> a preconditioner for this system (the rule and the measurements
 * behind it: docs/preconditioners.md); any other type is returned as is */
solver_precond pc_resolve(solver_precond t, int64_t nrows, int64_t nnz, int nparts);
/* auto, once the device is known: a system of one part on one GPU in
 * double precision with at least PC_AUTO_GPU_AMG_NNZ entries gets amg (its
 * hierarchy set up on the device), the rest pc_resolve's choice; why says
 * which and why */
#define PC_AUTO_GPU_AMG_NNZ 16777216
solver_precond pc_resolve_device(solver_precond t, int64_t nrows, int64_t nnz, int nparts,
                                 int gpu, int dbl, char *why, size_t cap);
/* auto's evidence, where it chose jacobi for a one-part system: the Jacobi
 * iterations that cost about what amg's set-up and iterations were
 * measured to cost on such a device (pc_options.c says from what). A
 * Jacobi solve whose residual is still above sqrt(tol) after this many is
 * continued from its x with amg (dsolve.c): at its rate so far it needs
 * more than amg's cost again. The switch costs at most about twice the
 * better of the two. */
int64_t pc_auto_amg_budget(int gpu);

#endif
