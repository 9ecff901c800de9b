/*
 * test_halo.c: partitions, halo plans and the distributed operations,
 * against the global matrix.
 *
 *   1. part_plan: every row in exactly one part, no empty part, the
 *      small-system rule, balance within one row's cost of the ideal.
 *   2. Halo plans on random sparse matrices (symmetric pattern and not, with
 *      empty rows and dense rows) and random partitions into 1..9 parts:
 *      the host exchange fills exactly the ghosts, and every part's SpMV
 *      with its halo equals the global reference SpMV bit for bit (the
 *      rows are summed in the same order); the send lists hold exactly
 *      the entries the neighbours' ghosts name.
 *   3. The device path (dvec_spmv: pack, read-back, exchange, ghost write,
 *      interior then boundary rows; and the compensated dots) on several
 *      parts in this process, each on its own OpenCL context, against the
 *      same reference.
 *   4. dsolve_file's cancel: a monitor on rank 0 that cancels at iteration
 *      5 stops every rank, all with the same exit class.
 * Runs on any number of ranks (ctest runs it alone; test_mpi_solve.sh under
 * mpirun): the parts are spread over the ranks as dsolve spreads them, and
 * the seed is rank 0's.
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "matrices/csr.h"
#include "solver/dsolve.h"
#include "solver/dist/dvec.h"
#include "solver/dist/halo.h"
#include "solver/dist/partition.h"

static cls_error err;
static int me, nranks;

#define OK(call)                                                                                   \
    do {                                                                                           \
        cls_error_clear(&err);                                                                     \
        int rc_ = (call);                                                                          \
        CHECK_MSG(rc_ == CLS_OK, "%s -> %d: %s", #call, rc_, err.msg);                             \
    } while (0)

static int64_t rnd(int64_t lo, int64_t hi) /* [lo, hi] */
{
    return lo + (int64_t)(check_rand() % (unsigned long long)(hi - lo + 1));
}

/* A random n x n matrix: each row a random number of entries (some empty,
 * one in ten dense-ish), optionally mirrored to a symmetric pattern. */
static void random_matrix(int64_t n, int symmetric, csr_matrix *A)
{
    coo_matrix C;
    coo_init(&C);
    int64_t cap = 1;
    for (int64_t i = 0; i < n; i++)
        cap += 2 * (1 + 12 + n / 4);
    C.row = malloc((size_t)cap * sizeof *C.row);
    C.col = malloc((size_t)cap * sizeof *C.col);
    C.val = malloc((size_t)cap * sizeof *C.val);
    C.nrows = C.ncols = n;
    C.cap = cap;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = check_rand() % 10 == 0 ? rnd(0, n / 4 + 1) : rnd(0, 6);
        if (check_rand() % 20 == 0)
            k = 0; /* an empty row */
        for (int64_t t = 0; t < k; t++) {
            int64_t j = rnd(0, n - 1);
            double v = 2.0 * check_uniform() - 1.0;
            C.row[C.nnz] = (int32_t)i;
            C.col[C.nnz] = (int32_t)j;
            C.val[C.nnz++] = v;
            if (symmetric && j != i) {
                C.row[C.nnz] = (int32_t)j;
                C.col[C.nnz] = (int32_t)i;
                C.val[C.nnz++] = v;
            }
        }
    }
    OK(csr_from_coo(&C, A, NULL, &err));
    coo_free(&C);
}

static int64_t csr_nnz_fn(const void *ctx, int64_t i)
{
    const csr_matrix *A = ctx;
    return A->rowptr[i + 1] - A->rowptr[i];
}

/* a synthetic row length: irregular, cheap, no matrix behind it */
static int64_t synth_nnz_fn(const void *ctx, int64_t i)
{
    (void)ctx;
    return 1 + (i * 7919 + i / 1000) % 29;
}

/* The sequential definition of a cut (partition.h): boundary j at the
 * first row whose running cost reaches total * (shares before j) / nshare,
 * on the nearer side; pieces of at least one row. */
