/*
 * pipecg.cl: the vector updates of pipelined CG (Ghysels and Vanroose,
 * "Hiding global synchronization latency in the preconditioned Conjugate
 * Gradient algorithm", Parallel Computing 40 (2014), Algorithm 4; PETSc's
 * KSPPIPECG), fused into one pass that also leaves the partial sums of the
 * next iteration's three dots (compensated, cls_acc2_dot and cls_store3 from
 * dcg.cl, so the sums do not depend on the partition):
 *
 *   z = n + beta z ; q = m + beta q ; s = w + beta s ; p = u + beta p
 *   x += alpha p ; r -= alpha s ; u -= alpha q ; w -= alpha z
 *   sums: gamma = r'u, delta = w'u, rr = r'r      (of the updated vectors)
 *
 * Without a preconditioner u = r, m = w and q = s, so pipecg_update drops
 * u, m and q: it reads n, w, z, s, p, x, r (7 vectors) and writes 6.
 * With Jacobi (M = D^-1), pipecg_update_jacobi reads 10 and writes 8.
 */

__kernel void pipecg_update(const int len, const real alpha, const real beta,
                            __global const real *restrict nv, __global real *restrict w,
                            __global real *restrict z, __global real *restrict s,
                            __global real *restrict p, __global real *restrict x,
                            __global real *restrict r, __global acc_t *restrict partial,
                            __local acc_t *scratch)
{
    acc_t hi[3] = {0, 0, 0}, lo[3] = {0, 0, 0};
    for (int i = (int)get_global_id(0); i < len; i += (int)get_global_size(0)) {
        const real zi = nv[i] + beta * z[i];  /* z = n + beta z */
        const real wi0 = w[i];
        const real si = wi0 + beta * s[i];    /* s = w + beta s */
        const real ri0 = r[i];
        const real pi = ri0 + beta * p[i];    /* p = u + beta p, u = r */
        z[i] = zi;
        s[i] = si;
        p[i] = pi;
        x[i] += alpha * pi;                   /* x += alpha p */
        const real ri = ri0 - alpha * si;     /* r -= alpha s */
        const real wi = wi0 - alpha * zi;     /* w -= alpha z */
        r[i] = ri;
        w[i] = wi;
        cls_acc2_dot(&hi[0], &lo[0], (acc_t)ri, (acc_t)ri); /* gamma = r'u = r'r */
        cls_acc2_dot(&hi[1], &lo[1], (acc_t)wi, (acc_t)ri); /* delta = w'u */
    }
    hi[2] = hi[0];                                          /* rr = gamma */
    lo[2] = lo[0];
    cls_store3(scratch, hi, lo, partial);
}

/* u = D^-1 r, m = D^-1 w (computed by the caller before the SpMV n = A m) */
__kernel void pipecg_update_jacobi(const int len, const real alpha, const real beta,
                                   __global const real *restrict nv,
                                   __global const real *restrict m, __global real *restrict w,
                                   __global real *restrict z, __global real *restrict q,
                                   __global real *restrict s, __global real *restrict p,
                                   __global real *restrict x, __global real *restrict r,
                                   __global real *restrict u, __global acc_t *restrict partial,
                                   __local acc_t *scratch)
{
    acc_t hi[3] = {0, 0, 0}, lo[3] = {0, 0, 0};
    for (int i = (int)get_global_id(0); i < len; i += (int)get_global_size(0)) {
        const real zi = nv[i] + beta * z[i];  /* z = n + beta z */
        const real qi = m[i] + beta * q[i];   /* q = m + beta q */
        const real wi0 = w[i];
        const real si = wi0 + beta * s[i];    /* s = w + beta s */
        const real ui0 = u[i];
        const real pi = ui0 + beta * p[i];    /* p = u + beta p */
        z[i] = zi;
        q[i] = qi;
        s[i] = si;
        p[i] = pi;
        x[i] += alpha * pi;                   /* x += alpha p */
        const real ri = r[i] - alpha * si;    /* r -= alpha s */
        const real ui = ui0 - alpha * qi;     /* u -= alpha q */
        const real wi = wi0 - alpha * zi;     /* w -= alpha z */
        r[i] = ri;
        u[i] = ui;
        w[i] = wi;
        cls_acc2_dot(&hi[0], &lo[0], (acc_t)ri, (acc_t)ui); /* gamma = r'u */
        cls_acc2_dot(&hi[1], &lo[1], (acc_t)wi, (acc_t)ui); /* delta = w'u */
        cls_acc2_dot(&hi[2], &lo[2], (acc_t)ri, (acc_t)ri); /* rr = r'r */
    }
    cls_store3(scratch, hi, lo, partial);
}
