/*
 * gzstream.h: a response body compressed with gzip as it is sent, for
 * clients that say Accept-Encoding: gzip. The source is read in chunks and
 * deflated into libmicrohttpd's buffer (zlib's deflate with a gzip
 * header), so a multi-GB solution is compressed in constant memory and
 * never as a whole; the length is unknown up front (chunked encoding).
 */
#ifndef CLS_NET_GZSTREAM_H
#define CLS_NET_GZSTREAM_H

#include <microhttpd.h>
#include <sys/types.h>

/* Fills buf with up to max bytes of the plain body: the count, 0 at the
 * end, -1 on an error (the response is then cut short). */
typedef ssize_t (*gzstream_source)(void *ctx, char *buf, size_t max);

/* A response whose body is src's bytes gzipped; free_ctx(ctx) is called
 * when it is done (also when this fails: NULL is returned then). The
 * caller adds Content-Encoding: gzip (and Vary). */
struct MHD_Response *gzstream_response(gzstream_source src, void *ctx, void (*free_ctx)(void *));

/* 1 when the request's Accept-Encoding takes gzip (a "gzip" coding, or
 * "*", whose q is not 0). */
int gzstream_accepted(struct MHD_Connection *c);

#endif
