/*
 * mm.c: the Matrix Market reader (see mm.h for the contract): the sources,
 * the blocks and their ranges, the output and the public entry points. The
 * ranges' scanners and the thread pool are mm_scan.c, the header's scanner
 * mm_header.c, the writer mm_write.c.
 *
 * Reading happens in three stages:
 *
 *  1. The header (optional UTF-8 BOM, banner, comments, blank lines, size
 *     line) is scanned as it is read by mm_header.c's resumable scanner,
 *     which says "need more" until the size line is complete, looks at
 *     each byte once, lets complete comment lines go, and refuses a header
 *     that has not ended within MM_MAX_HEADER (16 MiB) bytes.
 *
 *  2. A plain regular file is mapped (mmap) and its entry section parsed in
 *     place as one block: no read() copy, no reader thread, and the newline
 *     count below gives the exact output bound before anything is
 *     allocated. Gzip, pipes and files the header read exhausted are read
 *     in large blocks instead (mm_block_size, 64 MiB by default), with a
 *     reader thread filling the next block while this one is parsed; a
 *     block is cut at its last newline (the partial line is carried into
 *     the next block). Either way a block is split at newlines into up to
 *     MM_RANGES_PER_THREAD byte ranges per thread, which threads claim
 *     dynamically (a slow core holds up one small range). A first parallel
 *     pass counts each range's newlines (16-byte vector compares), which
 *     bounds its entries and so gives it an offset in the output; a second
 *     pass parses each range with the hand-written scanners (mm_scan.c) straight
 *     into the output, counting the newlines it passes.
 *     Every range ends with '\n' (a final line without one gets a sentinel
 *     newline), so the scanners never test for the end of the buffer: every
 *     character class they loop over excludes '\n'. After the join the
 *     ranges are taken in file order: a range's first line is the block's
 *     first line plus the newlines of the ranges before it, so an error is
 *     reported at its exact line whatever the thread count.
 *
 *  3. Entries go to a coo_matrix (0-based); csr_from_coo_take (csr.c)
 *     assembles CSR with the same thread count, mirroring symmetric and
 *     skew-symmetric storage as it scatters, summing and counting
 *     duplicates; a COO already grouped by row gives its column and value
 *     arrays to the CSR without a copy.
 *
 * CLSOLVE_MM_PROFILE=1 prints the time of each phase to stderr;
 * CLSOLVE_MM_NOMAP=1 forces the block-read path (benchmarks, tests). A
 * mapped file that another process truncates while it is parsed raises
 * SIGBUS, as with any mmap reader; the line-length limit (16 MiB) is
 * checked for a mapped file only where a line crosses a block or is the
 * last one.
 *
 * Memory: a declared size is never an allocation size on its own. Output
 * capacity starts at min(declared, remaining_bytes / min_entry_bytes + 1) for
 * a plain file (an entry needs at least 4 bytes, "1 1\n"; an array value 2,
 * "1\n") and grows geometrically for gzip input, where the remaining size is
 * unknown; a block's newline count (data that is there) may raise it. The
 * row count is bounded by the rule in check_rows_backed().
 *
 * Decisions beyond the NIST text:
 *  - '%' lines are accepted anywhere in the entry section, as comments, and
 *    blank (whitespace-only) lines too; '\r' counts as white space, so CRLF
 *    files read like LF files; tabs separate fields like spaces.
 *  - "integer" values must be written as integers ("1.5" is an error).
 *  - complex files pass the header parser (it reports MM_COMPLEX) but are
 *    refused by mm_read_csr / mm_read_vector at the banner line.
 *  - array files read as CSR drop exact zeros (+0 and -0); an array with a
 *    zero dimension (e.g. "3 0") is a valid empty matrix.
 *  - a file that cannot be opened or read is CLS_EOTHER ("FILE: cannot
 *    open: ..."); corrupt gzip data is CLS_EINPUT at the current line.
 */
#include "mm.h"
#include "../common/bigmem.h"
#include "csr_bin.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/timer.h"
#include "mm_lex.h"
#include "mm_scan.h"

#define MM_DEFAULT_BLOCK ((size_t)64 << 20)
#define MM_MAX_LINE ((size_t)16 << 20) /* longest line accepted in the entry section */
#define MM_MIN_RANGE 256 /* bytes per range below which fewer ranges are used */
#define MM_MIN_THREAD_BYTES (256u << 10) /* bytes per parse thread at least */
#define MM_RANGES_PER_THREAD 8 /* ranges are claimed dynamically: load balance */
#define MM_FOLLOW_MIN ((size_t)8 << 20) /* a growing file: the least a block waits for */

static size_t mm_block_size = MM_DEFAULT_BLOCK;

void mm_set_block_size(size_t bytes)
{
    mm_block_size = bytes ? (bytes < 16 ? 16 : bytes) : MM_DEFAULT_BLOCK;
}

/* ------------------------------------------------------------------------ */
/* input: plain file or gzip stream                                          */

typedef struct mm_src {
    int fd;
    gzFile gz;
    int64_t file_size; /* plain regular file: its size; otherwise -1 */
    int64_t consumed;  /* bytes delivered so far (decompressed for gzip) */
    int eof;
    char zmsg[128]; /* zlib's word on the last gzip error */
    /* a file still being written (mm_read_options.grow): asked at its
     * current end whether more is coming */
    int (*grow)(void *ctx, int64_t have);
    void *grow_ctx;
} mm_src;

static int src_open(mm_src *s, const char *path, cls_error *err)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->file_size = -1;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return cls_fail(err, CLS_EOTHER, "%s: cannot read: is a directory", path);
    }
    unsigned char magic[2];
    ssize_t got = pread(fd, magic, 2, 0);
    if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        s->gz = gzdopen(fd, "rb");
        if (!s->gz) {
            close(fd);
            return cls_fail(err, CLS_EOTHER, "%s: cannot open gzip stream", path);
        }
        gzbuffer(s->gz, 1u << 20);
        return CLS_OK;
    }
    s->fd = fd;
    if (S_ISREG(st.st_mode))
        s->file_size = (int64_t)st.st_size;
    return CLS_OK;
}

static void src_close(mm_src *s)
{
    if (s->gz)
        gzclose(s->gz);
    else if (s->fd >= 0)
        close(s->fd);
    s->gz = NULL;
    s->fd = -1;
}

/* Bytes a plain file still holds, or -1 when unknown (gzip, pipes). */
static int64_t src_remaining(const mm_src *s)
{
    if (s->gz || s->file_size < 0)
        return -1;
    return s->file_size > s->consumed ? s->file_size - s->consumed : 0;
}

/* Reads up to n bytes; fewer only at end of input (then s->eof is set).
 * Returns the count, or -1 with err filled. */
