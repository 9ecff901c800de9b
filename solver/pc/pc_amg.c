/*
 * pc_amg.c: smoothed-aggregation AMG as a preconditioner: on one part (or
 * with --precond-coupling block) one V-cycle per part's block, the
 * hierarchy solver/amg/'s (host or device set-up, device V-cycle); this file
 * ties it to the table.
 *
 * Where the hierarchy is set up (--precond-setup): on the device
 * (amg_build_device: kernels for the large levels, the host for the small)
 * by default on a GPU in double precision, since there the host set-up
 * was all of AMG's cost; on the host otherwise (a CPU device's native
 * V-cycle runs the host hierarchy; float and mixed build on the host).
 *
 * A device-built hierarchy lives on its device, so it is kept (for the
 * daemon's later jobs: pc_cache_device_enabled) in an entry of its own,
 * keyed by the block's content and tagged with the OpenCL context, which
 * the entry retains: the daemon's warm devices keep one context across
 * jobs, and its lanes share it. One solve holds the entry at a time (its
 * V-cycle vectors and kernels are scratch: pc_cache_take), and it is given
 * back only after the solve's queue has finished. Level 0 borrows each
 * solve's own device copy of the matrix (amg_device_bind_fine). A context
 * keeps one idle hierarchy (a new one drops the old first), and one larger
 * than a quarter of the device's memory is not kept. A job whose block has
 * the kept one's pattern and other values (a time step) takes its
 * aggregates and drops it, then re-sets-up (amg_rebuild_device): the MIS
 * rounds skipped, the values anew, as the host's amg_rebuild.
 *
 * On more than one part with --precond-coupling coupled (and by auto where
 * the set-up runs on the host: pc_amg_coupled_wanted) the set-up is
 * pc_amg_coupled.c's instead: one M over every part, the fine level
 * smoothed with halo exchanges and the coarse levels on one device. With
 * --precond-coupling block each part gets its own hierarchy, as below.
 *
 * A hierarchy borrows the block it was built on, so whoever owns the one
 * owns the other: the cache (an entry holds both) or, without the cache,
 * the part. Level 0 shares the engine's own copy of the matrix when the
 * part has no ghosts (its interior block is then the whole block), so only
 * the coarse levels take device memory of their own.
 */
#include "pc_kind.h"
#include "../../kernels/cpu/cpu_ops.h"
#include "../../kernels/cpu/cpu_ws.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/timer.h"
#include "../amg/amg.h"

/* a hierarchy and the block it borrows (the cache's data, or the part's) */
typedef struct amg_setup {
    amg_hierarchy *h;
    csr_matrix A;
} amg_setup;

/* a device-built hierarchy kept for later solves on its OpenCL context */
typedef struct amg_dkept {
    amg_device *d;
    cl_context ctx; /* retained, so that the entry's tag names no other context */
} amg_dkept;

/* the part's state */
typedef struct amg_part {
    amg_setup *own;                /* without the cache: the part's own set-up */
    struct pc_cache_entry *centry; /* with it: the entry (held) */
    amg_device *d;                 /* the device V-cycle */
    int dkept;                     /* d is centry's (an amg_dkept), not the part's */
    amg_native_ws *nw;             /* the native V-cycle's work, made at its first use */
} amg_part;

static void amg_dkept_drop(void *p)
{
    amg_dkept *e = p;
    amg_device_release(e->d);
    clReleaseContext(e->ctx);
    free(e);
}

/* device bytes a built hierarchy holds, roughly: every operator, P and R
 * (about A's entries again), six vectors a level and the aggregates */
static double amg_device_bytes(const amg_info *ai, int lend)
{
    double b = 0;
    for (int l = 0; l < ai->levels && l < AMG_MAX_LEVELS; l++)
        b += (double)ai->nnz[l] * 12.0 * (l == 0 && lend ? 2 : 3) + (double)ai->rows[l] * 52.0;
    return b;
}

/* a set-up of the same pattern as a cached one re-sets-up from it
 * (CLSOLVE_AMG_RESETUP=0: built afresh, for measurements) */
