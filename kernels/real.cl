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
 * The epilogue every SpMV kernel shares (fused CG): after y = A x, the
 * work-items that wrote rows hold s0 = sum x[row] y[row] and
 * s1 = sum y[row]^2 w[row] (w = 1 when absent); the group reduces both and
 * writes partial[group] and partial[ngroups + group]. With partial == 0 it
 * does nothing (plain y = A x). `partial` is uniform over the launch, so
 * every work-item takes the same branch and reaches the same barriers.
 * Under CLS_SERIAL_GROUP_SUM (CPU devices) the group sum is one barrier and
 * a serial add by work-item 0 instead of a tree.
 */
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
inline void cls_write_partials2(__global acc_t *partial, __local acc_t *red, acc_t s0, acc_t s1)
{
    const int lid = (int)get_local_id(0);
    red[2 * lid] = s0;
    red[2 * lid + 1] = s1;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        acc_t a = 0, b = 0;
        for (int i = 0; i < (int)get_local_size(0); i++) {
            a += red[2 * i];
            b += red[2 * i + 1];
        }
        partial[get_group_id(0)] = a;
        partial[get_num_groups(0) + get_group_id(0)] = b;
    }
}
#else
/* the group's two sums into partial[group] and partial[ngroups + group] */
inline void cls_write_partials2(__global acc_t *partial, __local acc_t *red, acc_t s0, acc_t s1)
{
    const int lid = (int)get_local_id(0);
    red[2 * lid] = s0;
    red[2 * lid + 1] = s1;
    cls_group_reduce2(red);
    if (lid == 0) {
        partial[get_group_id(0)] = red[0];
        partial[get_num_groups(0) + get_group_id(0)] = red[1];
    }
}
#endif

inline void cls_spmv_dots(__global acc_t *partial, __local acc_t *red, acc_t s0, acc_t s1)
{
    if (partial)
        cls_write_partials2(partial, red, s0, s1);
}

/* The dot contributions of one finished row. */
#define CLS_ROW_DOTS(s0, s1, xr, yr, w, row)                                           \
    do {                                                                               \
        const acc_t yv_ = (acc_t)(yr);                                                 \
        (s0) += (acc_t)(xr) * yv_;                                                     \
        (s1) += yv_ * yv_ * ((w) ? (acc_t)(w)[row] : (acc_t)1);                        \
    } while (0)
