/*
 * pcg_fused.cl: the preconditioned single-reduction CG with a general
 * preconditioner M (the algorithm is in solver/krylov/pcg.c and solver/krylov/dpcg.c).
 *
 * The Jacobi-fused loop (cg_fused.cl) gets r'z of the next iteration from
 * an identity that holds only for a diagonal W = D^-1. A general M (a
 * polynomial, incomplete Cholesky, a V-cycle) has no such identity, so this
 * is the preconditioned Chronopoulos-Gear CG (Chronopoulos and Gear,
 * J. Comput. Appl. Math. 25 (1989); Saad, "Iterative Methods for Sparse
 * Linear Systems", 2nd ed., Algorithm 9.1 rearranged as in PETSc's
 * KSPCG single-reduction variant): with u = M^-1 r and w = A u,
 *   gamma = r'u, delta = u'w (= u'Au), rr = r'r     one reduction
 *   beta  = gamma / gamma_old
 *   p'Ap  = delta - beta gamma / alpha_old          (= delta after a restart)
 *   alpha = gamma / p'Ap
 *   p = u + beta p;  s = w + beta s  (s = A p);  x += alpha p;  r -= alpha s
 * An iteration is: the SpMV w = A u with the format kernel's epilogue
 * (u'w, w'w pairs), the scalars (one work-group, here, or on the host for
 * several parts), the update (this file), then z = M^-1 r by the
 * preconditioner's own kernels and the pairs r'u, r'r (pcgf_dots).
 *
 * Scalar state sc[] (acc_t): alpha, beta, alpha_old, gamma_old; gamma_old
 * = 0 marks a (re)start (beta = 0). ctl[] and the record ring are
 * cg_fused.cl's: ctl[0] 0 running, else the stop reason; ctl[1] the
 * iterations done; a stopped iteration's update does nothing, so iterations
 * queued past convergence leave x as it was.
 */

#define PCGF_RUN 0
#define PCGF_CONVERGED 1
#define PCGF_INDEFINITE 2 /* p'Ap <= 0 */
#define PCGF_NANORINF 3
#define PCGF_PC_INDEFINITE 4 /* r'M^-1 r <= 0: the preconditioner is not SPD */

/* the groups' pairs folded and reduced: cls_fold_pairs2, cls_group_pairs2 (real.cl) */

/*
 * One work-group. ps: the SpMV's pairs (u'w, w'w) of gs groups; pu: the
 * pairs (r'u, r'r) of gu groups (pcgf_dots). With k = ctl[1]:
 *   rr <= stop2 (= tol^2 b'b)  -> converged: x_k is the answer
 *   gamma = r'u <= 0           -> the preconditioner is not positive definite
 *   p'Ap <= 0                  -> indefinite (or, after rounding, a loss of
 *                                 the recurrence: the host restarts there)
 * and record k = {rr, gamma, p'Ap, delta, alpha, beta, stop, k} goes to
 * hist[k % nslots]. The host loop (solver/krylov/dpcg.c) computes the same values
 * in the same order for several parts: no fma here.
 */
__kernel void pcgf_scalars(CLS_FUSED_SCALARS_ARGS)
{
#pragma OPENCL FP_CONTRACT OFF
    acc_t delta, ww, gamma, rr;
    cls_fused_sums(ps, gs, pu, gu, scratch, &delta, &ww, &gamma, &rr);
    if (!cls_fused_leader(ctl)) /* one work-item, while the loop runs */
        return;
    const int k = ctl[1];
    int stop = PCGF_RUN;
    acc_t alpha = 0, beta = 0, pap = 0;
    const acc_t g0 = sc[3], a0 = sc[2]; /* gamma_{k-1}, alpha_{k-1} (0: a start) */
    if (!isfinite(rr) || !isfinite(gamma))
        stop = PCGF_NANORINF;
    else if (rr <= stop2) /* ||r_k|| <= tol ||b|| */
        stop = PCGF_CONVERGED;
    else if (!isfinite(delta))
        stop = PCGF_NANORINF;
    else if (!(gamma > 0)) /* r'M^-1 r <= 0 */
        stop = PCGF_PC_INDEFINITE;
    else {
        beta = g0 > 0 ? gamma / g0 : 0;                   /* beta = gamma / gamma_old */
        pap = g0 > 0 ? delta - beta * gamma / a0 : delta; /* p'Ap */
        if (!(pap > 0))
            stop = PCGF_INDEFINITE;
        else
            alpha = gamma / pap; /* alpha = gamma / p'Ap */
    }
    if (cls_fused_record(hist, nslots, k, rr, gamma, pap, delta, alpha, beta, stop, sc, ctl)) {
        sc[2] = alpha; /* the next iteration's alpha_{k-1}, gamma_{k-1} */
        sc[3] = gamma;
    }
}

/* p = u + beta p ; s = w + beta s ; x += alpha p ; r -= alpha s
 * (nothing once ctl[0] is set: see the top) */
__kernel void pcgf_update(const int n, __global const acc_t *restrict sc,
                          __global const int *restrict ctl, __global const real *restrict u,
                          __global const real *restrict w, __global real *restrict p,
                          __global real *restrict s, __global real *restrict x,
                          __global real *restrict r)
{
    const int run = ctl[0] == PCGF_RUN;
    const real alpha = (real)sc[0], beta = (real)sc[1];
    for (int i = (int)get_global_id(0); run && i < n; i += (int)get_global_size(0)) {
        const real pi = u[i] + beta * p[i];
        const real si = w[i] + beta * s[i];
        p[i] = pi;
        s[i] = si;
        x[i] += alpha * pi;
        r[i] -= alpha * si;
    }
}

/* partial: the pairs r'u, r'r (cls_write_pairs2) */
__kernel void pcgf_dots(const int n, __global const real *restrict r,
                        __global const real *restrict u, __global acc_t *restrict partial,
                        __local acc_t *scratch)
{
    acc_t ru = 0, rul = 0, rr = 0, rrl = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        const acc_t ri = (acc_t)r[i];
        cls_acc2_dot(&ru, &rul, ri, (acc_t)u[i]);
        cls_acc2_dot(&rr, &rrl, ri, ri);
    }
    cls_write_pairs2(partial, scratch, ru, rul, rr, rrl);
}

/* (re)start: r = b - q (q = A x just computed); p = s = 0 (so that the
 * first update's p = u + 0 p never meets a stale NaN) */
__kernel void pcgf_init(const int n, __global const real *restrict b,
                        __global const real *restrict q, __global real *restrict r,
                        __global real *restrict p, __global real *restrict s)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        r[i] = b[i] - q[i];
        p[i] = 0;
        s[i] = 0;
    }
}
