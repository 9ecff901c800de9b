/*
 * dvec.h: distributed vectors and the distributed operations the Krylov
 * methods (dcg.c, pipecg.c) are written in, so those files read like the
 * algorithm, as cg.c does over la.h.
 *
 * A dsys is this rank's share of a partitioned system: its parts (one per
 * device: the device's OpenCL context, la_ctx and ld_ctx, the part's
 * renumbered matrix on host and device, its halo plan and staging buffers)
 * and the communicator. A dvec is one device vector per part: nlocal
 * entries, or nlocal + nghost when it is ever the x of an SpMV ("ghosted").
 *
 * Errors are sticky and agreed. A device error on one rank must not leave
 * the other ranks waiting in a collective, so a failing operation records
 * the error in the dsys and the rank keeps taking part in every MPI step
 * (skipping device work) until the next reduction; every reduction carries
 * a "failed" count and a "cancel" flag beside the sums, so all ranks learn
 * of any failure, and of rank 0's cancel request, in the same reduction and
 * leave the solver at the same iteration. Reductions are MPI_Allreduce /
 * MPI_Iallreduce of compensated (hi, lo) pairs with a commutative pair-sum
 * operation, rounded once at the end; the decisions that follow (stop,
 * breakdown) use only reduced values, identical on every rank. Since the
 * device sums are compensated too (dcg.cl), a dot product is correctly
 * rounded but for pathological cancellation, whatever the partition, and
 * SpMV rows and vector updates are computed identically in any partition:
 * a solve on K parts follows the one-part solve step for step.
 *
 * Within a rank, per-part sums are added in part order, and each part's
 * reduction is started on every device before waiting on any, so several
 * devices of one rank work concurrently from one host thread.
 */
#ifndef CLS_SOLVER_DVEC_H
#define CLS_SOLVER_DVEC_H

#include <mpi.h>
#include <stdint.h>

#include "../../kernels/la.h"
#include "../../kernels/la_dist.h"
#include "dprof.h"
#include "halo.h"
#include "partition.h"

typedef struct dpart {
    int part, slot;
    ocl_device dev;
    ocl_ctx ocl;
    la_ctx la;
    ld_ctx ld;
    int have_ocl, have_la, have_ld;
    int warm;       /* context, queues and programs came from the warm set */
    la_config cfg0; /* la's configuration as built, before any matrix's overlay */
    size_t ngroups0;
    csr_matrix A; /* the part's rows, renumbered (may view the rank's block) */
    halo_plan halo;
    double *dinv; /* 1 / a_ii of A's rows, or NULL: pc_diag takes it (dsolve's
                   * one part, from the input's check), the part's owner frees
                   * it otherwise */
    /* On the device a part's rows are renumbered once more, interior rows
     * first (halo.interior, then halo.boundary): vectors live in that order
     * (dvec_upload / dvec_download translate), so the interior and the
     * boundary rows are two contiguous blocks. */
    int64_t ni;    /* interior rows: device rows [0, ni) */
    int32_t *perm; /* device row -> row of A (NULL: the identity) */
    /* the fused engine (CG): the blocks in la's tuned format */
    la_csr Ai, Ab; /* rows [0, ni) and [ni, nlocal) (row_offset ni) */
    int have_Ai, have_Ab;
    /* the split-CSR kernels (pipelined CG) */
    ld_csr dA;
    int have_dA;
    cl_mem d_send_idx, d_sendbuf;
    cl_mem pin_send, pin_recv; /* pinned staging, mapped at h_send / h_recv */
    void *h_send, *h_recv;
    cl_event ev_pack, ev_ghost;
} dpart;

