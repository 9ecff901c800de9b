/*
 * routes.c: the route table and the matching of a path against it (see
 * routes.h). The table is data, read from top to bottom: the first
 * pattern that matches a path is its route, and the rows of one pattern
 * stand together in the order their methods are listed in Allow. Matching
 * walks the table rather than a tree: a dozen rows, and a request costs
 * far more elsewhere.
 */
#include "routes.h"

#include <stdio.h>
#include <string.h>

#include "dashboard.h"
#include "routes_jobs.h"
#include "routes_misc.h"
#include "routes_solution.h"

/* The rows' query parameters (routes_q_none: the route takes none). */
static const char *const routes_q_none[] = {NULL};
static const char *const routes_q_list[] = {"limit", "after", "page", "status", NULL};
static const char *const routes_q_sol[] = {"format", "wait", NULL}; /* the solution */
static const char *const routes_q_since[] = {"since", NULL};
static const char *const routes_q_wait[] = {"wait", NULL};

/* One row per method and path, kept in columns (clang-format would fold them). */
/* clang-format off */
static const routes_row routes_table[] = {
    /* method  pattern                       handler                auth          params           flags */
    {"GET",    "/{dashboard}",               dashboard_serve,       ROUTES_OPEN,  NULL,            0},
    {"GET",    "/healthz",                   routes_healthz,        ROUTES_OPEN,  NULL,            ROUTES_RESERVE},
    {"GET",    "/readyz",                    routes_readyz,         ROUTES_OPEN,  routes_q_none,   ROUTES_RESERVE},
    {"GET",    "/metrics",                   routes_metrics,        ROUTES_TOKEN, NULL,            0},
    {"GET",    "/v1/devices",                routes_devices,        ROUTES_TOKEN, routes_q_none,   0},
    {"GET",    "/v1/jobs",                   routes_jobs_list,      ROUTES_TOKEN, routes_q_list,   ROUTES_SLASH},
    {"POST",   "/v1/jobs",                   routes_jobs_post,      ROUTES_TOKEN, NULL,            ROUTES_SLASH | ROUTES_BODY},
    {"POST",   "/v1/batches",                routes_jobs_post_batch, ROUTES_TOKEN, NULL,           ROUTES_SLASH | ROUTES_BODY},
    {"GET",    "/v1/jobs/{id}",              routes_jobs_get,       ROUTES_TOKEN, routes_q_wait,   ROUTES_SLASH},
    {"DELETE", "/v1/jobs/{id}",              routes_jobs_delete,    ROUTES_TOKEN, routes_q_none,   ROUTES_SLASH},
    {"GET",    "/v1/jobs/{id}/solution",     routes_jobs_solution,  ROUTES_TOKEN, routes_q_sol,    0},
    {"GET",    "/v1/jobs/{id}/residuals",    routes_jobs_residuals, ROUTES_TOKEN, routes_q_since,  0},
    {"POST",   "/v1/jobs/{id}/cancel",       routes_jobs_cancel,    ROUTES_TOKEN, routes_q_none,   0},
    {"POST",   "/v1/jobs/{id}/pin",          routes_jobs_pin,       ROUTES_TOKEN, routes_q_none,   0},
    {"DELETE", "/v1/jobs/{id}/pin",          routes_jobs_unpin,     ROUTES_TOKEN, routes_q_none,   0},
    {"GET",    "/v1/jobs/{id}/files",        routes_jobs_files,     ROUTES_TOKEN, routes_q_none,   ROUTES_SLASH},
    {"GET",    "/v1/jobs/{id}/files/{name}", routes_jobs_files,     ROUTES_TOKEN, routes_q_none,   0},
};
/* clang-format on */
#define ROUTES_N (sizeof routes_table / sizeof routes_table[0])

/* 1 when path fits row's pattern; fills the placeholders' values. A path
 * that reaches an {id} with anything else sets bad_id, so that
 * /v1/jobs/<typo>/... is answered unknown-job, not not-found. */
static int routes_fits(const routes_row *row, const char *path, routes_match *m)
{
    const char *p = row->pattern, *u = path;
    while (*p) {
        if (*p != '{') {
            if (*p++ != *u++)
                return 0;
            continue;
        }
        size_t seg = strcspn(u, "/");
        if (!strncmp(p, "{id}", 4)) {
            if (seg != IDS_LEN) {
                m->bad_id = 1;
                return 0;
            }
            memcpy(m->id, u, IDS_LEN);
            m->id[IDS_LEN] = '\0';
            if (!ids_valid(m->id)) {
                m->id[0] = '\0';
                m->bad_id = 1;
                return 0;
            }
        } else if (!strncmp(p, "{dashboard}", 11)) {
            if (!dashboard_has(u))
                return 0;
            m->name = u;
            seg = strlen(u);
        } else if (seg == 0) { /* {name} */
            return 0;
        } else {
            m->name = u;
        }
        u += seg;
        p = strchr(p, '}') + 1;
    }
    return !*u || ((row->flags & ROUTES_SLASH) && !strcmp(u, "/"));
}

/* A row's method answers the request's: GET also answers HEAD. */
static int routes_method_fits(const routes_row *row, const char *method)
{
    return !strcmp(row->method, method) || (!strcmp(row->method, "GET") && !strcmp(method, "HEAD"));
}

void routes_find(const char *path, const char *method, routes_match *m)
{
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < ROUTES_N && !m->route; i++) {
        routes_match t = {0};
        if (!routes_fits(&routes_table[i], path, &t)) {
            m->bad_id |= t.bad_id;
            continue;
        }
        *m = t;
        m->route = &routes_table[i];
        for (size_t j = i; j < ROUTES_N && !strcmp(routes_table[j].pattern, m->route->pattern); j++)
            if (routes_method_fits(&routes_table[j], method)) {
                m->row = &routes_table[j];
                break;
            }
    }
    if (m->route)
        m->bad_id = 0;
}

void routes_allow(const routes_row *route, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (const routes_row *r = route;
         r < routes_table + ROUTES_N && !strcmp(r->pattern, route->pattern); r++) {
        int n = snprintf(out + len, cap - len, "%s%s%s", len ? ", " : "", r->method,
                         strcmp(r->method, "GET") ? "" : ", HEAD");
        if (n < 0 || (size_t)n >= cap - len)
            return;
        len += (size_t)n;
    }
}
