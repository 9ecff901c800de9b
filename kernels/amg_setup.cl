/*
 * amg_setup.cl: the steps of one level of the smoothed-aggregation set-up
 * on the device (solver/amg/amg_dsetup.c strings them together; the host
 * twins are the files of solver/amg/ named beside each kernel).
 *
 * Each kernel is the loop body of its host twin with the row loop turned
 * into a grid-stride loop, the arithmetic written in the same order
 * (FP_CONTRACT off: no fused multiply-adds the host does not do) so that
 * the diagonal, the strength test, the aggregates, the tentative and the
 * smoothed prolongator and R = P' are the host's bits. Only the sums of the
 * Lanczos estimate (per work-group partials, summed on the host in group
 * order) and of the sparse products (la_sparse.h) are in another order.
 *
 * The strength graph is never stored: every kernel that walks it tests
 * |a_ij| > theta sqrt(a_ii a_jj) on the entry it reads (amgs_strong), as
 * amg_strength.c's edge_strength does, which costs a multiply per entry and
 * saves writing and reading a second graph the size of A.
 *
 * Matrices are CSR with int32 row pointers and columns, double values.
 */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

#define MIS_OUT 0UL
#define MIS_UNDECIDED 1UL
#define MIS_IN 2UL

#define GSTRIDE_LOOP(i, n) for (int i = (int)get_global_id(0); i < (n); i += (int)get_global_size(0))

/* amg_aggregate.c's mis_tuple: (state, lowbias32(i) >> 2, i) */
inline ulong amgs_tuple(ulong state, int i)
{
    uint h = (uint)i;
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return state << 62 | (ulong)(h >> 2) << 32 | (ulong)(uint)i;
}

/* amg_strength.c's edge_strength as the float weight kept in the graph, or
 * -1 when the edge (i, j) is not strong */
inline float amgs_strong(int i, int j, double aij, __global const double *dsq, double theta)
{
    if (j == i)
        return -1.0f;
    double a = fabs(aij), dd = dsq[i] * dsq[j];
    double s = dd > 0.0 ? a * dd : (a > 0.0 ? INFINITY : 0.0);
    if (!(a > 0.0 && s > theta))
        return -1.0f;
    return (float)(isinf(s) ? 1e30 : s);
}

/* amg_par_diag and amg_strength's dsq: d_i = a_ii (0 where absent),
 * dsq_i = 1/sqrt|a_ii|; *bad = the first row whose a_ii is not > 0 */
__kernel void amgs_diag(int n, __global const int *rp, __global const int *col,
                        __global const double *val, __global double *diag,
                        __global double *dsq, __global int *bad)
{
    GSTRIDE_LOOP(i, n)
    {
        double d = 0.0;
        for (int k = rp[i]; k < rp[i + 1]; k++)
            if (col[k] == i) {
                d = val[k];
                break;
            }
        diag[i] = d;
        dsq[i] = d != 0.0 ? 1.0 / sqrt(fabs(d)) : 0.0;
        if (!(d > 0.0))
            atomic_min(bad, i);
    }
}

/* amg_aggregate.c pass 6: a node without strong edges never enters */
__kernel void amgs_mis_init(int n, __global const int *rp, __global const int *col,
                            __global const double *val, __global const double *dsq, double theta,
                            __global ulong *t)
{
    GSTRIDE_LOOP(i, n)
    {
        int strong = 0;
        for (int k = rp[i]; !strong && k < rp[i + 1]; k++)
            strong = amgs_strong(i, col[k], val[k], dsq, theta) >= 0.0f;
        t[i] = amgs_tuple(strong ? MIS_UNDECIDED : MIS_OUT, i);
    }
}

/* the largest of m and src[j] over row i's strong entries k0, k0 + step,
 * ... below k1: the MIS rounds' one loop (a work-item's whole row, step 1,
 * or a team lane's share) */
