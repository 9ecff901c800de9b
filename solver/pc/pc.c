/*
 * pc.c: the preconditioners' common layer (pc.h): the table made from
 * kinds.def, the set-up every kind goes through in one order, the dispatch
 * of z = M^-1 r, the release and the report's common keys. What a kind is
 * and does is its own file's (pc_kind.h); this file names no kind but auto.
 *
 * The set-up, collective over the dsys: the per-part kernels and D^-1 when
 * the kind asks for them (local work), an agreement that every rank got
 * that far (a kind with collective steps, chebyshev's Lanczos, must be
 * entered by every rank or none), the kind's setup, every device finished,
 * then the report reduced over the ranks (times and the largest shift and
 * levels by max, counts by sum). A rank whose own set-up worked returns
 * CLS_OK even when another failed; the caller agrees (dsolve_agree).
 */
#include "pc_kind.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/parallel.h"
#include "../../common/timer.h"
#include "../../common/trace.h"

/* auto is resolved before a set-up (pc_resolve): its row refuses */
static int pc_auto_setup(pc *pc, cls_error *err)
{
    (void)pc;
    return cls_fail(err, CLS_EOTHER, "pc_setup: `auto` must be resolved first (pc_resolve)");
}
const pc_kind pc_auto_kind = {.setup = pc_auto_setup};

static const struct {
    solver_precond type;
    const pc_kind *kind;
} pc_kinds[] = {
#define PC_KIND(id, name, aliases, kind) {id, &kind},
#include "kinds.def"
#undef PC_KIND
};

static const pc_kind *pc_kind_of(solver_precond t)
{
    for (size_t i = 0; i < sizeof pc_kinds / sizeof *pc_kinds; i++)
        if (pc_kinds[i].type == t)
            return pc_kinds[i].kind;
    return &pc_auto_kind;
}

int pc_may_use_diag(solver_precond t)
{
    return t == PRECOND_AUTO || pc_kind_of(t)->needs_diag;
}

/* ------------------------------------------------------------------ setup */

typedef struct diag_ctx {
    const dpart *p;
    double *d; /* part row order */
} diag_ctx;

static void diag_rows(void *arg, int range, int64_t i0, int64_t i1)
{
    (void)range;
    const diag_ctx *c = arg;
    const csr_matrix *A = &c->p->A;
    const int64_t base = A->rowptr[0];
    for (int64_t i = i0; i < i1; i++) {
        double d = 0.0;
        for (int64_t j = A->rowptr[i] - base; j < A->rowptr[i + 1] - base; j++)
            if (A->col[j] == i)
                d = A->val[j];
        c->d[i] = 1.0 / d; /* a_ii > 0: checked on input */
    }
}

/* D^-1 of every part, uploaded into pc->dinv (device order) */
int pc_diag(pc *pc, cls_error *err)
{
    dsys *s = pc->s;
    double **h = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *h);
    int rc = h ? dvec_create(s, 0, &pc->dinv, err)
               : cls_fail(err, CLS_EOTHER, "out of memory for the diagonal");
    for (int k = 0; !rc && k < s->nmine; k++) {
        dpart *p = &s->parts[k];
        if (p->dinv) { /* the input's check made it (dsolve: one rank, one part) */
            h[k] = p->dinv;
            p->dinv = NULL;
            continue;
        }
        h[k] = malloc((size_t)(p->halo.nlocal ? p->halo.nlocal : 1) * sizeof **h);
        if (!h[k]) {
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the diagonal");
            break;
        }
        diag_ctx dc = {p, h[k]};
        cls_parallel_for(p->halo.nlocal, 65536, diag_rows, &dc);
    }
    if (!rc)
        rc = dvec_upload(s, &pc->dinv, h, err);
    if (!rc && s->nmine == 1) { /* one part: kept for the native apply (pc_apply_host) */
        pc->dinv_host = h[0];
        h[0] = NULL;
    }
    for (int k = 0; h && k < s->nmine; k++)
        free(h[k]);
    free(h);
    return rc;
}

