/*
 * http_client.c: the CLI's HTTP/1.1 client (see http_client.h).
 *
 * A request is checked whole before the connection is made: the bearer
 * token (length, characters), every file part (a readable regular file,
 * whose size goes into Content-Length) and the head, built into a fixed
 * buffer by appends that each check the room left. So no input can write
 * past the head, and no local failure can leave a half-sent request for
 * which the server would wait until its idle timeout. A file that fails
 * while it is being sent ends the request at once, without waiting for an
 * answer.
 */
#include "http_client.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#define HTTP_CLIENT_MAX_BODY ((size_t)64 << 20)
#define HTTP_CLIENT_TIMEOUT_S 300
/* the request line and headers: room for the longest token, URL prefix
 * and target the client builds */
#define HTTP_CLIENT_MAX_HEAD 8192

int http_url_parse(const char *url, http_url *u, cls_error *err)
{
    memset(u, 0, sizeof *u);
    if (strncmp(url, "http://", 7) != 0)
        return cls_fail(err, CLS_EUSAGE, "server URL '%s' must start with http:// (no TLS)", url);
    const char *h = url + 7, *hend, *p;
    if (*h == '[') {
        hend = strchr(h, ']');
        if (!hend)
            return cls_fail(err, CLS_EUSAGE, "server URL '%s': unclosed '['", url);
        h++;
        p = hend + 1;
    } else {
        hend = h + strcspn(h, ":/");
        p = hend;
    }
    if (hend == h || (size_t)(hend - h) >= sizeof u->host)
        return cls_fail(err, CLS_EUSAGE, "server URL '%s' has no host", url);
    memcpy(u->host, h, (size_t)(hend - h));
    strcpy(u->port, "80");
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

void http_response_free(http_response *r)
{
    if (r) {
        free(r->body);
        r->body = NULL;
        r->len = 0;
    }
}

static int send_all(int fd, const char *p, size_t n, cls_error *err)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return cls_fail(err, CLS_EOTHER, "sending the request failed: %s", strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
    return CLS_OK;
}

typedef struct reader {
    int fd;
    char buf[65536];
    size_t pos, len;
    int eof;
} reader;

static int rd_fill(reader *r, cls_error *err)
{
    if (r->pos < r->len || r->eof)
        return CLS_OK;
    for (;;) {
        ssize_t n = recv(r->fd, r->buf, sizeof r->buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return cls_fail(err, CLS_EOTHER, "reading the response failed: %s",
                            errno == EAGAIN ? "timed out" : strerror(errno));
        r->pos = 0;
        r->len = (size_t)n;
        r->eof = n == 0;
        return CLS_OK;
    }
}

/* A line without its CRLF; fails on EOF or an over-long line. */
static int rd_line(reader *r, char *line, size_t cap, cls_error *err)
{
    size_t n = 0;
    for (;;) {
        if (rd_fill(r, err))
            return CLS_EOTHER;
        if (r->pos >= r->len)
            return cls_fail(err, CLS_EOTHER, "the server closed the connection mid-response");
        char c = r->buf[r->pos++];
        if (c == '\n') {
            if (n > 0 && line[n - 1] == '\r')
                n--;
            line[n] = '\0';
            return CLS_OK;
        }
        if (n + 1 >= cap)
            return cls_fail(err, CLS_EOTHER, "response header line too long");
        line[n++] = c;
    }
}

typedef struct sink {
    int fd; /* >= 0: write there */
    char *mem;
    size_t len, cap;
} sink;

static int sink_put(sink *s, const char *p, size_t n, cls_error *err)
{
    if (s->fd >= 0) {
        while (n > 0) {
            ssize_t w = write(s->fd, p, n);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                return cls_fail(err, CLS_EOTHER, "writing the download failed: %s",
                                strerror(errno));
            }
            p += w;
            n -= (size_t)w;
        }
        return CLS_OK;
    }
    if (s->len + n > HTTP_CLIENT_MAX_BODY)
        return cls_fail(err, CLS_EOTHER, "response larger than 64 MiB");
    if (s->len + n + 1 > s->cap) {
        size_t nc = (s->len + n + 1) * 2;
        char *m = realloc(s->mem, nc);
        if (!m)
            return cls_fail(err, CLS_EOTHER, "out of memory for the response");
        s->mem = m;
        s->cap = nc;
    }
    memcpy(s->mem + s->len, p, n);
    s->len += n;
    s->mem[s->len] = '\0';
    return CLS_OK;
}

/* n bytes (n < 0: to EOF) from the reader into the sink. */
static int rd_copy(reader *r, long long n, sink *s, cls_error *err)
{
    while (n != 0) {
        if (rd_fill(r, err))
            return CLS_EOTHER;
        size_t avail = r->len - r->pos;
        if (avail == 0) {
            if (n < 0)
                return CLS_OK;
            return cls_fail(err, CLS_EOTHER, "the server closed the connection mid-body");
        }
        size_t take = n < 0 || (unsigned long long)n > avail ? avail : (size_t)n;
        if (sink_put(s, r->buf + r->pos, take, err))
            return CLS_EOTHER;
        r->pos += take;
        if (n > 0)
            n -= (long long)take;
    }
    return CLS_OK;
}

static int connect_to(const http_url *u, cls_error *err)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(u->host, u->port, &hints, &res);
    if (g != 0)
        return -cls_fail(err, CLS_EOTHER, "cannot resolve %s: %s", u->host, gai_strerror(g));
    int fd = -1, last = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        struct timeval tv = {HTTP_CLIENT_TIMEOUT_S, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        last = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return -cls_fail(err, CLS_EOTHER, "cannot connect to %s:%s: %s", u->host, u->port,
                         strerror(last));
    return fd;
}

/* Appends one formatted header line to the request head: fails instead of
 * writing past it (snprintf's return is the length it wanted). */
static int head_add(char *head, size_t cap, size_t *used, cls_error *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int head_add(char *head, size_t cap, size_t *used, cls_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = *used < cap ? vsnprintf(head + *used, cap - *used, fmt, ap) : -1;
    va_end(ap);
    if (w < 0 || (size_t)w >= cap - *used)
        return cls_fail(err, CLS_EUSAGE,
                        "request header too long: more than %zu bytes (a token, URL path or "
                        "query this long is not supported)",
                        cap - 1);
    *used += (size_t)w;
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
            return cls_fail(err, CLS_EUSAGE,
                            "%s: the token holds a control character (byte %zu)", source, i + 1);
    }
    return CLS_OK;
}

int http_request(const http_url *u, const char *method, const char *target, const char *token,
                 const char *content_type, const http_part *parts, int nparts, int out_fd,
                 http_response *r, cls_error *err)
{
    memset(r, 0, sizeof *r);
    if (token && http_token_check(token, "token", err))
        return CLS_EUSAGE;
    /* every file part must be a readable regular file before anything is
     * sent: its size is the Content-Length, and a request cut short would
     * leave the server waiting for the rest until its idle timeout */
    unsigned long long total = 0;
    for (int i = 0; i < nparts; i++) {
        if (parts[i].data) {
            total += parts[i].len;
            continue;
        }
        /* O_NONBLOCK: opening a FIFO must not wait for a writer */
        int in = open(parts[i].path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (in < 0)
            return cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", parts[i].path,
                            strerror(errno));
        struct stat st;
        int src = fstat(in, &st);
        int e = errno;
        close(in);
        if (src != 0)
            return cls_fail(err, CLS_EOTHER, "%s: cannot read: %s", parts[i].path, strerror(e));
        if (S_ISDIR(st.st_mode))
            return cls_fail(err, CLS_EOTHER, "%s: cannot read: is a directory", parts[i].path);
        if (!S_ISREG(st.st_mode))
            return cls_fail(err, CLS_EOTHER,
                            "%s: cannot read: not a regular file (the upload's length must be "
                            "known before it is sent)",
                            parts[i].path);
        total += (unsigned long long)st.st_size;
    }
    /* the head is built before connecting: an error in it costs no request */
    char head[HTTP_CLIENT_MAX_HEAD];
    size_t hn = 0;
    const int v6 = strchr(u->host, ':') != NULL;
    int rc = head_add(head, sizeof head, &hn, err,
                      "%s %s%s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: clsolve\r\n"
                      "Accept: */*\r\nConnection: close\r\n",
                      method, u->prefix, target, v6 ? "[" : "", u->host, v6 ? "]" : "", u->port);
    if (!rc && token)
        rc = head_add(head, sizeof head, &hn, err, "Authorization: Bearer %s\r\n", token);
    if (!rc && (nparts > 0 || !strcmp(method, "POST") || !strcmp(method, "PUT")))
        rc = head_add(head, sizeof head, &hn, err, "Content-Length: %llu\r\n", total);
    if (!rc && content_type)
        rc = head_add(head, sizeof head, &hn, err, "Content-Type: %s\r\n", content_type);
    if (!rc)
        rc = head_add(head, sizeof head, &hn, err, "\r\n");
    if (rc)
        return rc;
    int fd = connect_to(u, err);
    if (fd < 0)
        return CLS_EOTHER;
    rc = send_all(fd, head, hn, err);
    unsigned long long sent = 0;
    for (int i = 0; i < nparts && !rc; i++) {
        if (parts[i].data) {
            rc = send_all(fd, parts[i].data, parts[i].len, err);
            sent += parts[i].len;
            continue;
        }
        /* a file that fails now (removed, unreadable, shrunk since the
         * check) leaves the request incomplete: give up at once rather than
         * wait for an answer the server will not send */
        int in = open(parts[i].path, O_RDONLY | O_CLOEXEC);
        if (in < 0) {
            rc = cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", parts[i].path, strerror(errno));
            close(fd);
            return rc;
        }
        char buf[65536];
        for (;;) {
            ssize_t n = read(in, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                rc = cls_fail(err, CLS_EOTHER, "%s: read failed: %s", parts[i].path,
                              strerror(errno));
                close(in);
                close(fd);
                return rc;
            }
            if (n == 0)
                break;
            sent += (unsigned long long)n;
            if (sent > total) {
                rc = cls_fail(err, CLS_EOTHER, "%s: the file grew while it was being sent",
                              parts[i].path);
                close(in);
                close(fd);
                return rc;
            }
            if ((rc = send_all(fd, buf, (size_t)n, err)))
                break;
        }
        close(in);
    }
    if (!rc && sent != total) {
        close(fd);
        return cls_fail(err, CLS_EOTHER,
                        "a file shrank while it was being sent (%llu of %llu bytes)", sent,
                        total);
    }
    /* a server that rejects an upload early may close while we send: its
     * answer is still worth reading */
    reader *rd = malloc(sizeof *rd);
    if (!rd) {
        close(fd);
        return cls_fail(err, CLS_EOTHER, "out of memory");
    }
    rd->fd = fd;
    rd->pos = rd->len = 0;
    rd->eof = 0;
    char line[8192];
    cls_error rerr;
    if (rd_line(rd, line, sizeof line, &rerr)) {
        free(rd);
        close(fd);
        if (rc)
            return rc;
        *err = rerr;
        return CLS_EOTHER;
    }
    if (sscanf(line, "HTTP/%*d.%*d %d", &r->status) != 1) {
        free(rd);
        close(fd);
        return cls_fail(err, CLS_EOTHER, "not an HTTP response: '%.60s'", line);
    }
    long long clen = -1;
    int chunked = 0;
    rc = CLS_OK;
    for (;;) {
        if ((rc = rd_line(rd, line, sizeof line, err)))
            break;
        if (!line[0])
            break;
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        if (!strcasecmp(line, "Content-Length"))
            clen = strtoll(v, NULL, 10);
        else if (!strcasecmp(line, "Transfer-Encoding") && !strncasecmp(v, "chunked", 7))
            chunked = 1;
        else if (!strcasecmp(line, "Content-Type"))
            snprintf(r->content_type, sizeof r->content_type, "%s", v);
        else if (!strcasecmp(line, "Location"))
            snprintf(r->location, sizeof r->location, "%s", v);
        else if (!strcasecmp(line, "Retry-After"))
            snprintf(r->retry_after, sizeof r->retry_after, "%s", v);
    }
    sink s = {.fd = (out_fd >= 0 && r->status / 100 == 2) ? out_fd : -1};
    if (!rc && strcmp(method, "HEAD") != 0 && r->status != 204 && r->status != 304) {
        if (chunked) {
            for (;;) {
                if ((rc = rd_line(rd, line, sizeof line, err)))
                    break;
                char *end;
                long long n = strtoll(line, &end, 16);
                if (end == line || n < 0) {
                    rc = cls_fail(err, CLS_EOTHER, "bad chunk size in the response");
                    break;
                }
                if (n == 0) {
                    /* trailers until the empty line */
                    while (!(rc = rd_line(rd, line, sizeof line, err)) && line[0])
                        ;
                    break;
                }
                if ((rc = rd_copy(rd, n, &s, err)) || (rc = rd_line(rd, line, sizeof line, err)))
                    break;
            }
        } else {
            rc = rd_copy(rd, clen, &s, err);
        }
    }
    free(rd);
    close(fd);
    if (rc) {
        free(s.mem);
        return rc;
    }
    r->body = s.mem ? s.mem : calloc(1, 1);
    r->len = s.len;
    return CLS_OK;
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
