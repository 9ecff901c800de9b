/*
 * metrics.h: the daemon's counters, rendered in the Prometheus text
 * exposition format (version 0.0.4) at GET /metrics.
 *
 * One set of counters per process (the daemon is one process on rank 0),
 * under one mutex; the job gauges are counted from the job store when the
 * page is rendered, so they can never drift from the truth. Besides the
 * clsolve_* series: requests per route, method and code with latency
 * histograms, histograms of the queue wait and of every job phase, the
 * process_* series of the Prometheus client libraries (start time, CPU,
 * resident and virtual memory, open and maximum file descriptors, read
 * from /proc/self) and clsolve_build_info{version, commit}.
 */
#ifndef CLS_NET_METRICS_H
#define CLS_NET_METRICS_H

#include <stdint.h>

#include "job_store.h"

void metrics_init(int ranks);
void metrics_bytes_received(uint64_t n);
void metrics_job_submitted(void);
/* a batch of `jobs` queued small jobs gathered for one launch (sched_batch.c) */
void metrics_batch(int jobs);
void metrics_upload_rejected(void);
void metrics_job_finished(job_status st, double solve_s, int64_t iterations);
/* Busy seconds of one device (set-up plus iterations of a job part). */
void metrics_device_busy(int rank, int index, const char *name, double seconds);
void metrics_http_response(unsigned status);
/* One finished HTTP request: counted per route template ("/v1/jobs/{id}"),
 * method and status code, its duration in a histogram per route. */
void metrics_http_request(const char *route, const char *method, unsigned status, double seconds);
/* A job's wait in the queue (submitted to started), and one phase of its
 * run ("parse", "partition", "init", "upload", "solve", "gather",
 * "total"), each into a histogram. */
void metrics_queue_wait(double seconds);
void metrics_job_phase(const char *phase, double seconds);
/* More figures from other modules (the connection guard, the job store's
 * health, the disk): fn returns Prometheus text (malloc'ed, or NULL), which
 * the page ends with. At most 8; registered before the server starts. */
typedef char *(*metrics_source_fn)(void *ctx);
void metrics_add_source(metrics_source_fn fn, void *ctx);
/* The page (malloc'ed). */
char *metrics_render(job_store *store);

#endif
