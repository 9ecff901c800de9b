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
 * The hash spreads the roots as a random order would, but the same on every
 * run and every thread count (each pass reads the last pass's arrays and
 * writes only its own rows).
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

#include "../common/parallel.h"

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
    uint64_t *t, *m1;
    int32_t *rootid, *agg1, *agg;
    int64_t counts[64]; /* per range: undecided left / roots */
    int pass;
} agg_ctx;

static void agg_range(void *arg, int range, int64_t b, int64_t e)
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
        int64_t id = c->counts[range];
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
    c->counts[range] = cnt;
}

static int64_t run_pass(agg_ctx *c, int pass)
{
    int nr = cls_parallel_ranges(c->S->n, AMG_GRAIN);
    c->pass = pass;
    cls_parallel_for(c->S->n, AMG_GRAIN, agg_range, c);
    int64_t s = 0;
    for (int r = 0; r < nr; r++)
        s += c->counts[r];
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
    int rc = CLS_OK;
    if (!c.t || !c.m1 || !c.rootid || !c.agg1) {
        rc = cls_fail(err, CLS_EOTHER, "amg: out of memory aggregating %lld rows", (long long)n);
        goto done;
    }
    for (int64_t i = 0; i < n; i++) /* a node without strong edges never enters */
        c.t[i] = mis_tuple(S->ptr[i + 1] > S->ptr[i] ? MIS_UNDECIDED : MIS_OUT, i);
    for (int64_t undecided = 1; undecided > 0;) {
        run_pass(&c, 0);
        undecided = run_pass(&c, 1);
    }
    /* number the roots: counts per range, then exclusive offsets */
    int nr = cls_parallel_ranges(n, AMG_GRAIN);
    int64_t roots = run_pass(&c, 2);
    int64_t off = 0;
    for (int r = 0; r < nr; r++) {
        int64_t k = c.counts[r];
        c.counts[r] = off;
        off += k;
    }
    c.pass = 3;
    cls_parallel_for(n, AMG_GRAIN, agg_range, &c);
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
    free(c.t);
    free(c.m1);
    free(c.rootid);
    free(c.agg1);
    return rc;
}
