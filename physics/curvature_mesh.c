/*
 * curvature_mesh.c: the meshes the curvature tests and benchmarks measure
 * against analytic values (see curvature.h): the saddle z = x^2 - y^2, the
 * icosphere, a torus, and an irregular sphere (icosphere vertices slid
 * along the sphere at random, the triangle shapes of a scan).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "curvature.h"

static int mesh_alloc(mesh *m, int64_t nv, int64_t nf, cls_error *err)
{
    mesh_init(m);
    m->v = malloc((size_t)(nv ? nv : 1) * 3 * sizeof(double));
    m->tri = malloc((size_t)(nf ? nf : 1) * 3 * sizeof(int32_t));
    if (!m->v || !m->tri) {
        mesh_free(m);
        return cls_fail(err, CLS_EOTHER, "out of memory for a mesh of %lld vertices",
                        (long long)nv);
    }
    m->nverts = nv;
    m->nfaces = nf;
    return CLS_OK;
}

int curv_mesh_saddle(int k, double a, mesh *m, cls_error *err)
{
    if (k < 2 || (int64_t)k * k >= INT32_MAX / 2)
        return cls_fail(err, CLS_EUSAGE, "saddle grid size %d is not in [2, 32767]", k);
    int64_t nv = (int64_t)k * k, nf = 2 * (int64_t)(k - 1) * (k - 1);
    int rc = mesh_alloc(m, nv, nf, err);
    if (rc)
        return rc;
    double h = 2.0 * a / (k - 1);
    for (int j = 0; j < k; j++)
        for (int i = 0; i < k; i++) {
            double x = -a + h * i, y = -a + h * j;
            double *p = m->v + 3 * ((int64_t)j * k + i);
            p[0] = x;
            p[1] = y;
            p[2] = x * x - y * y;
        }
    int32_t *t = m->tri;
    for (int j = 0; j + 1 < k; j++)
        for (int i = 0; i + 1 < k; i++) {
            int32_t v00 = j * k + i, v10 = v00 + 1, v01 = v00 + k, v11 = v01 + 1;
            *t++ = v00, *t++ = v10, *t++ = v11; /* counter-clockwise from +z */
            *t++ = v00, *t++ = v11, *t++ = v01;
        }
    return CLS_OK;
}

void curv_saddle_exact(double x, double y, double *H, double *K)
{
    double W2 = 1.0 + 4.0 * x * x + 4.0 * y * y;
    double W = sqrt(W2);
    *H = 4.0 * (x * x - y * y) / (W2 * W);
    *K = -4.0 / (W2 * W2);
}

/* Edge-midpoint table for the icosphere: open addressing on (lo, hi). */
typedef struct {
    int64_t key;
    int32_t v;
} mid_slot;

int curv_mesh_icosphere(int level, double R, mesh *m, cls_error *err)
{
    if (level < 0 || level > 9 || !(R > 0.0))
        return cls_fail(err, CLS_EUSAGE, "icosphere level %d (0..9) or radius %g is invalid", level,
                        R);
    const double g = (1.0 + sqrt(5.0)) / 2.0;
    static const int32_t f0[20][3] = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11},
                                      {1, 5, 9},  {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
                                      {3, 9, 4},  {3, 4, 2},  {3, 2, 6},   {3, 6, 8},  {3, 8, 9},
                                      {4, 9, 5},  {2, 4, 11}, {6, 2, 10},  {8, 6, 7},  {9, 8, 1}};
    const double v0[12][3] = {{-1, g, 0}, {1, g, 0}, {-1, -g, 0}, {1, -g, 0},
                              {0, -1, g}, {0, 1, g}, {0, -1, -g}, {0, 1, -g},
                              {g, 0, -1}, {g, 0, 1}, {-g, 0, -1}, {-g, 0, 1}};
    int64_t nf = 20, nv = 12;
    for (int l = 0; l < level; l++)
        nf *= 4;
    int64_t nv_final = nf / 2 + 2; /* Euler: V - 3F/2 + F = 2 */
    int rc = mesh_alloc(m, nv_final, nf, err);
    if (rc)
        return rc;
    for (int i = 0; i < 12; i++)
        for (int c = 0; c < 3; c++)
            m->v[3 * i + c] = v0[i][c];
    memcpy(m->tri, f0, sizeof f0);
    int64_t cur_f = 20;
    int32_t *next = malloc((size_t)nf * 3 * sizeof(int32_t));
    size_t cap = 1;
    while (cap < (size_t)(3 * nf))
        cap *= 2;
    mid_slot *tab = malloc(cap * sizeof *tab);
    if (!next || !tab) {
        free(next);
        free(tab);
        mesh_free(m);
        return cls_fail(err, CLS_EOTHER, "out of memory for the icosphere");
    }
    for (int l = 0; l < level; l++) {
        for (size_t s = 0; s < cap; s++)
            tab[s].key = -1;
        for (int64_t f = 0; f < cur_f; f++) {
            int32_t c[3], mid[3];
            for (int j = 0; j < 3; j++)
                c[j] = m->tri[3 * f + j];
            for (int j = 0; j < 3; j++) {
                int32_t a = c[j], b = c[(j + 1) % 3];
                int64_t lo = a < b ? a : b, hi = a < b ? b : a;
                int64_t key = lo * 2147483647LL + hi;
                size_t s = (size_t)((uint64_t)key * 0x9E3779B97F4A7C15ULL >> 20) & (cap - 1);
                while (tab[s].key != -1 && tab[s].key != key)
                    s = (s + 1) & (cap - 1);
                if (tab[s].key == -1) {
                    tab[s].key = key;
                    tab[s].v = (int32_t)nv;
                    for (int q = 0; q < 3; q++)
                        m->v[3 * nv + q] = 0.5 * (m->v[3 * a + q] + m->v[3 * b + q]);
                    nv++;
                }
                mid[j] = tab[s].v;
            }
            int32_t *o = next + 12 * f;
            o[0] = c[0], o[1] = mid[0], o[2] = mid[2];
            o[3] = c[1], o[4] = mid[1], o[5] = mid[0];
            o[6] = c[2], o[7] = mid[2], o[8] = mid[1];
            o[9] = mid[0], o[10] = mid[1], o[11] = mid[2];
        }
        cur_f *= 4;
        memcpy(m->tri, next, (size_t)cur_f * 3 * sizeof(int32_t));
    }
    free(next);
    free(tab);
    for (int64_t i = 0; i < nv; i++) {
        double *p = m->v + 3 * i;
        double l = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
        for (int q = 0; q < 3; q++)
            p[q] *= R / l;
    }
    return CLS_OK;
}

