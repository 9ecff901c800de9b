/*
 * job_proto.h: the rank-0 -> workers job protocol.
 *
 * Rank 0 (the scheduler) tells every rank what to do next with one
 * broadcast of a fixed-size message: run a cg job (the paths and the
 * options, so every rank can make the same collective dsolve_file call) or
 * exit. Physics jobs run on rank 0 alone and are not announced.
 *
 * Workers wait for the message without spinning: a non-blocking broadcast
 * (MPI_Ibcast) is tested with MPI_Test, sleeping between tests with a
 * backoff from 1 ms up to 50 ms, so an idle worker wakes 20 times a second
 * and uses well under 1% of a core, and a job starts at most 50 ms after
 * rank 0 announces it. Rank 0 posts the matching MPI_Ibcast and waits for
 * it (a blocking and a non-blocking collective never match, so both sides
 * use Ibcast). The message is raw bytes: every rank must run the same
 * build on the same architecture, as mpirun of one binary implies.
 */
#ifndef CLS_NET_JOB_PROTO_H
#define CLS_NET_JOB_PROTO_H

#include <mpi.h>
#include <stdint.h>

#include "../solver/pc/pc_options.h"
#include "ids.h"

#define JOB_PROTO_PATH 1024

enum { JOB_PROTO_CG = 1, JOB_PROTO_EXIT = 2 };

typedef struct job_proto_msg {
    int32_t cmd;
    int32_t precond;   /* solver_precond */
    pc_options pc;     /* its parameters (pc.h) */
    int32_t precision; /* la_precision */
    int32_t method;    /* solver_method */
    int32_t backend;   /* la_backend: a CPU device's native loops or kernels */
    int32_t devices_per_rank; /* admission.c: > 1 when one device per rank is too small */
    double tol;
    double atol;
    int64_t maxiter;
    char id[IDS_LEN + 1];
    char a_path[JOB_PROTO_PATH], b_path[JOB_PROTO_PATH], x0_path[JOB_PROTO_PATH]; /* "" = none */
} job_proto_msg;

/* Rank 0: announces m to every rank. */
int job_proto_send(MPI_Comm comm, const job_proto_msg *m);

/* Workers: waits (sleeping, see above) for the next message. */
int job_proto_wait(MPI_Comm comm, job_proto_msg *m);

#endif