static int64_t src_read(mm_src *s, char *buf, size_t n, const char *path, int64_t line,
                        cls_error *err)
{
    size_t done = 0;
    while (done < n && !s->eof) {
        size_t want = n - done;
        if (s->gz) {
            if (want > (1u << 30))
                want = 1u << 30;
            int r = gzread(s->gz, buf + done, (unsigned)want);
            /* r == 0 may be the end, or a truncated stream that gzread
             * reports as a quiet end of file: gzerror tells them apart */
            int zerr = Z_OK;
            const char *zmsg = r <= 0 ? gzerror(s->gz, &zerr) : NULL;
            if (r < 0 || zerr != Z_OK) {
                if (zerr == Z_ERRNO)
                    return cls_fail(err, CLS_EOTHER, "%s: read error: %s", path,
                                    strerror(errno)),
                           -1;
                snprintf(s->zmsg, sizeof s->zmsg, "%s", zmsg ? zmsg : "zlib error");
                return cls_fail_line(err, CLS_EINPUT, line,
                                     "%s:%lld: gzip data is corrupt or truncated (%s)", path,
                                     (long long)line, s->zmsg),
                       -1;
            }
            if (r == 0) {
                s->eof = 1;
                break;
            }
            done += (size_t)r;
        } else {
            ssize_t r = read(s->fd, buf + done, want);
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                return cls_fail(err, CLS_EOTHER, "%s: read error: %s", path, strerror(errno)),
                       -1;
            }
            if (r == 0 && s->grow) { /* the writer's end, not the file's? */
                if (done >= MM_FOLLOW_MIN)
                    break; /* parse what has come while more arrives */
                int g = s->grow(s->grow_ctx, s->consumed + (int64_t)done);
                if (g > 0)
                    continue;
                if (g < 0)
                    return cls_fail(err, CLS_EOTHER, "%s: reading stopped", path), -1;
            }
            if (r == 0) {
                s->eof = 1;
                break;
            }
            done += (size_t)r;
        }
    }
    s->consumed += (int64_t)done;
    return (int64_t)done;
}

/* Reads from s until the header is complete (mm_header.c scans each byte
 * once and lets complete comment lines go, so the buffer holds at most the
 * banner or size line plus a chunk). On success *bufp holds *lenp bytes
 * (capacity *capp) and the entry section starts at *hdr_end. */
static int read_header_stream(mm_src *s, const char *path, mm_header *h, char **bufp,
                              size_t *lenp, size_t *capp, size_t *hdr_end, cls_error *err)
{
    size_t chunk = mm_block_size < 65536 ? mm_block_size : 65536;
    size_t start = 0, len = 0, cap = 0; /* unscanned bytes: buf[start..len) */
    char *buf = NULL;
    mm_header_scan sc;
    mm_header_scan_init(&sc);
    for (;;) {
        if (start > 0 && cap - len < chunk) { /* drop what the scan let go */
            memmove(buf, buf + start, len - start);
            len -= start;
            start = 0;
        }
        if (cap - len < chunk) {
            size_t ncap = cap ? cap * 2 : chunk + 1;
            while (ncap - len < chunk)
                ncap *= 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return cls_fail(err, CLS_EOTHER, "%s: out of memory reading the header", path);
            }
            buf = nb;
            cap = ncap;
        }
        int64_t got = src_read(s, buf + len, chunk, path, 1, err);
        if (got < 0) {
            free(buf);
            return err ? err->code : CLS_EOTHER;
        }
        len += (size_t)got;
        size_t used = 0;
        int rc = mm_header_scan_feed(&sc, buf + start, len - start, s->eof, path, h, &used, err);
        if (rc == -1 && !s->eof) {
            start += used;
            continue;
        }
        if (rc) {
            free(buf);
            return rc == -1 ? mm_fail_line(err, path, 1, "file ends before the size line") : rc;
        }
        *bufp = buf;
        *lenp = len;
        *capp = cap;
        *hdr_end = start + used;
        return CLS_OK;
    }
}

/* 1 when path holds the binary CSR form (csr_bin.h: its magic); its
 * first bytes (up to the header's 32) in hb, their count in *n */
static int mm_is_binary(const char *path, unsigned char hb[CSR_BIN_HEADER], size_t *n)
{
    FILE *f = fopen(path, "rb");
    *n = f ? fread(hb, 1, CSR_BIN_HEADER, f) : 0;
    if (f)
        fclose(f);
    return *n >= 8 && csr_bin_is_magic(hb, 8);
}

int mm_read_header(const char *path, mm_header *h, cls_error *err)
{
    return mm_read_header_at(path, h, NULL, err);
}

