/*
 * http_reply.h: how every answer leaves the daemon. The dispatcher
 * (http_server.c) and every route handler answer through these helpers,
 * so the headers every answer carries (Cache-Control, nosniff), the
 * problem+json shape of errors (RFC 9457, problem.h), the status the
 * request's log line and metrics report, and the response recorder
 * (record.h) are each written once.
 *
 * The helpers take ownership of malloc'ed bodies. The dispatcher names
 * the request it is answering on the calling thread (http_reply_enter /
 * http_reply_leave: libmicrohttpd runs all calls of one connection on one
 * thread), which is how a handler's answer reaches the request's log line
 * without the handler knowing of it.
 */
#ifndef CLS_NET_HTTP_REPLY_H
#define CLS_NET_HTTP_REPLY_H

#include <microhttpd.h>
#include <stddef.h>

enum MHD_Result http_reply(struct MHD_Connection *c, unsigned status, const char *ctype, char *body,
                           size_t len);
/* Same, with one extra header (hname NULL: none). */
enum MHD_Result http_reply_hdr(struct MHD_Connection *c, unsigned status, const char *ctype,
                               char *body, size_t len, const char *hname, const char *hvalue);
enum MHD_Result http_reply_json(struct MHD_Connection *c, unsigned status, char *json);
enum MHD_Result http_reply_problem(struct MHD_Connection *c, unsigned status, const char *slug,
                                   const char *detail, long long line);
/* Same, with one extra header (Allow, Retry-After, WWW-Authenticate, Location). */
enum MHD_Result http_reply_problem_hdr(struct MHD_Connection *c, unsigned status, const char *slug,
                                       const char *detail, long long line, const char *hname,
                                       const char *hvalue);
/* 404 unknown-job for id. */
enum MHD_Result http_reply_unknown_job(struct MHD_Connection *c, const char *id);
enum MHD_Result http_queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r);
/* http_queue of a response made from body (len bytes), so the response
 * recorder (record.h) sees the body too. */
enum MHD_Result http_queue_body(struct MHD_Connection *c, unsigned status, struct MHD_Response *r,
                                const char *body, size_t len);

/* Checks that every query parameter is one of the NULL-terminated names;
 * otherwise queues 400 naming the stranger and returns 0. */
int http_only_params(struct MHD_Connection *c, const char *const *names, enum MHD_Result *replied);

/* Content negotiation (RFC 9110, 12.5): header is an Accept or
 * Accept-Encoding value, comma-separated names each with optional
 * parameters, of which q= (default 1) weighs it; names[i] (n of them,
 * matched without regard to case; a name with '*' is a wildcard) stands
 * for values[i] (0..15). A value's weight is the highest of its exactly
 * named entries', else of its wildcards' (so "gzip;q=0, *" refuses
 * gzip). Returns the value of highest weight above 0, the one
 * named earliest in the header among equals; -1 when none. */
int http_negotiate(const char *header, const char *const *names, const int *values, size_t n);

/* The dispatcher's side: the request answered on this thread from now
 * on (the strings must outlive the answer)... */
void http_reply_enter(const char *method, const char *route, const char *path);
/* ...and its end: the status of the answer queued meanwhile (0: none). */
unsigned http_reply_leave(void);
/* The request being answered on the calling thread (for the recorder);
 * "?", "other", "?" outside one. */
const char *http_current_method(void);
const char *http_current_route(void);
const char *http_current_path(void);

#endif
