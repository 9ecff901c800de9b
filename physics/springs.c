/*
 * springs.c: building a mass-spring body (model in springs.h): particles
 * at the mesh vertices, springs by proximity through a uniform cell list
 * (cells at least the largest spring reach wide, so only the 27 cells
 * around a particle can hold its partners; the cell size grows when the
 * grid would have more cells than 4 per particle) or from the distinct
 * triangle edges, bending springs across interior edges, masses, pins and
 * the colouring.
 *
 * Colouring: greedy, each spring taking the smallest colour free at both
 * ends, found in a per-particle bit set of 2 max_degree - 1 bits, which the
 * greedy rule never exceeds (each end blocks at most max_degree - 1
 * colours). Two visiting orders are tried and the one with fewer colours
 * kept: (i, j) order, which meets the max-degree lower bound on regular
 * grids (Plano: 136), and a fixed pseudo-random order (splitmix64 from a
 * constant seed), which meets it on irregular bodies (Campa's Cochino
 * size, 6,475 particles, 450,381 springs, max degree 247: 301 colours in
 * (i, j) order, 247 shuffled); each colour is a barrier (or a launch) on
 * the device. Then a balancing pass moves springs from colours above the
 * mean size into colours below it that are free at both ends, so that a
 * work-group covers every colour in the same number of rounds (Cochino:
 * sizes 1,796..1,824 instead of 1..3,222).
 *
 * The CPU reference step is springs_ref.c, the device driver
 * springs_gpu.c, the run and the job springs_run.c.
 */
#include "springs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* springs a body may have: 24 bytes each on the host, 16 on the device */
#define SPRINGS_MAX ((int64_t)200 * 1000 * 1000)

const char *springs_projection_name(springs_projection p)
{
    return p == SPRINGS_PROJECT_JACOBI ? "jacobi" : "gauss-seidel";
}

int springs_projection_parse(const char *s, springs_projection *p)
{
    if (s && !strcmp(s, "gauss-seidel"))
        *p = SPRINGS_PROJECT_GAUSS_SEIDEL;
    else if (s && !strcmp(s, "jacobi"))
        *p = SPRINGS_PROJECT_JACOBI;
    else
        return -1;
    return 0;
}

double springs_jacobi_omega(const springs_params *p)
{
    return p->omega > 0.0 ? p->omega : SPRINGS_OMEGA_AUTO / p->S;
}

double springs_chebyshev_weight(const springs_params *p, int k, double prev)
{
    double r2 = p->rho * p->rho;
    if (!(p->rho > 0.0) || k < p->rho_delay)
        return 1.0;
    return k == p->rho_delay ? 2.0 / (2.0 - r2) : 4.0 / (4.0 - r2 * prev);
}

void springs_params_default(springs_params *p)
{
    memset(p, 0, sizeof *p);
    p->projection = SPRINGS_PROJECT_GAUSS_SEIDEL;
    p->omega = 0.0; /* auto: SPRINGS_OMEGA_AUTO / S */
    p->rho = 0.0;
    p->rho_delay = 1;
    p->S = 0.5;
    p->d = 0.01;
    p->dt = 0.01;
    p->gravity = 9.81;
    p->iterations = 1;
}

int springs_colliders(const springs_params *p, springs_collider *out)
{
    int n = 0;
    if (p->floor_on) {
        out[n].type = SPRINGS_PLANE;
        double a[6] = {0.0, p->floor_y, 0.0, 0.0, 1.0, 0.0};
        memcpy(out[n].a, a, sizeof a);
        n++;
    }
    for (int i = 0; i < p->ncolliders && n < SPRINGS_MAX_COLLIDERS + 1; i++)
        out[n++] = p->colliders[i];
    return n;
}

void springs_model_init(springs_model *s)
{
    memset(s, 0, sizeof *s);
    s->q[0] = 1.0;
}

void springs_model_free(springs_model *s)
{
    free(s->x);
    free(s->xprev);
    free(s->x0);
    free(s->w);
    free(s->m);
    free(s->ij);
    free(s->rest);
    free(s->k);
    free(s->color_off);
    free(s->jacobi);
    springs_model_init(s);
}