int pc_setup(dsys *s, const pc_options *o, pc *pc, cls_error *err)
{
    memset(pc, 0, sizeof *pc);
    pc->s = s;
    pc->opt = *o;
    pc->type = o->type;
    pc->kind = pc_kind_of(o->type);
    pc->info.type = o->type;
    pc->nmine = s->nmine;
    const pc_kind *kind = pc->kind;
    pc->apply = kind->apply; /* a kind's set-up may choose a global M (amg coupled) */
    const double t0 = cls_now();
    int rc = CLS_OK;
    pc->part = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *pc->part);
    if (!pc->part)
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the preconditioner");
    /* local work, agreed before the kind's set-up. The kernels (la_pck) are
     * made here where the apply runs on the devices, so that a program built
     * from source counts in the set-up and not in the solve's first
     * iterations (3 s of pc.cl on an H200 with empty caches); a solve on the
     * native CPU loops (native_apply) makes them at its first device apply,
     * if one comes (pc_part_kernels) */
    for (int k = 0; !rc && k < s->nmine; k++)
        pc->part[k].la = &s->parts[k].la;
    for (int k = 0; !rc && kind->needs_kernels && !o->native_apply && k < s->nmine; k++)
        rc = pc_part_kernels(pc, k, err);
    if (!rc && kind->needs_diag)
        rc = pc_diag(pc, err);
    cls_trace("pc: diagonal");
    if (kind->collective) {
        /* every rank enters the collective steps or none; a rank that has
         * not failed itself returns CLS_OK and leaves the message to the
         * failing rank (the caller agrees: dsolve_agree names it) */
        int mine = rc != CLS_OK, others = 0;
        MPI_Allreduce(&mine, &others, 1, MPI_INT, MPI_MAX, s->comm);
        if (!rc && !others)
            rc = kind->setup(pc, err);
    } else if (!rc && kind->setup) {
        rc = kind->setup(pc, err);
    }
    for (int k = 0; !rc && k < s->nmine; k++)
        rc = la_finish(&s->parts[k].la, err);
    cls_trace("pc: set up");
    /* the report: counts summed, the largest shift and levels, max time */
    pc->info.setup_s = cls_now() - t0;
    {
        double mx[4] = {pc->info.setup_s, pc->info.build_s, pc->info.shift,
                        (double)pc->info.levels};
        long long sm[5] = {pc->info.parts_built, pc->info.parts_reused, pc->info.shifted_parts,
                           (long long)pc->info.factor_nnz, pc->info.parts_resetup};
        MPI_Allreduce(MPI_IN_PLACE, mx, 4, MPI_DOUBLE, MPI_MAX, s->comm);
        MPI_Allreduce(MPI_IN_PLACE, sm, 5, MPI_LONG_LONG, MPI_SUM, s->comm);
        if (pc->kind->global_setup) { /* one global set-up: not a sum over ranks */
            sm[0] = pc->info.parts_built ? 1 : 0;
            sm[1] = pc->info.parts_reused ? 1 : 0;
            sm[4] = pc->info.parts_resetup ? 1 : 0;
        }
        pc->info.setup_s = mx[0];
        pc->info.build_s = mx[1];
        pc->info.shift = mx[2];
        pc->info.levels = (int)mx[3];
        pc->info.parts_built = (int)sm[0];
        pc->info.parts_reused = (int)sm[1];
        pc->info.shifted_parts = (int)sm[2];
        pc->info.factor_nnz = sm[3];
        pc->info.parts_resetup = (int)sm[4];
        if (pc->info.shifted_parts > 0)
            snprintf(pc->info.note, sizeof pc->info.note,
                     "IC(0) met a non-positive pivot in %d part(s): the diagonal was shifted "
                     "by up to %.3g a_ii (Manteuffel); the answer is unaffected, the iterations "
                     "may grow",
                     pc->info.shifted_parts, pc->info.shift);
    }
    return rc;
}

/* ------------------------------------------------------------------ apply */

void pc_apply(pc *pc, const dvec *r, dvec *z)
{
    dsys *s = pc->s;
    if (pc->apply) { /* a global M (collective) */
        pc->apply(pc, r, z);
        return;
    }
    for (int k = 0; k < s->nmine; k++) {
        la_vec vr = pc_loc(s, r, k), vz = pc_loc(s, z, k);
        DSYS_DO(s, pc->kind->apply_part(pc, k, &vr, &vz, DSYS_ERR));
    }
}

