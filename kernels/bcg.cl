/*
 * bcg.cl: the block CG's vector kernels (solver/krylov/bcg.c through
 * la_bcg.h). Every kernel reads a row's k entries of each block it touches
 * once: the k x k mixing (X += P alpha) costs the same traffic as k axpys,
 * not k^2. Two layouts:
 *   - X, R, Z, B column-major, column a at a * ld: each column is a vector
 *     of its own for the preconditioner (pc_apply_block) and the SpMM of
 *     the true residual;
 *   - P and Q row-major and kw wide, kw = k rounded up to 2, 4 or 8,
 *     row i's entries at kw i (columns k..kw-1 stay 0): the SpMM's gathers
 *     of P are then one segment of 8 kw bytes per entry of A, not k
 *     scattered reads (la_spmm's column kernel ran at 2.5x its floor at
 *     poisson3d 256 on an H200), and a row is one vector load. kw rather
 *     than 8 so that 2 or 4 columns move 2 or 4 values a row, not 8.
 *
 *   bcg_spmm_sell_*, bcg_spmm_csr_*   Q = A P (row-major); _g*: with G = P'Q
 *   bcg_gram    G = U'V (k x k, any strides), the group's partial sums: the
 *               SpMM's G unfused (its twin) and rho = Z'R
 *   bcg_update_rr_*  R -= Q alpha, with the new r_b'r_b
 *   bcg_resid   R = B - A X (A X in R on entry: the true residual), r_b'r_b
 *   bcg_dir_*   X += P alpha and P = Z + P beta (Z = R, D^-1 R or the
 *               preconditioner's Z): the old P read once for both
 *   bcg_fold    the groups' partial sums into BCG_NSUM values
 *
 * The k x k matrices are symmetric (U'V with V = A U, or Z'R with
 * Z = M^-1 R, M symmetric), so only their upper triangle is summed: 44
 * accumulators a work-item, not 72, which is what its registers hold. A
 * group writes BCG_NSUM values: [0, 36) the triangle, a <= b row by row,
 * [36, 44) the diagonal r_b'r_b, the rest unused (la_bcg.c unpacks). Sums
 * are plain (one part: no partition to agree with) and in acc_t.
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

/* row i of a row-major block of kw (2, 4 or 8) columns into
 * p[0..8), the columns past kw 0: one vector load of the row (kw is a
 * constant in each kernel, BCG_KERNELS, so the branches fold away) */
inline void bcg_row_load(const int kw, __global const real *restrict B, const int i, real *p)
{
#pragma unroll
    for (int a = 0; a < BCG_K; a++)
        p[a] = 0;
    if (kw == 8) {
        const rb_real8 v = vload8(i, B);
        p[0] = v.s0, p[1] = v.s1, p[2] = v.s2, p[3] = v.s3;
        p[4] = v.s4, p[5] = v.s5, p[6] = v.s6, p[7] = v.s7;
    } else if (kw == 4) {
        const rb_real4 v = vload4(i, B);
        p[0] = v.s0, p[1] = v.s1, p[2] = v.s2, p[3] = v.s3;
    } else {
        const rb_real2 v = vload2(i, B);
        p[0] = v.s0, p[1] = v.s1;
    }
}

/* p[0..kw) into row i of a row-major block of kw columns */
inline void bcg_row_store(const int kw, const real *p, const int i, __global real *restrict B)
{
    if (kw == 8)
        vstore8((rb_real8)(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]), i, B);
    else if (kw == 4)
        vstore4((rb_real4)(p[0], p[1], p[2], p[3]), i, B);
    else
        vstore2((rb_real2)(p[0], p[1]), i, B);
}

/* the fused SpMM's G = P'Q: g[a] holds sum p_a q_lane over the work-item's
 * rows (a <= lane); the group's work-items of one lane are summed in s
 * (offsets down to kw keep the lanes apart), and lanes 0..7 write the
 * record's triangle entries (a, lane), 0 past kw, and its diagonal slots 0 */
