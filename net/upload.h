/*
 * upload.h: one uploaded file streamed to disk, with the Matrix Market
 * header checked while the bytes arrive.
 *
 * Bytes are written to the file as they come (nothing but a bounded prefix
 * is kept in memory). A gzip stream is recognised by its magic bytes and
 * stored as it came (the reader, mm_read_csr, decompresses gzip files by
 * their magic); only its first bytes are inflated here, for the check.
 * Until the banner and size line are complete the prefix (decompressed) is
 * kept and handed to mm_parse_header_buf after every chunk: a bad banner
 * or size line fails the write at once with "NAME:LINE: ..." (err->line
 * set), so the server stops storing the upload. A header longer than
 * UPLOAD_PREFIX_MAX (a long comment block) is left to the reader.
 */
#ifndef CLS_NET_UPLOAD_H
#define CLS_NET_UPLOAD_H

#include <limits.h>
#include <stdint.h>
#include <zlib.h>

#include "../common/error.h"
#include "../matrices/mm.h"

#define UPLOAD_PREFIX_MAX (256u * 1024u)

typedef struct upload_file {
    int fd;
    char path[PATH_MAX];
    char display[256];   /* the name messages use ("matrix.mtx" or the upload's name) */
    int check_mm;        /* check a Matrix Market header */
    int header_state;    /* 0 pending, 1 checked ok, 2 left to the reader */
    int gz;              /* -1 undecided, 0 plain, 1 gzip */
    unsigned char magic[2];
    int nmagic;
    char *prefix;        /* decompressed head of the file, for the check */
    size_t prefix_len;
    z_stream zs;
    int zs_live;
    uint64_t bytes;      /* bytes stored (as sent) */
    int write_errno;     /* errno of a failed write (ENOSPC: disk full) */
    mm_header header;
} upload_file;

int upload_file_open(upload_file *f, const char *path, const char *display, int check_mm,
                     cls_error *err);
/* CLS_EINPUT (err->line set) for a bad header or corrupt gzip head,
 * CLS_EOTHER for a write error (disk full). */
int upload_file_write(upload_file *f, const void *data, size_t len, cls_error *err);
/* Finishes the header check (the whole file may be shorter than the
 * header), fsyncs and closes. */
int upload_file_close(upload_file *f, cls_error *err);
/* Closes and removes the file (after a failure). Safe after close. */
void upload_file_abort(upload_file *f);

#endif