inline ulong amgs_strong_max(int i, int k0, int k1, int step, __global const int *col,
                             __global const double *val, __global const double *dsq,
                             double theta, __global const ulong *src, ulong m)
{
    for (int k = k0; k < k1; k += step) {
        int j = col[k];
        if (amgs_strong(i, j, val[k], dsq, theta) >= 0.0f && src[j] > m)
            m = src[j];
    }
    return m;
}

/* an undecided node's decision from m, the largest tuple within distance
 * 2: in (its own tuple is the largest), out (an in-node's is), or still
 * undecided (returns 1) */
inline int amgs_decide(__global ulong *t, int i, ulong ti, ulong m)
{
    if (m == ti)
        t[i] = amgs_tuple(MIS_IN, i);
    else if ((m >> 62) == MIS_IN)
        t[i] = amgs_tuple(MIS_OUT, i);
    else
        return 1;
    return 0;
}

/* pass 0: m1 = the largest tuple of the closed strong neighbourhood */
__kernel void amgs_mis_m1(int n, __global const int *rp, __global const int *col,
                          __global const double *val, __global const double *dsq, double theta,
                          __global const ulong *t, __global ulong *m1)
{
    GSTRIDE_LOOP(i, n)
    {
        m1[i] = amgs_strong_max(i, rp[i], rp[i + 1], 1, col, val, dsq, theta, t, t[i]);
    }
}

/* pass 1: m2 of each undecided node and its decision; *left counts the
 * still undecided (one atomic per work-group) */
__kernel void amgs_mis_m2(int n, __global const int *rp, __global const int *col,
                          __global const double *val, __global const double *dsq, double theta,
                          __global ulong *t, __global const ulong *m1, __global int *left)
{
    __local int cnt;
    if (get_local_id(0) == 0)
        cnt = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    int mine = 0;
    GSTRIDE_LOOP(i, n)
    {
        ulong ti = t[i];
        if ((ti >> 62) != MIS_UNDECIDED)
            continue;
        ulong m = amgs_strong_max(i, rp[i], rp[i + 1], 1, col, val, dsq, theta, m1, m1[i]);
        mine += amgs_decide(t, i, ti, m);
    }
    if (mine)
        atomic_add(&cnt, mine);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0 && cnt)
        atomic_add(left, cnt);
}

/* The same two passes with a team of `lanes` work-items per row (a power
 * of two dividing the group), for rows of more than a few entries: one
 * work-item walking such a row reads memory far from its neighbours' (33
 * entries a row at poisson3d 256's level 1: its rounds took 2.5x as long;
 * at level 0, 7 entries a row, the two ways tie). The
 * lanes take every lanes-th entry and the largest tuple is reduced in
 * local memory (red: one ulong per work-item); a maximum is exact, so the
 * result is the one-work-item kernels' bit for bit. Rows go to a group in
 * blocks of (group size / lanes), a grid-stride loop over the blocks, so
 * every work-item of a group meets the same barriers. */
/* the largest of the lanes' m, for lane 0 of each row's team (every
 * work-item of the group calls it: it holds barriers) */
