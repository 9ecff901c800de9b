/*
 * dinput.c: phase 1 of dsolve_file, the input. Every rank parses its share
 * of the file's bytes (dinput_ranged.c, the default on several ranks), or
 * rank 0 reads the Matrix Market file and scatters row blocks, or every
 * rank reads it (--read everywhere), or every rank generates its own rows
 * (gen:...). b and x0 are read by rank 0 and scattered (every rank reads
 * them with --read everywhere). Then the layout (partition.h), and the
 * scaling by powers of two that keeps b'b and p'Ap inside the
 * floating-point range (dsolve_scale, dsolve_unscale_x). The messages
 * between ranks are dcomm.c's. See dsolve.h for the contract.
 */
#include "dsolve_priv.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/parallel.h"
#include "../common/sysres.h"
#include "../common/trace.h"
#include "../matrices/csr_bin.h"
#include "../matrices/gen_rows.h"
#include "../matrices/mm.h"
#include "dist/dvec.h"
#include "pc/pc.h"

/* ----------------------------------------------------------------- input */

static int64_t csr_row_nnz(const void *ctx, int64_t i)
{
    const csr_matrix *A = ctx;
    return A->rowptr[i + 1] - A->rowptr[i];
}

static int64_t grid_row_nnz(const void *ctx, int64_t i)
{
    return gen_grid_row_nnz(ctx, i);
}

/* rows [r0, r1) of A as a matrix of its own (rowptr from 0) */
static int csr_extract(const csr_matrix *A, int64_t r0, int64_t r1, csr_matrix *B, cls_error *err)
{
    int64_t nnz = A->rowptr[r1] - A->rowptr[r0];
    int rc = csr_alloc(B, r1 - r0, A->ncols, nnz, err);
    if (rc)
        return rc;
    for (int64_t i = r0; i <= r1; i++)
        B->rowptr[i - r0] = A->rowptr[i] - A->rowptr[r0];
    memcpy(B->col, A->col + A->rowptr[r0], (size_t)nnz * sizeof *B->col);
    memcpy(B->val, A->val + A->rowptr[r0], (size_t)nnz * sizeof *B->val);
    return CLS_OK;
}

/* Keeps only rows [0, r1) of A, shrinking its arrays (rank 0's block). */
static void csr_keep_prefix(csr_matrix *A, int64_t r1)
{
    int64_t nnz = A->rowptr[r1];
    int64_t *rp = realloc(A->rowptr, (size_t)(r1 + 1) * sizeof *rp);
    if (rp)
        A->rowptr = rp;
    int32_t *c = realloc(A->col, (size_t)(nnz ? nnz : 1) * sizeof *c);
    if (c)
        A->col = c;
    double *v = realloc(A->val, (size_t)(nnz ? nnz : 1) * sizeof *v);
    if (v)
        A->val = v;
    A->nrows = r1;
    A->nnz = nnz;
}

/* b = A * 1 over a block: row sums, in the order csr_spmv_ref adds them */
typedef struct rowsum_ctx {
    const csr_matrix *B;
    double *b;
} rowsum_ctx;

static void row_sums_range(void *arg, int range, int64_t i0, int64_t i1)
{
    (void)range;
    const rowsum_ctx *c = arg;
    const csr_matrix *B = c->B;
    for (int64_t i = i0; i < i1; i++) {
        double s = 0.0;
        for (int64_t k = B->rowptr[i]; k < B->rowptr[i + 1]; k++)
            s += B->val[k] * 1.0;
        c->b[i] = s;
    }
}

/* b = A 1, rows in parallel (each row's sum in entry order: the same bits
 * on any thread count) */
void dsolve_row_sums(const csr_matrix *B, double *b)
{
    rowsum_ctx c = {B, b};
    cls_parallel_for(B->nrows, 65536, row_sums_range, &c);
}