int mm_read_header_at(const char *path, mm_header *h, mm_where *w, cls_error *err)
{
    unsigned char hb[CSR_BIN_HEADER];
    size_t n;
    if (w)
        memset(w, 0, sizeof *w);
    if (mm_is_binary(path, hb, &n)) { /* the binary CSR form: its header */
        uint64_t bytes;
        if (n != sizeof hb)
            return cls_fail(err, CLS_EINPUT, "%s: byte 0: shorter than the %d-byte header", path,
                            CSR_BIN_HEADER);
        if (w)
            w->binary = 1;
        return csr_bin_header(hb, path, h, &bytes, err);
    }
    mm_src s;
    int rc = src_open(&s, path, err);
    if (rc)
        return rc;
    char *buf = NULL;
    size_t len, cap, end;
    rc = read_header_stream(&s, path, h, &buf, &len, &cap, &end, err);
    if (!rc && w && !s.gz && s.file_size >= 0) {
        /* the bytes delivered, less those of the buffer the header did not use */
        w->plain = 1;
        w->file_size = s.file_size;
        w->data_off = s.consumed - (int64_t)(len - end);
    }
    free(buf);
    src_close(&s);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* the entry-section driver                                                  */

typedef struct mm_ctx {
    const char *path;
    mm_src src;
    mm_header h;
    int nthreads;
    int threads_asked; /* the caller named the thread count: no cap by size */
    int array;
    int vk;
    size_t min_entry_bytes; /* 4 for coordinate ("1 1\n"), 2 for array ("1\n") */
    char *buf, *buf2;
    size_t len, cap, cap2; /* bytes in buf not yet parsed; capacities */
    int64_t line;    /* line number of buf[0] */
    int64_t count;   /* entries (values) accepted */
    int64_t stored;  /* of which in the output arrays (below the dense sums) */
    int64_t err_count; /* a bad line: the entries before it */
    int span;          /* one rank's span of a ranged read: h.entries bounds nothing here */
    /* dense summation (mm.h): sums and the cells seen, row-major */
    int dense;
    double *dsum;
    uint64_t *dseen;
    int64_t dense_dups;
    mm_scan_job *jobs;
    /* output: coordinate entries (0-based) or array values */
    coo_matrix coo;
    double *vals;
    int64_t vcap;
    int64_t bytes;
    /* a plain file is mapped: the entry section is map[map_off..map_len) */
    char *map;
    size_t map_len, map_off;
    /* phase times (CLSOLVE_MM_PROFILE) */
    double t_count, t_reserve, t_parse, t_gaps;
    const mm_read_options *opt; /* progress callback (may be NULL) */
} mm_ctx;

/* The caller's progress callback, between blocks: may stop the read. */
static int ctx_progress(mm_ctx *x, int64_t bytes, cls_error *err)
{
    if (x->opt && x->opt->progress && x->opt->progress(x->opt->progress_ctx, bytes))
        return cls_fail(err, CLS_EOTHER, "%s: reading stopped", x->path);
    return CLS_OK;
}

static int ctx_fail(mm_ctx *x, cls_error *err, int64_t line, const char *what)
{
    return mm_fail_line(err, x->path, line, what);
}

static int oom(mm_ctx *x, cls_error *err)
{
    return cls_fail(err, CLS_EOTHER, "%s: out of memory", x->path);
}


/* Bytes the read holds with room for ncap entries: the output arrays, the
 * CSR they become, the row pointers, the dense sums. */
static uint64_t ctx_memory(const mm_ctx *x, int64_t ncap)
{
    int sym = x->h.symmetry != MM_GENERAL;
    uint64_t cells = (uint64_t)x->h.rows * (uint64_t)x->h.cols;
    uint64_t out = (uint64_t)ncap * (x->array ? 8u : 16u);
    int dense_on = x->dsum != NULL || (x->dense && (uint64_t)ncap > cells);
    uint64_t kept = dense_on && cells < (uint64_t)ncap ? cells : (uint64_t)ncap; /* CSR entries */
    uint64_t csr = kept * (sym ? 24u : 12u) + 8u * ((uint64_t)x->h.rows + 1);
    uint64_t dense = dense_on ? cells * 8u + cells / 8u : 0;
    return out + csr + dense;
}

uint64_t mm_read_memory_estimate(const mm_header *h, int64_t entries)
{
    mm_ctx x;
    memset(&x, 0, sizeof x);
    x.h = *h;
    x.array = h->layout == MM_ARRAY;
    int64_t cells = h->rows * h->cols;
    x.dense = !x.array && h->rows > 0 && h->cols > 0 && h->cols <= MM_DENSE_MAX_CELLS / h->rows &&
              h->entries > cells && h->entries > MM_DENSE_MIN_ENTRIES;
    int64_t n = entries < h->entries ? entries : h->entries;
    if (x.dense && n > (int64_t)(MM_DEFAULT_BLOCK / 4))
        n = (int64_t)(MM_DEFAULT_BLOCK / 4); /* one block's entries at a time */
    return ctx_memory(&x, n) + 2 * MM_DEFAULT_BLOCK;
}

/* Makes room for `need` entries in the output, never beyond what the
 * declaration allows (the caller checks that first), nor beyond the
 * caller's memory limit. */
static int out_reserve(mm_ctx *x, int64_t need, cls_error *err)
{
    int64_t cap = x->array ? x->vcap : x->coo.cap;
    if (need <= cap)
        return CLS_OK;
    /* a growing file (grow): its size is unknown, so the output grows with
     * it; doubling halves the moves of 1.5x */
    int64_t ncap = x->src.grow ? 2 * cap : cap + cap / 2;
    if (ncap < need)
        ncap = need;
    if (ncap < 4096)
        ncap = 4096;
    if (!x->span && ncap > x->h.entries)
        ncap = x->h.entries;
    if (ncap < need)
        ncap = need;
    uint64_t limit = x->opt ? x->opt->max_memory : 0;
    if (limit && ctx_memory(x, ncap) > limit && ctx_memory(x, need) <= limit)
        ncap = need; /* no slack, then */
    if (limit && ctx_memory(x, ncap) > limit) {
        char msg[320];
        snprintf(msg, sizeof msg,
                 "reading this matrix needs at least %llu MB of memory (%lld entries so far, %lld "
                 "declared on line %lld); %llu MB are available",
                 (unsigned long long)(ctx_memory(x, need) >> 20), (long long)(x->count),
                 (long long)x->h.entries, (long long)x->h.size_line,
                 (unsigned long long)(limit >> 20));
        return cls_fail_line(err, CLS_EOTHER, x->line, "%s:%lld: %s", x->path, (long long)x->line,
                             msg);
    }
    if (x->array) {
        double *nv = realloc(x->vals, (size_t)ncap * sizeof *nv);
        if (!nv)
            return oom(x, err);
        x->vals = nv;
        x->vcap = ncap;
        if (!x->src.grow)
            cls_hint_huge(nv, (size_t)ncap * sizeof *nv);
    } else {
        int32_t *nr = realloc(x->coo.row, (size_t)ncap * sizeof *nr);
        if (nr)
            x->coo.row = nr;
        int32_t *nc = realloc(x->coo.col, (size_t)ncap * sizeof *nc);
        if (nc)
            x->coo.col = nc;
        double *nv = realloc(x->coo.val, (size_t)ncap * sizeof *nv);
        if (nv)
            x->coo.val = nv;
        if (!nr || !nc || !nv)
            return oom(x, err);
        x->coo.cap = ncap;
        if (!x->src.grow) { /* a growing file's output moves as it grows */
            cls_hint_huge(nr, (size_t)ncap * sizeof *nr);
            cls_hint_huge(nc, (size_t)ncap * sizeof *nc);
            cls_hint_huge(nv, (size_t)ncap * sizeof *nv);
        }
    }
    return CLS_OK;
}

/* Fewer entries (values) than the size line declares: the file ends at `line`. */
static int fail_short(const char *path, const mm_header *h, int64_t count, int64_t line,
                      cls_error *err)
{
    char msg[256];
    snprintf(msg, sizeof msg, "file ends after %lld of %lld %s declared on line %lld",
             (long long)count, (long long)h->entries,
             h->layout == MM_ARRAY ? "values" : "entries", (long long)h->size_line);
    return mm_fail_line(err, path, line, msg);
}

/* More than declared: the first entry beyond, at `line`. */
static int fail_long(const char *path, const mm_header *h, int64_t line, cls_error *err)
{
    char msg[512];
    snprintf(msg, sizeof msg, "more %s than the %lld declared on line %lld",
             h->layout == MM_ARRAY ? "values" : "entries", (long long)h->entries,
             (long long)h->size_line);
    return mm_fail_line(err, path, line, msg);
}

/* Parses buf[0..n), which ends with '\n', with up to x->nthreads threads
 * over up to MM_RANGES_PER_THREAD ranges each. Pass 1 counts each range's
 * newlines, which bounds its entries; pass 2 parses each range straight
 * into the output at offset count + newlines of the ranges before it. Blank
 * and comment lines leave gaps, closed after. */
/* Adds the block's entries to the dense sums, in file order (a cell's
 * first entry is its value as written: +0 + -0 would lose the sign). */
static void dense_fold(mm_ctx *x)
{
    const int64_t nc = x->h.cols;
    for (int64_t k = 0; k < x->stored; k++) {
        int64_t cell = (int64_t)x->coo.row[k] * nc + x->coo.col[k];
        uint64_t bit = (uint64_t)1 << (cell & 63);
        if (x->dseen[cell >> 6] & bit) {
            x->dsum[cell] += x->coo.val[k];
            x->dense_dups++;
        } else {
            x->dseen[cell >> 6] |= bit;
            x->dsum[cell] = x->coo.val[k];
        }
    }
    x->stored = 0;
}

/* Starts the dense sums once the entries that arrived outnumber the cells
 * (so the sums take less than the triplets already held), folding in
 * those entries first: the sums are in file order wherever the switch
 * falls. Idempotent. */
static int dense_start(mm_ctx *x, cls_error *err)
{
    if (x->dsum)
        return CLS_OK;
    int64_t cells = x->h.rows * x->h.cols;
    uint64_t limit = x->opt ? x->opt->max_memory : 0;
    if (limit && ctx_memory(x, x->stored + 1) > limit) {
        char msg[320];
        snprintf(msg, sizeof msg,
                 "reading this matrix needs at least %llu MB of memory (%lld entries so far, %lld "
                 "declared on line %lld); %llu MB are available",
                 (unsigned long long)(ctx_memory(x, x->stored + 1) >> 20), (long long)x->count,
                 (long long)x->h.entries, (long long)x->h.size_line,
                 (unsigned long long)(limit >> 20));
        return cls_fail_line(err, CLS_EOTHER, x->line, "%s:%lld: %s", x->path, (long long)x->line,
                             msg);
    }
    x->dsum = malloc((size_t)cells * sizeof *x->dsum);
    x->dseen = calloc((size_t)(cells + 63) / 64, sizeof *x->dseen);
    if (!x->dsum || !x->dseen)
        return oom(x, err);
    dense_fold(x);
    return CLS_OK;
}

/* The dense sums as triplets, row by row (replacing the output arrays). */
static int dense_to_coo(mm_ctx *x, cls_error *err)
{
    int64_t cells = x->h.rows * x->h.cols, n = 0;
    for (int64_t w = 0; w < (cells + 63) / 64; w++)
        n += __builtin_popcountll(x->dseen[w]);
    coo_free(&x->coo);
    coo_init(&x->coo);
    x->coo.nrows = x->h.rows;
    x->coo.ncols = x->h.cols;
    if (out_reserve(x, n > 0 ? n : 1, err))
        return err->code;
    int64_t k = 0;
    for (int64_t cell = 0; cell < cells; cell++)
        if (x->dseen[cell >> 6] & ((uint64_t)1 << (cell & 63))) {
            x->coo.row[k] = (int32_t)(cell / x->h.cols);
            x->coo.col[k] = (int32_t)(cell % x->h.cols);
            x->coo.val[k] = x->dsum[cell];
            k++;
        }
    x->stored = k;
    free(x->dsum);
    free(x->dseen);
    x->dsum = NULL;
    x->dseen = NULL;
    return CLS_OK;
}

static int parse_block(mm_ctx *x, const char *buf, size_t n, cls_error *err)
{
    double t0 = cls_now();
    int nthreads = x->nthreads;
    /* unless the caller named the count (the tests split small inputs on
     * purpose), a thread for every MM_MIN_THREAD_BYTES at most: starting one costs
     * tens of microseconds, twice per block (count, parse), and a small
     * file is parsed in less (a 45 KB 1138_bus took 2.6 ms on 16 threads
     * of an H200 host, the daemon's small jobs one after another) */
    if (!x->threads_asked && (size_t)nthreads > n / MM_MIN_THREAD_BYTES)
        nthreads = n / MM_MIN_THREAD_BYTES > 1 ? (int)(n / MM_MIN_THREAD_BYTES) : 1;
    int nt = nthreads > 1 ? nthreads * MM_RANGES_PER_THREAD : 1;
    if ((size_t)nt > n / MM_MIN_RANGE)
        nt = (int)(n / MM_MIN_RANGE);
    if (nt < 1)
        nt = 1;
    void *(*fn)(void *) = x->array ? (x->vk == VK_INT ? mm_scan_array_int : mm_scan_array_real)
                          : x->vk == VK_INT  ? mm_scan_coord_int
                          : x->vk == VK_NONE ? mm_scan_coord_pat
                                             : mm_scan_coord_real;
    mm_scan_job *jobs = x->jobs;
    size_t b = 0;
    for (int t = 0; t < nt; t++) {
        mm_scan_job *J = &jobs[t];
        size_t e;
        if (t == nt - 1) {
            e = n;
        } else {
            size_t target = (size_t)((uint64_t)n * (uint64_t)(t + 1) / (uint64_t)nt);
            if (target <= b) {
                e = b;
            } else {
                const char *q = memchr(buf + target - 1, '\n', n - (target - 1));
                e = (size_t)(q - buf) + 1;
            }
        }
        J->beg = buf + b;
        J->end = buf + e;
        J->lim = buf + n;
        J->nrows = x->h.rows;
        J->ncols = x->h.cols;
        J->skew = x->h.symmetry == MM_SKEW_SYMMETRIC;
        J->n = J->nl = J->cap = 0;
        J->err = 0;
        b = e;
    }
    mm_scan_run(jobs, nt, nthreads, mm_scan_count);
    double t1 = cls_now();
    int64_t bound = 0;
    for (int t = 0; t < nt; t++)
        bound += jobs[t].cap;
    int rc = out_reserve(x, x->stored + bound, err);
    if (rc)
        return rc;
    int64_t off = x->stored;
    for (int t = 0; t < nt; t++) {
        mm_scan_job *J = &jobs[t];
        if (x->array) {
            J->r = J->c = NULL;
            J->v = x->vals + off;
        } else {
            J->r = x->coo.row + off;
            J->c = x->coo.col + off;
            J->v = x->coo.val + off;
        }
        off += J->cap;
    }
    double t2 = cls_now();
    mm_scan_run(jobs, nt, nthreads, fn);
    double t3 = cls_now();
    x->t_count += t1 - t0;
    x->t_reserve += t2 - t1;
    x->t_parse += t3 - t2;

    /* take the ranges in file order */
    int64_t base = x->line, total = 0;
    for (int t = 0; t < nt; t++) {
        mm_scan_job *J = &jobs[t];
        if (!x->span && x->count + total + J->n > x->h.entries) {
            int64_t k = x->h.entries - x->count - total;
            return fail_long(x->path, &x->h, base + mm_scan_nl_before_entry(J->beg, J->end, k),
                             err);
        }
        if (J->err) {
            x->err_count = x->count + total + J->n;
            return ctx_fail(x, err, base + J->nl, J->msg);
        }
        total += J->n;
        base += J->nl;
    }
    /* close the gaps left by blank and comment lines */
    int64_t dst = x->stored;
    for (int t = 0; t < nt; t++) {
        mm_scan_job *J = &jobs[t];
        size_t k = (size_t)J->n;
        if (k && J->v != (x->array ? x->vals : x->coo.val) + dst) {
            if (x->array) {
                memmove(x->vals + dst, J->v, k * sizeof *J->v);
            } else {
                memmove(x->coo.row + dst, J->r, k * sizeof *J->r);
                memmove(x->coo.col + dst, J->c, k * sizeof *J->c);
                memmove(x->coo.val + dst, J->v, k * sizeof *J->v);
            }
        }
        dst += J->n;
    }
    x->count += dst - x->stored;
    x->stored = dst;
    x->line = base;
    x->t_gaps += cls_now() - t3;
    if (x->dense && !x->dsum && x->stored > x->h.rows * x->h.cols)
        return dense_start(x, err); /* more entries than cells: backed */
    if (x->dsum)
        dense_fold(x);
    return CLS_OK;
}

static void ctx_free(mm_ctx *x)
{
    if (x->map)
        munmap(x->map, x->map_len);
    src_close(&x->src);
    free(x->buf);
    free(x->buf2);
    free(x->jobs);
    coo_free(&x->coo);
    free(x->vals);
    free(x->dsum);
    free(x->dseen);
    memset(x, 0, sizeof *x);
    x->src.fd = -1;
}

static int resolve_threads(const mm_read_options *opt)
{
    int nt = opt && opt->threads > 0 ? opt->threads : 0;
    const char *env = getenv("CLSOLVE_MM_THREADS"); /* a measuring switch */
    const int env_nt = env ? atoi(env) : 0;
    if (!nt && env_nt > 0)
        nt = env_nt;
    if (!nt) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        nt = c > 0 ? (int)c : 1;
    }
    if (opt && opt->max_threads > 0 && nt > opt->max_threads && env_nt <= 0)
        nt = opt->max_threads; /* a cap; the measuring switch still decides */
    return nt > MM_MAX_THREADS ? MM_MAX_THREADS : nt;
}

