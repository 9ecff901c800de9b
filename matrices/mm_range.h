/*
 * mm_range.h: one Matrix Market file read by many MPI ranks at once, each
 * parsing only a byte range of it (no rank reads the whole file).
 *
 * The entry section [data_off, file_size) (mm_read_header_at) is cut into
 * nparts equal byte spans, each start moved forward to the next line start:
 * a line belongs to the span in which it starts, so every line is parsed by
 * exactly one rank, whatever its length and wherever the cuts fall (CRLF
 * files too: '\r' is white space to the parser, '\n' ends a line). The cut
 * needs only the bytes around it (pread), so a rank touches the pages of
 * its own span and a few bytes of its neighbour's.
 *
 * Line numbers: each rank counts the lines of its span (mm_range_lines);
 * an exclusive prefix sum over the ranks gives each span its first line,
 * and mm_read_span (mm.h) parses the span from that line, so a bad line is
 * reported at its true number by whichever rank holds it. The declared
 * entry count is checked on the sum (mm_check_count, mm_span_fail_long).
 *
 * Only plain coordinate files are read so: gzip has no random access,
 * array files number their values by position, and the files mm.c sums
 * densely (more entries than cells) need the whole file in one place. The
 * caller (solver/dinput_ranged.c) reads those on one rank.
 */
#ifndef CLS_MATRICES_MM_RANGE_H
#define CLS_MATRICES_MM_RANGE_H

#include <stdint.h>

#include "../common/error.h"
#include "mm.h"

/* 1 when h's file (at w) can be read in ranges: plain, coordinate, real,
 * integer or pattern, and not summed densely by the whole-file read. */
int mm_range_ok(const mm_header *h, const mm_where *w);

/* Span `part` of nparts: bytes [*b, *e) of the entry section. */
int mm_range_span(const char *path, const mm_where *w, int part, int nparts, int64_t *b, int64_t *e,
                  cls_error *err);

/* Lines that start in [b, e): its newlines, and one more for a last line
 * without one (only the file's end has it). */
int mm_range_lines(const char *path, int64_t b, int64_t e, int64_t *lines, cls_error *err);
/* The same for a span's n bytes in memory. */
int64_t mm_range_lines_mem(const char *p, size_t n);

#endif
