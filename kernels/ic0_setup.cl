/*
 * ic0_setup.cl: the IC(0) factor on the device by fixed-point sweeps
 * (Chow and Patel, "Fine-grained parallel incomplete LU factorization",
 * SIAM J. Sci. Comput. 37(2), 2015), for kernels/la_ic0s.c.
 *
 * IC(0)'s factor L (the pattern of tril(A)) is the fixed point of
 *   l_ij = (a_ij - sum_{k<j} l_ik l_jk) / l_jj      (j < i)
 *   l_ii = sqrt(a_ii (1 + shift) - sum_{k<i} l_ik^2)
 * The host computes it row by row in dependency order (solver/pc/pc_ic0.c);
 * here every entry is updated at once from the previous sweep's values
 * (Jacobi style, two buffers, so the result does not depend on the order
 * the work-items run in). After as many sweeps as the dependency graph has
 * levels the sweeps give the host's factor exactly (each sweep fixes one
 * more level); a few sweeps already give a factor whose preconditioner is
 * as good (Chow and Patel: 3 for the 3D Laplacian), with no level
 * schedule, no launch per level and no host pass.
 *
 * The factor is kept as la_tri wants it: the strict lower part in CSR
 * (srow, scol, value) and the diagonal apart (d, then dl = 1/d).
 */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

#define GSTRIDE_LOOP(i, n) for (int i = (int)get_global_id(0); i < (n); i += (int)get_global_size(0))

/* entries of row i left of the diagonal */
__kernel void ic0s_count(int n, __global const int *rp, __global const int *col,
                         __global int *cnt)
{
    GSTRIDE_LOOP(i, n)
    {
        int c = 0;
        for (int k = rp[i]; k < rp[i + 1]; k++)
            c += col[k] < i;
        cnt[i] = c;
    }
}

/* the strict lower part (in A's column order: sorted), a_ii, and the
 * starting guess l_ij = a_ij / sqrt(a_jj), l_ii = sqrt(a_ii); *bad = the
 * first row without a positive diagonal */
__kernel void ic0s_fill(int n, __global const int *rp, __global const int *col,
                        __global const double *val, __global const int *srow,
                        __global int *scol, __global double *sa, __global double *adiag,
                        __global int *bad)
{
    GSTRIDE_LOOP(i, n)
    {
        int p = srow[i];
        double d = 0.0;
        for (int k = rp[i]; k < rp[i + 1]; k++) {
            int j = col[k];
            if (j < i) {
                scol[p] = j;
                sa[p++] = val[k];
            } else if (j == i) {
                d = val[k];
            }
        }
        adiag[i] = d;
        if (!(d > 0.0))
            atomic_min(bad, i);
    }
}

__kernel void ic0s_guess(int n, __global const int *srow, __global const int *scol,
                         __global const double *sa, __global const double *adiag,
                         __global double *l, __global double *d)
{
    GSTRIDE_LOOP(i, n)
    {
        d[i] = sqrt(adiag[i]);
        for (int e = srow[i]; e < srow[i + 1]; e++)
            l[e] = sa[e] / sqrt(adiag[scol[e]]);
    }
}

/* one sweep: lout, dout from lin, din (every entry of row i from the last
 * sweep's values); *bad = the first row whose pivot is not above
 * 1e-12 a_ii (its d is kept at sqrt(a_ii) so the sweeps go on) */
__kernel void ic0s_sweep(int n, __global const int *srow, __global const int *scol,
                         __global const double *sa, __global const double *adiag, double shift,
                         __global const double *lin, __global const double *din,
                         __global double *lout, __global double *dout, __global int *bad)
{
    GSTRIDE_LOOP(i, n)
    {
        const int s = srow[i], e1 = srow[i + 1];
        double dd = adiag[i] * (1.0 + shift);
        for (int e = s; e < e1; e++) {
            const int j = scol[e];
            /* sum_{k<j} l_ik l_jk: row i's entries before e against row j */
            double acc = sa[e];
            int a = s, b = srow[j];
            const int bend = srow[j + 1];
            while (a < e && b < bend) {
                int ca = scol[a], cb = scol[b];
                if (ca == cb)
                    acc -= lin[a++] * lin[b++];
                else if (ca < cb)
                    a++;
                else
                    b++;
            }
            lout[e] = acc / din[j];
            dd -= lin[e] * lin[e];
        }
        if (!(dd > 1e-12 * adiag[i]) || !isfinite(dd)) {
            atomic_min(bad, i);
            dd = adiag[i];
        }
        dout[i] = sqrt(dd);
    }
}

/* dl = 1 / d, twice (L's and U's la_tri each own theirs) */
__kernel void ic0s_dl(int n, __global const double *d, __global double *dl,
                      __global double *dl2)
{
    GSTRIDE_LOOP(i, n)
    {
        double v = 1.0 / d[i];
        dl[i] = v;
        dl2[i] = v;
    }
}
