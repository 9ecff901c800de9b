/*
 * admission.h: what a job will cost before it spends it (issue 17).
 *
 * Limits on what an upload becomes (checked while it streams, upload.c):
 * the matrix's declared entries, rows and columns (--max-nnz) and its text
 * once decompressed (--max-matrix-bytes). Their defaults come from the
 * machine: the entries whose reading fits in half of rank 0's memory
 * (mm_read_memory_estimate) and whose CSR fits in the devices of all ranks
 * together; 64 bytes of text per such entry.
 *
 * Admission, before the scheduler takes a cg job: an estimate from the
 * stored matrix's header and its measured text size (never a declared count
 * beyond what the text backs: an entry takes at least 4 bytes) of
 *   - rank 0's memory: the read's peak (triplets, CSR, dense sums, buffers)
 *     plus the vectors;
 *   - each device's memory: its part of the CSR in the SpMV formats
 *     (24 bytes per entry: values, columns and a format's copy) and the
 *     method's vectors (80 bytes per row), and the largest single buffer
 *     against the device's largest allocation;
 * and a verdict: run; wait (rank 0's host has the memory but not free now:
 * the job stays queued, its progress says what it waits for); split (one
 * device per rank is too small but the rank's devices together hold it:
 * devices_per_rank > 1); or never (more than the host or every device the
 * ranks have: the job fails at once, with the figure it needs and the
 * figure there is). The figures are estimates with margin; the reader's
 * memory limit (mm_read_options.max_memory) and the device allocations'
 * own failures stay the backstop.
 *
 * Pure functions over numbers and the cluster JSON (cluster.h), so the unit
 * test drives them with made-up machines.
 */
#ifndef CLS_NET_ADMISSION_H
#define CLS_NET_ADMISSION_H

#include <jansson.h>
#include <stdint.h>

#include "../matrices/mm.h"

#define ADM_MAX_DEVICES 64 /* devices per rank considered */

typedef struct adm_limits {
    int64_t max_nnz;           /* declared entries, rows, columns */
    uint64_t max_matrix_bytes; /* a matrix's text, decompressed */
} adm_limits;

/* The memory rank 0 may use: the host's (/proc/meminfo) or, inside a
 * container with a memory limit, the cgroup's when smaller
 * (common/sysres.h). Bytes; 0 when unknown. */
void adm_memory(uint64_t *total, uint64_t *available);

/* Defaults from rank 0's memory and the devices' (0: unknown, ignored). */
void adm_default_limits(uint64_t host_total, uint64_t devices_total, adm_limits *out);

/* The devices each rank would use with `per_rank` devices per rank, from the
 * cluster JSON (its "per_rank" list, each rank's "devices" in the order
 * --device counts them, its "local_rank" and "device_spec"): mem[r*per_rank
 * + k] and alloc[...] (global memory and largest allocation). Returns how
 * many ranks were filled (0 when the cluster says nothing usable), and
 * *max_per_rank: the most devices of the spec's class any rank has. */
int adm_cluster_devices(json_t *cluster, int per_rank, uint64_t *mem, uint64_t *alloc, int cap,
                        int *max_per_rank);
/* The devices of all ranks together (for the default limits). */
uint64_t adm_cluster_device_total(json_t *cluster);

typedef struct adm_estimate {
    int64_t entries;         /* stored entries the text can hold */
    int64_t nnz;             /* after symmetric expansion, at most */
    uint64_t host_bytes;     /* rank 0's peak */
    uint64_t device_bytes;   /* per device, at devices_per_rank */
    uint64_t largest_buffer; /* the largest one allocation on a device */
    int devices_per_rank;    /* chosen */
} adm_estimate;

typedef enum { ADM_RUN, ADM_WAIT, ADM_NEVER } adm_verdict;

typedef struct adm_machine {
    uint64_t host_total, host_available; /* rank 0's host */
    int nranks;
    int max_per_rank; /* devices of the class a rank has at most */
    json_t *cluster;  /* for the devices (borrowed; NULL: unknown) */
} adm_machine;

/* The estimate for a matrix of header h and `text_bytes` of text
 * (decompressed; < 0 unknown: the declaration is taken), and the verdict;
 * `why` says, for WAIT and NEVER, what is needed and what there is. */
adm_verdict adm_decide(const mm_header *h, int64_t text_bytes, const adm_machine *m,
                       adm_estimate *e, char *why, size_t cap);

/* A physics job (physics/estimate.h; issue 27, "every job kind bounded"):
 * its estimate against rank 0's host (on a CPU device such as PoCL the
 * device's buffers are host memory too, so they count there), rank 0's
 * device (90 % of its global memory), and its output bytes against `room`
 * (the data directory's free space less --disk-reserve; UINT64_MAX when
 * unknown). NEVER when the host or the device is too small, *what
 * ADM_NEED_MEMORY; NEVER with *what ADM_NEED_DISK when the outputs do not
 * fit the room now (the POST refuses it; the scheduler makes that a WAIT);
 * WAIT when the host has the memory but not free now. `why` holds the
 * figures (no paths). */
enum { ADM_NEED_NONE, ADM_NEED_MEMORY, ADM_NEED_DISK };
struct physics_estimate;
adm_verdict adm_decide_physics(const char *kind, const struct physics_estimate *e,
                               const adm_machine *m, uint64_t room, int *what, char *why,
                               size_t cap);

/* The limits for the upload check, shared with the HTTP threads (set once
 * the devices are known; read with adm_limits_get). */
void adm_limits_set(const adm_limits *l);
adm_limits adm_limits_get(void);

#endif
