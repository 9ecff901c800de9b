/*
 * multipart.c: the streaming multipart/form-data parser (see multipart.h).
 *
 * A state machine over a sliding window. The window starts with a virtual
 * "\r\n" so the first delimiter ("--boundary" at the very start of the
 * body) matches the same "\r\n--boundary" pattern as all the others:
 *
 *   PREAMBLE  --delim-->  AFTER_DELIM  --"\r\n"-->  HEADERS  --"\r\n\r\n"-->
 *   BODY  --delim-->  AFTER_DELIM  --"--"-->  END (epilogue ignored)
 *
 * In BODY everything but the last (delimiter length - 1) bytes of the
 * window is passed on, since only those could begin a delimiter that the
 * next chunk completes.
 */
#define _GNU_SOURCE /* memmem */
#include "multipart.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { MP_PREAMBLE, MP_AFTER_DELIM, MP_HEADERS, MP_BODY, MP_END, MP_FAILED };

int multipart_is_form(const char *ct)
{
    if (!ct)
        return 0;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return strncasecmp(ct, "multipart/form-data", 19) == 0 &&
           (ct[19] == '\0' || ct[19] == ';' || ct[19] == ' ' || ct[19] == '\t');
}

/* Finds parameter `key` in a header value's "; k=v; k2="v2"" list. Quoted
 * values lose their quotes and backslash escapes. Returns 1 when found. */
static int mp_param(const char *value, const char *key, char *out, size_t cap)
{
    size_t klen = strlen(key);
    const char *p = strchr(value, ';');
    while (p) {
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncasecmp(p, key, klen) == 0 && p[klen] == '=') {
            p += klen + 1;
            size_t n = 0;
            if (*p == '"') {
                p++;
                while (*p && *p != '"') {
                    if (*p == '\\' && p[1])
                        p++;
                    if (n + 1 >= cap)
                        return -1;
                    out[n++] = *p++;
                }
                if (*p != '"')
                    return -1;
            } else {
                while (*p && *p != ';' && *p != ' ' && *p != '\t') {
                    if (n + 1 >= cap)
                        return -1;
                    out[n++] = *p++;
                }
            }
            out[n] = '\0';
            return 1;
        }
        /* skip to the next ';' outside quotes */
        int q = 0;
        while (*p && (q || *p != ';')) {
            if (*p == '"')
                q = !q;
            else if (*p == '\\' && q && p[1])
                p++;
            p++;
        }
        p = *p ? p : NULL;
    }
    return 0;
}

int multipart_init(multipart_parser *mp, const char *content_type,
                   const multipart_callbacks *cb, void *ctx, cls_error *err)
{
    memset(mp, 0, sizeof *mp);
    mp->state = MP_FAILED;
    if (!multipart_is_form(content_type))
        return cls_fail(err, CLS_EINPUT, "Content-Type is not multipart/form-data");
    char boundary[72];
    int r = mp_param(content_type, "boundary", boundary, sizeof boundary);
    if (r <= 0 || boundary[0] == '\0')
        return cls_fail(err, CLS_EINPUT,
                        r < 0 ? "multipart boundary is longer than 70 characters or badly quoted"
                              : "multipart/form-data without a boundary parameter");
    size_t bl = strlen(boundary);
    if (bl > 70)
        return cls_fail(err, CLS_EINPUT, "multipart boundary is longer than 70 characters");
    memcpy(mp->delim, "\r\n--", 4);
    memcpy(mp->delim + 4, boundary, bl);
    mp->dlen = 4 + bl;
    mp->cb = *cb;
    mp->ctx = ctx;
    mp->state = MP_PREAMBLE;
    mp->buf[0] = '\r';
    mp->buf[1] = '\n';
    mp->blen = 2;
    return CLS_OK;
}

static void mp_consume(multipart_parser *mp, size_t n)
{
    memmove(mp->buf, mp->buf + n, mp->blen - n);
    mp->blen -= n;
}

static int mp_fail(multipart_parser *mp, cls_error *err, const char *msg)
{
    mp->state = MP_FAILED;
    return cls_fail(err, CLS_EINPUT, "multipart body: %s", msg);
}

/* Parses the part headers in buf[0..len) and starts the part. */
static int mp_headers(multipart_parser *mp, const char *h, size_t len, cls_error *err)
{
    char name[128] = "", filename[256] = "", ctype[128] = "";
    int have_disp = 0;
    size_t i = 0;
    while (i < len) {
        const char *line = h + i;
        const char *eol = memmem(line, len - i, "\r\n", 2);
        size_t ll = eol ? (size_t)(eol - line) : len - i;
        i += ll + (eol ? 2 : 0);
        if (ll == 0)
            continue;
        char l[MULTIPART_HEADERS_MAX + 1];
        memcpy(l, line, ll);
        l[ll] = '\0';
        if (memchr(l, '\0', ll))
            return mp_fail(mp, err, "NUL byte in part headers");
        char *colon = strchr(l, ':');
        if (!colon)
            return mp_fail(mp, err, "a part header line has no ':'");
        *colon = '\0';
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        if (!strcasecmp(l, "Content-Disposition")) {
            if (strncasecmp(v, "form-data", 9) != 0)
                return mp_fail(mp, err, "Content-Disposition of a part is not form-data");
            have_disp = 1;
            if (mp_param(v, "name", name, sizeof name) <= 0 || !name[0])
                return mp_fail(mp, err, "a part has no name (or one longer than 127 bytes)");
            if (mp_param(v, "filename", filename, sizeof filename) < 0)
                return mp_fail(mp, err, "a part's filename is longer than 255 bytes");
        } else if (!strcasecmp(l, "Content-Type")) {
            size_t n = strlen(v);
            if (n >= sizeof ctype)
                n = sizeof ctype - 1;
            memcpy(ctype, v, n);
            ctype[n] = '\0';
        }
    }
    if (!have_disp)
        return mp_fail(mp, err, "a part has no Content-Disposition header");
    mp->in_part = 1;
    mp->parts++;
    int rc = mp->cb.part_begin ? mp->cb.part_begin(mp->ctx, name, filename, ctype, err) : 0;
    if (rc)
        mp->state = MP_FAILED;
    return rc;
}