/* "gen:random:K": K pseudo-random right-hand sides (benchmarks without
 * files of N^3 rows): entry (i, c) is a splitmix64 hash of the global row
 * and the column, uniform in [-1, 1), so every layout sees the same b.
 * Returns 1 for a gen: spec (*k set, or CLS_EINPUT in *rc), 0 otherwise. */
static int rhs_gen_spec(const char *p, int *k, int *rc, cls_error *err)
{
    if (strncmp(p, "gen:", 4))
        return 0;
    char *end;
    long v = strncmp(p, "gen:random:", 11) ? 0 : strtol(p + 11, &end, 10);
    *rc = CLS_OK;
    if (v < 1 || v > DSOLVE_MAX_RHS || *end)
        *rc = cls_fail(err, CLS_EINPUT,
                       "right-hand side generator '%.64s': give gen:random:K with K in 1..%d", p,
                       DSOLVE_MAX_RHS);
    else
        *k = (int)v;
    return 1;
}

static double rhs_gen_value(int64_t row, int c)
{
    uint64_t z = (uint64_t)row * 64u + (uint64_t)c + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-52 - 1.0;
}

/* The read's cap on threads (0: one a CPU, mm_read_options.max_threads),
 * one fewer on a host of 8 CPUs or more while the prewarm starts the
 * device beside the read (a small file still takes fewer by its size). The driver's
 * start keeps a core busy for most of the read (0.25 s on an H200 host),
 * and the assembly cuts the entries into fixed ranges, one a thread, so a
 * thread that shares that core holds every other back: p256 on 16 cores
 * (docs/benchmarks.md, 2026-12-02), the assembly 0.175 -> 0.158 s and the
 * read 0.350 -> 0.336 s (medians). On fewer CPUs a core is worth more than
 * the straggler costs. */
static int dinput_read_threads(void)
{
    const int cpus = cls_sysres_cpus();
    return !dsys_prewarm_active() || cpus < 8 ? 0 : cpus - 1;
}

/* b (the columns of every file, in order: *k of them, column-major n x k)
 * and x0 */
static int read_vectors(const char *a_path, const char *const *b_paths, int nb_paths,
                        const char *x0_path, int64_t nrows, double **b, int *k, double **x0,
                        cls_error *err)
{
    int64_t n = 0;
    int rc;
    *k = 0;
    for (int f = 0; f < nb_paths; f++) {
        double *v = NULL;
        int64_t rows = 0, cols = 0;
        if ((rc = mm_read_block(b_paths[f], DSOLVE_MAX_RHS - *k, &v, &rows, &cols, err)))
            return rc;
        if (rows != nrows) {
            free(v);
            if (cols == 1)
                return cls_fail(err, CLS_EINPUT,
                                "%s: right-hand side has %lld entries but %s has %lld rows",
                                b_paths[f], (long long)rows, a_path, (long long)nrows);
            return cls_fail(err, CLS_EINPUT,
                            "%s: right-hand sides are %lld x %lld but %s has %lld rows", b_paths[f],
                            (long long)rows, (long long)cols, a_path, (long long)nrows);
        }
        if (*k + cols > DSOLVE_MAX_RHS) {
            free(v);
            return cls_fail(err, CLS_EINPUT, "%s: more than %d right-hand sides in all", b_paths[f],
                            DSOLVE_MAX_RHS);
        }
        double *nb =
            realloc(*b, (size_t)(nrows * (*k + cols) > 0 ? nrows * (*k + cols) : 1) * sizeof *nb);
        if (!nb) {
            free(v);
            return cls_fail(err, CLS_EOTHER, "out of memory for the right-hand sides");
        }
        *b = nb;
        memcpy(nb + nrows * *k, v, (size_t)(nrows * cols) * sizeof *nb);
        free(v);
        *k += (int)cols;
    }
    if (x0_path) {
        if ((rc = mm_read_vector(x0_path, x0, &n, err)))
            return rc;
        if (n != nrows)
            return cls_fail(err, CLS_EINPUT,
                            "%s: initial guess has %lld entries but %s has %lld columns", x0_path,
                            (long long)n, a_path, (long long)nrows);
    }
    return CLS_OK;
}

