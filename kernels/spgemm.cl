/*
 * spgemm.cl: C = A B for device CSR (int32 row pointers and columns, double
 * values), host side in kernels/la_sparse.c (la_spgemm).
 *
 * Hash-based row-by-row product (Nagasaka, Nukada, Matsuoka, "High-
 * performance and memory-saving sparse general matrix-matrix multiplication
 * for NVIDIA Pascal GPU", ICPP 2017): a symbolic pass counts each row's
 * distinct columns in a hash table, a scan makes C's row pointers, a
 * numeric pass accumulates the values in the same table and writes the row
 * sorted. The AMG products this serves (A P, R (A P)) have rows of a few to
 * a few thousand products, so rows are binned by their upper bound of
 * products (sg_bound) and each bin gets the width that keeps its lanes busy:
 *   short rows  (bound <= short_max) sg_count / sg_fill: the group is split
 *               into partitions of pw lanes (a warp on NVIDIA), one row per
 *               partition, each with its own slice of the local table; the
 *               slice is at least twice the bound, so it never overflows
 *   long rows   (listed by sg_bound) sg_count_long / sg_fill_long: the
 *               whole group on one row, the whole local table (hash_cap);
 *               a row whose distinct columns pass 3/4 of it is flagged
 *   flagged     sg_count_global / sg_fill_global / sg_sort: the same hash
 *               in global memory, a table per row of at least twice the
 *               row's possible columns, laid out by the host in batches
 * The numeric pass sizes each row's table from its exact count (twice it),
 * and the host gives the fill kernels only the local memory the largest
 * such row needs (the counting kernels report it): in R (A P) the bound is
 * about ten times the count, and the smaller tables let twice the groups
 * fit an H200 SM (fill 40% faster there).
 * Within a row the lanes split into teams of g lanes per entry of A's row,
 * g about the mean length of the B rows it meets, so both very short and
 * long B rows keep the lanes busy.
 *
 * Values are summed in the table by a compare-and-swap loop on the 64-bit
 * pattern of the double (cl_khr_int64_base_atomics, which la_sparse_init
 * checks for): the products are the host's (FP_CONTRACT OFF, no fused
 * multiply-add), their order of addition is not, so C equals the host's
 * amg_spgemm within rounding, not bit for bit. A deterministic order (one
 * work-item per output entry searching B's rows) costs several times the
 * work on the R (A P) rows, which is why it is not used.
 *
 * A row is written unsorted (the occupied slots compacted), read back into
 * local memory and sorted there: by rank (every key counts the smaller
 * ones; distinct keys) up to SG_RANK_MAX entries, by a bitonic network
 * beyond; the global rows by the same network in place (sg_sort). The
 * network is the one whose every compare-exchange puts the smaller key
 * first, so entries past the row's end act as +infinity and their pairs
 * are skipped: no padding.
 *
 * Every loop that holds a barrier runs the same number of times in every
 * work-item of a group (its bounds come from group-uniform values).
 */
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

#define SG_EMPTY (-1)
/* an odd multiplier: a run of up to table-size consecutive columns lands in
 * distinct slots, spread apart so that probing runs stay short */
#define SG_HASH(c) ((uint)(c) * 107u)
#define SG_MAXP 64      /* partitions per group of sg_count / sg_fill at most */
#define SG_RANK_MAX 256 /* rows up to this long are sorted by rank */
#define SG_FENCE (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

/* the table of a row with bound u: a power of two, at least 2u, at most cap */
int sg_table_size(int u, int cap)
{
    int t = 1;
    while (t < cap && (t >> 1) < u)
        t <<= 1;
    return t;
}

/* lanes per entry of A's row: about the mean B row length, a power of two
 * no larger than the lanes L */
int sg_team(int u, int len, int lanes)
{
    if (len <= 0)
        return 1;
    int avg = u / len + (u % len != 0);
    int g = 1;
    while (g < avg && g < lanes)
        g <<= 1;
    return g;
}

/* Hash insertion of col; 1: inserted, 0: present, -1: the table is full.
 * The slot is left in *slot. */
