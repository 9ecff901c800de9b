/*
 * gen.c: the finite-difference test matrices of gen.h, built straight into
 * CSR.
 *
 * Row i = (z*N + y)*N + x (x fastest). Along one axis a grid point has
 * c(x) = 3 - [x == 0] - [x == N-1] neighbours within the grid (itself
 * included), so row lengths are known analytically:
 *   5-point   : 1 + (c(x)-1) + (c(y)-1)
 *   7-point   : 1 + (c(x)-1) + (c(y)-1) + (c(z)-1)
 *   27-point  : c(x) c(y) c(z)
 * and the totals are 5N^2 - 4N, 7N^3 - 6N^2 and (3N-2)^3. Pass 1 writes the
 * row lengths and sums them per thread chunk; pass 2 turns each chunk into
 * row pointers with its chunk offset and writes columns and values. Visiting
 * the offsets (dz, dy, dx) in lexicographic order gives ascending columns,
 * since |dy*N + dx| < N^2 and |dx| < N for N >= 2.
 */
#include "gen.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

typedef struct gjob {
    gen_kind kind;
    int64_t n;
    int64_t lo, hi; /* rows */
    int64_t sum;    /* pass 1: nonzeros of the chunk; pass 2: offset of the chunk */
    int pass;
    csr_matrix *A;
} gjob;

static inline int64_t c1(int64_t x, int64_t n)
{
    return 1 + (x > 0) + (x < n - 1);
}

static inline int64_t row_len(gen_kind k, int64_t n, int64_t i)
{
    int64_t x = i % n, y = (i / n) % n, z = i / n / n;
    switch (k) {
    case GEN_POISSON2D:
        return 1 + (c1(x, n) - 1) + (c1(y, n) - 1);
    case GEN_POISSON3D:
        return 1 + (c1(x, n) - 1) + (c1(y, n) - 1) + (c1(z, n) - 1);
    case GEN_POISSON3D27:
        return c1(x, n) * c1(y, n) * c1(z, n);
    }
    return 0;
}

static void *gjob_run(void *arg)
{
    gjob *J = arg;
    csr_matrix *A = J->A;
    const int64_t n = J->n;
    const gen_kind k = J->kind;
    if (J->pass == 1) {
        int64_t s = 0;
        for (int64_t i = J->lo; i < J->hi; i++)
            s += row_len(k, n, i);
        J->sum = s;
        return NULL;
    }
    int64_t o = J->sum;
    int32_t *col = A->col;
    double *val = A->val;
    const int is2d = k == GEN_POISSON2D;
    const double diag = k == GEN_POISSON2D ? 4.0 : k == GEN_POISSON3D ? 6.0 : 26.0;
    int64_t x = J->lo % n, y = (J->lo / n) % n, z = is2d ? 0 : J->lo / n / n;
    for (int64_t i = J->lo; i < J->hi; i++) {
        A->rowptr[i] = o;
        int zlo = z > 0 ? -1 : 0, zhi = z < n - 1 ? 1 : 0;
        int ylo = y > 0 ? -1 : 0, yhi = y < n - 1 ? 1 : 0;
        int xlo = x > 0 ? -1 : 0, xhi = x < n - 1 ? 1 : 0;
        if (is2d)
            zlo = zhi = 0;
        for (int dz = zlo; dz <= zhi; dz++)
            for (int dy = ylo; dy <= yhi; dy++)
                for (int dx = xlo; dx <= xhi; dx++) {
                    int nz = (dz != 0) + (dy != 0) + (dx != 0);
                    if (k != GEN_POISSON3D27 && nz > 1)
                        continue;
                    col[o] = (int32_t)(i + ((int64_t)dz * n + dy) * n + dx);
                    val[o] = nz ? -1.0 : diag;
                    o++;
                }
        if (++x == n) {
            x = 0;
            if (++y == n) {
                y = 0;
                z++;
            }
        }
    }
    return NULL;
}

int gen_matrix(gen_kind k, int64_t n, csr_matrix *A, cls_error *err)
{
    csr_init(A);
    if (k != GEN_POISSON2D && k != GEN_POISSON3D && k != GEN_POISSON3D27)
        return cls_fail(err, CLS_EUSAGE, "unknown generator kind %d", (int)k);
    if (n < 1)
        return cls_fail(err, CLS_EUSAGE, "%s: grid size must be at least 1, not %lld",
                        gen_kind_name(k), (long long)n);
    int64_t rows;
    if (k == GEN_POISSON2D)
        rows = n <= INT32_MAX ? n * n : INT64_MAX;
    else
        rows = n <= 2097151 ? n * n * n : INT64_MAX; /* 2097151^3 < 2^63 */
    if (rows > INT32_MAX)
        return cls_fail(err, CLS_EUSAGE,
                        "%s %lld: %s rows exceed 2147483647, the limit of 32-bit column "
                        "indices",
                        gen_kind_name(k), (long long)n, k == GEN_POISSON2D ? "N^2" : "N^3");
    int64_t nnz = k == GEN_POISSON2D ? 5 * n * n - 4 * n
                  : k == GEN_POISSON3D ? 7 * n * n * n - 6 * n * n
                                       : (3 * n - 2) * (3 * n - 2) * (3 * n - 2);
    int rc = csr_alloc(A, rows, rows, nnz, err);
    if (rc)
        return rc;

    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu > 0 ? (int)(ncpu > 64 ? 64 : ncpu) : 1;
    if ((int64_t)nt > rows / 65536 + 1)
        nt = (int)(rows / 65536 + 1);
    gjob J[64];
    for (int t = 0; t < nt; t++) {
        J[t].kind = k;
        J[t].n = n;
        J[t].lo = rows * t / nt;
        J[t].hi = rows * (t + 1) / nt;
        J[t].A = A;
    }
    for (int pass = 1; pass <= 2; pass++) {
        if (pass == 2) {
            int64_t off = 0;
            for (int t = 0; t < nt; t++) {
                int64_t s = J[t].sum;
                J[t].sum = off;
                off += s;
            }
            if (off != nnz) { /* the closed form and the row counts disagree */
                csr_free(A);
                return cls_fail(err, CLS_EOTHER, "internal error: %s nnz %lld != %lld",
                                gen_kind_name(k), (long long)off, (long long)nnz);
            }
        }
        pthread_t tid[64];
        int started[64] = {0};
        for (int t = 0; t < nt; t++)
            J[t].pass = pass;
        for (int t = 1; t < nt; t++) {
            started[t] = pthread_create(&tid[t], NULL, gjob_run, &J[t]) == 0;
            if (!started[t])
                gjob_run(&J[t]);
        }
        gjob_run(&J[0]);
        for (int t = 1; t < nt; t++)
            if (started[t])
                pthread_join(tid[t], NULL);
    }
    A->rowptr[rows] = nnz;
    return CLS_OK;
}
