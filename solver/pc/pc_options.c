/*
 * pc_options.c: the preconditioners' names, aliases and parameters
 * (pc_options.h), and the `auto` rule.
 */
#include "pc_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ names */

/* the rows of kinds.def: name and PETSc's aliases per kind */
static const struct {
    solver_precond t;
    const char *name, *aliases;
} pc_names[] = {
#define PC_KIND(id, name, aliases, kind) {id, name, aliases},
#include "kinds.def"
#undef PC_KIND
};

/* 1 when name is one of the space-separated words of list */
static int pc_alias_match(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *w = list; *w;) {
        size_t len = strcspn(w, " ");
        if (len == n && !strncmp(w, name, n))
            return 1;
        w += len;
        w += strspn(w, " ");
    }
    return 0;
}

int pc_parse_name(const char *name, solver_precond *t)
{
    if (!name || !*name)
        return -1;
    for (size_t i = 0; i < sizeof pc_names / sizeof *pc_names; i++)
        if (!strcmp(name, pc_names[i].name) || pc_alias_match(pc_names[i].aliases, name)) {
            *t = pc_names[i].t;
            return 0;
        }
    return -1;
}

const char *pc_name(solver_precond t)
{
    for (size_t i = 0; i < sizeof pc_names / sizeof *pc_names; i++)
        if (pc_names[i].t == t)
            return pc_names[i].name;
    return "none";
}

const char *pc_names_help(void)
{
    /* "none, jacobi, ... or auto (PETSc's names too: pbjacobi, cheby, ...)":
     * the names, then each kind's first alias */
    static char text[512];
    if (!text[0]) {
        const size_t n = sizeof pc_names / sizeof *pc_names;
        const char *w[sizeof pc_names / sizeof *pc_names];
        for (size_t i = 0; i < n; i++)
            w[i] = pc_names[i].name;
        size_t len = strlen(cls_list_words(text, sizeof text, w, n));
        const char *sep = " (PETSc's names too: ";
        for (size_t i = 0; i < n && len < sizeof text; i++) {
            size_t w = strcspn(pc_names[i].aliases, " ");
            if (w == 0 || pc_names[i].t == PRECOND_NONE)
                continue;
            len += (size_t)snprintf(text + len, sizeof text - len, "%s%.*s", sep, (int)w,
                                    pc_names[i].aliases);
            sep = ", ";
        }
        if (len < sizeof text)
            snprintf(text + len, sizeof text - len, ")");
    }
    return text;
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
                                      "precond_sweeps", "precond_shift",  "precond_reuse",
                                      "precond_setup",  "precond_coupling"};

static const char *const pc_setups[] = {"auto", "host", "device"};
static const char *const pc_couplings[] = {"auto", "coupled", "block"};

const char *pc_coupling_name(int coupling)
{
    return coupling >= 0 && coupling <= PC_COUPLING_BLOCK ? pc_couplings[coupling] : "?";
}

const char *pc_setup_name(int setup)
{
    return setup >= 0 && setup <= PC_SETUP_DEVICE ? pc_setups[setup] : "?";
}

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
        return pc_int(key, value, 2, PC_LANCZOS_MAX, &o->lanczos, err);
    if (!strcmp(key, "precond_sweeps"))
        return pc_int(key, value, 0, 32, &o->sweeps, err);
    if (!strcmp(key, "precond_reuse"))
        return pc_int(key, value, 0, 1, &o->reuse, err);
    if (!strcmp(key, "precond_setup")) {
        for (int i = 0; i <= PC_SETUP_DEVICE; i++)
            if (value && !strcmp(value, pc_setups[i])) {
                o->setup = i;
                return CLS_OK;
            }
        return cls_fail(err, CLS_EINPUT, "precond_setup: '%.64s' is not one of auto, host, device",
                        value ? value : "");
    }
    if (!strcmp(key, "precond_coupling")) {
        for (int i = 0; i <= PC_COUPLING_BLOCK; i++)
            if (value && !strcmp(value, pc_couplings[i])) {
                o->coupling = i;
                return CLS_OK;
            }
        return cls_fail(err, CLS_EINPUT,
                        "precond_coupling: '%.64s' is not one of auto, coupled, block",
                        value ? value : "");
    }
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

/* On a GPU, with the hierarchy set up on the device (docs/amg.md), AMG's
 * time to solution against Jacobi's (set-up and iterations; one H200,
 * 2026-12-02, docs/benchmarks.md "auto's evidence"): poisson3d 128 (14.7 M
 * entries) 1.22x with b = A 1 and 0.82x with a random b; from 20 M
 * entries amg won every time: poisson2d 2000 (20 M) 0.15x, poisson3d 160
 * (28.7 M) 0.62x, poisson3d27 128 (56.6 M) 0.51x, 256 (117 M) 0.68-0.77x.
 * Both costs go with the entries, so the bound counts entries: 2^24 (until
 * 2026-12-02 it was 4 M rows, which left poisson3d 160 and poisson2d 2000
 * to Jacobi). Below it, auto's evidence (pc_auto_amg_budget) still moves a
 * slow Jacobi solve to amg. */
solver_precond pc_resolve_device(solver_precond t, int64_t nrows, int64_t nnz, int nparts, int gpu,
                                 int dbl, char *why, size_t cap)
{
    solver_precond r = pc_resolve(t, nrows, nnz, nparts);
    if (t != PRECOND_AUTO)
        return r;
    if (r == PRECOND_JACOBI && gpu && dbl && nparts == 1 && nnz >= PC_AUTO_GPU_AMG_NNZ) {
        snprintf(why, cap,
                 "amg: %lld entries on one GPU in double precision (>= %d): its set-up on the "
                 "device costs less than the iterations it saves (docs/preconditioners.md)",
                 (long long)nnz, PC_AUTO_GPU_AMG_NNZ);
        return PRECOND_AMG;
    }
    snprintf(why, cap, "%s: %lld rows%s", pc_name(r), (long long)nrows,
             r == PRECOND_AMG ? " (small: every set-up costs milliseconds)"
             : gpu && dbl && nparts == 1
                 ? " (below the entries where amg's set-up pays back on a GPU)"
                 : " (amg's set-up would run on the host, or the system is split)");
    return r;
}

/* amg's cost (set-up and iterations) in Jacobi iterations of the same
 * system on the same device, measured (docs/benchmarks.md, "auto's
 * evidence", 2026-12-02). One H200: 330-520 (poisson3d 160 with a random
 * b 333, poisson2d 1000 and 2000 515-520; poisson3d 128 385). The 2-core
 * PoCL machine: 560-600 on poisson2d 370-500 (the Jacobi iteration is
 * cheap there, its vectors in cache), about 180 on poisson3d 64. The lower
 * ends are taken, so that a system amg would win by much switches early:
 * 335 on a GPU, 500 on a CPU device. Both costs go with the entries, so
 * the size cancels. */
int64_t pc_auto_amg_budget(int gpu)
{
    return gpu ? 335 : 500;
}

solver_precond pc_resolve(solver_precond t, int64_t nrows, int64_t nnz, int nparts)
{
    (void)nnz;
    (void)nparts;
    if (t != PRECOND_AUTO)
        return t;
    if (nrows <= PC_AUTO_SMALL_ROWS)
        return PRECOND_AMG;
    return PRECOND_JACOBI;
}