inline ulong amgs_team_max(__local ulong *red, ulong m, int lid, int lane, int lanes)
{
    red[lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = lanes >> 1; h > 0; h >>= 1) {
        if (lane < h && red[lid + h] > red[lid])
            red[lid] = red[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return red[lid];
}

__kernel void amgs_mis_m1_team(int n, __global const int *rp, __global const int *col,
                               __global const double *val, __global const double *dsq,
                               double theta, __global const ulong *t, __global ulong *m1,
                               int lanes, __local ulong *red)
{
    const int lid = (int)get_local_id(0), lane = lid & (lanes - 1);
    const int per = (int)get_local_size(0) / lanes;
    for (int b = (int)get_group_id(0) * per; b < n; b += (int)get_num_groups(0) * per) {
        const int i = b + lid / lanes;
        ulong m = 0;
        if (i < n)
            m = amgs_strong_max(i, rp[i] + lane, rp[i + 1], lanes, col, val, dsq, theta, t,
                                lane == 0 ? t[i] : 0UL);
        m = amgs_team_max(red, m, lid, lane, lanes);
        if (i < n && lane == 0)
            m1[i] = m;
        barrier(CLK_LOCAL_MEM_FENCE); /* red is rewritten by the next block */
    }
}

__kernel void amgs_mis_m2_team(int n, __global const int *rp, __global const int *col,
                               __global const double *val, __global const double *dsq,
                               double theta, __global ulong *t, __global const ulong *m1,
                               __global int *left, int lanes, __local ulong *red)
{
    __local int cnt;
    const int lid = (int)get_local_id(0), lane = lid & (lanes - 1);
    const int per = (int)get_local_size(0) / lanes;
    if (lid == 0)
        cnt = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    int mine = 0;
    for (int b = (int)get_group_id(0) * per; b < n; b += (int)get_num_groups(0) * per) {
        const int i = b + lid / lanes;
        ulong ti = 0, m = 0;
        int und = 0;
        if (i < n) {
            ti = t[i]; /* every lane reads it before lane 0 may write it below */
            und = (ti >> 62) == MIS_UNDECIDED;
        }
        if (und)
            m = amgs_strong_max(i, rp[i] + lane, rp[i + 1], lanes, col, val, dsq, theta, m1,
                                lane == 0 ? m1[i] : 0UL);
        m = amgs_team_max(red, m, lid, lane, lanes);
        if (und && lane == 0)
            mine += amgs_decide(t, i, ti, m);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (mine)
        atomic_add(&cnt, mine);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0 && cnt)
        atomic_add(left, cnt);
}

/* pass 2's flags for the scan that numbers the roots in row order */
__kernel void amgs_root_flags(int n, __global const ulong *t, __global int *flag)
{
    GSTRIDE_LOOP(i, n)
    flag[i] = (t[i] >> 62) == MIS_IN;
}

/* pass 4, phase 1: a root's aggregate is its number (roff[i], the
 * exclusive scan of the flags); a node takes its first strong neighbour
 * that is a root */
__kernel void amgs_agg1(int n, __global const int *rp, __global const int *col,
                        __global const double *val, __global const double *dsq, double theta,
                        __global const ulong *t, __global const int *roff, __global int *agg1)
{
    GSTRIDE_LOOP(i, n)
    {
        int a = (t[i] >> 62) == MIS_IN ? roff[i] : -1;
        for (int k = rp[i]; a < 0 && k < rp[i + 1]; k++) {
            int j = col[k];
            if (amgs_strong(i, j, val[k], dsq, theta) >= 0.0f && (t[j] >> 62) == MIS_IN)
                a = roff[j];
        }
        agg1[i] = a;
    }
}

/* pass 5, phase 2: a free node joins its strongest aggregated neighbour's
 * aggregate (the first of equal strength); *left counts those still free
 * that have strong edges (phase 3, done on the host) */
__kernel void amgs_agg2(int n, __global const int *rp, __global const int *col,
                        __global const double *val, __global const double *dsq, double theta,
                        __global const int *agg1, __global int *agg, __global int *left)
{
    GSTRIDE_LOOP(i, n)
    {
        int a = agg1[i];
        if (a < 0) {
            float best = -1.0f;
            int strong = 0;
            for (int k = rp[i]; k < rp[i + 1]; k++) {
                int j = col[k];
                float w = amgs_strong(i, j, val[k], dsq, theta);
                if (w < 0.0f)
                    continue;
                strong = 1;
                int aj = agg1[j];
                if (aj >= 0 && w > best) {
                    best = w;
                    a = aj;
                }
            }
            if (a < 0 && strong)
                atomic_inc(left);
        }
        agg[i] = a;
    }
}

/* amg_prolong.c pass 0: aggregate sizes */
__kernel void amgs_agg_sizes(int n, __global const int *agg, __global int *size)
{
    GSTRIDE_LOOP(i, n)
    {
        if (agg[i] >= 0)
            atomic_inc(&size[agg[i]]);
    }
}

/* T(i, a) = 1/sqrt|a| */
__kernel void amgs_tval(int naggs, __global const int *size, __global double *tval)
{
    GSTRIDE_LOOP(a, naggs)
    tval[a] = 1.0 / sqrt((double)size[a]);
}

/* amg_prolong.c pass 1: row i of P = (I - omega D^-1 A) T merged in
 * aggregate order at A's row offsets; cnt[i] = its length */
__kernel void amgs_prolong_rows(int n, __global const int *rp, __global const int *col,
                                __global const double *val, __global const double *diag,
                                __global const int *agg, __global const double *tval, double omega,
                                __global int *tcol, __global double *tv, __global int *cnt)
{
    GSTRIDE_LOOP(i, n)
    {
        __global int *cols = tcol + rp[i];
        __global double *vals = tv + rp[i];
        int m = 0;
        double s = omega / diag[i];
        for (int k = rp[i]; k < rp[i + 1]; k++) {
            int j = col[k], a = agg[j];
            if (a < 0)
                continue;
            double v = ((j == i ? 1.0 : 0.0) - s * val[k]) * tval[a];
            int p = m;
            while (p > 0 && cols[p - 1] > a)
                p--;
            if (p > 0 && cols[p - 1] == a) {
                vals[p - 1] += v;
                continue;
            }
            for (int q = m; q > p; q--) {
                cols[q] = cols[q - 1];
                vals[q] = vals[q - 1];
            }
            cols[p] = a;
            vals[p] = v;
            m++;
        }
        cnt[i] = m;
    }
}

/* pass 2: the rows compacted to P's offsets */
__kernel void amgs_compact(int n, __global const int *src_rp, __global const int *dst_rp,
                           __global const int *tcol, __global const double *tv,
                           __global int *pcol, __global double *pval)
{
    GSTRIDE_LOOP(i, n)
    {
        int s = src_rp[i], d = dst_rp[i], len = dst_rp[i + 1] - d;
        for (int k = 0; k < len; k++) {
            pcol[d + k] = tcol[s + k];
            pval[d + k] = tv[s + k];
        }
    }
}

/* amg_rap.c's amg_transpose: entries per column, ... */
__kernel void amgs_tr_count(int n, __global const int *rp, __global const int *col,
                            __global int *cnt)
{
    GSTRIDE_LOOP(i, n)
    {
        for (int k = rp[i]; k < rp[i + 1]; k++)
            atomic_inc(&cnt[col[k]]);
    }
}

/* ... each entry to its column's row of T at a claimed slot, ... */
__kernel void amgs_tr_scatter(int n, __global const int *rp, __global const int *col,
                              __global const double *val, __global const int *trp,
                              __global int *fill, __global int *tcol, __global double *tval)
{
    GSTRIDE_LOOP(i, n)
    {
        for (int k = rp[i]; k < rp[i + 1]; k++) {
            int c = col[k], p = trp[c] + atomic_inc(&fill[c]);
            tcol[p] = i;
            tval[p] = val[k];
        }
    }
}

/* ... and each row of T put in column order: the slots were claimed in
 * any order, and sorted T is the host's transpose bit for bit. An entry's
 * place is the number of smaller columns in its row (columns are unique in
 * a row of T: the rows of M they came from); one work-group per row, the
 * row's columns in local memory when they fit (cap), else read from global
 * memory. O(len^2 / work-items) per row: rows of a transpose are a few
 * hundred entries, a few thousand on the coarsest levels, where a
 * work-item's insertion sort took 100 ms. */
__kernel void amgs_rank_sort(int n, __global const int *rp, __global const int *col_in,
                             __global const double *val_in, __global int *col_out,
                             __global double *val_out, __local int *keys, int cap)
{
    int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    for (int row = (int)get_group_id(0); row < n; row += (int)get_num_groups(0)) {
        int b = rp[row], len = rp[row + 1] - b;
        int loc = len <= cap;
        if (loc)
            for (int k = lid; k < len; k += ls)
                keys[k] = col_in[b + k];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = lid; k < len; k += ls) {
            int key = col_in[b + k], r = 0;
            if (loc)
                for (int m = 0; m < len; m++)
                    r += keys[m] < key;
            else
                for (int m = 0; m < len; m++)
                    r += col_in[b + m] < key;
            col_out[b + r] = key;
            val_out[b + r] = val_in[b + k];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* the smoother's inverse diagonal: 1/a_ii, or 1/sum_j |a_ij| (l1) */
__kernel void amgs_dinv(int n, __global const int *rp, __global const double *val,
                        __global const double *diag, int l1, __global double *dinv)
{
    GSTRIDE_LOOP(i, n)
    {
        double v = diag[i];
        if (l1) {
            v = 0.0;
            for (int k = rp[i]; k < rp[i + 1]; k++)
                v += fabs(val[k]);
        }
        dinv[i] = 1.0 / v;
    }
}

/* A's CSR arrays from its SELL-C-sigma copy (kernels/la_format.c's
 * sell_fill_chunks: entry j of stored row r = c C + i at cs[c] + j C + i,
 * stored row r holding row perm[r]): the solve's own copy serves the
 * set-up, and only the row pointers cross the bus */
__kernel void amgs_from_sell(int n, int C, __global const int *rp, __global const int *cs,
                             __global const int *perm, int has_perm, __global const int *fcol,
                             __global const double *fval, __global int *col,
                             __global double *val)
{
    GSTRIDE_LOOP(r, n)
    {
        int row = has_perm ? perm[r] : r, c = r / C, i = r - c * C;
        int b = rp[row], len = rp[row + 1] - b;
        for (int j = 0; j < len; j++) {
            col[b + j] = fcol[cs[c] + j * C + i];
            val[b + j] = fval[cs[c] + j * C + i];
        }
    }
}

/* ---- Lanczos in the D inner product (amg_eig.c); partial sums per group */

inline void amgs_group_sum(double s, __local double *sh, __global double *part)
{
    size_t l = get_local_id(0), ls = get_local_size(0);
    sh[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t h = ls / 2; h > 0; h /= 2) {
        if (l < h)
            sh[l] += sh[l + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        part[get_group_id(0)] = sh[0];
}

/* start: v_i = splitmix64(i) in (0.5, 1.5), v_prev = 0; sum d v^2 */
__kernel void amgs_lz_start(int n, __global const double *d, __global double *v,
                            __global double *vp, __local double *sh, __global double *part)
{
    double s = 0.0;
    GSTRIDE_LOOP(i, n)
    {
        ulong z = (ulong)i + 0x9e3779b97f4a7c15UL;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
        z ^= z >> 31;
        double vi = 0.5 + (double)(z >> 11) * (1.0 / 9007199254740992.0);
        v[i] = vi;
        vp[i] = 0.0;
        s += d[i] * vi * vi;
    }
    amgs_group_sum(s, sh, part);
}

/* w = sv D^-1 (A v) - beta svp v_prev ; sum d w sv v   (y = A v) */
__kernel void amgs_lz_w(int n, __global const double *d, __global const double *y,
                        __global const double *v, __global const double *vp, double sv,
                        double svp, double beta, __global double *w, __local double *sh,
                        __global double *part)
{
    double s = 0.0;
    GSTRIDE_LOOP(i, n)
    {
        double dinv = 1.0 / d[i];
        double wi = sv * dinv * y[i] - beta * svp * vp[i];
        w[i] = wi;
        s += d[i] * wi * sv * v[i];
    }
    amgs_group_sum(s, sh, part);
}

/* w -= alpha sv v ; sum d w^2 */
__kernel void amgs_lz_orth(int n, __global const double *d, __global const double *v, double sv,
                           double alpha, __global double *w, __local double *sh,
                           __global double *part)
{
    double s = 0.0;
    GSTRIDE_LOOP(i, n)
    {
        double wi = w[i] - alpha * sv * v[i];
        w[i] = wi;
        s += d[i] * wi * wi;
    }
    amgs_group_sum(s, sh, part);
}