/* rank 0 sends v's slices to the ranks (or every rank slices its own copy
 * when have_all); out receives this rank's slice */
static int scatter_vector(MPI_Comm comm, const part_layout *L, const double *v, int have_all,
                          double *out, cls_error *err)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int64_t rb = L->begin[L->first[me]], re = L->begin[L->first[me + 1]];
    if (have_all || me == 0) {
        if (re > rb)
            memcpy(out, v + rb, (size_t)(re - rb) * sizeof *out);
        if (have_all)
            return CLS_OK;
        for (int r = 1; r < size; r++) {
            int64_t a = L->begin[L->first[r]], e = L->begin[L->first[r + 1]];
            int rc = dsolve_send_big(v + a, e - a, MPI_DOUBLE, sizeof(double), r, comm, err);
            if (rc)
                return rc;
        }
        return CLS_OK;
    }
    return dsolve_recv_big(out, re - rb, MPI_DOUBLE, sizeof(double), 0, comm, err);
}

static int64_t rank_nnz(const part_layout *L, int r)
{
    int64_t s = 0;
    for (int k = L->first[r]; k < L->first[r + 1]; k++)
        s += L->nnz[k];
    return s;
}

int dsolve_input(MPI_Comm comm, const char *a_path, const char *const *b_paths, int nb_paths,
                 const char *x0_path, const dsolve_options *opt, int G, ds_input *in,
                 cls_error *err)
{
    int me, size, rc = CLS_OK;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    const int gen = strncmp(a_path, "gen:", 4) == 0;
    const dsolve_read_mode mode = opt->read_everywhere ? DSOLVE_READ_EVERYWHERE : opt->read_mode;
    const int everywhere = !gen && mode == DSOLVE_READ_EVERYWHERE;
    csr_matrix A; /* the whole matrix, where it is read */
    double *bf = NULL, *x0f = NULL;
    gen_grid grid;
    csr_init(&A);
    csr_init(&in->blk);
    in->preparsed = 0;
    in->amax = -1.0;            /* unknown until the whole matrix's check (below) */
    int genk = 0, grc = CLS_OK; /* -b gen:random:K */
    if (nb_paths == 1 && rhs_gen_spec(b_paths[0], &genk, &grc, err)) {
        if (grc)
            return dsolve_agree(comm, grc, err);
        nb_paths = 0; /* nothing to read: each rank makes its rows */
    }

    struct {
        int64_t nrows, ncols, nnz, duplicates;
        int has_b, has_x0, nrhs;
    } hdr;
    int nrhs = 0;
    memset(&hdr, 0, sizeof hdr);

    /* 1-. a matrix the daemon parsed while its upload arrived (take_matrix,
     * rank 0's): its parse is done, so it is taken on any number of ranks,
     * and the others get their rows from rank 0 (1c) rather than parse
     * their byte ranges after the upload ended. The ranks agree on it (the
     * workers have no take_matrix: rank 0 says). */
    int took = 0;
    mm_header th;
    mm_read_stats tst;
    memset(&tst, 0, sizeof tst);
    if (!gen && !everywhere && mode != DSOLVE_READ_RANGED) {
        if (me == 0 && opt->take_matrix && opt->take_matrix(opt->take_ctx, a_path, &A, &th, &tst))
            took = 1;
        if (size > 1 && MPI_Bcast(&took, 1, MPI_INT, 0, comm) != MPI_SUCCESS) {
            csr_free(&A);
            return dsolve_agree(comm, cls_fail(err, CLS_EOTHER, "MPI_Bcast(taken) failed"), err);
        }
    }
    /* 1-. else every rank its share of the file's bytes, where it can */
    int ranged = 0;
    mm_header rh;
    mm_where rw;
    int64_t *bin_rowptr = NULL;
    int stream = 0;
    if (!gen && !took && (mode == DSOLVE_READ_RANGED || (mode == DSOLVE_READ_AUTO && size > 1))) {
        ranged = dsolve_ranged_possible(comm, a_path, &rh, &rw, &bin_rowptr, &stream);
        if (!ranged && mode == DSOLVE_READ_RANGED) {
            if (me == 0 && !(rc = mm_read_header_at(a_path, &rh, &rw, err)) &&
                !(rw.binary && (rc = csr_bin_read_rowptr(a_path, &rh, &bin_rowptr, err))))
                rc = cls_fail(err, CLS_EINPUT,
                              "%s: cannot be read in ranges (--read ranged): that needs a plain "
                              "(not gzip) coordinate Matrix Market file or the binary form that "
                              "every rank sees alike",
                              a_path);
            free(bin_rowptr);
            return dsolve_agree(comm, me == 0 ? rc : CLS_OK, err);
        }
    }

    /* 1a. who reads what */
    if (gen) {
        rc = gen_grid_parse(a_path + 4, &grid, err);
        if (!rc) {
            hdr.nrows = hdr.ncols = gen_grid_rows(&grid);
            hdr.nnz = gen_grid_nnz(&grid);
        }
        if (!rc && me == 0)
            rc = read_vectors(a_path, b_paths, nb_paths, x0_path, hdr.nrows, &bf, &nrhs, &x0f, err);
    } else if (ranged) {
        rc = dsolve_read_ranged(comm, a_path, &rh, &rw, bin_rowptr, stream, opt, G, &in->L,
                                &in->blk, &hdr.nnz, &hdr.duplicates, err);
        free(bin_rowptr);
        bin_rowptr = NULL;
        if (rc)
            goto done; /* agreed */
        hdr.nrows = hdr.ncols = rh.rows;
        if (me == 0)
            rc = read_vectors(a_path, b_paths, nb_paths, x0_path, hdr.nrows, &bf, &nrhs, &x0f, err);
        for (int c = 0; !rc && me == 0 && c < nrhs; c++)
            rc = solve_check_vector(bf + c * hdr.nrows, hdr.nrows, "right-hand side", err);
    } else if (everywhere || me == 0) {
        mm_header h;
        mm_read_stats st;
        memset(&st, 0, sizeof st);
        mm_read_options ro = {.max_threads = dinput_read_threads(),
                              .progress = opt->read_progress,
                              .progress_ctx = opt->read_ctx,
                              .max_memory = opt->read_max_memory};
        if (took) {
            h = th;
            st = tst;
            in->preparsed = 1;
        } else {
            rc = mm_read_csr(a_path, &ro, &A, &h, &st, err);
        }
        cls_trace("input: matrix read (the checks follow)");
        if (!rc) {
            hdr.nrows = A.nrows;
            hdr.ncols = A.ncols;
            hdr.nnz = A.nnz;
            hdr.duplicates = st.duplicates;
            rc = read_vectors(a_path, b_paths, nb_paths, x0_path, A.nrows, &bf, &nrhs, &x0f, err);
        }
        /* the checks need the whole matrix: rank 0 makes them. One rank
         * keeps what their passes over the values find: max |a_ij| for
         * the scaling, b = A*1 when no b is given, D^-1 for a
         * preconditioner that may want it (arrays of the rows read) */
        solve_check_more more = {-1.0, NULL, NULL};
        if (!rc && me == 0 && size == 1) {
            if (nb_paths == 0 && genk == 0)
                more.rowsum = malloc((size_t)(A.nrows ? A.nrows : 1) * sizeof(double));
            if (G == 1 && pc_may_use_diag(opt->solve.precond)) /* one part */
                more.dinv = malloc((size_t)(A.nrows ? A.nrows : 1) * sizeof(double));
        }
        if (!rc && me == 0)
            rc = solve_check_input_stored(
                &A, bf, bf ? A.nrows : 0, a_path,
                h.layout == MM_COORDINATE &&
                    (h.symmetry == MM_SYMMETRIC || h.symmetry == MM_SKEW_SYMMETRIC),
                &more, err);
        if (!rc && me == 0) {
            in->amax = more.amax;
            in->b1 = more.rowsum;
            in->dinv = more.dinv;
        } else {
            free(more.rowsum);
            free(more.dinv);
        }
        for (int c = 1; !rc && me == 0 && c < nrhs; c++) /* and every further column */
            rc = solve_check_vector(bf + c * A.nrows, A.nrows, "right-hand side", err);
    }
    /* an initial guess is input as b is: a non-finite entry (duplicates
     * summed to infinity) is bad input, found here rather than as a
     * breakdown of the first residual */
    for (int c = 0; !rc && me == 0 && gen && bf && c < nrhs; c++)
        rc = solve_check_vector(bf + c * hdr.nrows, hdr.nrows, "right-hand side", err);
    if (!rc && me == 0 && x0f)
        rc = solve_check_vector(x0f, hdr.nrows, "initial guess", err);
    if ((rc = dsolve_agree(comm, rc, err)))
        goto done;

    cls_trace("input: read (or header of the generator)");
    /* 1b. the layout, where the row lengths are known; the number of
     * right-hand sides is rank 0's count (it read the files) */
    if (MPI_Bcast(&nrhs, 1, MPI_INT, 0, comm) != MPI_SUCCESS) {
        rc = cls_fail(err, CLS_EOTHER, "MPI_Bcast(right-hand sides) failed");
        goto done;
    }
    hdr.has_b = nb_paths > 0 || genk > 0;
    hdr.nrhs = genk > 0 ? genk : nb_paths > 0 ? nrhs : 1;
    hdr.has_x0 = x0_path != NULL;
    const int64_t min_rows = opt->min_rows_per_part;
    if (ranged) {
        /* laid out by the read */
    } else if (gen || everywhere) {
        rc = part_plan(hdr.nrows, gen ? grid_row_nnz : csr_row_nnz, gen ? (void *)&grid : &A, size,
                       G, min_rows, DSOLVE_MAX_PARTS, &in->L, err);
    } else {
        if (me == 0)
            rc = part_plan(hdr.nrows, csr_row_nnz, &A, size, G, min_rows, DSOLVE_MAX_PARTS, &in->L,
                           err);
        if (MPI_Bcast(&hdr, (int)sizeof hdr, MPI_BYTE, 0, comm) != MPI_SUCCESS) {
            rc = cls_fail(err, CLS_EOTHER, "MPI_Bcast(header) failed");
            goto done;
        }
        rc = dsolve_share_layout(comm, hdr.nrows, G, rc, &in->L, err);
    }
    if ((rc = dsolve_agree(comm, rc, err)))
        goto done;
    in->nrows = hdr.nrows;
    in->nnz = hdr.nnz;
    in->duplicates = hdr.duplicates;
    in->has_b = hdr.has_b;
    in->has_x0 = hdr.has_x0;
    in->nrhs = hdr.nrhs;
    const part_layout *L = &in->L;
    in->rb = L->begin[L->first[me]];
    in->re = L->begin[L->first[me + 1]];
    cls_trace("input: layout");

    /* 1c. this rank's rows */
    if (ranged) {
        /* read as this rank's block */
    } else if (gen) {
        rc = gen_grid_rows_csr(&grid, in->rb, in->re, &in->blk, err);
    } else if (everywhere) {
        rc = csr_extract(&A, in->rb, in->re, &in->blk, err);
        csr_free(&A);
    } else if (me == 0) {
        for (int r = 1; r < size && !rc; r++) {
            int64_t a = L->begin[L->first[r]], e = L->begin[L->first[r + 1]];
            if (e == a)
                continue;
            int64_t *rp = malloc((size_t)(e - a + 1) * sizeof *rp);
            if (!rp) {
                rc = cls_fail(err, CLS_EOTHER, "out of memory sending rank %d its rows", r);
                break;
            }
            for (int64_t i = a; i <= e; i++)
                rp[i - a] = A.rowptr[i] - A.rowptr[a];
            rc = dsolve_send_big(rp, e - a + 1, MPI_INT64_T, sizeof *rp, r, comm, err);
            free(rp);
            if (!rc)
                rc = dsolve_send_big(A.col + A.rowptr[a], A.rowptr[e] - A.rowptr[a], MPI_INT32_T,
                                     sizeof(int32_t), r, comm, err);
            if (!rc)
                rc = dsolve_send_big(A.val + A.rowptr[a], A.rowptr[e] - A.rowptr[a], MPI_DOUBLE,
                                     sizeof(double), r, comm, err);
        }
        if (!rc) {
            csr_keep_prefix(&A, in->re); /* rank 0's block is the prefix */
            in->blk = A;
            csr_init(&A);
        }
    } else if (in->re > in->rb) {
        int64_t nnz = rank_nnz(L, me);
        rc = csr_alloc(&in->blk, in->re - in->rb, hdr.nrows, nnz, err);
        if (!rc)
            rc = dsolve_recv_big(in->blk.rowptr, in->re - in->rb + 1, MPI_INT64_T, sizeof(int64_t),
                                 0, comm, err);
        if (!rc)
            rc = dsolve_recv_big(in->blk.col, nnz, MPI_INT32_T, sizeof(int32_t), 0, comm, err);
        if (!rc)
            rc = dsolve_recv_big(in->blk.val, nnz, MPI_DOUBLE, sizeof(double), 0, comm, err);
    }
    if (!rc)
        in->blk.ncols = hdr.nrows;
    if ((rc = dsolve_agree(comm, rc, err)))
        goto done;

    cls_trace("input: this rank's rows");
    /* 1d. b and x0 follow the layout, column by column; x0 serves every
     * right-hand side (one copy per column: each is scaled with its b) */
    int64_t nb = in->re - in->rb;
    const int k = in->nrhs;
    const int b_is_b1 = in->b1 && !hdr.has_b && k == 1 && nb == hdr.nrows;
    in->b = b_is_b1 ? in->b1 : malloc((size_t)(nb * k > 0 ? nb * k : 1) * sizeof *in->b);
    if (!b_is_b1)
        free(in->b1);
    in->b1 = NULL;
    if (hdr.has_x0)
        in->x0 = malloc((size_t)(nb * k > 0 ? nb * k : 1) * sizeof *in->x0);
    rc = (!in->b || (hdr.has_x0 && !in->x0))
             ? cls_fail(err, CLS_EOTHER, "out of memory for the vectors")
             : CLS_OK;
    if ((rc = dsolve_agree(comm, rc, err)))
        goto done;
    if (genk > 0)
        for (int c = 0; c < k; c++)
            for (int64_t i = 0; i < nb; i++)
                in->b[c * nb + i] = rhs_gen_value(in->rb + i, c);
    else if (hdr.has_b)
        for (int c = 0; c < k && !rc; c++)
            rc = scatter_vector(comm, L, bf ? bf + c * hdr.nrows : NULL, everywhere, in->b + c * nb,
                                err);
    else if (!b_is_b1)                    /* (the input check summed the rows already) */
        dsolve_row_sums(&in->blk, in->b); /* b = A * 1 */
    if (!rc && hdr.has_x0) {
        rc = scatter_vector(comm, L, x0f, everywhere, in->x0, err);
        for (int c = 1; c < k; c++)
            memcpy(in->x0 + c * nb, in->x0, (size_t)nb * sizeof *in->x0);
    }
    rc = dsolve_agree(comm, rc, err);
    cls_trace("input: b and x0");

done:
    csr_free(&A);
    free(bf);
    free(x0f);
    return rc;
}

