/*
 * amg_aggregate.c: aggregation for smoothed aggregation, built on a
 * distance-2 maximal independent set of the strength graph.
 *
 * Vanek, Mandel and Brezina (Computing 56, 1996, section 3.1) aggregate
 * greedily: a node whose strong neighbours are all free becomes a root and
 * takes them (phase 1), the nodes left join a neighbouring aggregate
 * (phase 2). The roots of phase 1 are exactly a distance-2 independent set:
 * no two roots share a neighbour. Bell, Dalton and Olson ("Exposing
 * fine-grained parallelism in algebraic multigrid methods", SIAM J. Sci.
 * Comput. 34(4), 2012, section 4) find such a set in parallel, and we do the
 * same on the host:
 *
 *   tuple(i) = (state, hash(i), i)     state: IN 2 > UNDECIDED 1 > OUT 0
 *   repeat while any node is UNDECIDED:
 *     m1(i) = max(tuple(i), tuple(j) : j strong neighbour of i)
 *     m2(i) = max(m1(i), m1(j) : j strong neighbour of i)   (distance 2)
 *     UNDECIDED i with m2(i) == tuple(i)  -> IN   (largest within distance 2)
 *     UNDECIDED i with state(m2(i)) == IN -> OUT  (an IN node within distance 2)
 *
 * Tuples are unique (they end in i), so no two nodes within distance 2
 * enter together; each round at least the largest UNDECIDED node enters.
 * Most nodes are decided in the first two rounds (on poisson3d 64: 26%
 * undecided after round 2, 1% after round 6, 12 rounds in all), so once
 * the undecided are few the rounds run over a list of them instead of the
 * whole graph, each computing its distance-2 maximum directly (deg^2 reads
 * per node against two passes over every edge).
 * The hash spreads the roots as a random order would, but the same on every
 * run and every thread count (each pass reads the last pass's arrays and
 * writes only its own rows; counts are per fixed chunk).
 *
 * Then: roots are numbered in row order (an aggregate's number follows its
 * root, so nearby rows get nearby aggregates and the coarse matrix keeps
 * the fine one's locality); each root's strong neighbours join it (phase 1,
 * unique since roots are distance 3 apart); a node still free joins the
 * aggregate of its strongest aggregated neighbour (phase 2, reading only
 * phase 1's result). A node with no strong connection stays out of every
 * aggregate (agg = -1): its row of the tentative prolongator is zero, as in
 * Vanek et al., and the smoother alone handles it.
 */
#include "amg_priv.h"

#include <stdlib.h>
#include <string.h>

enum { MIS_OUT = 0, MIS_UNDECIDED = 1, MIS_IN = 2 };

static inline uint64_t mis_tuple(uint64_t state, int64_t i)
{
    uint32_t h = (uint32_t)i; /* a 32-bit integer mix (lowbias32), 30 bits kept */
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return state << 62 | (uint64_t)(h >> 2) << 32 | (uint64_t)i;
}
static inline int mis_state(uint64_t t)
{
    return (int)(t >> 62);
}

typedef struct {
    const amg_graph *S;
    uint64_t *t, *m1; /* m1: per node, or per worklist entry (m2) */
    int32_t *rootid, *agg1, *agg;
    int32_t *work, *work2; /* the undecided nodes, in row order */
    int64_t nwork;
    int64_t *counts; /* per chunk: undecided left / roots / offsets */
    int pass;
} agg_ctx;

#define WORK_CHUNK 256 /* worklist entries per chunk (each costs deg^2 reads) */

static void work_range(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    agg_ctx *c = arg;
    const amg_graph *S = c->S;
    int64_t cnt = 0;
    switch (c->pass) {
    case 0: /* m2 of each undecided node: max over paths of length <= 2 */
        for (int64_t w = b; w < e; w++) {
            int32_t i = c->work[w];
            uint64_t m = c->t[i];
            for (int64_t k = S->ptr[i]; k < S->ptr[i + 1]; k++) {
                int32_t j = S->adj[k];
                for (int64_t l = S->ptr[j]; l < S->ptr[j + 1]; l++)
                    if (c->t[S->adj[l]] > m)
                        m = c->t[S->adj[l]];
                if (c->t[j] > m)
                    m = c->t[j];
            }
            c->m1[w] = m;
        }
        break;
    case 1: /* decisions, as in agg_range's pass 1 */
        for (int64_t w = b; w < e; w++) {
            int32_t i = c->work[w];
            uint64_t m = c->m1[w];
            if (m == c->t[i])
                c->t[i] = mis_tuple(MIS_IN, i);
            else if (mis_state(m) == MIS_IN)
                c->t[i] = mis_tuple(MIS_OUT, i);
            else
                cnt++;
        }
        break;
    case 2: { /* the still undecided, compacted in order at this chunk's offset */
        int64_t o = c->counts[chunk];
        for (int64_t w = b; w < e; w++)
            if (mis_state(c->t[c->work[w]]) == MIS_UNDECIDED)
                c->work2[o++] = c->work[w];
        break;
    }
    }
    if (c->pass != 2)
        c->counts[chunk] = cnt;
}

