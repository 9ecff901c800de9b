/*
 * droute.c: triplets to the owners of their rows (droute.h). The triplets
 * are packed on every core into three send arrays grouped by destination
 * (a count pass, then a fill, over fixed ranges: within a destination the
 * order is C's whatever the thread count), and three MPI_Alltoallv (rows,
 * columns, values) receive straight into the arrays the assembly reads.
 * The peak is the triplets plus the packed copy until the triplets are
 * freed, then the packed copy plus what arrives. droute_foreign packs and
 * sends only what other ranks own: for a file written row by row that is
 * the few records near the span's ends, so neither a packed copy of the
 * span nor a copy of this rank's own records is made. MPI counts are ints: a
 * rank that would send or receive 2^31 entries or more in one exchange is
 * told to use more ranks.
 */
#include "droute.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/parallel.h"

int droute_owner(const int64_t *rank_begin, int size, int64_t row)
{
    int lo = 0, hi = size - 1; /* the last r with rank_begin[r] <= row */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (rank_begin[mid] <= row)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The packing, on every core: fixed ranges of C's entries (in order), each
 * counting its records per destination, then writing them at its own
 * offsets, so the records of a destination keep C's order whatever the
 * thread count. */
typedef struct pack_ctx {
    const coo_matrix *C;
    int mirror, size;
    int skip; /* a rank whose records are not packed (droute_foreign's own), or -1 */
    const int64_t *rank_begin;
    int64_t *cnt; /* ranges x size: counts, then write positions */
    int32_t *row, *col;
    double *val;
} pack_ctx;

/* the owner of row, starting from the last one found (rows of a span are
 * mostly near each other) */
static inline int owner_near(const pack_ctx *c, int *last, int64_t row)
{
    int r = *last;
    if (!(c->rank_begin[r] <= row && row < c->rank_begin[r + 1]))
        r = *last = droute_owner(c->rank_begin, c->size, row);
    return r;
}

static void pack_count(void *arg, int range, int64_t k0, int64_t k1)
{
    pack_ctx *c = arg;
    int64_t *cnt = c->cnt + (size_t)range * (size_t)c->size;
    int last = 0;
    for (int64_t k = k0; k < k1; k++) {
        const int32_t i = c->C->row[k], j = c->C->col[k];
        cnt[owner_near(c, &last, i)]++;
        if (c->mirror && i != j)
            cnt[owner_near(c, &last, j)]++;
    }
    if (c->skip >= 0)
        cnt[c->skip] = 0;
}

static void pack_fill(void *arg, int range, int64_t k0, int64_t k1)
{
    pack_ctx *c = arg;
    int64_t *pos = c->cnt + (size_t)range * (size_t)c->size;
    int last = 0;
    for (int64_t k = k0; k < k1; k++) {
        const int32_t i = c->C->row[k], j = c->C->col[k];
        const double v = c->C->val[k];
        int r = owner_near(c, &last, i);
        if (r != c->skip) {
            const int64_t at = pos[r]++;
            c->row[at] = i;
            c->col[at] = j;
            c->val[at] = v;
        }
        if (c->mirror && i != j && (r = owner_near(c, &last, j)) != c->skip) {
            const int64_t at = pos[r]++;
            c->row[at] = j;
            c->col[at] = i;
            c->val[at] = c->mirror < 0 ? -v : v;
        }
    }
}

/* 1 on every rank when any rank's rc is not CLS_OK (the caller agrees on
 * the message: a rank that did not fail keeps CLS_OK) */
static int any_failed(MPI_Comm comm, int rc)
{
    int bad = rc != CLS_OK, anybad = 1;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, comm);
    return anybad;
}

#define PACK_GRAIN 65536

typedef struct self_ctx {
    const pack_ctx *pc;
    coo_matrix *out;
    int64_t from, to;
} self_ctx;

static void self_copy(void *arg, int range, int64_t k0, int64_t k1)
{
    (void)range;
    const self_ctx *x = arg;
    const size_t n = (size_t)(k1 - k0);
    memcpy(x->out->row + x->to + k0, x->pc->row + x->from + k0, n * sizeof *x->out->row);
    memcpy(x->out->col + x->to + k0, x->pc->col + x->from + k0, n * sizeof *x->out->col);
    memcpy(x->out->val + x->to + k0, x->pc->val + x->from + k0, n * sizeof *x->out->val);
}

/* Both entry points: own != 0 routes this rank's records too (a copy),
 * and consumes C as soon as it is packed; own == 0 leaves them, and C. */