/* 1e. Scaling (per right-hand side: each column has its own eb and x_exp).
 * CG on the device forms b'b, r'r and p'Ap as plain sums of
 * squares: with entries near 1e-170 they underflow to 0 (and b = A*1
 * passes for b = 0, "solved" by x = 0), near 1e200 they overflow. So the
 * system is scaled by powers of two, A' = 2^ea A and b' = 2^eb b, bringing
 * max |a_ij| and ||b|| (computed scaled, solve_nrm2's way, across ranks)
 * into [0.5, 1) when they lie outside solve_scale_exponent's window; x0'
 * = 2^(eb-ea) x0 and, after the solve, x = 2^(ea-eb) x'. Powers of two
 * change no digit: the iterates, residuals (relative, so invariant) and
 * iteration counts are those of the unscaled system, which runs unchanged
 * inside the window. *x_exp receives ea - eb. */
typedef struct absmax_ctx {
    const double *v;
    double *m; /* per range */
} absmax_ctx;

static void absmax_range(void *arg, int range, int64_t a, int64_t e)
{
    const absmax_ctx *c = arg;
    double m = 0.0;
    for (int64_t k = a; k < e; k++)
        if (fabs(c->v[k]) > m)
            m = fabs(c->v[k]);
    c->m[range] = m;
}

