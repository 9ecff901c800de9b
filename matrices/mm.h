/*
 * mm.h: Matrix Market reader and writer, written from the NIST format
 * description (Boisvert, Pozo, Remington: "The Matrix Market Exchange
 * Formats: Initial Design", 1996), keeping mmio's banner vocabulary.
 *
 * Design: the header (banner, comments, size line) is read line by line; the
 * entry section is read in large blocks, each block split at newlines into
 * one byte range per thread, and each thread parses its range and counts
 * the newlines in it, so an error in any range is reported with its exact
 * file line (block start line + newlines before it). Storage grows only as
 * entries actually arrive: a declared size is a promise the file must keep,
 * never an allocation size. `.gz` files are read through zlib.
 *
 * Every failure is CLS_EINPUT with "FILE:LINE: what is wrong".
 *
 * A plain regular file is mapped and parsed in place instead of read in
 * blocks (one block, unless mm_set_block_size set a size), and the CSR is
 * assembled in parallel with the same thread count (csr_from_coo_take);
 * see mm.c for the phases and the CLSOLVE_MM_PROFILE / CLSOLVE_MM_NOMAP
 * environment switches.
 *
 * The header's vocabulary (layout, field, symmetry, the size line) and its
 * resumable scanner are mm_header.h's, which this header includes: the
 * scanner is the lower layer that the entry reader builds on.
 */
#ifndef CLS_MATRICES_MM_H
#define CLS_MATRICES_MM_H

#include <stddef.h>
#include <stdint.h>

#include "../common/error.h"
#include "csr.h"
#include "mm_header.h"

typedef struct mm_read_stats {
    int64_t stored_entries; /* entries read from the file */
    int64_t expanded_nnz;   /* after symmetric expansion, before duplicate merge */
    int64_t duplicates;     /* (i,j) pairs that appeared more than once, summed */
    int64_t bytes;          /* bytes of (decompressed) text parsed */
    int threads;            /* threads used for the entry section */
    double seconds;         /* wall time of the whole read */
} mm_read_stats;

typedef struct mm_read_options {
    int threads; /* 0: one per online CPU */
    /* At most this many threads (0: no cap). Unlike `threads` it only caps:
     * a small file still gets fewer threads by its size, and
     * CLSOLVE_MM_THREADS (a measuring switch) still decides where it is set. */
    int max_threads;
    /* Called between blocks of the entry section (a mapped file is then
     * parsed in 64 MiB windows) with the bytes read so far; a non-zero
     * return stops the read: CLS_EOTHER, "NAME: reading stopped". NULL:
     * never called. (The daemon's DELETE and drain stop a long read so.) */
    int (*progress)(void *ctx, int64_t bytes);
    void *progress_ctx;
    /* Memory the read may hold (the triplets, the CSR it becomes, the
     * dense sums below), in bytes; 0: no limit. Checked before each growth
     * of the output from what has arrived (never from the declaration
     * alone): over it the read fails, CLS_EOTHER "NAME:LINE: reading this
     * matrix needs at least N MB ...; M MB are available". */
    uint64_t max_memory;
    /* A plain file still being written (the daemon parses an upload as it
     * arrives): at the bytes' current end the reader calls grow(ctx, bytes
     * read so far), which waits and returns 1 when more have come, 0 at
     * the file's true end, or -1 to stop the read (CLS_EOTHER, "NAME:
     * reading stopped"). Such a file is read in blocks, never mapped. NULL:
     * the file is complete. */
    int (*grow)(void *ctx, int64_t have);
    void *grow_ctx;
} mm_read_options;

/* A coordinate matrix that declares more entries than it has cells (rows x
 * cols) and more than MM_DENSE_MIN_ENTRIES, with at most MM_DENSE_MAX_CELLS
 * cells, is summed as it streams: once the entries that arrived outnumber
 * the cells (duplicates are then certain, and the sums take less memory
 * than the triplets already held), they and every later block are added to
 * a dense array of sums in file order, so memory follows the cells, not the
 * entry count. Other matrices sum duplicates at assembly (csr.c, in
 * ascending value order). Whether a file is summed so depends on its header
 * only, and the sums are in file order wherever the switch falls, so every
 * read of a file gives the same bits. */
#define MM_DENSE_MAX_CELLS ((int64_t)1 << 24)
#define MM_DENSE_MIN_ENTRIES ((int64_t)1 << 20)

/* Bytes a read of this header holds at its peak, at most: `entries` stored
 * entries (what the data can back: min(declared, text bytes / 4)) in
 * triplets, their CSR (symmetric storage expanded), the row pointers, the
 * dense sums when they apply, and the read buffers. For admission. */
uint64_t mm_read_memory_estimate(const mm_header *h, int64_t entries);

/* Reads only the header of a file (plain or .gz). */
int mm_read_header(const char *path, mm_header *h, cls_error *err);

/* Where a file's entries are: a plain (uncompressed, regular) Matrix Market
 * file's entry section starts at byte data_off of file_size; binary: the
 * binary CSR form (csr_bin.h). Both 0 for gzip and pipes. */
typedef struct mm_where {
    int plain, binary;
    int64_t data_off, file_size;
} mm_where;

/* mm_read_header, and where the entries start (w may be NULL). */
int mm_read_header_at(const char *path, mm_header *h, mm_where *w, cls_error *err);