static int pc_amg_resetup_on(void)
{
    const char *v = getenv("CLSOLVE_AMG_RESETUP");
    return !(v && !strcmp(v, "0"));
}

static void amg_setup_drop(void *p)
{
    amg_setup *a = p;
    if (a->h)
        amg_free(a->h); /* before the block it borrows */
    csr_free(&a->A);
    free(a);
}

/* the hierarchy's description for the report: levels, rows and nonzeros
 * per level, complexities, set-up time (amg_get_info) */
static void pc_amg_describe(pc *pc, const amg_info *in, int on_device)
{
    const amg_info ai = *in;
    json_t *o = json_object(), *rows = json_array(), *nnz = json_array();
    for (int l = 0; l < ai.levels && l < AMG_MAX_LEVELS; l++) {
        json_array_append_new(rows, json_integer(ai.rows[l]));
        json_array_append_new(nnz, json_integer(ai.nnz[l]));
    }
    json_object_set_new(o, "levels", json_integer(ai.levels));
    json_object_set_new(o, "rows", rows);
    json_object_set_new(o, "nnz", nnz);
    json_object_set_new(o, "operator_complexity", json_real(ai.operator_complexity));
    json_object_set_new(o, "grid_complexity", json_real(ai.grid_complexity));
    json_object_set_new(o, "coarse_direct", json_boolean(ai.coarse_direct));
    json_object_set_new(o, "build_s", json_real(ai.build_s));
    json_object_set_new(o, "threads", json_integer(ai.threads));
    json_object_set_new(o, "setup", json_string(on_device ? "device" : "host"));
    if (pc->s->L && pc->s->L->nparts > 1) /* one hierarchy per part's block */
        json_object_set_new(o, "coupling", json_string("block"));
    /* the set-up's steps, where it ran (amg_get_info, amg_device_info) */
    json_object_set_new(o, "aggregate_s", json_real(ai.aggregate_s));
    json_object_set_new(o, "prolong_s", json_real(ai.prolong_s));
    json_object_set_new(o, "rap_s", json_real(ai.rap_s));
    if (on_device) {
        json_object_set_new(o, "device_levels", json_integer(ai.device_levels));
        json_object_set_new(o, "host_levels_s", json_real(ai.host_levels_s));
        json_object_set_new(o, "fine_csr_s", json_real(ai.fine_csr_s));
    } else {
        json_object_set_new(o, "strength_s", json_real(ai.strength_s));
        json_object_set_new(o, "coarse_s", json_real(ai.coarse_s));
    }
    char *t = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
    if (t && strlen(t) < sizeof pc->info.amg)
        snprintf(pc->info.amg, sizeof pc->info.amg, "%s", t);
    free(t);
    json_decref(o);
    pc->info.levels = ai.levels;
}

/* the part's hierarchy built on the device (amg_dsetup.c), or kept from an
 * earlier solve of the same block on the same context */