typedef struct dsys {
    MPI_Comm comm;
    int rank, size;
    const part_layout *L;
    int nmine;
    dpart *parts;
    halo_comm hc;
    halo_plan *plans_copy; /* the parts' plans by slot, shallow, for hc */
    int have_hc;
    la_precision prec;
    double init_s, upload_s; /* dsys_open: contexts and programs; matrices and halo buffers */
    int warm_parts;          /* parts whose device state was warm (dsys_warm_*) */
    char device_choice[512]; /* --device auto on one part: why this device (devfig.h) */
    /* sticky local failure */
    int failed;
    cls_error ferr;
    /* the pending non-blocking reduction, and the pair type and sum */
    MPI_Request req;
    double rbuf[16];
    int rn, pending;
    MPI_Datatype pair;
    MPI_Op pair_sum;
    int have_mpi_types;
    dprof *prof; /* --profile: the iteration's steps timed (dprof.h), else NULL */
} dsys;

/* Sums of this rank's parts, compensated: sum c is hi[c] + lo[c]. */
typedef struct dsum {
    double hi[4], lo[4];
    int n;
} dsum;

/* (hi, lo) += (h, l), compensated (the sum of a rank's parts). */
void dsum_pair_add(double *hi, double *lo, double h, double l);

typedef struct dvec {
    la_vec *v; /* per slot */
    int nmine, ghosted;
} dvec;

/* Sets up this rank's parts: opens the devices, builds the kernels, uploads
 * the matrices (parts[s].A and .halo filled by the caller) and the halo
 * buffers. fused: the matrices go up as la's tuned-format blocks (Ai, Ab)
 * for the fused CG (dcg.c); otherwise as split CSR for dvec_spmv (pipelined
 * CG). The format is one for every part (the same rows give the same
 * bits in any partition): the one asked for, else SELL-C-sigma on GPUs,
 * CSR-vector for long rows, scalar CSR on CPUs. Local: the caller agrees on the outcome
 * (dsolve_agree). device is the --device spec: auto|cpu|gpu|accelerator|INDEX|I,J,... (see
 * dsys_pick_devices). on_device, when not NULL, is called once a one-part
 * system's device is known and before its matrix goes up, and may change
 * the format (dsolve's --method auto: cg-small reads CSR). */
typedef void (*dsys_device_fn)(void *ctx, const ocl_device *dev, la_spmv_variant *spmv);
int dsys_open(dsys *s, MPI_Comm comm, const part_layout *L, dpart *parts, int nmine,
              const char *device, int devices_per_rank, la_precision prec, la_spmv_variant spmv,
              int fused, dsys_device_fn on_device, void *on_device_ctx, cls_error *err);
void dsys_close(dsys *s);
/* dsys_close's MPI calls alone (a pending request, the pair-sum type), on
 * the thread that may call MPI, before dsys_close runs on another
 * (dsolve_options.release_early); dsys_close does them itself otherwise */
void dsys_close_comm(dsys *s);

/*
 * Warm devices. A process that solves more than once (the daemon's ranks)
 * keeps each device's OpenCL context, queues and built programs (ocl_ctx,
 * la_ctx, ld_ctx) between solves: dsys_close puts a part's device state in
 * a process-wide warm set, and the next dsys_open for the same device,
 * precision and kind (one part or several) takes it instead of building
 * it again (0.13 s per job on an H100, 0.01-0.02 s on PoCL). What a job
 * uploaded (matrix, vectors, pooled buffers) is released at its close; only
 * the state that does not depend on a matrix stays, with la's configuration
 * restored to what it was before the job's tuning overlay. A part that
 * failed is never put back, so a device that failed is rebuilt for the next
 * job. dsys_warm_release_all empties the set (at exit). CLSOLVE_WARM=0 in
 * the environment turns the set off.
 */
void dsys_warm_release_all(void);

/* Prewarm: makes the warm state of the device a one-part solve with this
 * --device spec and precision will most likely use (the first device of
 * the spec, as dsys_pick_devices orders them) on a thread of its own, so
 * that the OpenCL start (contexts, programs: 0.13 s on an H200) overlaps
 * the input phase instead of following it. dsys_prewarm_join waits for it;
 * dsys_open then finds the state in the warm set. A failure is silent: the
 * solve makes its device state itself and reports what goes wrong.
 * input_bytes > 0 (the input file's size) also makes the staging buffers
 * of the matrix's upload there (la_stage_prepare), where the device stages
 * copies of that size; 0 (a generator, a pipe) does not. */
