/*
 * pc_base.c: the floor every preconditioner kind stands on (pc_kind.h):
 * a part's slice of a vector, the content hash of a part (or a block), a
 * part's local block, and a small process-wide cache of host set-ups. It
 * knows no kind; the kinds and the dispatcher (pc.c) sit above it.
 *
 * Host set-ups that cost real time (an IC(0) factor, an AMG hierarchy, the
 * Lanczos bounds) are kept keyed by a 64-bit content hash of the part's
 * rows (global columns and values, its first row and size: what the block
 * and its device order are functions of) and the options that shape the
 * set-up. A second solve of the same matrix in the same process (the
 * daemon's ranks live across jobs) takes the cached host set-up and only
 * uploads it. The hash is a sum over rows of a mixed per-row hash, so it
 * does not depend on how the rows are split between threads. A collision
 * would reuse a wrong set-up: 2^-64 per pair, and the entry's size is
 * compared too. The cache holds whatever a kind stores (data and how to drop
 * it): it knows no kind.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/parallel.h"
#include "pc_kind.h"

/* ------------------------------------------------------------------ hashes */

uint64_t pc_cache_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct hash_ctx {
    const dpart *p;
    const csr_matrix *B;
    uint64_t *sums; /* per range: [2 q] with the values, [2 q + 1] the pattern alone */
} hash_ctx;

/* sums over rows of mix(row hash): rows hashed with their global index,
 * global columns and value bits, and once more without the values (the
 * pattern's hash: a numeric re-set-up needs only the same pattern) */
static void hash_rows(void *arg, int range, int64_t i0, int64_t i1)
{
    hash_ctx *c = arg;
    uint64_t sum = 0, psum = 0;
    for (int64_t i = i0; i < i1; i++) {
        uint64_t h, g;
        int64_t e0, e1;
        if (c->p) {
            const csr_matrix *A = &c->p->A;
            const halo_plan *hp = &c->p->halo;
            const int64_t base = A->rowptr[0];
            e0 = A->rowptr[i] - base;
            e1 = A->rowptr[i + 1] - base;
            h = g = pc_cache_mix((uint64_t)(hp->row_begin + i) + 0x9e3779b97f4a7c15ull);
            for (int64_t e = e0; e < e1; e++) {
                int64_t c2 = A->col[e];
                int64_t gc =
                    c2 < hp->nlocal ? hp->row_begin + c2 : hp->ghost_global[c2 - hp->nlocal];
                uint64_t vb;
                memcpy(&vb, &A->val[e], sizeof vb);
                h = pc_cache_mix(h ^ (uint64_t)gc) + vb * 0x2545f4914f6cdd1dull;
                g = pc_cache_mix(g ^ (uint64_t)gc);
            }
        } else {
            const csr_matrix *B = c->B;
            h = g = pc_cache_mix((uint64_t)i + 0x9e3779b97f4a7c15ull);
            for (int64_t e = B->rowptr[i]; e < B->rowptr[i + 1]; e++) {
                uint64_t vb;
                memcpy(&vb, &B->val[e], sizeof vb);
                h = pc_cache_mix(h ^ (uint64_t)B->col[e]) + vb * 0x2545f4914f6cdd1dull;
                g = pc_cache_mix(g ^ (uint64_t)B->col[e]);
            }
        }
        sum += pc_cache_mix(h);
        psum += pc_cache_mix(g);
    }
    c->sums[2 * range] = sum;
    c->sums[2 * range + 1] = psum;
}

/* the hash with the values; *pattern (if not NULL) the pattern's */
static uint64_t hash_sum(hash_ctx *c, int64_t n, uint64_t seed, uint64_t *pattern)
{
    int t = cls_parallel_ranges(n, 16384);
    uint64_t local[128], *sums = t <= 64 ? local : malloc((size_t)t * 2 * sizeof *sums);
    if (pattern)
        *pattern = 0;
    if (!sums)
        return 0; /* no hash: never matches (the cache refuses key 0) */
    c->sums = sums;
    cls_parallel_for(n, 16384, hash_rows, c);
    uint64_t h = seed, g = seed ^ 0x5851f42d4c957f2dull;
    for (int q = 0; q < t; q++) { /* sums: the split into ranges does not matter */
        h += sums[2 * q];
        g += sums[2 * q + 1];
    }
    if (sums != local)
        free(sums);
    if (pattern)
        *pattern = pc_cache_mix(g ^ (uint64_t)n);
    return pc_cache_mix(h ^ (uint64_t)n);
}

uint64_t pc_hash_csr(const csr_matrix *B)
{
    hash_ctx c = {NULL, B, NULL};
    return hash_sum(&c, B->nrows, 0x1234567u, NULL);
}

