/*
 * record.c: the response recorder (see record.h). Lines are appended with
 * one write under a mutex to a file opened once with O_APPEND, so several
 * daemons (a test's side daemons) may share one file.
 */
#include "record.h"

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../common/numfmt.h"

static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
static int rec_fd = -2; /* -2: not looked at yet; -1: off */

int record_enabled(void)
{
    pthread_mutex_lock(&rec_mu);
    if (rec_fd == -2) {
        const char *p = getenv("CLSOLVE_RECORD_RESPONSES");
        rec_fd = p && *p ? open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    }
    int on = rec_fd >= 0;
    pthread_mutex_unlock(&rec_mu);
    return on;
}

static void rec_write(json_t *o)
{
    char *s = cls_json_shorten(json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)));
    json_decref(o);
    if (!s)
        return;
    size_t n = strlen(s);
    char *line = realloc(s, n + 2);
    if (!line) {
        free(s);
        return;
    }
    line[n] = '\n';
    pthread_mutex_lock(&rec_mu);
    for (size_t off = 0; off < n + 1;) {
        ssize_t w = write(rec_fd, line + off, n + 1 - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    pthread_mutex_unlock(&rec_mu);
    free(line);
}

static enum MHD_Result rec_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
    json_t *h = cls;
    char k[64];
    size_t i;
    for (i = 0; key[i] && i + 1 < sizeof k; i++)
        k[i] = (char)((key[i] >= 'A' && key[i] <= 'Z') ? key[i] - 'A' + 'a' : key[i]);
    k[i] = '\0';
    json_object_set_new(h, k, json_string(value));
    return MHD_YES;
}

static json_t *rec_base(const char *method, const char *route, const char *path, unsigned status)
{
    return json_pack("{s:s, s:s, s:s, s:i}", "method", method, "route", route ? route : "other",
                     "path", path, "status", (int)status);
}

/* The body as the record keeps it: JSON parsed, else its kind. */
static void rec_body(json_t *o, const char *ctype, const char *body, size_t len, int stream)
{
    if (stream) {
        json_object_set_new(o, "body_kind", json_string("stream"));
        return;
    }
    if (!body || len == 0) {
        json_object_set_new(o, "body_kind", json_string("none"));
        return;
    }
    if (ctype && strstr(ctype, "json")) {
        json_t *j = json_loadb(body, len, 0, NULL);
        json_object_set_new(o, "body_kind", json_string(j ? "json" : "bad-json"));
        if (j)
            json_object_set_new(o, "body", j);
        return;
    }
    json_object_set_new(o, "body_kind",
                        json_string(ctype && !strncmp(ctype, "text/", 5) ? "text" : "binary"));
    json_object_set_new(o, "body_bytes", json_integer((json_int_t)len));
}

void record_response(const char *method, const char *route, const char *path, unsigned status,
                     struct MHD_Response *r, const char *body, size_t len)
{
    if (!record_enabled())
        return;
    json_t *o = rec_base(method, route, path, status);
    if (!o)
        return;
    json_t *h = json_object();
    MHD_get_response_headers(r, rec_header, h);
    const char *ct = json_string_value(json_object_get(h, "content-type"));
    json_object_set_new(o, "headers", h);
    rec_body(o, ct, body, len, body == NULL && (ct || status == 200));
    rec_write(o);
}

void record_stream_body(const char *method, const char *route, const char *path, unsigned status,
                        const char *content_type, const char *body, size_t len)
{
    if (!record_enabled())
        return;
    json_t *o = rec_base(method, route, path, status);
    if (!o)
        return;
    json_object_set_new(o, "headers", json_pack("{s:s}", "content-type", content_type));
    json_object_set_new(o, "stream_body", json_true());
    rec_body(o, content_type, body, len, 0);
    rec_write(o);
}