void dsys_prewarm_start(const char *device, la_precision prec, int64_t input_bytes);
/* The same for a rank of several that will solve one part of a system of
 * several parts (G = 1) on the device its node-local rank lr picks
 * (dsys_node_rank): the multi-part kind of state, so that the device's
 * start (0.3 s on an H200 under mpirun) overlaps the ranged read. */
void dsys_prewarm_start_part(const char *device, la_precision prec, int lr, int64_t input_bytes);
void dsys_prewarm_join(void);
/* 1 while a prewarm started and not joined runs (or has run) beside the caller */
int dsys_prewarm_active(void);

/* One device's state outside a dsys, for work that is not one system's
 * parts (the batch of many small systems, solver/dbatch.c): the device a
 * one-part solve on this rank would take (dsys_pick_devices on
 * MPI_COMM_SELF), its state taken from the warm set or built (a shared
 * context, as dsys_open's), one-part kind. dsys_device_close gives it back
 * to the warm set after la_finish and la_pool_clear, or releases it when
 * failed is set or the set is full. */
int dsys_device_open(const char *device, la_precision prec, dpart *p, cls_error *err);
void dsys_device_close(dpart *p, la_precision prec, int failed);

/* The devices this rank's slots use: candidates from spec (a list of
 * indices; one index; or every device of a type: auto = the type of the
 * first device in discovery order, GPUs first), and slot s of the rank with
 * node-local index lr takes candidate (lr * devices_per_rank + s) mod n. */
int dsys_pick_devices(MPI_Comm comm, const char *spec, int devices_per_rank, int nmine,
                      ocl_device *out, cls_error *err);
/* Its two halves: the node-local rank (collective on comm), and the pick
 * for a given one (no MPI: the prewarm's thread calls it). */
int dsys_node_rank(MPI_Comm comm, int *lr, cls_error *err);
int dsys_pick_local(const char *spec, int lr, int devices_per_rank, int nmine, ocl_device *out,
                    cls_error *err);

/* Uploads part p's matrix (dpart.c): in device numbering (p->ni, p->perm
 * set here), as la blocks Ai and Ab (fused) or as split CSR, with its halo
 * send list. mean_row is the whole matrix's. */
int dpart_upload(dpart *p, int fused, la_spmv_variant spmv, double mean_row, cls_error *err);

/* B = rows perm[0..n) of A (perm NULL: rows 0..n), the local columns
 * (< n) renumbered by iperm (NULL: kept), the others (ghosts) kept, or
 * dropped with local_only; each row's entries in A's order, or sorted by
 * column with sorted. A may be a view (row pointers from A->rowptr[0]).
 * On every core; the same B for any thread count. The split engine's
 * device order (dpart_upload; the fused engine reads that order through a
 * la_csr_view, no copy) and the preconditioners' blocks (pc_part_rows)
 * use it. */
int dpart_rows(const csr_matrix *A, int64_t n, const int32_t *perm, const int32_t *iperm,
               int local_only, int sorted, csr_matrix *B, cls_error *err);
/* *iperm (malloc'd) = the inverse of the permutation perm of 0..n), on
 * every core */
int dpart_iperm(const int32_t *perm, int64_t n, int32_t **iperm, cls_error *err);

/* Records a local failure (the first one's message is kept). */
void dsys_fail(dsys *s, const cls_error *e);

/* The sticky failure: runs a device call unless this rank has already
 * failed, and records a failure instead of returning it, so every rank goes
 * on to the next reduction, where the failure is agreed (dsys_allreduce)
 * and all ranks stop together. DSYS_ERR is the call's error argument. */
#define DSYS_DO(s, call)                                                                           \
    do {                                                                                           \
        if (!(s)->failed) {                                                                        \
            cls_error dsys_e_;                                                                     \
            cls_error_clear(&dsys_e_);                                                             \
            (void)dsys_e_;                                                                         \
            if ((call) != CLS_OK)                                                                  \
                dsys_fail((s), &dsys_e_);                                                          \
        }                                                                                          \
    } while (0)
#define DSYS_ERR (&dsys_e_)