int curv_mesh_torus(int nu, int nv, double R, double r, mesh *m, cls_error *err)
{
    if (nu < 3 || nv < 3 || (int64_t)nu * nv >= INT32_MAX / 4 || !(r > 0.0) || !(R > r))
        return cls_fail(err, CLS_EUSAGE, "torus %d x %d with R %g, r %g is invalid", nu, nv, R, r);
    int64_t n = (int64_t)nu * nv;
    int rc = mesh_alloc(m, n, 2 * n, err);
    if (rc)
        return rc;
    for (int i = 0; i < nu; i++)
        for (int j = 0; j < nv; j++) {
            double u = 2.0 * M_PI * i / nu, v = 2.0 * M_PI * j / nv;
            double *p = m->v + 3 * ((int64_t)i * nv + j);
            p[0] = (R + r * cos(v)) * cos(u);
            p[1] = (R + r * cos(v)) * sin(u);
            p[2] = r * sin(v);
        }
    int32_t *t = m->tri;
    for (int i = 0; i < nu; i++)
        for (int j = 0; j < nv; j++) {
            int32_t a = i * nv + j, b = ((i + 1) % nu) * nv + j;
            int32_t c = ((i + 1) % nu) * nv + (j + 1) % nv, d = i * nv + (j + 1) % nv;
            /* outward: (u, v) increasing is counter-clockwise seen from outside */
            *t++ = a, *t++ = b, *t++ = c;
            *t++ = a, *t++ = c, *t++ = d;
        }
    return CLS_OK;
}

void curv_torus_exact(double R, double r, const double p[3], double *H, double *K)
{
    /* the tube angle v from the point: distance from the axis is R + r cos v */
    double rho = sqrt(p[0] * p[0] + p[1] * p[1]);
    double cv = (rho - R) / r;
    cv = cv < -1 ? -1 : cv > 1 ? 1 : cv;
    *K = cv / (r * (R + r * cv));
    *H = (R + 2.0 * r * cv) / (2.0 * r * (R + r * cv));
}

/* splitmix64: seedable, independent of the C library */
static double curv_uniform(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

int curv_mesh_sphere_irregular(int level, double R, double jitter, uint64_t seed, mesh *m,
                               cls_error *err)
{
    int rc = curv_mesh_icosphere(level, R, m, err);
    if (rc)
        return rc;
    /* mean edge length of the icosphere: the scale of the slide */
    double sum = 0.0;
    for (int64_t f = 0; f < m->nfaces; f++)
        for (int c = 0; c < 3; c++) {
            const double *a = m->v + 3 * (int64_t)m->tri[3 * f + c];
            const double *b = m->v + 3 * (int64_t)m->tri[3 * f + (c + 1) % 3];
            sum += sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                        (a[2] - b[2]) * (a[2] - b[2]));
        }
    double h = sum / (3.0 * (double)m->nfaces);
    uint64_t st = seed;
    for (int64_t i = 0; i < m->nverts; i++) {
        double *p = m->v + 3 * i;
        double d[3];
        for (int c = 0; c < 3; c++)
            d[c] = (2.0 * curv_uniform(&st) - 1.0) * jitter * h;
        double q[3] = {p[0] + d[0], p[1] + d[1], p[2] + d[2]};
        double l = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
        for (int c = 0; c < 3; c++)
            p[c] = q[c] * R / l;
    }
    return CLS_OK;
}
