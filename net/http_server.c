/*
 * http_server.c: libmicrohttpd set-up and the access handler: the
 * protocol checks, the dispatch of each request through its row of the
 * route table (routes.h), the upload's body fed to routes_jobs.c, and the
 * request's log line and metrics (see http_server.h). The dispatcher
 * knows no route by name: what it decides comes from the table.
 *
 * libmicrohttpd calls the access handler several times per request: once
 * with the headers, then once per chunk of body, then once more with no
 * data. A POST is decided at the first call (auth, route, limits,
 * parameters: a refusal is sent before any byte of the upload is read) and
 * answered at the last. Every other request is answered at its second call:
 * libmicrohttpd 0.9.75 treats an answer queued at the first call as an
 * early reply and closes the connection after it ("Connection: close"),
 * which would cost a poller a TCP connection per status request; answered
 * one call later, the connection is kept alive. Per-request state lives in
 * an http_req hung on con_cls and is freed by the completion callback,
 * which also discards an upload whose client vanished.
 */
#include "http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "../common/timer.h"
#include "http_guard.h"
#include "http_reply.h"
#include "ids.h"
#include "job_wait.h"
#include "log.h"
#include "metrics.h"
#include "problem.h"
#include "routes.h"
#include "routes_jobs.h"

#define HTTP_LINGER_BYTES ((uint64_t)16 << 20) /* read after an early answer */
#define HTTP_LINGER_S 5.0

struct http_server {
    http_server_config cfg;
    struct MHD_Daemon *mhd;
    http_guard *guard;
    job_wait *waits; /* parked long polls */
    int waits_open;  /* parked and not yet completed (answered or dropped) */
    unsigned port;
};

typedef struct http_req {
    routes_post *post; /* non-NULL while a job upload is being received */
    int started;       /* the first call has been made */
    int answered;
    int deferred;      /* not a POST: answered at the next call (see the top) */
    int parked;        /* a long poll, suspended (job_wait.h): answered when resumed */
    int waited;        /* it was: its metrics go under the route's "?wait" name */
    int query_refused; /* the URI log callback cut the query: 414 */
    int uri_control;   /* the raw URI holds a control byte, raw or %-escaped: 400 */
    size_t nparams, query_len, uri_len;
    int early; /* answered on the socket while the body came: drop, then close */
    uint64_t linger_bytes;
    double linger_until;
    /* for the request's log line and metrics (log.h), written at completion */
    double t0;
    unsigned status;
    uint64_t bytes_in;
    char method[12], path[160], job[IDS_LEN + 1];
    const char *route;
} http_req;

void http_server_set_cluster(http_server *s, json_t *cluster)
{
    if (s)
        __atomic_store_n(&s->cfg.cluster, cluster, __ATOMIC_RELEASE);
}

/* Constant-time comparison: the time depends on the expected token's
 * length only, never on where the first difference is. */
/* libmicrohttpd's memory per connection: its read buffer is half of it,
 * and an upload arrives in pieces of that size, each a recv and a write to
 * the upload file. At 64 KiB a 147 MB upload took 0.44-0.53 s to receive
 * on the 2-core machine (4,500 pieces), at 1 MiB 0.32-0.35 s (docs/
 * benchmarks.md, "The receive"). The pool is mapped, not touched: a
 * connection that sends a few header bytes keeps a few pages resident. */
#define HTTP_CONN_MEMORY ((size_t)256 << 10)

static size_t http_conn_memory(void)
{
    const char *v = getenv("CLSOLVE_HTTP_CONN_MEMORY"); /* bytes: benchmarks compare */
    long n = v ? atol(v) : 0;
    return n >= 16384 ? (size_t)n : HTTP_CONN_MEMORY;
}

static int http_token_equal(const char *got, size_t glen, const char *want)
{
    size_t wlen = strlen(want);
    unsigned char d = (unsigned char)(glen != wlen);
    for (size_t i = 0; i < wlen; i++) {
        unsigned char g = i < glen ? (unsigned char)got[i] : 0;
        d |= (unsigned char)(g ^ (unsigned char)want[i]);
    }
    return d == 0;
}

