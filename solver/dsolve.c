/*
 * dsolve.c: the collective solve across ranks and devices (see dsolve.h).
 *
 * Phases, each ending in an agreement (every rank learns the first failing
 * rank's exit class and message, so all return the same):
 *   1. input: rank 0 parses and sends each rank its row block (or every
 *      rank parses, or every rank generates its rows); the layout
 *      (partition.h) is computed where the row lengths are known and
 *      broadcast as part boundaries; b and x0 follow the layout
 *   1e. scaling: A and b multiplied by powers of two that bring max |a_ij|
 *      and ||b|| near 1 when they are far from it (scale_phase), so no
 *      square the device forms underflows or overflows
 *   2. halo plans: each part renumbers its columns in place inside the
 *      rank's block (halo_plan_local) and the send lists are exchanged
 *   3. devices: dsys_open (contexts, kernels, matrix upload, staging)
 *   4. vectors: b, x0, the Jacobi diagonal
 *   5. the Krylov method: dcg_solve or pipecg_solve
 *   6. x downloaded; the true residual ||b - Ax|| / ||b|| recomputed in
 *      double on the host (host halo exchange, halo.h; scaled sums of
 *      squares); x gathered once on rank 0 and scaled back; the report
 *      (one entry per part) gathered on rank 0.
 * All communication runs on a duplicate of the caller's communicator with
 * MPI_ERRORS_RETURN, so dsolve's messages never meet the daemon's and an MPI
 * failure is reported instead of aborting.
 */
#include "../common/parallel.h"
#include "../common/trace.h"
#include "dsolve.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/timer.h"
#include "../matrices/gen_rows.h"
#include "../matrices/mm.h"
#include "dcg.h"
#include "dvec.h"
#include "halo.h"
#include "partition.h"

#define DS_TAG_SCATTER 7
#define DS_TAG_GATHER 8
#define DS_CHUNK ((int64_t)1 << 26) /* elements per MPI message of the big transfers */

void dsolve_options_default(dsolve_options *o)
{
    memset(o, 0, sizeof *o);
    solve_options_default(&o->solve);
}

const char *dsolve_engine_name(dsolve_engine e)
{
    return e == DSOLVE_ENGINE_LOCAL         ? "local"
           : e == DSOLVE_ENGINE_DISTRIBUTED ? "distributed"
                                            : "auto";
}

int dsolve_engine_parse(const char *name, dsolve_engine *e)
{
    for (int i = DSOLVE_ENGINE_AUTO; i <= DSOLVE_ENGINE_DISTRIBUTED; i++)
        if (!strcmp(name, dsolve_engine_name((dsolve_engine)i))) {
            *e = (dsolve_engine)i;
            return 0;
        }
    return -1;
}

void dsolve_report_free(dsolve_report *rep)
{
    if (rep)
        cg_result_free(&rep->cg);
}

/* ------------------------------------------------------------- agreement */

/* Every rank passes its local outcome; all return the first failing rank's
 * class, with its message in err. */
static int agree(MPI_Comm comm, int rc, cls_error *err)
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

#define AGREE(expr)                                                                    \
    do {                                                                               \
        rc = agree(comm, (expr), err);                                                 \
        if (rc)                                                                        \
            goto done;                                                                 \
    } while (0)

/* ------------------------------------------------------- big transfers */

static int send_big(const void *buf, int64_t count, MPI_Datatype t, size_t tsize, int dest,
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

static int recv_big(void *buf, int64_t count, MPI_Datatype t, size_t tsize, int src,
                    MPI_Comm comm, cls_error *err)
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
static int csr_extract(const csr_matrix *A, int64_t r0, int64_t r1, csr_matrix *B,
                       cls_error *err)
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

static int read_vectors(const char *a_path, const char *b_path, const char *x0_path,
                        int64_t nrows, double **b, double **x0, cls_error *err)
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
                            "%s: initial guess has %lld entries but %s has %lld columns",
                            x0_path, (long long)n, a_path, (long long)nrows);
    }
    return CLS_OK;
}

