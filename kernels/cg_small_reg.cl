/*
 * cg_small_reg.cl: cgs_run (cg_small.cl) with the system in registers, for
 * GPUs; la_cgs.c chooses it when the system fits, cgs_run is its plain twin.
 *
 * Built as a program of its own (la_small_reg_program) once per CGS_RPW,
 * the rows each work-item owns: the per-row arrays below are registers only
 * when their size is a constant, and registers not used still count (on an
 * H200, 1138_bus at 256 work-items: 5.73 us per iteration with room for 8
 * rows, 5.05 with room for the 5 it needs).
 *
 * Why: cgs_run keeps x, r, p, q in global memory and reads the matrix from
 * it each iteration; on an H200 a 1138_bus iteration took 9.7 us that way
 * for 4,054 nonzeros, and clock counters put 57% of it in the SpMV: a
 * chain of dependent loads per entry (column, then p) at about 260 cycles
 * each. When the system has at most CGS_RPW rows per work-item
 * (n <= CGS_RPW * ls), each work-item loads, once per launch:
 *  - its rows' x, r, p and diagonal into registers (xv, rv, pv, dv);
 *  - the first CGS_EPT entries of its rows, in CSR order, into registers:
 *    values (ev), 16-bit columns (cs, n <= 65536), the row slot of each
 *    entry (3 bits in slot) and which entries end a row (endm);
 *  - p into local memory (pl), where every work-item's SpMV gathers it.
 * An iteration's SpMV is then CGS_EPT independent gathers from local
 * memory; each row's sum goes to ql (local) when its last entry is added.
 * Entries past CGS_EPT (a work-item with longer rows) are read from global
 * memory as cgs_run reads them, continuing the same sums, so any pattern
 * runs. The rows a work-item owns are cgs_run's (row = lid + j ls) and
 * every sum is taken in its order, so with the tree reduction the iterates
 * are cgs_run's bit for bit (tests/cli/test_cg_small.sh compares them).
 *
 * On NVIDIA GPUs (CLS_NV_SHFL, set by la_small_reg_program) the two
 * reductions are warp shuffles: a butterfly in registers within each warp
 * of 32, one barrier, then every warp folds the warps' partials the same
 * way, so each reduction costs one barrier instead of twelve. Each fold
 * adds the lower lane's pair to the upper's whatever the lane, so every
 * work-item gets the same bits and the stop test stays uniform. The sums
 * are then taken in another order than cgs_run's (rounding-level
 * differences; iteration counts agree within one or two).
 */
#ifndef CGS_RPW
#define CGS_RPW 8 /* rows per work-item, at most 8 (3 bits of slot) */
#endif
#ifndef CGS_EPT
#define CGS_EPT 32 /* matrix entries per work-item in registers (endm's bits) */
#endif
#define CGS_SLOTS_PER_WORD 10 /* 3-bit row slots in a uint */

#ifdef CLS_NV_SHFL
/* v from lane (lane ^ m) of this warp (PTX shfl.sync.bfly, all 32 lanes) */
inline uint cls_shfl_xor_u(const uint v, const int m)
{
    uint o;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(o) : "r"(v), "r"(m));
    return o;
}
#if defined(CLS_REAL_DOUBLE) || defined(CLS_ACC_DOUBLE)
inline acc_t cls_shfl_xor(const acc_t v, const int m)
{
    const uint2 u = as_uint2(v);
    return as_double((uint2)(cls_shfl_xor_u(u.x, m), cls_shfl_xor_u(u.y, m)));
}
#else
inline acc_t cls_shfl_xor(const acc_t v, const int m)
{
    return as_float(cls_shfl_xor_u(as_uint(v), m));
}
#endif

/* a[0..3] (two pairs) summed over groups of `width` lanes (a power of two
 * <= 32), the same bits in every lane of a group */
inline void cls_warp_pairs2(acc_t *a, const int lane, const int width)
{
#pragma OPENCL FP_CONTRACT OFF
    for (int m = width >> 1; m > 0; m >>= 1) {
        acc_t o[4];
        for (int c = 0; c < 4; c++)
            o[c] = cls_shfl_xor(a[c], m);
        const int up = lane & m; /* the lower lane's pair first, in both lanes */
        for (int c = 0; c < 4; c += 2) {
            acc_t hi = up ? o[c] : a[c], lo = up ? o[c + 1] : a[c + 1];
            cls_acc2_pair(&hi, &lo, up ? a[c] : o[c], up ? a[c + 1] : o[c + 1]);
            a[c] = hi;
            a[c + 1] = lo;
        }
    }
}