static int springs_oom(cls_error *err)
{
    return cls_fail(err, CLS_EOTHER, "springs: out of memory");
}

/* Particles at the mesh vertices, at rest, all free with unit inverse mass. */
static int springs_particles(const mesh *m, springs_model *s, cls_error *err)
{
    springs_model_init(s);
    if (m->nverts > INT32_MAX)
        return cls_fail(err, CLS_EINPUT, "springs: %lld particles is more than %d",
                        (long long)m->nverts, INT32_MAX);
    size_t n = (size_t)(m->nverts ? m->nverts : 1);
    s->np = m->nverts;
    s->x = malloc(3 * n * sizeof *s->x);
    s->xprev = malloc(3 * n * sizeof *s->xprev);
    s->x0 = malloc(3 * n * sizeof *s->x0);
    s->w = malloc(n * sizeof *s->w);
    s->m = malloc(n * sizeof *s->m);
    if (!s->x || !s->xprev || !s->x0 || !s->w || !s->m) {
        springs_model_free(s);
        return springs_oom(err);
    }
    memcpy(s->x, m->v, 3 * (size_t)s->np * sizeof *s->x);
    memcpy(s->xprev, m->v, 3 * (size_t)s->np * sizeof *s->x);
    memcpy(s->x0, m->v, 3 * (size_t)s->np * sizeof *s->x);
    for (int64_t i = 0; i < s->np; i++)
        s->w[i] = s->m[i] = 1.0;
    return CLS_OK;
}

static double springs_vertex_k(const mesh *m, int64_t i)
{
    return m->color ? (double)m->color[3 * i] : 1.0;
}

/* Appends spring (i, j) with the given rest length and stiffness. */
static int springs_push(springs_model *s, int64_t *cap, int32_t i, int32_t j, double rest, double k,
                        cls_error *err)
{
    if (s->ns == *cap) {
        if (s->ns >= SPRINGS_MAX)
            return cls_fail(err, CLS_EUSAGE, "more than %lld springs; lower --max-dist",
                            (long long)SPRINGS_MAX);
        int64_t nc = *cap ? 2 * *cap : 1024;
        if (nc > SPRINGS_MAX)
            nc = SPRINGS_MAX;
        int32_t *ij = realloc(s->ij, 2 * (size_t)nc * sizeof *ij);
        if (ij)
            s->ij = ij;
        double *r = realloc(s->rest, (size_t)nc * sizeof *r);
        if (r)
            s->rest = r;
        double *kk = realloc(s->k, (size_t)nc * sizeof *kk);
        if (kk)
            s->k = kk;
        if (!ij || !r || !kk)
            return springs_oom(err);
        *cap = nc;
    }
    s->ij[2 * s->ns] = i;
    s->ij[2 * s->ns + 1] = j;
    s->rest[s->ns] = rest;
    s->k[s->ns] = k;
    s->ns++;
    return CLS_OK;
}