static int http_authorized(struct MHD_Connection *c, const char *token)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return 0;
    h += 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    return http_token_equal(h, n, token);
}

/* A request's answer (or an upload's start), all from its row of the
 * route table (routes.h): the token, 404, 405 with Allow, the query's
 * names, then the row's handler; a handler that takes the body leaves
 * its upload in rq->post. */
static enum MHD_Result http_dispatch(http_server *s, struct MHD_Connection *c, const char *url,
                                     const char *method, http_req *rq)
{
    routes_match m;
    routes_find(url, method, &m);
    const routes_row *rule = m.row ? m.row : m.route;
    if (s->cfg.token && (!rule || rule->auth == ROUTES_TOKEN) && !http_authorized(c, s->cfg.token))
        return http_reply_problem_hdr(
            c, 401, "unauthorized",
            "a valid bearer token is required (Authorization: Bearer TOKEN)", 0, "WWW-Authenticate",
            "Bearer realm=\"clsolve\"");
    if (!m.route && m.bad_id)
        return http_reply_problem(c, 404, "unknown-job",
                                  "no such job: a job id is 32 hexadecimal digits", 0);
    if (!m.route)
        return http_reply_problem(c, 404, "not-found", "no such resource", 0);
    if (!m.row) {
        char allow[64], d[128];
        routes_allow(m.route, allow, sizeof allow);
        snprintf(d, sizeof d, "method %.16s is not allowed here (allowed: %s)", method, allow);
        return http_reply_problem_hdr(c, 405, "method-not-allowed", d, 0, "Allow", allow);
    }
    enum MHD_Result q = MHD_NO;
    if (m.row->params && !http_only_params(c, m.row->params, &q))
        return q;
    http_call call = {.conn = c, .cfg = &s->cfg, .name = m.name, .resumed = rq->parked};
    memcpy(call.id, m.id, sizeof call.id);
    q = m.row->handler(&call);
    rq->post = call.upload;
    rq->parked = 0;
    if (call.wait_s > 0 && !call.resumed) {
        /* suspended before it is parked: the watcher may resume it at once */
        MHD_suspend_connection(c);
        __atomic_add_fetch(&s->waits_open, 1, __ATOMIC_ACQ_REL);
        if (job_wait_add(s->waits, c, call.id, cls_now() + call.wait_s) != 0)
            MHD_resume_connection(c); /* stopping: answered when called again */
        rq->parked = rq->waited = 1;
        return MHD_YES;
    }
    return q;
}

/* Writes a problem answer straight to the socket while the request's body
 * is still coming (see the top), then shuts the sending side down. */
static void http_reply_raw(struct MHD_Connection *c, unsigned status, const char *slug,
                           const char *detail, long long line)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    char *body = problem_json(status, slug, detail, line);
    if (!ci || !body) {
        free(body);
        return;
    }
    const char *reason = MHD_get_reason_phrase_for(status);
    size_t cap = strlen(body) + 512;
    char *msg = malloc(cap);
    int n = msg ? snprintf(msg, cap,
                           "HTTP/1.1 %u %s\r\nContent-Type: application/problem+json\r\n"
                           "Content-Length: %zu\r\nConnection: close\r\n"
                           "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\r\n%s",
                           status, reason && *reason ? reason : "Error", strlen(body), body)
                : -1;
    free(body);
    if (n < 0 || (size_t)n >= cap) {
        free(msg);
        return;
    }
    int fd = ci->connect_fd;
    size_t off = 0;
    double until = cls_now() + 0.5;
    while (off < (size_t)n && cls_now() < until) {
        ssize_t w = send(fd, msg + off, (size_t)n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            off += (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            poll(&pf, 1, 50);
        } else {
            break;
        }
    }
    free(msg);
    shutdown(fd, SHUT_WR);
    metrics_http_response(status);
}

/* 1 when the raw request target holds a control byte (0x00-0x1F, 0x7F),
 * as it is or %-escaped: libmicrohttpd decodes "%00" into a NUL that cut
 * "/v1/jobs/ID%00/solution" to the job's own route and "tol=1e-3%00junk"
 * to a valid tolerance (issue 27, item 6). No route or parameter takes
 * one, so the request is refused whole. */
