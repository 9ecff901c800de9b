/*
 * pc.c: the preconditioners' common layer (pc.h): names and options (the
 * one parse function every front end calls), the `auto` rule, the
 * collective set-up and its reuse cache, the dispatch of z = M^-1 r, and
 * the report.
 *
 * Set-up per type: jacobi and chebyshev need D^-1 (from each part's
 * diagonal, device order); chebyshev then its Lanczos bounds (pc_cheby.c);
 * ic0 a factor per part (pc_ic0.c); amg a hierarchy per part (solver/amg*.c).
 * Host set-ups that cost real time (an IC(0) factor, an AMG hierarchy, the
 * Lanczos bounds) are kept in a small process-wide cache keyed by a 64-bit
 * content hash of the part's rows (global columns and values, its first row
 * and size: what the block and its device order are functions of) and the
 * options that shape the set-up. A second solve of the same matrix in the
 * same process (the daemon's ranks live across jobs) takes the cached host
 * set-up and only uploads it. The hash is a sum over rows of a mixed
 * per-row hash, so it does not depend on how the rows are split between
 * threads. A collision would reuse a wrong set-up: 2^-64 per pair, and the
 * entry's size is compared too.
 */
#include "pc.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../common/parallel.h"
#include "../../common/timer.h"
#include "../../common/trace.h"

#ifdef CLS_HAVE_AMG
#include "../amg/amg.h"
#endif

/* ------------------------------------------------------------------ hashes */

static uint64_t pc_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct hash_ctx {
    const dpart *p;
    const csr_matrix *B;
    uint64_t *sums; /* per range */
} hash_ctx;

/* sum over rows of mix(row hash): rows hashed with their global index,
 * global columns and value bits */
static void hash_rows(void *arg, int range, int64_t i0, int64_t i1)
{
    hash_ctx *c = arg;
    uint64_t sum = 0;
    for (int64_t i = i0; i < i1; i++) {
        uint64_t h;
        int64_t e0, e1;
        if (c->p) {
            const csr_matrix *A = &c->p->A;
            const halo_plan *hp = &c->p->halo;
            const int64_t base = A->rowptr[0];
            e0 = A->rowptr[i] - base;
            e1 = A->rowptr[i + 1] - base;
            h = pc_mix((uint64_t)(hp->row_begin + i) + 0x9e3779b97f4a7c15ull);
            for (int64_t e = e0; e < e1; e++) {
                int64_t c2 = A->col[e];
                int64_t g =
                    c2 < hp->nlocal ? hp->row_begin + c2 : hp->ghost_global[c2 - hp->nlocal];
                uint64_t vb;
                memcpy(&vb, &A->val[e], sizeof vb);
                h = pc_mix(h ^ (uint64_t)g) + vb * 0x2545f4914f6cdd1dull;
            }
        } else {
            const csr_matrix *B = c->B;
            h = pc_mix((uint64_t)i + 0x9e3779b97f4a7c15ull);
            for (int64_t e = B->rowptr[i]; e < B->rowptr[i + 1]; e++) {
                uint64_t vb;
                memcpy(&vb, &B->val[e], sizeof vb);
                h = pc_mix(h ^ (uint64_t)B->col[e]) + vb * 0x2545f4914f6cdd1dull;
            }
        }
        sum += pc_mix(h);
    }
    c->sums[range] = sum;
}

static uint64_t hash_sum(hash_ctx *c, int64_t n, uint64_t seed)
{
    int t = cls_parallel_ranges(n, 16384);
    uint64_t local[64], *sums = t <= 64 ? local : malloc((size_t)t * sizeof *sums);
    if (!sums)
        return 0; /* no hash: never matches (the cache refuses key 0) */
    c->sums = sums;
    cls_parallel_for(n, 16384, hash_rows, c);
    uint64_t h = seed;
    for (int q = 0; q < t; q++)
        h += sums[q]; /* a sum: the split into ranges does not matter */
    if (sums != local)
        free(sums);
    return pc_mix(h ^ (uint64_t)n);
}

