/*
 * routes.h: the route handlers behind http_server.c's dispatcher. Each
 * answers one route; ids reaching them are already validated (ids_valid),
 * so a job's directory is the only path ever built from a request.
 *
 *   routes_jobs.c    POST /v1/jobs (streaming upload), GET /v1/jobs,
 *                    GET|DELETE /v1/jobs/ID, POST .../cancel,
 *                    POST|DELETE .../pin, .../residuals,
 *                    .../files[/NAME]
 *   routes_solution.c  GET /v1/jobs/ID/solution (ETag, gzip)
 *   routes_misc.c    GET /v1/devices, /healthz, /readyz, /metrics
 *   dashboard.c      GET /, /app.js, /style.css
 */
#ifndef CLS_NET_ROUTES_H
#define CLS_NET_ROUTES_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "http_server.h"

/* The state of one POST /v1/jobs while its body arrives. */
typedef struct routes_post routes_post;

/* First call: checks limits and parameters. Returns the upload state, or
 * NULL after queueing an error response (*replied set to the result). */
routes_post *routes_jobs_post_begin(struct MHD_Connection *c, const http_server_config *cfg,
                                    enum MHD_Result *replied);
/* A chunk of the body. Returns MHD_YES, or MHD_NO once the upload is
 * refused (nothing more is stored; routes_jobs_post_refusal says why and
 * the server answers: see http_server.c). */
enum MHD_Result routes_jobs_post_data(routes_post *p, const char *data, size_t len);
/* Body bytes received so far. */
uint64_t routes_jobs_post_bytes(const routes_post *p);
/* The refusal of an upload (status, problem type slug, detail, line). */
void routes_jobs_post_refusal(const routes_post *p, unsigned *status, const char **slug,
                              const char **detail, long long *line);
/* The body is complete: answer 202 or the error. Frees p. */
enum MHD_Result routes_jobs_post_end(struct MHD_Connection *c, routes_post *p);
/* The client went away mid-upload: discard everything. Frees p. */
void routes_jobs_post_abort(routes_post *p);

enum MHD_Result routes_jobs_list(struct MHD_Connection *c, const http_server_config *cfg);
enum MHD_Result routes_jobs_get(struct MHD_Connection *c, const http_server_config *cfg,
                                const char *id);
/* DELETE removes a finished job (409 for a queued or running one); POST
 * .../cancel stops a queued or running one (409 for a finished one). */
enum MHD_Result routes_jobs_delete(struct MHD_Connection *c, const http_server_config *cfg,
                                   const char *id);
enum MHD_Result routes_jobs_cancel(struct MHD_Connection *c, const http_server_config *cfg,
                                   const char *id);
/* POST /v1/jobs/ID/pin (pin = 1), DELETE (pin = 0): exempt from retention. */
enum MHD_Result routes_jobs_pin(struct MHD_Connection *c, const http_server_config *cfg,
                                const char *id, int pin);
enum MHD_Result routes_jobs_solution(struct MHD_Connection *c, const http_server_config *cfg,
                                     const char *id);
enum MHD_Result routes_jobs_residuals(struct MHD_Connection *c, const http_server_config *cfg,
                                      const char *id);
/* name NULL: the list of a physics job's output files. */
enum MHD_Result routes_jobs_files(struct MHD_Connection *c, const http_server_config *cfg,
                                  const char *id, const char *name);

enum MHD_Result routes_devices(struct MHD_Connection *c, const http_server_config *cfg);
enum MHD_Result routes_healthz(struct MHD_Connection *c, const http_server_config *cfg);
/* 200 when jobs can be taken and run: not draining, the devices up, the job
 * store writable; else 503 with the reasons. */
enum MHD_Result routes_readyz(struct MHD_Connection *c, const http_server_config *cfg);
enum MHD_Result routes_metrics(struct MHD_Connection *c, const http_server_config *cfg);

/* 1 when name is a dashboard file; answers it. */
int dashboard_is_asset(const char *path);
enum MHD_Result dashboard_serve(struct MHD_Connection *c, const char *path);

/* 404 unknown-job for id. */
enum MHD_Result routes_unknown_job(struct MHD_Connection *c, const char *id);

/* Checks that every query parameter is one of the NULL-terminated names;
 * otherwise queues 400 and returns 0. */
int routes_only_params(struct MHD_Connection *c, const char *const *names,
                       enum MHD_Result *replied);

#endif