static int http_uri_has_control(const char *uri)
{
    for (const unsigned char *p = (const unsigned char *)uri; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return 1;
        if (*p == '%' && p[1] && p[2]) {
            int hi = p[1] >= '0' && p[1] <= '9'                     ? p[1] - '0'
                     : (p[1] | 0x20) >= 'a' && (p[1] | 0x20) <= 'f' ? (p[1] | 0x20) - 'a' + 10
                                                                    : -1;
            int lo = p[2] >= '0' && p[2] <= '9'                     ? p[2] - '0'
                     : (p[2] | 0x20) >= 'a' && (p[2] | 0x20) <= 'f' ? (p[2] | 0x20) - 'a' + 10
                                                                    : -1;
            if (hi >= 0 && lo >= 0 && (hi * 16 + lo < 0x20 || hi * 16 + lo == 0x7f))
                return 1;
        }
    }
    return 0;
}

/* What the header scan of http_framing finds. */
typedef struct http_framing_scan {
    int content_length, transfer_encoding, host;
    const char *cl_first;
    int cl_differ;
    const char *bad_name;
} http_framing_scan;

static enum MHD_Result http_framing_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                           const char *value)
{
    (void)kind;
    http_framing_scan *f = cls;
    /* a field name is a token (RFC 9110 section 5.6.2): "Transfer-Encoding :"
     * with its space is not one, and a proxy may read it differently */
    static const char tchar[] = "!#$%&'*+-.^_`|~";
    if (!key || !*key) {
        f->bad_name = "";
    } else {
        for (const char *k = key; *k; k++)
            if (!((*k >= '0' && *k <= '9') || (*k >= 'a' && *k <= 'z') ||
                  (*k >= 'A' && *k <= 'Z') || strchr(tchar, *k))) {
                f->bad_name = key;
                break;
            }
    }
    if (key && !strcasecmp(key, "Content-Length")) {
        if (f->content_length++ == 0)
            f->cl_first = value;
        else if (!value || !f->cl_first || strcmp(value, f->cl_first) != 0)
            f->cl_differ = 1;
    } else if (key && !strcasecmp(key, "Transfer-Encoding")) {
        f->transfer_encoding++;
    } else if (key && !strcasecmp(key, "Host")) {
        f->host++;
    }
    return MHD_YES;
}

/* RFC 9112's framing rules where a proxy and this daemon could read one
 * request differently (request smuggling): a repeated Content-Length,
 * Content-Length with Transfer-Encoding, a repeated Transfer-Encoding, a
 * field name that is not a token, an HTTP/1.1 request without exactly one
 * Host. Answered 400 with Connection: close (section 6.3: the connection
 * cannot be trusted for a next request), before any body is read. Returns
 * 1 with *q set when it answered. */
static int http_framing(struct MHD_Connection *c, const char *version, http_req *rq,
                        enum MHD_Result *q)
{
    http_framing_scan f = {0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, http_framing_header, &f);
    char d[200];
    d[0] = '\0';
    if (rq->uri_control)
        snprintf(d, sizeof d,
                 "the request target holds a control character (raw or %%-escaped, e.g. %%00)");
    else if (f.bad_name)
        snprintf(d, sizeof d, "header name '%.40s' is not a token (RFC 9110 section 5.6.2)",
                 f.bad_name);
    else if (f.content_length > 1)
        snprintf(d, sizeof d, "Content-Length given %d times%s (RFC 9112 section 6.3)",
                 f.content_length, f.cl_differ ? " with different values" : "");
    else if (f.content_length && f.transfer_encoding)
        snprintf(d, sizeof d,
                 "Content-Length and Transfer-Encoding together (RFC 9112 section 6.3)");
    else if (f.transfer_encoding > 1)
        snprintf(d, sizeof d, "Transfer-Encoding given %d times (RFC 9112 section 6.3)",
                 f.transfer_encoding);
    else if (f.host > 1 || (f.host == 0 && version && !strcmp(version, "HTTP/1.1")))
        snprintf(d, sizeof d,
                 "an HTTP/1.1 request needs exactly one Host header, not %d (RFC "
                 "9112 section 3.2)",
                 f.host);
    if (!d[0])
        return 0;
    problem_ascii(d);
    *q = http_reply_problem_hdr(c, 400, "bad-request", d, 0, "Connection", "close");
    return 1;
}

