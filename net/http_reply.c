/*
 * http_reply.c: the answers (see http_reply.h). Every answer is queued by
 * http_queue, the one place that adds the headers all answers carry,
 * remembers the status for the request's log line and metrics, and shows
 * the answer to the response recorder; the helpers above it only build
 * bodies.
 *
 * The request being answered is thread-local state set by the dispatcher
 * rather than an argument, so that a handler's every helper call (and the
 * streams it hands to libmicrohttpd, routes_solution.c) can be recorded
 * under its route without threading the request through all of them.
 */
#include "http_reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/numfmt.h"
#include "metrics.h"
#include "problem.h"
#include "record.h"

/* The status of the answer queued on this thread, for the dispatcher. */
static _Thread_local unsigned http_last_status;
/* The request being answered on this thread and the body of the answer
 * being queued, for the response recorder (record.h). */
static _Thread_local const char *http_cur_method, *http_cur_route, *http_cur_path;
static _Thread_local const char *http_cur_body;
static _Thread_local size_t http_cur_len;

void http_reply_enter(const char *method, const char *route, const char *path)
{
    http_cur_method = method;
    http_cur_route = route;
    http_cur_path = path;
    http_last_status = 0;
}

unsigned http_reply_leave(void)
{
    http_cur_method = http_cur_route = http_cur_path = NULL;
    return http_last_status;
}

const char *http_current_method(void)
{
    return http_cur_method ? http_cur_method : "?";
}
const char *http_current_route(void)
{
    return http_cur_route ? http_cur_route : "other";
}
const char *http_current_path(void)
{
    return http_cur_path ? http_cur_path : "?";
}

enum MHD_Result http_queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
    if (!r)
        return MHD_NO;
    if (!MHD_get_response_header(r, "Cache-Control")) /* finished solutions say immutable */
        MHD_add_response_header(r, "Cache-Control", "no-store");
    http_last_status = status;
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (record_enabled())
        record_response(http_current_method(), http_current_route(), http_current_path(), status, r,
                        http_cur_body, http_cur_len);
    enum MHD_Result q = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    metrics_http_response(status);
    return q;
}

enum MHD_Result http_queue_body(struct MHD_Connection *c, unsigned status, struct MHD_Response *r,
                                const char *body, size_t len)
{
    http_cur_body = body;
    http_cur_len = len;
    enum MHD_Result q = http_queue(c, status, r);
    http_cur_body = NULL;
    http_cur_len = 0;
    return q;
}

enum MHD_Result http_reply_hdr(struct MHD_Connection *c, unsigned status, const char *ctype,
                               char *body, size_t len, const char *hname, const char *hvalue)
{
    struct MHD_Response *r =
        body ? MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE)
             : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    if (ctype)
        MHD_add_response_header(r, "Content-Type", ctype);
    if (hname)
        MHD_add_response_header(r, hname, hvalue);
    return http_queue_body(c, status, r, body, len);
}

enum MHD_Result http_reply(struct MHD_Connection *c, unsigned status, const char *ctype, char *body,
                           size_t len)
{
    return http_reply_hdr(c, status, ctype, body, len, NULL, NULL);
}

enum MHD_Result http_reply_json(struct MHD_Connection *c, unsigned status, char *json)
{
    if (!json)
        return http_reply_problem(c, 500, "internal", "out of memory building the response", 0);
    /* reals as the user wrote them: tol=1e-12, not 9.9999999999999998e-13 */
    cls_json_shorten(json);
    return http_reply(c, status, "application/json", json, strlen(json));
}

enum MHD_Result http_reply_problem_hdr(struct MHD_Connection *c, unsigned status, const char *slug,
                                       const char *detail, long long line, const char *hname,
                                       const char *hvalue)
{
    char *body = problem_json(status, slug, detail, line);
    if (!body)
        return MHD_NO;
    return http_reply_hdr(c, status, "application/problem+json", body, strlen(body), hname, hvalue);
}

