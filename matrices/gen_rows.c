/*
 * gen_rows.c: row-block stencil generation (see gen_rows.h), the one
 * generator behind both `clsolve gen` (gen.c) and `gen:` solves. Two passes
 * over the block, each split over the host's cores (common/parallel.h):
 * row lengths into rowptr, then the entries, columns ascending ((dz, dy, dx)
 * in lexicographic order: |dy nx + dx| < nx ny and |dx| < nx). A 16.8 M-row
 * block is memory-bound: 1.4 GB written once.
 */
#include "gen_rows.h"

#include "../common/bigmem.h"
#include "../common/parallel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    gen_kind kind;
} gen_names[] = {
    {"poisson2d", GEN_POISSON2D},
    {"poisson3d", GEN_POISSON3D},
    {"poisson3d27", GEN_POISSON3D27},
};

int gen_kind_parse(const char *name, gen_kind *k)
{
    for (size_t i = 0; i < sizeof gen_names / sizeof gen_names[0]; i++)
        if (strcmp(name, gen_names[i].name) == 0) {
            *k = gen_names[i].kind;
            return 0;
        }
    return -1;
}

const char *gen_kind_name(gen_kind k)
{
    for (size_t i = 0; i < sizeof gen_names / sizeof gen_names[0]; i++)
        if (gen_names[i].kind == k)
            return gen_names[i].name;
    return "?";
}

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
            return cls_fail(err, CLS_EUSAGE, "generator '%s': sizes are separated by 'x'", spec);
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

/* One range of rows of gen_grid_rows_csr. Pass 1 writes each row's length
 * into rowptr and the range's sum; pass 2 turns the lengths into offsets
 * from the range's start and writes columns and values, walking (x, y, z)
 * incrementally (no divisions per row). Each range's thread is the first to
 * touch its part of col and val, so the pages are zeroed in parallel too. */
typedef struct grow_ctx {
    const gen_grid *g;
    int64_t r0;
    csr_matrix *B;
    int64_t *sum; /* per range: pass 1 its nonzeros, pass 2 its first offset */
    int pass;
} grow_ctx;

static void grow_range(void *arg, int range, int64_t a, int64_t e)
{
    const grow_ctx *c = arg;
    const gen_grid *g = c->g;
    const int64_t nx = g->nx, ny = g->ny, nz = g->nz;
    csr_matrix *B = c->B;
    if (c->pass == 1) {
        int64_t s = 0;
        for (int64_t i = a; i < e; i++) {
            int64_t len = gen_grid_row_nnz(g, c->r0 + i);
            B->rowptr[i] = len;
            s += len;
        }
        c->sum[range] = s;
        return;
    }
    const double diag = g->kind == GEN_POISSON2D ? 4.0 : g->kind == GEN_POISSON3D ? 6.0 : 26.0;
    const int full = g->kind == GEN_POISSON3D27;
    int32_t *col = B->col;
    double *val = B->val;
    int64_t o = c->sum[range];
    int64_t i = c->r0 + a;
    int64_t x = i % nx, y = (i / nx) % ny, z = i / nx / ny;
    for (int64_t li = a; li < e; li++, i++) {
        B->rowptr[li] = o;
        int zlo = z > 0 ? -1 : 0, zhi = z < nz - 1 ? 1 : 0;
        int ylo = y > 0 ? -1 : 0, yhi = y < ny - 1 ? 1 : 0;
        int xlo = x > 0 ? -1 : 0, xhi = x < nx - 1 ? 1 : 0;
        for (int dz = zlo; dz <= zhi; dz++)
            for (int dy = ylo; dy <= yhi; dy++)
                for (int dx = xlo; dx <= xhi; dx++) {
                    int off = (dz != 0) + (dy != 0) + (dx != 0);
                    if (!full && off > 1)
                        continue;
                    col[o] = (int32_t)(i + ((int64_t)dz * ny + dy) * nx + dx);
                    val[o] = off ? -1.0 : diag;
                    o++;
                }
        if (++x == nx) {
            x = 0;
            if (++y == ny) {
                y = 0;
                z++;
            }
        }
    }
}

int gen_grid_rows_csr(const gen_grid *g, int64_t r0, int64_t r1, csr_matrix *B, cls_error *err)
{
    csr_init(B);
    int64_t n = gen_grid_rows(g);
    if (r0 < 0 || r1 < r0 || r1 > n)
        return cls_fail(err, CLS_EOTHER, "gen_grid_rows_csr: rows [%lld, %lld) of %lld",
                        (long long)r0, (long long)r1, (long long)n);
    const int64_t rows = r1 - r0, grain = 65536;
    int t = cls_parallel_ranges(rows, grain);
    int64_t *sum = calloc((size_t)t, sizeof *sum);
    /* row lengths first, into a rowptr of its own (csr_alloc wants nnz).
     * The arrays are written once on every core and freed whole (at a
     * solve's end, for one): huge pages where the system gives them
     * (freeing 4 KiB pages of a 2.6e8-row block took about a second) */
    int64_t *rowptr = cls_big_calloc(((size_t)rows + 1) * sizeof *rowptr);
    if (!sum || !rowptr) {
        free(sum);
        free(rowptr);
        return cls_fail(err, CLS_EOTHER, "out of memory generating %lld rows", (long long)rows);
    }
    csr_matrix lens = {.nrows = rows, .rowptr = rowptr};
    grow_ctx c = {g, r0, &lens, sum, 1};
    cls_parallel_for(rows, grain, grow_range, &c);
    int64_t nnz = 0;
    for (int q = 0; q < t; q++) { /* range sums -> range offsets */
        int64_t s = sum[q];
        sum[q] = nnz;
        nnz += s;
    }
    B->rowptr = rowptr;
    B->col = cls_big_malloc((size_t)(nnz ? nnz : 1) * sizeof *B->col);
    B->val = cls_big_malloc((size_t)(nnz ? nnz : 1) * sizeof *B->val);
    if (!B->col || !B->val) {
        free(sum);
        csr_free(B);
        return cls_fail(err, CLS_EOTHER, "out of memory for %lld generated entries",
                        (long long)nnz);
    }
    B->nrows = rows;
    B->ncols = n;
    B->nnz = nnz;
    c.B = B;
    c.pass = 2;
    cls_parallel_for(rows, grain, grow_range, &c);
    B->rowptr[rows] = nnz;
    free(sum);
    return CLS_OK;
}
