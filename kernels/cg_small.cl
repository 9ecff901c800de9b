/*
 * cg_small.cl: the whole CG loop of a small system in one work-group and
 * one launch (--method cg-small; solver/krylov/cg_small.c holds the
 * recurrence, kernels/la_cgs.c the host side).
 *
 * Why: below ~10^5 rows a GPU iteration of the device-scalar loops
 * (cg_classic.cl: five launches) is bound by launch latency, not by
 * memory traffic: 1138_bus (4,054 nonzeros) spends ~40 us per iteration
 * launching kernels that each run for a few microseconds. Here ONE
 * work-group runs `count` iterations of the textbook Hestenes-Stiefel
 * recurrence (Hestenes and Stiefel, J. Res. NBS 49 (1952); Saad,
 * "Iterative Methods for Sparse Linear Systems", 2nd ed., Algorithm 9.1,
 * Jacobi as the preconditioner) with barriers where the other loops have
 * launches, the same idea as the persistent "one block per system" CG of
 * batched solvers (Ginkgo's batch CG: Kashi, Nayak, Kulkarni et al.,
 * "Batched sparse iterative solvers on GPU for the collision operator for
 * fusion plasma simulations", IPDPS 2022). Per iteration, k = ctl[1]:
 *   q = A p                      work-items stride over the CSR rows
 *   pq = p'q, qq = q'Wq          group tree reduction #1 (compensated pairs)
 *   rr <= stop2 -> converged; NaN/Inf -> nan_or_inf; pq <= 0 -> indefinite
 *   alpha = rz / pq              every work-item, from the same sums
 *   record k into hist           work-item 0 (cls_fused_record, as cgc_scalars)
 *   x += alpha p; r -= alpha q   (own rows)
 *   rz' = r'z, rr' = r'r         group tree reduction #2 (z = D^-1 r, W = D^-1)
 *   beta = rz' / rz; p = z + beta p
 * so the iterates and records are cg_classic.cl's (two computed dot
 * products, beta from their quotient), with the same stop codes. With
 * --precond chebyshev (deg > 0) z = M^-1 r is the Chebyshev polynomial's
 * recurrence over the whole group (cgs_cheb_rows), stored in z, between
 * the update and the second reduction. The
 * scalars never leave the work-item registers inside a launch; sc[] keeps
 * them between launches: alpha, beta (the last made p), r'z, r'r.
 *
 * Uniform control flow: every work-item computes the stop test from the
 * same reduced values read out of local memory after a barrier, so all of
 * them leave the loop at the same iteration and reach every barrier (OpenCL
 * 1.2 6.12.8; PoCL needs it too). No early return (real.cl). The rows a
 * work-item owns (row = lid + j * ls) are the same in the SpMV and the
 * update, so q needs no barrier between them; p, written by all, does:
 * a global fence ends each iteration.
 */

#define CGS_RUN 0 /* la.h's LA_CGF_* */
#define CGS_CONVERGED 1
#define CGS_INDEFINITE 2
#define CGS_NANORINF 3

/*
 * The pieces of an iteration over the rows [lo, hi) of one system, the
 * work-items striding (row = lo + lid + j ls): cgs_run's loop below and
 * cg_batch.cl's (one system per group) are made of them.
 */

/* The tests and alpha from the reduced sums, in cgc_scalars' order
 * (kernels/la.h's la_cg_step is the host's copy). */
int cgs_step(const acc_t rr, const acc_t rz, const acc_t pq, const acc_t stop2, acc_t *alpha)
{
    *alpha = 0;
    if (!isfinite(rr) || !isfinite(rz))
        return CGS_NANORINF;
    if (rr <= stop2) /* ||r_k|| <= tol ||b|| */
        return CGS_CONVERGED;
    if (!isfinite(pq))
        return CGS_NANORINF;
    if (!(pq > 0)) /* p'Ap <= 0 */
        return CGS_INDEFINITE;
    *alpha = rz / pq; /* alpha = r'z / p'Ap */
    return CGS_RUN;
}

