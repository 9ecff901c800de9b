/*
 * cg_fused.cl: the CG vector updates fused with the dot products around
 * them.
 *
 * Classic CG (cg_update, pcg_update): one pass reads p, q, x, r (and d) once
 * and writes x, r (and z) once; stage 1 of the reduction rides along and
 * reduce_partials (dot.cl) finishes it.
 *
 * Fused single-synchronisation CG (cgf_*; the algorithm is in solver/krylov/cg.c):
 * an iteration is three launches whose arguments never change, so the host
 * only enqueues them:
 *   1. any SpMV format kernel with partial/w/ctl set: q = A p and the
 *      per-group partials of p'q and q'Wq (W = D^-1 or I);
 *   2. cgf_scalars (one work-group): finishes those reductions and the
 *      previous update's r'z and r'r, computes alpha and beta on the device,
 *      tests convergence and breakdown there, and appends a record to a ring
 *      the host reads without blocking the queue;
 *   3. cgf_update: x += alpha p; r -= alpha q; z = D^-1 r; p = z + beta p,
 *      with r'z and r'r of the new r: reads x, p, r, q (d), writes x, r, p
 *      (z is never stored).
 * The scalars live in sc[] (alpha, beta) and the control word ctl[]
 * (ctl[0]: 0 running, else the stop reason; ctl[1]: iterations done). Once
 * ctl[0] is set every fused kernel skips its loop (writing zero partials),
 * so iterations the host queued past convergence leave x untouched.
 */

/* ctl[0] values (solver/krylov/cg.c reads them from the records) */
#define CGF_RUN 0
#define CGF_CONVERGED 1
#define CGF_INDEFINITE 2
#define CGF_NANORINF 3
/* the record ring's layout: cls_fused_record (real.cl) */

/* x += alpha p ; r -= alpha q ; partial[g] = sum r'r (new r) */
__kernel void cg_update(const int n, const real alpha, __global const real *restrict p,
                        __global const real *restrict q, __global real *restrict x,
                        __global real *restrict r, __global acc_t *restrict partial,
                        __local acc_t *scratch)
{
    acc_t rr = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        x[i] += alpha * p[i];
        const real ri = r[i] - alpha * q[i];
        r[i] = ri;
        rr += (acc_t)ri * (acc_t)ri;
    }
    cls_group_sum_to(scratch, partial, rr);
}

/* x += alpha p ; r -= alpha q ; z = d .* r ;
 * partial[g] = sum r'z, partial[ngroups + g] = sum r'r */
__kernel void pcg_update(const int n, const real alpha, __global const real *restrict p,
                         __global const real *restrict q, __global real *restrict x,
                         __global real *restrict r, __global const real *restrict d,
                         __global real *restrict z, __global acc_t *restrict partial,
                         __local acc_t *scratch)
{
    acc_t rz = 0, rr = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        x[i] += alpha * p[i];
        const real ri = r[i] - alpha * q[i];
        r[i] = ri;
        const real zi = d[i] * ri;
        z[i] = zi;
        rz += (acc_t)ri * (acc_t)zi;
        rr += (acc_t)ri * (acc_t)ri;
    }
    const int lid = (int)get_local_id(0);
    scratch[2 * lid] = rz;
    scratch[2 * lid + 1] = rr;
    cls_group_reduce2(scratch);
    if (lid == 0) {
        partial[get_group_id(0)] = scratch[0];
        partial[get_num_groups(0) + get_group_id(0)] = scratch[1];
    }
}

/* Start (and restart after a residual replacement) of the fused CG:
 * r = b - q (q = A x computed just before); z = D^-1 r; p = z;
 * partial: the pairs r'z, r'r (cls_write_pairs2). d may be NULL (no
 * preconditioner). */
