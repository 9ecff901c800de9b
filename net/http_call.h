/*
 * http_call.h: what a route handler is given. The server's configuration
 * (filled by clsolved, read by every route) and the one request being
 * answered (http_call), so that every handler has one signature
 * (http_handler) and the route table (routes.h) can hold them all, as
 * Redis's command table holds `void cmd(client *c)`.
 *
 * This header sits below both the dispatcher (http_server.c) and the
 * handlers (routes_*.c, dashboard.c): a handler needs nothing of the
 * dispatcher but this, so it can never call back into it.
 */
#ifndef CLS_NET_HTTP_CALL_H
#define CLS_NET_HTTP_CALL_H

#include <jansson.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdint.h>

#include "ids.h"
#include "job_store.h"

typedef struct http_server_config {
    const char *listen;       /* "ADDR:PORT", "[v6]:PORT" or ":PORT" (127.0.0.1) */
    uint64_t max_upload;      /* bytes */
    unsigned max_connections; /* concurrent connections (http_guard.h) */
    unsigned health_reserve;  /* more connections for /healthz and /readyz */
    unsigned per_address;     /* connections per client address */
    double header_timeout_s;  /* a request's headers must come within this */
    double min_body_rate;     /* bytes/s a request body must keep up (0: none) */
    unsigned timeout_s;       /* idle seconds before a connection is closed */
    unsigned threads;         /* polling threads */
    const char *token;        /* NULL: no authentication */
    job_store *store;
    json_t *cluster;                 /* /v1/devices (borrowed); NULL until the devices are up
                                      * (http_server_set_cluster; read with http_cluster) */
    volatile sig_atomic_t *draining; /* non-zero: answer 503 to new jobs */
} http_server_config;

/* The cluster as the routes see it (NULL while the devices start): set
 * once by another thread after the server started, hence the atomic. */
static inline json_t *http_cluster(const http_server_config *cfg)
{
    return __atomic_load_n(&cfg->cluster, __ATOMIC_ACQUIRE);
}

struct routes_post; /* routes_jobs.h: an upload being received */

/* One request, as the route table matched it. */
typedef struct http_call {
    struct MHD_Connection *conn;
    const http_server_config *cfg;
    char id[IDS_LEN + 1]; /* the path's {id}: a valid job id ("" where none) */
    const char *name;     /* the path's {name} or {dashboard} (NULL where none) */
    /* set by a handler of a row that streams its body (ROUTES_BODY): the
     * dispatcher feeds it the body (routes_jobs.h) */
    struct routes_post *upload;
    /* a long poll (job_wait.h): a handler that is to answer later sets
     * wait_s (seconds); the dispatcher parks the request and calls the
     * handler again, with resumed set, when the job ends or wait_s passes:
     * it answers then */
    double wait_s;
    int resumed;
} http_call;

/* Answers the call (or, for a streamed body, sets call->upload). */
typedef enum MHD_Result (*http_handler)(http_call *call);

#endif