/* q = A p; the pair p'q into a[0..1] and, with wqq, q'Wq into a[2..3] */
void cgs_spmv_rows(const int lo, const int hi, const int lid, const int ls,
                   __global const int *restrict rowptr, __global const int *restrict col,
                   __global const mat_t *restrict val, __global const real *restrict p,
                   __global real *restrict q, __global const real *d, const int wqq, acc_t *a)
{
#pragma OPENCL FP_CONTRACT OFF
    for (int row = lo + lid; row < hi; row += ls) {
        const int end = rowptr[row + 1];
        real sum = 0;
        for (int j = rowptr[row]; j < end; j++)
            sum += (real)val[j] * p[col[j]];
        q[row] = sum;
        const acc_t ys = (acc_t)sum;
        cls_acc2_dot(&a[0], &a[1], (acc_t)p[row], ys);
        if (wqq)
            cls_acc2_dot(&a[2], &a[3], ys * ys, d ? (acc_t)d[row] : (acc_t)1);
    }
}

/* x += alpha p; r -= alpha q; the pairs r'z, r'r of the new r into u */
void cgs_update_rows(const int lo, const int hi, const int lid, const int ls, const real ra,
                     __global real *restrict x, __global real *restrict r,
                     __global const real *restrict p, __global const real *restrict q,
                     __global const real *d, acc_t *u)
{
#pragma OPENCL FP_CONTRACT OFF
    for (int row = lo + lid; row < hi; row += ls) {
        x[row] += ra * p[row];
        const real ri = r[row] - ra * q[row];
        r[row] = ri;
        const real zi = d ? d[row] * ri : ri;
        cls_acc2_dot(&u[0], &u[1], (acc_t)ri, (acc_t)zi);
        cls_acc2_dot(&u[2], &u[3], (acc_t)ri, (acc_t)ri);
    }
}

/* p = z + beta p */
void cgs_direction_rows(const int lo, const int hi, const int lid, const int ls, const real rb,
                        __global const real *restrict r, __global real *restrict p,
                        __global const real *d)
{
#pragma OPENCL FP_CONTRACT OFF
    for (int row = lo + lid; row < hi; row += ls)
        p[row] = (d ? d[row] * r[row] : r[row]) + rb * p[row];
}

/*
 * Chebyshev inside the loop (--precond chebyshev): z = M^-1 r with
 * M^-1 = p(D^-1 A) D^-1, the three-term recurrence of pc.cl's cheb_first
 * and cheb_step (Saad, Algorithm 12.1, as PETSc's KSPChebyshev) over the
 * rows [lo, hi) of one work-group, a barrier where the preconditioner's
 * own loop has a launch:
 *   d_0 = c0 D^-1 r;  z = d_0
 *   step j = 1 .. deg-1:  res_j = res_{j-1} - A d_{j-1} (res_0 = r);
 *                         d_j = c1[j] d_{j-1} + c2[j] D^-1 res_j;  z += d_j
 * coef[0] = c0, coef[j] = c1[j], coef[32 + j] = c2[j] (pc_cheby_coeffs).
 * d alternates between d0 and d1, so one barrier per step (every row of
 * d_{j-1} written before any work-item's SpMV reads it, every read done
 * before d_{j+1} overwrites the same buffer) is enough; the first also
 * completes r, of which d_0 reads only the caller's own rows. Every
 * work-item calls it, whatever deg (deg 0: nothing, no barrier), and
 * unconditionally: PoCL mishandled it under `if (deg > 0)`. z's rows are the
 * caller's own afterwards (no fence at the end).
 */
