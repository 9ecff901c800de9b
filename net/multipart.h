/*
 * multipart.h: a streaming multipart/form-data parser (RFC 7578 over
 * RFC 2046), written so that no part is ever held whole in memory.
 *
 * Bytes are fed in chunks of any size. The parser keeps a bounded window:
 * body bytes are handed to the part_data callback as soon as they cannot
 * be the start of the delimiter ("\r\n--" boundary), so memory use is the
 * window (64 KiB) plus the part headers (at most 8 KiB), whatever the size
 * of the upload. It depends on nothing but the C library, so the fuzz
 * target of the reliability issue can drive it directly.
 */
#ifndef CLS_NET_MULTIPART_H
#define CLS_NET_MULTIPART_H

#include <stddef.h>

#include "../common/error.h"

#define MULTIPART_WINDOW 65536
#define MULTIPART_HEADERS_MAX 8192

typedef struct multipart_callbacks {
    /* A part starts. filename and content_type are "" when absent. A
     * non-zero return stops the parse with that class (err already set). */
    int (*part_begin)(void *ctx, const char *name, const char *filename,
                      const char *content_type, cls_error *err);
    int (*part_data)(void *ctx, const char *data, size_t len, cls_error *err);
    int (*part_end)(void *ctx, cls_error *err);
} multipart_callbacks;

typedef struct multipart_parser {
    multipart_callbacks cb;
    void *ctx;
    char delim[80]; /* "\r\n--" boundary */
    size_t dlen;
    int state;
    int in_part;
    char buf[MULTIPART_WINDOW];
    size_t blen;
    int parts;
    size_t hscan; /* MP_HEADERS: bytes of buf already searched for the blank line */
} multipart_parser;

/* Extracts the boundary from a Content-Type header value; CLS_EINPUT when
 * the type is not multipart/form-data or the boundary is missing or longer
 * than RFC 2046's 70 characters. */
int multipart_init(multipart_parser *mp, const char *content_type,
                   const multipart_callbacks *cb, void *ctx, cls_error *err);

/* Feeds len bytes. Returns CLS_OK, CLS_EINPUT on malformed input, or what a
 * callback returned. After a failure the parser must not be fed again. */
int multipart_feed(multipart_parser *mp, const char *data, size_t len, cls_error *err);

/* The body ended: CLS_OK only when the closing delimiter was seen. */
int multipart_finish(multipart_parser *mp, cls_error *err);

/* 1 when content_type names multipart/form-data. */
int multipart_is_form(const char *content_type);

#endif