/* counts per chunk -> exclusive offsets; returns the total */
static int64_t exclusive_scan(int64_t *counts, int64_t nch)
{
    int64_t off = 0;
    for (int64_t k = 0; k < nch; k++) {
        int64_t v = counts[k];
        counts[k] = off;
        off += v;
    }
    return off;
}

/* one round over the worklist; returns the undecided left (the new list) */
static int64_t work_round(agg_ctx *c)
{
    c->pass = 0;
    amg_par_chunks(c->nwork, WORK_CHUNK, work_range, c);
    c->pass = 1;
    amg_par_chunks(c->nwork, WORK_CHUNK, work_range, c);
    int64_t off = exclusive_scan(c->counts, amg_nchunks(c->nwork, WORK_CHUNK));
    c->pass = 2;
    amg_par_chunks(c->nwork, WORK_CHUNK, work_range, c);
    int32_t *t = c->work;
    c->work = c->work2;
    c->work2 = t;
    c->nwork = off;
    return off;
}

static void agg_range(void *arg, int thread, int64_t chunk, int64_t b, int64_t e)
{
    agg_ctx *c = arg;
    const amg_graph *S = c->S;
    int64_t cnt = 0;
    switch (c->pass) {
    case 0: /* m1 = max over the closed neighbourhood */
        for (int64_t i = b; i < e; i++) {
            uint64_t m = c->t[i];
            for (int64_t k = S->ptr[i]; k < S->ptr[i + 1]; k++)
                if (c->t[S->adj[k]] > m)
                    m = c->t[S->adj[k]];
            c->m1[i] = m;
        }
        break;
    case 1: /* m2, and the decisions of the undecided */
        for (int64_t i = b; i < e; i++) {
            uint64_t ti = c->t[i];
            if (mis_state(ti) != MIS_UNDECIDED)
                continue;
            uint64_t m = c->m1[i];
            for (int64_t k = S->ptr[i]; k < S->ptr[i + 1]; k++)
                if (c->m1[S->adj[k]] > m)
                    m = c->m1[S->adj[k]];
            if (m == ti)
                c->t[i] = mis_tuple(MIS_IN, i);
            else if (mis_state(m) == MIS_IN)
                c->t[i] = mis_tuple(MIS_OUT, i);
            else
                cnt++;
        }
        break;
    case 2: /* roots per range */
        for (int64_t i = b; i < e; i++)
            cnt += mis_state(c->t[i]) == MIS_IN;
        break;
    case 3: { /* number the roots in row order */
        int64_t id = c->counts[chunk];
        for (int64_t i = b; i < e; i++)
            c->rootid[i] = mis_state(c->t[i]) == MIS_IN ? (int32_t)id++ : -1;
        break;
    }
    case 4: /* phase 1: a root and its strong neighbours */
        for (int64_t i = b; i < e; i++) {
            int32_t a = c->rootid[i];
            for (int64_t k = S->ptr[i]; a < 0 && k < S->ptr[i + 1]; k++)
                a = c->rootid[S->adj[k]];
            c->agg1[i] = a;
        }
        break;
    case 6: /* start: a node without strong edges never enters */
        for (int64_t i = b; i < e; i++)
            c->t[i] = mis_tuple(S->ptr[i + 1] > S->ptr[i] ? MIS_UNDECIDED : MIS_OUT, i);
        break;
    case 5: /* phase 2: the strongest aggregated neighbour's aggregate */
        for (int64_t i = b; i < e; i++) {
            int32_t a = c->agg1[i];
            if (a < 0) {
                float best = -1.0f;
                for (int64_t k = S->ptr[i]; k < S->ptr[i + 1]; k++) {
                    int32_t aj = c->agg1[S->adj[k]];
                    if (aj >= 0 && S->w[k] > best) {
                        best = S->w[k];
                        a = aj;
                    }
                }
                cnt += a < 0 && S->ptr[i + 1] > S->ptr[i]; /* left for phase 3 */
            }
            c->agg[i] = a;
        }
        break;
    }
    if (c->pass != 3)
        c->counts[chunk] = cnt;
}