/* What every rank knows after phase 1. */
typedef struct ds_input {
    int64_t nrows, nnz, duplicates;
    int has_b, has_x0;
    part_layout L;
    int64_t rb, re;     /* this rank's rows */
    csr_matrix blk;     /* those rows, rowptr from 0, global columns */
    double *b, *x0;     /* this rank's entries (x0 NULL: zero) */
} ds_input;

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
            int rc = send_big(v + a, e - a, MPI_DOUBLE, sizeof(double), r, comm, err);
            if (rc)
                return rc;
        }
        return CLS_OK;
    }
    return recv_big(out, re - rb, MPI_DOUBLE, sizeof(double), 0, comm, err);
}

static int64_t rank_nnz(const part_layout *L, int r)
{
    int64_t s = 0;
    for (int k = L->first[r]; k < L->first[r + 1]; k++)
        s += L->nnz[k];
    return s;
}

static int input_phase(MPI_Comm comm, const char *a_path, const char *b_path,
                       const char *x0_path, const dsolve_options *opt, int G, ds_input *in,
                       cls_error *err)
{
    int me, size, rc = CLS_OK;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    const int gen = strncmp(a_path, "gen:", 4) == 0;
    const int everywhere = !gen && opt->read_everywhere;
    csr_matrix A;            /* the whole matrix, where it is read */
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
    if ((rc = agree(comm, rc, err)))
        goto done;

    /* 1b. the layout, where the row lengths are known */
    hdr.has_b = b_path != NULL;
    hdr.has_x0 = x0_path != NULL;
    const int64_t min_rows = opt->min_rows_per_part;
    if (gen || everywhere) {
        rc = part_plan(hdr.nrows, gen ? grid_row_nnz : csr_row_nnz, gen ? (void *)&grid : &A,
                       size, G, min_rows, DSOLVE_MAX_PARTS, &in->L, err);
    } else {
        int64_t *bounds = NULL;
        if (me == 0) {
            rc = part_plan(hdr.nrows, csr_row_nnz, &A, size, G, min_rows, DSOLVE_MAX_PARTS,
                           &in->L, err);
            hdr.nparts = rc ? -1 : in->L.nparts;
        }
        if (MPI_Bcast(&hdr, (int)sizeof hdr, MPI_BYTE, 0, comm) != MPI_SUCCESS) {
            rc = cls_fail(err, CLS_EOTHER, "MPI_Bcast(header) failed");
            goto done;
        }
        if (hdr.nparts < 0) { /* rank 0 failed and will say why */
            rc = agree(comm, me == 0 ? rc : CLS_OK, err);
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
                rc = part_from_bounds(hdr.nrows, bounds, bounds + hdr.nparts + 1, hdr.nparts,
                                      size, G, &in->L, err);
            free(bounds);
        }
    }
    if ((rc = agree(comm, rc, err)))
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
            rc = send_big(rp, e - a + 1, MPI_INT64_T, sizeof *rp, r, comm, err);
            free(rp);
            if (!rc)
                rc = send_big(A.col + A.rowptr[a], A.rowptr[e] - A.rowptr[a], MPI_INT32_T,
                              sizeof(int32_t), r, comm, err);
            if (!rc)
                rc = send_big(A.val + A.rowptr[a], A.rowptr[e] - A.rowptr[a], MPI_DOUBLE,
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
            rc = recv_big(in->blk.rowptr, in->re - in->rb + 1, MPI_INT64_T, sizeof(int64_t), 0,
                          comm, err);
        if (!rc)
            rc = recv_big(in->blk.col, nnz, MPI_INT32_T, sizeof(int32_t), 0, comm, err);
        if (!rc)
            rc = recv_big(in->blk.val, nnz, MPI_DOUBLE, sizeof(double), 0, comm, err);
    }
    if (!rc)
        in->blk.ncols = hdr.nrows;
    if ((rc = agree(comm, rc, err)))
        goto done;

    /* 1d. b and x0 follow the layout */
    int64_t nb = in->re - in->rb;
    in->b = malloc((size_t)(nb ? nb : 1) * sizeof *in->b);
    if (hdr.has_x0)
        in->x0 = malloc((size_t)(nb ? nb : 1) * sizeof *in->x0);
    rc = (!in->b || (hdr.has_x0 && !in->x0))
             ? cls_fail(err, CLS_EOTHER, "out of memory for the vectors")
             : CLS_OK;
    if ((rc = agree(comm, rc, err)))
        goto done;
    if (hdr.has_b)
        rc = scatter_vector(comm, L, bf, everywhere, in->b, err);
    else
        row_sums(&in->blk, in->b); /* b = A * 1 */
    if (!rc && hdr.has_x0)
        rc = scatter_vector(comm, L, x0f, everywhere, in->x0, err);
    rc = agree(comm, rc, err);

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
static int scale_phase(MPI_Comm comm, ds_input *in, int *x_exp, cls_error *err)
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
static int unscale_x(double *x, int64_t n, int x_exp, cls_error *err)
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

static void input_free(ds_input *in)
{
    part_free(&in->L);
    csr_free(&in->blk);
    free(in->b);
    free(in->x0);
    memset(in, 0, sizeof *in);
}

/* ------------------------------------------------------------- the solve */

typedef struct diag_ctx {
    const csr_matrix *A;
    double *dinv;
} diag_ctx;

/* dinv[i] = 1 / a_ii for rows [i0, i1) of a renumbered part */
static void diag_rows(void *arg, int range, int64_t i0, int64_t i1)
{
    (void)range;
    const diag_ctx *c = arg;
    const csr_matrix *A = c->A;
    const int64_t base = A->rowptr[0];
    for (int64_t i = i0; i < i1; i++) {
        double d = 0.0;
        for (int64_t j = A->rowptr[i] - base; j < A->rowptr[i + 1] - base; j++)
            if (A->col[j] == i)
                d = A->val[j];
        c->dinv[i] = 1.0 / d; /* a_ii > 0: checked on input */
    }
}

static int count_list(const char *spec)
{
    if (!spec || !*spec || spec[0] < '0' || spec[0] > '9')
        return 0;
    int n = 1;
    for (const char *c = spec; *c; c++)
        n += *c == ',';
    return n;
}

typedef struct resid_part {
    double sc[2], sq[2]; /* scaled sums of squares of r and b (solve_ssq_add) */
    int finite;
} resid_part;

typedef struct resid_ctx {
    const csr_matrix *A;
    const double *x, *b;
    resid_part *part;
    int unused;
} resid_ctx;

static void resid_rows(void *arg, int range, int64_t i0, int64_t i1)
{
    const resid_ctx *c = arg;
    const csr_matrix *A = c->A;
    const int64_t base = A->rowptr[0];
    resid_part p = {{0.0, 0.0}, {1.0, 1.0}, 1};
    for (int64_t i = i0; i < i1; i++) {
        double ax = 0.0;
        for (int64_t j = A->rowptr[i] - base; j < A->rowptr[i + 1] - base; j++)
            ax += A->val[j] * c->x[A->col[j]];
        double ri = c->b[i] - ax;
        p.finite &= isfinite(ri) != 0;
        solve_ssq_add(&p.sc[0], &p.sq[0], ri);
        solve_ssq_add(&p.sc[1], &p.sq[1], c->b[i]);
    }
    c->part[range] = p;
}

/* (scale, ssq) += (s2, q2): both as scale^2 * ssq */
static void ssq_merge(double *scale, double *ssq, double s2, double q2)
{
    if (s2 <= 0.0)
        return;
    if (*scale < s2) {
        *ssq = q2 + *ssq * (*scale / s2) * (*scale / s2);
        *scale = s2;
    } else {
        *ssq += q2 * (s2 / *scale) * (s2 / *scale);
    }
}

/* true residual in double on the host: x[k] has nlocal + nghost entries */
static int true_residual(MPI_Comm comm, const part_layout *L, dpart *parts, int nmine,
                         double *const *xs, double *const *bs, double *out, cls_error *err)
{
    halo_plan *plans = calloc((size_t)(nmine ? nmine : 1), sizeof *plans);
    if (!plans)
        return cls_fail(err, CLS_EOTHER, "out of memory for the residual check");
    for (int k = 0; k < nmine; k++)
        plans[k] = parts[k].halo;
    halo_comm hc;
    int rc = halo_comm_init(&hc, comm, L, plans, nmine, sizeof(double), NULL, NULL, err);
    /* scaled sums of squares (solve_ssq_add): ||r|| = sc[0] sqrt(sq[0]),
     * ||b|| = sc[1] sqrt(sq[1]); a residual or b far from 1 neither
     * underflows to 0 nor overflows */
    double sc[2] = {0.0, 0.0}, sq[2] = {1.0, 1.0};
    int finite = 1;
    if (!rc) {
        rc = halo_exchange_host(&hc, xs, err);
        halo_comm_free(&hc);
    }
    for (int k = 0; k < nmine && !rc; k++) {
        const csr_matrix *A = &parts[k].A;
        int t = cls_parallel_ranges(A->nrows, 65536);
        resid_ctx rc_ = {A, xs[k], bs[k], calloc((size_t)t, sizeof(resid_part)), 1};
        if (!rc_.part) {
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the residual check");
            break;
        }
        cls_parallel_for(A->nrows, 65536, resid_rows, &rc_);
        for (int q = 0; q < t; q++) { /* ranges in order: the same sums on any run */
            for (int v = 0; v < 2; v++)
                ssq_merge(&sc[v], &sq[v], rc_.part[q].sc[v], rc_.part[q].sq[v]);
            finite &= rc_.part[q].finite;
        }
        free(rc_.part);
    }
    free(plans);
    /* combine: every rank rescales its sums to the largest scale */
    double g[3] = {sc[0], sc[1], finite ? 0.0 : 1.0};
    if (MPI_Allreduce(MPI_IN_PLACE, g, 3, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS && !rc)
        rc = cls_fail(err, CLS_EOTHER, "MPI_Allreduce(true residual) failed");
    double t[2];
    for (int q = 0; q < 2; q++) {
        double r = g[q] > 0.0 ? sc[q] / g[q] : 0.0;
        t[q] = sc[q] > 0.0 ? sq[q] * r * r : 0.0;
    }
    if (MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS && !rc)
        rc = cls_fail(err, CLS_EOTHER, "MPI_Allreduce(true residual) failed");
    if (g[2] != 0.0)
        *out = NAN;
    else if (g[1] > 0.0)
        *out = (g[0] / g[1]) * sqrt(t[0] / t[1]);
    else
        *out = g[0] * sqrt(t[0]);
    return rc;
}

static int finish_all(dpart *parts, int nmine, cls_error *err)
{
    for (int k = 0; k < nmine; k++) {
        int rc = la_finish(&parts[k].la, err);
        if (rc)
            return rc;
    }
    return CLS_OK;
}

int dsolve_file(MPI_Comm comm_in, const char *a_path, const char *b_path, const char *x0_path,
                const dsolve_options *opt, dsolve_report *rep, double **x, cls_error *err)
{
    int me, size, rc = CLS_OK;
    MPI_Comm comm = MPI_COMM_NULL;
    ds_input in;
    dsys sys;
    dpart *parts = NULL;
    dvec vb = {0}, vx = {0}, vd = {0};
    double **xs = NULL, **bs = NULL, *dinv = NULL, *xfull = NULL;
    int have_sys = 0, nmine = 0, x_exp = 0;
    double t0 = cls_now(), t1 = t0, t2 = t0, tg = t0;

    memset(&in, 0, sizeof in);
    memset(&sys, 0, sizeof sys);
    memset(rep, 0, sizeof *rep);
    rep->true_rel_residual = NAN;
    if (x)
        *x = NULL;
    if (MPI_Comm_dup(comm_in, &comm) != MPI_SUCCESS)
        return cls_fail(err, CLS_EOTHER, "MPI_Comm_dup failed");
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int G = opt->devices_per_rank > 0 ? opt->devices_per_rank : count_list(opt->solve.device);
    if (G < 1)
        G = 1;
    rep->ranks = size;
    rep->devices_per_rank = G;

    /* 1. input and layout, then the scaling */
    if ((rc = input_phase(comm, a_path, b_path, x0_path, opt, G, &in, err)))
        goto done;
    if ((rc = agree(comm, scale_phase(comm, &in, &x_exp, err), err)))
        goto done;
    const part_layout *L = &in.L;
    rep->rows = in.nrows;
    rep->nnz = in.nnz;
    rep->duplicates = in.duplicates;
    rep->nparts = L->nparts;
    if (me == 0 && opt->verbose)
        part_print(L, stderr);
    t1 = cls_now();
    rep->parse_s = t1 - t0;

    /* one engine for every layout (dcg.c): --engine is accepted and ignored */
    rep->engine = DSOLVE_ENGINE_AUTO;

    /* 2. halo plans: parts view the rank's block, renumbered in place */
    double tp = cls_now();
    cls_trace("dsolve: input read");
    nmine = L->first[me + 1] - L->first[me];
    parts = calloc((size_t)(nmine ? nmine : 1), sizeof *parts);
    rc = parts ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory for the parts");
    for (int k = 0; k < nmine && !rc; k++) {
        int pi = L->first[me] + k;
        int64_t off = L->begin[pi] - in.rb, n = L->begin[pi + 1] - L->begin[pi];
        csr_matrix *A = &parts[k].A;
        A->rowptr = in.blk.rowptr + off;
        A->col = in.blk.col + in.blk.rowptr[off];
        A->val = in.blk.val + in.blk.rowptr[off];
        A->nrows = n;
        A->ncols = in.nrows;
        A->nnz = in.blk.rowptr[off + n] - in.blk.rowptr[off];
        parts[k].part = pi;
        parts[k].slot = k;
        rc = halo_plan_local(&parts[k].halo, A, L, pi, err);
    }
    AGREE(rc);
    {
        halo_plan *plans = calloc((size_t)(nmine ? nmine : 1), sizeof *plans);
        rc = plans ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory for the halo plans");
        AGREE(rc);
        for (int k = 0; k < nmine; k++)
            plans[k] = parts[k].halo;
        rc = halo_plan_exchange(comm, L, plans, nmine, err);
        for (int k = 0; k < nmine; k++)
            parts[k].halo = plans[k]; /* the send lists were filled in the copies */
        free(plans);
        AGREE(rc);
    }

    /* 3. devices */
    rep->partition_s = cls_now() - tp;
    cls_trace("dsolve: halo plans");
    const double to = cls_now();
    rc = dsys_open(&sys, comm, L, parts, nmine, opt->solve.device, G, opt->solve.precision,
                   opt->solve.spmv, 1, err);
    const double open_s = cls_now() - to;
    cls_trace("dsolve: devices open");
    have_sys = 1;
    AGREE(rc);

    /* 4. vectors: host arrays per part (x with room for its halo) */
    xs = calloc((size_t)(nmine ? nmine : 1), sizeof *xs);
    bs = calloc((size_t)(nmine ? nmine : 1), sizeof *bs);
    int64_t nblk = in.re - in.rb;
    dinv = malloc((size_t)(nblk ? nblk : 1) * sizeof *dinv);
    rc = xs && bs && dinv ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory for the vectors");
    for (int k = 0; k < nmine && !rc; k++) {
        const halo_plan *h = &parts[k].halo;
        int64_t off = L->begin[parts[k].part] - in.rb;
        xs[k] = malloc((size_t)(h->nlocal + h->nghost) * sizeof **xs);
        if (!xs[k]) {
            rc = cls_fail(err, CLS_EOTHER, "out of memory for the vectors");
            break;
        }
        bs[k] = in.b + off;
        for (int64_t i = 0; i < h->nlocal; i++)
            xs[k][i] = in.x0 ? in.x0[off + i] : 0.0;
        /* the diagonal is the local column i of row i after renumbering */
        if (opt->solve.precond == PRECOND_JACOBI) {
            diag_ctx dc = {&parts[k].A, dinv + off};
            cls_parallel_for(h->nlocal, 65536, diag_rows, &dc);
        }
    }
    AGREE(rc);
    cls_trace("dsolve: host vectors and diagonal");
    {
        double **ds = calloc((size_t)(nmine ? nmine : 1), sizeof *ds);
        rc = ds ? CLS_OK : cls_fail(err, CLS_EOTHER, "out of memory for the vectors");
        for (int k = 0; k < nmine && ds; k++)
            ds[k] = dinv + (L->begin[parts[k].part] - in.rb);
        const int jacobi = opt->solve.precond == PRECOND_JACOBI;
        if (!rc)
            rc = dvec_create(&sys, 0, &vb, err);
        if (!rc)
            rc = dvec_create(&sys, 1, &vx, err);
        if (!rc && jacobi)
            rc = dvec_create(&sys, 0, &vd, err);
        if (!rc)
            rc = dvec_upload(&sys, &vb, bs, err);
        if (!rc)
            rc = dvec_upload(&sys, &vx, xs, err);
        if (!rc && jacobi)
            rc = dvec_upload(&sys, &vd, ds, err);
        cls_trace("dsolve: vectors up");
        /* the method's workspace, allocated and touched now, not in the
         * solve (la_pool_reserve): CG r, q (n) and p (n + ghosts); pipelined
         * CG its nine (six without Jacobi) vectors */
        for (int k = 0; k < nmine && !rc; k++) {
            la_ctx *la = &parts[k].la;
            int64_t n = parts[k].halo.nlocal, ng = n + parts[k].halo.nghost;
            if (opt->solve.method == SOLVER_CG) {
                if (!(rc = la_pool_reserve(la, n, 2, err)))
                    rc = la_pool_reserve(la, ng, 1, err);
            } else {
                if (!(rc = la_pool_reserve(la, n, jacobi ? 3 : 2, err)))
                    rc = la_pool_reserve(la, ng, jacobi ? 6 : 4, err);
            }
        }
        if (!rc)
            rc = finish_all(parts, nmine, err);
        free(ds);
    }
    AGREE(rc);
    t2 = cls_now();
    cls_trace("dsolve: workspace reserved");
    rep->setup_s = t2 - t1;
    rep->init_s = open_s - sys.upload_s; /* discovery, contexts, programs */
    rep->upload_s = rep->setup_s - rep->partition_s - rep->init_s; /* matrix, vectors, workspace */

    /* 5. the method */
    cg_options co = {
        .tol = opt->solve.tol,
        .maxiter = opt->solve.maxiter > 0 ? opt->solve.maxiter
                                          : (in.nrows * 10 > 1000 ? in.nrows * 10 : 1000),
        .precond = opt->solve.precond,
        .monitor = me == 0 ? opt->solve.monitor : NULL,
        .monitor_ctx = opt->solve.monitor_ctx,
    };
    const dvec *pd = opt->solve.precond == PRECOND_JACOBI ? &vd : NULL;
    if (opt->solve.method == SOLVER_PIPECG)
        rc = pipecg_solve(&sys, &vb, &vx, pd, &co, &rep->cg, err);
    else
        rc = dcg_solve(&sys, &vb, &vx, pd, &co, &rep->cg, err);
    {
        cls_error ferr;
        cls_error_clear(&ferr);
        if (!sys.failed && finish_all(parts, nmine, &ferr))
            dsys_fail(&sys, &ferr);
    }
    rep->solve_s = cls_now() - t2;
    /* a device failure anywhere outranks the method's own verdict */
    {
        cls_error ferr = sys.ferr;
        int frc = agree(comm, sys.failed ? (sys.ferr.code ? sys.ferr.code : CLS_EOTHER) : CLS_OK,
                        &ferr);
        if (frc) {
            if (err)
                *err = ferr;
            rc = frc;
            goto report;
        }
    }

    /* 6. x, the true residual, the gather */
    tg = cls_now();
    cls_trace("dsolve: solved");
    if (rc == CLS_OK || rc == CLS_ENOTCONV || rep->cg.reason == CG_DIVERGED_INDEFINITE) {
        cls_error derr;
        cls_error_clear(&derr);
        int drc = dvec_download(&sys, &vx, xs, &derr);
        drc = agree(comm, drc, &derr);
        if (!drc)
            drc = agree(comm, true_residual(comm, L, parts, nmine, xs, bs,
                                            &rep->true_rel_residual, &derr),
                        &derr);
        /* the gather is collective: every rank follows rank 0's wish for x,
         * whatever it passed itself (workers may pass NULL) */
        int want_x = x != NULL;
        MPI_Bcast(&want_x, 1, MPI_INT, 0, comm);
        if (!drc && want_x) {
            if (me == 0) {
                xfull = malloc((size_t)(in.nrows ? in.nrows : 1) * sizeof *xfull);
                drc = xfull ? CLS_OK : cls_fail(&derr, CLS_EOTHER, "out of memory for x");
            }
            drc = agree(comm, drc, &derr);
            if (!drc && me == 0) {
                for (int k = 0; k < nmine; k++)
                    memcpy(xfull + L->begin[parts[k].part], xs[k],
                           (size_t)parts[k].halo.nlocal * sizeof *xfull);
                for (int r = 1; r < size && !drc; r++) {
                    int64_t a = L->begin[L->first[r]], e = L->begin[L->first[r + 1]];
                    drc = recv_big(xfull + a, e - a, MPI_DOUBLE, sizeof(double), r, comm, &derr);
                }
            } else if (!drc && nblk > 0) {
                /* the rank's parts are consecutive: one block, as rank 0 expects */
                double *blk = malloc((size_t)nblk * sizeof *blk);
                if (!blk)
                    drc = cls_fail(&derr, CLS_EOTHER, "out of memory gathering x");
                for (int k = 0; k < nmine && blk; k++)
                    memcpy(blk + (L->begin[parts[k].part] - in.rb), xs[k],
                           (size_t)parts[k].halo.nlocal * sizeof *blk);
                if (!drc)
                    drc = send_big(blk, nblk, MPI_DOUBLE, sizeof(double), 0, comm, &derr);
                free(blk);
            }
            drc = agree(comm, drc, &derr);
        }
        if (drc) {
            rep->true_rel_residual = NAN;
            if (rc == CLS_OK) {
                rc = cls_fail(err, CLS_EOTHER, "reading the solution back failed: %s",
                              derr.msg);
            }
        } else if (me == 0 && x && xfull) {
            *x = xfull;
            xfull = NULL;
        }
    }

report:
    cls_trace("dsolve: gathered");
    if (tg > t0)
        rep->gather_s = cls_now() - tg;
    /* the layout, one entry per part, on rank 0 */
    {
        dsolve_part_info *mine = calloc((size_t)(nmine ? nmine : 1), sizeof *mine);
        int *counts = me == 0 ? calloc((size_t)size, sizeof *counts) : NULL;
        int *displs = me == 0 ? calloc((size_t)size, sizeof *displs) : NULL;
        int ok = mine && (me != 0 || (counts && displs));
        for (int k = 0; ok && k < nmine; k++) {
            dpart *p = &parts[k];
            dsolve_part_info *pi = &mine[k];
            pi->rank = me;
            pi->slot = k;
            pi->row_begin = L->begin[p->part];
            pi->row_end = L->begin[p->part + 1];
            pi->nnz = p->A.nnz;
            pi->ghosts = p->halo.nghost;
            pi->interior_rows = p->halo.ninterior;
            pi->neighbours = p->halo.nrecv > p->halo.nsend ? p->halo.nrecv : p->halo.nsend;
            pi->device = p->dev;
            pi->device.platform = NULL;
            pi->device.id = NULL;
            if (p->have_Ai) { /* the fused engine: la's format and configuration */
                pi->config = p->Ai.cfg;
                pi->spmv = p->Ai.variant;
            } else {
                pi->config = p->la.cfg;
                pi->spmv = p->dA.vector_width ? LA_SPMV_VECTOR : LA_SPMV_SCALAR;
                pi->config.vector_width = p->dA.vector_width;
            }
        }
        if (me == 0 && ok)
            for (int r = 0; r < size; r++) {
                counts[r] = (L->first[r + 1] - L->first[r]) * (int)sizeof *mine;
                displs[r] = L->first[r] * (int)sizeof *mine;
            }
        /* every rank reaches this gather with a layout, so it is collective */
        int gm = MPI_Gatherv(mine, ok ? nmine * (int)sizeof *mine : 0, MPI_BYTE, rep->parts,
                             counts, displs, MPI_BYTE, 0, comm);
        if (gm != MPI_SUCCESS && rc == CLS_OK)
            rc = cls_fail(err, CLS_EOTHER, "MPI_Gatherv(report) failed");
        free(mine);
        free(counts);
        free(displs);
    }

    /* x of the scaled system back to the caller's (rank 0, either engine) */
    if (me == 0 && x && *x) {
        int urc = unscale_x(*x, in.nrows, x_exp, err);
        if (urc) {
            free(*x);
            *x = NULL;
            rc = urc;
            rep->cg.converged = 0;
            rep->cg.reason = CG_DIVERGED_NANORINF;
        }
    }

done:
    dvec_release(&vb);
    dvec_release(&vx);
    dvec_release(&vd);
    if (have_sys)
        dsys_close(&sys);
    for (int k = 0; parts && k < nmine; k++)
        halo_plan_free(&parts[k].halo);
    free(parts);
    for (int k = 0; xs && k < nmine; k++)
        free(xs[k]);
    free(xs);
    free(bs);
    free(dinv);
    free(xfull);
    input_free(&in);
    if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
    return rc;
}
