/*
 * http_client.c: the clsolve commands' HTTP client on libcurl (see
 * http_client.h).
 *
 * One easy handle per request (a command makes a few). The body is sent
 * by a read callback over the parts, with its length known up front; the
 * answer's head is read by a header callback (Content-Type, Location,
 * Retry-After; reset at every status line, so a 100 Continue leaves
 * nothing behind) and its body by a write callback that sends a 2xx body to
 * the caller's file and anything else to memory. The bearer token goes by
 * CURLAUTH_BEARER, which libcurl does not forward to another host. Only
 * http and https are allowed, redirects are followed for GET only (a proxy
 * may answer one; a POST's body would have to be sent again), and proxies
 * come from the environment as in every libcurl program.
 *
 * A 503 (queue full, draining) is answered by the daemon before it stores
 * anything, so it is safe to send again: after the answer's Retry-After
 * (at most max_retry_wait_s), o->retries times, each noted on stderr.
 */
#include "http_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HTTP_CLIENT_MAX_BODY ((size_t)64 << 20)

void http_client_opts_default(http_client_opts *o)
{
    memset(o, 0, sizeof *o);
    o->connect_timeout_s = 10;
    o->stall_timeout_s = 60;
    o->retries = 3;
    o->max_retry_wait_s = 60;
    o->cmd = "client";
}

int http_url_parse(const char *url, http_url *u, cls_error *err)
{
    memset(u, 0, sizeof *u);
    const char *h;
    if (!strncmp(url, "http://", 7)) {
        strcpy(u->scheme, "http");
        strcpy(u->port, "80");
        h = url + 7;
    } else if (!strncmp(url, "https://", 8)) {
        strcpy(u->scheme, "https");
        strcpy(u->port, "443");
        h = url + 8;
    } else {
        return cls_fail(err, CLS_EUSAGE, "server URL '%s' must start with http:// or https://",
                        url);
    }
    const char *hend, *p;
    if (*h == '[') {
        hend = strchr(h, ']');
        if (!hend)
            return cls_fail(err, CLS_EUSAGE, "server URL '%s': unclosed '['", url);
        h++;
        p = hend + 1;
        u->ipv6 = 1;
    } else {
        hend = h + strcspn(h, ":/");
        p = hend;
    }
    if (hend == h || (size_t)(hend - h) >= sizeof u->host)
        return cls_fail(err, CLS_EUSAGE, "server URL '%s' has no host", url);
    memcpy(u->host, h, (size_t)(hend - h));
    if (*p == ':') {
        p++;
        size_t n = strspn(p, "0123456789");
        if (n == 0 || n >= sizeof u->port)
            return cls_fail(err, CLS_EUSAGE, "server URL '%s' has a bad port", url);
        memcpy(u->port, p, n);
        u->port[n] = '\0';
        p += n;
    }
    if (*p && *p != '/')
        return cls_fail(err, CLS_EUSAGE, "server URL '%s' is malformed", url);
    size_t pl = strlen(p);
    while (pl > 0 && p[pl - 1] == '/')
        pl--;
    if (pl >= sizeof u->prefix)
        return cls_fail(err, CLS_EUSAGE, "server URL '%s': path too long", url);
    memcpy(u->prefix, p, pl);
    u->prefix[pl] = '\0';
    return CLS_OK;
}

int http_token_check(const char *token, const char *source, cls_error *err)
{
    size_t n = strlen(token);
    if (n > HTTP_CLIENT_MAX_TOKEN)
        return cls_fail(err, CLS_EUSAGE,
                        "%s: the token is %zu characters; at most %d are supported", source, n,
                        HTTP_CLIENT_MAX_TOKEN);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)token[i];
        if (c < 0x20 || c == 0x7f) /* a CR or LF would end the header line */
            return cls_fail(err, CLS_EUSAGE, "%s: the token holds a control character (byte %zu)",
                            source, i + 1);
    }
    return CLS_OK;
}

void http_response_free(http_response *r)
{
    if (r) {
        free(r->body);
        r->body = NULL;
        r->len = 0;
    }
}

/* --- the body, part by part --- */

typedef struct upload {
    const http_part *parts;
    int nparts, i, fd;
    size_t off;
    cls_error err; /* a file that failed while it was being sent */
} upload;