inline void bcg_lane_write(const int kw, const acc_t *g, __local acc_t *s, __global acc_t *out)
{
    const int lid = (int)get_local_id(0);
    const int ls = (int)get_local_size(0);
#pragma unroll
    for (int a = 0; a < BCG_K; a++)
        s[lid * 8 + a] = g[a];
    for (int off = cls_pow2_floor(ls); off >= kw; off >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < off && lid + off < ls)
#pragma unroll
            for (int a = 0; a < BCG_K; a++)
                s[lid * 8 + a] += s[(lid + off) * 8 + a];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < BCG_K) {
        const int b = lid;
        for (int a = 0; a <= b; a++) /* (a, b) is at 8a - a(a-1)/2 + b - a */
            out[8 * a - a * (a - 1) / 2 + b - a] = b < kw ? s[b * 8 + a] : 0;
        out[BCG_NTRI + b] = 0;
    }
}

/* the fused G's sums of one row: g[a] += p_a q_lane for a <= lane (the
 * lanes' triangle; bcg_lane_write folds them) */
inline void bcg_gram_row(const int kw, const int lane, __global const real *restrict P,
                         const int row, const real q, acc_t *g)
{
    real p[BCG_K];
    bcg_row_load(kw, P, row, p);
#pragma unroll
    for (int a = 0; a < BCG_K; a++)
        if (a <= lane)
            g[a] += (acc_t)p[a] * (acc_t)q;
}

/* Q = A P, A in SELL-C-sigma (spmv_sell.cl's layout), P and Q kw wide:
 * kw work-items a row, one per column (lane), so that a gather of P is the
 * kw contiguous values of a row of P across the lanes, each work-item
 * holds one sum, and a row's entries of A are read once for the kw (the
 * same address in every lane: one transaction). One work-item a row with
 * eight sums in a double8 ran at 2.5 ms at poisson3d 256 on an H200,
 * slower than the column kernel's 1.8 ms. gram: also G = P'Q, summed while
 * q is in a register and P's row in cache (the separate pass rereads both
 * blocks), into partial. lg = log2 kw. */
inline void bcg_spmm_sell_body(const int lg, const int gram, const int nrows, const int C,
                               __global const int *restrict cs, __global const int *restrict perm,
                               __global const int *restrict col, __global const mat_t *restrict val,
                               __global const real *restrict P, __global real *restrict Q,
                               __global acc_t *restrict partial, __local acc_t *s)
{
    const int kw = 1 << lg;
    const int lane = (int)(get_global_id(0) & (kw - 1));
    const int step = (int)(get_global_size(0) >> lg);
    acc_t g[BCG_K];
#pragma unroll
    for (int a = 0; a < BCG_K; a++)
        g[a] = 0;
    for (int r = (int)(get_global_id(0) >> lg); r < nrows; r += step) {
        const int c = r / C;
        const int i = r - c * C;
        const int start = cs[c];
        const int width = (cs[c + 1] - start) / C;
        real q = 0;
        for (int j = 0, e = start + i; j < width; j++, e += C)
            q += (real)val[e] * P[(long)col[e] * kw + lane];
        const int row = perm ? perm[r] : r;
        Q[(long)row * kw + lane] = q;
        if (gram)
            bcg_gram_row(kw, lane, P, row, q, g);
    }
    if (gram)
        bcg_lane_write(kw, g, s, partial + (long)get_group_id(0) * BCG_NSUM);
}