__kernel void cgf_init(const int n, __global const real *restrict b,
                       __global const real *restrict q, __global real *restrict r,
                       __global real *restrict p, __global const real *d,
                       __global acc_t *restrict partial, __local acc_t *scratch)
{
    acc_t rz = 0, rzl = 0, rr = 0, rrl = 0;
    CLS_EACH(i, n, 1) {
        const real ri = b[i] - q[i];
        const real zi = d ? d[i] * ri : ri;
        r[i] = ri;
        p[i] = zi;
        cls_acc2_dot(&rz, &rzl, (acc_t)ri, (acc_t)zi);
        cls_acc2_dot(&rr, &rrl, (acc_t)ri, (acc_t)ri);
    }
    cls_write_pairs2(partial, scratch, rz, rzl, rr, rrl);
}

/* the groups' pairs folded and reduced: cls_fold_pairs2, cls_group_pairs2 (real.cl) */

/*
 * One work-group. ps: the SpMV's partial pairs (p'q, q'Wq) of gs groups;
 * pu: the last update's (or init's) pairs (r'z, r'r) of gu groups. With
 * k = ctl[1]:
 *   rz, rr = r_k'z_k, r_k'r_k
 *   rr <= stop2 (= tol^2 b'b)            -> converged: x_k is the answer
 *   NaN/Inf anywhere                     -> nan_or_inf
 *   p'q <= 0                             -> indefinite
 *   alpha = rz / p'q
 *   beta  = (alpha^2 q'Wq - rz) / rz     (= r_{k+1}'z_{k+1} / r_k'z_k, the
 *           Chronopoulos-Gear identity, as ViennaCL's pipelined CG)
 * and record k = {rr, rz, pq, qWq, alpha, beta, stop reason, k} goes to
 * hist[k % nslots]. A stopped iteration writes its record, sets ctl[0] and
 * leaves ctl[1] = k (k updates were done); a running one sets ctl[1] = k + 1.
 * scratch: 4 acc_t per work-item.
 */
__kernel void cgf_scalars(CLS_FUSED_SCALARS_ARGS)
{
    /* the scalars as the distributed loop computes them on the host (dcg.c),
     * operation for operation: no fma */
#pragma OPENCL FP_CONTRACT OFF
    acc_t pq, qq, rz, rr;
    cls_fused_sums(ps, gs, pu, gu, scratch, &pq, &qq, &rz, &rr);
    if (!cls_fused_leader(ctl)) /* one work-item, while the loop runs */
        return;
    const int k = ctl[1];
    int stop = CGF_RUN;
    acc_t alpha = 0, beta = 0;
    if (!isfinite(rr) || !isfinite(rz))
        stop = CGF_NANORINF;
    else if (rr <= stop2) /* ||r_k|| <= tol ||b|| */
        stop = CGF_CONVERGED;
    else if (!isfinite(pq) || !isfinite(qq))
        stop = CGF_NANORINF;
    else if (!(pq > 0)) /* p'Ap <= 0 */
        stop = CGF_INDEFINITE;
    else {
        alpha = rz / pq; /* alpha = r'z / p'Ap */
        const acc_t rz_next = alpha * alpha * qq - rz;
        /* rounding can leave the estimate <= 0 only when r_{k+1} is at
         * the noise level; restart the direction there (beta = 0) */
        beta = rz_next > 0 ? rz_next / rz : 0;
    }
    cls_fused_record(hist, nslots, k, rr, rz, pq, qq, alpha, beta, stop, sc, ctl);
}

/*
 * The distributed iteration's local sums (solver/krylov/cg.c, more than one part):
 * one work-group folds the SpMV pairs of the interior rows (gi groups) and
 * of the boundary rows (gb groups, 0 when the part has no ghosts) and the
 * update's pairs (gu groups) into result = {p'q, q'Wq, r'z, r'r} as eight
 * acc_t (hi, lo each), which the host reads, adds across the rank's parts
 * and reduces across ranks in its one MPI_Allreduce.
 */
