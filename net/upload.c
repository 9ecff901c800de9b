/*
 * upload.c: streaming an uploaded file to disk with the header check (see
 * upload.h).
 */
#define _GNU_SOURCE /* sync_file_range */
#include "upload.h"
#include "preparse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int upload_file_open(upload_file *f, const char *path, const char *display, int check_mm,
                     cls_error *err)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->gz = -1;
    if (snprintf(f->path, sizeof f->path, "%s", path) >= (int)sizeof f->path)
        return cls_fail(err, CLS_EOTHER, "upload path too long");
    snprintf(f->display, sizeof f->display, "%s", display);
    f->check_mm = check_mm;
    f->header_state = check_mm ? 0 : 2;
    f->measure = check_mm;
    mm_header_scan_init(&f->scan);
    f->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (f->fd < 0)
        return cls_fail(err, CLS_EOTHER, "%s: cannot create: %s", path, strerror(errno));
    return CLS_OK;
}

/* The declared size against the limits (max_entries). */
static int upload_check_limits(upload_file *f, cls_error *err)
{
    const mm_header *h = &f->header;
    int64_t m = f->max_entries;
    if (!m || (h->entries <= m && h->rows <= m && h->cols <= m))
        return CLS_OK;
    f->over_limit = 1;
    if (f->binary == 1)
        return cls_fail(err, CLS_EINPUT,
                        "%s: the binary CSR header declares %lld x %lld with %lld entries; this "
                        "daemon takes at most %lld (--max-nnz)",
                        f->display, (long long)h->rows, (long long)h->cols,
                        (long long)h->entries, (long long)m);
    if (h->entries > m)
        return cls_fail_line(err, CLS_EINPUT, h->size_line,
                             "%s:%lld: the size line declares %lld entries; this daemon takes at "
                             "most %lld (--max-nnz)",
                             f->display, (long long)h->size_line, (long long)h->entries,
                             (long long)m);
    return cls_fail_line(err, CLS_EINPUT, h->size_line,
                         "%s:%lld: the size line declares %lld x %lld; this daemon takes at most "
                         "%lld rows and columns (--max-nnz)",
                         f->display, (long long)h->size_line, (long long)h->rows,
                         (long long)h->cols, (long long)m);
}

/* The text beyond max_text. */
static int upload_text_over(upload_file *f, cls_error *err)
{
    f->over_limit = 1;
    return cls_fail(err, CLS_EINPUT,
                    "%s: the matrix is larger than %llu bytes of text (decompressed); this daemon "
                    "takes at most %llu (--max-matrix-bytes)",
                    f->display, (unsigned long long)f->max_text, (unsigned long long)f->max_text);
}

/* Feeds decompressed (or plain) bytes to the header scan; the prefix holds
 * only what the scan has not consumed yet. */
static int upload_check_plain(upload_file *f, const char *data, size_t len, cls_error *err)
{
    while (f->header_state == 0 && len > 0) {
        if (!f->prefix) {
            f->prefix = malloc(UPLOAD_PREFIX_MAX);
            if (!f->prefix)
                return cls_fail(err, CLS_EOTHER, "out of memory for the upload header");
        }
        size_t room = UPLOAD_PREFIX_MAX - f->prefix_len;
        if (room == 0) {
            f->header_state = 2; /* a padded banner or size line: the reader checks it */
            break;
        }
        size_t n = len < room ? len : room;
        memcpy(f->prefix + f->prefix_len, data, n);
        f->prefix_len += n;
        data += n;
        len -= n;
        size_t used = 0;
        int rc = mm_header_scan_feed(&f->scan, f->prefix, f->prefix_len, 0, f->display,
                                     &f->header, &used, err);
        if (rc == CLS_OK) {
            f->header_state = 1;
            if ((rc = upload_check_limits(f, err)))
                return rc;
        } else if (rc != -1) {
            return rc;
        }
        memmove(f->prefix, f->prefix + used, f->prefix_len - used);
        f->prefix_len -= used;
    }
    if (f->header_state != 0) {
        free(f->prefix);
        f->prefix = NULL;
        f->prefix_len = 0;
    }
    return CLS_OK;
}

/* Inflates compressed bytes: into the header check until the header is
 * complete, then only to measure the text (and hold it to max_text). */