/* Q = A P, A in CSR, kw work-items a row as above */
inline void bcg_spmm_csr_body(const int lg, const int gram, const int nrows,
                              __global const int *restrict rowptr, __global const int *restrict col,
                              __global const mat_t *restrict val, __global const real *restrict P,
                              __global real *restrict Q, __global acc_t *restrict partial,
                              __local acc_t *s)
{
    const int kw = 1 << lg;
    const int lane = (int)(get_global_id(0) & (kw - 1));
    const int step = (int)(get_global_size(0) >> lg);
    acc_t g[BCG_K];
#pragma unroll
    for (int a = 0; a < BCG_K; a++)
        g[a] = 0;
    for (int row = (int)(get_global_id(0) >> lg); row < nrows; row += step) {
        real q = 0;
        const int end = rowptr[row + 1];
        for (int j = rowptr[row]; j < end; j++)
            q += (real)val[j] * P[(long)col[j] * kw + lane];
        Q[(long)row * kw + lane] = q;
        if (gram)
            bcg_gram_row(kw, lane, P, row, q, g);
    }
    if (gram)
        bcg_lane_write(kw, g, s, partial + (long)get_group_id(0) * BCG_NSUM);
}

/* U'WV, W = diag(wt) or I; entry (i, a) of U at U[a * uc + i * ur]
 * (column-major: uc = ld, ur = 1; row-major: uc = 1, ur = kw), V alike */
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

/* R -= Q alpha, with r_b'r_b only (rho follows from bcg_gram): eight
 * accumulators a work-item instead of 44, which is what the registers and
 * so the work in flight allow (2.4 ms with rho fused at poisson3d 256 on an
 * H200, 1.8x this pass's floor). X += P alpha waits for bcg_dir, which
 * reads the old P anyway: here it read P and X and wrote X, 24 of the 48
 * passes of 8 columns. */
inline void bcg_update_rr_body(const int kw, const int n, const int ld, const int k,
                               __global real *restrict R, __global const real *restrict Q,
                               __constant real *alpha, __global acc_t *restrict partial,
                               __local acc_t *s)
{
    acc_t g[BCG_K];
#pragma unroll
    for (int m = 0; m < BCG_K; m++)
        g[m] = 0;
    /* the mixing's bound: measured, not reasoned (poisson3d 256, H200):
     * eight wide, the constant 8 (1.8 ms against 2.1 with k); two and four
     * wide, k (0.39 and 0.77 ms against 0.49 and 0.89 with kw) */
    const int lim = kw == BCG_K ? BCG_K : k;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        real q[BCG_K];
        bcg_row_load(kw, Q, i, q);
#pragma unroll
        for (int b = 0; b < BCG_K; b++) {
            if (b < k) {
                real rb = R[(long)b * ld + i];
#pragma unroll
                for (int a = 0; a < BCG_K; a++) /* r_b -= sum_a q_a alpha_ab */
                    if (a < lim)
                        rb -= q[a] * alpha[a * BCG_K + b];
                R[(long)b * ld + i] = rb;
                g[b] += (acc_t)rb * (acc_t)rb;
            }
        }
    }
    bcg_group_write(g, BCG_K, s, partial + (long)get_group_id(0) * BCG_NSUM + BCG_NTRI);
}

/* R = B - R: R holds A X on entry (la_spmm into its columns), with the
 * new r_b'r_b (rho follows from bcg_gram, as after an update) */
__kernel void bcg_resid(const int n, const int ld, const int k, __global const real *restrict B,
                        __global real *restrict R, __global acc_t *restrict partial,
                        __local acc_t *s)
{
    acc_t g[BCG_K];
#pragma unroll
    for (int m = 0; m < BCG_K; m++)
        g[m] = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
#pragma unroll
        for (int b = 0; b < BCG_K; b++) {
            if (b < k) {
                const real rb = B[(long)b * ld + i] - R[(long)b * ld + i];
                R[(long)b * ld + i] = rb;
                g[b] += (acc_t)rb * (acc_t)rb;
            }
        }
    }
    bcg_group_write(g, BCG_K, s, partial + (long)get_group_id(0) * BCG_NSUM + BCG_NTRI);
}

/* P = Z + P beta; Z is zsrc scaled by dinv (use_dinv) or zsrc itself;
 * with xupd first X += P alpha (the update's half that needs the old P,
 * read here once for both); fresh: P = Z (a start: the old P is not read,
 * whatever it holds, and X stays) */
