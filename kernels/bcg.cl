/*
 * bcg.cl: the block CG's vector kernels (solver/krylov/bcg.c through
 * la_bcg.h). Every kernel reads a row's k entries of each block it touches
 * once: the k x k mixing (X += P alpha) costs the same traffic as k axpys,
 * not k^2. Two layouts:
 *   - X, R, Z, B column-major, column a at a * ld: each column is a vector
 *     of its own for the preconditioner (pc_apply_block) and the SpMM of
 *     the true residual;
 *   - P and Q row-major, row i's 8 entries at 8 i (unused columns 0): the
 *     SpMM's gathers of P are then one 64-byte segment per entry of A, not
 *     k scattered reads (la_spmm's column kernel ran at 2.5x its floor at
 *     poisson3d 256 on an H200), and a row's 8 are one vload8.
 *
 *   bcg_spmm_sell, bcg_spmm_csr   Q = A P (row-major)
 *   bcg_gram    G = U'V (k x k, any strides), the group's partial sums
 *   bcg_update_rr  X += P alpha; R -= Q alpha; with the new r_b'r_b
 *   bcg_resid   R = B - A X (A X in R on entry: the true residual), the same sums
 *   bcg_dir     P = Z + P beta (Z = R, D^-1 R or the preconditioner's Z)
 *   bcg_fold    the groups' partial sums into BCG_NSUM values
 *
 * The sums of resid (a restart) are those the recurrence reads next:
 * mode 0: r_b'r_b only (the preconditioner's Z comes later: bcg_gram);
 * mode 1: also rho = R'R (no preconditioner, Z = R); mode 2: rho = Z'R with
 * Z = D^-1 R (Jacobi), Z never stored. The k x k matrices are symmetric
 * (U'V with V = A U, or Z'R with Z = M^-1 R, M symmetric), so only their
 * upper triangle is summed: 44 accumulators a work-item, not 72, which is
 * what its registers hold. A group writes BCG_NSUM values: [0, 36) the
 * triangle, a <= b row by row, [36, 44) the diagonal r_b'r_b, the rest
 * unused (la_bcg.c unpacks). Sums are plain (one part: no partition to
 * agree with) and in acc_t.
 * The loops run over 8 with guards on k (uniform over the launch), so the
 * private arrays stay in registers; alpha and beta are __constant, read by
 * every work-item alike (the constant cache's broadcast).
 */
#define BCG_K 8
#define BCG_NSUM 72 /* a group's record: the sums below, padded */
#define BCG_NTRI 36 /* the upper triangle a <= b, row by row */
#define BCG_NACC 44 /* the triangle, then the 8 diagonal sums r_b'r_b */

/* the group's sums of the work-items' v[0..m) into out[0..m), 8 at a time
 * through s (8 * local size acc_t) */
