/*
 * job_wait.h: long polls. `GET /v1/jobs/ID?wait=S` is answered when the job
 * reaches a final state (or is removed), or after S seconds, whichever
 * comes first: a client waits for its result with one request instead of
 * polling, and learns of the end at once instead of at its next poll.
 *
 * The request's connection is suspended (libmicrohttpd's
 * MHD_suspend_connection) and parked here; one thread watches the store's
 * change count (job_store_watch) and resumes each parked connection when
 * its job is final or gone, at its deadline, or when the server stops.
 * A polling thread is never blocked by a waiting request.
 */
#ifndef CLS_NET_JOB_WAIT_H
#define CLS_NET_JOB_WAIT_H

#include <microhttpd.h>
#include <stddef.h>

#include "job_store.h"

#define JOB_WAIT_MAX_S 60.0 /* the longest wait a request may ask for */

typedef struct job_wait job_wait;

int job_wait_start(job_wait **out, job_store *store);
/* Parks c (suspended by the caller) until job id is final or gone, or
 * until deadline (cls_now's clock), then resumes it. -1: not parked (the
 * watcher stops, or no memory): the caller resumes c and answers. */
int job_wait_add(job_wait *w, struct MHD_Connection *c, const char *id, double deadline);
/* Resumes every parked connection and stops the thread; before
 * MHD_stop_daemon, which must find no suspended connection. Requests
 * parked after it are refused (job_wait_add: -1), so w stays valid for
 * the polling threads until job_wait_free, after MHD_stop_daemon. */
void job_wait_stop(job_wait *w);
void job_wait_free(job_wait *w);
/* Requests parked now (/metrics: clsolve_http_waiting_requests). */
char *job_wait_metrics(void *w);

#endif