static int springs_cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int springs_from_mesh_proximity(const mesh *m, double min_dist, double max_dist, springs_model *s,
                                cls_error *err)
{
    if (!(min_dist >= 0.0) || !(max_dist >= 0.0) || !isfinite(min_dist) || !isfinite(max_dist))
        return cls_fail(err, CLS_EUSAGE, "min and max distance must be finite and >= 0");
    int rc = springs_particles(m, s, err);
    if (rc)
        return rc;
    int64_t n = s->np;
    double kmax = 0.0;
    for (int64_t i = 0; i < n; i++)
        kmax = fmax(kmax, springs_vertex_k(m, i));
    double reach = max_dist * kmax; /* no spring is longer */
    if (n < 2 || !(reach > 0.0) || reach < min_dist)
        return CLS_OK;

    /* the cell list */
    double lo[3], hi[3];
    for (int c = 0; c < 3; c++)
        lo[c] = hi[c] = m->v[c];
    for (int64_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            lo[c] = fmin(lo[c], m->v[3 * i + c]);
            hi[c] = fmax(hi[c], m->v[3 * i + c]);
        }
    double cell = reach;
    int64_t dim[3];
    for (;;) {
        double cells = 1.0;
        for (int c = 0; c < 3; c++) {
            double dd = floor((hi[c] - lo[c]) / cell) + 1.0;
            dim[c] = dd > 1e9 ? (int64_t)1e9 : (int64_t)dd;
            cells *= dd;
        }
        if (cells <= 4.0 * (double)n + 64.0)
            break;
        cell *= 2.0;
    }
    int64_t ncell = dim[0] * dim[1] * dim[2];
    int64_t *start = calloc((size_t)ncell + 1, sizeof *start);
    int64_t *cid = malloc((size_t)n * sizeof *cid);
    int32_t *order = malloc((size_t)n * sizeof *order);
    int32_t *nbr = NULL;
    int64_t nbr_cap = 0, scap = 0;
    if (!start || !cid || !order) {
        rc = springs_oom(err);
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t q[3];
        for (int c = 0; c < 3; c++) {
            q[c] = (int64_t)((m->v[3 * i + c] - lo[c]) / cell);
            if (q[c] < 0)
                q[c] = 0;
            if (q[c] >= dim[c])
                q[c] = dim[c] - 1;
        }
        cid[i] = (q[2] * dim[1] + q[1]) * dim[0] + q[0];
        start[cid[i] + 1]++;
    }
    for (int64_t c = 0; c < ncell; c++)
        start[c + 1] += start[c];
    {
        int64_t *fill = malloc((size_t)ncell * sizeof *fill);
        if (!fill) {
            rc = springs_oom(err);
            goto done;
        }
        memcpy(fill, start, (size_t)ncell * sizeof *fill);
        for (int64_t i = 0; i < n; i++)
            order[fill[cid[i]]++] = (int32_t)i;
        free(fill);
    }

    for (int64_t i = 0; i < n; i++) {
        const double *xi = m->v + 3 * i;
        double ki = springs_vertex_k(m, i);
        int64_t c0 = cid[i];
        int64_t qx = c0 % dim[0], qy = (c0 / dim[0]) % dim[1], qz = c0 / (dim[0] * dim[1]);
        int64_t nn = 0;
        for (int64_t z = qz - 1; z <= qz + 1; z++) {
            if (z < 0 || z >= dim[2])
                continue;
            for (int64_t y = qy - 1; y <= qy + 1; y++) {
                if (y < 0 || y >= dim[1])
                    continue;
                for (int64_t x = qx - 1; x <= qx + 1; x++) {
                    if (x < 0 || x >= dim[0])
                        continue;
                    int64_t c = (z * dim[1] + y) * dim[0] + x;
                    for (int64_t t = start[c]; t < start[c + 1]; t++) {
                        int32_t j = order[t];
                        if (j <= i)
                            continue;
                        const double *xj = m->v + 3 * (int64_t)j;
                        double dx = xj[0] - xi[0], dy = xj[1] - xi[1], dz = xj[2] - xi[2];
                        double d = sqrt(dx * dx + dy * dy + dz * dz);
                        if (d < min_dist || d > max_dist * (ki + springs_vertex_k(m, j)) * 0.5)
                            continue;
                        if (nn == nbr_cap) {
                            int64_t nc = nbr_cap ? 2 * nbr_cap : 256;
                            int32_t *q = realloc(nbr, (size_t)nc * sizeof *q);
                            if (!q) {
                                rc = springs_oom(err);
                                goto done;
                            }
                            nbr = q;
                            nbr_cap = nc;
                        }
                        nbr[nn++] = j;
                    }
                }
            }
        }
        if (nn > 1) /* none yet: nbr is still NULL, which qsort must not get */
            qsort(nbr, (size_t)nn, sizeof *nbr, springs_cmp_i32);
        for (int64_t t = 0; t < nn; t++) {
            const double *xj = m->v + 3 * (int64_t)nbr[t];
            double dx = xj[0] - xi[0], dy = xj[1] - xi[1], dz = xj[2] - xi[2];
            double d = sqrt(dx * dx + dy * dy + dz * dz);
            rc = springs_push(s, &scap, (int32_t)i, nbr[t], d,
                              0.5 * (ki + springs_vertex_k(m, nbr[t])), err);
            if (rc)
                goto done;
        }
    }
done:
    free(start);
    free(cid);
    free(order);
    free(nbr);
    if (rc)
        springs_model_free(s);
    return rc;
}

