/*
 * pc_kind.h: what one preconditioner kind provides, and the common layer's
 * helpers it may use. Private to solver/pc/: the engine sees pc.h only.
 *
 * A kind is one file (pc_none.c, pc_jacobi.c, pc_cheby.c, pc_ic0.c,
 * pc_amg.c) that defines a pc_kind and keeps its state to itself: the
 * whole-system state in pc->state, the per-part state in pc->part[k].state,
 * both allocated by its setup and freed by its release. The common layer
 * (pc.c) runs the set-up in one order for every kind (per-part kernels if
 * the kind asks, D^-1 if it asks, the kind's setup, the devices finished,
 * the report reduced over ranks), dispatches z = M^-1 r and writes the
 * report's common keys; the kind writes its own keys. Host set-ups worth
 * keeping across solves go into the generic cache (pc_base.c) keyed by the
 * content hash of the part (or of the whole matrix).
 */
#ifndef CLS_SOLVER_PC_PC_KIND_H
#define CLS_SOLVER_PC_PC_KIND_H

#include <jansson.h>

#include "pc.h"

typedef struct pc_kind {
    /* what the common layer builds before setup: D^-1 (pc->dinv), and the
     * per-part kernels (la_pck: triangular solves, Chebyshev steps) where
     * the apply runs on the devices (not with pc_options.native_apply) */
    int needs_diag, needs_kernels;
    /* 1 when setup has collective steps: every rank enters it or none */
    int collective;
    /* 1 when the report counts set-ups `built` and `reused` ... */
    int reports_setup;
    /* ... of one global set-up, not of parts */
    int global_setup;
    int (*setup)(pc *pc, cls_error *err);
    /* z = M^-1 r on part k alone (NULL for a kind with a global M) */
    int (*apply_part)(pc *pc, int k, const la_vec *r, la_vec *z, cls_error *err);
    /* z[c] = M^-1 r[c], c < ncols (<= 8), on part k at once: the columns
     * share M's matrix reads (NULL: apply_part per column) */
    int (*apply_part_block)(pc *pc, int k, int ncols, const la_vec *const *r, la_vec *const *z,
                            cls_error *err);
    /* z = M^-1 r over every part, collective (NULL: apply_part per part) */
    void (*apply)(pc *pc, const dvec *r, dvec *z);
    /* the one-part form of a global M (NULL: apply_part on part 0) */
    int (*apply_one)(pc *pc, const la_vec *r, la_vec *z, cls_error *err);
    /* z = M^-1 r natively on part 0's host arrays (pc_apply_host; NULL:
     * none, the OpenCL kernels run it); ws: the native loop's team and
     * ranges over A's rows, A: the system as mapped */
    int (*apply_host)(pc *pc, const struct cpu_ws *ws, const struct cpu_csr *A, const double *r,
                      double *z, cls_error *err);
    /* frees pc->state and every pc->part[k].state (may be NULL) */
    void (*release)(pc *pc);
    /* the kind's own keys of the report (may be NULL) */
    void (*info_json)(const pc_info *info, json_t *o);
} pc_kind;

#define PC_KIND(id, name, aliases, kind) extern const pc_kind kind;
#include "kinds.def"
#undef PC_KIND

/* D^-1 of every part into pc->dinv (device order; what needs_diag asks) */
int pc_diag(pc *pc, cls_error *err);
/* Collective: Lanczos estimates of D^-1 A's extreme eigenvalues from m
 * (at most PC_LANCZOS_MAX, pc_options.h) steps of Jacobi-PCG over every
 * part (pc_cheby.c; needs pc->dinv) */
int pc_cheby_bounds(pc *pc, int m, double *lmin, double *lmax, int *used, cls_error *err);
/* part k's kernels (la_pck: triangular solves, Chebyshev steps), made at
 * the first call: a solve on the native CPU loops never makes them, so it
 * builds no program for them (on PoCL 15-25 s with empty caches) */
int pc_part_kernels(pc *pc, int k, cls_error *err);
/* z = p(D^-1 A) D^-1 r over every part (pc_cheby.c's recurrence, each SpMV
 * halo-exchanged) with the coefficients of pc_cheby_coeffs; cd (ghosted),
 * cq and cres are work vectors, z is written (not accumulated) */
void pc_cheby_poly(pc *pc, int degree, double c0, const double *c1, const double *c2, dvec *cd,
                   dvec *cq, dvec *cres, const dvec *r, dvec *z);