/* Runs before libmicrohttpd parses the query (see the top): counts the
 * parameters and, when there are too many or the query is too long, ends
 * the query string at its '?' so that nothing of it is parsed. */
static void *http_uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
    http_req *rq = calloc(1, sizeof *rq);
    if (!rq || !uri)
        return rq;
    rq->uri_control = http_uri_has_control(uri);
    rq->uri_len = strlen(uri);
    char *q = strchr(uri, '?');
    if (!q)
        return rq;
    rq->nparams = 1;
    for (const char *p = q + 1; *p; p++)
        rq->nparams += *p == '&';
    rq->query_len = strlen(q + 1);
    if (rq->nparams > HTTP_MAX_PARAMS || rq->query_len > HTTP_MAX_QUERY) {
        rq->query_refused = 1;
        /* the buffer is libmicrohttpd's own writable copy of the request
         * line; it looks for the arguments after the '?' next */
        q[1] = '\0';
    }
    return rq;
}

static enum MHD_Result http_header_add(void *cls, enum MHD_ValueKind kind, const char *key,
                                       const char *value)
{
    (void)kind;
    *(size_t *)cls += strlen(key) + (value ? strlen(value) : 0) + 4; /* ": " and CRLF */
    return MHD_YES;
}

/* The bytes of the request's header fields as sent (names, values, ": "
 * and CRLF each): libmicrohttpd keeps every field in its connection buffer
 * (HTTP_CONN_MEMORY / 2), so a field of 70 KB reaches the daemon, which
 * holds the header to HTTP_MAX_HEADER as nginx and Apache hold theirs. */
static size_t http_header_bytes(struct MHD_Connection *c)
{
    size_t n = 0;
    MHD_get_connection_values(c, MHD_HEADER_KIND, http_header_add, &n);
    return n;
}

/* The first call's protocol checks: answered at once (the body, if any, is
 * never read). Returns 1 with *q set when it answered. */
static int http_protocol_checks(http_server *s, struct MHD_Connection *c, http_req *rq,
                                const routes_row *route, const char *version, enum MHD_Result *q)
{
    if (http_framing(c, version, rq, q))
        return 1;
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    if (te && strcasecmp(te, "chunked") != 0) {
        char d[256];
        snprintf(d, sizeof d,
                 "Transfer-Encoding '%.40s' is not supported: send the body as it is, or "
                 "chunked (compress with Content-Encoding: gzip or a .gz file)",
                 te);
        *q = http_reply_problem(c, 501, "not-implemented", d, 0);
        return 1;
    }
    if (rq->uri_len > HTTP_MAX_URI && !rq->query_refused) {
        char d[160];
        snprintf(d, sizeof d, "the request target has %zu bytes; at most %d are accepted",
                 rq->uri_len, HTTP_MAX_URI);
        *q = http_reply_problem(c, 414, "uri-too-long", d, 0);
        return 1;
    }
    size_t header_bytes = http_header_bytes(c);
    if (header_bytes > HTTP_MAX_HEADER) {
        char d[160];
        snprintf(d, sizeof d, "the header fields have %zu bytes; at most %d are accepted",
                 header_bytes, HTTP_MAX_HEADER);
        *q = http_reply_problem(c, 431, "header-too-large", d, 0);
        return 1;
    }
    if (rq->query_refused) {
        char d[256];
        snprintf(d, sizeof d,
                 "the query has %zu parameters and %zu bytes; at most %d parameters and %d bytes "
                 "are accepted",
                 rq->nparams, rq->query_len, HTTP_MAX_PARAMS, HTTP_MAX_QUERY);
        *q = http_reply_problem(c, 414, "query-too-long", d, 0);
        return 1;
    }
    if (http_guard_request(s->guard, c) && !(route && (route->flags & ROUTES_RESERVE))) {
        *q = http_reply_problem_hdr(c, 503, "server-busy",
                                    "every connection is busy; this one may ask for /healthz "
                                    "or /readyz only; retry later",
                                    0, "Retry-After", "1");
        return 1;
    }
    return 0;
}

