/*
 * springs_ref.c: one step of the mass-spring body on the CPU, in double
 * and sequentially in colour order (the reference the device is tested
 * against; model in springs.h), the shape-matching rotation both sides
 * use, and the energy and strain measures.
 *
 * Shape matching (Mueller, Heidelberger, Teschner and Gross 2005,
 * "Meshless deformations based on shape matching"): with the rest offsets
 * q_i = x0_i - c0 (c0 the rest centre of mass), the optimal rigid fit of
 * the current positions is c = sum m x / M and the rotation R of
 * A = sum m_i (x_i - c) q_i^T (formed from x - c, not x, so that a body
 * far from the origin loses nothing to cancellation in float);
 * free particles move a fraction alpha towards the goals R q_i + c. R is
 * found as Mueller, Bender, Chentanez and Macklin 2016 ("A robust method
 * to extract the rotational part of deformations") do: from the last
 * step's quaternion, rotate by omega = sum_k r_k x a_k / (|sum_k r_k . a_k|
 * + 1e-9) (r_k, a_k the columns of R and A) until |omega| is tiny, at most
 * 20 times; it never fails on a flat or inverted A.
 */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "springs.h"

/* ---- rotation -------------------------------------------------------------- */

static void springs_quat_matrix(const double q[4], double R[9])
{
    double w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

void springs_rotation_of(const double A[9], double q[4])
{
    for (int it = 0; it < 20; it++) {
        double R[9];
        springs_quat_matrix(q, R);
        /* omega = sum_k col_k(R) x col_k(A) / (|sum_k col_k(R) . col_k(A)| + 1e-9) */
        double om[3] = {0, 0, 0}, dot = 0;
        for (int k = 0; k < 3; k++) {
            double r[3] = {R[k], R[3 + k], R[6 + k]}, a[3] = {A[k], A[3 + k], A[6 + k]};
            om[0] += r[1] * a[2] - r[2] * a[1];
            om[1] += r[2] * a[0] - r[0] * a[2];
            om[2] += r[0] * a[1] - r[1] * a[0];
            dot += r[0] * a[0] + r[1] * a[1] + r[2] * a[2];
        }
        double inv = 1.0 / (fabs(dot) + 1e-9);
        for (int c = 0; c < 3; c++)
            om[c] *= inv;
        double w = sqrt(om[0] * om[0] + om[1] * om[1] + om[2] * om[2]);
        if (w < 1e-9)
            break;
        /* q <- (rotation by w about omega / w) q, normalised */
        double h = 0.5 * w, s = sin(h) / w;
        double p[4] = {cos(h), om[0] * s, om[1] * s, om[2] * s};
        double n[4] = {p[0] * q[0] - p[1] * q[1] - p[2] * q[2] - p[3] * q[3],
                       p[0] * q[1] + p[1] * q[0] + p[2] * q[3] - p[3] * q[2],
                       p[0] * q[2] - p[1] * q[3] + p[2] * q[0] + p[3] * q[1],
                       p[0] * q[3] + p[1] * q[2] - p[2] * q[1] + p[3] * q[0]};
        double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2] + n[3] * n[3]);
        for (int c = 0; c < 4; c++)
            q[c] = n[c] / l;
    }
}

/* ---- the pieces of a step ------------------------------------------------------ */

/* x_i += alpha (R q_i + c - x_i) for free particles. */
static void springs_shape_ref(springs_model *s, double alpha)
{
    double M = 0, c[3] = {0, 0, 0}, c0[3] = {0, 0, 0};
    for (int64_t i = 0; i < s->np; i++) {
        M += s->m[i];
        for (int k = 0; k < 3; k++) {
            c[k] += s->m[i] * s->x[3 * i + k];
            c0[k] += s->m[i] * s->x0[3 * i + k];
        }
    }
    if (!(M > 0))
        return;
    for (int k = 0; k < 3; k++) {
        c[k] /= M;
        c0[k] /= M;
    }
    double A[9] = {0};
    for (int64_t i = 0; i < s->np; i++)
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++)
                A[3 * r + k] += s->m[i] * (s->x[3 * i + r] - c[r]) * (s->x0[3 * i + k] - c0[k]);
    springs_rotation_of(A, s->q);
    double R[9];
    springs_quat_matrix(s->q, R);
    for (int64_t i = 0; i < s->np; i++) {
        if (s->w[i] == 0.0)
            continue;
        double q[3] = {s->x0[3 * i] - c0[0], s->x0[3 * i + 1] - c0[1], s->x0[3 * i + 2] - c0[2]};
        for (int r = 0; r < 3; r++) {
            double g = R[3 * r] * q[0] + R[3 * r + 1] * q[1] + R[3 * r + 2] * q[2] + c[r];
            s->x[3 * i + r] += alpha * (g - s->x[3 * i + r]);
        }
    }
}

