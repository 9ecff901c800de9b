/*
 * http_server.h: the daemon's HTTP front end on libmicrohttpd.
 *
 * libmicrohttpd runs its own threads (a small pool polling with epoll or
 * poll); they never call MPI, they only read and change the job store.
 * Every request passes, in this order: the connection guard (http_guard.h:
 * header deadline, per-address limit, capacity with a reserve for the
 * health routes), the protocol checks that libmicrohttpd leaves to us (at
 * most HTTP_MAX_PARAMS query parameters and HTTP_MAX_QUERY bytes of query,
 * and HTTP_MAX_URI bytes of request target: 414; HTTP_MAX_HEADER bytes of
 * header fields: 431; a Transfer-Encoding other than chunked: 501; what
 * is longer than libmicrohttpd's buffer, HTTP_CONN_MEMORY / 2, it answers
 * itself with an HTML page before any of this runs), bearer-token check
 * (when a token is configured; /healthz, /readyz and the static dashboard
 * files are exempt), route match (404 for unknown paths and unknown jobs,
 * 405 with Allow for a wrong method), query-parameter validation (400
 * naming the parameter), then its route. Errors are RFC 9457
 * application/problem+json. Limits: upload size (413, from Content-Length
 * before any byte is read and again while counting the bytes), queued jobs
 * (503 with Retry-After), connections (the guard), idle time per
 * connection (--timeout: libmicrohttpd's, which is also the deadline for
 * each chunk of a body). A request refused from its headers is answered
 * without reading its body, and the connection closed.
 *
 * What is routed where, and under which rules, is the route table's
 * (routes.h); how an answer is written, http_reply.h's; the configuration
 * the routes share, http_call.h's.
 */
#ifndef CLS_NET_HTTP_SERVER_H
#define CLS_NET_HTTP_SERVER_H

#include "../common/error.h"
#include "http_call.h"

typedef struct http_server http_server;

int http_server_start(http_server **out, const http_server_config *cfg, cls_error *err);
unsigned http_server_port(const http_server *s);
/* The ranks' devices are known: /v1/devices answers them, /readyz may say
 * ready (cluster is borrowed until http_server_stop). */
void http_server_set_cluster(http_server *s, json_t *cluster);

#define HTTP_MAX_PARAMS 64    /* query parameters per request */
#define HTTP_MAX_QUERY 8192   /* bytes of query string */
#define HTTP_MAX_URI 16384    /* bytes of request target (path and query): 414 */
#define HTTP_MAX_HEADER 32768 /* bytes of header fields, names and values: 431 */
void http_server_stop(http_server *s);

#endif
