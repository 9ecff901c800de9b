/*
 * scan.cl: exclusive prefix sum of int32 counts (la_scan_i32, host side in
 * kernels/la_sparse.c). Every row pointer a device set-up builds comes from
 * here, so the scan must be exact and must notice when the total no longer
 * fits the 32-bit indices the other kernels use: the block sums and the
 * running offsets are carried in long, and the host reads the long total
 * (bsum[nb]) and refuses a total past INT32_MAX instead of handing out
 * wrapped row pointers.
 *
 * Three launches, the classic reduce-then-scan (Merrill and Grimshaw,
 * "Parallel scan for stream architectures", 2009) because it reads the
 * counts twice and writes the offsets once with no inter-group waiting
 * (OpenCL 1.2 gives no forward-progress guarantee a decoupled look-back
 * scan would need):
 *   scan_block  one group per block of SCAN_PER * ls counts: its sum
 *   scan_top    one group: exclusive scan of the block sums in place,
 *               the total after them and in off[n]
 *   scan_add    one group per block: the block's scan in local memory
 *               (loaded and stored coalesced, the tile padded against bank
 *               conflicts) plus the block's offset
 * Indices are long: n may come close to 2^31 and block * size past it.
 */
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define SCAN_PER 8
/* one padding slot every 32 ints: work-item t's SCAN_PER consecutive
 * entries then fall in different banks of its neighbours' */
#define SCAN_PAD(j) ((j) + ((j) >> 5))

/* Exclusive scan of one long per work-item over the group (Hillis-Steele
 * in tmp, ls longs); *tot gets the group's sum. Every work-item calls it. */
static long scan_group_long(__local long *tmp, long v, int lid, int ls, long *tot)
{
    tmp[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = 1; d < ls; d <<= 1) {
        long a = lid >= d ? tmp[lid - d] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        tmp[lid] += a;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    long incl = tmp[lid];
    *tot = tmp[ls - 1];
    barrier(CLK_LOCAL_MEM_FENCE); /* tmp is reused by the caller's next call */
    return incl - v;
}

__kernel void scan_block(const long n, __global const int *cnt, __global long *bsum,
                         __local long *tmp)
{
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    const long base = (long)get_group_id(0) * SCAN_PER * ls;
    long s = 0;
    for (int r = 0; r < SCAN_PER; r++) {
        long j = base + (long)r * ls + lid;
        if (j < n)
            s += cnt[j];
    }
    tmp[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = ls >> 1; h > 0; h >>= 1) {
        if (lid < h)
            tmp[lid] += tmp[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        bsum[get_group_id(0)] = tmp[0];
}

/* one work-group: bsum[0..nb) becomes its exclusive scan, bsum[nb] and
 * off[n] the total (off[n] truncated when past INT32_MAX: the host reads
 * bsum[nb] and fails the scan then) */
__kernel void scan_top(const long nb, __global long *bsum, const long n, __global int *off,
                       __local long *tmp)
{
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    long carry = 0;
    for (long base = 0; base < nb; base += (long)SCAN_PER * ls) {
        long first = base + (long)lid * SCAN_PER, v[SCAN_PER], s = 0;
        for (int q = 0; q < SCAN_PER; q++) {
            v[q] = first + q < nb ? bsum[first + q] : 0;
            s += v[q];
        }
        long tot;
        long run = carry + scan_group_long(tmp, s, lid, ls, &tot);
        for (int q = 0; q < SCAN_PER; q++)
            if (first + q < nb) {
                bsum[first + q] = run;
                run += v[q];
            }
        carry += tot;
    }
    if (lid == 0) {
        bsum[nb] = carry;
        off[n] = (int)carry;
    }
}

__kernel void scan_add(const long n, __global const int *cnt, __global const long *bsum,
                       __global int *off, __local int *tile, __local long *tmp)
{
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    const long base = (long)get_group_id(0) * SCAN_PER * ls;
    const int len = (int)min((long)SCAN_PER * ls, n - base);
    for (int r = 0; r < SCAN_PER; r++) {
        int j = r * ls + lid;
        tile[SCAN_PAD(j)] = j < len ? cnt[base + j] : 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int v[SCAN_PER];
    long s = 0;
    for (int q = 0; q < SCAN_PER; q++) {
        v[q] = tile[SCAN_PAD(lid * SCAN_PER + q)];
        s += v[q];
    }
    long tot;
    long run = bsum[get_group_id(0)] + scan_group_long(tmp, s, lid, ls, &tot);
    for (int q = 0; q < SCAN_PER; q++) {
        tile[SCAN_PAD(lid * SCAN_PER + q)] = (int)run;
        run += v[q];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = 0; r < SCAN_PER; r++) {
        int j = r * ls + lid;
        if (j < len)
            off[base + j] = tile[SCAN_PAD(j)];
    }
}