static int upload_check_gz(upload_file *f, const unsigned char *data, size_t len, cls_error *err)
{
    if (f->header_state != 0 && !f->measure)
        return CLS_OK;
    if (!f->zs_live) {
        memset(&f->zs, 0, sizeof f->zs);
        if (inflateInit2(&f->zs, 15 + 16) != Z_OK)
            return cls_fail(err, CLS_EOTHER, "zlib inflateInit2 failed");
        f->zs_live = 1;
    }
    unsigned char out[16384];
    f->zs.next_in = (unsigned char *)data;
    f->zs.avail_in = (uInt)len;
    while ((f->header_state == 0 || f->measure) && f->zs.avail_in > 0) {
        f->zs.next_out = out;
        f->zs.avail_out = sizeof out;
        int zr = inflate(&f->zs, Z_NO_FLUSH);
        size_t got = sizeof out - f->zs.avail_out;
        f->text_bytes += got;
        if (f->max_text && f->text_bytes > f->max_text)
            return upload_text_over(f, err);
        if (got && f->header_state == 0) {
            int rc = upload_check_plain(f, (const char *)out, got, err);
            if (rc)
                return rc;
        }
        if (zr == Z_STREAM_END) {
            f->zs_end = 1;
            if (f->zs.avail_in == 0 || inflateReset(&f->zs) != Z_OK)
                break;
            f->zs_end = 0; /* another gzip member follows (the reader reads them all) */
            continue;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            if (f->header_state == 0)
                return cls_fail_line(err, CLS_EINPUT, 1, "%s:1: gzip data is corrupt (%s)",
                                     f->display, f->zs.msg ? f->zs.msg : "inflate failed");
            f->measure = 0; /* the reader meets the damage and names its line */
            f->text_bytes = 0;
            break;
        }
        if (zr == Z_BUF_ERROR && got == 0)
            break;
    }
    if (f->header_state != 0 && !f->measure && f->zs_live) {
        inflateEnd(&f->zs);
        f->zs_live = 0;
    }
    return CLS_OK;
}

static int upload_check(upload_file *f, const unsigned char *data, size_t len, cls_error *err)
{
    return f->gz == 1 ? upload_check_gz(f, data, len, err)
                      : upload_check_plain(f, (const char *)data, len, err);
}

static int upload_file_feed_text(upload_file *f, const unsigned char *p, size_t len,
                                 cls_error *err);

int upload_file_write(upload_file *f, const void *data, size_t len, cls_error *err)
{
    const unsigned char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t n = write(f->fd, p, left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            f->write_errno = errno;
            return cls_fail(err, CLS_EOTHER, "%s: write failed: %s", f->display,
                            strerror(f->write_errno));
        }
        p += n;
        left -= (size_t)n;
    }
    f->bytes += len;
    if (f->bytes - f->synced >= UPLOAD_SYNC_STEP) {
        /* start the writeback of what arrived since the last step; the
         * close's fsync then waits for the tail alone (a failure here is
         * the fsync's to report) */
        sync_file_range(f->fd, (off64_t)f->synced, (off64_t)(f->bytes - f->synced),
                        SYNC_FILE_RANGE_WRITE);
        f->synced = f->bytes;
    }
    if (f->gz == 0 && f->measure) {
        f->text_bytes = f->bytes;
        if (f->max_text && f->text_bytes > f->max_text)
            return upload_text_over(f, err);
    }
    if (f->pre)
        preparse_feed(f->pre, f->bytes);
    else if (f->preparse_ok && f->gz == 0 && f->binary == -1 && f->header_state == 1 &&
             f->bytes >= PREPARSE_MIN_BYTES) {
        f->preparse_ok = 0; /* one try */
        f->pre = preparse_start(f->path, f->bytes);
    }
    if (f->header_state != 0 && !(f->gz == 1 && f->measure))
        return CLS_OK;
    p = data;
    if (f->binary == 0 && f->check_mm) {
        /* the binary CSR form (csr_bin.h) or text: its first 8 bytes decide,
         * its 32-byte header is checked as a size line is */
        while (f->nhead < CSR_BIN_HEADER && len > 0 && csr_bin_is_magic(f->head, f->nhead)) {
            f->head[f->nhead++] = *p++;
            len--;
        }
        if (!csr_bin_is_magic(f->head, f->nhead)) {
            f->binary = -1; /* text: the bytes held go through the checks below */
            const size_t held = f->nhead;
            f->nhead = 0;
            int rc = upload_file_feed_text(f, f->head, held, err);
            if (rc)
                return rc;
        } else if (f->nhead < CSR_BIN_HEADER) {
            return CLS_OK; /* more of the header to come */
        } else {
            f->binary = 1;
            f->gz = 0;
            f->measure = 0;
            int rc = csr_bin_header(f->head, f->display, &f->header, &f->bin_bytes, err);
            if (rc)
                return rc;
            f->header_state = 1;
            return upload_check_limits(f, err);
        }
    }
    return upload_file_feed_text(f, p, len, err);
}