__kernel void cgf_fold(const int gi, __global const acc_t *restrict pi, const int gb,
                       __global const acc_t *restrict pb, const int gu,
                       __global const acc_t *restrict pu, __global acc_t *restrict result,
                       __local acc_t *scratch)
{
    const int lid = (int)get_local_id(0);
    acc_t a[4] = {0, 0, 0, 0}, u[4] = {0, 0, 0, 0};
    cls_fold_pairs2(a, pi, gi);
    if (gb > 0)
        cls_fold_pairs2(a, pb, gb);
    cls_fold_pairs2(u, pu, gu);
    for (int c = 0; c < 4; c++)
        scratch[4 * lid + c] = a[c];
    cls_group_reduce_pairs2_any(scratch);
    if (lid == 0)
        for (int c = 0; c < 4; c++)
            result[c] = scratch[c];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int c = 0; c < 4; c++)
        scratch[4 * lid + c] = u[c];
    cls_group_reduce_pairs2_any(scratch);
    if (lid == 0)
        for (int c = 0; c < 4; c++)
            result[4 + c] = scratch[c];
}

/* x += alpha p ; r -= alpha q ; z = D^-1 r ; p = z + beta p ;
 * partial: the pairs r'z, r'r of the new r. d may be NULL. One body for
 * both kernels below (every work-item calls it: it ends in a barrier). */
inline void cgf_update_rows(const int n, const real alpha, const real beta, const int run,
                            __global real *restrict p, __global const real *restrict q,
                            __global real *restrict x, __global real *restrict r,
                            __global const real *d, __global acc_t *restrict partial,
                            __local acc_t *scratch)
{
    acc_t rz = 0, rzl = 0, rr = 0, rrl = 0;
    if (d) {
        CLS_EACH(i, n, run) {
            const real pi = p[i];
            x[i] += alpha * pi;
            const real ri = r[i] - alpha * q[i];
            r[i] = ri;
            const real zi = d[i] * ri;
            p[i] = zi + beta * pi;
            cls_acc2_dot(&rz, &rzl, (acc_t)ri, (acc_t)zi);
            cls_acc2_dot(&rr, &rrl, (acc_t)ri, (acc_t)ri);
        }
    } else {
        CLS_EACH(i, n, run) {
            const real pi = p[i];
            x[i] += alpha * pi;
            const real ri = r[i] - alpha * q[i];
            r[i] = ri;
            p[i] = ri + beta * pi;
            cls_acc2_dot(&rr, &rrl, (acc_t)ri, (acc_t)ri);
        }
        rz = rr;
        rzl = rrl;
    }
    cls_write_pairs2(partial, scratch, rz, rzl, rr, rrl);
}

/* alpha, beta from the device (sc: the device-scalar loop writes them) */
__kernel void cgf_update(const int n, __global const acc_t *restrict sc,
                         __global const int *restrict ctl, __global real *restrict p,
                         __global const real *restrict q, __global real *restrict x,
                         __global real *restrict r, __global const real *d,
                         __global acc_t *restrict partial, __local acc_t *scratch)
{
    const int run = ctl[0] == CGF_RUN; /* no early return: see real.cl */
    cgf_update_rows(n, (real)sc[0], (real)sc[1], run, p, q, x, r, d, partial, scratch);
}

/* alpha, beta from the host as arguments (a distributed part, la_cgp.c):
 * no copy to the device ahead of the launch */
__kernel void cgf_update_args(const int n, const acc_t alpha, const acc_t beta,
                              __global const int *restrict ctl, __global real *restrict p,
                              __global const real *restrict q, __global real *restrict x,
                              __global real *restrict r, __global const real *d,
                              __global acc_t *restrict partial, __local acc_t *scratch)
{
    const int run = ctl[0] == CGF_RUN;
    cgf_update_rows(n, (real)alpha, (real)beta, run, p, q, x, r, d, partial, scratch);
}

/* r = b - q ; partial[g] = r'r (the true residual, q = A x) */
__kernel void residual(const int n, __global const real *restrict b,
                       __global const real *restrict q, __global real *restrict r,
                       __global acc_t *restrict partial, __local acc_t *scratch)
{
    acc_t rr = 0;
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        const real ri = b[i] - q[i];
        r[i] = ri;
        rr += (acc_t)ri * (acc_t)ri;
    }
    cls_group_sum_to(scratch, partial, rr);
}