enum MHD_Result http_reply_problem(struct MHD_Connection *c, unsigned status, const char *slug,
                                   const char *detail, long long line)
{
    return http_reply_problem_hdr(c, status, slug, detail, line, NULL, NULL);
}

enum MHD_Result http_reply_unknown_job(struct MHD_Connection *c, const char *id)
{
    char d[80];
    snprintf(d, sizeof d, "no job %s", id);
    return http_reply_problem(c, 404, "unknown-job", d, 0);
}

/* --- query parameters --- */

typedef struct http_only_ctx {
    const char *const *names;
    const char *bad;
} http_only_ctx;

static enum MHD_Result http_only_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    http_only_ctx *o = cls;
    for (int i = 0; o->names[i]; i++)
        if (!strcmp(key, o->names[i]))
            return MHD_YES;
    o->bad = key;
    return MHD_NO;
}

int http_only_params(struct MHD_Connection *c, const char *const *names, enum MHD_Result *replied)
{
    http_only_ctx o = {.names = names};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, http_only_iter, &o);
    if (!o.bad)
        return 1;
    char d[200], list[120] = "";
    for (int i = 0; names[i]; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, names[i], sizeof list - strlen(list) - 1);
    }
    snprintf(d, sizeof d, "unknown parameter '%.40s' (known: %s)", o.bad, names[0] ? list : "none");
    *replied = http_reply_problem(c, 400, "bad-parameter", d, 0);
    return 0;
}

/* --- content negotiation --- */

#define NEG_ENTRIES 32 /* entries of a header looked at; more are ignored */
#define NEG_VALUES 16

int http_negotiate(const char *header, const char *const *names, const int *values, size_t n)
{
    struct neg_entry {
        const char *name;
        size_t len;
        double q;
    } e[NEG_ENTRIES];
    int ne = 0;
    for (const char *p = header; p && *p && ne < NEG_ENTRIES;) {
        size_t len = strcspn(p, ",");
        const char *end = p + len;
        const char *name = p + strspn(p, " \t");
        size_t nl = strcspn(name, ",; \t");
        if (name + nl > end)
            nl = (size_t)(end - name);
        double q = 1;
        for (const char *a = name + nl; a < end; a++)
            if (*a == ';') {
                const char *b = a + 1 + strspn(a + 1, " \t");
                if ((b[0] == 'q' || b[0] == 'Q') && b[1] == '=')
                    q = strtod(b + 2, NULL);
            }
        if (nl)
            e[ne++] = (struct neg_entry){name, nl, q};
        p = *end ? end + 1 : end;
    }
    double wq[NEG_VALUES];
    int pos[NEG_VALUES], exact[NEG_VALUES];
    for (int v = 0; v < NEG_VALUES; v++)
        wq[v] = -1, pos[v] = NEG_ENTRIES, exact[v] = 0;
    for (size_t i = 0; i < n; i++) {
        int v = values[i], wild = strchr(names[i], '*') != NULL;
        if (v < 0 || v >= NEG_VALUES)
            continue;
        for (int j = 0; j < ne; j++) {
            if (e[j].len != strlen(names[i]) || strncasecmp(e[j].name, names[i], e[j].len))
                continue;
            if (!wild && (!exact[v] || e[j].q > wq[v] || (e[j].q == wq[v] && j < pos[v]))) {
                exact[v] = 1; /* named exactly: its wildcards no longer count */
                wq[v] = e[j].q;
                pos[v] = j;
            } else if (wild && !exact[v] && (e[j].q > wq[v] || (e[j].q == wq[v] && j < pos[v]))) {
                wq[v] = e[j].q;
                pos[v] = j;
            }
            break;
        }
    }
    int best = -1;
    for (int v = 0; v < NEG_VALUES; v++)
        if (wq[v] > 0 &&
            (best < 0 || wq[v] > wq[best] || (wq[v] == wq[best] && pos[v] < pos[best])))
            best = v;
    return best;
}