/* amg coupled across parts (pc_amg_coupled.c): collective set-up of the
 * coupled hierarchy into pc->state, sets pc->apply; its release */
int pc_amg_coupled_setup(pc *pc, cls_error *err);
void pc_amg_coupled_release(pc *pc);

/* part k's slice of a distributed vector (its own rows) */
la_vec pc_loc(const dsys *s, const dvec *x, int k);

/* ------------------------------------------------------ the generic cache */

/* a 64-bit mix (splitmix64's finaliser), for the extra bits of a key */
uint64_t pc_cache_mix(uint64_t z);
/* 1 when the options and CLSOLVE_PC_CACHE allow reuse */
int pc_cache_enabled(const pc_options *o);
/* *dev = 1: build part p's preconditioner on its device (amg, ic0): asked
 * by --precond-setup device (refused, CLS_EUSAGE, outside double
 * precision), or by auto on a GPU in double precision */
int pc_setup_on_device(const pc *pc, const dpart *p, int *dev, cls_error *err);
/* key of a per-part set-up: the part's content and what shapes the set-up
 * (extra: e.g. an option's bits); 0 when no hash could be made */
uint64_t pc_cache_part_key(const dpart *p, solver_precond t, uint64_t extra);
/* the same key, and in *pattern (when not NULL) the key of the part's
 * pattern alone (rows, global columns; not the values): two matrices of
 * one pattern share it (0 when no hash could be made) */
uint64_t pc_cache_part_keys(const dpart *p, solver_precond t, uint64_t extra, uint64_t *pattern);
/* key of a set-up of the whole matrix: collective (an MPI_BXOR of the
 * parts' hashes over the ranks); 0 with err set on an MPI failure */
int pc_cache_matrix_key(dsys *s, solver_precond t, uint64_t extra, uint64_t *key, cls_error *err);
struct pc_cache_entry;
/* the entry for (key, type, n) held (refs + 1), or NULL */
struct pc_cache_entry *pc_cache_get(uint64_t key, solver_precond t, int64_t n);
/* stores data (dropped with drop(data) when evicted or cleared) in a free or
 * idle slot and returns it held; NULL when every slot is held, and the
 * caller keeps data */
struct pc_cache_entry *pc_cache_put(uint64_t key, solver_precond t, int64_t n, void *data,
                                    void (*drop)(void *data));
/* the most recent entry of that pattern key (and type, n) held, or NULL:
 * a set-up of the same pattern with other values, for a numeric re-set-up */
struct pc_cache_entry *pc_cache_get_pattern(uint64_t pattern, solver_precond t, int64_t n);
/* records the entry's pattern key (kinds that can re-set-up from it) */
void pc_cache_set_pattern(struct pc_cache_entry *e, uint64_t pattern);
void *pc_cache_data(struct pc_cache_entry *e);
/* gives back a held entry (NULL: nothing) */
void pc_cache_release(struct pc_cache_entry *e);
/* Set-ups that live on a device (a hierarchy built there) are kept only
 * where pc_cache_device_enable(1) was called (the daemon: its ranks serve
 * later jobs; the CLI's one solve would only pay the content hash) and
 * CLSOLVE_PC_DEVICE_CACHE is not 0. Their entries are exclusive (their
 * work vectors and kernels serve one solve at a time: pc_cache_take) and
 * tagged with their OpenCL context; a new one drops the idle ones of its
 * tag first, and one given back drops the other idle ones of its tag
 * (pc_cache_release), so a context keeps at most one idle device set-up. */
int pc_cache_device_enabled(const pc_options *o);
/* the entry for (key, type, n) held, only when no one else holds it */
struct pc_cache_entry *pc_cache_take(uint64_t key, solver_precond t, int64_t n);
/* the same by pattern key (pc_cache_get_pattern's, only an idle entry) */
struct pc_cache_entry *pc_cache_take_pattern(uint64_t pattern, solver_precond t, int64_t n);
/* gives back a held entry and drops it once no one holds it (a set-up
 * whose successor has taken what it needed of it) */
void pc_cache_discard(struct pc_cache_entry *e);
void pc_cache_set_tag(struct pc_cache_entry *e, uint64_t tag);
/* drops the idle entries of that type and tag (nonzero) */
void pc_cache_drop_tag(solver_precond t, uint64_t tag);

#endif