/* Runs the state machine over the window until it needs more input. */
static int mp_step(multipart_parser *mp, cls_error *err)
{
    for (;;) {
        switch (mp->state) {
        case MP_PREAMBLE:
        case MP_BODY: {
            char *hit = memmem(mp->buf, mp->blen, mp->delim, mp->dlen);
            size_t emit;
            if (hit)
                emit = (size_t)(hit - mp->buf);
            else
                emit = mp->blen >= mp->dlen ? mp->blen - (mp->dlen - 1) : 0;
            if (mp->state == MP_BODY && emit > 0 && mp->cb.part_data) {
                int rc = mp->cb.part_data(mp->ctx, mp->buf, emit, err);
                if (rc) {
                    mp->state = MP_FAILED;
                    return rc;
                }
            }
            if (!hit) {
                mp_consume(mp, emit);
                return CLS_OK;
            }
            mp_consume(mp, emit + mp->dlen);
            if (mp->state == MP_BODY) {
                mp->in_part = 0;
                int rc = mp->cb.part_end ? mp->cb.part_end(mp->ctx, err) : 0;
                if (rc) {
                    mp->state = MP_FAILED;
                    return rc;
                }
            }
            mp->state = MP_AFTER_DELIM;
            break;
        }
        case MP_AFTER_DELIM: {
            if (mp->blen < 2)
                return CLS_OK;
            if (mp->buf[0] == '-' && mp->buf[1] == '-') {
                mp->state = MP_END;
                mp->blen = 0;
                return CLS_OK;
            }
            size_t k = 0; /* transport padding: linear white space */
            while (k < mp->blen && (mp->buf[k] == ' ' || mp->buf[k] == '\t'))
                k++;
            /* the limit before the wait for CRLF: padding that arrived in
             * one chunk must not pass where byte by byte it fails */
            if (k >= 256)
                return mp_fail(mp, err, "too much padding after a boundary");
            if (k + 2 > mp->blen)
                return CLS_OK;
            if (mp->buf[k] != '\r' || mp->buf[k + 1] != '\n')
                return mp_fail(mp, err, "a boundary is not followed by CRLF or --");
            mp_consume(mp, k + 2);
            mp->state = MP_HEADERS;
            mp->hscan = 0;
            break;
        }
        case MP_HEADERS: {
            size_t hl, skip;
            if (mp->blen >= 2 && mp->buf[0] == '\r' && mp->buf[1] == '\n') {
                hl = 0;
                skip = 2;
            } else {
                /* resume where the last feed stopped (less the 3 bytes a
                 * terminator could straddle): a block fed byte by byte is
                 * searched once, not once per byte */
                size_t from = mp->hscan > 3 ? mp->hscan - 3 : 0;
                char *end = memmem(mp->buf + from, mp->blen - from, "\r\n\r\n", 4);
                mp->hscan = mp->blen;
                if (!end) {
                    /* a block of up to 8 KiB ends within its 8 KiB + 4
                     * bytes; failing sooner would refuse such a block when
                     * its terminator comes in a later chunk */
                    if (mp->blen >= MULTIPART_HEADERS_MAX + 4)
                        return mp_fail(mp, err, "part headers longer than 8 KiB");
                    return CLS_OK;
                }
                hl = (size_t)(end - mp->buf);
                skip = hl + 4;
                if (hl > MULTIPART_HEADERS_MAX)
                    return mp_fail(mp, err, "part headers longer than 8 KiB");
            }
            if (mp->blen < 2)
                return CLS_OK;
            int rc = mp_headers(mp, mp->buf, hl, err);
            if (rc)
                return rc;
            mp_consume(mp, skip);
            mp->state = MP_BODY;
            break;
        }
        case MP_END:
            mp->blen = 0;
            return CLS_OK;
        default:
            return cls_fail(err, CLS_EINPUT, "multipart body: parser used after an error");
        }
    }
}

int multipart_feed(multipart_parser *mp, const char *data, size_t len, cls_error *err)
{
    if (mp->state == MP_FAILED)
        return cls_fail(err, CLS_EINPUT, "multipart body: parser used after an error");
    while (len > 0) {
        if (mp->state == MP_END)
            return CLS_OK; /* the epilogue is ignored */
        size_t room = sizeof mp->buf - mp->blen;
        if (room == 0)
            return mp_fail(mp, err, "internal window overflow");
        size_t n = len < room ? len : room;
        memcpy(mp->buf + mp->blen, data, n);
        mp->blen += n;
        data += n;
        len -= n;
        int rc = mp_step(mp, err);
        if (rc)
            return rc;
    }
    return CLS_OK;
}

int multipart_finish(multipart_parser *mp, cls_error *err)
{
    if (mp->state == MP_END)
        return CLS_OK;
    if (mp->state == MP_FAILED)
        return cls_fail(err, CLS_EINPUT, "multipart body: parser used after an error");
    mp->state = MP_FAILED;
    return cls_fail(err, CLS_EINPUT, "multipart body ends before its closing boundary");
}