uint64_t pc_hash_csr(const csr_matrix *B)
{
    hash_ctx c = {NULL, B, NULL};
    return hash_sum(&c, B->nrows, 0x1234567u);
}

static uint64_t pc_hash_part(const dpart *p)
{
    hash_ctx c = {p, NULL, NULL};
    return hash_sum(&c, p->A.nrows, (uint64_t)p->halo.row_begin * 0x9e3779b97f4a7c15ull);
}

/* ------------------------------------------------------------- the block */

int pc_local_block(const dpart *p, csr_matrix *B, cls_error *err)
{
    const csr_matrix *A = &p->A;
    const int64_t n = p->halo.nlocal, base = A->rowptr[0];
    int32_t *iperm = NULL;
    csr_init(B);
    if (p->perm) {
        iperm = malloc((size_t)(n ? n : 1) * sizeof *iperm);
        if (!iperm)
            return cls_fail(err, CLS_EOTHER, "out of memory for a part's block");
        for (int64_t i = 0; i < n; i++)
            iperm[p->perm[i]] = (int32_t)i;
    }
    int64_t nnz = 0;
    for (int64_t e = 0; e < A->rowptr[n] - base; e++)
        nnz += A->col[e] < n;
    int rc = csr_alloc(B, n, n, nnz, err);
    if (rc) {
        free(iperm);
        return rc;
    }
    int64_t q = 0;
    B->rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++) { /* device row i is row perm[i] of A */
        int64_t r = p->perm ? p->perm[i] : i;
        int64_t s0 = q;
        for (int64_t e = A->rowptr[r] - base; e < A->rowptr[r + 1] - base; e++)
            if (A->col[e] < n) {
                B->col[q] = iperm ? iperm[A->col[e]] : A->col[e];
                B->val[q++] = A->val[e];
            }
        /* insertion sort: rows are short and nearly sorted */
        for (int64_t a = s0 + 1; a < q; a++) {
            int32_t c = B->col[a];
            double v = B->val[a];
            int64_t b = a;
            while (b > s0 && B->col[b - 1] > c) {
                B->col[b] = B->col[b - 1];
                B->val[b] = B->val[b - 1];
                b--;
            }
            B->col[b] = c;
            B->val[b] = v;
        }
        B->rowptr[i + 1] = q;
    }
    free(iperm);
    return CLS_OK;
}

/* ------------------------------------------------------------------ cache */

#define PC_CACHE_MAX 4

typedef struct pc_cache_entry {
    int used, refs;
    uint64_t key, stamp;
    solver_precond type;
    int64_t n;
    pc_ic0_factor f;   /* ic0 */
    void *amg_h;       /* amg: the hierarchy, which borrows amg_A (amg.h) */
    csr_matrix amg_A;  /* amg: the part's block the hierarchy was built on */
    double lmin, lmax; /* chebyshev */
    int lanczos_used;
} pc_cache_entry;

static pc_cache_entry pc_cache[PC_CACHE_MAX];
static uint64_t pc_cache_clock;
static pthread_mutex_t pc_cache_mu = PTHREAD_MUTEX_INITIALIZER;

static int pc_cache_enabled(const pc_options *o)
{
    const char *v = getenv("CLSOLVE_PC_CACHE");
    return o->reuse && !(v && !strcmp(v, "0"));
}

static void pc_cache_drop(pc_cache_entry *e)
{
    pc_ic0_factor_free(&e->f);
#ifdef CLS_HAVE_AMG
    if (e->amg_h)
        amg_free(e->amg_h);
#endif
    csr_free(&e->amg_A);
    memset(e, 0, sizeof *e);
}

void pc_cache_clear(void)
{
    pthread_mutex_lock(&pc_cache_mu);
    for (int i = 0; i < PC_CACHE_MAX; i++)
        if (pc_cache[i].used && pc_cache[i].refs == 0)
            pc_cache_drop(&pc_cache[i]);
    pthread_mutex_unlock(&pc_cache_mu);
}