static void ref_split(int64_t lo, int64_t hi, int k, const int *share, int64_t *bounds)
{
    int64_t total = 0, nshare = 0, acc = 0, cum = share[0];
    for (int64_t i = lo; i < hi; i++)
        total += synth_nnz_fn(NULL, i) + PART_ROW_COST;
    for (int j = 0; j < k; j++)
        nshare += share[j];
    bounds[0] = lo;
    bounds[k] = hi;
    int j = 1;
    for (int64_t i = lo; i < hi && j < k; i++) {
        int64_t w = synth_nnz_fn(NULL, i) + PART_ROW_COST;
        while (j < k && (__int128)(acc + w) * nshare >= (__int128)total * cum) {
            __int128 t = (__int128)total * cum;
            bounds[j] = t - (__int128)acc * nshare <= (__int128)(acc + w) * nshare - t ? i : i + 1;
            cum += share[j++];
        }
        acc += w;
    }
    for (; j < k; j++)
        bounds[j] = hi;
    for (j = 1; j < k; j++)
        if (bounds[j] < bounds[j - 1] + 1)
            bounds[j] = bounds[j - 1] + 1;
    for (j = k - 1; j >= 1; j--)
        if (bounds[j] > bounds[j + 1] - 1)
            bounds[j] = bounds[j + 1] - 1;
}

/* part_plan scans in parallel chunks and scans rows only inside the chunk
 * that holds a boundary: the boundaries and nonzeros must be those of one
 * sequential scan (CLS_THREADS=1), whatever the chunking */
static void test_partition_chunks(void)
{
    const int64_t n = 700001;
    for (int shape = 0; shape < 3; shape++) {
        int ranks = shape == 0 ? 3 : shape == 1 ? 4 : 1, g = shape == 2 ? 5 : 2;
        part_layout L1, L7;
        setenv("CLS_THREADS", "1", 1);
        OK(part_plan(n, synth_nnz_fn, NULL, ranks, g, 1000, 0, &L1, &err));
        setenv("CLS_THREADS", "7", 1);
        OK(part_plan(n, synth_nnz_fn, NULL, ranks, g, 1000, 0, &L7, &err));
        unsetenv("CLS_THREADS");
        CHECK(L1.nparts == ranks * g && L7.nparts == L1.nparts);
        int same = 1;
        for (int k = 0; k <= L1.nparts; k++)
            same &= L1.begin[k] == L7.begin[k];
        for (int k = 0; k < L1.nparts; k++) {
            int64_t s = 0;
            for (int64_t i = L1.begin[k]; i < L1.begin[k + 1]; i++)
                s += synth_nnz_fn(NULL, i);
            same &= L1.nnz[k] == s && L7.nnz[k] == s;
        }
        /* and both are the sequential definition: ranks, then each rank's devices */
        int64_t rb[8], pb[8];
        int shares[8];
        for (int r = 0; r < ranks; r++)
            shares[r] = g;
        ref_split(0, n, ranks, shares, rb);
        for (int d = 0; d < g; d++)
            shares[d] = 1;
        for (int r = 0; r < ranks; r++) {
            ref_split(rb[r], rb[r + 1], g, shares, pb);
            for (int d = 0; d < g; d++)
                same &= L1.begin[r * g + d] == pb[d];
        }
        CHECK_MSG(same, "part_plan: %d ranks x %d: chunked scan differs from the sequential one",
                  ranks, g);
        part_free(&L1);
        part_free(&L7);
    }
}

