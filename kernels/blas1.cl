/*
 * blas1.cl: the vector updates, each a grid-stride loop that reads every
 * input once and writes every output once (coalesced: neighbouring
 * work-items touch neighbouring elements at every step).
 * No `restrict`: in-place calls (x == y) stay well defined.
 * Scalars are `real`, so the host passes sizeof(real) bytes.
 */

/* y = y + a x */
__kernel void axpy(const int n, const real a, __global const real *x,
                   __global real *y)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0))
        y[i] += a * x[i];
}

/* y = x + a y */
__kernel void xpay(const int n, __global const real *x, const real a,
                   __global real *y)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0))
        y[i] = x[i] + a * y[i];
}

/* y = x */
__kernel void copy(const int n, __global const real *x, __global real *y)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0))
        y[i] = x[i];
}

/* y = a */
__kernel void fill(const int n, const real a, __global real *y)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0))
        y[i] = a;
}

/* z = d .* r  (Jacobi: d holds the inverted diagonal) */
__kernel void pointwise(const int n, __global const real *d,
                        __global const real *r, __global real *z)
{
    for (int i = (int)get_global_id(0); i < n; i += (int)get_global_size(0))
        z[i] = d[i] * r[i];
}