inline void bcg_group_write(const acc_t *v, const int m, __local acc_t *s, __global acc_t *out)
{
    const int lid = (int)get_local_id(0);
    const int ls = (int)get_local_size(0);
    for (int m0 = 0; m0 < m; m0 += 8) {
#pragma unroll
        for (int j = 0; j < 8; j++)
            s[lid * 8 + j] = m0 + j < m ? v[m0 + j] : 0;
        for (int off = cls_pow2_floor(ls); off > 0; off >>= 1) {
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid < off && lid + off < ls)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    s[lid * 8 + j] += s[(lid + off) * 8 + j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < 8 && m0 + lid < m)
            out[m0 + lid] = s[lid];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

#ifdef CLS_REAL_DOUBLE
typedef double8 real8;
#else
typedef float8 real8;
#endif
#define BCG_RM(B, i) vload8((i), (B)) /* row i of a row-major block */

/* Q = A P, A in SELL-C-sigma (spmv_sell.cl's layout): eight work-items a
 * row, one per column (lane), so that a gather of P is the 64 contiguous
 * bytes of a row of P across eight lanes, each work-item holds one sum,
 * and a row's entries of A are read once for the eight (the same address
 * in the eight lanes: one transaction). One work-item a row with the eight
 * sums in a double8 ran at 2.5 ms at poisson3d 256 on an H200, slower than
 * the column kernel's 1.8 ms. */
__kernel void bcg_spmm_sell(const int nrows, const int C, __global const int *restrict cs,
                            __global const int *restrict perm, __global const int *restrict col,
                            __global const mat_t *restrict val, __global const real *restrict P,
                            __global real *restrict Q)
{
    const int lane = (int)(get_global_id(0) & 7);
    const int step = (int)(get_global_size(0) >> 3);
    for (int r = (int)(get_global_id(0) >> 3); r < nrows; r += step) {
        const int c = r / C;
        const int i = r - c * C;
        const int start = cs[c];
        const int width = (cs[c + 1] - start) / C;
        real s = 0;
        for (int j = 0, e = start + i; j < width; j++, e += C)
            s += (real)val[e] * P[(long)col[e] * 8 + lane];
        Q[(long)(perm ? perm[r] : r) * 8 + lane] = s;
    }
}

/* Q = A P, A in CSR, eight work-items a row as above */
__kernel void bcg_spmm_csr(const int nrows, __global const int *restrict rowptr,
                           __global const int *restrict col, __global const mat_t *restrict val,
                           __global const real *restrict P, __global real *restrict Q)
{
    const int lane = (int)(get_global_id(0) & 7);
    const int step = (int)(get_global_size(0) >> 3);
    for (int row = (int)(get_global_id(0) >> 3); row < nrows; row += step) {
        real s = 0;
        const int end = rowptr[row + 1];
        for (int j = rowptr[row]; j < end; j++)
            s += (real)val[j] * P[(long)col[j] * 8 + lane];
        Q[(long)row * 8 + lane] = s;
    }
}

/* U'WV, W = diag(wt) or I; entry (i, a) of U at U[a * uc + i * ur]
 * (column-major: uc = ld, ur = 1; row-major: uc = 1, ur = 8), V alike */
__kernel void bcg_gram(const int n, const int k, __global const real *restrict U, const int ur,
                       const int uc, __global const real *restrict V, const int vr, const int vc,
                       __global const real *restrict wt, const int use_wt,
                       __global acc_t *restrict partial, __local acc_t *s)
{
    acc_t g[BCG_NACC];
#pragma unroll
    for (int m = 0; m < BCG_NACC; m++)
        g[m] = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        acc_t u[BCG_K], v[BCG_K];
#pragma unroll
        for (int a = 0; a < BCG_K; a++) {
            u[a] = a < k ? (acc_t)U[(long)a * uc + (long)i * ur] * (use_wt ? (acc_t)wt[i] : 1) : 0;
            v[a] = a < k ? (acc_t)V[(long)a * vc + (long)i * vr] : 0;
        }
        int t = 0;
#pragma unroll
        for (int a = 0; a < BCG_K; a++)
#pragma unroll
            for (int b = a; b < BCG_K; b++)
                g[t++] += u[a] * v[b];
    }
    bcg_group_write(g, BCG_NACC, s, partial + (long)get_group_id(0) * BCG_NSUM);
}

/* the sums of one row's new r (see the file's comment for mode) */
inline void bcg_row_sums(const int mode, const acc_t d, const acc_t *r, acc_t *g)
{
#pragma unroll
    for (int b = 0; b < BCG_K; b++)
        g[BCG_NTRI + b] += r[b] * r[b];
    if (mode) {
        int t = 0;
#pragma unroll
        for (int a = 0; a < BCG_K; a++) {
            const acc_t z = mode == 2 ? d * r[a] : r[a];
#pragma unroll
            for (int b = a; b < BCG_K; b++)
                g[t++] += z * r[b];
        }
    }
}

/* X += P alpha; R -= Q alpha, with r_b'r_b only (rho follows from bcg_gram): eight
 * accumulators a work-item instead of 44, which is what the registers and
 * so the work in flight allow (2.4 ms with rho fused at poisson3d 256 on an
 * H200, 1.8x this pass's floor) */
__kernel void bcg_update_rr(const int n, const int ld, const int k, __global real *restrict X,
                            __global const real *restrict P, __global real *restrict R,
                            __global const real *restrict Q, __constant real *alpha,
                            __global acc_t *restrict partial, __local acc_t *s)
{
    acc_t g[BCG_K];
#pragma unroll
    for (int m = 0; m < BCG_K; m++)
        g[m] = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        const real8 p8 = BCG_RM(P, i), q8 = BCG_RM(Q, i);
        const real p[BCG_K] = {p8.s0, p8.s1, p8.s2, p8.s3, p8.s4, p8.s5, p8.s6, p8.s7};
        const real q[BCG_K] = {q8.s0, q8.s1, q8.s2, q8.s3, q8.s4, q8.s5, q8.s6, q8.s7};
#pragma unroll
        for (int b = 0; b < BCG_K; b++) {
            if (b < k) {
                real xb = X[(long)b * ld + i], rb = R[(long)b * ld + i];
#pragma unroll
                for (int a = 0; a < BCG_K; a++) { /* x_b += sum_a p_a alpha_ab */
                    xb += p[a] * alpha[a * BCG_K + b];
                    rb -= q[a] * alpha[a * BCG_K + b];
                }
                X[(long)b * ld + i] = xb;
                R[(long)b * ld + i] = rb;
                g[b] += (acc_t)rb * (acc_t)rb;
            }
        }
    }
    bcg_group_write(g, BCG_K, s, partial + (long)get_group_id(0) * BCG_NSUM + BCG_NTRI);
}