/* max |v_k| over the host's cores (a maximum does not depend on the order) */
static int absmax(const double *v, int64_t n, double *out)
{
    int t = cls_parallel_ranges(n, 1 << 20);
    double *m = calloc((size_t)t, sizeof *m);
    if (!m)
        return -1;
    absmax_ctx c = {v, m};
    cls_parallel_for(n, 1 << 20, absmax_range, &c);
    *out = 0.0;
    for (int q = 0; q < t; q++)
        if (m[q] > *out)
            *out = m[q];
    free(m);
    return 0;
}

/* sum of (v_i / scale)^2 over the host's cores: a partial sum per block
 * of DSOLVE_SSQ_BLOCK entries, added in block order, so the bits depend on
 * n alone, not on the number of threads (serial, this and max |b_i| took
 * 25 ms of poisson3d 200's set-up on an H200 host) */
#define DSOLVE_SSQ_BLOCK 65536
typedef struct ssq_ctx {
    const double *v;
    int64_t n;
    double scale, *part; /* per block */
} ssq_ctx;

static void ssq_range(void *arg, int range, int64_t a, int64_t e)
{
    (void)range;
    const ssq_ctx *c = arg;
    for (int64_t blk = a; blk < e; blk++) {
        const int64_t b0 = blk * DSOLVE_SSQ_BLOCK;
        const int64_t b1 = b0 + DSOLVE_SSQ_BLOCK < c->n ? b0 + DSOLVE_SSQ_BLOCK : c->n;
        double s = 0.0;
        for (int64_t i = b0; i < b1; i++) {
            double r = c->v[i] / c->scale;
            s += r * r;
        }
        c->part[blk] = s;
    }
}