#define SG_DEFINE_INSERT(NAME, AS)                                                                 \
    int NAME(volatile AS int *keys, int mask, int col, int *slot)                                  \
    {                                                                                              \
        int h = (int)(SG_HASH(col) & (uint)mask);                                                  \
        for (int probe = 0; probe <= mask; probe++) {                                              \
            int k = keys[h];                                                                       \
            if (k == col) {                                                                        \
                *slot = h;                                                                         \
                return 0;                                                                          \
            }                                                                                      \
            if (k == SG_EMPTY) {                                                                   \
                int old = atomic_cmpxchg(&keys[h], SG_EMPTY, col);                                 \
                if (old == SG_EMPTY || old == col) {                                               \
                    *slot = h;                                                                     \
                    return old == SG_EMPTY;                                                        \
                }                                                                                  \
            }                                                                                      \
            h = (h + 1) & mask;                                                                    \
        }                                                                                          \
        return -1;                                                                                 \
    }
SG_DEFINE_INSERT(sg_insert_l, __local)
SG_DEFINE_INSERT(sg_insert_g, __global)

/* *v += x by compare-and-swap on the bits */
#define SG_DEFINE_ADD(NAME, AS)                                                                    \
    void NAME(volatile AS double *v, double x)                                                     \
    {                                                                                              \
        volatile AS long *p = (volatile AS long *)v;                                               \
        long old = *p;                                                                             \
        for (;;) {                                                                                 \
            long got = atom_cmpxchg(p, old, as_long(as_double(old) + x));                          \
            if (got == old)                                                                        \
                return;                                                                            \
            old = got;                                                                             \
        }                                                                                          \
    }
SG_DEFINE_ADD(sg_add_l, __local)
SG_DEFINE_ADD(sg_add_g, __global)

/* Bitonic sort of key[0..n) (with val) by the group (all lanes call it;
 * n group-uniform): the flip-and-half-clean network, every exchange
 * putting the smaller key at the lower index, pairs past n skipped. */
#define SG_DEFINE_BITONIC(NAME, AS)                                                                \
    void NAME(AS int *key, AS double *val, int n, int lid, int ls)                                 \
    {                                                                                              \
        int N = 1;                                                                                 \
        while (N < n)                                                                              \
            N <<= 1;                                                                               \
        for (int k = 2; k <= N; k <<= 1)                                                           \
            for (int j = k >> 1; j > 0; j >>= 1) {                                                 \
                for (int t = lid; t < (N >> 1); t += ls) {                                         \
                    int i, p;                                                                      \
                    if (j == (k >> 1)) {                                                           \
                        int b = (t / j) * k, o = t % j;                                            \
                        i = b + o;                                                                 \
                        p = b + k - 1 - o;                                                         \
                    } else {                                                                       \
                        i = 2 * j * (t / j) + t % j;                                               \
                        p = i + j;                                                                 \
                    }                                                                              \
                    if (p < n && key[p] < key[i]) {                                                \
                        int tk = key[i];                                                           \
                        key[i] = key[p];                                                           \
                        key[p] = tk;                                                               \
                        double tv = val[i];                                                        \
                        val[i] = val[p];                                                           \
                        val[p] = tv;                                                               \
                    }                                                                              \
                }                                                                                  \
                barrier(SG_FENCE);                                                                 \
            }                                                                                      \
    }
SG_DEFINE_BITONIC(sg_bitonic_l, __local)
SG_DEFINE_BITONIC(sg_bitonic_g, __global)

/* entries lane, lane + lanes, ... of key[0..n) to their ranks in the output */
void sg_rank_out(__local const int *key, __local const double *val, int n, int lane, int lanes,
                 __global int *ocol, __global double *oval)
{
    for (int e = lane; e < n; e += lanes) {
        int k = key[e], r = 0;
        for (int q = 0; q < n; q++)
            r += key[q] < k;
        ocol[r] = k;
        oval[r] = val[e];
    }
}

/* ub[i] = products of row i (at most INT_MAX); rows past short_max are
 * listed in list[0..ctr[0]) */