void cgs_cheb_rows(const int lo, const int hi, const int lid, const int ls, const int deg,
                   __global const real *restrict coef, __global const int *restrict rowptr,
                   __global const int *restrict col, __global const mat_t *restrict val,
                   __global const real *restrict dinv, __global const real *restrict r,
                   __global real *restrict z, __global real *d0, __global real *d1,
                   __global real *restrict res)
{
    const real c0 = deg > 0 ? coef[0] : 0;
    for (int row = lo + lid; row < hi && deg > 0; row += ls) {
        const real di = c0 * dinv[row] * r[row];
        d0[row] = di;
        z[row] = di;
    }
    for (int j = 1; j < deg; j++) {
        barrier(CLK_GLOBAL_MEM_FENCE); /* d_{j-1} complete */
        __global const real *din = (j & 1) ? d0 : d1;
        __global real *dout = (j & 1) ? d1 : d0;
        __global const real *rin = j == 1 ? r : res;
        const real c1 = coef[j], c2 = coef[32 + j];
        for (int row = lo + lid; row < hi; row += ls) {
            real q = 0;
            const int end = rowptr[row + 1];
            for (int e = rowptr[row]; e < end; e++)
                q += (real)val[e] * din[col[e]];
            const real ri = rin[row] - q;
            const real di = c1 * din[row] + c2 * dinv[row] * ri;
            res[row] = ri;
            dout[row] = di;
            z[row] += di;
        }
    }
}

/*
 * IC(0) inside the loop (--precond ic0, swept: --precond-sweeps k > 0):
 * z ~ U^-1 L^-1 r by k Jacobi sweeps on each triangle, pc.cl's ic0_sweep
 * (Anzt, Chow and Dongarra, Euro-Par 2015) over the rows of one work-group,
 * a barrier where la_tri_sweeps has a launch. A triangle is N (its strict
 * part, CSR) and dl = 1 / diag; sweep 1 reads y_0 = dl .* b implicitly:
 *   y_j = dl .* (b - N y_{j-1})
 * and the outputs alternate between t and y so that sweep k lands in y
 * (sweep j writes y when k - j is even), as la_tri_sweeps does. Each sweep
 * begins with a barrier (its input complete, and every read of the buffer
 * it overwrites done); b's rows are the caller's own. Every work-item calls
 * it, whatever k (k 0: nothing).
 */
void cgs_tri_sweeps(const int lo, const int hi, const int lid, const int ls, const int k,
                    __global const int *restrict rowptr, __global const int *restrict col,
                    __global const real *restrict val, __global const real *restrict dl,
                    __global const real *b, __global real *t, __global real *y)
{
    __global const real *in = NULL;
    for (int j = 1; j <= k; j++) {
        barrier(CLK_GLOBAL_MEM_FENCE);
        __global real *out = (k - j) % 2 == 0 ? y : t;
        for (int row = lo + lid; row < hi; row += ls) {
            real s = b[row];
            const int end = rowptr[row + 1];
            for (int e = rowptr[row]; e < end; e++) {
                const int c = col[e];
                s -= val[e] * (in ? in[c] : dl[c] * b[c]);
            }
            out[row] = dl[row] * s;
        }
        in = out;
    }
}

/* z = U^-1 L^-1 r by k sweeps each (L's result in t1, t0 their scratch) */
void cgs_ic0_rows(const int lo, const int hi, const int lid, const int ls, const int k,
                  __global const int *lrow, __global const int *lcol, __global const real *lval,
                  __global const real *ldl, __global const int *urow, __global const int *ucol,
                  __global const real *uval, __global const real *udl, __global const real *r,
                  __global real *z, __global real *t0, __global real *t1)
{
    cgs_tri_sweeps(lo, hi, lid, ls, k, lrow, lcol, lval, ldl, r, t0, t1);
    cgs_tri_sweeps(lo, hi, lid, ls, k, urow, ucol, uval, udl, t1, t0, z);
}

/* x += alpha p; r -= alpha q (own rows; Chebyshev's loop takes its sums
 * after the preconditioner) */
void cgs_step_rows(const int lo, const int hi, const int lid, const int ls, const real ra,
                   __global real *restrict x, __global real *restrict r,
                   __global const real *restrict p, __global const real *restrict q)
{
#pragma OPENCL FP_CONTRACT OFF
    for (int row = lo + lid; row < hi; row += ls) {
        x[row] += ra * p[row];
        r[row] = r[row] - ra * q[row];
    }
}

