/*
 * rowblock.cl: the pieces of an SpMM on row-major blocks that block CG
 * (bcg.cl) and the k-column V-cycle (amg_spmm.cl) share. A block of kw
 * columns (2, 4 or 8) holds row i's entries at kw i; a work-item sums
 * cw = 1 << lc of them (2 or 4) for one row, kw / cw lanes a row, so each
 * entry of A costs one 16- or 32-byte load of the block (one segment for
 * the row's lanes together) and A's index and value are read by the
 * row's lanes alike (one transaction). Built after real.cl, before the
 * files that use it (la_aux_program, la_amg.c).
 */
#ifdef CLS_REAL_DOUBLE
typedef double2 rb_real2;
typedef double4 rb_real4;
typedef double8 rb_real8;
#else
typedef float2 rb_real2;
typedef float4 rb_real4;
typedef float8 rb_real8;
#endif

/* Q += v P's piece at (in units of cw = 1 << lc, 2 or 4 values) */
inline void rb_piece_fma(const int lc, const real v, __global const real *restrict P,
                          const long at, real *q)
{
    if (lc == 2) {
        const rb_real4 p = vload4(at, P);
        q[0] += v * p.s0, q[1] += v * p.s1, q[2] += v * p.s2, q[3] += v * p.s3;
    } else {
        const rb_real2 p = vload2(at, P);
        q[0] += v * p.s0, q[1] += v * p.s1;
    }
}

inline void rb_piece_store(const int lc, const real *q, const long at, __global real *restrict Q)
{
    if (lc == 2)
        vstore4((rb_real4)(q[0], q[1], q[2], q[3]), at, Q);
    else
        vstore2((rb_real2)(q[0], q[1]), at, Q);
}

/* p[0..cw) = B's piece at (units of cw values), p[cw..4) 0 */
inline void rb_piece_load(const int lc, __global const real *B, const long at, real *p)
{
    if (lc == 2) {
        const rb_real4 v = vload4(at, B);
        p[0] = v.s0, p[1] = v.s1, p[2] = v.s2, p[3] = v.s3;
    } else {
        const rb_real2 v = vload2(at, B);
        p[0] = v.s0, p[1] = v.s1, p[2] = p[3] = 0;
    }
}

/* q[0..cw) = the lane's piece of row r of A P, A in SELL (slices of C
 * rows, cs their starts; r counts rows in slice order), ll = log2 of the
 * lanes a row */
inline void rb_sell_piece(const int lc, const int ll, const int r, const int C,
                          __global const int *restrict cs, __global const int *restrict col,
                          __global const mat_t *restrict val, __global const real *restrict P,
                          const int lane, real *q)
{
    const int c = r / C;
    const int i = r - c * C;
    const int start = cs[c];
    const int width = (cs[c + 1] - start) / C;
    q[0] = q[1] = q[2] = q[3] = 0;
    for (int j = 0, e = start + i; j < width; j++, e += C)
        rb_piece_fma(lc, (real)val[e], P, ((long)col[e] << ll) + lane, q);
}

/* the same, A in CSR */
inline void rb_csr_piece(const int lc, const int ll, const int row,
                         __global const int *restrict rowptr, __global const int *restrict col,
                         __global const mat_t *restrict val, __global const real *restrict P,
                         const int lane, real *q)
{
    q[0] = q[1] = q[2] = q[3] = 0;
    const int end = rowptr[row + 1];
    for (int j = rowptr[row]; j < end; j++)
        rb_piece_fma(lc, (real)val[j], P, ((long)col[j] << ll) + lane, q);
}