__kernel void sg_bound(const int nrows, __global const int *Arp, __global const int *Acol,
                       __global const int *Brp, const int short_max, __global int *ub,
                       __global int *list, __global int *ctr)
{
    for (int i = (int)get_global_id(0); i < nrows; i += (int)get_global_size(0)) {
        long s = 0;
        for (int k = Arp[i]; k < Arp[i + 1]; k++) {
            int c = Acol[k];
            s += Brp[c + 1] - Brp[c];
        }
        int u = (int)min(s, (long)INT_MAX);
        ub[i] = u;
        if (u > short_max)
            list[atomic_inc(&ctr[0])] = i;
    }
}

/* ------------------------------------------------------------ short rows */

/* cnt of the short rows; ctr[2] gets the largest (one atomic per group) */

__kernel void sg_count(const int nrows, __global const int *Arp, __global const int *Acol,
                       __global const int *Brp, __global const int *Bcol, __global const int *ub,
                       const int short_max, const int pw, const int slice, __global int *cnt,
                       __global int *ctr, __local int *keys)
{
    __local int npart[SG_MAXP], gmax;
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    const int part = lid / pw, lane = lid % pw, np = ls / pw;
    volatile __local int *tab = keys + part * slice;
    if (lid == 0)
        gmax = 0;
    for (int base = (int)get_group_id(0) * np; base < nrows; base += (int)get_num_groups(0) * np) {
        const int row = base + part;
        const int u = row < nrows ? ub[row] : short_max + 1;
        const int act = u <= short_max;
        const int tsize = act ? sg_table_size(u, slice) : 0;
        for (int s = lane; s < tsize; s += pw)
            tab[s] = SG_EMPTY;
        if (lane == 0)
            npart[part] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (act && u > 0) {
            const int a0 = Arp[row], a1 = Arp[row + 1], g = sg_team(u, a1 - a0, pw);
            for (int k = a0 + lane / g; k < a1; k += pw / g) {
                const int c = Acol[k], b1 = Brp[c + 1];
                for (int j = Brp[c] + lane % g; j < b1; j += g) {
                    int slot;
                    if (sg_insert_l(tab, tsize - 1, Bcol[j], &slot) > 0)
                        atomic_inc(&npart[part]);
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (act && lane == 0) {
            cnt[row] = npart[part];
            atomic_max(&gmax, npart[part]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0 && gmax > 0)
        atomic_max(&ctr[2], gmax);
}

__kernel void sg_fill(const int nrows, __global const int *Arp, __global const int *Acol,
                      __global const double *Aval, __global const int *Brp,
                      __global const int *Bcol, __global const double *Bval,
                      __global const int *ub, const int short_max, const int pw, const int slice,
                      __global const int *Crp, __global int *Ccol, __global double *Cval,
                      __local int *keys, __local double *vals)
{
    __local int npart[SG_MAXP];
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    const int part = lid / pw, lane = lid % pw, np = ls / pw;
    volatile __local int *tab = keys + part * slice;
    volatile __local double *tv = vals + part * slice;
    for (int base = (int)get_group_id(0) * np; base < nrows; base += (int)get_num_groups(0) * np) {
        const int row = base + part;
        const int u = row < nrows ? ub[row] : short_max + 1;
        const int act = u <= short_max;
        const int rs = act ? Crp[row] : 0, n = act ? Crp[row + 1] - rs : 0;
        const int tsize = act ? sg_table_size(n, slice) : 0;
        for (int s = lane; s < tsize; s += pw) {
            tab[s] = SG_EMPTY;
            tv[s] = 0.0;
        }
        if (lane == 0)
            npart[part] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (act && u > 0) {
            const int a0 = Arp[row], a1 = Arp[row + 1], g = sg_team(u, a1 - a0, pw);
            for (int k = a0 + lane / g; k < a1; k += pw / g) {
                const int c = Acol[k], b1 = Brp[c + 1];
                const double a = Aval[k];
                for (int j = Brp[c] + lane % g; j < b1; j += g) {
                    int slot;
                    sg_insert_l(tab, tsize - 1, Bcol[j], &slot);
                    sg_add_l(tv + slot, a * Bval[j]);
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = lane; s < tsize; s += pw) {
            int key = tab[s];
            if (key != SG_EMPTY) {
                int p = atomic_inc(&npart[part]);
                Ccol[rs + p] = key;
                Cval[rs + p] = tv[s];
            }
        }
        barrier(SG_FENCE);
        for (int e = lane; e < n; e += pw) {
            tab[e] = Ccol[rs + e];
            tv[e] = Cval[rs + e];
        }
        barrier(SG_FENCE);
        sg_rank_out((__local const int *)tab, (__local const double *)tv, n, lane, pw, Ccol + rs,
                    Cval + rs);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* ------------------------------------------------------------- long rows */

/* cnt of the long rows that fit the table, ctr[3] the largest; the others
 * are listed in flag (row, bound) and negated in list */
__kernel void sg_count_long(__global const int *Arp, __global const int *Acol,
                            __global const int *Brp, __global const int *Bcol,
                            __global const int *ub, const int cap, __global int *list,
                            __global int *ctr, __global int *flag, __global int *cnt,
                            __local int *keys)
{
    __local int st[3]; /* distinct columns, overflow, the group's largest count */
    volatile __local int *stv = st;
    volatile __local int *tab = keys;
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    const int nlong = ctr[0];
    if (lid == 0)
        stv[2] = 0;
    for (int t = (int)get_group_id(0); t < nlong; t += (int)get_num_groups(0)) {
        const int row = list[t], u = ub[row];
        const int tsize = sg_table_size(u, cap), lim = tsize - tsize / 4;
        for (int s = lid; s < tsize; s += ls)
            tab[s] = SG_EMPTY;
        if (lid == 0)
            stv[0] = stv[1] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        const int a0 = Arp[row], a1 = Arp[row + 1], g = sg_team(u, a1 - a0, ls);
        for (int k = a0 + lid / g; k < a1 && !stv[1]; k += ls / g) {
            const int c = Acol[k], b1 = Brp[c + 1];
            for (int j = Brp[c] + lid % g; j < b1; j += g) {
                int slot, r = sg_insert_l(tab, tsize - 1, Bcol[j], &slot);
                if (r < 0 || (r > 0 && atomic_inc(&stv[0]) >= lim)) {
                    stv[1] = 1;
                    break;
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            if (stv[1]) {
                int f = atomic_inc(&ctr[1]);
                flag[2 * f] = row;
                flag[2 * f + 1] = u;
                list[t] = -1 - row;
            } else {
                cnt[row] = stv[0];
                stv[2] = max(stv[2], stv[0]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0 && stv[2] > 0)
        atomic_max(&ctr[3], stv[2]);
}

__kernel void sg_fill_long(__global const int *Arp, __global const int *Acol,
                           __global const double *Aval, __global const int *Brp,
                           __global const int *Bcol, __global const double *Bval,
                           __global const int *ub, const int cap, __global const int *list,
                           __global const int *ctr, __global const int *Crp, __global int *Ccol,
                           __global double *Cval, __local int *keys, __local double *vals)
{
    __local int npos;
    volatile __local int *tab = keys;
    volatile __local double *tv = vals;
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    const int nlong = ctr[0];
    for (int t = (int)get_group_id(0); t < nlong; t += (int)get_num_groups(0)) {
        const int row = list[t];
        if (row < 0) /* flagged: the global tables' (group-uniform) */
            continue;
        const int u = ub[row], rs = Crp[row], n = Crp[row + 1] - rs;
        const int tsize = sg_table_size(n, cap);
        for (int s = lid; s < tsize; s += ls) {
            tab[s] = SG_EMPTY;
            tv[s] = 0.0;
        }
        if (lid == 0)
            npos = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        const int a0 = Arp[row], a1 = Arp[row + 1], g = sg_team(u, a1 - a0, ls);
        for (int k = a0 + lid / g; k < a1; k += ls / g) {
            const int c = Acol[k], b1 = Brp[c + 1];
            const double a = Aval[k];
            for (int j = Brp[c] + lid % g; j < b1; j += g) {
                int slot;
                sg_insert_l(tab, tsize - 1, Bcol[j], &slot);
                sg_add_l(tv + slot, a * Bval[j]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = lid; s < tsize; s += ls) {
            int key = tab[s];
            if (key != SG_EMPTY) {
                int p = atomic_inc(&npos);
                Ccol[rs + p] = key;
                Cval[rs + p] = tv[s];
            }
        }
        barrier(SG_FENCE);
        for (int e = lid; e < n; e += ls) {
            tab[e] = Ccol[rs + e];
            tv[e] = Cval[rs + e];
        }
        barrier(SG_FENCE);
        if (n <= SG_RANK_MAX) {
            sg_rank_out(keys, vals, n, lid, ls, Ccol + rs, Cval + rs);
        } else {
            sg_bitonic_l(keys, vals, n, lid, ls);
            for (int e = lid; e < n; e += ls) {
                Ccol[rs + e] = keys[e];
                Cval[rs + e] = vals[e];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* ---------------------------------------------- flagged rows, global tables */

/* fl[3 t .. 3 t + 2] = row, table offset (in the batch's tables), table
 * size; the batch's rows are first .. first + groups - 1 */
__kernel void sg_count_global(__global const int *Arp, __global const int *Acol,
                              __global const int *Brp, __global const int *Bcol,
                              __global const int *ub, __global const int *fl, const int first,
                              __global int *gkeys, __global int *cnt)
{
    __local int nd;
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    const int t = first + (int)get_group_id(0);
    const int row = fl[3 * t], tsize = fl[3 * t + 2], u = ub[row];
    volatile __global int *tab = gkeys + fl[3 * t + 1];
    for (int s = lid; s < tsize; s += ls)
        tab[s] = SG_EMPTY;
    if (lid == 0)
        nd = 0;
    barrier(SG_FENCE);
    const int a0 = Arp[row], a1 = Arp[row + 1], g = sg_team(u, a1 - a0, ls);
    for (int k = a0 + lid / g; k < a1; k += ls / g) {
        const int c = Acol[k], b1 = Brp[c + 1];
        for (int j = Brp[c] + lid % g; j < b1; j += g) {
            int slot;
            if (sg_insert_g(tab, tsize - 1, Bcol[j], &slot) > 0)
                atomic_inc(&nd);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0)
        cnt[row] = nd;
}

__kernel void sg_fill_global(__global const int *Arp, __global const int *Acol,
                             __global const double *Aval, __global const int *Brp,
                             __global const int *Bcol, __global const double *Bval,
                             __global const int *ub, __global const int *fl, const int first,
                             __global int *gkeys, __global double *gvals, __global const int *Crp,
                             __global int *Ccol, __global double *Cval)
{
    __local int npos;
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    const int t = first + (int)get_group_id(0);
    const int row = fl[3 * t], tsize = fl[3 * t + 2], u = ub[row], rs = Crp[row];
    volatile __global int *tab = gkeys + fl[3 * t + 1];
    volatile __global double *tv = gvals + fl[3 * t + 1];
    for (int s = lid; s < tsize; s += ls) {
        tab[s] = SG_EMPTY;
        tv[s] = 0.0;
    }
    if (lid == 0)
        npos = 0;
    barrier(SG_FENCE);
    const int a0 = Arp[row], a1 = Arp[row + 1], g = sg_team(u, a1 - a0, ls);
    for (int k = a0 + lid / g; k < a1; k += ls / g) {
        const int c = Acol[k], b1 = Brp[c + 1];
        const double a = Aval[k];
        for (int j = Brp[c] + lid % g; j < b1; j += g) {
            int slot;
            sg_insert_g(tab, tsize - 1, Bcol[j], &slot);
            sg_add_g(tv + slot, a * Bval[j]);
        }
    }
    barrier(SG_FENCE);
    for (int s = lid; s < tsize; s += ls) {
        int key = tab[s];
        if (key != SG_EMPTY) {
            int p = atomic_inc(&npos);
            Ccol[rs + p] = key;
            Cval[rs + p] = tv[s];
        }
    }
}

/* the flagged rows (fl's rows, one group each) sorted in place */
__kernel void sg_sort(__global const int *fl, __global const int *Crp, __global int *Ccol,
                      __global double *Cval)
{
    const int row = fl[3 * (int)get_group_id(0)];
    const int rs = Crp[row], n = Crp[row + 1] - rs;
    sg_bitonic_g(Ccol + rs, Cval + rs, n, (int)get_local_id(0), (int)get_local_size(0));
}