void pc_apply_block(pc *pc, int ncols, const dvec *const *r, dvec *const *z)
{
    dsys *s = pc->s;
    if (pc->apply || !pc->kind->apply_part_block || ncols < 2) {
        for (int c = 0; c < ncols; c++)
            pc_apply(pc, r[c], z[c]);
        return;
    }
    for (int c0 = 0; c0 < ncols; c0 += 8) {
        int m = ncols - c0 < 8 ? ncols - c0 : 8;
        for (int k = 0; k < s->nmine; k++) {
            la_vec vr[8], vz[8];
            const la_vec *pr[8];
            la_vec *pz[8];
            for (int c = 0; c < m; c++) {
                vr[c] = pc_loc(s, r[c0 + c], k);
                vz[c] = pc_loc(s, z[c0 + c], k);
                pr[c] = &vr[c];
                pz[c] = &vz[c];
            }
            DSYS_DO(s, pc->kind->apply_part_block(pc, k, m, pr, pz, DSYS_ERR));
        }
    }
}

int pc_has_block(const pc *pc)
{
    return pc->kind && pc->kind->apply_part_block && !pc->apply;
}

int pc_apply_one(void *ctx, const la_vec *r, la_vec *z, cls_error *err)
{
    pc *pc = ctx;
    la_vec vr = *r, vz = *z;
    vr.n = vz.n = pc->s->parts[0].halo.nlocal;
    if (pc->apply && !pc->kind->apply_one) { /* a global M on its one part (one rank) */
        dsys *s = pc->s;
        dvec dr = {.v = &vr, .nmine = 1}, dz = {.v = &vz, .nmine = 1};
        pc->apply(pc, &dr, &dz);
        if (s->failed) {
            *err = s->ferr;
            return err->code ? err->code : CLS_EOTHER;
        }
        return CLS_OK;
    }
    if (pc->kind->apply_one)
        return pc->kind->apply_one(pc, &vr, &vz, err);
    if (!pc->kind->apply_part)
        return cls_fail(err, CLS_EOTHER, "pc_apply: %s has no one-part form", pc_name(pc->type));
    return pc->kind->apply_part(pc, 0, &vr, &vz, err);
}

int pc_has_host(const pc *pc)
{
    const dsys *s = pc->s;
    return pc->kind && pc->kind->apply_host && !pc->device_only && s->nmine == 1 && s->L &&
           s->L->nparts == 1 && !s->parts[0].perm && s->parts[0].halo.nghost == 0;
}

int pc_apply_host(void *ctx, const struct cpu_ws *ws, const struct cpu_csr *A, const double *r,
                  double *z, cls_error *err)
{
    pc *pc = ctx;
    if (!pc_has_host(pc))
        return cls_fail(err, CLS_EOTHER, "pc_apply_host: %s has no native apply here",
                        pc_name(pc->type));
    return pc->kind->apply_host(pc, ws, A, r, z, err);
}

int pc_part_kernels(pc *pc, int k, cls_error *err)
{
    pc_part *p = &pc->part[k];
    if (p->have_k)
        return CLS_OK;
    int rc = la_pck_create(p->la, &p->k, err);
    p->have_k = rc == CLS_OK;
    return rc;
}

void pc_release(pc *pc)
{
    if (!pc)
        return;
    free(pc->dinv_host);
    pc->dinv_host = NULL;
    if (pc->kind && pc->kind->release)
        pc->kind->release(pc);
    for (int k = 0; pc->part && k < pc->nmine; k++)
        if (pc->part[k].have_k)
            la_pck_release(&pc->part[k].k);
    free(pc->part);
    pc->part = NULL;
    dvec_release(&pc->dinv);
}

/* ----------------------------------------------------------------- report */

json_t *pc_info_json(const pc_info *in)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(pc_name(in->type)));
    json_object_set_new(o, "setup_s", json_real(in->setup_s));
    json_object_set_new(o, "build_s", json_real(in->build_s));
    if (pc_kind_of(in->type)->reports_setup) { /* a set-up worth counting */
        json_object_set_new(o, "built", json_integer(in->parts_built));
        json_object_set_new(o, "reused", json_integer(in->parts_reused));
        json_object_set_new(o, "resetup", json_integer(in->parts_resetup));
        json_object_set_new(o, "setup", json_string(in->on_device ? "device" : "host"));
    }
    const pc_kind *kind = pc_kind_of(in->type);
    if (kind->info_json)
        kind->info_json(in, o);
    if (in->note[0])
        json_object_set_new(o, "note", json_string(in->note));
    return o;
}