static int springs_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int springs_from_mesh_edges(const mesh *m, double min_dist, springs_model *s, cls_error *err)
{
    if (!(min_dist >= 0.0) || !isfinite(min_dist))
        return cls_fail(err, CLS_EUSAGE, "min distance must be finite and >= 0");
    int rc = springs_particles(m, s, err);
    if (rc)
        return rc;
    size_t ne = 3 * (size_t)m->nfaces;
    uint64_t *e = malloc((ne ? ne : 1) * sizeof *e);
    if (!e) {
        springs_model_free(s);
        return springs_oom(err);
    }
    size_t k = 0;
    for (int64_t t = 0; t < m->nfaces; t++)
        for (int c = 0; c < 3; c++) {
            uint32_t a = (uint32_t)m->tri[3 * t + c], b = (uint32_t)m->tri[3 * t + (c + 1) % 3];
            if (a == b)
                continue;
            if (a > b) {
                uint32_t tmp = a;
                a = b;
                b = tmp;
            }
            e[k++] = (uint64_t)a << 32 | b;
        }
    qsort(e, k, sizeof *e, springs_cmp_u64);
    int64_t scap = 0;
    for (size_t t = 0; t < k; t++) {
        if (t > 0 && e[t] == e[t - 1])
            continue;
        int32_t i = (int32_t)(e[t] >> 32), j = (int32_t)(e[t] & 0xffffffffu);
        const double *xi = m->v + 3 * (int64_t)i, *xj = m->v + 3 * (int64_t)j;
        double dx = xj[0] - xi[0], dy = xj[1] - xi[1], dz = xj[2] - xi[2];
        double d = sqrt(dx * dx + dy * dy + dz * dz);
        if (d < min_dist)
            continue;
        rc = springs_push(s, &scap, i, j, d,
                          0.5 * (springs_vertex_k(m, i) + springs_vertex_k(m, j)), err);
        if (rc)
            break;
    }
    free(e);
    if (rc)
        springs_model_free(s);
    return rc;
}

int springs_grid_mesh(int n, mesh *m, cls_error *err)
{
    mesh_init(m);
    if (n < 1 || n > 46000)
        return cls_fail(err, CLS_EUSAGE, "grid size %d is outside [1, 46000]", n);
    int64_t nv = (int64_t)n * n, nf = 2 * (int64_t)(n - 1) * (n - 1);
    m->v = malloc(3 * (size_t)nv * sizeof *m->v);
    m->tri = malloc(3 * (size_t)(nf ? nf : 1) * sizeof *m->tri);
    if (!m->v || !m->tri) {
        mesh_free(m);
        return springs_oom(err);
    }
    m->nverts = nv;
    m->nfaces = nf;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            double *x = m->v + 3 * ((int64_t)r * n + c);
            x[0] = c;
            x[1] = 0.0;
            x[2] = r;
        }
    int64_t t = 0;
    for (int r = 0; r + 1 < n; r++)
        for (int c = 0; c + 1 < n; c++) {
            int32_t a = r * n + c, b = a + 1, d = a + n, e = d + 1;
            int32_t *q = m->tri + 3 * t;
            q[0] = a, q[1] = d, q[2] = b, q[3] = b, q[4] = d, q[5] = e;
            t += 2;
        }
    return CLS_OK;
}

/* ---- bending ------------------------------------------------------------- */

typedef struct {
    uint64_t key; /* edge (lo << 32 | hi) */
    int32_t opp;  /* the vertex opposite it in one triangle */
} springs_half;

static int springs_half_cmp(const void *a, const void *b)
{
    const springs_half *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->opp > y->opp) - (x->opp < y->opp);
}