/* The group's two sums from a[0..3]: warps, one barrier, then each warp
 * folds the nw warps' partials in groups of nw2 lanes (nw rounded up to a
 * power of two; every group holds the same partials, so every lane gets the
 * same bits). scratch holds 4 acc_t per warp; a caller alternates two of
 * them so that no barrier is needed between one reduction's reads and the
 * next's writes. The local size is a multiple of 32 (la_cgs.c). */
inline void cgs_group_pairs2_reg(__local acc_t *scratch, acc_t *a, acc_t *s0, acc_t *s1)
{
    const int lid = (int)get_local_id(0), lane = lid & 31, nw = (int)get_local_size(0) >> 5;
    int nw2 = 1;
    while (nw2 < nw)
        nw2 <<= 1;
    cls_warp_pairs2(a, lane, 32);
    if (lane == 0)
        for (int c = 0; c < 4; c++)
            scratch[4 * (lid >> 5) + c] = a[c];
    barrier(CLK_LOCAL_MEM_FENCE);
    acc_t b[4] = {0, 0, 0, 0};
    const int w = lane & (nw2 - 1);
    if (w < nw)
        for (int c = 0; c < 4; c++)
            b[c] = scratch[4 * w + c];
    cls_warp_pairs2(b, lane, nw2);
    *s0 = b[0] + b[1];
    *s1 = b[2] + b[3];
}
#define CGS_SCRATCH_2 (4 * 32) /* the second reduction's scratch */
#else
/* cgs_run's tree (cls_group_pairs2; it ends with a barrier, so one
 * scratch serves both reductions) */
inline void cgs_group_pairs2_reg(__local acc_t *scratch, acc_t *a, acc_t *s0, acc_t *s1)
{
    cls_group_pairs2(scratch, a, s0, s1);
}
#define CGS_SCRATCH_2 0
#endif

/* Where a work-item's rows stand: slot j (row = lid + j ls), entry e of
 * [e, end). Steps past finished and empty rows. */
inline void cgs_rows_skip(const int n, const int ls, __global const int *restrict rowptr, int *j,
                          int *row, int *e, int *end)
{
    while (*row < n && *e >= *end) {
        (*j)++;
        *row += ls;
        if (*row < n) {
            *e = rowptr[*row];
            *end = rowptr[*row + 1];
        }
    }
}