uint64_t pc_hash_part(const dpart *p)
{
    hash_ctx c = {p, NULL, NULL};
    return hash_sum(&c, p->A.nrows, (uint64_t)p->halo.row_begin * 0x9e3779b97f4a7c15ull, NULL);
}

/* ------------------------------------------------------------- the block */

int pc_part_rows(const dpart *p, int local_only, int sorted, csr_matrix *B, cls_error *err)
{
    const int64_t n = p->halo.nlocal;
    int32_t *iperm = NULL;
    csr_init(B);
    int rc = p->perm ? dpart_iperm(p->perm, n, &iperm, err) : CLS_OK;
    if (!rc)
        rc = dpart_rows(&p->A, n, p->perm, iperm, local_only, sorted, B, err);
    if (!rc)
        B->ncols = local_only ? n : n + p->halo.nghost;
    free(iperm);
    return rc;
}

int pc_local_block(const dpart *p, csr_matrix *B, cls_error *err)
{
    return pc_part_rows(p, 1, 1, B, err);
}

la_vec pc_loc(const dsys *s, const dvec *x, int k)
{
    la_vec v = x->v[k];
    v.n = s->parts[k].halo.nlocal;
    return v;
}

/* ------------------------------------------------------------------ cache */

#define PC_CACHE_MAX 4

typedef struct pc_cache_entry {
    int used, refs;
    uint64_t key, stamp;
    uint64_t pattern; /* the block's pattern hash (0: not kept): pc_cache_get_pattern */
    uint64_t tag;     /* a device set-up's OpenCL context (0: a host set-up) */
    solver_precond type;
    int64_t n;
    void *data; /* the kind's set-up (an IC(0) factor, a hierarchy, bounds) */
    void (*drop)(void *data);
} pc_cache_entry;

static pc_cache_entry pc_cache[PC_CACHE_MAX];
static uint64_t pc_cache_clock;
static pthread_mutex_t pc_cache_mu = PTHREAD_MUTEX_INITIALIZER;

int pc_setup_on_device(const pc *pc, const dpart *p, int *dev, cls_error *err)
{
    int gpu = p->la.ocl->dev.type != CL_DEVICE_TYPE_CPU, dbl = p->la.prec == LA_DOUBLE;
    *dev = 0;
    if (pc->opt.setup == PC_SETUP_DEVICE && !dbl)
        return cls_fail(err, CLS_EUSAGE,
                        "--precond-setup device: the %s set-up on the device needs --precision "
                        "double",
                        pc_name(pc->type));
    *dev = pc->opt.setup == PC_SETUP_DEVICE || (pc->opt.setup == PC_SETUP_AUTO && gpu && dbl);
    return CLS_OK;
}

static int pc_cache_device_on;

void pc_cache_device_enable(int on)
{
    pc_cache_device_on = on;
}

int pc_cache_device_enabled(const pc_options *o)
{
    const char *v = getenv("CLSOLVE_PC_DEVICE_CACHE");
    return pc_cache_device_on && pc_cache_enabled(o) && !(v && !strcmp(v, "0"));
}

int pc_cache_enabled(const pc_options *o)
{
    const char *v = getenv("CLSOLVE_PC_CACHE");
    return o->reuse && !(v && !strcmp(v, "0"));
}

uint64_t pc_cache_part_key(const dpart *p, solver_precond t, uint64_t extra)
{
    return pc_cache_part_keys(p, t, extra, NULL);
}

uint64_t pc_cache_part_keys(const dpart *p, solver_precond t, uint64_t extra, uint64_t *pattern)
{
    hash_ctx c = {p, NULL, NULL};
    uint64_t g = 0,
             h = hash_sum(&c, p->A.nrows, (uint64_t)p->halo.row_begin * 0x9e3779b97f4a7c15ull, &g);
    uint64_t o = pc_cache_mix((uint64_t)t * 1000003u ^ extra);
    if (pattern)
        *pattern = h && g ? pc_cache_mix(g ^ o ^ 0x6a09e667f3bcc909ull) | 1u : 0;
    return h ? pc_cache_mix(h ^ o) | 1u : 0;
}