/* Opens the file and reads the header; the unread rest stays in x->buf. */
static int ctx_open(mm_ctx *x, const char *path, int nthreads, const mm_read_options *opt,
                    cls_error *err)
{
    memset(x, 0, sizeof *x);
    x->path = path;
    x->nthreads = nthreads;
    int rc = src_open(&x->src, path, err);
    if (rc)
        return rc;
    if (opt && opt->grow && !x->src.gz) {
        /* its size is not known yet: read in blocks as it grows, never mapped */
        x->src.grow = opt->grow;
        x->src.grow_ctx = opt->grow_ctx;
        x->src.file_size = -1;
    }
    size_t hdr_end = 0;
    rc = read_header_stream(&x->src, path, &x->h, &x->buf, &x->len, &x->cap, &hdr_end, err);
    if (rc)
        return rc;
    memmove(x->buf, x->buf + hdr_end, x->len - hdr_end);
    x->len -= hdr_end;
    x->line = x->h.size_line + 1;
    if (x->h.field == MM_COMPLEX)
        return ctx_fail(x, err, 1, "complex matrices are not supported");
    return CLS_OK;
}

static int ensure_cap(char **buf, size_t *cap, size_t need)
{
    if (*cap >= need)
        return 0;
    char *nb = realloc(*buf, need);
    if (!nb)
        return -1;
    *buf = nb;
    *cap = need;
    return 0;
}