static int pc_amg_setup_device(pc *pc, dpart *p, amg_part *ap, int k, cls_error *err)
{
    amg_options ao;
    amg_options_default(&ao);
    const double tb = cls_now();
    csr_matrix blk;
    csr_init(&blk);
    int lend = p->halo.nghost == 0 && !p->have_Ab; /* the engine's copy is the block */
    int rc = CLS_OK;
    const cl_context ctx = p->la.ocl->context;
    const uint64_t tag = (uint64_t)(uintptr_t)ctx;
    uint64_t key = 0, pattern = 0;
    amg_dagg like = {0}; /* a re-set-up's aggregates */
    if (pc_cache_device_enabled(&pc->opt) && ctx) {
        ao.keep_aggregates = 1;
        key = pc_cache_part_keys(p, PRECOND_AMG, pc_cache_mix(tag ^ 0x5eed0de71ce5ull) + lend,
                                 &pattern);
        struct pc_cache_entry *e = pc_cache_take(key, PRECOND_AMG, p->halo.nlocal);
        amg_dkept *kd = pc_cache_data(e);
        if (kd && amg_device_bind_fine(kd->d, lend ? &p->Ai : NULL, err) == CLS_OK) {
            ap->d = kd->d;
            ap->centry = e;
            ap->dkept = 1;
            pc->info.parts_reused++;
            amg_info ai;
            if (k == 0 && amg_device_info(ap->d, &ai) == 0)
                pc_amg_describe(pc, &ai, 1);
            return CLS_OK;
        }
        pc_cache_release(e);
        cls_error_clear(err);
        /* the same pattern with other values (a time step): that
         * hierarchy's aggregates, and it goes before the new one is built */
        struct pc_cache_entry *pe =
            pc_amg_resetup_on() ? pc_cache_take_pattern(pattern, PRECOND_AMG, p->halo.nlocal)
                                : NULL;
        if ((kd = pc_cache_data(pe)))
            amg_device_take_aggregates(kd->d, &like);
        pc_cache_discard(pe);
        pc_cache_drop_tag(PRECOND_AMG, tag); /* the context's idle one, before a new one */
    }
    const csr_matrix *B = &blk;
    int64_t n = p->halo.nlocal;
    if (lend && !p->perm && p->A.rowptr[0] == 0 && p->A.nrows == n) {
        /* the part's matrix is its block: a view, not a copy (the kernels
         * need no sorted columns and keep nothing of it) */
        blk = (csr_matrix){.nrows = n,
                           .ncols = n,
                           .nnz = p->A.rowptr[n],
                           .rowptr = p->A.rowptr,
                           .col = p->A.col,
                           .val = p->A.val};
        B = &blk;
    } else if ((rc = pc_local_block(p, &blk, err)) == CLS_OK) {
        B = &blk;
    }
    if (!rc && like.levels)
        rc = amg_rebuild_device(B, &ao, &p->la, lend ? &p->Ai : NULL, &like, &ap->d, err);
    else if (!rc)
        rc = amg_build_device(B, &ao, &p->la, lend ? &p->Ai : NULL, &ap->d, err);
    amg_dagg_release(&like);
    if (B == &blk && blk.rowptr != p->A.rowptr)
        csr_free(&blk);
    if (rc)
        return rc;
    pc->info.build_s += cls_now() - tb;
    pc->info.parts_built++;
    pc->info.parts_resetup += amg_device_is_rebuilt(ap->d);
    amg_info ai;
    const int have_info = amg_device_info(ap->d, &ai) == 0;
    if (k == 0 && have_info)
        pc_amg_describe(pc, &ai, 1);
    amg_dkept *kd;
    if (key && have_info && amg_device_bytes(&ai, lend) <= 0.25 * (double)p->dev.global_mem &&
        (kd = calloc(1, sizeof *kd))) {
        kd->d = ap->d;
        kd->ctx = ctx;
        clRetainContext(ctx);
        if ((ap->centry = pc_cache_put(key, PRECOND_AMG, p->halo.nlocal, kd, amg_dkept_drop))) {
            pc_cache_set_tag(ap->centry, tag);
            pc_cache_set_pattern(ap->centry, pattern);
            ap->dkept = 1;
        } else { /* every slot held: the part keeps it */
            clReleaseContext(ctx);
            free(kd);
        }
    }
    return CLS_OK;
}

/* Collective: 1 for the coupled hierarchy. Asked for: coupled on several
 * parts, or on one part of one rank (the one-part loop runs M on its rank
 * alone). auto: coupled on several parts where the hierarchy is set up on
 * the host anyway (CPU devices, float and mixed, --precond-setup host);
 * block where it is set up on the device: there the coupled set-up cost
 * 2.6-5.3 s at poisson3d 256 against the block's 0.2-0.6 s on an H200
 * (its steps move each part's rows to the device and back), more than its
 * fewer iterations (16 against 66-79 on 2-4 parts) save in one solve
 * (docs/benchmarks.md, "AMG coupled across parts"). */
