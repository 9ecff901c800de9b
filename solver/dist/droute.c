/*
 * droute.c: triplets to the owners of their rows (droute.h). The records
 * are packed straight from the triplet arrays into one send buffer grouped
 * by destination (a count pass, then a fill), so the peak is the triplets
 * plus the packed copy until the triplets are freed, then the packed copy
 * plus what arrives. MPI counts are ints: a rank that would send or
 * receive 2^31 records or more in one exchange is told to use more ranks.
 */
#include "droute.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct droute_rec {
    int32_t row, col;
    double val;
} droute_rec;

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

/* Calls put(r, row, col, val) for every record C gives, mirrors included. */
#define DROUTE_EACH(C, mirror, BODY)                                                               \
    for (int64_t k_ = 0; k_ < (C)->nnz; k_++) {                                                    \
        int32_t i_ = (C)->row[k_], j_ = (C)->col[k_];                                              \
        double v_ = (C)->val[k_];                                                                  \
        {                                                                                          \
            int32_t row = i_, col = j_;                                                            \
            double val = v_;                                                                       \
            BODY                                                                                   \
        }                                                                                          \
        if ((mirror) && i_ != j_) {                                                                \
            int32_t row = j_, col = i_;                                                            \
            double val = (mirror) < 0 ? -v_ : v_;                                                  \
            BODY                                                                                   \
        }                                                                                          \
    }

/* 1 on every rank when any rank's rc is not CLS_OK (the caller agrees on
 * the message: a rank that did not fail keeps CLS_OK) */
static int any_failed(MPI_Comm comm, int rc)
{
    int bad = rc != CLS_OK, anybad = 1;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, comm);
    return anybad;
}

int droute_coo(MPI_Comm comm, const int64_t *rank_begin, coo_matrix *C, int mirror,
               coo_matrix *out, cls_error *err)
{
    int size;
    MPI_Comm_size(comm, &size);
    coo_init(out);
    int rc = CLS_OK;
    int64_t *cnt = calloc((size_t)size * 2, sizeof *cnt), *pos = cnt ? cnt + size : NULL;
    int *sc = calloc((size_t)size * 4, sizeof *sc);
    droute_rec *send = NULL, *recv = NULL;
    MPI_Datatype rec = MPI_DATATYPE_NULL;
    int64_t total = 0, in = 0;
    if (!cnt || !sc) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory routing the entries");
    } else {
        DROUTE_EACH(C, mirror,
                    { (void)col; (void)val; cnt[droute_owner(rank_begin, size, row)]++; })
        for (int r = 0; r < size; r++) {
            pos[r] = total;
            total += cnt[r];
        }
        if (total > INT_MAX)
            rc = cls_fail(err, CLS_EOTHER,
                          "%lld entries to send from one rank: more than one exchange carries; "
                          "run on more ranks",
                          (long long)total);
        else if (!(send = malloc((size_t)(total ? total : 1) * sizeof *send)))
            rc = cls_fail(err, CLS_EOTHER, "out of memory routing %lld entries", (long long)total);
    }
    if (any_failed(comm, rc))
        goto done;
    int *sd = sc + size, *rcnt = sc + 2 * size, *rd = sc + 3 * size;
    DROUTE_EACH(C, mirror, {
        droute_rec *d = &send[pos[droute_owner(rank_begin, size, row)]++];
        d->row = row;
        d->col = col;
        d->val = val;
    })
    coo_free(C);
    for (int r = 0; r < size; r++) {
        sc[r] = (int)cnt[r];
        sd[r] = (int)(pos[r] - cnt[r]);
    }
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
    else if (!rc && !(recv = malloc((size_t)(in ? in : 1) * sizeof *recv)))
        rc = cls_fail(err, CLS_EOTHER, "out of memory receiving %lld entries", (long long)in);
    if (any_failed(comm, rc))
        goto done;
    MPI_Type_contiguous((int)sizeof(droute_rec), MPI_BYTE, &rec);
    MPI_Type_commit(&rec);
    if (MPI_Alltoallv(send, sc, sd, rec, recv, rcnt, rd, rec, comm) != MPI_SUCCESS) {
        rc = cls_fail(err, CLS_EOTHER, "MPI_Alltoallv(entries) failed");
        goto done;
    }
    free(send);
    send = NULL;
    out->row = malloc((size_t)(in ? in : 1) * sizeof *out->row);
    out->col = malloc((size_t)(in ? in : 1) * sizeof *out->col);
    out->val = malloc((size_t)(in ? in : 1) * sizeof *out->val);
    if (!out->row || !out->col || !out->val) {
        coo_free(out);
        rc = cls_fail(err, CLS_EOTHER, "out of memory for %lld entries", (long long)in);
        goto done;
    }
    for (int64_t k = 0; k < in; k++) {
        out->row[k] = recv[k].row;
        out->col[k] = recv[k].col;
        out->val[k] = recv[k].val;
    }
    out->nnz = out->cap = in;
done:
    if (rec != MPI_DATATYPE_NULL)
        MPI_Type_free(&rec);
    coo_free(C);
    free(send);
    free(recv);
    free(cnt);
    free(sc);
    return rc;
}