static int springs_pair_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int springs_add_bending(springs_model *s, const mesh *m, double k, double min_dist, cls_error *err)
{
    if (!(k > 0.0) || m->nfaces == 0)
        return CLS_OK;
    size_t nh = 3 * (size_t)m->nfaces;
    springs_half *h = malloc(nh * sizeof *h);
    uint64_t *have = malloc((size_t)(s->ns ? s->ns : 1) * sizeof *have);
    uint64_t *add = malloc(nh * sizeof *add);
    if (!h || !have || !add) {
        free(h);
        free(have);
        free(add);
        return springs_oom(err);
    }
    size_t n = 0;
    for (int64_t t = 0; t < m->nfaces; t++)
        for (int c = 0; c < 3; c++) {
            uint32_t a = (uint32_t)m->tri[3 * t + c], b = (uint32_t)m->tri[3 * t + (c + 1) % 3];
            int32_t o = m->tri[3 * t + (c + 2) % 3];
            if (a == b || (uint32_t)o == a || (uint32_t)o == b)
                continue;
            uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
            h[n++] = (springs_half){(uint64_t)lo << 32 | hi, o};
        }
    qsort(h, n, sizeof *h, springs_half_cmp);
    for (int64_t t = 0; t < s->ns; t++) {
        uint32_t i = (uint32_t)s->ij[2 * t], j = (uint32_t)s->ij[2 * t + 1];
        have[t] = i < j ? (uint64_t)i << 32 | j : (uint64_t)j << 32 | i;
    }
    qsort(have, (size_t)s->ns, sizeof *have, springs_pair_cmp);
    /* an edge with exactly two triangles: a spring between their opposite
     * vertices (an edge of three or more, non-manifold, gets none) */
    size_t na = 0;
    for (size_t a = 0; a < n;) {
        size_t b = a;
        while (b < n && h[b].key == h[a].key)
            b++;
        if (b - a == 2 && h[a].opp != h[a + 1].opp) {
            uint32_t i = (uint32_t)h[a].opp, j = (uint32_t)h[a + 1].opp;
            add[na++] = i < j ? (uint64_t)i << 32 | j : (uint64_t)j << 32 | i;
        }
        a = b;
    }
    free(h);
    qsort(add, na, sizeof *add, springs_pair_cmp);
    int64_t cap = s->ns;
    int rc = CLS_OK;
    for (size_t t = 0; t < na && !rc; t++) {
        if (t > 0 && add[t] == add[t - 1])
            continue;
        if (bsearch(&add[t], have, (size_t)s->ns - (size_t)s->nbend, sizeof *have,
                    springs_pair_cmp))
            continue; /* joined already by a proximity or edge spring */
        int32_t i = (int32_t)(add[t] >> 32), j = (int32_t)(add[t] & 0xffffffffu);
        const double *xi = s->x + 3 * (int64_t)i, *xj = s->x + 3 * (int64_t)j;
        double dx = xj[0] - xi[0], dy = xj[1] - xi[1], dz = xj[2] - xi[2];
        double d = sqrt(dx * dx + dy * dy + dz * dz);
        if (d < min_dist)
            continue;
        rc = springs_push(s, &cap, i, j, d, k, err);
        if (!rc)
            s->nbend++;
    }
    free(have);
    free(add);
    return rc;
}

/* ---- masses, pins, velocity ------------------------------------------------ */

int springs_set_mass(springs_model *s, const mesh *m, int by_area, double total, cls_error *err)
{
    double *a = calloc((size_t)(s->np ? s->np : 1), sizeof *a);
    if (!a)
        return springs_oom(err);
    double sum = 0.0;
    if (by_area) {
        /* the lumped mass: a third of each incident triangle's area */
        for (int64_t t = 0; t < m->nfaces; t++) {
            const int32_t *v = m->tri + 3 * t;
            const double *p0 = m->v + 3 * (int64_t)v[0], *p1 = m->v + 3 * (int64_t)v[1],
                         *p2 = m->v + 3 * (int64_t)v[2];
            double e1[3] = {p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]};
            double e2[3] = {p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2]};
            double c[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                           e1[0] * e2[1] - e1[1] * e2[0]};
            double area = 0.5 * sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
            for (int q = 0; q < 3; q++)
                a[v[q]] += area / 3.0;
        }
        for (int64_t i = 0; i < s->np; i++)
            sum += a[i];
    }
    double mean = s->np ? sum / (double)s->np : 0.0;
    double scale = total > 0.0 && s->np ? total / (double)s->np : 1.0;
    int64_t zero = 0;
    for (int64_t i = 0; i < s->np; i++) {
        double mi = by_area ? (mean > 0.0 ? a[i] / mean : 0.0) : 1.0;
        mi *= scale;
        if (!(mi > 0.0)) {
            zero++;
            mi = 0.0;
        }
        s->m[i] = mi;
        if (s->w[i] != 0.0)
            s->w[i] = mi > 0.0 ? 1.0 / mi : 0.0; /* a vertex with no area does not move */
    }
    free(a);
    if (zero == s->np && s->np > 0)
        return cls_fail(err, CLS_EUSAGE, "every particle has zero mass (no triangle area)");
    return CLS_OK;
}