static size_t upload_read(char *buf, size_t size, size_t n, void *ctx)
{
    upload *u = ctx;
    size_t cap = size * n;
    while (u->i < u->nparts) {
        const http_part *p = &u->parts[u->i];
        if (p->data) {
            size_t k = p->len - u->off < cap ? p->len - u->off : cap;
            memcpy(buf, p->data + u->off, k);
            u->off += k;
            if (u->off == p->len) {
                u->i++;
                u->off = 0;
            }
            if (k)
                return k;
            continue;
        }
        if (u->fd < 0 && (u->fd = open(p->path, O_RDONLY | O_CLOEXEC)) < 0) {
            cls_fail(&u->err, CLS_EOTHER, "%s: cannot open: %s", p->path, strerror(errno));
            return CURL_READFUNC_ABORT;
        }
        ssize_t got = read(u->fd, buf, cap);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            cls_fail(&u->err, CLS_EOTHER, "%s: read failed: %s", p->path, strerror(errno));
            return CURL_READFUNC_ABORT;
        }
        if (got > 0)
            return (size_t)got;
        close(u->fd);
        u->fd = -1;
        u->i++;
    }
    return 0;
}

/* --- the answer --- */

typedef struct answer {
    CURL *curl;
    http_response *r;
    int out_fd;
    char *mem;
    size_t len, cap;
    int failed; /* writing the caller's file failed (errno in werr) */
    int werr;
} answer;

static void header_value(const char *line, size_t n, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return;
    const char *v = line + nl + 1, *e = line + n;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
        e--;
    snprintf(out, cap, "%.*s", (int)(e - v), v);
}

static size_t answer_header(char *line, size_t size, size_t n, void *ctx)
{
    answer *a = ctx;
    size_t len = size * n;
    if (len >= 5 && !strncmp(line, "HTTP/", 5)) { /* a new status line: a new head */
        a->r->content_type[0] = a->r->location[0] = a->r->retry_after[0] = '\0';
        return len;
    }
    header_value(line, len, "Content-Type", a->r->content_type, sizeof a->r->content_type);
    header_value(line, len, "Location", a->r->location, sizeof a->r->location);
    header_value(line, len, "Retry-After", a->r->retry_after, sizeof a->r->retry_after);
    return len;
}

static size_t answer_write(char *data, size_t size, size_t n, void *ctx)
{
    answer *a = ctx;
    size_t len = size * n;
    long code = 0;
    curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &code);
    if (a->out_fd >= 0 && code >= 200 && code < 300) {
        for (size_t done = 0; done < len;) {
            ssize_t w = write(a->out_fd, data + done, len - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                a->failed = 1;
                a->werr = w < 0 ? errno : ENOSPC;
                return 0; /* libcurl stops with CURLE_WRITE_ERROR */
            }
            done += (size_t)w;
        }
        return len;
    }
    if (a->len + len > HTTP_CLIENT_MAX_BODY)
        return 0;
    if (a->len + len + 1 > a->cap) {
        size_t nc = (a->len + len + 1) * 2;
        char *m = realloc(a->mem, nc);
        if (!m)
            return 0;
        a->mem = m;
        a->cap = nc;
    }
    memcpy(a->mem + a->len, data, len);
    a->len += len;
    a->mem[a->len] = '\0';
    return len;
}