/* Bytes to ask for next: a block, or for a plain file what is left plus
 * one (so that the short read reveals the end at once). */
static size_t read_want(const mm_ctx *x, size_t block)
{
    int64_t rem = src_remaining(&x->src);
    if (rem >= 0 && (uint64_t)rem + 1 < block)
        return (size_t)rem + 1;
    return block;
}

typedef struct prefetch {
    pthread_t tid;
    mm_src *src;
    char *dst;
    size_t want;
    const char *path;
    int64_t got;
    cls_error err;
} prefetch;

static void *prefetch_run(void *arg)
{
    prefetch *pf = arg;
    pf->got = src_read(pf->src, pf->dst, pf->want, pf->path, 0, &pf->err);
    return NULL;
}

/* Maps a plain regular file that the header read did not exhaust, so the
 * parse threads read the page cache directly: no read() copy, no reader
 * thread, and the whole entry section is one block (the newline count gives
 * an exact output bound before anything is allocated). Returns 0 (the
 * caller reads blocks) for gzip, pipes, small files and when mmap fails.
 * CLSOLVE_MM_NOMAP=1 forces the read path (benchmarks compare the two). */
static int map_entries(mm_ctx *x)
{
    mm_src *s = &x->src;
    if (s->gz || s->fd < 0 || s->file_size <= 0 || s->eof)
        return 0;
    const char *no = getenv("CLSOLVE_MM_NOMAP");
    if (no && *no && strcmp(no, "0") != 0)
        return 0;
    if (s->consumed > s->file_size || (uint64_t)s->consumed < (uint64_t)x->len ||
        (uint64_t)s->file_size > (uint64_t)SIZE_MAX)
        return 0;
    void *m = mmap(NULL, (size_t)s->file_size, PROT_READ, MAP_PRIVATE, s->fd, 0);
    if (m == MAP_FAILED)
        return 0;
    x->map = m;
    x->map_len = (size_t)s->file_size;
    x->map_off = (size_t)s->consumed - x->len;
    x->len = 0;
    return 1;
}

/* Parses the mapped entry section: complete lines straight from the map (in
 * blocks of mm_block_size only when a test set one), the last line, if it
 * has no '\n', from a copy with a sentinel newline. */
static int read_mapped(mm_ctx *x, cls_error *err)
{
    const char *base = x->map + x->map_off;
    size_t total = x->map_len - x->map_off, pos = 0;
    size_t block = mm_block_size != MM_DEFAULT_BLOCK ? mm_block_size
                   : x->opt && x->opt->progress      ? MM_DEFAULT_BLOCK
                                                     : total;
    if (block < total && !x->dense) {
        /* blocks (a progress callback: the daemon's cancel and drain) grew
         * the output block by block: 0.63-0.85 s of the daemon's 1.0 s
         * read of poisson3d 200 (589 MB) on a 16-core H200 host, against
         * one reservation in the CLI's one-block read. What the mapped
         * bytes back up (a plain file's first reservation, see the top)
         * is reserved once; a memory limit it would pass falls back to
         * growing. */
        int64_t cap0 = (int64_t)(total / x->min_entry_bytes) + 1;
        if (!x->span && cap0 > x->h.entries)
            cap0 = x->h.entries;
        uint64_t limit = x->opt ? x->opt->max_memory : 0;
        double t0 = cls_now();
        if (cap0 > 0 && (!limit || ctx_memory(x, cap0) <= limit)) {
            int rc = out_reserve(x, cap0, err);
            if (rc)
                return rc;
        }
        x->t_reserve += cls_now() - t0;
    }
    while (pos < total) {
        const char *s = base + pos;
        size_t rem = total - pos, win = rem < block ? rem : block, k = win;
        while (k > 0 && s[k - 1] != '\n')
            k--;
        if (k == 0 && win < rem) { /* a line longer than the block */
            const char *q = memchr(s + win, '\n', rem - win);
            if (q && (size_t)(q - s) > MM_MAX_LINE)
                return ctx_fail(x, err, x->line, "line is longer than 16 MiB");
            if (q)
                k = (size_t)(q - s) + 1;
        }
        if (k == 0)
            break; /* the last line, without '\n' */
        int rc = parse_block(x, s, k, err);
        if (!rc)
            rc = ctx_progress(x, (int64_t)(x->map_off + pos + k), err);
        if (rc)
            return rc;
        pos += k;
    }
    if (pos < total) {
        size_t t = total - pos;
        if (t > MM_MAX_LINE)
            return ctx_fail(x, err, x->line, "line is longer than 16 MiB");
        if (ensure_cap(&x->buf, &x->cap, t + 1))
            return oom(x, err);
        memcpy(x->buf, base + pos, t);
        x->buf[t] = '\n'; /* sentinel: every range ends with '\n' */
        int rc = parse_block(x, x->buf, t + 1, err);
        if (rc)
            return rc;
    }
    x->bytes = (int64_t)x->map_len;
    return CLS_OK;
}

