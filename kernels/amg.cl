/*
 * amg.cl: the V-cycle's own kernels (the SpMVs and axpys are la.h's): the
 * smoothers' fused updates and the coarsest level's dense solve. Built with
 * real.cl in front, at the la context's precision (kernels/la_amg.c).
 *
 * Chebyshev smoothing in D^-1 A (Saad, Iterative Methods for Sparse Linear
 * Systems, 2nd ed., Algorithm 12.1), one launch per polynomial step, each
 * reading and writing every vector once:
 *   amg_cheb_first  r = b - q ; d = c0 D^-1 r ; x += d     (q = A x)
 *                   zero: x = 0 and q = 0 on entry (q is not read)
 *                   zero 2: d alone (r = b and x = d implied: the fused
 *                   next step of amg_spmm.cl reads b and writes x)
 *   amg_cheb_next   r -= q ; d = c1 d + c2 D^-1 r ; x += d (q = A d)
 * l1-Jacobi (Baker, Falgout, Kolev, Yang 2011):
 *   amg_jacobi      x += D_l1^-1 (b - q)                   (q = A x)
 *                   zero: x = D_l1^-1 b
 *   amg_residual    r = b - q
 * Coarsest level: amg_dense, x = M b with M the dense (symmetric) inverse,
 * one work-group per row and a tree sum over the group.
 * lg: the vectors are row-major blocks of 1 << lg columns (amg_pack), dinv
 * one entry a row (lg = 0: plain vectors).
 * Grid-stride loops as in blas1.cl; no kernel returns before a barrier.
 */

__kernel void amg_cheb_first(const int n, const int zero, __global const real *b,
                             __global const real *q, __global const real *dinv, const real c0,
                             __global real *r, __global real *d, __global real *x, const int lg)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        real ri = zero ? b[i] : b[i] - q[i];
        real di = c0 * dinv[i >> lg] * ri;
        d[i] = di;
        if (zero != 2) {
            r[i] = ri;
            x[i] = zero ? di : x[i] + di;
        }
    }
}

__kernel void amg_cheb_next(const int n, __global const real *q, __global const real *dinv,
                            const real c1, const real c2, __global real *r, __global real *d,
                            __global real *x, const int lg)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        real ri = r[i] - q[i];
        real di = c1 * d[i] + c2 * dinv[i >> lg] * ri;
        r[i] = ri;
        d[i] = di;
        x[i] += di;
    }
}

__kernel void amg_jacobi(const int n, const int zero, __global const real *b,
                         __global const real *q, __global const real *dinv, __global real *x,
                         const int lg)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0))
        x[i] = zero ? dinv[i >> lg] * b[i] : x[i] + dinv[i >> lg] * (b[i] - q[i]);
}

__kernel void amg_residual(const int n, __global const real *b, __global const real *q,
                           __global real *r)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0))
        r[i] = b[i] - q[i];
}

__kernel void amg_dense(const int n, __global const mat_t *M, __global const real *b,
                        __global real *x, __local acc_t *s, const int lg)
{
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0), kw = 1 << lg;
    for (int row = (int)get_group_id(0); row < n; row += (int)get_num_groups(0))
        for (int c = 0; c < kw; c++) { /* a row-major block's columns (kw = 1: one) */
            acc_t t = 0;
            for (int j = lid; j < n; j += ls)
                t += (acc_t)M[(long)row * n + j] * (acc_t)b[((long)j << lg) + c];
            s[lid] = t;
            cls_group_reduce(s);
            if (lid == 0)
                x[((long)row << lg) + c] = (real)s[0];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
}

/* k columns (separate vectors c0..c7) into a row-major block of kw = 1 << lg
 * (B[i kw + c], the columns past k 0), and back out of it: the V-cycle on
 * k columns at once runs on such blocks (amg_device.c), so that an SpMM's
 * gather is one segment of kw values, not k scattered ones */
#define AMG_COLS                                                                                   \
    __global real *c0, __global real *c1, __global real *c2, __global real *c3, __global real *c4, \
        __global real *c5, __global real *c6, __global real *c7
/* column c's vector: selects, not an indexed array (an array of pointers
 * in private memory made the V-cycle 4 ms slower an iteration on an H200) */
inline __global real *amg_col(const int c, AMG_COLS)
{
    return c == 0   ? c0
           : c == 1 ? c1
           : c == 2 ? c2
           : c == 3 ? c3
           : c == 4 ? c4
           : c == 5 ? c5
           : c == 6 ? c6
                    : c7;
}
/* out 0: the columns into B (pack); out 1: B into the columns (unpack) */
__kernel void amg_pack(const int n, const int k, const int lg, __global real *B, const int out,
                       AMG_COLS)
{
    const int kw = 1 << lg;
    for (int e = (int)get_global_id(0); e < (n << lg); e += (int)get_global_size(0)) {
        const int i = e >> lg, c = e & (kw - 1);
        __global real *col = amg_col(c, c0, c1, c2, c3, c4, c5, c6, c7);
        if (!out)
            B[e] = c < k ? col[i] : 0;
        else if (c < k)
            col[i] = B[e];
    }
}
