/*
 * gzstream.c: gzip on the fly (see gzstream.h). deflateInit2 with
 * windowBits 15 + 16 writes the gzip header and trailer; level 1 keeps a
 * core's worth of compression at several hundred MB/s, faster than most
 * links it is meant for (Matrix Market text of doubles shrinks by about
 * half, binary doubles by little).
 */
#include "gzstream.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "http_reply.h"

#define GZ_IN 65536

typedef struct gz {
    z_stream z;
    gzstream_source src;
    void *ctx;
    void (*free_ctx)(void *);
    unsigned char in[GZ_IN];
    int eof, done;
} gz;

static ssize_t gz_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    gz *g = cls;
    if (g->done)
        return MHD_CONTENT_READER_END_OF_STREAM;
    g->z.next_out = (unsigned char *)buf;
    g->z.avail_out = (uInt)(max > 0x40000000u ? 0x40000000u : max);
    while (g->z.avail_out > 0) {
        if (g->z.avail_in == 0 && !g->eof) {
            ssize_t n = g->src(g->ctx, (char *)g->in, GZ_IN);
            if (n < 0)
                return MHD_CONTENT_READER_END_WITH_ERROR;
            g->eof = n == 0;
            g->z.next_in = g->in;
            g->z.avail_in = (uInt)n;
        }
        int zr = deflate(&g->z, g->eof ? Z_FINISH : Z_NO_FLUSH);
        if (zr == Z_STREAM_END) {
            g->done = 1;
            break;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t w = (size_t)((char *)g->z.next_out - buf);
    if (w == 0 && g->done)
        return MHD_CONTENT_READER_END_OF_STREAM;
    return (ssize_t)w;
}

static void gz_free(void *cls)
{
    gz *g = cls;
    deflateEnd(&g->z);
    if (g->free_ctx)
        g->free_ctx(g->ctx);
    free(g);
}

struct MHD_Response *gzstream_response(gzstream_source src, void *ctx, void (*free_ctx)(void *))
{
    gz *g = calloc(1, sizeof *g);
    if (!g || deflateInit2(&g->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(g);
        if (free_ctx)
            free_ctx(ctx);
        return NULL;
    }
    g->src = src;
    g->ctx = ctx;
    g->free_ctx = free_ctx;
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, gz_read, g, gz_free);
    if (!r)
        gz_free(g);
    return r;
}

int gzstream_accepted(struct MHD_Connection *c)
{
    static const char *const names[] = {"gzip", "*"};
    static const int values[] = {1, 1};
    const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
    return http_negotiate(ae, names, values, 2) == 1;
}
