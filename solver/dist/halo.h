/*
 * halo.h: the ghost exchange of a row-partitioned matrix (as HPCG's SetupHalo
 * and ExchangeHalo, or PETSc's VecScatter for MPIAIJ).
 *
 * Numbering. A part's rows are its local unknowns 0..nlocal-1 (global row
 * row_begin + i). Its matrix's columns are renumbered in place: a column it
 * owns becomes the local index, any other column a ghost index nlocal + g,
 * where the ghosts are sorted by global index. Parts are contiguous blocks in
 * row order, so sorting by global index is sorting by owner: the ghosts a
 * part receives from one neighbour are one contiguous run, and a vector of
 * nlocal + nghost entries receives its halo straight into its tail (no
 * unpack step, as HPCG receives into the tail of x).
 *
 * Plans. Each part learns what each neighbour needs from it (the send list:
 * local indices, grouped by neighbour, in the neighbour's ghost order) by one
 * exchange at set-up: an all-reduce of the parts x parts count matrix, then
 * the index lists themselves, point to point between ranks and by copy
 * between parts of one rank. Only those entries ever move; the whole vector
 * is never gathered.
 *
 * Exchange. halo_comm holds host staging buffers (send and receive, per
 * part) and runs one exchange in steps, so the device code can overlap it:
 * post receives; as each part's send buffer is filled (packed on the device
 * and read back), send it; copy between parts of this rank (no MPI); wait.
 * halo_exchange_host is the whole exchange on host vectors: the reference
 * the device path is tested against, and the true-residual check's halo.
 *
 * Messages between parts p -> q carry tag HALO_TAG_BASE + q * P + p (P the
 * number of parts), so several parts per rank never confuse theirs.
 */
#ifndef CLS_SOLVER_HALO_H
#define CLS_SOLVER_HALO_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/error.h"
#include "../../matrices/csr.h"
#include "partition.h"

typedef struct halo_peer {
    int part;       /* the neighbour part */
    int rank;       /* its rank */
    int64_t offset; /* into the ghost tail (recv) or the send list (send) */
    int64_t count;
} halo_peer;

typedef struct halo_plan {
    int part;                /* global part number */
    int64_t row_begin;       /* global index of local row 0 */
    int64_t nlocal, nghost;
    int64_t *ghost_global;   /* nghost global indices, ascending */
    int nrecv, nsend;
    halo_peer *recv;         /* ghost tail [offset, offset + count) from recv[i].part */
    halo_peer *send;         /* send_idx[offset, offset + count) go to send[i].part */
    int64_t nsend_total;
    int32_t *send_idx;       /* local row indices to pack, grouped by peer */
    int64_t ninterior, nboundary;
    int32_t *interior;       /* local rows with no ghost column, ascending */
    int32_t *boundary;       /* local rows with at least one ghost column, ascending */
} halo_plan;

/* Renumbers the columns of A (the part's rows, global columns, sorted within
 * each row) in place to local-then-ghost numbering and fills the local half
 * of the plan (ghosts, receive runs, interior/boundary rows). A->ncols
 * becomes nlocal + nghost. Fails when a column is out of range or the local
 * numbering would overflow 32-bit indices. */
int halo_plan_local(halo_plan *h, csr_matrix *A, const part_layout *L, int part,
                    cls_error *err);

/* Collective over comm (every rank, parts or not): fills the send lists of
 * this rank's parts. plans[s] is the plan of the rank's part with slot s
 * (after halo_plan_local), nmine = the rank's part count. */
int halo_plan_exchange(MPI_Comm comm, const part_layout *L, halo_plan *plans, int nmine,
                       cls_error *err);

void halo_plan_free(halo_plan *h);

typedef struct halo_comm {
    MPI_Comm comm;
    const part_layout *L;
    halo_plan *plans; /* this rank's, by slot */
    int nmine;
    size_t elem;      /* bytes per vector entry */
    int owned;        /* the buffers are halo_comm's own (malloc'ed) */
    void **sendbuf;   /* per slot: nsend_total * elem bytes (caller may supply) */
    void **recvbuf;   /* per slot: nghost * elem bytes */
    MPI_Request *reqs;
    int nreq, cap;
} halo_comm;

/* sendbuf/recvbuf: per-slot buffers the caller owns (pinned staging memory
 * from the device runtime), or NULL to have halo_comm malloc them. */
int halo_comm_init(halo_comm *hc, MPI_Comm comm, const part_layout *L, halo_plan *plans,
                   int nmine, size_t elem, void **sendbuf, void **recvbuf, cls_error *err);
void halo_comm_free(halo_comm *hc);

/* One exchange, in order: post_recvs; send(slot) for every slot once its
 * send buffer holds the packed values; local() once every slot's send
 * buffer is filled; wait. After wait each recvbuf[slot] holds the ghost
 * values in ghost order. */
int halo_comm_post_recvs(halo_comm *hc, cls_error *err);
int halo_comm_send(halo_comm *hc, int slot, cls_error *err);
int halo_comm_local(halo_comm *hc, cls_error *err);
int halo_comm_wait(halo_comm *hc, cls_error *err);

/* The whole exchange on host vectors of doubles (elem must be
 * sizeof(double)): x[slot] has nlocal + nghost entries; its ghost tail is
 * filled from the owners. Collective. */
int halo_exchange_host(halo_comm *hc, double *const *x, cls_error *err);

/* y = A x for one part on the host, A renumbered, x with its halo filled. */
void halo_spmv_host(const csr_matrix *A, const double *x, double *y);

#endif
