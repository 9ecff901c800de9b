/*
 * dcomm.c: what every phase of dsolve_file relies on between ranks: the
 * agreement of all ranks on an outcome (dsolve_agree: the first failing
 * rank's class and message, on every rank), transfers larger than an int
 * count (dsolve_send_big / recv_big, in messages of DS_CHUNK elements),
 * and rank 0's layout given to every rank (dsolve_share_layout). The
 * input's readers (dinput.c, dinput_ranged.c) and the solve (dsolve.c)
 * build on these; they build on nothing of theirs.
 */
#include "dsolve_priv.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- agreement */

/* Every rank passes its local outcome; all return the first failing rank's
 * class, with its message in err (prefixed "rank N: " when prefix is set
 * and N is not 0). */
static int agree(MPI_Comm comm, int rc, int prefix, cls_error *err)
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
            if (first != 0 && prefix)
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

int dsolve_agree(MPI_Comm comm, int rc, cls_error *err)
{
    return agree(comm, rc, 1, err);
}

int dsolve_agree_plain(MPI_Comm comm, int rc, cls_error *err)
{
    return agree(comm, rc, 0, err);
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

/* ---------------------------------------------------------------- layout */

int dsolve_share_layout(MPI_Comm comm, int64_t nrows, int G, int root_rc, part_layout *L,
                        cls_error *err)
{
    int me, size, nparts;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    nparts = me == 0 ? (root_rc ? -1 : L->nparts) : 0;
    if (MPI_Bcast(&nparts, 1, MPI_INT, 0, comm) != MPI_SUCCESS)
        return dsolve_agree(comm, cls_fail(err, CLS_EOTHER, "MPI_Bcast(layout) failed"), err);
    if (nparts < 0) /* rank 0 failed and says why */
        return dsolve_agree(comm, me == 0 ? root_rc : CLS_OK, err);
    int rc = CLS_OK;
    int64_t *bounds = malloc(2 * ((size_t)nparts + 1) * sizeof *bounds);
    if (!bounds) {
        rc = cls_fail(err, CLS_EOTHER, "out of memory for the layout");
    } else {
        if (me == 0) {
            memcpy(bounds, L->begin, ((size_t)nparts + 1) * sizeof *bounds);
            memcpy(bounds + nparts + 1, L->nnz, (size_t)nparts * sizeof *bounds);
        }
        if (MPI_Bcast(bounds, 2 * (nparts + 1), MPI_INT64_T, 0, comm) != MPI_SUCCESS)
            rc = cls_fail(err, CLS_EOTHER, "MPI_Bcast(layout) failed");
        else if (me != 0)
            rc = part_from_bounds(nrows, bounds, bounds + nparts + 1, nparts, size, G, L, err);
        free(bounds);
    }
    return dsolve_agree(comm, rc, err);
}