/* R = B - R: R holds A X on entry (la_spmm into its columns) */
__kernel void bcg_resid(const int n, const int ld, const int k, __global const real *restrict B,
                        __global real *restrict R,
                        __global const real *restrict dinv, const int mode,
                        __global acc_t *restrict partial, __local acc_t *s)
{
    acc_t g[BCG_NACC];
#pragma unroll
    for (int m = 0; m < BCG_NACC; m++)
        g[m] = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        acc_t r[BCG_K];
#pragma unroll
        for (int b = 0; b < BCG_K; b++) {
            r[b] = 0;
            if (b < k) {
                const real rb = B[(long)b * ld + i] - R[(long)b * ld + i];
                R[(long)b * ld + i] = rb;
                r[b] = rb;
            }
        }
        bcg_row_sums(mode, mode == 2 ? (acc_t)dinv[i] : 1, r, g);
    }
    bcg_group_write(g, BCG_NACC, s, partial + (long)get_group_id(0) * BCG_NSUM);
}

/* P = Z + P beta; Z is zsrc scaled by dinv (use_dinv) or zsrc itself;
 * fresh: P = Z (a start: the old P is not read, whatever it holds) */
__kernel void bcg_dir(const int n, const int ld, const int k, __global const real *restrict zsrc,
                      __global const real *restrict dinv, const int use_dinv,
                      __global real *restrict P, __constant real *beta, const int fresh)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        real8 p8 = 0;
        if (!fresh)
            p8 = BCG_RM(P, i);
        const real p[BCG_K] = {p8.s0, p8.s1, p8.s2, p8.s3, p8.s4, p8.s5, p8.s6, p8.s7};
        const real d = use_dinv ? dinv[i] : 1;
        real v[BCG_K];
#pragma unroll
        for (int b = 0; b < BCG_K; b++) {
            v[b] = 0; /* the unused columns stay 0 */
            if (b < k) {
                v[b] = d * zsrc[(long)b * ld + i];
                if (!fresh)
#pragma unroll
                    for (int a = 0; a < BCG_K; a++) /* p_b = z_b + sum_a p_a beta_ab */
                        v[b] += p[a] * beta[a * BCG_K + b];
            }
        }
        vstore8((real8)(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]), i, P);
    }
}

/* out[j] = the sum over groups of partial[g * BCG_NSUM + j]; group j of the
 * launch sums value j (BCG_NACC groups) */
__kernel void bcg_fold(const int groups, __global const acc_t *restrict partial,
                       __global acc_t *restrict out, __local acc_t *s)
{
    const int j = (int)get_group_id(0);
    const int lid = (int)get_local_id(0);
    acc_t v = 0;
    for (int g = lid; g < groups; g += (int)get_local_size(0))
        v += partial[(long)g * BCG_NSUM + j];
    s[lid] = v;
    cls_group_reduce(s);
    if (lid == 0)
        out[j] = s[0];
}