/* the pairs r'z, r'r into u (own rows, z stored) */
void cgs_rz_rows(const int lo, const int hi, const int lid, const int ls,
                 __global const real *restrict r, __global const real *restrict z, acc_t *u)
{
    for (int row = lo + lid; row < hi; row += ls) {
        cls_acc2_dot(&u[0], &u[1], (acc_t)r[row], (acc_t)z[row]);
        cls_acc2_dot(&u[2], &u[3], (acc_t)r[row], (acc_t)r[row]);
    }
}

/* p = z + beta p, z stored */
void cgs_direction_z_rows(const int lo, const int hi, const int lid, const int ls, const real rb,
                          __global const real *restrict z, __global real *restrict p)
{
#pragma OPENCL FP_CONTRACT OFF
    for (int row = lo + lid; row < hi; row += ls)
        p[row] = z[row] + rb * p[row];
}

/*
 * The start, one work-group: with q = A x already computed (at full
 * precision, la_spmv_full), r = b - q; z = D^-1 r; p = z; then
 * sc = {0, 0, r'z, r'r} and ctl = {running, k0}.
 */
__kernel void cgs_start(const int n, __global const real *restrict b,
                        __global const real *restrict q, __global real *restrict r,
                        __global real *restrict p, __global const real *d,
                        __global acc_t *restrict sc, __global int *restrict ctl, const int k0,
                        __local acc_t *scratch, const int deg, __global const real *coef,
                        __global const int *rowptr, __global const int *col,
                        __global const mat_t *val, __global real *z, __global real *d0,
                        __global real *d1, __global real *res, const int sweeps, __global const int *lrow, __global const int *lcol,
                        __global const real *lval, __global const real *ldl,
                        __global const int *urow, __global const int *ucol,
                        __global const real *uval, __global const real *udl)
{
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    acc_t a[4] = {0, 0, 0, 0}; /* r'z, r'r as (hi, lo) pairs */
    /* Chebyshev: r; z = M^-1 r over the group; p = z. cgs_cheb_rows is
     * called whatever deg (no steps, no barrier, at 0): PoCL (2.10) ran a
     * barrier under `if (deg > 0)` wrongly once some work-items had no rows */
    const int zs = deg > 0 || sweeps > 0; /* z stored: Chebyshev or IC(0) */
    for (int i = lid; i < n && zs; i += ls)
        r[i] = b[i] - q[i];
    cgs_cheb_rows(0, n, lid, ls, deg, coef, rowptr, col, val, d, r, z, d0, d1, res);
    cgs_ic0_rows(0, n, lid, ls, sweeps, lrow, lcol, lval, ldl, urow, ucol, uval, udl, r, z, d0, d1);
    for (int i = lid; i < n && zs; i += ls)
        p[i] = z[i];
    if (zs)
        cgs_rz_rows(0, n, lid, ls, r, z, a);
    for (int i = lid; i < n && !zs; i += ls) {
        const real ri = b[i] - q[i];
        const real zi = d ? d[i] * ri : ri;
        r[i] = ri;
        p[i] = zi;
        cls_acc2_dot(&a[0], &a[1], (acc_t)ri, (acc_t)zi);
        cls_acc2_dot(&a[2], &a[3], (acc_t)ri, (acc_t)ri);
    }
    acc_t rz, rr;
    cls_group_pairs2(scratch, a, &rz, &rr);
    if (lid == 0) {
        sc[0] = 0; /* alpha */
        sc[1] = 0; /* beta: p = z */
        sc[2] = rz;
        sc[3] = rr;
        ctl[0] = CGS_RUN;
        ctl[1] = k0;
    }
}

/*
 * Up to `count` iterations in one work-group (the loop above). On entry
 * sc = {alpha, beta_{k-1}, r_k'z_k, r_k'r_k} and ctl = {stop, k}; on exit
 * the same for the iteration reached (ctl[0] set when the loop stopped,
 * after which a launch does nothing). Record k = {rr, rz, p'Ap, q'Wq,
 * alpha, beta_{k-1}, stop, k} goes to hist[k % nslots] (real.cl).
 */