/* The message for a transfer libcurl could not complete. */
static int transfer_error(CURL *c, CURLcode cc, const char *ebuf, const http_url *u,
                          const http_client_opts *o, const upload *up, const answer *a,
                          cls_error *err)
{
    const char *why = ebuf[0] ? ebuf : curl_easy_strerror(cc);
    long oserr = 0;
    curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &oserr);
    switch (cc) {
    case CURLE_ABORTED_BY_CALLBACK:
    case CURLE_READ_ERROR:
        if (up->err.msg[0])
            return cls_fail(err, CLS_EOTHER, "%s", up->err.msg);
        break;
    case CURLE_WRITE_ERROR:
        if (a->failed)
            return cls_fail(err, CLS_EOTHER, "writing the answer failed: %s", strerror(a->werr));
        return cls_fail(err, CLS_EOTHER, "the answer is larger than %zu bytes",
                        HTTP_CLIENT_MAX_BODY);
    case CURLE_COULDNT_RESOLVE_HOST:
        return cls_fail(err, CLS_EOTHER, "cannot resolve %s: %s", u->host, why);
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_PROXY:
        return cls_fail(err, CLS_EOTHER,
                        "proxy: %s (from $http_proxy, $https_proxy, "
                        "$all_proxy; $no_proxy excludes hosts)",
                        why);
    case CURLE_COULDNT_CONNECT: {
        /* libcurl says nothing of a proxy it went through: name the one the
         * environment gives for this scheme, if any ($no_proxy aside) */
        const char *names[] = {!strcmp(u->scheme, "https") ? "https_proxy" : "http_proxy",
                               !strcmp(u->scheme, "https") ? "HTTPS_PROXY" : "", "all_proxy",
                               "ALL_PROXY"};
        const char *px = NULL;
        for (size_t k = 0; k < sizeof names / sizeof names[0] && !px; k++)
            if (names[k][0] && getenv(names[k]) && *getenv(names[k]))
                px = getenv(names[k]);
        if (px)
            return cls_fail(err, CLS_EOTHER, "cannot connect to %s:%s through the proxy %s: %s",
                            u->host, u->port, px, why);
        return cls_fail(err, CLS_EOTHER, "cannot connect to %s:%s: %s", u->host, u->port,
                        oserr ? strerror((int)oserr) : why);
    }
    case CURLE_OPERATION_TIMEDOUT: {
        double ct = 0;
        curl_easy_getinfo(c, CURLINFO_CONNECT_TIME, &ct);
        if (ct <= 0)
            return cls_fail(err, CLS_EOTHER,
                            "cannot connect to %s:%s: no answer in %g s "
                            "(--connect-timeout)",
                            u->host, u->port, o->connect_timeout_s);
        return cls_fail(err, CLS_EOTHER,
                        "%s:%s stopped answering: no byte moved for %g s "
                        "(--request-timeout)",
                        u->host, u->port, o->stall_timeout_s);
    }
    case CURLE_PEER_FAILED_VERIFICATION:
#if LIBCURL_VERSION_NUM < 0x073e00
    case CURLE_SSL_CACERT:
#endif
        return cls_fail(err, CLS_EOTHER,
                        "TLS: the certificate of %s is not trusted: %s (give the "
                        "CA that signed it with --cacert FILE)",
                        u->host, why);
    case CURLE_SSL_CACERT_BADFILE:
        return cls_fail(err, CLS_EOTHER, "--cacert %s: %s", o->cacert ? o->cacert : "", why);
    case CURLE_SSL_CONNECT_ERROR:
        return cls_fail(err, CLS_EOTHER, "TLS handshake with %s:%s failed: %s", u->host, u->port,
                        why);
    case CURLE_UNSUPPORTED_PROTOCOL:
        return cls_fail(err, CLS_EOTHER, "redirected to a URL that is not http or https: %s", why);
    default:
        break;
    }
    return cls_fail(err, CLS_EOTHER, "%s:%s: %s", u->host, u->port, why);
}

static int upload_xferinfo(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                           curl_off_t ulnow)
{
    const http_client_opts *o = ctx;
    if (ultotal > 0)
        o->upload_progress(o->progress_ctx, (double)ulnow, (double)ultotal);
    return 0;
}

