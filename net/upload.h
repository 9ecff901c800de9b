/*
 * upload.h: one uploaded file streamed to disk, with the Matrix Market
 * header checked while the bytes arrive.
 *
 * Bytes are written to the file as they come (nothing but a bounded prefix
 * is kept in memory). A gzip stream is recognised by its magic bytes and
 * stored as it came (the reader, mm_read_csr, decompresses gzip files by
 * their magic); only its first bytes are inflated here, for the check.
 * Until the size line is complete the (decompressed) bytes go through
 * mm_header.c's resumable scan: a bad banner or size line, or a header
 * that has not ended within MM_MAX_HEADER (16 MiB, comments included),
 * fails the write at once with "NAME:LINE: ..." (err->line set), so the
 * server stops storing the upload. Comment lines are consumed as they pass
 * and never kept: only a pending banner or size line is held, at most
 * UPLOAD_PREFIX_MAX bytes; one longer than that (white space padding) is
 * left to the reader, which applies the same 16 MiB limit.
 *
 * Limits (issue 17; the caller sets max_entries and max_text after
 * upload_file_open): a header declaring more entries, rows or columns than
 * max_entries, or text (decompressed) beyond max_text, fails the write at
 * once with over_limit set (the server answers 413). A Matrix Market gzip
 * upload is inflated whole as it arrives to measure its text (text_bytes,
 * which admission uses instead of the declared counts); a stream that turns
 * out corrupt after the header is left to the reader, which names the line.
 *
 * Durability: the file is fsynced at close (a job is acknowledged only
 * once it is on disk). Its writeback is started every UPLOAD_SYNC_STEP
 * bytes as the upload arrives (sync_file_range, which does not wait), so
 * the close waits for the last step's pages, not for a whole 589 MB file's.
 * The step is 2 MiB: at 16 MiB a 16 MB upload (poisson3d 64) started no
 * writeback before its close, whose fsync then took 25-40 ms of its 50-70
 * ms receive on the 2-core machine; at 2 MiB the receive took 8-15 ms less.
 */
#ifndef CLS_NET_UPLOAD_H
#define CLS_NET_UPLOAD_H

#include <limits.h>
#include <stdint.h>
#include <zlib.h>

#include "../common/error.h"
#include "../matrices/csr_bin.h"
#include "../matrices/mm.h"

#define UPLOAD_PREFIX_MAX (256u * 1024u)

struct preparse;
#define UPLOAD_SYNC_STEP (2u << 20)

typedef struct upload_file {
    int fd;
    char path[PATH_MAX];
    char display[256]; /* the name messages use ("matrix.mtx" or the upload's name) */
    int check_mm;      /* check a Matrix Market header */
    int header_state;  /* 0 pending, 1 checked ok, 2 left to the reader */
    int gz;            /* -1 undecided, 0 plain, 1 gzip */
    unsigned char magic[2];
    int nmagic;
    char *prefix; /* the pending banner or size line (decompressed) */
    size_t prefix_len;
    mm_header_scan scan; /* where the header check stopped */
    z_stream zs;
    int zs_live;
    int zs_end;          /* the gzip stream's end was inflated */
    uint64_t bytes;      /* bytes stored (as sent) */
    uint64_t synced;     /* of which writeback was started (UPLOAD_SYNC_STEP) */
    uint64_t text_bytes; /* of Matrix Market text, decompressed (0: not measured) */
    int measure;         /* keep inflating after the header, to measure */
    int64_t max_entries; /* 0: no limit */
    uint64_t max_text;   /* 0: no limit */
    int over_limit;      /* the failure was a limit (413), not bad content */
    int write_errno;     /* errno of a failed write (ENOSPC: disk full) */
    int binary;          /* the binary CSR form (matrices/csr_bin.h): 0 undecided
                          * (head holds the first bytes), 1 it is, -1 it is not */
    unsigned char head[CSR_BIN_HEADER];
    size_t nhead;
    uint64_t bin_bytes; /* the size its header makes */
    int no_sync;        /* close without fsync: the caller syncs the file system once
                         * for many uploads (a batch's group commit, job_store_accept_many) */
    int preparse_ok;    /* a job's matrix: parse it as it arrives (preparse.h) */
    struct preparse *pre;
    uint64_t pre_id; /* its parse's id once the upload ended (0: none) */
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