/* Ranged reads (mm_range.h builds on these): bytes [b, e) of a plain
 * coordinate file's entry section, b at the start of a line and e at the
 * start of one or at the end of the file, parsed as the whole-file read
 * parses them, into C as stored (0-based, not mirrored, duplicates kept),
 * the first line numbered `line`. The declared entry count is not checked:
 * the caller checks the sum over all spans. res->entries: the entries
 * parsed (on a bad line: those before it); res->next_line: the line after
 * the span. */
typedef struct mm_span_result {
    int64_t entries, next_line;
} mm_span_result;
int mm_read_span(const char *path, const mm_read_options *opt, const mm_header *h, int64_t b,
                 int64_t e, int64_t line, coo_matrix *C, mm_span_result *res, cls_error *err);
/* The same for a span's n bytes in memory (received from a rank that holds
 * the file: mm_range.h), path naming it in messages. */
int mm_read_span_mem(const char *path, const mm_read_options *opt, const mm_header *h,
                     const char *buf, size_t n, int64_t line, coo_matrix *C, mm_span_result *res,
                     cls_error *err);
/* '\n' bytes in p[0..n), 32 bytes a step */
int64_t mm_count_newlines(const char *p, size_t n);
/* The errors of the whole-file read, for a caller that summed the spans:
 * mm_span_fail_long reports the first entry beyond the declared count,
 * the k-th (0-based) entry of span [b, e) that starts at `line`;
 * mm_check_count refuses fewer entries than declared (the file ends at
 * last_line) and more rows than the entries back (mm.c's rule). */
int mm_span_fail_long(const char *path, const mm_header *h, int64_t b, int64_t e, int64_t line,
                      int64_t k, cls_error *err);
int mm_span_fail_long_mem(const char *path, const mm_header *h, const char *buf, size_t n,
                          int64_t line, int64_t k, cls_error *err);
int mm_check_count(const char *path, const mm_header *h, int64_t entries, int64_t last_line,
                   cls_error *err);

/* Reads a sparse (coordinate) or dense (array) real/integer/pattern matrix
 * into CSR, expanding symmetric and skew-symmetric storage and summing
 * duplicates. Complex is refused as not supported. opt and st may be NULL. */
int mm_read_csr(const char *path, const mm_read_options *opt, csr_matrix *A, mm_header *h,
                mm_read_stats *st, cls_error *err);

/* Reads a vector: an array file n x 1 (or 1 x n), real or integer, general.
 * A coordinate n x 1 file is accepted too (missing entries are 0). *v is
 * malloc'ed. */
int mm_read_vector(const char *path, double **v, int64_t *n, cls_error *err);

/* Reads right-hand sides: an array file n x k (column-major, as Matrix
 * Market stores arrays; a 1 x n file is one vector), real or integer,
 * general; a coordinate n x k file too (missing entries are 0). More than
 * max_cols columns are refused before any value is read. *v (n k values,
 * column c at v + c n) is malloc'ed. */
int mm_read_block(const char *path, int64_t max_cols, double **v, int64_t *rows, int64_t *cols,
                  cls_error *err);

/* The text of an array file without writing one (the daemon renders a
 * stored solution so): mm_array_header is its header for n x k values
 * (banner, comment lines, size line; malloc'ed, NULL without memory);
 * mm_format_values formats x[0..n) as its lines, each value exactly as
 * mm_write_vector writes it, on every core, into *out (malloc'ed, *len
 * bytes). A file written by mm_write_block is the header followed by the
 * values so formatted, byte for byte. */
char *mm_array_header(int64_t n, int64_t k, const char *comment);
int mm_format_values(const double *x, int64_t n, char **out, size_t *len, cls_error *err);
/* The same in pieces, one per core, each kept with its buffer from call to
 * call (a stream renders chunk after chunk without fresh memory to fault
 * in, and without joining the pieces): after mm_text_format, the text of
 * x[0..n) is piece[0..n) in order. Start from a zeroed mm_text. */
#define MM_TEXT_PIECES 64
typedef struct mm_text {
    int n;
    char *piece[MM_TEXT_PIECES];
    size_t len[MM_TEXT_PIECES], cap[MM_TEXT_PIECES];
} mm_text;
int mm_text_format(mm_text *t, const double *x, int64_t n, cls_error *err);
void mm_text_free(mm_text *t);

/* Writes the n x k column-major block x as an array file, as mm_write_vector. */
int mm_write_block(const char *path, const double *x, int64_t n, int64_t k, const char *comment,
                   cls_error *err);

/* Writes x as "%%MatrixMarket matrix array real general", n x 1, %.17g, so
 * doubles round-trip exactly. comment may be NULL. Written to a temporary
 * file and renamed, so a reader never sees half a file. */
int mm_write_vector(const char *path, const double *x, int64_t n, const char *comment,
                    cls_error *err);

/* Writes A as coordinate real; symmetric != 0 writes the lower triangle with
 * the "symmetric" banner (A must be symmetric). */
int mm_write_csr(const char *path, const csr_matrix *A, int symmetric, const char *comment,
                 cls_error *err);

/* Bytes per block of the entry section (default 64 MiB; 0 restores it).
 * Tests set it small so that small files cross many block boundaries.
 * A mapped file is one block unless a size other than the default is set. */
void mm_set_block_size(size_t bytes);

#endif