inline void bcg_dir_body(const int kw, const int n, const int ld, const int k,
                         __global const real *restrict zsrc, __global const real *restrict dinv,
                         const int use_dinv, __global real *restrict P, __constant real *beta,
                         const int fresh, __global real *restrict X, __constant real *alpha,
                         const int xupd)
{
    const int lim = kw == BCG_K ? BCG_K : k; /* the update's bound (bcg_update_rr_body) */
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        real p[BCG_K];
        if (fresh) {
#pragma unroll
            for (int a = 0; a < BCG_K; a++)
                p[a] = 0;
        } else {
            bcg_row_load(kw, P, i, p);
        }
        const real d = use_dinv ? dinv[i] : 1;
        real v[BCG_K];
#pragma unroll
        for (int b = 0; b < BCG_K; b++) {
            v[b] = 0; /* the unused columns stay 0 */
            if (b < k) {
                if (xupd && !fresh) {
                    real xb = X[(long)b * ld + i];
#pragma unroll
                    for (int a = 0; a < BCG_K; a++) /* x_b += sum_a p_a alpha_ab */
                        if (a < lim)
                            xb += p[a] * alpha[a * BCG_K + b];
                    X[(long)b * ld + i] = xb;
                }
                v[b] = d * zsrc[(long)b * ld + i];
                if (!fresh)
#pragma unroll
                    for (int a = 0; a < BCG_K; a++) /* p_b = z_b + sum_a p_a beta_ab */
                        if (a < kw)
                            v[b] += p[a] * beta[a * BCG_K + b];
            }
        }
        bcg_row_store(kw, v, i, P);
    }
}

/* Q = A P (SELL) with cw = 1 << lc (2 or 4) columns a work-item, kw / cw
 * lanes a row: each entry's gather is one 16- or 32-byte load, and a
 * warp's loads of A cover cw times the rows of the one-column lanes (the
 * unfused SpMM's default, four wide cw 4, eight wide cw 2: 0.74 and 1.62
 * ms against 1.12 and 2.00 at poisson3d 256 on an H200; la_bcg.c) */
inline void bcg_spmm_sell_wide(const int lg, const int lc, const int nrows, const int C,
                               __global const int *restrict cs, __global const int *restrict perm,
                               __global const int *restrict col, __global const mat_t *restrict val,
                               __global const real *restrict P, __global real *restrict Q)
{
    const int ll = lg - lc; /* log2 of the lanes a row */
    const int lane = (int)(get_global_id(0) & ((1 << ll) - 1));
    const int step = (int)(get_global_size(0) >> ll);
    for (int r = (int)(get_global_id(0) >> ll); r < nrows; r += step) {
        real q[4];
        rb_sell_piece(lc, ll, r, C, cs, col, val, P, lane, q);
        rb_piece_store(lc, q, ((long)(perm ? perm[r] : r) << ll) + lane, Q);
    }
}

/* the same in CSR */
inline void bcg_spmm_csr_wide(const int lg, const int lc, const int nrows,
                              __global const int *restrict rowptr, __global const int *restrict col,
                              __global const mat_t *restrict val, __global const real *restrict P,
                              __global real *restrict Q)
{
    const int ll = lg - lc;
    const int lane = (int)(get_global_id(0) & ((1 << ll) - 1));
    const int step = (int)(get_global_size(0) >> ll);
    for (int row = (int)(get_global_id(0) >> ll); row < nrows; row += step) {
        real q[4];
        rb_csr_piece(lc, ll, row, rowptr, col, val, P, lane, q);
        rb_piece_store(lc, q, ((long)row << ll) + lane, Q);
    }
}

/* the kernels, one per width kw = 1 << LG (2, 4, 8) and, for the SpMM,
 * with G fused (_g) or not: kw and gram are constants in each, so the
 * loads are single vector loads and the unfused SpMM keeps no
 * accumulators. One kernel with kw a runtime argument ran the eight-wide
 * SpMM at 2.9 ms instead of 2.0 and the update at 2.1 instead of 1.8
 * (poisson3d 256, H200): its registers, hence the work in flight, were
 * those of the widest case. */