static int read_blocks(mm_ctx *x, cls_error *err);

/* Reads the entry section into x->coo or x->vals and checks the count. */
static int read_entries(mm_ctx *x, cls_error *err)
{
    x->array = x->h.layout == MM_ARRAY;
    x->vk = x->h.field == MM_PATTERN ? VK_NONE : x->h.field == MM_INTEGER ? VK_INT : VK_REAL;
    x->min_entry_bytes = x->array ? 2 : 4;
    x->jobs = calloc((size_t)x->nthreads * MM_RANGES_PER_THREAD, sizeof *x->jobs);
    if (!x->jobs)
        return oom(x, err);
    x->coo.nrows = x->h.rows;
    x->coo.ncols = x->h.cols;
    int64_t cells = x->h.rows * x->h.cols; /* both < 2^31 */
    x->dense = !x->array && x->h.rows > 0 && x->h.cols > 0 && cells <= MM_DENSE_MAX_CELLS &&
               x->h.entries > cells && x->h.entries > MM_DENSE_MIN_ENTRIES;
    int rc = map_entries(x) ? read_mapped(x, err) : read_blocks(x, err);
    if (rc)
        return rc;
    if (x->dsum && x->count == x->h.entries && (rc = dense_to_coo(x, err)))
        return rc;
    if (x->count < x->h.entries)
        return fail_short(x->path, &x->h, x->count, x->line - 1, err);
    x->coo.nnz = x->stored;
    return CLS_OK;
}

/* The read path (gzip, pipes, small files): blocks of mm_block_size. */
static int read_blocks(mm_ctx *x, cls_error *err)
{
    /* initial capacity: what the file can back up, never just the declaration */
    int64_t rem = src_remaining(&x->src);
    int64_t cap0 = rem >= 0 ? (rem + (int64_t)x->len) / (int64_t)x->min_entry_bytes + 1 : 4096;
    if (cap0 > x->h.entries)
        cap0 = x->h.entries;
    if (x->dense && cap0 > (int64_t)(mm_block_size / x->min_entry_bytes) + 1)
        cap0 = (int64_t)(mm_block_size / x->min_entry_bytes) + 1; /* a block at a time */
    if (cap0 > 0) {
        int rc = out_reserve(x, cap0, err);
        if (rc)
            return rc;
    }

    /* Double buffering: while the threads parse block k in cur, a reader
     * thread reads block k+1 into nxt, behind the partial line carried
     * over from block k. */
    size_t block = mm_block_size;
    int need_more = !x->src.eof; /* cur needs a synchronous read first */
    for (;;) {
        if (need_more) {
            size_t want = read_want(x, block);
            if (ensure_cap(&x->buf, &x->cap, x->len + want + 1))
                return oom(x, err);
            int64_t got = src_read(&x->src, x->buf + x->len, want, x->path, x->line, err);
            if (got < 0)
                return err ? err->code : CLS_EOTHER;
            x->len += (size_t)got;
            need_more = 0;
        }
        int eof = x->src.eof;
        size_t proc;
        if (eof) {
            proc = x->len;
            if (proc && x->buf[proc - 1] != '\n') {
                if (ensure_cap(&x->buf, &x->cap, proc + 1))
                    return oom(x, err);
                x->buf[proc++] = '\n'; /* sentinel: every range ends with '\n' */
            }
        } else {
            size_t k = x->len;
            while (k > 0 && x->buf[k - 1] != '\n')
                k--;
            if (k == 0) {
                if (x->len > MM_MAX_LINE)
                    return ctx_fail(x, err, x->line, "line is longer than 16 MiB");
                need_more = 1; /* one long line: read more into cur */
                continue;
            }
            proc = k;
        }
        /* start reading the next block behind the carried partial line */
        size_t carry = eof ? 0 : x->len - proc;
        prefetch pf;
        memset(&pf, 0, sizeof pf);
        int started = 0;
        if (!eof) {
            size_t want = read_want(x, block);
            if (ensure_cap(&x->buf2, &x->cap2, carry + want + 1))
                return oom(x, err);
            memcpy(x->buf2, x->buf + proc, carry);
            pf.src = &x->src;
            pf.dst = x->buf2 + carry;
            pf.want = want;
            pf.path = x->path;
            started = pthread_create(&pf.tid, NULL, prefetch_run, &pf) == 0;
            if (!started)
                prefetch_run(&pf);
        }
        int rc = proc ? parse_block(x, x->buf, proc, err) : CLS_OK;
        if (started)
            pthread_join(pf.tid, NULL);
        if (!rc)
            rc = ctx_progress(x, x->src.consumed, err);
        if (rc)
            return rc;
        if (eof) {
            x->len = 0;
            break;
        }
        if (pf.got < 0) {
            if (pf.err.code == CLS_EINPUT) /* corrupt gzip: name the line we reached */
                return cls_fail_line(err, CLS_EINPUT, x->line,
                                     "%s:%lld: gzip data is corrupt or truncated (%s)", x->path,
                                     (long long)x->line, x->src.zmsg);
            if (err)
                *err = pf.err;
            return pf.err.code;
        }
        char *t = x->buf;
        x->buf = x->buf2;
        x->buf2 = t;
        size_t tc = x->cap;
        x->cap = x->cap2;
        x->cap2 = tc;
        x->len = carry + (size_t)pf.got;
    }
    x->bytes = x->src.consumed;
    return CLS_OK;
}

/* The row rule: CSR assembly allocates nrows + 1 row pointers whatever the
 * entry count, so a short file must not make us allocate for a huge row
 * count. We refuse when rows > 64 * (entries + 1) + 10^6, i.e. a matrix may
 * have on average up to 64 empty rows per stored entry, plus a flat
 * million (8 MB of row pointers) that every file gets for free. Real
 * matrices are far inside this; a 1 KB file declaring 2e9 rows is not. */
static int check_rows_backed(mm_ctx *x, int64_t rows, int64_t entries, cls_error *err)
{
    if (rows > 64 * (entries + 1) + 1000000) {
        char msg[256];
        snprintf(msg, sizeof msg, "%lld rows declared but only %lld entries: refusing to allocate",
                 (long long)rows, (long long)entries);
        return ctx_fail(x, err, x->h.size_line, msg);
    }
    return CLS_OK;
}

static int profile_on(void)
{
    const char *s = getenv("CLSOLVE_MM_PROFILE");
    return s && *s && strcmp(s, "0") != 0;
}