/* Pushes x out of one solid collider: returns the depth d > 0 and the
 * contact normal n when it was inside, 0 otherwise. */
static double springs_push_out(const springs_collider *c, double *x, double n[3])
{
    const double *a = c->a;
    if (c->type == SPRINGS_PLANE) {
        double sd = (x[0] - a[0]) * a[3] + (x[1] - a[1]) * a[4] + (x[2] - a[2]) * a[5];
        if (!(sd < 0.0))
            return 0.0;
        for (int k = 0; k < 3; k++) {
            n[k] = a[3 + k];
            x[k] -= sd * n[k];
        }
        return -sd;
    }
    if (c->type == SPRINGS_SPHERE) {
        double d[3] = {x[0] - a[0], x[1] - a[1], x[2] - a[2]};
        double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        if (!(r < a[3]))
            return 0.0;
        for (int k = 0; k < 3; k++)
            n[k] = r > 0.0 ? d[k] / r : (k == 1 ? 1.0 : 0.0);
        for (int k = 0; k < 3; k++)
            x[k] = a[k] + a[3] * n[k];
        return a[3] - r;
    }
    /* box: out through the nearest face */
    for (int k = 0; k < 3; k++)
        if (!(x[k] > a[k] && x[k] < a[3 + k]))
            return 0.0;
    int face = 0;
    double best = INFINITY;
    for (int k = 0; k < 3; k++) {
        double lo = x[k] - a[k], hi = a[3 + k] - x[k];
        if (lo < best)
            best = lo, face = 2 * k;
        if (hi < best)
            best = hi, face = 2 * k + 1;
    }
    int axis = face / 2;
    n[0] = n[1] = n[2] = 0.0;
    n[axis] = face % 2 ? 1.0 : -1.0;
    x[axis] = face % 2 ? a[3 + axis] : a[axis];
    return best;
}

/* Coulomb friction on the step's tangential motion t = (x - x_prev) minus
 * its normal part: sticks when |t| <= mu d, else t shortened by mu d. */
static void springs_friction(double *x, const double *xp, const double n[3], double depth,
                             double mu)
{
    double v[3] = {x[0] - xp[0], x[1] - xp[1], x[2] - xp[2]};
    double vn = v[0] * n[0] + v[1] * n[1] + v[2] * n[2];
    double t[3] = {v[0] - vn * n[0], v[1] - vn * n[1], v[2] - vn * n[2]};
    double lt = sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
    if (!(lt > 0.0))
        return;
    double f = lt <= mu * depth ? 1.0 : mu * depth / lt;
    for (int k = 0; k < 3; k++)
        x[k] -= f * t[k];
}

static void springs_collide_ref(springs_model *s, const springs_params *p)
{
    springs_collider cs[SPRINGS_MAX_COLLIDERS + 1];
    int nc = springs_colliders(p, cs);
    if (!nc)
        return;
    for (int64_t i = 0; i < s->np; i++) {
        if (s->w[i] == 0.0)
            continue;
        double *x = s->x + 3 * i;
        for (int c = 0; c < nc; c++) {
            double n[3];
            double depth = springs_push_out(&cs[c], x, n);
            if (depth > 0.0 && p->friction > 0.0)
                springs_friction(x, s->xprev + 3 * i, n, depth, p->friction);
        }
    }
}