#define BCG_SELL_ARGS                                                                              \
    const int nrows, const int C, __global const int *restrict cs,                                 \
        __global const int *restrict perm, __global const int *restrict col,                       \
        __global const mat_t *restrict val, __global const real *restrict P,                       \
        __global real *restrict Q, __global acc_t *restrict partial, __local acc_t *s
#define BCG_CSR_ARGS                                                                               \
    const int nrows, __global const int *restrict rowptr, __global const int *restrict col,        \
        __global const mat_t *restrict val, __global const real *restrict P,                       \
        __global real *restrict Q, __global acc_t *restrict partial, __local acc_t *s
#define BCG_UPDATE_ARGS                                                                            \
    const int n, const int ld, const int k, __global real *restrict R,                             \
        __global const real *restrict Q, __constant real *alpha, __global acc_t *restrict partial, \
        __local acc_t *s
#define BCG_DIR_ARGS                                                                               \
    const int n, const int ld, const int k, __global const real *restrict zsrc,                    \
        __global const real *restrict dinv, const int use_dinv, __global real *restrict P,         \
        __constant real *beta, const int fresh, __global real *restrict X, __constant real *alpha, \
        const int xupd
#define BCG_KERNELS(KW, LG)                                                                        \
    __kernel void bcg_spmm_sell_##KW(BCG_SELL_ARGS)                                                \
    {                                                                                              \
        bcg_spmm_sell_body(LG, 0, nrows, C, cs, perm, col, val, P, Q, partial, s);                 \
    }                                                                                              \
    __kernel void bcg_spmm_sell_g##KW(BCG_SELL_ARGS)                                               \
    {                                                                                              \
        bcg_spmm_sell_body(LG, 1, nrows, C, cs, perm, col, val, P, Q, partial, s);                 \
    }                                                                                              \
    __kernel void bcg_spmm_csr_##KW(BCG_CSR_ARGS)                                                  \
    {                                                                                              \
        bcg_spmm_csr_body(LG, 0, nrows, rowptr, col, val, P, Q, partial, s);                       \
    }                                                                                              \
    __kernel void bcg_spmm_csr_g##KW(BCG_CSR_ARGS)                                                 \
    {                                                                                              \
        bcg_spmm_csr_body(LG, 1, nrows, rowptr, col, val, P, Q, partial, s);                       \
    }                                                                                              \
    __kernel void bcg_update_rr_##KW(BCG_UPDATE_ARGS)                                              \
    {                                                                                              \
        bcg_update_rr_body(KW, n, ld, k, R, Q, alpha, partial, s);                                 \
    }                                                                                              \
    __kernel void bcg_dir_##KW(BCG_DIR_ARGS)                                                       \
    {                                                                                              \
        bcg_dir_body(KW, n, ld, k, zsrc, dinv, use_dinv, P, beta, fresh, X, alpha, xupd);          \
    }
BCG_KERNELS(2, 1)
BCG_KERNELS(4, 2)
BCG_KERNELS(8, 3)

/* the SpMM with CW columns a work-item: bcg_spmm_sell_<KW>c<CW> */
#define BCG_SPMM_WIDE(KW, LG, CW, LC)                                                              \
    __kernel void bcg_spmm_sell_##KW##c##CW(BCG_SELL_ARGS)                                         \
    {                                                                                              \
        bcg_spmm_sell_wide(LG, LC, nrows, C, cs, perm, col, val, P, Q);                            \
    }                                                                                              \
    __kernel void bcg_spmm_csr_##KW##c##CW(BCG_CSR_ARGS)                                           \
    {                                                                                              \
        bcg_spmm_csr_wide(LG, LC, nrows, rowptr, col, val, P, Q);                                  \
    }
BCG_SPMM_WIDE(2, 1, 2, 1)
BCG_SPMM_WIDE(4, 2, 2, 1)
BCG_SPMM_WIDE(4, 2, 4, 2)
BCG_SPMM_WIDE(8, 3, 2, 1)
BCG_SPMM_WIDE(8, 3, 4, 2)

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
