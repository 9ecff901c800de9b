/*
 * job_proto.c: the job broadcast and the workers' sleeping wait (see
 * job_proto.h).
 */
#include "job_proto.h"

#include <string.h>
#include <time.h>

int job_proto_send(MPI_Comm comm, const job_proto_msg *m)
{
    job_proto_msg copy = *m;
    MPI_Request req;
    int rc = MPI_Ibcast(&copy, (int)sizeof copy, MPI_BYTE, 0, comm, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    return MPI_Wait(&req, MPI_STATUS_IGNORE);
}

int job_proto_wait(MPI_Comm comm, job_proto_msg *m)
{
    memset(m, 0, sizeof *m);
    MPI_Request req;
    int rc = MPI_Ibcast(m, (int)sizeof *m, MPI_BYTE, 0, comm, &req);
    if (rc != MPI_SUCCESS)
        return rc;
    long sleep_ns = 1000000L; /* 1 ms, doubling to 50 ms */
    for (;;) {
        int done = 0;
        rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || done)
            return rc;
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 50000000L)
            sleep_ns = sleep_ns * 2 > 50000000L ? 50000000L : sleep_ns * 2;
    }
}
