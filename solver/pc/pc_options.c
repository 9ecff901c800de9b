/*
 * pc_options.c: the preconditioners' names, aliases and parameters
 * (pc_options.h), and the `auto` rule.
 */
#include "pc_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ names */

static const struct {
    const char *name;
    solver_precond t;
} pc_names[] = {
    {"none", PRECOND_NONE},       {"identity", PRECOND_NONE},   {"jacobi", PRECOND_JACOBI},
    {"pbjacobi", PRECOND_JACOBI}, {"diagonal", PRECOND_JACOBI}, {"chebyshev", PRECOND_CHEBYSHEV},
    {"cheby", PRECOND_CHEBYSHEV}, {"cheb", PRECOND_CHEBYSHEV},  {"ic0", PRECOND_IC0},
    {"icc", PRECOND_IC0},         {"ic", PRECOND_IC0},          {"bjacobi", PRECOND_IC0},
    {"amg", PRECOND_AMG},         {"gamg", PRECOND_AMG},        {"sa", PRECOND_AMG},
    {"ml", PRECOND_AMG},          {"auto", PRECOND_AUTO},
};

int pc_parse_name(const char *name, solver_precond *t)
{
    if (!name)
        return -1;
    for (size_t i = 0; i < sizeof pc_names / sizeof *pc_names; i++)
        if (!strcmp(name, pc_names[i].name)) {
            *t = pc_names[i].t;
            return 0;
        }
    return -1;
}

const char *pc_name(solver_precond t)
{
    switch (t) {
    case PRECOND_NONE:
        return "none";
    case PRECOND_JACOBI:
        return "jacobi";
    case PRECOND_CHEBYSHEV:
        return "chebyshev";
    case PRECOND_IC0:
        return "ic0";
    case PRECOND_AMG:
        return "amg";
    case PRECOND_AUTO:
        return "auto";
    }
    return "none";
}

const char *pc_names_help(void)
{
    return "none, jacobi, chebyshev, ic0, amg or auto (PETSc's names too: pbjacobi, cheby, icc, "
           "bjacobi, gamg)";
}

void pc_options_default(pc_options *o)
{
    memset(o, 0, sizeof *o);
    o->type = PRECOND_NONE;
    o->degree = 4;
    o->lanczos = 10;
    o->sweeps = 3;
    o->shift = 0.0;
    o->reuse = 1;
}

static const char *const pc_keys[] = {"precond",        "precond_degree", "precond_lanczos",
                                      "precond_sweeps", "precond_shift",  "precond_reuse"};

int pc_options_key(const char *key)
{
    for (size_t i = 0; i < sizeof pc_keys / sizeof *pc_keys; i++)
        if (!strcmp(key, pc_keys[i]))
            return 1;
    return 0;
}

static int pc_int(const char *key, const char *v, long lo, long hi, int *out, cls_error *err)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || end == v || *end || x < lo || x > hi)
        return cls_fail(err, CLS_EINPUT, "%s: '%.64s' is not an integer in %ld..%ld", key,
                        v ? v : "", lo, hi);
    *out = (int)x;
    return CLS_OK;
}

int pc_options_set(pc_options *o, const char *key, const char *value, cls_error *err)
{
    if (!strcmp(key, "precond")) {
        if (pc_parse_name(value, &o->type) != 0)
            return cls_fail(err, CLS_EINPUT, "precond: '%.64s' is not one of %s",
                            value ? value : "", pc_names_help());
        return CLS_OK;
    }
    if (!strcmp(key, "precond_degree"))
        return pc_int(key, value, 1, 32, &o->degree, err);
    if (!strcmp(key, "precond_lanczos"))
        return pc_int(key, value, 2, 100, &o->lanczos, err);
    if (!strcmp(key, "precond_sweeps"))
        return pc_int(key, value, 0, 32, &o->sweeps, err);
    if (!strcmp(key, "precond_reuse"))
        return pc_int(key, value, 0, 1, &o->reuse, err);
    if (!strcmp(key, "precond_shift")) {
        char *end;
        double x = value ? strtod(value, &end) : -1.0;
        if (!value || end == value || *end || !(x >= 0.0 && x <= 10.0))
            return cls_fail(err, CLS_EINPUT, "precond_shift: '%.64s' is not a number in [0, 10]",
                            value ? value : "");
        o->shift = x;
        return CLS_OK;
    }
    return cls_fail(err, CLS_EUSAGE, "'%.64s' is not a preconditioner option", key);
}

/* The `auto` rule, from the measurements in docs/preconditioners.md (PoCL,
 * 2 cores, tol 1e-8, time to solution including set-up, medians of 3):
 * on the shared test matrices (at most 1138 rows) every preconditioner's
 * set-up costs milliseconds and AMG (or IC(0)) cuts the solve 3-8x
 * (1138_bus: jacobi 937 iterations, ic0 148, amg 51); on poisson3d 64
 * (262,144 rows) AMG's host set-up (1.2 s) and IC(0)'s (0.2-0.6 s) cost more
 * than their fewer iterations save in one solve, and Jacobi's fused loop
 * was the fastest (0.87 s against amg 1.9 s, chebyshev 2.0 s, ic0 2.1 s).
 * So: small systems get the strongest preconditioner the build has; large
 * ones Jacobi, unless the caller knows the set-up will be reused (name amg
 * then). The GPU measurements (bench/precond.sh) may move the threshold. */
#define PC_AUTO_SMALL_ROWS 131072

solver_precond pc_resolve(solver_precond t, int64_t nrows, int64_t nnz, int nparts)
{
    (void)nnz;
    (void)nparts;
    if (t != PRECOND_AUTO)
        return t;
    if (nrows <= PC_AUTO_SMALL_ROWS)
#ifdef CLS_HAVE_AMG
        return PRECOND_AMG;
#else
        return PRECOND_IC0;
#endif
    return PRECOND_JACOBI;
}