static int curl_ready(cls_error *err)
{
    static int done, ok;
    if (!done) {
        done = 1;
        ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
        if (ok)
            atexit(curl_global_cleanup);
    }
    return ok ? CLS_OK : cls_fail(err, CLS_EOTHER, "libcurl could not be initialised");
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int http_request(const http_url *u, const http_client_opts *o, const char *method,
                 const char *target, const char *token, const char *content_type,
                 const char *header, const http_part *parts, int nparts, int out_fd,
                 http_response *r, cls_error *err)
{
    memset(r, 0, sizeof *r);
    if (token && http_token_check(token, "token", err))
        return CLS_EUSAGE;
    /* every file part must be a readable regular file before anything is
     * sent: its size is the Content-Length */
    curl_off_t total = 0;
    for (int i = 0; i < nparts; i++) {
        if (parts[i].data) {
            total += (curl_off_t)parts[i].len;
            continue;
        }
        /* O_NONBLOCK: opening a FIFO must not wait for a writer */
        int in = open(parts[i].path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (in < 0)
            return cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", parts[i].path, strerror(errno));
        struct stat st;
        int src = fstat(in, &st);
        int e = errno;
        close(in);
        if (src != 0)
            return cls_fail(err, CLS_EOTHER, "%s: cannot read: %s", parts[i].path, strerror(e));
        if (!S_ISREG(st.st_mode))
            return cls_fail(err, CLS_EOTHER, "%s: cannot read: not a regular file", parts[i].path);
        total += (curl_off_t)st.st_size;
    }
    if (o->cacert && access(o->cacert, R_OK) != 0)
        return cls_fail(err, CLS_EUSAGE, "--cacert: %s: cannot open: %s", o->cacert,
                        strerror(errno));
    if (curl_ready(err))
        return CLS_EOTHER;
    char url[2048];
    if (snprintf(url, sizeof url, "%s://%s%s%s:%s%s%s", u->scheme, u->ipv6 ? "[" : "", u->host,
                 u->ipv6 ? "]" : "", u->port, u->prefix, target) >= (int)sizeof url)
        return cls_fail(err, CLS_EUSAGE, "the request URL is too long");
    int post = !strcmp(method, "POST");
    for (int attempt = 0;; attempt++) {
        CURL *c = curl_easy_init();
        if (!c)
            return cls_fail(err, CLS_EOTHER, "libcurl: out of memory");
        struct curl_slist *hl = NULL;
        char ebuf[CURL_ERROR_SIZE] = "", ct[200];
        upload up = {.parts = parts, .nparts = nparts, .fd = -1};
        answer a = {.curl = c, .r = r, .out_fd = out_fd};
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
        curl_easy_setopt(c, CURLOPT_USERAGENT, "clsolve");
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(o->connect_timeout_s * 1000));
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)(o->stall_timeout_s + 0.5));
        if (o->cacert)
            curl_easy_setopt(c, CURLOPT_CAINFO, o->cacert);
        if (token) {
            curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
            curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, token);
        }
        if (!strcmp(method, "GET")) {
            curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
            curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
        } else if (post) {
            curl_easy_setopt(c, CURLOPT_POST, 1L);
            curl_easy_setopt(c, CURLOPT_READFUNCTION, upload_read);
            curl_easy_setopt(c, CURLOPT_READDATA, &up);
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, total);
            if (o->upload_progress) {
                curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
                curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, upload_xferinfo);
                curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)o);
            }
        } else {
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        }
        if (content_type) {
            snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
            hl = curl_slist_append(hl, ct);
        }
        if (header)
            hl = curl_slist_append(hl, header);
        if (hl)
            curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, answer_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &a);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, answer_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
        CURLcode cc = curl_easy_perform(c);
        int rc = CLS_OK;
        if (cc != CURLE_OK) {
            rc = transfer_error(c, cc, ebuf, u, o, &up, &a, err);
        } else {
            long code = 0;
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
            r->status = (int)code;
        }
        if (up.fd >= 0)
            close(up.fd);
        curl_slist_free_all(hl);
        curl_easy_cleanup(c);
        r->body = a.mem ? a.mem : calloc(1, 1);
        r->len = a.len;
        if (rc)
            return rc;
        r->retried = attempt;
        if (r->status != 503 || attempt >= o->retries)
            return CLS_OK;
        /* the daemon stored nothing: ask again after Retry-After seconds */
        char *end;
        double wait = strtod(r->retry_after, &end);
        if (end == r->retry_after || !(wait >= 0))
            wait = 1;
        if (wait > o->max_retry_wait_s)
            wait = o->max_retry_wait_s;
        char d[300];
        http_problem_detail(r, d, sizeof d, NULL);
        fprintf(stderr, "clsolve %s: %s (HTTP 503); retrying in %g s (%d of %d)\n", o->cmd, d, wait,
                attempt + 1, o->retries);
        http_response_free(r);
        memset(r, 0, sizeof *r);
        sleep_s(wait);
    }
}

void http_problem_detail(const http_response *r, char *out, size_t cap, long long *line)
{
    if (line)
        *line = 0;
    out[0] = '\0';
    json_t *o = r->body ? json_loads(r->body, 0, NULL) : NULL;
    const char *d = json_string_value(json_object_get(o, "detail"));
    if (d) {
        snprintf(out, cap, "%s", d);
        if (line && json_is_integer(json_object_get(o, "line")))
            *line = json_integer_value(json_object_get(o, "line"));
    } else if (r->body && r->body[0]) {
        snprintf(out, cap, "%.*s", (int)strcspn(r->body, "\r\n"), r->body);
    } else {
        snprintf(out, cap, "HTTP %d", r->status);
    }
    json_decref(o);
}