static void test_partition(void)
{
    test_partition_chunks();
    /* 500 rows over 8 GPUs with the default floor: one part */
    csr_matrix A;
    random_matrix(500, 1, &A);
    part_layout L;
    OK(part_plan(A.nrows, csr_nnz_fn, &A, 4, 2, 0, 0, &L, &err));
    CHECK(L.nparts == 1 && L.begin[1] == 500 && L.rank[0] == 0);
    CHECK(L.first[0] == 0 && L.first[1] == 1 && L.first[4] == 1);
    part_free(&L);
    /* floor 100: five parts, one per rank first */
    OK(part_plan(A.nrows, csr_nnz_fn, &A, 4, 2, 100, 0, &L, &err));
    CHECK(L.nparts == 5);
    CHECK(L.rank[0] == 0 && L.rank[1] == 0 && L.rank[2] == 1 && L.rank[3] == 2 && L.rank[4] == 3);
    part_free(&L);
    csr_free(&A);

    /* almost as many parts as rows, the cost in the first row: the first
     * cut's block for rank 0 (4 parts) must still hold 4 rows (it held 1,
     * so 3 parts were empty, before the cut kept each rank's share) */
    {
        coo_matrix C;
        coo_init(&C);
        C.nrows = C.ncols = 14;
        C.cap = 64;
        C.row = malloc(64 * sizeof *C.row);
        C.col = malloc(64 * sizeof *C.col);
        C.val = malloc(64 * sizeof *C.val);
        for (int j = 0; j < 14; j++) {
            C.row[C.nnz] = 0, C.col[C.nnz] = j, C.val[C.nnz++] = 1.0;
            if (j)
                C.row[C.nnz] = j, C.col[C.nnz] = j, C.val[C.nnz++] = 1.0;
        }
        OK(csr_from_coo(&C, &A, NULL, &err));
        coo_free(&C);
        OK(part_plan(14, csr_nnz_fn, &A, 4, 4, 1, 0, &L, &err));
        CHECK(L.nparts == 14);
        for (int k = 0; k < L.nparts; k++)
            CHECK_MSG(L.begin[k + 1] == L.begin[k] + 1, "part %d is [%lld, %lld)", k,
                      (long long)L.begin[k], (long long)L.begin[k + 1]);
        part_free(&L);
        csr_free(&A);
    }

    for (int trial = 0; trial < 40; trial++) {
        int64_t n = rnd(1, 3000);
        random_matrix(n, trial % 2, &A);
        int ranks = (int)rnd(1, 5), g = (int)rnd(1, 4);
        OK(part_plan(n, csr_nnz_fn, &A, ranks, g, 1, 0, &L, &err));
        int64_t want = n < ranks * g ? n : ranks * g;
        CHECK_MSG(L.nparts == want, "n %lld: %d parts, want %lld", (long long)n, L.nparts,
                  (long long)want);
        CHECK(L.begin[0] == 0 && L.begin[L.nparts] == n);
        int64_t total = 0, maxw = 0, tot_nnz = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t w = csr_nnz_fn(&A, i) + PART_ROW_COST;
            total += w;
            if (w > maxw)
                maxw = w;
        }
        for (int k = 0; k < L.nparts; k++) {
            CHECK_MSG(L.begin[k + 1] > L.begin[k], "n %lld, %d ranks x %d: part %d is [%lld, %lld)",
                      (long long)n, ranks, g, k, (long long)L.begin[k], (long long)L.begin[k + 1]);
            CHECK(L.slot[k] < g && L.rank[k] < ranks);
            CHECK(part_owner(&L, L.begin[k]) == k && part_owner(&L, L.begin[k + 1] - 1) == k);
            tot_nnz += L.nnz[k];
            /* balance: within two rows' cost of the part's share (one at each
             * end), when no part was forced to a single row */
            if (n >= 4 * L.nparts) {
                int64_t w = 0;
                for (int64_t i = L.begin[k]; i < L.begin[k + 1]; i++)
                    w += csr_nnz_fn(&A, i) + PART_ROW_COST;
                double share = (double)total / L.nparts;
                CHECK_MSG(fabs((double)w - share) <= 2.0 * (double)maxw * L.devices_per_rank + 1,
                          "part %d of %d: cost %lld, share %.1f, row max %lld", k, L.nparts,
                          (long long)w, share, (long long)maxw);
            }
        }
        CHECK(tot_nnz == A.nnz);
        part_free(&L);
        csr_free(&A);
    }
}

/* Layout of n rows in nparts random parts over the communicator's ranks. */
static void random_layout(int64_t n, int nparts, part_layout *L)
{
    int64_t *b = malloc(((size_t)nparts + 1) * sizeof *b);
    b[0] = 0;
    b[nparts] = n;
    /* nparts - 1 distinct cut points in 1..n-1, sorted */
    for (int k = 1; k < nparts; k++) {
        int64_t c;
        int dup;
        do {
            c = rnd(1, n - 1);
            dup = 0;
            for (int j = 1; j < k; j++)
                dup |= b[j] == c;
        } while (dup);
        int j = k;
        while (j > 1 && b[j - 1] > c) {
            b[j] = b[j - 1];
            j--;
        }
        b[j] = c;
    }
    int g = (nparts + nranks - 1) / nranks;
    OK(part_from_bounds(n, b, NULL, nparts, nranks, g, L, &err));
    free(b);
}

/* The parts of this rank: views into a copy of A's rows, renumbered. */
typedef struct {
    csr_matrix blk;
    csr_matrix A[16];
    halo_plan h[16];
    int n;
} my_parts;