/* The text checks (gzip or plain) on bytes already stored. */
static int upload_file_feed_text(upload_file *f, const unsigned char *p, size_t len,
                                 cls_error *err)
{
    if (f->header_state != 0 && !(f->gz == 1 && f->measure))
        return CLS_OK;
    if (f->gz < 0) {
        /* the first two bytes decide between gzip and plain text */
        while (f->nmagic < 2 && len > 0) {
            f->magic[f->nmagic++] = *p++;
            len--;
        }
        if (f->nmagic < 2)
            return CLS_OK;
        f->gz = (f->magic[0] == 0x1f && f->magic[1] == 0x8b);
        int rc = upload_check(f, f->magic, 2, err);
        if (rc)
            return rc;
    }
    return upload_check(f, p, len, err);
}

int upload_file_close(upload_file *f, cls_error *err)
{
    int rc = CLS_OK;
    if (f->pre) { /* every byte is written: the parse reads to the end (before the fsync) */
        f->pre_id = preparse_end(f->pre, 1);
        f->pre = NULL;
    }
    if (f->binary == 0 && f->nhead > 0 && f->header_state == 0) {
        if (csr_bin_is_magic(f->head, f->nhead) && f->nhead >= 8)
            rc = cls_fail(err, CLS_EINPUT, "%s: byte %zu: the binary CSR header ends early (%d "
                          "bytes)",
                          f->display, f->nhead, CSR_BIN_HEADER);
        else { /* a short text file: its bytes to the checks */
            f->binary = -1;
            const size_t held = f->nhead;
            f->nhead = 0;
            rc = upload_file_feed_text(f, f->head, held, err);
        }
    }
    if (!rc && f->binary == 1 && f->bytes != f->bin_bytes)
        rc = cls_fail(err, CLS_EINPUT,
                      "%s: the upload has %llu bytes but its header (%lld x %lld, %lld "
                      "entries) makes %llu (binary CSR)",
                      f->display, (unsigned long long)f->bytes, (long long)f->header.rows,
                      (long long)f->header.cols, (long long)f->header.entries,
                      (unsigned long long)f->bin_bytes);
    if (f->binary == 1)
        f->text_bytes = f->bytes; /* what admission counts: the arrays as they are */
    if (!rc && f->header_state == 0) {
        if (f->gz < 0) { /* fewer than two bytes in all */
            f->gz = 0;
            rc = upload_check(f, f->magic, (size_t)f->nmagic, err);
        }
        if (!rc && f->header_state == 0 && f->gz == 1 && !f->zs_end)
            /* the reader meets the same cut first (mm.c: src_read) */
            rc = cls_fail_line(err, CLS_EINPUT, 1,
                               "%s:1: gzip data is corrupt or truncated (unexpected end of file)",
                               f->display);
        if (!rc && f->header_state == 0) {
            /* the whole file is shorter than a complete header: the scan
             * decides at its end (a last line without '\n' is complete) */
            size_t used = 0;
            rc = mm_header_scan_feed(&f->scan, f->prefix ? f->prefix : "", f->prefix_len, 1,
                                     f->display, &f->header, &used, err);
            if (rc == CLS_OK)
                f->header_state = 1;
        }
    }
    if (f->gz == 0 && f->measure)
        f->text_bytes = f->bytes;
    if (f->gz == 1 && !f->zs_end)
        f->text_bytes = 0; /* cut short: not measured (the reader says where) */
    if (f->zs_live) {
        inflateEnd(&f->zs);
        f->zs_live = 0;
    }
    free(f->prefix);
    f->prefix = NULL;
    if (f->fd >= 0) {
        if (!rc && !f->no_sync && fsync(f->fd) != 0) {
            f->write_errno = errno;
            rc = cls_fail(err, CLS_EOTHER, "%s: fsync failed: %s", f->display,
                          strerror(f->write_errno));
        }
        if (close(f->fd) != 0 && !rc)
            rc = cls_fail(err, CLS_EOTHER, "%s: close failed: %s", f->display, strerror(errno));
        f->fd = -1;
    }
    return rc;
}

void upload_file_abort(upload_file *f)
{
    if (f->pre) {
        preparse_end(f->pre, 0);
        f->pre = NULL;
    }
    if (f->zs_live) {
        inflateEnd(&f->zs);
        f->zs_live = 0;
    }
    free(f->prefix);
    f->prefix = NULL;
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
    if (f->path[0])
        unlink(f->path);
}