/* Spring t's correction from the positions x: c = S k diff D added to
 * xi_out at i (times w_i / (w_i + w_j)) and taken from xj_out at j;
 * nothing when |D| = 0 or both ends are pinned. Gauss-Seidel passes the
 * positions themselves as all three, Jacobi its sums (springs_jacobi_ref). */
static void springs_project_ref(const springs_model *s, const double *x, int64_t t, double S,
                                double *xi_out, double *xj_out)
{
    int32_t i = s->ij[2 * t], j = s->ij[2 * t + 1];
    const double *xi = x + 3 * (int64_t)i, *xj = x + 3 * (int64_t)j;
    double wi = s->w[i], wj = s->w[j], wsum = wi + wj;
    double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
    double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (!(len > 0.0) || !(wsum > 0.0))
        return;
    double f = S * s->k[t] * ((len - s->rest[t]) / len);
    for (int c = 0; c < 3; c++) {
        double corr = f * d[c];
        xi_out[3 * (int64_t)i + c] += corr * (wi / wsum);
        xj_out[3 * (int64_t)j + c] -= corr * (wj / wsum);
    }
}

/* Sweep k of a step under the Jacobi projection: every spring's
 * correction from the sweep's starting positions q^k summed per particle
 * (s->jacobi: 3 np sums, np counts, then 3 np holding q^(k-1)), then
 *   y_i = q^k_i + omega / n_i * sum_i    (free particles with n_i > 0;
 *                                         y_i = q^k_i for the others)
 *   q^(k+1)_i = w_k (y_i - q^(k-1)_i) + q^(k-1)_i
 * with w_k the Chebyshev weight (springs_chebyshev_weight; 1 without
 * it, when q^(k+1) = y and q^(k-1) is not read). */
static void springs_jacobi_ref(springs_model *s, const springs_params *p, int k, double *w)
{
    assert(s->jacobi); /* springs_color sizes it */
    double *sum = s->jacobi, *cnt = s->jacobi + 3 * s->np, *xold = s->jacobi + 4 * s->np;
    *w = springs_chebyshev_weight(p, k, *w);
    double omega = springs_jacobi_omega(p);
    memset(s->jacobi, 0, 4 * (size_t)s->np * sizeof *s->jacobi);
    for (int64_t t = 0; t < s->ns; t++) {
        springs_project_ref(s, s->x, t, p->S, sum, sum);
        cnt[s->ij[2 * t]] += 1.0;
        cnt[s->ij[2 * t + 1]] += 1.0;
    }
    for (int64_t i = 0; i < s->np; i++)
        for (int c = 0; c < 3; c++) {
            double q = s->x[3 * i + c], y = q;
            if (s->w[i] != 0.0 && cnt[i] > 0.0)
                y += omega / cnt[i] * sum[3 * i + c];
            if (*w != 1.0 && s->w[i] != 0.0)
                y = *w * (y - xold[3 * i + c]) + xold[3 * i + c];
            xold[3 * i + c] = q;
            s->x[3 * i + c] = y;
        }
}

void springs_step_ref(springs_model *s, const springs_params *p)
{
    /* (2-d) x - (1-d) x_prev = x + (1-d)(x - x_prev), the form the kernel
     * uses (see springs.cl) */
    double c2 = 1.0 - p->d;
    double ay = -p->gravity * p->dt * p->dt;
    for (int64_t i = 0; i < s->np; i++) {
        if (s->w[i] == 0.0)
            continue;
        double *x = s->x + 3 * i, *q = s->xprev + 3 * i;
        for (int c = 0; c < 3; c++) {
            double nx = x[c] + c2 * (x[c] - q[c]) + (c == 1 ? ay : 0.0);
            q[c] = x[c];
            x[c] = nx;
        }
    }
    double cw = 1.0;
    for (int it = 0; it < p->iterations; it++) {
        if (p->projection == SPRINGS_PROJECT_JACOBI)
            springs_jacobi_ref(s, p, it, &cw);
        else
            for (int64_t t = 0; t < s->ns; t++)
                springs_project_ref(s, s->x, t, p->S, s->x, s->x);
        if (p->shape > 0.0)
            springs_shape_ref(s, p->shape);
        springs_collide_ref(s, p);
    }
}