int springs_pin(springs_model *s, int64_t i, cls_error *err)
{
    if (i < 0 || i >= s->np)
        return cls_fail(err, CLS_EUSAGE, "pinned particle %lld is outside [0, %lld)", (long long)i,
                        (long long)s->np);
    s->w[i] = 0.0;
    return CLS_OK;
}

void springs_pin_box(springs_model *s, const double lo[3], const double hi[3], int64_t *n)
{
    *n = 0;
    for (int64_t i = 0; i < s->np; i++) {
        const double *x = s->x + 3 * i;
        if (x[0] >= lo[0] && x[0] <= hi[0] && x[1] >= lo[1] && x[1] <= hi[1] && x[2] >= lo[2] &&
            x[2] <= hi[2]) {
            s->w[i] = 0.0;
            (*n)++;
        }
    }
}

void springs_set_velocity(springs_model *s, const double v[3], double dt)
{
    for (int64_t i = 0; i < s->np; i++)
        if (s->w[i] != 0.0)
            for (int c = 0; c < 3; c++)
                s->xprev[3 * i + c] = s->x[3 * i + c] - v[c] * dt;
}

/* ---- colouring ------------------------------------------------------------ */

static uint64_t springs_rng(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Moves springs out of colours larger than the mean size into smaller
 * colours free at both ends (first fit); used[] is the per-particle
 * colour bit set of the colouring. */
static void springs_balance(const springs_model *s, int32_t *col, int ncol, uint64_t *used,
                            int64_t words, int64_t *cnt)
{
    int64_t target = (s->ns + ncol - 1) / ncol;
    for (int64_t t = 0; t < s->ns; t++) {
        int c = col[t];
        if (cnt[c] <= target)
            continue;
        uint64_t *ua = used + (size_t)s->ij[2 * t] * (size_t)words;
        uint64_t *ub = used + (size_t)s->ij[2 * t + 1] * (size_t)words;
        for (int64_t w = 0; w < words; w++) {
            uint64_t f = ~(ua[w] | ub[w]);
            while (f) {
                int c2 = (int)(w * 64 + __builtin_ctzll(f));
                f &= f - 1;
                if (c2 >= ncol)
                    break;
                if (cnt[c2] >= target)
                    continue;
                ua[c / 64] &= ~(1ull << (c % 64));
                ub[c / 64] &= ~(1ull << (c % 64));
                ua[c2 / 64] |= 1ull << (c2 % 64);
                ub[c2 / 64] |= 1ull << (c2 % 64);
                cnt[c]--;
                cnt[c2]++;
                col[t] = c2;
                goto next;
            }
        }
    next:;
    }
}

/* Greedy colouring in the given order (NULL: spring order) into col;
 * returns the number of colours, -1 if a colour beyond 2 maxd - 1 was
 * needed (impossible: each end blocks at most maxd - 1). used: the
 * per-particle colour bit sets, zeroed by the caller. */
static int springs_greedy(const springs_model *s, const int32_t *order, uint64_t *used,
                          int64_t words, int32_t *col)
{
    int ncol = 0;
    for (int64_t k = 0; k < s->ns; k++) {
        int64_t t = order ? order[k] : k;
        uint64_t *ua = used + (size_t)s->ij[2 * t] * (size_t)words;
        uint64_t *ub = used + (size_t)s->ij[2 * t + 1] * (size_t)words;
        int c = -1;
        for (int64_t w = 0; w < words; w++) {
            uint64_t freeb = ~(ua[w] | ub[w]);
            if (freeb) {
                c = (int)(w * 64 + __builtin_ctzll(freeb));
                break;
            }
        }
        if (c < 0 || c >= 64 * words)
            return -1;
        ua[c / 64] |= 1ull << (c % 64);
        ub[c / 64] |= 1ull << (c % 64);
        col[t] = c;
        if (c + 1 > ncol)
            ncol = c + 1;
    }
    return ncol;
}

int springs_color(springs_model *s, cls_error *err)
{
    free(s->color_off);
    s->color_off = NULL;
    s->ncolors = 0;
    s->max_degree = 0;
    int64_t np = s->np, ns = s->ns;
    free(s->jacobi); /* the Jacobi sweep's scratch: sized here, before any step */
    s->jacobi = malloc(7 * (size_t)(np ? np : 1) * sizeof *s->jacobi);
    int32_t *deg = calloc((size_t)(np ? np : 1), sizeof *deg);
    if (!deg || !s->jacobi) {
        free(deg);
        return springs_oom(err);
    }
    for (int64_t t = 0; t < 2 * ns; t++)
        deg[s->ij[t]]++;
    int maxd = 0;
    for (int64_t i = 0; i < np; i++)
        if (deg[i] > maxd)
            maxd = deg[i];
    free(deg);
    s->max_degree = maxd;
    s->color_off = calloc(2, sizeof *s->color_off);
    if (!s->color_off)
        return springs_oom(err);
    if (ns == 0)
        return CLS_OK;

    /* one bit per colour per particle: greedy needs at most 2 maxd - 1 */
    int64_t words = (2 * (int64_t)maxd - 1 + 63) / 64;
    if ((double)np * (double)words * 8.0 > 2.0 * 1024 * 1024 * 1024)
        return cls_fail(err, CLS_EUSAGE,
                        "a particle with %d springs makes the colouring too large; "
                        "lower --max-dist",
                        maxd);
    uint64_t *used = calloc((size_t)np * (size_t)words, sizeof *used);
    int32_t *col = malloc((size_t)ns * sizeof *col);
    int32_t *col2 = malloc((size_t)ns * sizeof *col2);
    int32_t *order = malloc((size_t)ns * sizeof *order);
    int64_t *cnt = calloc((size_t)(2 * maxd), sizeof *cnt);
    if (!used || !col || !col2 || !order || !cnt) {
        free(used);
        free(col);
        free(col2);
        free(order);
        free(cnt);
        return springs_oom(err);
    }
    /* (i, j) order, then a fixed pseudo-random one (Fisher-Yates from a
     * constant seed); the one with fewer colours is kept ((i, j) reaches
     * the bound on regular grids, the shuffle on irregular bodies) */
    int ncol = springs_greedy(s, NULL, used, words, col);
    uint64_t st = 0x5eed5eedull;
    for (int64_t t = 0; t < ns; t++)
        order[t] = (int32_t)t;
    for (int64_t t = ns - 1; t > 0; t--) {
        int64_t j = (int64_t)(springs_rng(&st) % (uint64_t)(t + 1));
        int32_t tmp = order[t];
        order[t] = order[j];
        order[j] = tmp;
    }
    memset(used, 0, (size_t)np * (size_t)words * sizeof *used);
    int ncol2 = springs_greedy(s, order, used, words, col2);
    free(order);
    if (ncol < 0 || ncol2 < 0) {
        free(used);
        free(col);
        free(col2);
        free(cnt);
        return cls_fail(err, CLS_EOTHER, "springs: colouring overflow (bug)");
    }
    if (ncol2 < ncol) {
        int32_t *t = col;
        col = col2;
        col2 = t;
        ncol = ncol2;
    } else { /* the bit sets of the (i, j) colouring */
        memset(used, 0, (size_t)np * (size_t)words * sizeof *used);
        for (int64_t t = 0; t < ns; t++) {
            int c = col[t];
            used[(size_t)s->ij[2 * t] * (size_t)words + (size_t)(c / 64)] |= 1ull << (c % 64);
            used[(size_t)s->ij[2 * t + 1] * (size_t)words + (size_t)(c / 64)] |= 1ull << (c % 64);
        }
    }
    free(col2);
    for (int64_t t = 0; t < ns; t++)
        cnt[col[t]]++;
    springs_balance(s, col, ncol, used, words, cnt);
    free(used);
    free(cnt);

    /* stable counting sort by colour: within a colour, (i, j) order */
    int64_t *off = calloc((size_t)ncol + 1, sizeof *off);
    int32_t *ij = malloc(2 * (size_t)ns * sizeof *ij);
    double *rest = malloc((size_t)ns * sizeof *rest), *kk = malloc((size_t)ns * sizeof *kk);
    int64_t *fill = malloc((size_t)ncol * sizeof *fill);
    if (!off || !ij || !rest || !kk || !fill) {
        free(off);
        free(ij);
        free(rest);
        free(kk);
        free(fill);
        free(col);
        return springs_oom(err);
    }
    for (int64_t t = 0; t < ns; t++)
        off[col[t] + 1]++;
    for (int c = 0; c < ncol; c++)
        off[c + 1] += off[c];
    memcpy(fill, off, (size_t)ncol * sizeof *fill);
    for (int64_t t = 0; t < ns; t++) {
        int64_t d = fill[col[t]]++;
        ij[2 * d] = s->ij[2 * t];
        ij[2 * d + 1] = s->ij[2 * t + 1];
        rest[d] = s->rest[t];
        kk[d] = s->k[t];
    }
    free(fill);
    free(col);
    free(s->ij);
    free(s->rest);
    free(s->k);
    free(s->color_off);
    s->ij = ij;
    s->rest = rest;
    s->k = kk;
    s->color_off = off;
    s->ncolors = ncol;
    return CLS_OK;
}

int springs_model_copy(const springs_model *a, springs_model *b, cls_error *err)
{
    springs_model_init(b);
    *b = *a;
    size_t np = (size_t)(a->np ? a->np : 1), ns = (size_t)(a->ns ? a->ns : 1);
    b->x = malloc(3 * np * sizeof *b->x);
    b->xprev = malloc(3 * np * sizeof *b->xprev);
    b->x0 = malloc(3 * np * sizeof *b->x0);
    b->w = malloc(np * sizeof *b->w);
    b->m = malloc(np * sizeof *b->m);
    b->ij = malloc(2 * ns * sizeof *b->ij);
    b->rest = malloc(ns * sizeof *b->rest);
    b->k = malloc(ns * sizeof *b->k);
    b->color_off = malloc(((size_t)a->ncolors + 1) * sizeof *b->color_off);
    b->jacobi = a->jacobi ? malloc(7 * np * sizeof *b->jacobi) : NULL;
    if (!b->x || !b->xprev || !b->x0 || !b->w || !b->m || !b->ij || !b->rest || !b->k ||
        !b->color_off || (a->jacobi && !b->jacobi)) {
        springs_model_free(b);
        return springs_oom(err);
    }
    memcpy(b->x, a->x, 3 * (size_t)a->np * sizeof *b->x);
    memcpy(b->xprev, a->xprev, 3 * (size_t)a->np * sizeof *b->x);
    memcpy(b->x0, a->x0, 3 * (size_t)a->np * sizeof *b->x);
    memcpy(b->w, a->w, (size_t)a->np * sizeof *b->w);
    memcpy(b->m, a->m, (size_t)a->np * sizeof *b->m);
    memcpy(b->ij, a->ij, 2 * (size_t)a->ns * sizeof *b->ij);
    memcpy(b->rest, a->rest, (size_t)a->ns * sizeof *b->rest);
    memcpy(b->k, a->k, (size_t)a->ns * sizeof *b->k);
    memcpy(b->color_off, a->color_off, ((size_t)a->ncolors + 1) * sizeof *b->color_off);
    return CLS_OK;
}