/* the entry for (key, type, n) with refs + 1, or NULL */
static pc_cache_entry *pc_cache_get(uint64_t key, solver_precond t, int64_t n)
{
    pc_cache_entry *hit = NULL;
    if (!key)
        return NULL;
    pthread_mutex_lock(&pc_cache_mu);
    for (int i = 0; i < PC_CACHE_MAX && !hit; i++)
        if (pc_cache[i].used && pc_cache[i].key == key && pc_cache[i].type == t &&
            pc_cache[i].n == n) {
            hit = &pc_cache[i];
            hit->refs++;
            hit->stamp = ++pc_cache_clock;
        }
    pthread_mutex_unlock(&pc_cache_mu);
    return hit;
}

/* a free (or the least recently used idle) slot, refs = 1; NULL if all busy */
static pc_cache_entry *pc_cache_slot(uint64_t key, solver_precond t, int64_t n)
{
    pc_cache_entry *e = NULL;
    if (!key)
        return NULL;
    pthread_mutex_lock(&pc_cache_mu);
    for (int i = 0; i < PC_CACHE_MAX; i++) {
        pc_cache_entry *c = &pc_cache[i];
        if (!c->used) {
            e = c;
            break;
        }
        if (c->refs == 0 && (!e || c->stamp < e->stamp))
            e = c;
    }
    if (e) {
        if (e->used)
            pc_cache_drop(e);
        e->used = 1;
        e->refs = 1;
        e->key = key;
        e->type = t;
        e->n = n;
        e->stamp = ++pc_cache_clock;
    }
    pthread_mutex_unlock(&pc_cache_mu);
    return e;
}

static void pc_cache_put(pc_cache_entry *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&pc_cache_mu);
    e->refs--;
    pthread_mutex_unlock(&pc_cache_mu);
}

/* key of a per-part set-up: the part's content and the options shaping it */
static uint64_t pc_part_key(const pc *pc, int k)
{
    uint64_t h = pc_hash_part(&pc->s->parts[k]);
    uint64_t o = (uint64_t)pc->type * 1000003u;
    if (pc->type == PRECOND_IC0) {
        uint64_t sb;
        memcpy(&sb, &pc->opt.shift, sizeof sb);
        o ^= pc_mix(sb);
    }
    return h ? pc_mix(h ^ pc_mix(o)) | 1u : 0;
}

