/*
 * mm_header.h: the Matrix Market header (banner, comments, size line) as a
 * layer of its own beneath mm.h: the banner's vocabulary (mmio's words:
 * object, format, field, symmetry), the parsed header, and the resumable
 * scanner that both the file reader (mm.c) and the HTTP upload check
 * (net/upload.c) feed as bytes arrive.
 *
 * It is its own header so that the dependency runs one way: mm.c reads the
 * entries after a header this layer parsed, and this layer knows nothing of
 * entries, CSR or files.
 */
#ifndef CLS_MATRICES_MM_HEADER_H
#define CLS_MATRICES_MM_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "../common/error.h"

typedef enum { MM_COORDINATE, MM_ARRAY } mm_layout;
typedef enum { MM_REAL, MM_INTEGER, MM_PATTERN, MM_COMPLEX } mm_field;
typedef enum { MM_GENERAL, MM_SYMMETRIC, MM_SKEW_SYMMETRIC, MM_HERMITIAN } mm_symmetry;

typedef struct mm_header {
    mm_layout layout;
    mm_field field;
    mm_symmetry symmetry;
    int64_t rows, cols;
    int64_t entries;   /* coordinate: declared stored entries; array: values stored */
    int64_t size_line; /* 1-based line number of the size line */
} mm_header;

const char *mm_layout_name(mm_layout l);
const char *mm_field_name(mm_field f);
const char *mm_symmetry_name(mm_symmetry s);

/* The longest header accepted: banner, comments and size line together must
 * end within the first 16 MiB (the entry section's line limit). */
#define MM_MAX_HEADER ((uint64_t)16 << 20)

/* A resumable header parse (mm_header.c): feed the header as it arrives;
 * each byte is scanned once and comment lines are never kept. */
typedef struct mm_header_scan {
    int stage;        /* 0 in the banner line, 1 after it, 2 done */
    int in_comment;   /* inside a comment line whose '\n' has not come */
    int line_started; /* bytes of the current line were consumed */
    int64_t line;     /* the line being scanned (1-based) */
    uint64_t offset;  /* bytes consumed before the caller's buf[0] */
    size_t searched;  /* bytes of buf already searched for the pending '\n' */
    mm_header h;      /* the banner's words (stage >= 1) */
} mm_header_scan;

void mm_header_scan_init(mm_header_scan *sc);
/* buf[0..len) are the bytes after those consumed so far (the caller drops
 * *used bytes from the front after each call and appends what comes next).
 * Returns CLS_OK with *h filled and *used the header's length in buf (the
 * entry section starts at buf + *used); -1 when more is needed (*used: the
 * bytes that may be dropped: complete comment and blank lines, comment text,
 * white space); or CLS_EINPUT with "NAME:LINE: ..." (a header longer than
 * MM_MAX_HEADER included). at_eof: buf ends the input. */
int mm_header_scan_feed(mm_header_scan *sc, const char *buf, size_t len, int at_eof,
                        const char *name, mm_header *h, size_t *used, cls_error *err);

/* Parses the banner, comments and size line at the start of buf (len bytes;
 * need not be NUL-terminated). Returns CLS_OK and fills h, or CLS_EINPUT
 * with "NAME:LINE: ...", or -1 when buf ends before the size line is
 * complete (more data needed; the HTTP upload checks the header this way). */
int mm_parse_header_buf(const char *buf, size_t len, const char *name, mm_header *h,
                        cls_error *err);

#endif
