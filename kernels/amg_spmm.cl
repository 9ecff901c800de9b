/*
 * amg_spmm.cl: the k-column V-cycle's SpMMs with the smoother's update in
 * the same pass (solver/amg/amg_device.c on row-major blocks of kw = 2, 4
 * or 8 columns; la_amg_smv in kernels/la_amg.c). Apart, each SpMM wrote
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
 *
 * With t computed by rowblock.cl's pieces in the order of the plain
 * SpMM (bcg_spmm_*_wide) and each update in the order of amg.cl's, the
 * results are those of the unfused kernels up to the compiler's
 * contractions. v is never written here (x is not gathered when x is
 * updated: the caller's contract); in and out may be one block (r -= A d),
 * hence no restrict on the update's pointers.
 */

#define AMG_SMV_AXPY 0
#define AMG_SMV_CHEB 1

#define AMG_EPI_ARGS                                                                               \
    const int op, __global const real *in, __global real *out, __global const real *d,            \
        __global real *dnew, __global real *x, __global const real *restrict dinv, const real c1, \
        const real c2, const int xmode, const int wrd

/* the update of row `row`'s cw values at element `at` from t */
inline void amg_epilogue(const int cw, const long at, const int row, const real *t, AMG_EPI_ARGS)
{
    if (op == AMG_SMV_AXPY) {
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (j < cw)
                out[at + j] = in[at + j] + c2 * t[j];
        return;
    }
    const real w = c2 * dinv[row];
    const int dread = c1 != 0 || xmode >= 2;
#pragma unroll
    for (int j = 0; j < 4; j++)
        if (j < cw) {
            const real rn = in[at + j] - t[j];
            const real dold = dread ? d[at + j] : 0;
            const real dn = c1 * dold + w * rn;
            if (wrd) {
                out[at + j] = rn;
                dnew[at + j] = dn;
            }
            if (xmode == 1)
                x[at + j] += dn;
            else if (xmode == 2)
                x[at + j] = (x[at + j] + dold) + dn;
            else if (xmode == 3)
                x[at + j] = dold + dn;
        }
}

#define AMG_EPI_NAMES op, in, out, d, dnew, x, dinv, c1, c2, xmode, wrd

/* the kernels, one per width kw = 1 << LG and columns a work-item
 * cw = 1 << LC, as la_spmm_rm's (la_spmm_rm_cw) */
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
            amg_epilogue(CW, ((long)row << LG) + (lane << LC), row, t, AMG_EPI_NAMES);             \
        }                                                                                          \
    }                                                                                              \
    __kernel void amg_smv_csr_##KW##c##CW(                                                         \
        const int nrows, __global const int *restrict rowptr, __global const int *restrict col,    \
        __global const mat_t *restrict val, __global const real *restrict v, AMG_EPI_ARGS)        \
    {                                                                                              \
        const int ll = LG - LC;                                                                    \
        const int lane = (int)(get_global_id(0) & ((1 << ll) - 1));                                \
        const int step = (int)(get_global_size(0) >> ll);                                         \
        for (int row = (int)(get_global_id(0) >> ll); row < nrows; row += step) {                  \
            real t[4];                                                                             \
            rb_csr_piece(LC, ll, row, rowptr, col, val, v, lane, t);                               \
            amg_epilogue(CW, ((long)row << LG) + (lane << LC), row, t, AMG_EPI_NAMES);             \
        }                                                                                          \
    }
AMG_SMV(2, 1, 2, 1)
AMG_SMV(4, 2, 2, 1)
AMG_SMV(4, 2, 4, 2)
AMG_SMV(8, 3, 2, 1)
