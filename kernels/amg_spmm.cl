/*
 * amg_spmm.cl: the k-column V-cycle's SpMMs with the smoother's update in
 * the same pass (solver/amg/amg_device.c on row-major blocks of kw = 2, 4
 * or 8 columns; la_amg_smv_* in kernels/la_amg.c). Apart, each SpMM wrote
 * t = A v as a block and the update read it back: at poisson3d 256 with 8
 * columns a block is 1.07 GB, and the fine level's V-cycle moved 40 of
 * them an iteration. Here t stays in registers and goes straight into
 * its row's update:
 *
 *   op 0 (AMG_SMV_AXPY)  out = in + c2 t                (r -= A d ; x += P x_c)
 *   op 1 (AMG_SMV_CHEB)  r' = in - t                     (in: b, or r)
 *                        d' = c1 d + c2 D^-1 r'          (c1 = 0: d not read)
 *                        wrd: r' into out, d' into dnew (not d: d may be the
 *                             block v the rows gather; the caller swaps)
 *                        xmode 1: x += d' ; 2: x = (x + d) + d' (the previous
 *                             step's x += d, deferred into this pass) ;
 *                             3: x = d + d' (x was 0: x = d deferred) ; 0: none
 *   op 2 (AMG_SMV_STORE) out = t                         (b_c = R r)
 *
 * Each work-item owns cw = 1 << lc consecutive values of a row (rowblock.cl)
 * and moves them with one vector load or store per block. With t summed
 * in the order of the plain SpMM (bcg_spmm_*_wide) and each update in the
 * order of amg.cl's, the results are those of the unfused kernels up to
 * the compiler's contractions, and for rows over sub-lanes (below) up to
 * the order of the partial sums. v is never written here (x is not gathered
 * when x is updated: the caller's contract); in and out may be one block
 * (r -= A d), hence no restrict on the update's pointers.
 *
 * Long CSR rows (the coarse operators and R: 30 to 130 entries a row at
 * poisson3d 256) are summed by 1 << lw sub-lanes a row, sub-lane w taking
 * entries w, w + W, ..., folded in local memory: one work-item walking a
 * whole row made these launches latency-bound (the same 5.5-5.9 ms an
 * iteration at 2, 4 and 8 columns on an H200).
 */

#define AMG_SMV_AXPY 0
#define AMG_SMV_CHEB 1
#define AMG_SMV_STORE 2

#define AMG_EPI_ARGS                                                                               \
    const int op, __global const real *in, __global real *out, __global const real *d,            \
        __global real *dnew, __global real *x, __global const real *restrict dinv, const real c1, \
        const real c2, const int xmode, const int wrd
#define AMG_EPI_NAMES op, in, out, d, dnew, x, dinv, c1, c2, xmode, wrd

/* the update of row `row`'s piece at `at` (units of 1 << lc values) from t */
inline void amg_epilogue(const int lc, const long at, const int row, const real *t, AMG_EPI_ARGS)
{
    if (op == AMG_SMV_STORE) {
        rb_piece_store(lc, t, at, out);
        return;
    }
    real a[4], o[4];
    rb_piece_load(lc, in, at, a);
    if (op == AMG_SMV_AXPY) {
#pragma unroll
        for (int j = 0; j < 4; j++)
            o[j] = a[j] + c2 * t[j];
        rb_piece_store(lc, o, at, out);
        return;
    }
    const real w = c2 * dinv[row];
    real dold[4] = {0, 0, 0, 0}, dn[4];
    if (c1 != 0 || xmode >= 2)
        rb_piece_load(lc, d, at, dold);
#pragma unroll
    for (int j = 0; j < 4; j++) {
        o[j] = a[j] - t[j];
        dn[j] = c1 * dold[j] + w * o[j];
    }
    if (wrd) {
        rb_piece_store(lc, o, at, out);
        rb_piece_store(lc, dn, at, dnew);
    }
    if (xmode) {
        real xv[4];
        if (xmode != 3)
            rb_piece_load(lc, x, at, xv);
#pragma unroll
        for (int j = 0; j < 4; j++)
            xv[j] = xmode == 1 ? xv[j] + dn[j] : xmode == 2 ? (xv[j] + dold[j]) + dn[j]
                                                            : dold[j] + dn[j];
        rb_piece_store(lc, xv, at, x);
    }
}