int dvec_create(dsys *s, int ghosted, dvec *x, cls_error *err);
void dvec_release(dvec *x);
int dvec_upload(dsys *s, dvec *x, double *const *host, cls_error *err);
int dvec_download(dsys *s, const dvec *x, double *const *host, cls_error *err);

/* The operations; errors are sticky (see above). */
void dvec_fill(dsys *s, double a, dvec *y);
void dvec_copy(dsys *s, const dvec *x, dvec *y);
void dvec_axpy(dsys *s, double a, const dvec *x, dvec *y);           /* y += a x */
void dvec_xpay(dsys *s, const dvec *x, double a, dvec *y);           /* y = x + a y */
void dvec_pointwise(dsys *s, const dvec *d, const dvec *r, dvec *z); /* z = d .* r */
/* y = A x, x ghosted: pack and send the halo, interior rows while it is in
 * flight, then the ghosts and the boundary rows. */
void dvec_spmv(dsys *s, const dvec *x, dvec *y);

/* The halo steps every SpMV shares, around caller-supplied row work:
 * x[k] is part k's ghosted vector; rows(s, k, boundary, ctx, err) enqueues
 * part k's interior (boundary = 0: while the halo travels) or boundary rows
 * (boundary = 1: after x[k]'s ghosts are written). */
typedef int (*dsys_rows_fn)(dsys *s, int k, int boundary, void *ctx, cls_error *err);
void dsys_spmv_halo(dsys *s, la_vec *const *x, dsys_rows_fn rows, void *ctx);

/* Local sums (this rank's parts), started on every device then waited for:
 * out->n sums, compensated (la_dist.h): x_c'y_c for c < ndots; r'r; r'z and
 * r'r; r'u, w'u and r'r. */
void dvec_dots_local(dsys *s, int ndots, const dvec *const *x, const dvec *const *y, dsum *out);
/* pipelined CG's fused update with its three sums (r'u, w'u, r'r), only
 * enqueued: dvec_sums_wait(s, 3, out) waits for them, after the caller
 * has enqueued the next SpMV so that the device never waits for the host */
void dvec_pipecg_update_begin(dsys *s, double alpha, double beta, const dvec *nv, const dvec *m,
                              dvec *w, dvec *z, dvec *q, dvec *sv, dvec *p, dvec *x, dvec *r,
                              dvec *u);
void dvec_sums_wait(dsys *s, int ncomp, dsum *out);

/* The four compensated sums of a method's round: each part's eight doubles
 * (four (hi, lo) pairs, as la_cgp_sums_wait and la_pcm_sums_wait give them)
 * added over this rank's parts, then dsys_allreduce: v[0..4) on every rank.
 * A part that fails adds zeros; the failure is agreed in the reduction. */
typedef int (*dsys_sums_fn)(void *ctx, int part, double out[8], cls_error *err);
int dsys_reduce_sums(dsys *s, dsys_sums_fn wait, void *ctx, double v[4], int cancel_in,
                     int *cancel_out, cls_error *err);

/* Global sums (MPI_Allreduce with a compensated pair sum, MPI_Op_create),
 * rounded once into v[0..in->n), with the failure count and the cancel
 * flag (rank 0's cancel_in). Returns CLS_OK, or CLS_EOTHER with err set when
 * any rank has failed (this rank's message if it is one of them). */
int dsys_allreduce(dsys *s, const dsum *in, double *v, int cancel_in, int *cancel_out,
                   cls_error *err);
/* The same for n <= DSYS_MAX_SUMS sums (several right-hand sides: 4 per
 * column): in_hi[c] + in_lo[c] per sum, v[0..n). */
#define DSYS_MAX_SUMS 256
int dsys_allreduce_n(dsys *s, int n, const double *in_hi, const double *in_lo, double *v,
                     int cancel_in, int *cancel_out, cls_error *err);
/* The same, non-blocking (MPI_Iallreduce): begin, overlap work, end. */
int dsys_iallreduce_begin(dsys *s, const dsum *in, int cancel_in, cls_error *err);
int dsys_iallreduce_end(dsys *s, double *v, int *cancel_out, cls_error *err);

#endif