static void setup_parts(const csr_matrix *A, const part_layout *L, my_parts *P)
{
    memset(P, 0, sizeof *P);
    int f = L->first[me], e = L->first[me + 1];
    P->n = e - f;
    int64_t rb = L->begin[f], re = L->begin[e];
    int64_t nnz = A->rowptr[re] - A->rowptr[rb];
    OK(csr_alloc(&P->blk, re - rb, A->ncols, nnz, &err));
    for (int64_t i = rb; i <= re; i++)
        P->blk.rowptr[i - rb] = A->rowptr[i] - A->rowptr[rb];
    memcpy(P->blk.col, A->col + A->rowptr[rb], (size_t)nnz * sizeof(int32_t));
    memcpy(P->blk.val, A->val + A->rowptr[rb], (size_t)nnz * sizeof(double));
    for (int k = 0; k < P->n; k++) {
        int pi = f + k;
        int64_t off = L->begin[pi] - rb, nr = L->begin[pi + 1] - L->begin[pi];
        csr_matrix *V = &P->A[k];
        V->rowptr = P->blk.rowptr + off;
        V->col = P->blk.col + P->blk.rowptr[off];
        V->val = P->blk.val + P->blk.rowptr[off];
        V->nrows = nr;
        V->ncols = A->ncols;
        V->nnz = P->blk.rowptr[off + nr] - P->blk.rowptr[off];
        OK(halo_plan_local(&P->h[k], V, L, pi, &err));
    }
    OK(halo_plan_exchange(MPI_COMM_WORLD, L, P->h, P->n, &err));
}

static void free_parts(my_parts *P)
{
    for (int k = 0; k < P->n; k++)
        halo_plan_free(&P->h[k]);
    csr_free(&P->blk);
}