static int route(MPI_Comm comm, const int64_t *rank_begin, coo_matrix *C, int mirror, int own,
                 coo_matrix *out, cls_error *err)
{
    int size, me;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &me);
    coo_init(out);
    int rc = CLS_OK;
    const int nr = cls_parallel_ranges(C->nnz, PACK_GRAIN);
    pack_ctx pc = {
        .C = C, .mirror = mirror, .size = size, .skip = own ? -1 : me, .rank_begin = rank_begin};
    pc.cnt = calloc((size_t)nr * (size_t)size, sizeof *pc.cnt);
    int *sc = calloc((size_t)size * 4, sizeof *sc);
    int64_t total = 0, in = 0;
    if (!pc.cnt || !sc) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory routing the entries");
    } else {
        if (C->nnz > 0)
            cls_parallel_for(C->nnz, PACK_GRAIN, pack_count, &pc);
        /* the write positions: destination by destination, range by range */
        for (int r = 0; r < size; r++) {
            int64_t n_r = 0;
            for (int q = 0; q < nr; q++) {
                int64_t *x = &pc.cnt[(size_t)q * (size_t)size + (size_t)r];
                int64_t c = *x;
                *x = total + n_r;
                n_r += c;
            }
            sc[r] = n_r > INT_MAX ? INT_MAX : (int)n_r;
            sc[size + r] = total > INT_MAX ? 0 : (int)total;
            total += n_r;
        }
        if (total > INT_MAX)
            rc = cls_fail(err, CLS_EOTHER,
                          "%lld entries to send from one rank: more than one exchange carries; "
                          "run on more ranks",
                          (long long)total);
        else {
            size_t t = (size_t)(total ? total : 1);
            pc.row = malloc(t * sizeof *pc.row);
            pc.col = malloc(t * sizeof *pc.col);
            pc.val = malloc(t * sizeof *pc.val);
            if (!pc.row || !pc.col || !pc.val)
                rc = cls_fail(err, CLS_EOTHER, "out of memory routing %lld entries",
                              (long long)total);
        }
    }
    if (any_failed(comm, rc))
        goto done;
    if (C->nnz > 0)
        cls_parallel_for(C->nnz, PACK_GRAIN, pack_fill, &pc);
    if (own)
        coo_free(C);
    int *sd = sc + size, *rcnt = sc + 2 * size, *rd = sc + 3 * size;
    if (MPI_Alltoall(sc, 1, MPI_INT, rcnt, 1, MPI_INT, comm) != MPI_SUCCESS)
        rc = cls_fail(err, CLS_EOTHER, "MPI_Alltoall(entry counts) failed");
    for (int r = 0; r < size && !rc; r++) {
        rd[r] = (int)(in < INT_MAX ? in : 0);
        in += rcnt[r];
    }
    if (!rc && in > INT_MAX)
        rc = cls_fail(err, CLS_EOTHER,
                      "%lld entries for one rank: more than one exchange carries; run on more "
                      "ranks",
                      (long long)in);
    if (!rc) {
        size_t t = (size_t)(in ? in : 1);
        out->row = malloc(t * sizeof *out->row);
        out->col = malloc(t * sizeof *out->col);
        out->val = malloc(t * sizeof *out->val);
        if (!out->row || !out->col || !out->val)
            rc = cls_fail(err, CLS_EOTHER, "out of memory receiving %lld entries", (long long)in);
    }
    if (any_failed(comm, rc)) {
        coo_free(out);
        goto done;
    }
    /* this rank's own entries (most of them, for a file written row by
     * row) copied on every core; the others in three exchanges, straight
     * into the arrays the assembly reads */
    self_ctx sx = {&pc, out, sd[me], rd[me]};
    if (sc[me] > 0)
        cls_parallel_for(sc[me], 1 << 20, self_copy, &sx);
    sc[me] = rcnt[me] = 0;
    if (MPI_Alltoallv(pc.row, sc, sd, MPI_INT32_T, out->row, rcnt, rd, MPI_INT32_T, comm) !=
            MPI_SUCCESS ||
        MPI_Alltoallv(pc.col, sc, sd, MPI_INT32_T, out->col, rcnt, rd, MPI_INT32_T, comm) !=
            MPI_SUCCESS ||
        MPI_Alltoallv(pc.val, sc, sd, MPI_DOUBLE, out->val, rcnt, rd, MPI_DOUBLE, comm) !=
            MPI_SUCCESS) {
        coo_free(out);
        rc = cls_fail(err, CLS_EOTHER, "MPI_Alltoallv(entries) failed");
        goto done;
    }
    out->nnz = out->cap = in;
done:
    if (own)
        coo_free(C);
    free(pc.row);
    free(pc.col);
    free(pc.val);
    free(pc.cnt);
    free(sc);
    return rc;
}

int droute_coo(MPI_Comm comm, const int64_t *rank_begin, coo_matrix *C, int mirror, coo_matrix *out,
               cls_error *err)
{
    return route(comm, rank_begin, C, mirror, 1, out, err);
}

int droute_foreign(MPI_Comm comm, const int64_t *rank_begin, const coo_matrix *C, int mirror,
                   coo_matrix *out, cls_error *err)
{
    return route(comm, rank_begin, (coo_matrix *)C, mirror, 0, out, err);
}
