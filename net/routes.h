/*
 * routes.h: the daemon's one route table, after Redis's commands.def: one
 * row per method and path, and everything the dispatcher (http_server.c)
 * decides about a request derived from the rows, so a new route is one
 * new row and its handler:
 *
 *   dispatch         the row whose pattern matches the path and whose
 *                    method is the request's ("GET" answers HEAD too);
 *   404              no pattern matches (unknown-job when the path has a
 *                    job's place but no job id in it);
 *   405 and Allow    the pattern matches but no row has the method: Allow
 *                    lists the methods of the pattern's rows, in order;
 *   401              the row's auth is ROUTES_TOKEN and a token is set;
 *   400              a query parameter that is not in the row's params;
 *   503 busy         refused when every connection is busy, unless the
 *                    row may use the health reserve (ROUTES_RESERVE);
 *   log and metrics  the row's pattern is the route's name: a template,
 *                    so the label's values stay bounded.
 *
 * A pattern is literal text with placeholders, each taking one path
 * segment: {id} a job id (ids_valid), {name} any non-empty segment,
 * {dashboard} a file the dashboard has (dashboard.h; the empty segment is
 * its page). The handlers live in routes_jobs.c, routes_solution.c,
 * routes_misc.c and dashboard.c; none of them knows of this table.
 */
#ifndef CLS_NET_ROUTES_H
#define CLS_NET_ROUTES_H

#include "http_call.h"

typedef enum {
    ROUTES_TOKEN, /* the bearer token, when one is configured */
    ROUTES_OPEN   /* none: probes and the static page (browsers cannot send one) */
} routes_auth;

enum {
    ROUTES_RESERVE = 1, /* may use the connections held back for health probes */
    ROUTES_BODY = 2,    /* streams a request body: decided at the headers, before any byte */
    ROUTES_SLASH = 4    /* a trailing slash names the same resource (a collection) */
};

typedef struct routes_row {
    const char *method;  /* "GET" (and HEAD), "POST" or "DELETE" */
    const char *pattern; /* also the route's name in metrics and logs */
    http_handler handler;
    routes_auth auth;
    /* the query parameters the route takes, NULL-terminated; NULL: the
     * handler reads them itself (job parameters, or none looked at) */
    const char *const *params;
    unsigned flags;
} routes_row;

/* A request's path (and method) against the table. */
typedef struct routes_match {
    const routes_row *route; /* the pattern's first row; NULL: no pattern matched */
    const routes_row *row;   /* the row for the method; NULL: not allowed (405) */
    int bad_id;              /* no pattern matched, the path had a job's place without an id */
    char id[IDS_LEN + 1];    /* {id} ("" where none) */
    const char *name;        /* {name} or {dashboard}, inside the path; NULL where none */
} routes_match;

void routes_find(const char *path, const char *method, routes_match *m);
/* The Allow header's value for the route's pattern ("GET, HEAD, POST"). */
void routes_allow(const routes_row *route, char *out, size_t cap);

#endif
