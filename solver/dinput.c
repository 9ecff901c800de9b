/*
 * dinput.c: phase 1 of dsolve_file and what every phase relies on: the
 * agreement of all ranks on an outcome (dsolve_agree), transfers larger
 * than an int count (dsolve_send_big / recv_big), and the input itself:
 * rank 0 reads the Matrix Market file and scatters row blocks, or every rank
 * reads it (--read-everywhere), or every rank generates its own rows
 * (gen:...); b and x0 likewise; the layout (partition.h); then the scaling
 * by powers of two that keeps b'b and p'Ap inside the floating-point range
 * (dsolve_scale, dsolve_unscale_x). See dsolve.h for the contract.
 */
#include "dsolve_priv.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../matrices/gen_rows.h"
#include "../matrices/mm.h"

/* ------------------------------------------------------------- agreement */

/* Every rank passes its local outcome; all return the first failing rank's
 * class, with its message in err. */
int dsolve_agree(MPI_Comm comm, int rc, cls_error *err)
{
    int me, size, first;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int mine = rc ? me : INT_MAX;
    if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Allreduce(agreement) failed");
    if (first == INT_MAX)
        return CLS_OK;
    struct {
        int rc;
        long long line;
        char msg[sizeof err->msg];
    } m;
    memset(&m, 0, sizeof m);
    if (me == first) {
        m.rc = rc;
        if (err) {
            m.line = err->line;
            if (first != 0)
                snprintf(m.msg, sizeof m.msg, "rank %d: %.1000s", first, err->msg);
            else
                memcpy(m.msg, err->msg, sizeof m.msg);
        } else {
            snprintf(m.msg, sizeof m.msg, "rank %d failed", first);
        }
    }
    if (MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, first, comm) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Bcast(agreement) failed");
    m.msg[sizeof m.msg - 1] = '\0';
    cls_fail_line(err, m.rc, m.line, "%s", m.msg);
    return m.rc;
}

/* ------------------------------------------------------- big transfers */

int dsolve_send_big(const void *buf, int64_t count, MPI_Datatype t, size_t tsize, int dest,
                    MPI_Comm comm, cls_error *err)
{
    for (int64_t off = 0; off < count; off += DS_CHUNK) {
        int64_t c = count - off < DS_CHUNK ? count - off : DS_CHUNK;
        if (MPI_Send((const char *)buf + (size_t)off * tsize, (int)c, t, dest, DS_TAG_SCATTER,
                     comm) != MPI_SUCCESS)
            return cls_fail(err, CLS_EOTHER, "MPI_Send to rank %d failed", dest);
    }
    return CLS_OK;
}