/* 1 when the request announces a body. */
static int http_has_body(struct MHD_Connection *c)
{
    if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding"))
        return 1;
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    return cl && strspn(cl, "0") != strlen(cl);
}

/* The request's Content-Length, 0 when it has none or is chunked (a
 * chunked body's length is known only at its end). */
static uint64_t http_content_length(struct MHD_Connection *c)
{
    if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding"))
        return 0;
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    return cl ? strtoull(cl, NULL, 10) : 0;
}

/* An upload refused while its body arrives (see the top). */
static enum MHD_Result http_upload_refused(struct MHD_Connection *c, http_req *rq)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    unsigned long long total = cl ? strtoull(cl, NULL, 10) : 0;
    uint64_t got = routes_jobs_post_bytes(rq->post);
    if (cl && total >= got && total - got <= HTTP_LINGER_BYTES)
        return MHD_YES; /* the rest is small: dropped, answered at the end */
    unsigned status;
    const char *slug, *detail;
    long long line;
    routes_jobs_post_refusal(rq->post, &status, &slug, &detail, &line);
    http_reply_raw(c, status, slug, detail, line);
    rq->status = status;
    routes_jobs_post_abort(rq->post);
    rq->post = NULL;
    rq->early = 1;
    rq->answered = 1;
    rq->linger_until = cls_now() + HTTP_LINGER_S;
    return MHD_YES;
}

