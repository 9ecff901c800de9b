/*
 * cg_batch.cl: many small systems in one launch, one work-group each
 * (`clsolve solve A1.mtx A2.mtx ...`; kernels/la_cgb.c is the host side,
 * solver/krylov/cg_batch.c the driver).
 *
 * Why: one small system leaves a GPU idle even in one launch (cg_small.cl:
 * one work-group is one multiprocessor of 132). A batch fills the others:
 * Ginkgo's batch::solver::Cg runs one block per system, for systems of one
 * sparsity pattern (Kashi, Nayak, Kulkarni et al., IPDPS 2022). Here the
 * systems may differ in size and pattern: the batch is ONE block-diagonal
 * CSR matrix. System s owns rows [row0[s], row0[s+1]) and its column
 * indices point into the same range (the host shifted them), so every
 * vector of the batch is one array and work-group s touches only its rows.
 *
 * Each group runs cgs_run's recurrence, with cg_small.cl's own pieces
 * (cgs_spmv_rows, cgs_step, cgs_update_rows, cgs_direction_rows; Hestenes and Stiefel,
 * J. Res. NBS 49 (1952); Saad, Algorithm 9.1, Jacobi or none; the same two
 * group tree reductions of compensated pairs) from x to its own end, in
 * this one launch:
 *   q = A x; r = b - q; z = D^-1 r; p = z       the start, rz = r'z, rr = r'r
 *   loop: q = A p; pq = p'q
 *         rr <= stop2[s] -> converged; NaN/Inf -> nan_or_inf; pq <= 0 -> indefinite
 *         alpha = rz / pq; x += alpha p; r -= alpha q
 *         rz' = r'z, rr' = r'r; beta = rz' / rz; p = z + beta p
 * until maxit[s] iterations (state "run" then). No record ring: a batch is
 * not monitored per iteration. The end goes to state[2s] = stop code,
 * state[2s+1] = iterations, sums[3s..] = {rr, rz, the last p'Ap}. A group whose state is
 * not "run" on entry does nothing: the host restarts only the systems whose
 * true residual failed the confirmation (or a batch continues after one).
 *
 * Uniform control flow inside a group (every work-item reads the same
 * state and the same reduced sums), so all reach every barrier.
 */

/* the stop codes are cg_small.cl's (CGS_*, la.h's LA_CGF_*): this file is
 * built after it, in the same program, and runs its pieces */
#define CGB_RUN CGS_RUN

__kernel void cgb_run(__global const int *restrict row0, __global const int *restrict rowptr,
                      __global const int *restrict col, __global const mat_t *restrict val,
                      __global const real *restrict b, __global real *restrict x,
                      __global real *restrict r, __global real *restrict p,
                      __global real *restrict q, __global const real *d,
                      __global const acc_t *restrict stop2, __global const int *restrict maxit,
                      __global int *restrict state, __global acc_t *restrict sums,
                      __local acc_t *scratch)
{
#pragma OPENCL FP_CONTRACT OFF
    const int s = (int)get_group_id(0);
    const int lid = (int)get_local_id(0), ls = (int)get_local_size(0);
    const int lo = row0[s], hi = row0[s + 1];
    const int go = state[2 * s] == CGB_RUN; /* uniform in the group */
    const int k0 = state[2 * s + 1], kmax = maxit[s];
    const acc_t s2 = stop2[s];
    /* every work-item has read the state before work-item 0 rewrites it */
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (go) {
        /* the start: r = b - A x; p = z; the pairs r'z, r'r */
        acc_t a[4] = {0, 0, 0, 0};
        for (int row = lo + lid; row < hi; row += ls) {
            const int end = rowptr[row + 1];
            real sum = 0;
            for (int j = rowptr[row]; j < end; j++)
                sum += (real)val[j] * x[col[j]];
            const real ri = b[row] - sum;
            const real zi = d ? d[row] * ri : ri;
            r[row] = ri;
            p[row] = zi;
            cls_acc2_dot(&a[0], &a[1], (acc_t)ri, (acc_t)zi);
            cls_acc2_dot(&a[2], &a[3], (acc_t)ri, (acc_t)ri);
        }
        acc_t rz, rr;
        cls_group_pairs2(scratch, a, &rz, &rr);
        barrier(CLK_GLOBAL_MEM_FENCE); /* p complete before the SpMV reads it */
        int k = k0, stop = CGB_RUN;
        acc_t pq_last = 0;
        while (stop == CGB_RUN && k < kmax) {
            /* q = A p; p'q (cg_small.cl's pieces, over this system's rows) */
            acc_t c[4] = {0, 0, 0, 0};
            cgs_spmv_rows(lo, hi, lid, ls, rowptr, col, val, p, q, d, 0, c);
            acc_t pq, unused;
            cls_group_pairs2(scratch, c, &pq, &unused);
            pq_last = pq;
            acc_t alpha;
            stop = cgs_step(rr, rz, pq, s2, &alpha);
            if (stop != CGB_RUN)
                break; /* uniform: x stays x_k */
            acc_t u[4] = {0, 0, 0, 0};
            cgs_update_rows(lo, hi, lid, ls, (real)alpha, x, r, p, q, d, u);
            acc_t rz1, rr1;
            cls_group_pairs2(scratch, u, &rz1, &rr1);
            /* beta = r_{k+1}'z_{k+1} / r_k'z_k; p = z + beta p */
            cgs_direction_rows(lo, hi, lid, ls, (real)(rz1 / rz), r, p, d);
            rz = rz1;
            rr = rr1;
            k++;
            /* p (every row of this system) complete before the next SpMV */
            barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        }
        if (lid == 0) {
            state[2 * s] = stop;
            state[2 * s + 1] = k;
            sums[3 * s] = rr;
            sums[3 * s + 1] = rz;
            sums[3 * s + 2] = pq_last;
        }
    }
}