/* ---- energy and strain ------------------------------------------------------------ */

/* RMS distance of the particles from the best rigid placement of the rest
 * shape (centre of mass and the rotation of A, refined from the body's
 * last quaternion), over the bounding-box diagonal of the rest shape: how
 * much of the shape was lost, whatever the body's position and turn. */
static double springs_shape_error(const springs_model *s)
{
    double M = 0, c[3] = {0, 0, 0}, c0[3] = {0, 0, 0}, lo[3], hi[3];
    for (int k = 0; k < 3; k++)
        lo[k] = INFINITY, hi[k] = -INFINITY;
    for (int64_t i = 0; i < s->np; i++) {
        M += s->m[i];
        for (int k = 0; k < 3; k++) {
            c[k] += s->m[i] * s->x[3 * i + k];
            c0[k] += s->m[i] * s->x0[3 * i + k];
            lo[k] = fmin(lo[k], s->x0[3 * i + k]);
            hi[k] = fmax(hi[k], s->x0[3 * i + k]);
        }
    }
    if (!(M > 0))
        return 0.0;
    for (int k = 0; k < 3; k++)
        c[k] /= M, c0[k] /= M;
    double A[9] = {0}, q[4] = {s->q[0], s->q[1], s->q[2], s->q[3]}, R[9];
    for (int64_t i = 0; i < s->np; i++)
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++)
                A[3 * r + k] += s->m[i] * (s->x[3 * i + r] - c[r]) * (s->x0[3 * i + k] - c0[k]);
    for (int rep = 0; rep < 10; rep++) /* 200 refinements at most: converged from any start */
        springs_rotation_of(A, q);
    springs_quat_matrix(q, R);
    double ss = 0;
    for (int64_t i = 0; i < s->np; i++) {
        double d0[3] = {s->x0[3 * i] - c0[0], s->x0[3 * i + 1] - c0[1], s->x0[3 * i + 2] - c0[2]};
        for (int r = 0; r < 3; r++) {
            double g = R[3 * r] * d0[0] + R[3 * r + 1] * d0[1] + R[3 * r + 2] * d0[2] + c[r];
            ss += s->m[i] * (s->x[3 * i + r] - g) * (s->x[3 * i + r] - g);
        }
    }
    double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                       (hi[2] - lo[2]) * (hi[2] - lo[2]));
    return diag > 0 ? sqrt(ss / M) / diag : 0.0;
}

void springs_measure(const springs_model *s, const springs_params *p, springs_energy *e)
{
    memset(e, 0, sizeof *e);
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < s->np; i++) {
        const double *x = s->x + 3 * i, *q = s->xprev + 3 * i;
        double v2 = 0;
        for (int c = 0; c < 3; c++)
            v2 += (x[c] - q[c]) * (x[c] - q[c]);
        e->kinetic += 0.5 * s->m[i] * v2 / (p->dt * p->dt);
        e->potential += s->m[i] * p->gravity * x[1];
        lo = fmin(lo, x[1]);
        hi = fmax(hi, x[1]);
    }
    double ss = 0;
    for (int64_t t = 0; t < s->ns; t++) {
        const double *xi = s->x + 3 * (int64_t)s->ij[2 * t],
                     *xj = s->x + 3 * (int64_t)s->ij[2 * t + 1];
        double d[3] = {xj[0] - xi[0], xj[1] - xi[1], xj[2] - xi[2]};
        double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        double ext = len - s->rest[t];
        e->elastic += 0.5 * s->k[t] * ext * ext;
        double strain = s->rest[t] > 0 ? ext / s->rest[t] : 0.0;
        ss += strain * strain;
        e->max_strain = fmax(e->max_strain, fabs(strain));
    }
    e->rms_strain = s->ns ? sqrt(ss / (double)s->ns) : 0.0;
    e->height = s->np ? hi - lo : 0.0;
    e->min_y = s->np ? lo : 0.0;
    e->shape_error = springs_shape_error(s);
}