__kernel void cgs_run(const int n, __global const int *restrict rowptr,
                      __global const int *restrict col, __global const mat_t *restrict val,
                      __global real *restrict x, __global real *restrict r,
                      __global real *restrict p, __global real *restrict q,
                      __global const real *d, __global acc_t *restrict sc,
                      __global int *restrict ctl, __global acc_t *restrict hist, const int nslots,
                      const acc_t stop2, const int count, __local acc_t *scratch, const int deg,
                      __global const real *coef, __global real *z, __global real *d0,
                      __global real *d1, __global real *res, const int sweeps, __global const int *lrow, __global const int *lcol,
                      __global const real *lval, __global const real *ldl,
                      __global const int *urow, __global const int *ucol,
                      __global const real *uval, __global const real *udl)
{
#pragma OPENCL FP_CONTRACT OFF
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    const int iters = ctl[0] == CGS_RUN ? count : 0; /* uniform: one read per work-item */
    const int zs = deg > 0 || sweeps > 0;             /* z stored: Chebyshev or IC(0) */
    int k = ctl[1];
    acc_t beta = sc[1], rz = sc[2], rr = sc[3];
    /* every work-item has read the state before work-item 0 rewrites it */
    barrier(CLK_GLOBAL_MEM_FENCE);
    int run = 1;
    for (int it = 0; run && it < iters; it++) {
        /* q = A p; the pairs p'q and q'Wq */
        acc_t a[4] = {0, 0, 0, 0};
        cgs_spmv_rows(0, n, lid, ls, rowptr, col, val, p, q, d, 1, a);
        acc_t pq, qq;
        cls_group_pairs2(scratch, a, &pq, &qq); /* the same values in every work-item */

        /* the tests and alpha, in cgc_scalars' order */
        acc_t alpha;
        const int stop = cgs_step(rr, rz, pq, stop2, &alpha);
        if (lid == 0) { /* record k; ctl[0] = stop, or ctl[1] = k + 1 */
            cls_fused_record(hist, nslots, k, rr, rz, pq, qq, alpha, beta, stop, sc, ctl);
        }
        if (stop != CGS_RUN) {
            run = 0; /* uniform: x stays x_k */
        } else {
            /* x += alpha p; r -= alpha q; the pairs r'z, r'r of the new r */
            acc_t u[4] = {0, 0, 0, 0};
            if (zs) /* Chebyshev or IC(0): z = M^-1 r over the whole r first */
                cgs_step_rows(0, n, lid, ls, (real)alpha, x, r, p, q);
            else
                cgs_update_rows(0, n, lid, ls, (real)alpha, x, r, p, q, d, u);
            cgs_cheb_rows(0, n, lid, ls, deg, coef, rowptr, col, val, d, r, z, d0, d1, res);
            cgs_ic0_rows(0, n, lid, ls, sweeps, lrow, lcol, lval, ldl, urow, ucol, uval, udl, r, z,
                         d0, d1);
            if (zs)
                cgs_rz_rows(0, n, lid, ls, r, z, u);
            acc_t rz1, rr1;
            cls_group_pairs2(scratch, u, &rz1, &rr1);
            beta = rz1 / rz; /* r_{k+1}'z_{k+1} / r_k'z_k; NaN stops at the next test */
            if (zs) /* p = z + beta p */
                cgs_direction_z_rows(0, n, lid, ls, (real)beta, z, p);
            else
                cgs_direction_rows(0, n, lid, ls, (real)beta, r, p, d);
            rz = rz1;
            rr = rr1;
            k++;
            /* p (every row) complete before the next SpMV reads it */
            barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        }
    }
    if (lid == 0 && iters > 0) { /* the state of the iteration reached */
        sc[1] = beta;
        sc[2] = rz;
        sc[3] = rr;
    }
}