static int ssq_scaled(const double *v, int64_t n, double scale, double *out)
{
    const int64_t nblk = (n + DSOLVE_SSQ_BLOCK - 1) / DSOLVE_SSQ_BLOCK;
    ssq_ctx c = {v, n, scale, calloc((size_t)(nblk ? nblk : 1), sizeof(double))};
    if (!c.part)
        return -1;
    cls_parallel_for(nblk, 4, ssq_range, &c);
    double s = 0.0;
    for (int64_t b = 0; b < nblk; b++)
        s += c.part[b];
    free(c.part);
    *out = s;
    return 0;
}

/* v_i = 2^e v_i over the host's cores (each entry alone: no order) */
typedef struct ldexp_ctx {
    double *v;
    int e;
} ldexp_ctx;

static void ldexp_range(void *arg, int range, int64_t a, int64_t e)
{
    (void)range;
    const ldexp_ctx *c = arg;
    for (int64_t i = a; i < e; i++)
        c->v[i] = ldexp(c->v[i], c->e);
}

static void ldexp_all(double *v, int64_t n, int e)
{
    ldexp_ctx c = {v, e};
    cls_parallel_for(n, 1 << 18, ldexp_range, &c);
}

int dsolve_scale(MPI_Comm comm, ds_input *in, int *x_exp, cls_error *err)
{
    const int64_t nb = in->re - in->rb;
    const int k = in->nrhs;
    double m[1 + DSOLVE_MAX_RHS]; /* max |a_ij|, max |b_i| of every column */
    double ssq[DSOLVE_MAX_RHS];
    memset(m, 0, sizeof m);
    memset(ssq, 0, sizeof ssq);
    /* the whole matrix's maximum, where the input check took it, is at
     * least the block's: the all-reduced maximum is the same */
    if (in->amax >= 0.0)
        m[0] = in->amax;
    else if (absmax(in->blk.val, in->blk.nnz, &m[0]))
        return cls_fail(err, CLS_EOTHER, "out of memory for the scaling");
    for (int c = 0; c < k; c++)
        if (absmax(in->b + c * nb, nb, &m[1 + c]))
            return cls_fail(err, CLS_EOTHER, "out of memory for the scaling");
    for (int c = 0; c < k; c++)
        x_exp[c] = 0;
    if (MPI_Allreduce(MPI_IN_PLACE, m, 1 + k, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Allreduce(scaling) failed");
    /* ||b|| = bmax sqrt(sum (b_i / bmax)^2): no square leaves the range */
    for (int c = 0; c < k; c++)
        if (m[1 + c] > 0.0 && ssq_scaled(in->b + c * nb, nb, m[1 + c], &ssq[c]))
            return cls_fail(err, CLS_EOTHER, "out of memory for the scaling");
    if (MPI_Allreduce(MPI_IN_PLACE, ssq, k, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Allreduce(scaling) failed");
    const int ea = solve_scale_exponent(m[0]);
    if (ea) {
        ldexp_all(in->blk.val, in->blk.nnz, ea);
        /* 1 / a_ii of the scaled matrix is made again from it: the unscaled
         * inverse may have over- or underflowed where the scaled one does not */
        free(in->dinv);
        in->dinv = NULL;
    }
    for (int c = 0; c < k; c++) {
        const double bnorm = m[1 + c] * sqrt(ssq[c]);
        in->bnorm[c] = bnorm; /* for an absolute tolerance (solve_effective_tol) */
        const int eb = solve_scale_exponent(bnorm); /* 0 for b = 0: x = 0, as always */
        double *b = in->b + c * nb, *x0 = in->x0 ? in->x0 + c * nb : NULL;
        if (eb)
            ldexp_all(b, nb, eb);
        if (eb != ea && x0)
            ldexp_all(x0, nb, eb - ea);
        x_exp[c] = ea - eb;
    }
    return CLS_OK;
}

/* The refusal of an x whose entry i (0-based) is beyond double's range once
 * scaled back: CLS_EBREAKDOWN rather than infinities. */
int dsolve_unscale_fail(int64_t i, cls_error *err)
{
    return cls_fail(err, CLS_EBREAKDOWN,
                    "solution entry %lld is beyond the range of double precision: the "
                    "system's scale (max |a_ij| against ||b||) is too extreme",
                    (long long)i + 1);
}

/* x = 2^x_exp x' on rank 0, after the gather (where x is not gathered,
 * dsolve.c's x_scan checks the range where the rows are) */
int dsolve_unscale_x(double *x, int64_t n, int x_exp, cls_error *err)
{
    if (!x_exp)
        return CLS_OK;
    for (int64_t i = 0; i < n; i++) {
        x[i] = ldexp(x[i], x_exp);
        if (!isfinite(x[i]))
            return dsolve_unscale_fail(i, err);
    }
    return CLS_OK;
}

void dsolve_input_free(ds_input *in)
{
    part_free(&in->L);
    csr_free(&in->blk);
    free(in->b);
    free(in->x0);
    free(in->b1);
    free(in->dinv);
    memset(in, 0, sizeof *in);
}