__kernel void cgs_run_reg(const int n, __global const int *restrict rowptr,
                          __global const int *restrict col, __global const mat_t *restrict val,
                          __global real *restrict x, __global real *restrict r,
                          __global real *restrict p, __global real *restrict q,
                          __global const real *d, __global acc_t *restrict sc,
                          __global int *restrict ctl, __global acc_t *restrict hist,
                          const int nslots, const acc_t stop2, const int count,
                          __local acc_t *restrict scratch, __local real *restrict pl,
                          __local real *restrict ql)
{
#pragma OPENCL FP_CONTRACT OFF
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    const int iters = ctl[0] == CGS_RUN ? count : 0; /* uniform: one read per work-item */
    int k = ctl[1];
    acc_t beta = sc[1], rz = sc[2], rr = sc[3];
    /* the rows' state into registers, p into local memory too; q = 0 for
     * rows without entries */
    real xv[CGS_RPW], rv[CGS_RPW], pv[CGS_RPW], dv[CGS_RPW];
#pragma unroll
    for (int j = 0; j < CGS_RPW; j++) {
        const int row = lid + j * ls, in = row < n;
        xv[j] = in ? x[row] : 0;
        rv[j] = in ? r[row] : 0;
        pv[j] = in ? p[row] : 0;
        dv[j] = in && d ? d[row] : 1;
        if (in) {
            pl[row] = pv[j];
            ql[row] = 0;
        }
    }
    /* the first CGS_EPT entries of the rows, in order */
    real ev[CGS_EPT];
    uint cs[CGS_EPT / 2], slot[(CGS_EPT + CGS_SLOTS_PER_WORD - 1) / CGS_SLOTS_PER_WORD];
    uint endm = 0;
    int cnt = 0;
    int oj = 0, orow = lid, oe = 0, oend = 0; /* where the entries past them begin */
    if (orow < n) {
        oe = rowptr[orow];
        oend = rowptr[orow + 1];
    }
#pragma unroll
    for (int t = 0; t < CGS_EPT / 2; t++)
        cs[t] = 0;
#pragma unroll
    for (int t = 0; t < (CGS_EPT + CGS_SLOTS_PER_WORD - 1) / CGS_SLOTS_PER_WORD; t++)
        slot[t] = 0;
#pragma unroll
    for (int t = 0; t < CGS_EPT; t++) {
        cgs_rows_skip(n, ls, rowptr, &oj, &orow, &oe, &oend);
        ev[t] = 0;
        if (orow < n) {
            ev[t] = (real)val[oe];
            cs[t / 2] |= (uint)col[oe] << (16 * (t % 2));
            slot[t / CGS_SLOTS_PER_WORD] |= (uint)oj << (3 * (t % CGS_SLOTS_PER_WORD));
            if (++oe == oend)
                endm |= 1u << t;
            cnt = t + 1;
        }
    }
    cgs_rows_skip(n, ls, rowptr, &oj, &orow, &oe, &oend);
    /* every work-item has read the state before work-item 0 rewrites it,
     * and pl is complete */
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    int run = 1;
    for (int it = 0; run && it < iters; it++) {
        /* q = A p: the entries in registers, p gathered from local memory,
         * each row's sum to ql when its last entry is in */
        real sum = 0;
#pragma unroll
        for (int t = 0; t < CGS_EPT; t++)
            if (t < cnt) {
                sum += ev[t] * pl[(cs[t / 2] >> (16 * (t % 2))) & 0xffffu];
                if (endm & (1u << t)) {
                    const uint j = (slot[t / CGS_SLOTS_PER_WORD] >> (3 * (t % CGS_SLOTS_PER_WORD))) & 7u;
                    ql[lid + (int)j * ls] = sum;
                    sum = 0;
                }
            }
        /* the rest from global memory, continuing the row in progress */
        for (int row = orow, e = oe, end = oend; row < n;) {
            for (; e < end; e++)
                sum += (real)val[e] * pl[col[e]];
            ql[row] = sum;
            sum = 0;
            row += ls;
            if (row < n) {
                e = rowptr[row];
                end = rowptr[row + 1];
            }
        }
        /* the pairs p'q, q'Wq */
        acc_t a[4] = {0, 0, 0, 0};
#pragma unroll
        for (int j = 0; j < CGS_RPW; j++)
            if (lid + j * ls < n) {
                const acc_t ys = (acc_t)ql[lid + j * ls];
                cls_acc2_dot(&a[0], &a[1], (acc_t)pv[j], ys);
                cls_acc2_dot(&a[2], &a[3], ys * ys, (acc_t)dv[j]);
            }
        acc_t pq, qq;
        cgs_group_pairs2_reg(scratch, a, &pq, &qq); /* the same values in every work-item */

        acc_t alpha;
        const int stop = cgs_step(rr, rz, pq, stop2, &alpha);
        if (lid == 0)
            cls_fused_record(hist, nslots, k, rr, rz, pq, qq, alpha, beta, stop, sc, ctl);
        if (stop != CGS_RUN) {
            run = 0; /* uniform: x stays x_k */
        } else {
            /* x += alpha p; r -= alpha q; the pairs r'z, r'r of the new r */
            const real ra = (real)alpha;
            acc_t u[4] = {0, 0, 0, 0};
#pragma unroll
            for (int j = 0; j < CGS_RPW; j++)
                if (lid + j * ls < n) {
                    xv[j] += ra * pv[j];
                    const real ri = rv[j] - ra * ql[lid + j * ls];
                    rv[j] = ri;
                    const real zi = d ? dv[j] * ri : ri;
                    cls_acc2_dot(&u[0], &u[1], (acc_t)ri, (acc_t)zi);
                    cls_acc2_dot(&u[2], &u[3], (acc_t)ri, (acc_t)ri);
                }
            acc_t rz1, rr1;
            cgs_group_pairs2_reg(scratch + CGS_SCRATCH_2, u, &rz1, &rr1);
            beta = rz1 / rz; /* r_{k+1}'z_{k+1} / r_k'z_k; NaN stops at the next test */
            const real rb = (real)beta;
#pragma unroll
            for (int j = 0; j < CGS_RPW; j++) /* p = z + beta p */
                if (lid + j * ls < n) {
                    pv[j] = (d ? dv[j] * rv[j] : rv[j]) + rb * pv[j];
                    pl[lid + j * ls] = pv[j];
                }
            rz = rz1;
            rr = rr1;
            k++;
            /* p (every row) in local memory before the next SpMV reads it */
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
#pragma unroll
    for (int j = 0; j < CGS_RPW; j++) { /* the state back, for the next launch and the host */
        const int row = lid + j * ls;
        if (row < n && iters > 0) {
            x[row] = xv[j];
            r[row] = rv[j];
            p[row] = pv[j];
            q[row] = ql[row];
        }
    }
    if (lid == 0 && iters > 0) {
        sc[1] = beta;
        sc[2] = rz;
        sc[3] = rr;
    }
}
