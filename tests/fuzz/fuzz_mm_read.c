/*
 * fuzz_mm_read.c: libFuzzer target for the Matrix Market file reader
 * (mm_read_csr, mm_read_vector), with a differential oracle.
 *
 * The reader has no buffer entry point: it reads a path. The input is
 * written to a memfd (memfd_create; a tmpfs-backed regular file that
 * exists only in this process) and read back through /proc/self/fd/N, so
 * the real open/fstat/mmap/read code runs. Each input is read four ways:
 *
 *   A  as the CLI reads a small file: default block size (64 MiB), so the
 *      header read (64 KiB chunks) takes the whole file and the entries are
 *      parsed from that one block, 1 thread
 *   M  mapped: a block size of 32..2079 bytes (from a hash of the input)
 *      makes the header read stop early, so the rest of the file is mapped
 *      (mmap) and parsed in place in windows of that size (read_mapped:
 *      lines crossing windows, a last line without '\n'), 2 threads
 *   B  CLSOLVE_MM_NOMAP=1: the block-read path with a tiny block size
 *      (16..271 bytes) so lines and ranges cross block boundaries and the
 *      reader thread prefetches, 2 threads, and parallel CSR assembly
 *      forced on (csr_set_parallel_min(1)); for every other input (a bit
 *      of the hash) CLSOLVE_CSR_PATH=scatter, so symmetric storage grouped
 *      by row is assembled by the atomic scatter there and by the grouped
 *      mirror in A and M
 *   C  the input gzip-compressed and read through zlib, 2 threads
 *      (an input that already starts with the gzip magic goes to zlib in
 *      A, M and B as well, so corrupt and truncated streams are covered too;
 *      an input in the binary CSR form, magic CLSCSR01, is not: that form is
 *      read as it is, A, M and B must agree on it)
 *
 * and the four results must agree exactly: the same return code, error
 * line and message (up to a quoted header token, which shows as much of
 * the token as the header read had when it failed), or the same header
 * and bit-identical CSR (mm.h and
 * csr.h promise the same result whatever the path and thread count). A
 * successful CSR must be well formed (row pointers, sorted unique columns
 * in range), and the header mm_read_csr reports must be what
 * mm_parse_header_buf finds in the same bytes. mm_read_vector runs on every
 * input too; a vector it returns has the declared length.
 *
 * Any violation calls abort(), which libFuzzer reports as a crash. Memory
 * errors are ASan's, undefined behaviour UBSan's, and an allocation larger
 * than -malloc_limit_mb (default: -rss_limit_mb) is libFuzzer's "malloc
 * limit" finding: a declared size that the data does not back must never
 * become an allocation.
 *
 * The same file builds into the plain replay driver (replay_main.c), which
 * runs the regression corpus with any compiler.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "matrices/csr.h"
#include "matrices/mm.h"

typedef struct result {
    int rc;
    cls_error err;
    csr_matrix A;
    mm_header h;
    mm_read_stats st;
} result;

static int memfd = -1;
static char memfd_path[64];

static void die(const char *what, const result *a, const result *b)
{
    fprintf(stderr, "fuzz_mm_read: %s\n", what);
    if (a)
        fprintf(stderr, "  first : rc %d line %lld msg '%s'\n", a->rc, a->err.line, a->err.msg);
    if (b)
        fprintf(stderr, "  second: rc %d line %lld msg '%s'\n", b->rc, b->err.line, b->err.msg);
    abort();
}

static void put_file(const uint8_t *data, size_t size)
{
    if (memfd < 0) {
        memfd = memfd_create("fuzz.mtx", 0);
        if (memfd < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(memfd_path, sizeof memfd_path, "/proc/self/fd/%d", memfd);
    }
    if (ftruncate(memfd, 0) != 0)
        abort();
    size_t done = 0;
    while (done < size) {
        ssize_t w = pwrite(memfd, data + done, size - done, (off_t)done);
        if (w <= 0)
            abort();
        done += (size_t)w;
    }
}

/* gzip-wrapped deflate of data (level 1); *out is malloc'ed. */
static size_t gzip_bytes(const uint8_t *data, size_t size, uint8_t **out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        abort();
    size_t cap = deflateBound(&z, (uLong)size) + 32;
    uint8_t *buf = malloc(cap);
    if (!buf)
        abort();
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)size;
    z.next_out = buf;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        abort();
    size_t n = cap - z.avail_out;
    deflateEnd(&z);
    *out = buf;
    return n;
}

static void read_one(result *r, int nomap, size_t block, int threads, int par_csr, int scatter)
{
    memset(r, 0, sizeof *r);
    if (scatter)
        setenv("CLSOLVE_CSR_PATH", "scatter", 1);
    if (nomap)
        setenv("CLSOLVE_MM_NOMAP", "1", 1);
    else
        unsetenv("CLSOLVE_MM_NOMAP");
    mm_set_block_size(block);
    csr_set_parallel_min(par_csr ? 1 : 0);
    mm_read_options opt = {.threads = threads};
    cls_error_clear(&r->err);
    r->rc = mm_read_csr(memfd_path, &opt, &r->A, &r->h, &r->st, &r->err);
    mm_set_block_size(0);
    csr_set_parallel_min(0);
    unsetenv("CLSOLVE_MM_NOMAP");
    unsetenv("CLSOLVE_CSR_PATH");
}