/* CSR rows summed by 1 << lw sub-lanes each (lw > 0): the group's
 * work-items are (row, sub-lane w, lane) with the lane fastest, so an
 * entry's gather is still one segment; the same trip count for the whole
 * group (the barriers), s: 4 values a work-item */
inline void amg_smv_csr_lanes(const int lc, const int ll, const int lw, const int nrows,
                              __global const int *restrict rowptr, __global const int *restrict col,
                              __global const mat_t *restrict val, __global const real *restrict v,
                              __local real *s, AMG_EPI_ARGS)
{
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    const int lane = lid & ((1 << ll) - 1);
    const int w = (lid >> ll) & ((1 << lw) - 1);
    const int rpg = ls >> (ll + lw); /* rows a group */
    const int rl = lid >> (ll + lw);
    for (int base = (int)get_group_id(0) * rpg; base < nrows;
         base += (int)get_num_groups(0) * rpg) {
        const int row = base + rl;
        const int mine = row < nrows && rl < rpg;
        real t[4] = {0, 0, 0, 0};
        if (mine) {
            const int end = rowptr[row + 1];
            for (int j = rowptr[row] + w; j < end; j += 1 << lw)
                rb_piece_fma(lc, (real)val[j], v, ((long)col[j] << ll) + lane, t);
        }
#pragma unroll
        for (int c = 0; c < 4; c++)
            s[lid * 4 + c] = t[c];
        for (int off = 1 << (lw - 1); off > 0; off >>= 1) {
            barrier(CLK_LOCAL_MEM_FENCE);
            if (w < off)
#pragma unroll
                for (int c = 0; c < 4; c++)
                    s[lid * 4 + c] += s[(lid + (off << ll)) * 4 + c];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (mine && w == 0) {
#pragma unroll
            for (int c = 0; c < 4; c++)
                t[c] = s[lid * 4 + c];
            amg_epilogue(lc, ((long)row << ll) + lane, row, t, AMG_EPI_NAMES);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* the kernels, one per width kw = 1 << LG and columns a work-item
 * cw = 1 << LC, as la_spmm_rm's (lai_spmm_rm_cw) */
#define AMG_SMV(KW, LG, CW, LC)                                                                    \
    __kernel void amg_smv_sell_##KW##c##CW(                                                        \
        const int nrows, const int C, __global const int *restrict cs,                             \
        __global const int *restrict perm, __global const int *restrict col,                       \
        __global const mat_t *restrict val, __global const real *restrict v, AMG_EPI_ARGS)        \
    {                                                                                              \
        const int ll = LG - LC;                                                                    \
        const int lane = (int)(get_global_id(0) & ((1 << ll) - 1));                                \
        const int step = (int)(get_global_size(0) >> ll);                                         \
        for (int r = (int)(get_global_id(0) >> ll); r < nrows; r += step) {                        \
            real t[4];                                                                             \
            rb_sell_piece(LC, ll, r, C, cs, col, val, v, lane, t);                                 \
            const int row = perm ? perm[r] : r;                                                    \
            amg_epilogue(LC, ((long)row << ll) + lane, row, t, AMG_EPI_NAMES);                     \
        }                                                                                          \
    }                                                                                              \
    __kernel void amg_smv_csr_##KW##c##CW(                                                         \
        const int nrows, __global const int *restrict rowptr, __global const int *restrict col,    \
        __global const mat_t *restrict val, __global const real *restrict v, const int lw,         \
        __local real *s, AMG_EPI_ARGS)                                                             \
    {                                                                                              \
        const int ll = LG - LC;                                                                    \
        if (lw > 0) {                                                                              \
            amg_smv_csr_lanes(LC, ll, lw, nrows, rowptr, col, val, v, s, AMG_EPI_NAMES);           \
            return;                                                                                \
        }                                                                                          \
        const int lane = (int)(get_global_id(0) & ((1 << ll) - 1));                                \
        const int step = (int)(get_global_size(0) >> ll);                                         \
        for (int row = (int)(get_global_id(0) >> ll); row < nrows; row += step) {                  \
            real t[4];                                                                             \
            rb_csr_piece(LC, ll, row, rowptr, col, val, v, lane, t);                               \
            amg_epilogue(LC, ((long)row << ll) + lane, row, t, AMG_EPI_NAMES);                     \
        }                                                                                          \
    }
AMG_SMV(2, 1, 2, 1)
AMG_SMV(4, 2, 2, 1)
AMG_SMV(4, 2, 4, 2)
AMG_SMV(8, 3, 2, 1)
