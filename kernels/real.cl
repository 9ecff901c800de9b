/*
 * real.cl: prepended to every kernel source. Storage precision comes from the
 * build options (la.c):
 *   -DCLS_REAL_DOUBLE   vectors are double (needs fp64)
 *   -DCLS_MAT_FLOAT     matrix values are float even though vectors are
 *                       double (LA_MIXED: the SpMV reads 4 bytes per value
 *                       instead of 8 and accumulates in double)
 *   -DCLS_ACC_DOUBLE    reductions accumulate in double (set whenever the
 *                       device has fp64, so float solves get double dots)
 * real   : storage type of vectors
 * mat_t  : storage type of matrix values (real, or float under CLS_MAT_FLOAT)
 * acc_t  : accumulator of dot products, the type of partial[] and result[]
 *
 * No kernel returns early when it has a barrier further on, even where the
 * condition is uniform over the group (which OpenCL allows): PoCL 3.1 then
 * ran the code after the last barrier once per work-item plus once more
 * (a counter bumped by 65 per launch of a 64-wide group, found by
 * test_formats). Kernels that must stop early skip their loops instead.
 *
 * Group reductions work for any local size, not only powers of two: the
 * profiler sweeps every multiple of the preferred work-group size multiple
 * (96, 160, ... included), so the tree starts at the largest power of two
 * below the size and guards the upper half.
 */
#if defined(CLS_REAL_DOUBLE) || defined(CLS_ACC_DOUBLE)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#ifdef CLS_REAL_DOUBLE
typedef double real;
#else
typedef float real;
#endif

#ifdef CLS_MAT_FLOAT
typedef float mat_t;
#else
typedef real mat_t;
#endif

#if defined(CLS_REAL_DOUBLE) || defined(CLS_ACC_DOUBLE)
typedef double acc_t;
#else
typedef float acc_t;
#endif

/* Largest power of two <= v (v >= 1). */
inline int cls_pow2_floor(int v)
{
    int p = 1;
    while (p <= v / 2)
        p <<= 1;
    return p;
}

/* Tree reduction of s[0..get_local_size(0)) into s[0]. Every work-item of
 * the group must call it; it begins and ends with a barrier. */