static void check_csr(const result *r)
{
    const csr_matrix *A = &r->A;
    if (A->nrows != r->h.rows || A->ncols != r->h.cols)
        die("CSR shape differs from the header", r, NULL);
    if (!A->rowptr || A->rowptr[0] != 0 || A->rowptr[A->nrows] != A->nnz)
        die("bad row pointers", r, NULL);
    for (int64_t i = 0; i < A->nrows; i++) {
        if (A->rowptr[i + 1] < A->rowptr[i])
            die("row pointers decrease", r, NULL);
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
            if (A->col[k] < 0 || A->col[k] >= A->ncols)
                die("column out of range", r, NULL);
            if (k > A->rowptr[i] && A->col[k] <= A->col[k - 1])
                die("columns not sorted and unique within a row", r, NULL);
        }
    }
    if (r->h.layout == MM_COORDINATE && r->st.stored_entries != r->h.entries)
        die("stored entries differ from the declared count", r, NULL);
}

/* field by field: the struct has padding, which memcmp would compare */
static int hdr_eq(const mm_header *x, const mm_header *y)
{
    return x->layout == y->layout && x->field == y->field && x->symmetry == y->symmetry &&
           x->rows == y->rows && x->cols == y->cols && x->entries == y->entries &&
           x->size_line == y->size_line;
}

static int gzip_error(const result *r)
{
    return r->rc && strstr(r->err.msg, "gzip data is corrupt or truncated") != NULL;
}

static void same(const result *a, const result *b, const char *what)
{
    /* A damaged gzip stream is found when the reader reaches it, which
     * depends on the block size: the 64 KiB header read of a small file
     * meets it at "line 1", a 16-byte block read at the line it had
     * reached, and a parse error before the damage may come first. Both
     * must fail, with the same code; the line and message may differ. */
    if ((gzip_error(a) || gzip_error(b)) && a->rc == b->rc)
        return;
    if (a->rc != b->rc || a->err.line != b->err.line)
        die(what, a, b);
    if (a->rc) {
        /* the same message up to the quoted token: a header token is shown
         * as far as the header read had got (the block size decides), the
         * words before it must agree */
        size_t n = strcspn(a->err.msg, "'");
        if (n != strcspn(b->err.msg, "'") || strncmp(a->err.msg, b->err.msg, n) != 0)
            die(what, a, b);
        return;
    }
    if (!hdr_eq(&a->h, &b->h))
        die("headers differ", a, b);
    const csr_matrix *A = &a->A, *B = &b->A;
    if (A->nrows != B->nrows || A->ncols != B->ncols || A->nnz != B->nnz ||
        memcmp(A->rowptr, B->rowptr, (size_t)(A->nrows + 1) * sizeof *A->rowptr) != 0 ||
        (A->nnz && (memcmp(A->col, B->col, (size_t)A->nnz * sizeof *A->col) != 0 ||
                    memcmp(A->val, B->val, (size_t)A->nnz * sizeof *A->val) != 0)))
        die("CSR matrices differ", a, b);
    if (a->st.duplicates != b->st.duplicates || a->st.expanded_nnz != b->st.expanded_nnz ||
        a->st.stored_entries != b->st.stored_entries)
        die("read statistics differ", a, b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t hash = 2166136261u; /* FNV-1a: picks the block sizes of M and B */
    for (size_t k = 0; k < size; k++)
        hash = (hash ^ data[k]) * 16777619u;

    result a, b, c;
    put_file(data, size);
    read_one(&a, 0, 0, 1, 0, 0);
    read_one(&b, 0, 32 + (hash >> 8) % 2048, 2, 0, 0);
    same(&a, &b, "one-block and mapped results differ");
    csr_free(&b.A);
    read_one(&b, 1, 16 + hash % 256, 2, 1, (hash >> 20) & 1);
    same(&a, &b, "one-block and small-block results differ");

    int raw_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    /* the binary CSR form (csr_bin.h) is read as it is, never through zlib,
     * and has no text header for mm_parse_header_buf */
    int binary = size >= 8 && memcmp(data, "CLSCSR01", 8) == 0;
    if (!raw_gzip && !binary) {
        uint8_t *gz = NULL;
        size_t n = gzip_bytes(data, size, &gz);
        put_file(gz, n);
        free(gz);
        read_one(&c, 0, 0, 2, 0, 0);
        same(&a, &c, "plain and gzip results differ");
        csr_free(&c.A);
        put_file(data, size);
    }

    if (a.rc == CLS_OK) {
        check_csr(&a);
        if (!raw_gzip && !binary) {
            /* the streaming header check (HTTP uploads) agrees with the reader */
            mm_header h;
            cls_error e;
            cls_error_clear(&e);
            int hr = mm_parse_header_buf((const char *)data, size, memfd_path, &h, &e);
            if (hr == CLS_OK ? !hdr_eq(&h, &a.h) : hr != -1)
                die("mm_parse_header_buf disagrees with mm_read_csr", &a, NULL);
        }
    } else if (a.rc != CLS_EINPUT) {
        die("a bad file must be CLS_EINPUT", &a, NULL);
    } else if (strncmp(a.err.msg, memfd_path, strlen(memfd_path)) != 0 ||
               a.err.msg[strlen(memfd_path)] != ':') {
        die("message is not FILE:LINE: what", &a, NULL);
    }
    csr_free(&a.A);
    csr_free(&b.A);

    /* the vector reader on the same bytes */
    double *v = NULL;
    int64_t n = -1;
    cls_error e;
    cls_error_clear(&e);
    int vr = mm_read_vector(memfd_path, &v, &n, &e);
    if (vr == CLS_OK) {
        if (n < 0 || !v)
            die("vector without storage", NULL, NULL);
        volatile double sink = 0;
        for (int64_t k = 0; k < n; k++) /* every element is there (ASan checks) */
            sink += v[k];
        (void)sink;
    } else if (vr != CLS_EINPUT) {
        die("vector: a bad file must be CLS_EINPUT", NULL, NULL);
    }
    free(v);
    return 0;
}
