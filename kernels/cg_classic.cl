/*
 * cg_classic.cl: the Hestenes-Stiefel CG recurrence with its scalars on the
 * device (solver/krylov/cg.c, kernels/la_cgf.c with classic set).
 *
 * Why a second device loop beside cgf_* (cg_fused.cl): the fused loop takes
 * beta from the identity r_{k+1}'z_{k+1} = alpha^2 q'Wq - r_k'z_k so that it
 * can update p in the pass that updates r, and in finite precision that
 * estimate drifts from the true r'z; on ill-conditioned matrices the loop
 * then needed 3-25% more iterations than scipy's and PETSc's CG (issue 26:
 * 1138_bus 2276 against 2204). Here beta is the quotient of two computed dot
 * products, as in the textbook, so the iterates are the classic method's;
 * the price is a second reduction per iteration, which on one device is one
 * more one-group kernel and one more vector pass, never a host round trip.
 * An iteration is five launches whose arguments never change:
 *   1. the SpMV with its partials (as in the fused loop): q = A p, p'q;
 *   2. cgc_scalars (one group): the previous update's r'z, r'r folded; the
 *      stopping and breakdown tests; alpha = r'z / p'q; the record;
 *   3. cgc_update: r -= alpha q; pairs of r'z and r'r;
 *   4. cgc_beta (one group): beta = r_{k+1}'z_{k+1} / r_k'z_k;
 *   5. cgc_direction: x += alpha p; p = z + beta p (z = D^-1 r, never
 *      stored). x moves here, where p is read anyway: 10 n of vector
 *      traffic per iteration with the SpMV's 2 n (the single-reduction
 *      loop's 9 n), where x in the update made it 11 n.
 * Every kernel skips its loop once ctl[0] says the loop stopped, so the
 * iterations the host queued past the stopping one leave x as it was.
 * sc[]: alpha, beta, r_k'z_k (the denominator cgc_beta needs).
 */

/*
 * One work-group (CLS_FUSED_SCALARS_ARGS, as cgf_scalars): with k = ctl[1],
 *   rz, rr = r_k'z_k, r_k'r_k          (pu: the last update's pairs)
 *   rr <= stop2 (= tol^2 b'b)          -> converged: x_k is the answer
 *   NaN/Inf anywhere                   -> nan_or_inf
 *   p'q <= 0                           -> indefinite (the iteration it happens)
 *   alpha = rz / p'q
 * The record's beta is beta_{k-1}, the one that made p_k (0 at a start).
 */
__kernel void cgc_scalars(CLS_FUSED_SCALARS_ARGS)
{
#pragma OPENCL FP_CONTRACT OFF
    acc_t pq, qq, rz, rr;
    cls_fused_sums(ps, gs, pu, gu, scratch, &pq, &qq, &rz, &rr);
    if (!cls_fused_leader(ctl))
        return;
    const int k = ctl[1];
    int stop = CGF_RUN;
    acc_t alpha = 0;
    if (!isfinite(rr) || !isfinite(rz))
        stop = CGF_NANORINF;
    else if (rr <= stop2) /* ||r_k|| <= tol ||b|| */
        stop = CGF_CONVERGED;
    else if (!isfinite(pq))
        stop = CGF_NANORINF;
    else if (!(pq > 0)) /* p'Ap <= 0 */
        stop = CGF_INDEFINITE;
    else
        alpha = rz / pq; /* alpha = r'z / p'Ap */
    const acc_t beta_used = sc[1];
    sc[2] = rz;
    cls_fused_record(hist, nslots, k, rr, rz, pq, qq, alpha, beta_used, stop, sc, ctl);
}

/* r -= alpha q ; partial: the pairs r'z, r'r of the new r (z = d .* r; d
 * NULL without Jacobi). The arguments are cgf_update's (p and x unused: x
 * is updated in cgc_direction). */
__kernel void cgc_update(const int n, __global const acc_t *restrict sc,
                         __global const int *restrict ctl, __global const real *p,
                         __global const real *restrict q, __global real *x,
                         __global real *restrict r, __global const real *d,
                         __global acc_t *restrict partial, __local acc_t *scratch)
{
    const int run = ctl[0] == CGF_RUN; /* no early return: see real.cl */
    const real alpha = (real)sc[0];
    acc_t rz = 0, rzl = 0, rr = 0, rrl = 0;
    if (d) {
        CLS_EACH(i, n, run) {
            const real ri = r[i] - alpha * q[i];
            r[i] = ri;
            cls_acc2_dot(&rz, &rzl, (acc_t)ri, (acc_t)(d[i] * ri));
            cls_acc2_dot(&rr, &rrl, (acc_t)ri, (acc_t)ri);
        }
    } else {
        CLS_EACH(i, n, run) {
            const real ri = r[i] - alpha * q[i];
            r[i] = ri;
            cls_acc2_dot(&rr, &rrl, (acc_t)ri, (acc_t)ri);
        }
        rz = rr;
        rzl = rrl;
    }
    cls_write_pairs2(partial, scratch, rz, rzl, rr, rrl);
}

/* One work-group: beta = r_{k+1}'z_{k+1} / r_k'z_k into sc[1], the update's
 * pairs (pu, gu groups) folded as cgc_scalars folds them. A stopped loop
 * leaves sc alone. Non-finite sums go through: cgc_scalars stops on them. */
__kernel void cgc_beta(const int gu, __global const acc_t *restrict pu, __global acc_t *restrict sc,
                       __global const int *restrict ctl, __local acc_t *scratch)
{
#pragma OPENCL FP_CONTRACT OFF
    acc_t s0, s1, rz1, rr1;
    cls_fused_sums(pu, 0, pu, gu, scratch, &s0, &s1, &rz1, &rr1);
    if (!cls_fused_leader(ctl))
        return;
    sc[1] = rz1 / sc[2]; /* beta = r_{k+1}'z_{k+1} / r_k'z_k (r_k'z_k > 0: alpha was taken) */
}

/* x += alpha p ; p = z + beta p, z = d .* r (r without Jacobi) */
__kernel void cgc_direction(const int n, __global const acc_t *restrict sc,
                            __global const int *restrict ctl, __global real *restrict p,
                            __global const real *restrict r, __global const real *d,
                            __global real *restrict x)
{
    const int run = ctl[0] == CGF_RUN;
    const real alpha = (real)sc[0], beta = (real)sc[1];
    if (d) {
        CLS_EACH(i, n, run) {
            const real pi = p[i];
            x[i] += alpha * pi;
            p[i] = d[i] * r[i] + beta * pi;
        }
    } else {
        CLS_EACH(i, n, run) {
            const real pi = p[i];
            x[i] += alpha * pi;
            p[i] = r[i] + beta * pi;
        }
    }
}