inline void cls_group_reduce(__local acc_t *s)
{
    const int lid = (int)get_local_id(0);
    const int ls = (int)get_local_size(0);
    for (int off = cls_pow2_floor(ls); off > 0; off >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < off && lid + off < ls)
            s[lid] += s[lid + off];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Same for two interleaved sums: s[2*i] and s[2*i+1]. */
inline void cls_group_reduce2(__local acc_t *s)
{
    const int lid = (int)get_local_id(0);
    const int ls = (int)get_local_size(0);
    for (int off = cls_pow2_floor(ls); off > 0; off >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < off && lid + off < ls) {
            s[2 * lid] += s[2 * (lid + off)];
            s[2 * lid + 1] += s[2 * (lid + off) + 1];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/*
 * Compensated sums (Ogita, Rump and Oishi, "Accurate sum and dot product",
 * SIAM J. Sci. Comput. 26 (2005), Sum2 and Dot2): a sum is a pair (hi, lo);
 * each product's rounding error is recovered exactly with fma and each
 * addition's with TwoSum. The pair rounded once is the correctly rounded
 * sum but for pathological cancellation, so it does not depend on the order
 * of summation: on how the rows are split into parts and work-groups. Every
 * dot product the CG iteration takes (the SpMV epilogue, the fused update,
 * the distributed reductions of dcg.cl) is one of these, which is why a
 * solve on K parts follows the one-part solve step for step. Contraction
 * would break the error-free transformations: FP_CONTRACT OFF inside them.
 */
#ifdef CLS_PLAIN_SUMS
/* a one-part solve on a CPU device (la_init_flags): plain sums, lo stays 0 */
inline void cls_acc2_add(acc_t *hi, acc_t *lo, const acc_t a)
{
    (void)lo;
    *hi += a;
}

inline void cls_acc2_dot(acc_t *hi, acc_t *lo, const acc_t x, const acc_t y)
{
    (void)lo;
    *hi += x * y;
}
#else
/* (hi, lo) += a, TwoSum */
inline void cls_acc2_add(acc_t *hi, acc_t *lo, const acc_t a)
{
#pragma OPENCL FP_CONTRACT OFF
    const acc_t s = *hi + a;
    const acc_t z = s - *hi;
    *lo += (*hi - (s - z)) + (a - z);
    *hi = s;
}

/* (hi, lo) += x * y, TwoProduct by fma */
inline void cls_acc2_dot(acc_t *hi, acc_t *lo, const acc_t x, const acc_t y)
{
#pragma OPENCL FP_CONTRACT OFF
    const acc_t p = x * y;
    *lo += fma(x, y, -p);
    cls_acc2_add(hi, lo, p);
}
#endif

/* (hi, lo) += (h, l) */
inline void cls_acc2_pair(acc_t *hi, acc_t *lo, const acc_t h, const acc_t l)
{
    cls_acc2_add(hi, lo, h);
    *lo += l;
}

/*
 * The epilogue every SpMV kernel shares (fused CG): after y = A x, the
 * work-items that wrote rows hold the pairs s0 = sum x[row] y[row] and
 * s1 = sum y[row]^2 w[row] (w = 1 when absent); the group reduces both and
 * writes the four values hi0, lo0, hi1, lo1 at partial[c * ngroups + group]
 * (c = 0..3). With partial == 0 it does nothing (plain y = A x). `partial`
 * is uniform over the launch, so every work-item takes the same branch and
 * reaches the same barriers. `red` holds 4 acc_t per work-item.
 * Under CLS_SERIAL_GROUP_SUM (CPU devices) the group sum is one barrier and
 * a serial add by work-item 0 instead of a tree.
 */
/* Tree reduction of two interleaved pairs s[4 i .. 4 i + 3] into s[0..3]
 * (any local size); every work-item calls it. */
inline void cls_group_reduce_pairs2_any(__local acc_t *s)
{
    const int lid = (int)get_local_id(0);
    const int ls = (int)get_local_size(0);
    for (int off = cls_pow2_floor(ls); off > 0; off >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < off && lid + off < ls)
            for (int c = 0; c < 2; c++) {
                acc_t hi = s[4 * lid + 2 * c], lo = s[4 * lid + 2 * c + 1];
                cls_acc2_pair(&hi, &lo, s[4 * (lid + off) + 2 * c],
                              s[4 * (lid + off) + 2 * c + 1]);
                s[4 * lid + 2 * c] = hi;
                s[4 * lid + 2 * c + 1] = lo;
            }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* v summed over the work-group (scratch: one acc_t per work-item); the
 * group's sum goes to partial[group] */
inline void cls_group_sum_to(__local acc_t *scratch, __global acc_t *partial, const acc_t v)
{
    scratch[get_local_id(0)] = v;
    cls_group_reduce(scratch);
    if (get_local_id(0) == 0)
        partial[get_group_id(0)] = scratch[0];
}

/* The work-item that computes a fused loop's scalars: the first, while the
 * device has not stopped (ctl[0] == 0: running) */
inline int cls_fused_leader(__global const int *restrict ctl)
{
    return get_local_id(0) == 0 && ctl[0] == 0;
}

/* Iteration k's record {rr, rz, p'Ap, q'Wq, alpha, beta, stop, k} into
 * hist[k % nslots] (read by the host's ring, kernels/la_ring.c), alpha and
 * beta into sc[0..1] for the update, and the control word: a stop ends the
 * loop (ctl[0]), else ctl[1] = k + 1. Returns 1 when the loop runs on. */
inline int cls_fused_record(__global acc_t *restrict hist, const int nslots, const int k,
                            const acc_t rr, const acc_t rz, const acc_t pq, const acc_t qq,
                            const acc_t alpha, const acc_t beta, const int stop,
                            __global acc_t *restrict sc, __global int *restrict ctl)
{
    __global acc_t *rec = hist + (k % nslots) * 8;
    rec[0] = rr;
    rec[1] = rz;
    rec[2] = pq;
    rec[3] = qq;
    rec[4] = alpha;
    rec[5] = beta;
    rec[6] = (acc_t)stop;
    rec[7] = (acc_t)k;
    sc[0] = alpha;
    sc[1] = beta;
    if (stop)
        ctl[0] = stop;
    else
        ctl[1] = k + 1;
    return !stop;
}

/* The arguments of a fused CG loop's scalars kernel (cgf_scalars,
 * pcgf_scalars): the SpMV's pairs (ps, gs groups), the update's (pu, gu),
 * the scalars, the control word, the record ring, the stop threshold */
#define CLS_FUSED_SCALARS_ARGS                                                                     \
    const int gs, __global const acc_t *restrict ps, const int gu,                                 \
        __global const acc_t *restrict pu, __global acc_t *restrict sc,                            \
        __global int *restrict ctl, __global acc_t *restrict hist, const int nslots,               \
        const acc_t stop2, __local acc_t *scratch

/* The fused CG loops' scalar kernels (cgf_scalars, cgf_fold,
 * pcgf_scalars): fold n groups' pairs (c = 0, 1: partial[2c * n + g] hi,
 * partial[(2c + 1) * n + g] lo, as cls_write_pairs2 lays them out) into
 * a[0..3] (hi0, lo0, hi1, lo1) ... */
inline void cls_fold_pairs2(acc_t *a, __global const acc_t *restrict partial, const int n)
{
    for (int g = (int)get_local_id(0); g < n; g += (int)get_local_size(0)) {
        cls_acc2_pair(&a[0], &a[1], partial[g], partial[n + g]);
        cls_acc2_pair(&a[2], &a[3], partial[2 * n + g], partial[3 * n + g]);
    }
}

/* ... and reduce every work-item's a[0..3] over the group: s0 and s1, each
 * rounded once. scratch: 4 acc_t per work-item. */
inline void cls_group_pairs2(__local acc_t *scratch, const acc_t *a, acc_t *s0, acc_t *s1)
{
    const int lid = (int)get_local_id(0);
    for (int c = 0; c < 4; c++)
        scratch[4 * lid + c] = a[c];
    cls_group_reduce_pairs2_any(scratch);
    *s0 = scratch[0] + scratch[1]; /* rounded once */
    *s1 = scratch[2] + scratch[3];
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* The four sums of a fused CG iteration, as its scalars kernel needs them:
 * the SpMV's pairs (ps, gs groups) -> s0, s1; the update's (pu, gu) -> s2,
 * s3. */
inline void cls_fused_sums(__global const acc_t *restrict ps, const int gs,
                           __global const acc_t *restrict pu, const int gu,
                           __local acc_t *scratch, acc_t *s0, acc_t *s1, acc_t *s2, acc_t *s3)
{
    acc_t a[4] = {0, 0, 0, 0}, u[4] = {0, 0, 0, 0};
    cls_fold_pairs2(a, ps, gs);
    cls_fold_pairs2(u, pu, gu);
    cls_group_pairs2(scratch, a, s0, s1);
    cls_group_pairs2(scratch, u, s2, s3);
}

/*
 * CLS_EACH(i, n, cond) { body }: body for every i < n (while cond holds).
 * GPUs: a grid-stride loop over a grid capped to fill the device. CPU
 * devices (PoCL): one element per work-item, and the launch covers all n
 * (la_cgf.c, la_format.c): PoCL runs a work-group as a loop over its
 * work-items and vectorises that loop only when a work-item's own code has
 * no loop, so a grid-stride loop (trip count 1 or 0, but a loop) left the
 * fused CG update at 2.5x the instructions (callgrind, 64^3 Poisson).
 */
#ifdef CLS_SERIAL_GROUP_SUM
#define CLS_EACH(i, n, cond)                                                           \
    const int i = (int)get_global_id(0);                                               \
    if ((cond) && i < (n))
#else
#define CLS_EACH(i, n, cond)                                                           \
    for (int i = (int)get_global_id(0); (cond) && i < (n); i += (int)get_global_size(0))
#endif

#ifdef CLS_SERIAL_GROUP_SUM
/*
 * CPU devices (PoCL): one barrier, then work-item 0 adds the group's values
 * serially. PoCL runs a work-group as a loop over its work-items and
 * vectorises across them; every barrier splits that loop and a tree
 * reduction has log2(local size) of them: on the 2-core Xeon, 64^3
 * Poisson, 1024 groups of 256, the scalar SpMV took 1.5 ms without the
 * epilogue, 4.6 ms with the tree and 2.6 ms with this; one partial per
 * work-item and no barrier (1.9 ms) moved the cost into cgf_scalars, which
 * then folds 2 x 262k partials. With the tuned geometry (4096-wide groups)
 * the barrier is paid a few dozen times per launch.
 */
inline void cls_write_pairs2(__global acc_t *partial, __local acc_t *red, acc_t h0, acc_t l0,
                             acc_t h1, acc_t l1)
{
    const int lid = (int)get_local_id(0);
    red[4 * lid] = h0;
    red[4 * lid + 1] = l0;
    red[4 * lid + 2] = h1;
    red[4 * lid + 3] = l1;
    barrier(CLK_LOCAL_MEM_FENCE);
    /* Work-item 0 adds the group's values; the others run the loop once and
     * drop the result. A branch that skips a variable-trip loop right after
     * a barrier ("if (lid == 0) for (...)") aborts PoCL 5.0's parallel
     * region formation (Kernel.cc: region_entry_barrier != NULL; pocl PR
     * 2281): a do-while every work-item enters has no such branch. */
    const int cnt = lid == 0 ? (int)get_local_size(0) : 1;
    acc_t a = 0, al = 0, b = 0, bl = 0;
    int i = 0;
    do {
        cls_acc2_pair(&a, &al, red[4 * i], red[4 * i + 1]);
        cls_acc2_pair(&b, &bl, red[4 * i + 2], red[4 * i + 3]);
    } while (++i < cnt);
    if (lid == 0) {
        const int g = (int)get_group_id(0), ng = (int)get_num_groups(0);
        partial[g] = a;
        partial[ng + g] = al;
        partial[2 * ng + g] = b;
        partial[3 * ng + g] = bl;
    }
}
#else
/* the group's two pairs into partial[c * ngroups + group], c = 0..3 */
inline void cls_write_pairs2(__global acc_t *partial, __local acc_t *red, acc_t h0, acc_t l0,
                             acc_t h1, acc_t l1)
{
    const int lid = (int)get_local_id(0);
    red[4 * lid] = h0;
    red[4 * lid + 1] = l0;
    red[4 * lid + 2] = h1;
    red[4 * lid + 3] = l1;
    cls_group_reduce_pairs2_any(red);
    if (lid == 0) {
        const int g = (int)get_group_id(0), ng = (int)get_num_groups(0);
        for (int c = 0; c < 4; c++)
            partial[c * ng + g] = red[c];
    }
}
#endif

inline void cls_spmv_dots(__global acc_t *partial, __local acc_t *red, acc_t h0, acc_t l0,
                          acc_t h1, acc_t l1)
{
    if (partial)
        cls_write_pairs2(partial, red, h0, l0, h1, l1);
}

/* The accumulators of the epilogue: pairs (s0, s0l) and (s1, s1l). */
#define CLS_DOTS_DECL acc_t s0 = 0, s0l = 0, s1 = 0, s1l = 0
/* The dot contributions of one finished row. */
#define CLS_ROW_DOTS(xr, yr, w, row)                                                   \
    do {                                                                               \
        const acc_t yv_ = (acc_t)(yr);                                                 \
        cls_acc2_dot(&s0, &s0l, (acc_t)(xr), yv_);                                     \
        cls_acc2_dot(&s1, &s1l, yv_ * yv_, (w) ? (acc_t)(w)[row] : (acc_t)1);          \
    } while (0)
#define CLS_SPMV_DOTS(partial, red) cls_spmv_dots(partial, red, s0, s0l, s1, s1l)