static enum MHD_Result http_access(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls)
{
    http_server *s = cls;
    http_req *rq = *con_cls;
    if (!rq) { /* the URI log callback could not allocate */
        rq = calloc(1, sizeof *rq);
        if (!rq)
            return MHD_NO;
        *con_cls = rq;
    }
    rq->bytes_in += *upload_data_size;
    if (rq->early) { /* answered already: drop a little, then close */
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        rq->linger_bytes += n;
        if (n == 0 || rq->linger_bytes > HTTP_LINGER_BYTES || cls_now() > rq->linger_until)
            return MHD_NO; /* the body has ended, or enough of it came */
        return MHD_YES;
    }
    if (!rq->started) {
        rq->started = 1;
        rq->t0 = cls_now();
        snprintf(rq->method, sizeof rq->method, "%s", method);
        snprintf(rq->path, sizeof rq->path, "%s", url);
        problem_ascii(rq->path); /* the client's text, for a JSON log line */
        problem_ascii(rq->method);
        routes_match m;
        routes_find(url, method, &m);
        rq->route = m.route ? m.route->pattern : "other";
        snprintf(rq->job, sizeof rq->job, "%s", m.id);
        enum MHD_Result q;
        http_reply_enter(rq->method, rq->route, rq->path);
        int refused = http_protocol_checks(s, c, rq, m.route, version, &q);
        unsigned status = http_reply_leave();
        if (refused) {
            rq->status = status;
            rq->answered = 1;
            return q;
        }
        /* only an upload is decided at the first call; a POST without a
         * body that is not one (.../cancel, .../pin) is answered like a GET */
        if (!(m.row && (m.row->flags & ROUTES_BODY)) && !http_has_body(c)) {
            rq->deferred = 1;
            return MHD_YES;
        }
    }
    if (rq->deferred && *upload_data_size > 0) {
        /* a body on a request that takes none is dropped (at the same
         * minimum rate as any body: it holds a slot all the same) */
        http_guard_body(s->guard, c, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (!rq->answered && !rq->post) {
        rq->deferred = 0;
        rq->answered = 1;
        http_reply_enter(rq->method, rq->route, rq->path); /* a 401 is recorded with it too */
        enum MHD_Result q = http_dispatch(s, c, url, method, rq);
        rq->status = http_reply_leave();
        if (rq->parked)
            rq->answered = 0; /* a long poll: the handler answers when it is resumed */
        if (rq->post) {
            rq->answered = 0;
            http_guard_body_begin(s->guard, c, http_content_length(c)); /* the guard times it */
        }
        return q;
    }
    if (rq->post) {
        if (*upload_data_size > 0) {
            http_guard_body(s->guard, c, *upload_data_size);
            enum MHD_Result q = routes_jobs_post_data(rq->post, upload_data, *upload_data_size);
            *upload_data_size = 0;
            return q == MHD_YES ? MHD_YES : http_upload_refused(c, rq);
        }
        routes_post *p = rq->post;
        rq->post = NULL;
        rq->answered = 1;
        http_guard_body_end(s->guard, c);
        http_reply_enter(rq->method, rq->route, rq->path);
        enum MHD_Result q = routes_jobs_post_end(c, p);
        rq->status = http_reply_leave();
        return q;
    }
    /* a request answered from its headers: its body (if any) is dropped */
    *upload_data_size = 0;
    return MHD_YES;
}

static void http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                           enum MHD_RequestTerminationCode toe)
{
    http_server *s = cls;
    http_req *rq = *con_cls;
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        http_guard_idle(s->guard, c);
    if (!rq)
        return;
    if (rq->post)
        routes_jobs_post_abort(rq->post);
    if (rq->waited)
        __atomic_sub_fetch(&s->waits_open, 1, __ATOMIC_ACQ_REL);
    if (rq->started) { /* a request that reached the handler: its metrics and log line */
        double dt = cls_now() - rq->t0;
        /* a long poll's time is the job's, not the server's: apart */
        const char *route = rq->route ? rq->route : "other";
        char wroute[96];
        snprintf(wroute, sizeof wroute, "%s?wait", route);
        metrics_http_request(rq->waited ? wroute : route, rq->method, rq->status, dt);
        if (log_enabled()) {
            char remote[INET6_ADDRSTRLEN] = "";
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
            const struct sockaddr *sa = ci ? ci->client_addr : NULL;
            if (sa && sa->sa_family == AF_INET)
                inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, remote,
                          sizeof remote);
            else if (sa && sa->sa_family == AF_INET6)
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, remote,
                          sizeof remote);
            json_t *f = json_pack("{s:s, s:s, s:s, s:i, s:f, s:I, s:s}", "method", rq->method,
                                  "route", rq->route ? rq->route : "other", "path", rq->path,
                                  "status", (int)rq->status, "duration_ms", 1e3 * dt, "bytes_in",
                                  (json_int_t)rq->bytes_in, "remote", remote);
            if (f && rq->job[0])
                json_object_set_new(f, "job", json_string(rq->job));
            if (f && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
                json_object_set_new(f, "aborted", json_true());
            log_event("request", f);
        }
    }
    free(rq);
    *con_cls = NULL;
}

/* "ADDR:PORT", "[V6]:PORT", ":PORT" or "PORT". */
static int parse_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *len,
                        cls_error *err)
{
    char host[128] = "127.0.0.1";
    const char *port = NULL;
    memset(ss, 0, sizeof *ss);
    if (spec[0] == '[') {
        const char *e = strchr(spec, ']');
        if (!e || e[1] != ':' || (size_t)(e - spec - 1) >= sizeof host)
            return cls_fail(err, CLS_EUSAGE, "--listen: '%s' is not [IPV6]:PORT", spec);
        memcpy(host, spec + 1, (size_t)(e - spec - 1));
        host[e - spec - 1] = '\0';
        port = e + 2;
    } else {
        const char *colon = strrchr(spec, ':');
        if (colon) {
            if ((size_t)(colon - spec) >= sizeof host)
                return cls_fail(err, CLS_EUSAGE, "--listen: address too long");
            if (colon != spec) {
                memcpy(host, spec, (size_t)(colon - spec));
                host[colon - spec] = '\0';
            }
            port = colon + 1;
        } else {
            port = spec;
        }
    }
    char *end;
    errno = 0;
    long p = strtol(port, &end, 10);
    if (!*port || *end || errno || p < 0 || p > 65535)
        return cls_fail(err, CLS_EUSAGE, "--listen: '%s' has no valid port", spec);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)p);
        *len = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)p);
        *len = sizeof *v6;
    } else {
        return cls_fail(err, CLS_EUSAGE, "--listen: '%s' is not a numeric IPv4 or IPv6 address",
                        host);
    }
    return CLS_OK;
}