int pc_cache_matrix_key(dsys *s, solver_precond t, uint64_t extra, uint64_t *key, cls_error *err)
{
    uint64_t h = 0;
    for (int k = 0; k < s->nmine; k++)
        h ^= pc_hash_part(&s->parts[k]);
    if (MPI_Allreduce(MPI_IN_PLACE, &h, 1, MPI_UINT64_T, MPI_BXOR, s->comm) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Allreduce(matrix hash) failed");
    *key = pc_cache_mix(h ^ pc_cache_mix(extra + (uint64_t)t)) | 1u;
    return CLS_OK;
}

static void pc_cache_drop(pc_cache_entry *e)
{
    if (e->drop && e->data)
        e->drop(e->data);
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

/* the entry for (key, type, n) held; idle_only: only one no one holds */
static pc_cache_entry *cache_find(uint64_t key, solver_precond t, int64_t n, int idle_only)
{
    pc_cache_entry *hit = NULL;
    if (!key)
        return NULL;
    pthread_mutex_lock(&pc_cache_mu);
    for (int i = 0; i < PC_CACHE_MAX && !hit; i++)
        if (pc_cache[i].used && pc_cache[i].key == key && pc_cache[i].type == t &&
            pc_cache[i].n == n && !(idle_only && pc_cache[i].refs)) {
            hit = &pc_cache[i];
            hit->refs++;
            hit->stamp = ++pc_cache_clock;
        }
    pthread_mutex_unlock(&pc_cache_mu);
    return hit;
}

pc_cache_entry *pc_cache_get(uint64_t key, solver_precond t, int64_t n)
{
    return cache_find(key, t, n, 0);
}

pc_cache_entry *pc_cache_take(uint64_t key, solver_precond t, int64_t n)
{
    return cache_find(key, t, n, 1);
}

void pc_cache_set_tag(pc_cache_entry *e, uint64_t tag)
{
    if (!e)
        return;
    pthread_mutex_lock(&pc_cache_mu);
    e->tag = tag;
    pthread_mutex_unlock(&pc_cache_mu);
}

void pc_cache_drop_tag(solver_precond t, uint64_t tag)
{
    if (!tag)
        return;
    pthread_mutex_lock(&pc_cache_mu);
    for (int i = 0; i < PC_CACHE_MAX; i++)
        if (pc_cache[i].used && pc_cache[i].refs == 0 && pc_cache[i].type == t &&
            pc_cache[i].tag == tag)
            pc_cache_drop(&pc_cache[i]);
    pthread_mutex_unlock(&pc_cache_mu);
}

pc_cache_entry *pc_cache_put(uint64_t key, solver_precond t, int64_t n, void *data,
                             void (*drop)(void *data))
{
    pc_cache_entry *e = NULL;
    if (!key)
        return NULL;
    pthread_mutex_lock(&pc_cache_mu);
    for (int i = 0; i < PC_CACHE_MAX; i++) { /* a free slot, or the least recently used idle one */
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
        e->data = data;
        e->drop = drop;
        e->stamp = ++pc_cache_clock;
    }
    pthread_mutex_unlock(&pc_cache_mu);
    return e;
}

/* the most recent entry of that pattern, held; idle_only: one no one holds */
static pc_cache_entry *pattern_find(uint64_t pattern, solver_precond t, int64_t n, int idle_only)
{
    pc_cache_entry *hit = NULL;
    if (!pattern)
        return NULL;
    pthread_mutex_lock(&pc_cache_mu);
    for (int i = 0; i < PC_CACHE_MAX; i++) {
        pc_cache_entry *c = &pc_cache[i];
        if (c->used && c->pattern == pattern && c->type == t && c->n == n &&
            !(idle_only && c->refs) && (!hit || c->stamp > hit->stamp))
            hit = c;
    }
    if (hit) {
        hit->refs++;
        hit->stamp = ++pc_cache_clock;
    }
    pthread_mutex_unlock(&pc_cache_mu);
    return hit;
}

pc_cache_entry *pc_cache_get_pattern(uint64_t pattern, solver_precond t, int64_t n)
{
    return pattern_find(pattern, t, n, 0);
}

pc_cache_entry *pc_cache_take_pattern(uint64_t pattern, solver_precond t, int64_t n)
{
    return pattern_find(pattern, t, n, 1);
}

void pc_cache_discard(pc_cache_entry *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&pc_cache_mu);
    if (--e->refs == 0)
        pc_cache_drop(e);
    pthread_mutex_unlock(&pc_cache_mu);
}

void pc_cache_set_pattern(pc_cache_entry *e, uint64_t pattern)
{
    if (!e)
        return;
    pthread_mutex_lock(&pc_cache_mu);
    e->pattern = pattern;
    pthread_mutex_unlock(&pc_cache_mu);
}

void *pc_cache_data(pc_cache_entry *e)
{
    return e ? e->data : NULL;
}

void pc_cache_release(pc_cache_entry *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&pc_cache_mu);
    e->refs--;
    /* a device set-up given back is its context's one idle set-up: others
     * made beside it (solves at once on the same matrix each built one)
     * go, so a context never holds more than one idle */
    for (int i = 0; e->refs == 0 && e->tag && i < PC_CACHE_MAX; i++) {
        pc_cache_entry *c = &pc_cache[i];
        if (c != e && c->used && c->refs == 0 && c->type == e->type && c->tag == e->tag)
            pc_cache_drop(c);
    }
    pthread_mutex_unlock(&pc_cache_mu);
}
