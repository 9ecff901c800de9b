/*
 * http_server.h: the daemon's HTTP front end on libmicrohttpd.
 *
 * libmicrohttpd runs its own threads (a small pool polling with epoll or
 * poll); they never call MPI, they only read and change the job store.
 * Every request passes, in this order: the connection guard (http_guard.h:
 * header deadline, per-address limit, capacity with a reserve for the
 * health routes), the protocol checks that libmicrohttpd leaves to us (at
 * most HTTP_MAX_PARAMS query parameters and HTTP_MAX_QUERY bytes of query:
 * 414; a Transfer-Encoding other than chunked: 501), bearer-token check
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
 * The response helpers are shared with the route modules.
 */
#ifndef CLS_NET_HTTP_SERVER_H
#define CLS_NET_HTTP_SERVER_H

#include <jansson.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdint.h>

#include "../common/error.h"
#include "job_store.h"

typedef struct http_server_config {
    const char *listen;       /* "ADDR:PORT", "[v6]:PORT" or ":PORT" (127.0.0.1) */
    uint64_t max_upload;      /* bytes */
    unsigned max_connections; /* concurrent connections (http_guard.h) */
    unsigned health_reserve;  /* more connections for /healthz and /readyz */
    unsigned per_address;     /* connections per client address */
    double header_timeout_s;  /* a request's headers must come within this */
    unsigned timeout_s;       /* idle seconds before a connection is closed */
    unsigned threads;         /* polling threads */
    const char *token;        /* NULL: no authentication */
    job_store *store;
    json_t *cluster;                 /* /v1/devices (borrowed); NULL until the devices are up
                                      * (http_server_set_cluster; read with http_cluster) */
    volatile sig_atomic_t *draining; /* non-zero: answer 503 to new jobs */
} http_server_config;

typedef struct http_server http_server;

int http_server_start(http_server **out, const http_server_config *cfg, cls_error *err);
unsigned http_server_port(const http_server *s);
/* The ranks' devices are known: /v1/devices answers them, /readyz may say
 * ready (cluster is borrowed until http_server_stop). */
void http_server_set_cluster(http_server *s, json_t *cluster);
/* The cluster as the routes see it (NULL while the devices start). */
json_t *http_cluster(const http_server_config *cfg);

#define HTTP_MAX_PARAMS 64  /* query parameters per request */
#define HTTP_MAX_QUERY 8192 /* bytes of query string */
void http_server_stop(http_server *s);

/* --- response helpers (take ownership of malloc'ed bodies) --- */
enum MHD_Result http_reply(struct MHD_Connection *c, unsigned status, const char *ctype,
                           char *body, size_t len);
enum MHD_Result http_reply_json(struct MHD_Connection *c, unsigned status, char *json);
enum MHD_Result http_reply_problem(struct MHD_Connection *c, unsigned status, const char *slug,
                                   const char *detail, long long line);
/* Same, with one extra header (Allow, Retry-After, WWW-Authenticate, Location). */
enum MHD_Result http_reply_problem_hdr(struct MHD_Connection *c, unsigned status,
                                       const char *slug, const char *detail, long long line,
                                       const char *hname, const char *hvalue);
enum MHD_Result http_queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r);
/* http_queue of a response made from body (len bytes), so the response
 * recorder (record.h) sees the body too. */
enum MHD_Result http_queue_body(struct MHD_Connection *c, unsigned status, struct MHD_Response *r,
                                const char *body, size_t len);
/* The request being answered on the calling thread (for the recorder). */
const char *http_current_method(void);
const char *http_current_route(void);
const char *http_current_path(void);

#endif