int http_server_start(http_server **out, const http_server_config *cfg, cls_error *err)
{
    *out = NULL;
    struct sockaddr_storage ss;
    socklen_t slen;
    if (parse_listen(cfg->listen, &ss, &slen, err))
        return CLS_EUSAGE;
    http_server *s = calloc(1, sizeof *s);
    if (!s)
        return cls_fail(err, CLS_EOTHER, "out of memory");
    s->cfg = *cfg;
    http_guard_config gcfg = {
        .max_connections = cfg->max_connections,
        .reserve = cfg->health_reserve,
        .per_address = cfg->per_address ? cfg->per_address : cfg->max_connections,
        .header_timeout_s = cfg->header_timeout_s > 0 ? cfg->header_timeout_s : 10,
        .min_body_rate = cfg->min_body_rate > 0 ? cfg->min_body_rate : 0};
    if (http_guard_start(&s->guard, &gcfg, err)) {
        free(s);
        return CLS_EOTHER;
    }
    if (job_wait_start(&s->waits, cfg->store)) {
        http_guard_stop(s->guard);
        free(s);
        return cls_fail(err, CLS_EOTHER, "cannot start the long-poll thread");
    }
    /* libmicrohttpd's own limit leaves room for the reserve and for dropped
     * connections it has not closed yet (thousands a second when attackers
     * reconnect at once): the guard enforces the real one. At its own limit
     * libmicrohttpd stops accepting, and an honest client then waits in the
     * kernel's backlog behind the attackers' reconnects (0.5-2 s with 500
     * slow bodies), so the margin is wide; the descriptors bound it. */
    unsigned mhd_limit = 2 * cfg->max_connections + cfg->health_reserve + 64;
    struct rlimit nofile;
    if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur != RLIM_INFINITY &&
        nofile.rlim_cur > 128 && mhd_limit > nofile.rlim_cur - 64) {
        unsigned floor_ = cfg->max_connections + cfg->health_reserve + 32;
        mhd_limit =
            (unsigned)(nofile.rlim_cur - 64) > floor_ ? (unsigned)(nofile.rlim_cur - 64) : floor_;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_AUTO |
                     MHD_ALLOW_SUSPEND_RESUME; /* long polls (job_wait.h) */
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, http_access, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(cfg->threads ? cfg->threads : 4),
        MHD_OPTION_CONNECTION_LIMIT, mhd_limit, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)cfg->timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT, http_conn_memory(),
        MHD_OPTION_NOTIFY_COMPLETED, http_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
        http_guard_notify, s->guard, MHD_OPTION_URI_LOG_CALLBACK, http_uri_log, s, MHD_OPTION_END);
    if (!s->mhd) {
        job_wait_stop(s->waits);
        job_wait_free(s->waits);
        http_guard_stop(s->guard);
        free(s);
        return cls_fail(err, CLS_EOTHER, "cannot listen on %s (address in use or not local?)",
                        cfg->listen);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    metrics_add_source(http_guard_metrics, s->guard);
    metrics_add_source(job_wait_metrics, s->waits);
    *out = s;
    return CLS_OK;
}

unsigned http_server_port(const http_server *s)
{
    return s ? s->port : 0;
}

void http_server_stop(http_server *s)
{
    if (!s)
        return;
    /* libmicrohttpd must find no suspended connection; and a resumed long
     * poll is answered by its polling thread some time later, which
     * MHD_stop_daemon would cut short (the sanitized test of a poll across
     * the drain got no answer): its answers are given 2 s to go out */
    job_wait_stop(s->waits);
    for (int i = 0; i < 200 && __atomic_load_n(&s->waits_open, __ATOMIC_ACQUIRE) > 0; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    MHD_stop_daemon(s->mhd);
    job_wait_free(s->waits);
    http_guard_stop(s->guard);
    free(s);
}
