/*
 * real.cl: prepended to every kernel source. Storage precision comes from the
 * build options (la.c):
 *   -DCLS_REAL_DOUBLE   vectors and matrix values are double (needs fp64)
 *   -DCLS_ACC_DOUBLE    reductions accumulate in double (set whenever the
 *                       device has fp64, so float solves get double dots)
 * real   : storage type of vectors and matrix values
 * acc_t  : accumulator of dot products, the type of partial[] and result[]
 */
#if defined(CLS_REAL_DOUBLE) || defined(CLS_ACC_DOUBLE)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#ifdef CLS_REAL_DOUBLE
typedef double real;
#else
typedef float real;
#endif

#if defined(CLS_REAL_DOUBLE) || defined(CLS_ACC_DOUBLE)
typedef double acc_t;
#else
typedef float acc_t;
#endif

/* Tree reduction of s[0..get_local_size(0)) into s[0]; the local size is a
 * power of two (la.c checks). Every work-item of the group must call it. */
inline void cls_group_reduce(__local acc_t *s)
{
    const int lid = (int)get_local_id(0);
    for (int off = (int)get_local_size(0) / 2; off > 0; off >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < off)
            s[lid] += s[lid + off];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Same for two interleaved sums: s[2*i] and s[2*i+1]. */
inline void cls_group_reduce2(__local acc_t *s)
{
    const int lid = (int)get_local_id(0);
    for (int off = (int)get_local_size(0) / 2; off > 0; off >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < off) {
            s[2 * lid] += s[2 * (lid + off)];
            s[2 * lid + 1] += s[2 * (lid + off) + 1];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
