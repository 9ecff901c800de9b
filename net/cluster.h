/*
 * cluster.h: what /v1/devices shows: every rank's host and OpenCL devices,
 * the device each rank solves on, and its work-group configuration.
 *
 * Gathered once at start-up (a collective over the world communicator,
 * before the HTTP server starts), because only rank 0's scheduler thread
 * may call MPI afterwards and device lists do not change while a daemon
 * runs. Each rank describes itself as a JSON string; rank 0 gathers them.
 * Which device a rank actually solves on is decided per job by the solver
 * (the node-local rank picks among the devices --device matches) and
 * reported in each job's "devices".
 */
#ifndef CLS_NET_CLUSTER_H
#define CLS_NET_CLUSTER_H

#include <jansson.h>
#include <mpi.h>

#include "../common/error.h"

/* Collective. On rank 0 *out is {"ranks": N, "hosts": [...], "per_rank":
 * [{rank, host, pid, local_rank, device_spec, devices: [...]}]} (new
 * reference); NULL elsewhere. device_spec is the --device value. */
int cluster_gather(MPI_Comm comm, const char *device_spec, json_t **out, cls_error *err);

/* The daemon-wide device JSON of one OpenCL device (shared with jobs). */
struct ocl_device;
json_t *cluster_device_json(const struct ocl_device *d);

#endif
