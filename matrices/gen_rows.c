/*
 * gen_rows.c: row-block stencil generation (see gen_rows.h). Two passes over
 * the block: row lengths into rowptr, then the entries, columns ascending
 * (dz, dy, dx loops in increasing order).
 */
#include "gen_rows.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gen_grid_parse(const char *spec, gen_grid *g, cls_error *err)
{
    memset(g, 0, sizeof *g);
    const char *colon = strchr(spec, ':');
    char kind[32];
    if (!colon || (size_t)(colon - spec) >= sizeof kind)
        return cls_fail(err, CLS_EUSAGE,
                        "generator '%s': expected KIND:N or KIND:NXxNYxNZ, e.g. poisson3d:64",
                        spec);
    memcpy(kind, spec, (size_t)(colon - spec));
    kind[colon - spec] = '\0';
    if (gen_kind_parse(kind, &g->kind))
        return cls_fail(err, CLS_EUSAGE,
                        "generator '%s': unknown kind '%s' (poisson2d, poisson3d, poisson3d27)",
                        spec, kind);
    int64_t d[3] = {0, 0, 0};
    int nd = 0;
    const char *p = colon + 1;
    while (nd < 3) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 1)
            return cls_fail(err, CLS_EUSAGE, "generator '%s': sizes must be positive integers",
                            spec);
        d[nd++] = v;
        if (*end == '\0')
            break;
        if (*end != 'x')
            return cls_fail(err, CLS_EUSAGE, "generator '%s': sizes are separated by 'x'",
                            spec);
        p = end + 1;
    }
    int dims = g->kind == GEN_POISSON2D ? 2 : 3;
    if (nd == 1)
        d[1] = d[2] = d[0];
    else if (nd != dims)
        return cls_fail(err, CLS_EUSAGE, "generator '%s': %s takes 1 or %d sizes", spec, kind,
                        dims);
    g->nx = d[0];
    g->ny = d[1];
    g->nz = dims == 2 ? 1 : d[2];
    if (g->nx > INT32_MAX || g->ny > INT32_MAX || g->nz > INT32_MAX ||
        (double)g->nx * (double)g->ny * (double)g->nz > (double)INT32_MAX)
        return cls_fail(err, CLS_EUSAGE,
                        "generator '%s': more than 2147483647 rows, the limit of 32-bit column "
                        "indices",
                        spec);
    return CLS_OK;
}

int64_t gen_grid_rows(const gen_grid *g)
{
    return g->nx * g->ny * g->nz;
}

static inline int64_t span(int64_t c, int64_t n)
{
    return 1 + (c > 0) + (c < n - 1);
}

int64_t gen_grid_row_nnz(const gen_grid *g, int64_t i)
{
    int64_t x = i % g->nx, y = (i / g->nx) % g->ny, z = i / g->nx / g->ny;
    int64_t sx = span(x, g->nx), sy = span(y, g->ny), sz = span(z, g->nz);
    if (g->kind == GEN_POISSON3D27)
        return sx * sy * sz;
    return 1 + (sx - 1) + (sy - 1) + (sz - 1);
}

int64_t gen_grid_nnz(const gen_grid *g)
{
    int64_t ax = 3 * g->nx - 2, ay = 3 * g->ny - 2, az = 3 * g->nz - 2;
    if (g->kind == GEN_POISSON3D27)
        return ax * ay * az;
    /* diagonal plus two per interior edge of each axis */
    int64_t n = gen_grid_rows(g);
    return n + 2 * (g->nx - 1) * g->ny * g->nz + 2 * g->nx * (g->ny - 1) * g->nz +
           2 * g->nx * g->ny * (g->nz - 1);
}

int gen_grid_rows_csr(const gen_grid *g, int64_t r0, int64_t r1, csr_matrix *B,
                      cls_error *err)
{
    csr_init(B);
    int64_t n = gen_grid_rows(g);
    if (r0 < 0 || r1 < r0 || r1 > n)
        return cls_fail(err, CLS_EOTHER, "gen_grid_rows_csr: rows [%lld, %lld) of %lld",
                        (long long)r0, (long long)r1, (long long)n);
    int64_t nnz = 0;
    for (int64_t i = r0; i < r1; i++)
        nnz += gen_grid_row_nnz(g, i);
    int rc = csr_alloc(B, r1 - r0, n, nnz, err);
    if (rc)
        return rc;
    const double diag = g->kind == GEN_POISSON2D ? 4.0 : g->kind == GEN_POISSON3D ? 6.0 : 26.0;
    const int64_t nx = g->nx, ny = g->ny, nz = g->nz;
    int64_t o = 0;
    for (int64_t i = r0; i < r1; i++) {
        int64_t x = i % nx, y = (i / nx) % ny, z = i / nx / ny;
        B->rowptr[i - r0] = o;
        int zlo = z > 0 ? -1 : 0, zhi = z < nz - 1 ? 1 : 0;
        int ylo = y > 0 ? -1 : 0, yhi = y < ny - 1 ? 1 : 0;
        int xlo = x > 0 ? -1 : 0, xhi = x < nx - 1 ? 1 : 0;
        for (int dz = zlo; dz <= zhi; dz++)
            for (int dy = ylo; dy <= yhi; dy++)
                for (int dx = xlo; dx <= xhi; dx++) {
                    int off = (dz != 0) + (dy != 0) + (dx != 0);
                    if (g->kind != GEN_POISSON3D27 && off > 1)
                        continue;
                    B->col[o] = (int32_t)(i + ((int64_t)dz * ny + dy) * nx + dx);
                    B->val[o] = off ? -1.0 : diag;
                    o++;
                }
    }
    B->rowptr[r1 - r0] = o;
    return CLS_OK;
}