static void test_host_halo(void)
{
    for (int trial = 0; trial < 60; trial++) {
        int64_t n = rnd(1, 400);
        int nparts = (int)rnd(1, 9);
        if (nparts > n)
            nparts = (int)n;
        csr_matrix A;
        random_matrix(n, trial % 3 != 0, &A);
        part_layout L;
        random_layout(n, nparts, &L);
        my_parts P;
        setup_parts(&A, &L, &P);

        double *xg = malloc((size_t)n * sizeof *xg), *yg = malloc((size_t)n * sizeof *yg);
        for (int64_t i = 0; i < n; i++)
            xg[i] = 2.0 * check_uniform() - 1.0;
        csr_spmv_ref(&A, xg, yg);

        double *xs[16];
        halo_comm hc;
        OK(halo_comm_init(&hc, MPI_COMM_WORLD, &L, P.h, P.n, sizeof(double), NULL, NULL, &err));
        for (int k = 0; k < P.n; k++) {
            const halo_plan *h = &P.h[k];
            xs[k] = malloc((size_t)(h->nlocal + h->nghost + 1) * sizeof(double));
            for (int64_t i = 0; i < h->nlocal; i++)
                xs[k][i] = xg[h->row_begin + i];
            for (int64_t g = 0; g < h->nghost; g++)
                xs[k][h->nlocal + g] = NAN; /* must be overwritten */
            /* ghosts sorted, off-part, each used */
            for (int64_t g = 1; g < h->nghost; g++)
                CHECK(h->ghost_global[g] > h->ghost_global[g - 1]);
            CHECK(h->ninterior + h->nboundary == h->nlocal);
        }
        OK(halo_exchange_host(&hc, xs, &err));
        int64_t sent = 0, ghosts = 0;
        for (int k = 0; k < P.n; k++) {
            const halo_plan *h = &P.h[k];
            for (int64_t g = 0; g < h->nghost; g++)
                CHECK_MSG(xs[k][h->nlocal + g] == xg[h->ghost_global[g]],
                          "part %d ghost %lld (row %lld)", h->part, (long long)g,
                          (long long)h->ghost_global[g]);
            double *y = malloc((size_t)(h->nlocal + 1) * sizeof *y);
            halo_spmv_host(&P.A[k], xs[k], y);
            for (int64_t i = 0; i < h->nlocal; i++)
                CHECK_MSG(y[i] == yg[h->row_begin + i], "part %d row %lld: %.17g vs %.17g", h->part,
                          (long long)i, y[i], yg[h->row_begin + i]);
            /* boundary rows are exactly those with a ghost column */
            for (int64_t t = 0; t < h->nboundary; t++) {
                const csr_matrix *V = &P.A[k];
                int32_t i = h->boundary[t];
                int ghost = 0;
                for (int64_t j = V->rowptr[i] - V->rowptr[0]; j < V->rowptr[i + 1] - V->rowptr[0];
                     j++)
                    ghost |= V->col[j] >= h->nlocal;
                CHECK(ghost);
            }
            free(y);
            sent += h->nsend_total;
            ghosts += h->nghost;
        }
        /* exactly what is needed moves: entries sent == ghosts received */
        int64_t tot[2] = {sent, ghosts};
        MPI_Allreduce(MPI_IN_PLACE, tot, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        CHECK_MSG(tot[0] == tot[1], "sent %lld entries for %lld ghosts", (long long)tot[0],
                  (long long)tot[1]);
        for (int k = 0; k < P.n; k++)
            free(xs[k]);
        halo_comm_free(&hc);
        free(xg);
        free(yg);
        free_parts(&P);
        part_free(&L);
        csr_free(&A);
    }
}

/* y = A x on the device over layout L (this rank's parts, each its own
 * context), returned whole on every rank; also the compensated x'x and y'x. */
static int device_spmv(const csr_matrix *A, const part_layout *L, const double *xg,
                       la_spmv_variant variant, int fused, double *yg, double dots[2])
{
    my_parts P;
    setup_parts(A, L, &P);
    dpart *parts = calloc((size_t)(P.n ? P.n : 1), sizeof *parts);
    for (int k = 0; k < P.n; k++) {
        parts[k].part = P.h[k].part;
        parts[k].slot = k;
        parts[k].A = P.A[k];
        parts[k].halo = P.h[k];
    }
    dsys s;
    cls_error_clear(&err);
    int rc = dsys_open(&s, MPI_COMM_WORLD, L, parts, P.n, "auto", L->devices_per_rank, LA_DOUBLE,
                       variant, fused, NULL, NULL, &err);
    CHECK_MSG(rc == CLS_OK, "dsys_open: %s", err.msg);
    memset(yg, 0, (size_t)A->nrows * sizeof *yg);
    if (rc == CLS_OK) {
        dvec x, y;
        OK(dvec_create(&s, 1, &x, &err));
        OK(dvec_create(&s, 0, &y, &err));
        double *xs[16], *ys[16];
        for (int k = 0; k < P.n; k++) {
            xs[k] = (double *)xg + P.h[k].row_begin;
            ys[k] = yg + P.h[k].row_begin;
        }
        OK(dvec_upload(&s, &x, xs, &err));
        for (int rep = 0; rep < 2; rep++) { /* twice: staging buffers reused */
            dvec_fill(&s, NAN, &y);         /* poisoned: a row not written stays NaN */
            dvec_spmv(&s, &x, &y);
        }
        CHECK_MSG(!s.failed, "dvec_spmv: %s", s.ferr.msg);
        OK(dvec_download(&s, &y, ys, &err));
        const dvec *xv[2] = {&x, &y}, *yv[2] = {&x, &x};
        dsum ls;
        double v[3];
        dvec_dots_local(&s, 2, xv, yv, &ls);
        OK(dsys_allreduce(&s, &ls, v, 0, NULL, &err));
        dots[0] = v[0];
        dots[1] = v[1];
        dvec_release(&x);
        dvec_release(&y);
    }
    dsys_close(&s);
    free(parts);
    free_parts(&P);
    /* one rank owns each row; the others add exact zeros */
    MPI_Allreduce(MPI_IN_PLACE, yg, (int)A->nrows, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return rc;
}

/* The device path against the host reference (to rounding: the device may
 * contract to fma), and against itself on one part: bit for bit, the
 * property that makes a K-part solve follow the one-part solve. */
static void test_device_halo(void)
{
    for (int trial = 0; trial < 6; trial++) {
        int64_t n = rnd(50, 2000);
        int nparts = (int)rnd(2, 4) * nranks;
        csr_matrix A;
        random_matrix(n, 1, &A);
        part_layout L, L1;
        random_layout(n, nparts, &L);
        int64_t b1[2] = {0, n};
        OK(part_from_bounds(n, b1, NULL, 1, nranks, 1, &L1, &err));
        double *xg = malloc((size_t)n * sizeof *xg), *yr = malloc((size_t)n * sizeof *yr);
        double *yk = malloc((size_t)n * sizeof *yk), *y1 = malloc((size_t)n * sizeof *y1);
        for (int64_t i = 0; i < n; i++)
            xg[i] = 2.0 * check_uniform() - 1.0;
        csr_spmv_ref(&A, xg, yr);
        la_spmv_variant var = trial % 2 ? LA_SPMV_VECTOR : LA_SPMV_AUTO;
        /* even trials: the split-CSR twin; odd: the fused engine's format
         * blocks (interior rows first, boundary rows at an offset) */
        const int fused = (trial / 2) % 2 == 1 || trial == 5;
        double dk[2] = {0, 0}, d1[2] = {0, 0};
        if (device_spmv(&A, &L, xg, var, fused, yk, dk) == CLS_OK &&
            device_spmv(&A, &L1, xg, var, fused, y1, d1) == CLS_OK) {
            long double ref0 = 0, ref1 = 0;
            for (int64_t i = 0; i < n; i++) {
                double mag = 0;
                for (int64_t j = A.rowptr[i]; j < A.rowptr[i + 1]; j++)
                    mag += fabs(A.val[j] * xg[A.col[j]]);
                CHECK_MSG(fabs(yk[i] - yr[i]) <= 1e-14 * mag, "row %lld: %.17g vs %.17g",
                          (long long)i, yk[i], yr[i]);
                CHECK_MSG(yk[i] == y1[i], "row %lld: %d parts %.17g, one part %.17g", (long long)i,
                          nparts, yk[i], y1[i]);
                ref0 += (long double)xg[i] * xg[i];
                ref1 += (long double)yk[i] * xg[i];
            }
            CHECK_MSG(fabsl(dk[0] - ref0) <= 1e-15L * ref0, "x'x %.17g vs %.17Lg", dk[0], ref0);
            CHECK_MSG(fabsl(dk[1] - ref1) <= 1e-15L * fabsl(ref1) + 1e-300L, "y'x %.17g vs %.17Lg",
                      dk[1], ref1);
            CHECK_MSG(dk[0] == d1[0] && dk[1] == d1[1], "dots differ between %d parts and one",
                      nparts);
        }
        free(xg);
        free(yr);
        free(yk);
        free(y1);
        part_free(&L);
        part_free(&L1);
        csr_free(&A);
    }
}

static int cancel_at_5(void *ctx, int64_t it, double res)
{
    (void)ctx;
    (void)res;
    return it >= 5;
}

static void test_cancel(void)
{
    for (int method = 0; method < 2; method++) {
        dsolve_options o;
        dsolve_options_default(&o);
        o.min_rows_per_part = 1;
        o.devices_per_rank = 2;
        o.solve.tol = 1e-12;
        o.solve.method = method ? SOLVER_PIPECG : SOLVER_CG;
        o.solve.monitor = cancel_at_5;
        dsolve_report rep;
        cls_error_clear(&err);
        int rc = dsolve_file(MPI_COMM_WORLD, "gen:poisson3d:12", NULL, NULL, &o, &rep, NULL, &err);
        int all[2] = {rc, -rc};
        MPI_Allreduce(MPI_IN_PLACE, all, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CHECK_MSG(all[0] == -all[1], "ranks disagree on the exit class");
        CHECK_MSG(rc == CLS_EOTHER && rep.cg.reason == CG_CANCELLED, "%s: rc %d reason %d: %s",
                  method ? "pipecg" : "cg", rc, (int)rep.cg.reason, err.msg);
        CHECK_MSG(rep.cg.iterations >= 5 && rep.cg.iterations <= 7, "cancelled after %lld",
                  (long long)rep.cg.iterations);
        CHECK(me != 0 || rep.nparts == 2 * nranks);
        dsolve_report_free(&rep);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
        return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (me == 0)
        check_seed("test_halo");
    MPI_Bcast(&check_rng_state, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    test_partition();
    test_host_halo();
    test_device_halo();
    test_cancel();
    int f = check_failures;
    MPI_Allreduce(MPI_IN_PLACE, &f, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    char name[64];
    snprintf(name, sizeof name, "test_halo (rank %d of %d)", me, nranks);
    int rc = check_done(name);
    MPI_Finalize();
    return rc || f ? 1 : 0;
}
