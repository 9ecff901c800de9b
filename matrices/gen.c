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
 * and the totals are 5N^2 - 4N, 7N^3 - 6N^2 and (3N-2)^3. The rows are
 * built by gen_rows.c (the generator of `gen:` solves too, and the owner of
 * the kind names), in parallel; this file checks the sizes and the closed
 * form.
 */
#include "gen.h"

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
    int64_t nnz = k == GEN_POISSON2D   ? 5 * n * n - 4 * n
                  : k == GEN_POISSON3D ? 7 * n * n * n - 6 * n * n
                                       : (3 * n - 2) * (3 * n - 2) * (3 * n - 2);
    gen_grid g = {k, n, n, k == GEN_POISSON2D ? 1 : n};
    int rc = gen_grid_rows_csr(&g, 0, rows, A, err);
    if (!rc && A->nnz != nnz) { /* the closed form and the row counts disagree */
        csr_free(A);
        return cls_fail(err, CLS_EOTHER, "internal error: %s nnz %lld != %lld", gen_kind_name(k),
                        (long long)A->nnz, (long long)nnz);
    }
    return rc;
}
