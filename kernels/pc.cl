/*
 * pc.cl: the device kernels of the preconditioners z = M^-1 r (the methods
 * and their papers are in solver/pc/pc_cheby.c and solver/pc/pc_ic0.c; the
 * host-side calls in kernels/la_pc.c). Every one is a grid-stride loop over
 * rows that reads each input once and writes each output once.
 *
 * Chebyshev (the three-term recurrence of the Chebyshev iteration on the
 * Jacobi-scaled system, Saad, "Iterative Methods for Sparse Linear Systems",
 * 2nd ed., Algorithm 12.1, as PETSc's KSPChebyshev):
 *   cheb_first:  d = c0 D^-1 r ;  z = d
 *   cheb_step:   res = res_in - q (q = A d) ;  d = c1 d + c2 D^-1 res ;  z += d
 * IC(0) triangular solves, z = L^-T L^-1 r, with L = D_L + N stored as N
 * (strictly triangular, CSR) and dl = 1 / diag(L):
 *   ic0_sweep:   y_out = dl .* (b - N y_in), y_in NULL meaning y_in = dl .* b
 *                (Jacobi sweeps on the triangular system: Anzt, Chow and
 *                Dongarra, "Iterative sparse triangular solves for
 *                preconditioning", Euro-Par 2015)
 *   ic0_level:   the same, exactly, on one level of the dependency graph
 *                (rows rows[first..first+count), whose dependencies are all
 *                in earlier levels: Anderson and Saad 1989; Naumov,
 *                NVIDIA NVR-2011-001)
 * N and dl are stored as `real`.
 */

__kernel void cheb_first(const int n, const real c0, __global const real *restrict dinv,
                         __global const real *restrict r, __global real *restrict d,
                         __global real *restrict z)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        const real di = c0 * dinv[i] * r[i];
        d[i] = di;
        z[i] = di;
    }
}

/* res_in may be r (the first step) or res itself (later steps) */
__kernel void cheb_step(const int n, const real c1, const real c2, __global const real *dinv,
                        __global const real *q, __global const real *res_in,
                        __global real *res, __global real *d, __global real *z)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
        const real ri = res_in[i] - q[i];
        const real di = c1 * d[i] + c2 * dinv[i] * ri;
        res[i] = ri;
        d[i] = di;
        z[i] += di;
    }
}

__kernel void ic0_sweep(const int n, __global const int *restrict rowptr,
                        __global const int *restrict col, __global const real *restrict val,
                        __global const real *restrict dl, __global const real *restrict b,
                        __global const real *yin, __global real *yout)
{
    if (yin) {
        for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
            real s = b[i];
            for (int j = rowptr[i]; j < rowptr[i + 1]; j++)
                s -= val[j] * yin[col[j]];
            yout[i] = dl[i] * s;
        }
    } else {
        for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0)) {
            real s = b[i];
            for (int j = rowptr[i]; j < rowptr[i + 1]; j++) {
                const int c = col[j];
                s -= val[j] * (dl[c] * b[c]);
            }
            yout[i] = dl[i] * s;
        }
    }
}

__kernel void ic0_level(const int first, const int count, __global const int *restrict rows,
                        __global const int *restrict rowptr, __global const int *restrict col,
                        __global const real *restrict val, __global const real *restrict dl,
                        __global const real *restrict b, __global real *y)
{
    for (int t = (int)get_global_id(0); t < count; t += (int)get_global_size(0)) {
        const int i = rows[first + t];
        real s = b[i];
        for (int j = rowptr[i]; j < rowptr[i + 1]; j++)
            s -= val[j] * y[col[j]];
        y[i] = dl[i] * s;
    }
}