int dsolve_recv_big(void *buf, int64_t count, MPI_Datatype t, size_t tsize, int src, MPI_Comm comm,
                    cls_error *err)
{
    for (int64_t off = 0; off < count; off += DS_CHUNK) {
        int64_t c = count - off < DS_CHUNK ? count - off : DS_CHUNK;
        if (MPI_Recv((char *)buf + (size_t)off * tsize, (int)c, t, src, DS_TAG_SCATTER, comm,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return cls_fail(err, CLS_EOTHER, "MPI_Recv from rank %d failed", src);
    }
    return CLS_OK;
}

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
static void row_sums(const csr_matrix *B, double *b)
{
    for (int64_t i = 0; i < B->nrows; i++) {
        double s = 0.0;
        for (int64_t k = B->rowptr[i]; k < B->rowptr[i + 1]; k++)
            s += B->val[k] * 1.0;
        b[i] = s;
    }
}

static int read_vectors(const char *a_path, const char *b_path, const char *x0_path, int64_t nrows,
                        double **b, double **x0, cls_error *err)
{
    int64_t n = 0;
    int rc;
    if (b_path) {
        if ((rc = mm_read_vector(b_path, b, &n, err)))
            return rc;
        if (n != nrows)
            return cls_fail(err, CLS_EINPUT,
                            "%s: right-hand side has %lld entries but %s has %lld rows", b_path,
                            (long long)n, a_path, (long long)nrows);
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

int dsolve_input(MPI_Comm comm, const char *a_path, const char *b_path, const char *x0_path,
                 const dsolve_options *opt, int G, ds_input *in, cls_error *err)
{
    int me, size, rc = CLS_OK;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    const int gen = strncmp(a_path, "gen:", 4) == 0;
    const int everywhere = !gen && opt->read_everywhere;
    csr_matrix A; /* the whole matrix, where it is read */
    double *bf = NULL, *x0f = NULL;
    gen_grid grid;
    csr_init(&A);
    csr_init(&in->blk);

    struct {
        int64_t nrows, ncols, nnz, duplicates;
        int nparts, has_b, has_x0;
    } hdr;
    memset(&hdr, 0, sizeof hdr);

    /* 1a. who reads what */
    if (gen) {
        rc = gen_grid_parse(a_path + 4, &grid, err);
        if (!rc) {
            hdr.nrows = hdr.ncols = gen_grid_rows(&grid);
            hdr.nnz = gen_grid_nnz(&grid);
        }
        if (!rc && me == 0)
            rc = read_vectors(a_path, b_path, x0_path, hdr.nrows, &bf, &x0f, err);
    } else if (everywhere || me == 0) {
        mm_header h;
        mm_read_stats st;
        memset(&st, 0, sizeof st);
        rc = mm_read_csr(a_path, NULL, &A, &h, &st, err);
        if (!rc) {
            hdr.nrows = A.nrows;
            hdr.ncols = A.ncols;
            hdr.nnz = A.nnz;
            hdr.duplicates = st.duplicates;
            rc = read_vectors(a_path, b_path, x0_path, A.nrows, &bf, &x0f, err);
        }
        /* the checks need the whole matrix: rank 0 makes them */
        if (!rc && me == 0)
            rc = solve_check_input(&A, bf, bf ? A.nrows : 0, a_path, err);
    }
    /* an initial guess is input as b is: a non-finite entry (duplicates
     * summed to infinity) is bad input, found here rather than as a
     * breakdown of the first residual */
    if (!rc && me == 0 && gen && bf)
        rc = solve_check_vector(bf, hdr.nrows, "right-hand side", err);
    if (!rc && me == 0 && x0f)
        rc = solve_check_vector(x0f, hdr.nrows, "initial guess", err);
    if ((rc = dsolve_agree(comm, rc, err)))
        goto done;

    /* 1b. the layout, where the row lengths are known */
    hdr.has_b = b_path != NULL;
    hdr.has_x0 = x0_path != NULL;
    const int64_t min_rows = opt->min_rows_per_part;
    if (gen || everywhere) {
        rc = part_plan(hdr.nrows, gen ? grid_row_nnz : csr_row_nnz, gen ? (void *)&grid : &A, size,
                       G, min_rows, DSOLVE_MAX_PARTS, &in->L, err);
    } else {
        int64_t *bounds = NULL;
        if (me == 0) {
            rc = part_plan(hdr.nrows, csr_row_nnz, &A, size, G, min_rows, DSOLVE_MAX_PARTS, &in->L,
                           err);
            hdr.nparts = rc ? -1 : in->L.nparts;
        }
        if (MPI_Bcast(&hdr, (int)sizeof hdr, MPI_BYTE, 0, comm) != MPI_SUCCESS) {
            rc = cls_fail(err, CLS_EOTHER, "MPI_Bcast(header) failed");
            goto done;
        }
        if (hdr.nparts < 0) { /* rank 0 failed and will say why */
            rc = dsolve_agree(comm, me == 0 ? rc : CLS_OK, err);
            goto done;
        }
        bounds = malloc(2 * ((size_t)hdr.nparts + 1) * sizeof *bounds);
        if (!bounds) {
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the layout");
        } else {
            if (me == 0) {
                memcpy(bounds, in->L.begin, ((size_t)hdr.nparts + 1) * sizeof *bounds);
                memcpy(bounds + hdr.nparts + 1, in->L.nnz, (size_t)hdr.nparts * sizeof *bounds);
            }
            if (MPI_Bcast(bounds, 2 * (hdr.nparts + 1), MPI_INT64_T, 0, comm) != MPI_SUCCESS)
                rc = cls_fail(err, CLS_EOTHER, "MPI_Bcast(layout) failed");
            else if (me != 0)
                rc = part_from_bounds(hdr.nrows, bounds, bounds + hdr.nparts + 1, hdr.nparts, size,
                                      G, &in->L, err);
            free(bounds);
        }
    }
    if ((rc = dsolve_agree(comm, rc, err)))
        goto done;
    in->nrows = hdr.nrows;
    in->nnz = hdr.nnz;
    in->duplicates = hdr.duplicates;
    in->has_b = hdr.has_b;
    in->has_x0 = hdr.has_x0;
    const part_layout *L = &in->L;
    in->rb = L->begin[L->first[me]];
    in->re = L->begin[L->first[me + 1]];

    /* 1c. this rank's rows */
    if (gen) {
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

    /* 1d. b and x0 follow the layout */
    int64_t nb = in->re - in->rb;
    in->b = malloc((size_t)(nb ? nb : 1) * sizeof *in->b);
    if (hdr.has_x0)
        in->x0 = malloc((size_t)(nb ? nb : 1) * sizeof *in->x0);
    rc = (!in->b || (hdr.has_x0 && !in->x0))
             ? cls_fail(err, CLS_EOTHER, "out of memory for the vectors")
             : CLS_OK;
    if ((rc = dsolve_agree(comm, rc, err)))
        goto done;
    if (hdr.has_b)
        rc = scatter_vector(comm, L, bf, everywhere, in->b, err);
    else
        row_sums(&in->blk, in->b); /* b = A * 1 */
    if (!rc && hdr.has_x0)
        rc = scatter_vector(comm, L, x0f, everywhere, in->x0, err);
    rc = dsolve_agree(comm, rc, err);

done:
    csr_free(&A);
    free(bf);
    free(x0f);
    return rc;
}

/* 1e. Scaling. CG on the device forms b'b, r'r and p'Ap as plain sums of
 * squares: with entries near 1e-170 they underflow to 0 (and b = A*1
 * passes for b = 0, "solved" by x = 0), near 1e200 they overflow. So the
 * system is scaled by powers of two, A' = 2^ea A and b' = 2^eb b, bringing
 * max |a_ij| and ||b|| (computed scaled, solve_nrm2's way, across ranks)
 * into [0.5, 1) when they lie outside solve_scale_exponent's window; x0'
 * = 2^(eb-ea) x0 and, after the solve, x = 2^(ea-eb) x'. Powers of two
 * change no digit: the iterates, residuals (relative, so invariant) and
 * iteration counts are those of the unscaled system, which runs unchanged
 * inside the window. *x_exp receives ea - eb. */
int dsolve_scale(MPI_Comm comm, ds_input *in, int *x_exp, cls_error *err)
{
    const int64_t nb = in->re - in->rb;
    double m[2] = {0.0, 0.0}; /* max |a_ij|, max |b_i| */
    for (int64_t k = 0; k < in->blk.nnz; k++)
        if (fabs(in->blk.val[k]) > m[0])
            m[0] = fabs(in->blk.val[k]);
    for (int64_t i = 0; i < nb; i++)
        if (fabs(in->b[i]) > m[1])
            m[1] = fabs(in->b[i]);
    *x_exp = 0;
    if (MPI_Allreduce(MPI_IN_PLACE, m, 2, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Allreduce(scaling) failed");
    /* ||b|| = bmax sqrt(sum (b_i / bmax)^2): no square leaves the range */
    double ssq = 0.0;
    for (int64_t i = 0; m[1] > 0.0 && i < nb; i++) {
        double r = in->b[i] / m[1];
        ssq += r * r;
    }
    if (MPI_Allreduce(MPI_IN_PLACE, &ssq, 1, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Allreduce(scaling) failed");
    const double bnorm = m[1] * sqrt(ssq);
    in->bnorm = bnorm; /* for an absolute tolerance (solve_effective_tol) */
    const int ea = solve_scale_exponent(m[0]);
    const int eb = solve_scale_exponent(bnorm); /* 0 for b = 0: x = 0, as always */
    if (ea)
        for (int64_t k = 0; k < in->blk.nnz; k++)
            in->blk.val[k] = ldexp(in->blk.val[k], ea);
    if (eb)
        for (int64_t i = 0; i < nb; i++)
            in->b[i] = ldexp(in->b[i], eb);
    if (eb != ea && in->x0)
        for (int64_t i = 0; i < nb; i++)
            in->x0[i] = ldexp(in->x0[i], eb - ea);
    *x_exp = ea - eb;
    return CLS_OK;
}

/* x = 2^x_exp x' on rank 0, after the gather. An x beyond double's range
 * cannot be returned: CLS_EBREAKDOWN rather than infinities. */
int dsolve_unscale_x(double *x, int64_t n, int x_exp, cls_error *err)
{
    if (!x_exp)
        return CLS_OK;
    for (int64_t i = 0; i < n; i++) {
        x[i] = ldexp(x[i], x_exp);
        if (!isfinite(x[i]))
            return cls_fail(err, CLS_EBREAKDOWN,
                            "solution entry %lld is beyond the range of double precision: the "
                            "system's scale (max |a_ij| against ||b||) is too extreme",
                            (long long)i + 1);
    }
    return CLS_OK;
}

void dsolve_input_free(ds_input *in)
{
    part_free(&in->L);
    csr_free(&in->blk);
    free(in->b);
    free(in->x0);
    memset(in, 0, sizeof *in);
}