static int64_t run_pass(agg_ctx *c, int pass)
{
    c->pass = pass;
    amg_par_chunks(c->S->n, AMG_GRAIN, agg_range, c);
    int64_t s = 0, nch = amg_nchunks(c->S->n, AMG_GRAIN);
    for (int64_t k = 0; k < nch; k++)
        s += c->counts[k];
    return s;
}

int amg_aggregate(const amg_graph *S, int32_t *agg, int64_t *naggs, cls_error *err)
{
    int64_t n = S->n;
    *naggs = 0;
    if (n == 0)
        return CLS_OK;
    if (n > INT32_MAX)
        return cls_fail(err, CLS_EOTHER, "amg: %lld rows exceed the 32-bit aggregation",
                        (long long)n);
    agg_ctx c = {.S = S};
    c.t = malloc((size_t)n * sizeof *c.t);
    c.m1 = malloc((size_t)n * sizeof *c.m1);
    c.rootid = malloc((size_t)n * sizeof *c.rootid);
    c.agg1 = malloc((size_t)n * sizeof *c.agg1);
    c.agg = agg;
    c.counts = malloc((size_t)(amg_nchunks(n, WORK_CHUNK) + 1) * sizeof *c.counts);
    int rc = CLS_OK;
    if (!c.t || !c.m1 || !c.rootid || !c.agg1 || !c.counts) {
        rc = cls_fail(err, CLS_EOTHER, "amg: out of memory aggregating %lld rows", (long long)n);
        goto done;
    }
    run_pass(&c, 6);
    /* full rounds while many are undecided, then rounds over the list */
    double deg = (double)S->ptr[n] / (double)n + 1.0;
    int64_t undecided = n;
    while (undecided > 0 && (double)undecided * deg * deg > 2.0 * (double)(S->ptr[n] + n)) {
        run_pass(&c, 0);
        undecided = run_pass(&c, 1);
    }
    if (undecided > 0) {
        c.work = malloc((size_t)undecided * sizeof *c.work);
        c.work2 = malloc((size_t)undecided * sizeof *c.work2);
        if (!c.work || !c.work2) {
            rc =
                cls_fail(err, CLS_EOTHER, "amg: out of memory aggregating %lld rows", (long long)n);
            goto done;
        }
        for (int64_t i = 0; i < n; i++)
            if (mis_state(c.t[i]) == MIS_UNDECIDED)
                c.work[c.nwork++] = (int32_t)i;
        while (work_round(&c) > 0)
            ;
    }
    /* number the roots: counts per chunk, then exclusive offsets */
    int64_t roots = run_pass(&c, 2);
    exclusive_scan(c.counts, amg_nchunks(n, AMG_GRAIN));
    c.pass = 3;
    amg_par_chunks(n, AMG_GRAIN, agg_range, &c);
    run_pass(&c, 4);
    int64_t left = run_pass(&c, 5);
    /* phase 3, serial and rare (a strength graph that is not symmetric):
     * a node still free joins an aggregated neighbour, or starts an
     * aggregate with its free neighbours */
    for (int64_t i = 0; left > 0 && i < n; i++) {
        if (agg[i] >= 0 || S->ptr[i + 1] == S->ptr[i])
            continue;
        int32_t a = -1;
        for (int64_t k = S->ptr[i]; a < 0 && k < S->ptr[i + 1]; k++)
            a = agg[S->adj[k]];
        if (a < 0) {
            a = (int32_t)roots++;
            for (int64_t k = S->ptr[i]; k < S->ptr[i + 1]; k++)
                if (agg[S->adj[k]] < 0)
                    agg[S->adj[k]] = a;
        }
        agg[i] = a;
    }
    *naggs = roots;
done:
    free(c.counts);
    free(c.work);
    free(c.work2);
    free(c.t);
    free(c.m1);
    free(c.rootid);
    free(c.agg1);
    return rc;
}