/* Dense column-major array values -> triplets, dropping exact zeros. */
static int array_to_coo(mm_ctx *x, cls_error *err)
{
    const int64_t n = x->h.rows, m = x->h.cols;
    /* columns to walk: none without rows (a 0 x 2147483647 array holds no
     * values, but walking its empty columns took seconds) */
    const int64_t mw = n ? m : 0;
    const double *v = x->vals;
    const int sym = x->h.symmetry;
    int64_t nz = 0, k = 0;
    for (int64_t j = 0; j < mw; j++) {
        int64_t i0 = sym == MM_GENERAL ? 0 : sym == MM_SKEW_SYMMETRIC ? j + 1 : j;
        for (int64_t i = i0; i < n; i++, k++)
            if (v[k] != 0.0)
                nz += (sym != MM_GENERAL && i != j) ? 2 : 1;
    }
    coo_matrix *C = &x->coo;
    coo_free(C);
    C->nrows = n;
    C->ncols = m;
    size_t cap = (size_t)(nz ? nz : 1);
    C->row = malloc(cap * sizeof *C->row);
    C->col = malloc(cap * sizeof *C->col);
    C->val = malloc(cap * sizeof *C->val);
    if (!C->row || !C->col || !C->val)
        return oom(x, err);
    C->cap = nz;
    double sign = sym == MM_SKEW_SYMMETRIC ? -1.0 : 1.0;
    int64_t o = 0;
    k = 0;
    for (int64_t j = 0; j < mw; j++) {
        int64_t i0 = sym == MM_GENERAL ? 0 : sym == MM_SKEW_SYMMETRIC ? j + 1 : j;
        for (int64_t i = i0; i < n; i++, k++) {
            if (v[k] == 0.0)
                continue;
            C->row[o] = (int32_t)i;
            C->col[o] = (int32_t)j;
            C->val[o] = v[k];
            o++;
            if (sym != MM_GENERAL && i != j) {
                C->row[o] = (int32_t)j;
                C->col[o] = (int32_t)i;
                C->val[o] = sign * v[k];
                o++;
            }
        }
    }
    C->nnz = o;
    return CLS_OK;
}

int mm_read_csr(const char *path, const mm_read_options *opt, csr_matrix *A, mm_header *h,
                mm_read_stats *st, cls_error *err)
{
    double t0 = cls_now();
    mm_ctx x;
    csr_init(A);
    unsigned char hb[CSR_BIN_HEADER];
    size_t hn;
    if (mm_is_binary(path, hb, &hn)) { /* the binary CSR form: read, not parsed (csr_bin.h) */
        int rc = csr_bin_read(path, opt ? opt->max_memory : 0, A, h, err);
        if (st) {
            memset(st, 0, sizeof *st);
            st->threads = 1;
            st->stored_entries = st->expanded_nnz = A->nnz;
            st->seconds = cls_now() - t0;
        }
        return rc;
    }
    int rc = ctx_open(&x, path, resolve_threads(opt), opt, err);
    x.threads_asked = opt && opt->threads > 0;
    x.opt = opt;
    double t1 = cls_now();
    if (!rc)
        rc = read_entries(&x, err);
    int mapped = x.map != NULL;
    if (x.map) { /* the text is parsed: unmap it now, inside the timed read */
        munmap(x.map, x.map_len);
        x.map = NULL;
    }
    double t2 = cls_now();
    int64_t stored = x.count;
    if (!rc)
        rc = check_rows_backed(&x, x.h.rows, x.count, err);
    if (!rc && x.array)
        rc = array_to_coo(&x, err);
    int64_t expanded = 0, dups = 0;
    /* symmetric and skew storage is mirrored by the assembly itself */
    int mirror = x.array                              ? 0
                 : x.h.symmetry == MM_SYMMETRIC      ? 1
                 : x.h.symmetry == MM_SKEW_SYMMETRIC ? -1
                                                     : 0;
    double t3 = cls_now();
    if (!rc)
        rc = csr_from_coo_take(&x.coo, mirror, x.nthreads, A, &expanded, &dups, err);
    double t4 = cls_now();
    if (!rc && profile_on())
        fprintf(stderr,
                "mm_read_csr: %s, %d threads, %s: header %.1f ms, count %.1f ms, reserve %.1f "
                "ms, parse %.1f ms, gaps %.1f ms, entries+unmap %.1f ms, array-to-coo %.1f ms, "
                "csr %.1f ms, all %.1f ms\n",
                path, x.nthreads, mapped ? "mmap" : x.src.gz ? "gzip" : "read", 1e3 * (t1 - t0),
                1e3 * x.t_count, 1e3 * x.t_reserve, 1e3 * x.t_parse, 1e3 * x.t_gaps,
                1e3 * (t2 - t1), 1e3 * (t3 - t2), 1e3 * (t4 - t3), 1e3 * (t4 - t0));
    if (!rc) {
        if (h)
            *h = x.h;
        if (st) {
            st->stored_entries = stored;
            st->expanded_nnz = expanded;
            st->duplicates = dups + x.dense_dups;
            st->bytes = x.bytes;
            st->threads = x.nthreads;
            st->seconds = cls_now() - t0;
        }
    }
    ctx_free(&x);
    return rc;
}

/* A span of the entry section, for ranged reads (mm_range.h): base[b, e)
 * (a mapped file, or the span's bytes received from another rank: then b
 * is 0) parsed as the whole-file read parses its entry section, on every
 * core, from line `line`. Nothing here knows the declared count: the
 * caller holds only its share and checks the sum. */
static int read_span(const char *path, const mm_read_options *opt, const mm_header *h,
                     const char *base, int64_t b, int64_t e, int64_t line, coo_matrix *C,
                     mm_span_result *res, cls_error *err)
{
    mm_ctx x;
    memset(&x, 0, sizeof x);
    memset(res, 0, sizeof *res);
    coo_init(C);
    x.src.fd = -1;
    x.path = path;
    x.nthreads = resolve_threads(opt);
    x.threads_asked = opt && opt->threads > 0;
    x.opt = opt;
    x.h = *h;
    x.span = 1; /* the declared count is the whole file's: the caller checks the sum */
    x.line = line;
    x.vk = h->field == MM_PATTERN ? VK_NONE : h->field == MM_INTEGER ? VK_INT : VK_REAL;
    x.min_entry_bytes = 4;
    x.coo.nrows = h->rows;
    x.coo.ncols = h->cols;
    if (h->layout != MM_COORDINATE || h->field == MM_COMPLEX || b < 0 || e < b)
        return cls_fail(err, CLS_EOTHER, "%s: internal error: not a span of coordinate entries",
                        path);
    x.jobs = calloc((size_t)x.nthreads * MM_RANGES_PER_THREAD, sizeof *x.jobs);
    if (!x.jobs)
        return oom(&x, err);
    int rc = CLS_OK;
    if (e > b) {
        x.map = (char *)base; /* read only: read_mapped parses it in place */
        x.map_len = (size_t)e;
        x.map_off = (size_t)b;
        rc = read_mapped(&x, err);
        x.map = NULL; /* the caller's */
    }
    res->entries = rc ? x.err_count : x.count;
    res->next_line = x.line;
    if (!rc) {
        x.coo.nnz = x.stored;
        *C = x.coo;
        coo_init(&x.coo);
    }
    ctx_free(&x);
    return rc;
}