static int pc_amg_coupled_wanted(pc *pc)
{
    dsys *s = pc->s;
    if (!s->L || pc->opt.coupling == PC_COUPLING_BLOCK)
        return 0;
    if (pc->opt.coupling == PC_COUPLING_COUPLED)
        return s->L->nparts > 1 || s->size == 1;
    if (s->L->nparts <= 1)
        return 0;
    int dev = 0;
    if (s->nmine > 0) {
        cls_error e;
        cls_error_clear(&e);
        if (pc_setup_on_device(pc, &s->parts[0], &dev, &e) != CLS_OK)
            dev = 0; /* the block set-up reports it */
    }
    MPI_Allreduce(MPI_IN_PLACE, &dev, 1, MPI_INT, MPI_MAX, s->comm);
    return !dev;
}

/* part k's host hierarchy onto its device for the device V-cycle: in the
 * set-up, or at the first device apply where the solve said it runs on the
 * native CPU loops (pc_options.native_apply), which need none of it: on
 * PoCL with empty caches its program alone took 2.6 s */
static int pc_amg_upload(pc *pc, int k, cls_error *err)
{
    amg_part *ap = pc->part[k].state;
    if (ap->d)
        return CLS_OK;
    const amg_setup *a = ap->own ? ap->own : pc_cache_data(ap->centry);
    if (!a)
        return cls_fail(err, CLS_EOTHER, "amg: part %d has no hierarchy", k);
    dpart *p = &pc->s->parts[k];
    return p->halo.nghost == 0 && !p->have_Ab ? amg_upload_fine(a->h, &p->la, &p->Ai, &ap->d, err)
                                              : amg_upload(a->h, &p->la, &ap->d, err);
}

/* one hierarchy per part's block: built on the device, or from the cache
 * or built on the host, then uploaded */
static int pc_amg_setup(pc *pc, cls_error *err)
{
    dsys *s = pc->s;
    if (pc_amg_coupled_wanted(pc))
        return pc_amg_coupled_setup(pc, err); /* one M over every part */
    const int cache = pc_cache_enabled(&pc->opt);
    for (int k = 0; k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        amg_part *ap = calloc(1, sizeof *ap);
        if (!ap)
            return cls_fail(err, CLS_EOTHER, "out of memory for the preconditioner");
        pc->part[k].state = ap;
        int dev = 0, rc = pc_setup_on_device(pc, p, &dev, err);
        if (rc)
            return rc;
        if (dev) {
            if ((rc = pc_amg_setup_device(pc, p, ap, k, err)))
                return rc;
            pc->device_only = 1; /* the native loops need a host hierarchy */
            pc->info.on_device = 1;
            continue;
        }
        uint64_t pattern = 0;
        uint64_t key = cache ? pc_cache_part_keys(p, PRECOND_AMG, 0, &pattern) : 0;
        ap->centry = cache ? pc_cache_get(key, PRECOND_AMG, p->halo.nlocal) : NULL;
        amg_setup *a = pc_cache_data(ap->centry);
        if (a) {
            pc->info.parts_reused++;
        } else {
            amg_options ao;
            amg_options_default(&ao);
            const double tb = cls_now();
            if (!(a = calloc(1, sizeof *a)))
                return cls_fail(err, CLS_EOTHER, "out of memory for the preconditioner");
            /* the same pattern with other values (a time step, a new
             * coefficient): the earlier hierarchy's aggregates, the values
             * anew (amg_rebuild, AmgX's resetup) */
            struct pc_cache_entry *like =
                cache && pc_amg_resetup_on()
                    ? pc_cache_get_pattern(pattern, PRECOND_AMG, p->halo.nlocal)
                    : NULL;
            const amg_setup *la = pc_cache_data(like);
            if (!(rc = pc_local_block(p, &a->A, err)))
                rc = la && la->A.nnz == a->A.nnz ? amg_rebuild(&a->A, la->h, &a->h, err)
                                                 : amg_build(&a->A, &ao, &a->h, err);
            pc_cache_release(like);
            if (rc) {
                amg_setup_drop(a);
                return rc;
            }
            pc->info.build_s += cls_now() - tb;
            pc->info.parts_built++;
            pc->info.parts_resetup += amg_is_rebuilt(a->h);
            ap->centry =
                cache ? pc_cache_put(key, PRECOND_AMG, p->halo.nlocal, a, amg_setup_drop) : NULL;
            pc_cache_set_pattern(ap->centry, pattern);
            if (!ap->centry)
                ap->own = a;
        }
        if (!pc->opt.native_apply && (rc = pc_amg_upload(pc, k, err)))
            return rc;
        if (k == 0) {
            amg_info ai;
            amg_get_info(a->h, &ai);
            pc_amg_describe(pc, &ai, 0);
        }
    }
    return CLS_OK;
}