int pc_ic0_part_factor(pc *pc, int k, const pc_ic0_factor **out, int *reused, cls_error *err)
{
    const dpart *p = &pc->s->parts[k];
    pc_cache_entry *e = NULL;
    uint64_t key = 0;
    *reused = 0;
    const int cache = pc_cache_enabled(&pc->opt);
    if (cache) {
        key = pc_part_key(pc, k);
        e = pc_cache_get(key, PRECOND_IC0, p->halo.nlocal);
        if (e) {
            *reused = 1;
            pc->part[k].centry = e; /* given back at release */
            *out = &e->f;
            return CLS_OK;
        }
    }
    csr_matrix B;
    cls_trace("pc: content hash");
    const double tb = cls_now();
    /* a part without ghosts in its own order is its block: the factor only
     * reads it, so a view does (AMG keeps its block, so it copies) */
    const int view = !p->perm && p->halo.nghost == 0 && p->A.rowptr[0] == 0;
    int rc = CLS_OK;
    if (view)
        B = p->A;
    else if ((rc = pc_local_block(p, &B, err)))
        return rc;
    cls_trace("pc: the part's block");
    pc_ic0_factor f;
    rc = pc_ic0_factor_build(&B, pc->opt.shift, &f, err);
    cls_trace("pc: IC(0) factor");
    if (!view)
        csr_free(&B);
    pc->info.build_s += cls_now() - tb;
    if (rc)
        return rc;
    e = cache ? pc_cache_slot(key, PRECOND_IC0, p->halo.nlocal) : NULL;
    if (!e) { /* no cache: the part keeps its own factor until release */
        pc_ic0_factor *own = malloc(sizeof *own);
        if (!own) {
            pc_ic0_factor_free(&f);
            return cls_fail(err, CLS_EOTHER, "out of memory for the factor");
        }
        *own = f;
        pc->part[k].own_f = own;
        *out = own;
        return CLS_OK;
    }
    e->f = f;
    pc->part[k].centry = e;
    *out = &e->f;
    return CLS_OK;
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
static int pc_diag(pc *pc, cls_error *err)
{
    dsys *s = pc->s;
    double **h = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *h);
    int rc = h ? dvec_create(s, 0, &pc->dinv, err)
               : cls_fail(err, CLS_EOTHER, "out of memory for the diagonal");
    for (int k = 0; !rc && k < s->nmine; k++) {
        const dpart *p = &s->parts[k];
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
    for (int k = 0; h && k < s->nmine; k++)
        free(h[k]);
    free(h);
    return rc;
}

/* the chebyshev bounds: cached by the whole matrix's hash (every rank must
 * hit for any to reuse), else Lanczos */
static int pc_cheby_bounds(pc *pc, cls_error *err)
{
    dsys *s = pc->s;
    uint64_t key = 0;
    int hit = 0;
    pc_cache_entry *e = NULL;
    const int cache = pc_cache_enabled(&pc->opt);
    if (cache) {
        uint64_t h = 0;
        for (int k = 0; k < s->nmine; k++)
            h ^= pc_hash_part(&s->parts[k]);
        if (MPI_Allreduce(MPI_IN_PLACE, &h, 1, MPI_UINT64_T, MPI_BXOR, s->comm) != MPI_SUCCESS)
            return cls_fail(err, CLS_EOTHER, "MPI_Allreduce(matrix hash) failed");
        key = pc_mix(h ^ pc_mix((uint64_t)pc->opt.lanczos * 7919u + PRECOND_CHEBYSHEV)) | 1u;
        e = pc_cache_get(key, PRECOND_CHEBYSHEV, s->L->begin[s->L->nparts]);
        hit = e != NULL;
        if (MPI_Allreduce(MPI_IN_PLACE, &hit, 1, MPI_INT, MPI_MIN, s->comm) != MPI_SUCCESS)
            return cls_fail(err, CLS_EOTHER, "MPI_Allreduce(cache) failed");
    }
    int rc;
    if (hit) {
        pc->info.lmin = e->lmin;
        pc->info.lmax = e->lmax;
        pc->info.lanczos = e->lanczos_used;
        pc->info.parts_reused = s->nmine;
        rc = pc_cheby_setup(pc, err);
    } else {
        const double tb = cls_now();
        pc->info.lmax = 0.0; /* pc_cheby_setup estimates */
        rc = pc_cheby_setup(pc, err);
        pc->info.build_s += cls_now() - tb;
        pc->info.parts_built = s->nmine;
        if (!rc && cache) {
            pc_cache_entry *n =
                e ? e : pc_cache_slot(key, PRECOND_CHEBYSHEV, s->L->begin[s->L->nparts]);
            if (n) {
                n->lmin = pc->info.lmin;
                n->lmax = pc->info.lmax;
                n->lanczos_used = pc->info.lanczos;
                if (!e)
                    pc_cache_put(n);
            }
        }
    }
    pc_cache_put(e);
    return rc;
}

#ifdef CLS_HAVE_AMG
/* the hierarchy's description for the report: levels, rows and nonzeros
 * per level, complexities, set-up time (amg_get_info) */
static void pc_amg_info(pc *pc, const amg_hierarchy *h)
{
    amg_info ai;
    amg_get_info(h, &ai);
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
    char *t = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
    if (t && strlen(t) < sizeof pc->info.amg)
        snprintf(pc->info.amg, sizeof pc->info.amg, "%s", t);
    free(t);
    json_decref(o);
    pc->info.levels = ai.levels;
}

/* one hierarchy per part's block (block Jacobi across parts): from the
 * cache or built; uploaded, level 0 sharing the engine's copy of the matrix
 * when the part has no ghosts (its interior block is then the whole block) */
static int pc_amg_setup(pc *pc, cls_error *err)
{
    dsys *s = pc->s;
    const int cache = pc_cache_enabled(&pc->opt);
    for (int k = 0; k < s->nmine; k++) {
        pc_part *pp = &pc->part[k];
        dpart *p = &s->parts[k];
        uint64_t key = cache ? pc_part_key(pc, k) : 0;
        pc_cache_entry *e = cache ? pc_cache_get(key, PRECOND_AMG, p->halo.nlocal) : NULL;
        amg_hierarchy *h = NULL;
        int rc;
        if (e) {
            h = e->amg_h;
            pc->info.parts_reused++;
        } else {
            csr_matrix B;
            amg_options ao;
            amg_options_default(&ao);
            const double tb = cls_now();
            if ((rc = pc_local_block(p, &B, err)))
                return rc;
            if ((rc = amg_build(&B, &ao, &h, err))) {
                csr_free(&B);
                return rc;
            }
            pc->info.build_s += cls_now() - tb;
            pc->info.parts_built++;
            e = cache ? pc_cache_slot(key, PRECOND_AMG, p->halo.nlocal) : NULL;
            if (e) { /* the cache owns the hierarchy and the block it borrows */
                e->amg_h = h;
                e->amg_A = B;
            } else { /* the part does */
                pp->amg_A = B;
            }
        }
        pp->centry = e;
        pp->amg_h = h;
        amg_device *d = NULL;
        rc = p->halo.nghost == 0 && !p->have_Ab ? amg_upload_fine(h, &p->la, &p->Ai, &d, err)
                                                : amg_upload(h, &p->la, &d, err);
        if (rc)
            return rc;
        pp->amg_d = d;
        if (k == 0)
            pc_amg_info(pc, h);
    }
    return CLS_OK;
}
#endif

int pc_setup(dsys *s, const pc_options *o, pc *pc, cls_error *err)
{
    memset(pc, 0, sizeof *pc);
    pc->s = s;
    pc->opt = *o;
    pc->type = o->type;
    pc->info.type = o->type;
    pc->nmine = s->nmine;
    const double t0 = cls_now();
    int rc = CLS_OK;
    if (o->type == PRECOND_AUTO)
        rc = cls_fail(err, CLS_EOTHER, "pc_setup: `auto` must be resolved first (pc_resolve)");
    if (!rc && o->type == PRECOND_CHEBYSHEV && (o->degree < 1 || o->degree > 32))
        rc = cls_fail(err, CLS_EUSAGE, "chebyshev degree %d is not in 1..32", o->degree);
#ifndef CLS_HAVE_AMG
    if (!rc && o->type == PRECOND_AMG)
        rc = cls_fail(err, CLS_EUSAGE,
                      "--precond amg: smoothed-aggregation AMG is not built in this branch "
                      "(solver/amg.c comes from the amg branch); use chebyshev or ic0");
#endif
    if (!rc) {
        pc->part = calloc((size_t)(s->nmine ? s->nmine : 1), sizeof *pc->part);
        if (!pc->part)
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the preconditioner");
    }
    /* local work, agreed at the end: every failure is a class all ranks share */
    const int general = o->type != PRECOND_NONE && o->type != PRECOND_JACOBI;
    for (int k = 0; !rc && general && k < s->nmine; k++) {
        pc->part[k].la = &s->parts[k].la;
        if ((rc = la_pck_create(&s->parts[k].la, &pc->part[k].k, err)))
            break;
        pc->part[k].have_k = 1;
    }
    if (!rc && (o->type == PRECOND_JACOBI || o->type == PRECOND_CHEBYSHEV))
        rc = pc_diag(pc, err);
    cls_trace("pc: diagonal");
    /* chebyshev is collective (Lanczos): every rank enters it or none; a
     * rank that has not failed itself returns CLS_OK and leaves the message
     * to the failing rank (the caller agrees: dsolve_agree names it) */
    int others = 0;
    {
        int mine = rc != CLS_OK;
        MPI_Allreduce(&mine, &others, 1, MPI_INT, MPI_MAX, s->comm);
    }
    if (!rc && !others && o->type == PRECOND_CHEBYSHEV)
        rc = pc_cheby_bounds(pc, err);
    if (!rc && o->type == PRECOND_IC0)
        rc = pc_ic0_setup(pc, err);
#ifdef CLS_HAVE_AMG
    if (!rc && o->type == PRECOND_AMG)
        rc = pc_amg_setup(pc, err);
#endif
    for (int k = 0; !rc && k < s->nmine; k++)
        rc = la_finish(&s->parts[k].la, err);
    cls_trace("pc: set up");
    /* the report: counts summed, the largest shift and levels, max time */
    pc->info.setup_s = cls_now() - t0;
    {
        double mx[4] = {pc->info.setup_s, pc->info.build_s, pc->info.shift,
                        (double)pc->info.levels};
        long long sm[4] = {pc->info.parts_built, pc->info.parts_reused, pc->info.shifted_parts,
                           (long long)pc->info.factor_nnz};
        MPI_Allreduce(MPI_IN_PLACE, mx, 4, MPI_DOUBLE, MPI_MAX, s->comm);
        MPI_Allreduce(MPI_IN_PLACE, sm, 4, MPI_LONG_LONG, MPI_SUM, s->comm);
        if (o->type == PRECOND_CHEBYSHEV) { /* one global set-up: not a sum over ranks */
            sm[0] = pc->info.parts_built ? 1 : 0;
            sm[1] = pc->info.parts_reused ? 1 : 0;
        }
        pc->info.setup_s = mx[0];
        pc->info.build_s = mx[1];
        pc->info.shift = mx[2];
        pc->info.levels = (int)mx[3];
        pc->info.parts_built = (int)sm[0];
        pc->info.parts_reused = (int)sm[1];
        pc->info.shifted_parts = (int)sm[2];
        pc->info.factor_nnz = sm[3];
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

#define PC_DO(s, call)                                                                             \
    do {                                                                                           \
        if (!(s)->failed) {                                                                        \
            cls_error pc_e_;                                                                       \
            cls_error_clear(&pc_e_);                                                               \
            if ((call) != CLS_OK)                                                                  \
                dsys_fail((s), &pc_e_);                                                            \
        }                                                                                          \
    } while (0)
#define PC_ERR (&pc_e_)

static la_vec pc_loc(const dsys *s, const dvec *x, int k)
{
    la_vec v = x->v[k];
    v.n = s->parts[k].halo.nlocal;
    return v;
}

/* a per-part M on part k */
static int pc_apply_part(pc *pc, int k, const la_vec *r, la_vec *z, cls_error *err)
{
    switch (pc->type) {
    case PRECOND_IC0:
        return pc_ic0_apply_part(pc, k, r, z, err);
#ifdef CLS_HAVE_AMG
    case PRECOND_AMG:
        return amg_apply(pc->part[k].amg_d, &pc->s->parts[k].la, r, z, err);
#endif
    case PRECOND_JACOBI: {
        la_vec d = pc_loc(pc->s, &pc->dinv, k);
        return la_pointwise(&pc->s->parts[k].la, &d, r, z, err);
    }
    case PRECOND_NONE:
        return la_copy(&pc->s->parts[k].la, r, z, err);
    default:
        return cls_fail(err, CLS_EOTHER, "pc_apply: %s has no per-part form", pc_name(pc->type));
    }
}

void pc_apply(pc *pc, const dvec *r, dvec *z)
{
    dsys *s = pc->s;
    if (pc->type == PRECOND_CHEBYSHEV) {
        pc_cheby_apply(pc, r, z);
        return;
    }
    for (int k = 0; k < s->nmine; k++) {
        la_vec vr = pc_loc(s, r, k), vz = pc_loc(s, z, k);
        PC_DO(s, pc_apply_part(pc, k, &vr, &vz, PC_ERR));
    }
}

int pc_apply_one(void *ctx, const la_vec *r, la_vec *z, cls_error *err)
{
    pc *pc = ctx;
    la_vec vr = *r, vz = *z;
    vr.n = vz.n = pc->s->parts[0].halo.nlocal;
    if (pc->type == PRECOND_CHEBYSHEV)
        return pc_cheby_apply_one(pc, &vr, &vz, err);
    return pc_apply_part(pc, 0, &vr, &vz, err);
}

void pc_release(pc *pc)
{
    if (!pc)
        return;
    for (int k = 0; pc->part && k < pc->nmine; k++) {
        pc_part *pp = &pc->part[k];
#ifdef CLS_HAVE_AMG
        if (pp->amg_d)
            amg_device_release(pp->amg_d);
        if (!pp->centry && pp->amg_h)
            amg_free(pp->amg_h); /* before the block it borrows */
#endif
        csr_free(&pp->amg_A);
        if (pp->centry)
            pc_cache_put(pp->centry);
        if (pp->own_f) {
            pc_ic0_factor_free(pp->own_f);
            free(pp->own_f);
        }
        if (pp->have_tri) {
            la_tri_release(&pp->L);
            la_tri_release(&pp->U);
        }
        la_vec_release(&pp->t0);
        la_vec_release(&pp->t1);
        if (pp->have_k)
            la_pck_release(&pp->k);
    }
    free(pc->part);
    pc->part = NULL;
    dvec_release(&pc->dinv);
    dvec_release(&pc->cres);
    dvec_release(&pc->cd);
    dvec_release(&pc->cq);
}

/* ----------------------------------------------------------------- report */

json_t *pc_info_json(const pc_info *in)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(pc_name(in->type)));
    json_object_set_new(o, "setup_s", json_real(in->setup_s));
    json_object_set_new(o, "build_s", json_real(in->build_s));
    if (in->type != PRECOND_NONE && in->type != PRECOND_JACOBI) {
        json_object_set_new(o, "built", json_integer(in->parts_built));
        json_object_set_new(o, "reused", json_integer(in->parts_reused));
    }
    if (in->type == PRECOND_CHEBYSHEV) {
        json_object_set_new(o, "degree", json_integer(in->degree));
        json_object_set_new(o, "lanczos_steps", json_integer(in->lanczos));
        json_object_set_new(o, "lambda_min", json_real(in->lmin));
        json_object_set_new(o, "lambda_max", json_real(in->lmax));
        json_object_set_new(o, "interval", json_pack("[f, f]", in->lo, in->hi));
    }
    if (in->type == PRECOND_IC0) {
        json_object_set_new(o, "sweeps", json_integer(in->sweeps));
        json_object_set_new(o, "triangular_solve",
                            json_string(in->sweeps ? "jacobi-sweeps" : "level-scheduled"));
        json_object_set_new(o, "shift", json_real(in->shift));
        json_object_set_new(o, "shifted_parts", json_integer(in->shifted_parts));
        json_object_set_new(o, "factor_nnz", json_integer(in->factor_nnz));
        json_object_set_new(o, "levels", json_integer(in->levels));
    }
    if (in->type == PRECOND_AMG && in->amg[0]) {
        json_error_t je;
        json_t *a = json_loads(in->amg, 0, &je);
        if (a)
            json_object_set_new(o, "amg", a);
    }
    if (in->note[0])
        json_object_set_new(o, "note", json_string(in->note));
    return o;
}
