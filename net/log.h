/*
 * log.h: the daemon's structured log: one JSON object per line on stderr,
 * for every HTTP request and every job event, so journald (or any log
 * shipper) keeps them as they are and a program can read them back:
 *
 *   {"ts":"2026-11-24T07:12:01.123Z","event":"request","method":"GET",
 *    "route":"/v1/jobs/{id}","path":"/v1/jobs/9f1c...","status":200,
 *    "duration_ms":0.41,"bytes_in":0,"remote":"127.0.0.1","job":"9f1c..."}
 *   {"ts":...,"event":"job_finished","job":"9f1c...","status":"succeeded",...}
 *
 * Events: request, job_submitted, job_started, job_finished,
 * job_cancel_requested, job_cancelled, job_deleted. Lines are written
 * whole, under a mutex, with one write. The daemon's start-up and error
 * messages stay plain text ("clsolved: ...").
 */
#ifndef CLS_NET_LOG_H
#define CLS_NET_LOG_H

#include <jansson.h>

/* One line {"ts", "event", ...fields}; fields (an object, may be NULL) is
 * stolen. */
void log_event(const char *event, json_t *fields);

/* Off (nothing written) when $CLSOLVE_LOG is "off"; read once. */
int log_enabled(void);

#endif