/* The file's bytes [0, e) mapped read-only (*m), or CLS_EOTHER */
static int map_prefix(const char *path, int64_t e, void **m, cls_error *err)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    int rc = CLS_OK;
    *m = MAP_FAILED;
    if (fd < 0 || fstat(fd, &st) != 0)
        rc = cls_fail(err, CLS_EOTHER, "%s: cannot open: %s", path, strerror(errno));
    else if ((int64_t)st.st_size < e)
        rc = cls_fail(err, CLS_EOTHER, "%s: the file shrank to %lld bytes while it was read", path,
                      (long long)st.st_size);
    else if ((*m = mmap(NULL, (size_t)e, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED)
        rc = cls_fail(err, CLS_EOTHER, "%s: cannot map: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc;
}

int mm_read_span(const char *path, const mm_read_options *opt, const mm_header *h, int64_t b,
                 int64_t e, int64_t line, coo_matrix *C, mm_span_result *res, cls_error *err)
{
    void *m = NULL;
    if (e > b) {
        int rc = map_prefix(path, e, &m, err);
        if (rc) {
            memset(res, 0, sizeof *res);
            coo_init(C);
            return rc;
        }
        /* this rank's pages only, read ahead as the parse walks them */
        madvise((char *)m + (b & ~(int64_t)4095), (size_t)(e - (b & ~(int64_t)4095)),
                MADV_WILLNEED);
    }
    int rc = read_span(path, opt, h, m, b, e, line, C, res, err);
    if (e > b)
        munmap(m, (size_t)e);
    return rc;
}

int mm_read_span_mem(const char *path, const mm_read_options *opt, const mm_header *h,
                     const char *buf, size_t n, int64_t line, coo_matrix *C, mm_span_result *res,
                     cls_error *err)
{
    return read_span(path, opt, h, buf, 0, (int64_t)n, line, C, res, err);
}

int mm_span_fail_long_mem(const char *path, const mm_header *h, const char *buf, size_t n,
                          int64_t line, int64_t k, cls_error *err)
{
    /* the span's last line may lack its '\n': mm_scan_nl_before_entry stops at its end */
    return fail_long(path, h, line + mm_scan_nl_before_entry(buf, buf + n, k), err);
}

int mm_span_fail_long(const char *path, const mm_header *h, int64_t b, int64_t e, int64_t line,
                      int64_t k, cls_error *err)
{
    void *m;
    int rc = map_prefix(path, e, &m, err);
    if (rc)
        return rc;
    rc = mm_span_fail_long_mem(path, h, (const char *)m + b, (size_t)(e - b), line, k, err);
    munmap(m, (size_t)e);
    return rc;
}

int mm_check_count(const char *path, const mm_header *h, int64_t entries, int64_t last_line,
                   cls_error *err)
{
    if (entries < h->entries)
        return fail_short(path, h, entries, last_line, err);
    mm_ctx x;
    memset(&x, 0, sizeof x);
    x.path = path;
    x.h = *h;
    return check_rows_backed(&x, h->rows, entries, err);
}

int mm_read_vector(const char *path, double **v, int64_t *n, cls_error *err)
{
    mm_ctx x;
    *v = NULL;
    *n = 0;
    int rc = ctx_open(&x, path, resolve_threads(NULL), NULL, err);
    if (!rc && x.h.field == MM_PATTERN)
        rc = ctx_fail(&x, err, 1, "a vector must be real or integer, not pattern");
    if (!rc && x.h.rows != 1 && x.h.cols != 1) {
        char msg[256];
        snprintf(msg, sizeof msg, "a vector must be n x 1 or 1 x n, but the size line declares "
                                  "%lld x %lld",
                 (long long)x.h.rows, (long long)x.h.cols);
        rc = ctx_fail(&x, err, x.h.size_line, msg);
    }
    if (!rc)
        rc = read_entries(&x, err);
    int64_t len = x.h.cols == 1 ? x.h.rows : x.h.cols;
    if (!rc && !x.array)
        rc = check_rows_backed(&x, len, x.count, err);
    if (!rc) {
        double *out = calloc((size_t)(len ? len : 1), sizeof *out);
        if (!out) {
            rc = oom(&x, err);
        } else if (x.array) {
            /* n x 1 or 1 x n column-major is the natural order; a 1 x 1
             * symmetric array stores its single value, a skew one none */
            if (x.count)
                memcpy(out, x.vals, (size_t)x.count * sizeof *out);
        } else {
            for (int64_t k = 0; k < x.coo.nnz; k++)
                out[x.h.cols == 1 ? x.coo.row[k] : x.coo.col[k]] += x.coo.val[k];
        }
        if (!rc) {
            *v = out;
            *n = len;
        }
    }
    ctx_free(&x);
    return rc;
}

int mm_read_block(const char *path, int64_t max_cols, double **v, int64_t *rows, int64_t *cols,
                  cls_error *err)
{
    mm_ctx x;
    *v = NULL;
    *rows = *cols = 0;
    int rc = ctx_open(&x, path, resolve_threads(NULL), NULL, err);
    if (!rc && x.h.field == MM_PATTERN)
        rc = ctx_fail(&x, err, 1, "a vector must be real or integer, not pattern");
    if (!rc && x.h.symmetry != MM_GENERAL && x.h.rows != 1 && x.h.cols != 1)
        rc = ctx_fail(&x, err, 1, "right-hand sides must be a general matrix, not symmetric");
    if (!rc && x.h.cols > max_cols && x.h.rows != 1) {
        char msg[256];
        snprintf(msg, sizeof msg, "%lld right-hand sides (columns) declared: at most %lld",
                 (long long)x.h.cols, (long long)max_cols);
        rc = ctx_fail(&x, err, x.h.size_line, msg);
    }
    if (!rc)
        rc = read_entries(&x, err);
    /* a 1 x n file is one vector, as mm_read_vector reads it */
    const int64_t r = x.h.rows == 1 ? x.h.cols : x.h.rows, c = x.h.rows == 1 ? 1 : x.h.cols;
    if (!rc && !x.array)
        rc = check_rows_backed(&x, r * c, x.count, err);
    if (!rc) {
        double *out = calloc((size_t)(r * c > 0 ? r * c : 1), sizeof *out);
        if (!out) {
            rc = oom(&x, err);
        } else if (x.array) {
            if (x.count) /* column-major, as the file */
                memcpy(out, x.vals, (size_t)x.count * sizeof *out);
        } else {
            for (int64_t k = 0; k < x.count; k++)
                out[x.h.rows == 1 ? x.coo.col[k] : (int64_t)x.coo.col[k] * r + x.coo.row[k]] +=
                    x.coo.val[k];
        }
        if (!rc) {
            *v = out;
            *rows = r;
            *cols = c;
        }
    }
    ctx_free(&x);
    return rc;
}
