/*
 * routes_jobs.h: the job routes' handlers (rows of routes.c) and the
 * upload of a new job, which the dispatcher (http_server.c) feeds as its
 * body arrives: libmicrohttpd hands a body over chunk by chunk, so
 * POST /v1/jobs is a handler that starts an upload (routes_jobs_post)
 * and four calls that carry it on. Ids reaching these handlers are
 * already validated (ids_valid), so a job's directory is the only path
 * ever built from a request.
 */
#ifndef CLS_NET_ROUTES_JOBS_H
#define CLS_NET_ROUTES_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "http_call.h"

/* The state of one POST /v1/jobs while its body arrives. */
typedef struct routes_post routes_post;

/* POST /v1/jobs, at the request's headers: checks limits and parameters,
 * then sets call->upload, or answers the refusal. */
enum MHD_Result routes_jobs_post(http_call *call);
/* POST /v1/batches: the same upload, one job per part 'matrix' (its rhs
 * and x0 parts after it), the query and 'options' applying to every one;
 * all queued or none. The other calls below carry it on as for one job. */
enum MHD_Result routes_jobs_post_batch(http_call *call);
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

enum MHD_Result routes_jobs_list(http_call *call);
/* ?wait=S on a route that can wait for its job to end (GET /v1/jobs/ID,
 * GET .../solution; job_wait.h): 1 when the handler returns *reply now (a
 * 400 for a bad S, unknown-job, or MHD_YES with call->wait_s set: parked
 * until the job is final or S seconds passed); 0 when it answers now (no
 * ?wait, S = 0, the job final already, or the request resumed). */
int routes_wait(http_call *call, enum MHD_Result *reply);
enum MHD_Result routes_jobs_get(http_call *call);
/* DELETE removes a finished job (409 for a queued or running one); POST
 * .../cancel stops a queued or running one (409 for a finished one). */
enum MHD_Result routes_jobs_delete(http_call *call);
enum MHD_Result routes_jobs_cancel(http_call *call);
/* POST /v1/jobs/ID/pin, DELETE: exempt from retention, or no longer. */
enum MHD_Result routes_jobs_pin(http_call *call);
enum MHD_Result routes_jobs_unpin(http_call *call);
enum MHD_Result routes_jobs_residuals(http_call *call);
/* A physics job's output files: the list, or the one of call->name. */
enum MHD_Result routes_jobs_files(http_call *call);

#endif
