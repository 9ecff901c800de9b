/*
 * mm_scan.h: the Matrix Market reader's range parser (mm_scan.c), beneath
 * its driver (mm.c). A block of the entry section is cut at newlines into
 * ranges, one mm_scan_job each; mm_scan_run runs one pass over them on a
 * pool of threads: mm_scan_count (the newlines, which bound each range's
 * entries and so place its output), then one of the parsers, chosen by the
 * layout and the value kind, straight into the output. Not part of the
 * contract (mm.h).
 */
#ifndef CLS_MATRICES_MM_SCAN_H
#define CLS_MATRICES_MM_SCAN_H

#include <stddef.h>
#include <stdint.h>

#define MM_MAX_THREADS 256

enum { VK_NONE = 0, VK_REAL = 1, VK_INT = 2 };

typedef struct mm_scan_job {
    const char *beg, *end; /* end[-1] == '\n' */
    const char *lim;       /* end of the block: the fast scanners may read to here */
    int64_t nrows, ncols;
    int skew;
    int32_t *r, *c; /* where this range's entries go: the output at its offset */
    double *v;
    int64_t cap; /* newlines in the range: no range holds more entries */
    int64_t n;   /* entries parsed */
    int64_t nl;  /* newlines passed (all of them, or those before the error) */
    int err;     /* 1: msg holds the error, at line base + nl */
    char msg[320];
} mm_scan_job;

/* The passes, one range each (arg: an mm_scan_job): the parsers fill r, c,
 * v (coordinate; 0-based) or v (array), n, nl and on a bad line err, msg */
void *mm_scan_coord_real(void *job);
void *mm_scan_coord_int(void *job);
void *mm_scan_coord_pat(void *job);
void *mm_scan_array_real(void *job);
void *mm_scan_array_int(void *job);
void *mm_scan_count(void *job); /* cap = the range's newlines */

/* fn on jobs[0..n) with up to nt threads (the caller's included), each
 * claiming the next range until none is left */
void mm_scan_run(mm_scan_job *jobs, int n, int nt, void *(*fn)(void *));

/* Newlines before the (k+1)-th entry line of p[0..end) (k 0-based): where
 * an entry past the declared count stands. */
int64_t mm_scan_nl_before_entry(const char *p, const char *end, int64_t k);

#endif