static int pc_amg_apply_part(pc *pc, int k, const la_vec *r, la_vec *z, cls_error *err)
{
    amg_part *ap = pc->part[k].state;
    int rc = pc_amg_upload(pc, k, err);
    return rc ? rc : amg_apply(ap->d, &pc->s->parts[k].la, r, z, err); /* one V-cycle */
}

static int pc_amg_apply_part_block(pc *pc, int k, int ncols, const la_vec *const *r,
                                   la_vec *const *z, cls_error *err)
{
    amg_part *ap = pc->part[k].state;
    int rc = pc_amg_upload(pc, k, err);
    return rc ? rc
              : amg_apply_block(ap->d, &pc->s->parts[k].la, ncols, r, z, err); /* one V-cycle */
}

/* one V-cycle on the native loops' team (amg_native.c) */
static int pc_amg_apply_host(pc *pc, const cpu_ws *ws, const cpu_csr *A, const double *r, double *z,
                             cls_error *err)
{
    amg_part *ap = pc->part[0].state;
    const amg_setup *a = ap->own ? ap->own : ap->dkept ? NULL : pc_cache_data(ap->centry);
    if (!a)
        return cls_fail(err, CLS_EUSAGE,
                        "amg: the hierarchy was set up on the device (--precond-setup device), "
                        "and the native CPU loops need the host's: use --precond-setup host or "
                        "--backend kernels");
    if (a->A.nrows != A->n)
        return cls_fail(err, CLS_EOTHER, "amg: the hierarchy is not the system's");
    int rc;
    if (!ap->nw && (rc = amg_native_ws_create(a->h, &ap->nw, err)))
        return rc;
    return amg_apply_native(a->h, ap->nw, ws->team, r, z, err);
}

static void pc_amg_release(pc *pc)
{
    pc_amg_coupled_release(pc); /* the coupled mode's state, if any */
    for (int k = 0; pc->part && k < pc->nmine; k++) {
        amg_part *ap = pc->part[k].state;
        if (!ap)
            continue;
        if (ap->d && ap->dkept) {
            /* kept: idle before another solve (another lane's queue) takes it */
            if (pc->s && k < pc->s->nmine)
                la_finish(&pc->s->parts[k].la, NULL);
            amg_device_detach(ap->d);
        } else if (ap->d) {
            amg_device_release(ap->d);
        }
        amg_native_ws_free(ap->nw);
        pc_cache_release(ap->centry);
        if (ap->own)
            amg_setup_drop(ap->own);
        free(ap);
        pc->part[k].state = NULL;
    }
}

static void pc_amg_info_json(const pc_info *in, json_t *o)
{
    json_error_t je;
    json_t *a = in->amg[0] ? json_loads(in->amg, 0, &je) : NULL;
    if (a)
        json_object_set_new(o, "amg", a);
}

const pc_kind pc_amg_kind = {
    .collective = 1, /* the coupled mode's set-up exchanges halos and gathers */
    .reports_setup = 1,
    .setup = pc_amg_setup,
    .apply_part = pc_amg_apply_part,
    .apply_part_block = pc_amg_apply_part_block,
    .apply_host = pc_amg_apply_host,
    .release = pc_amg_release,
    .info_json = pc_amg_info_json,
};
