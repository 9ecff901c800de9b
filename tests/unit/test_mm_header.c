/*
 * test_mm_header.c: the resumable Matrix Market header scan (mm_header.c)
 * and the header limit.
 *
 *  - Fresh random headers (BOM or not, banner case and spacing, comment
 *    and blank lines, CRLF, tabs, valid and broken size lines, truncations)
 *    are fed in random chunks with the drop protocol of mm.h (the caller
 *    drops *used bytes after each call); the result must equal the
 *    one-buffer parse (code, line, message, header, header length), and a
 *    valid header must equal what a naive line-by-line reference finds.
 *  - Linear work: inside a comment every byte fed is consumed (used ==
 *    len), so the caller never holds comment text and nothing is scanned
 *    twice; a pending size line is searched from where the last call
 *    stopped (checked through `searched`).
 *  - The limit: a header that has not ended within 16 MiB is refused at the
 *    line where the limit falls, the same line for every chunking, for
 *    mm_read_header and mm_read_csr on plain, mapped, block-read and gzip
 *    files; a 15.9 MiB header still reads; a banner followed by 200 MiB of
 *    '%' (gzip, 200 KB on disk) is refused without the reader's memory
 *    growing with it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "matrices/mm.h"

static char tmpdir[256];

static const char *tpath(const char *name)
{
    static char bufs[4][512];
    static int k = 0;
    char *p = bufs[k++ % 4];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

/* ------------------------------------------------------------------------ */
/* random headers                                                            */

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = 2 * (b->n + n + 1);
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            exit(1);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void puts_(sbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

static unsigned rnd(unsigned n)
{
    return (unsigned)(check_rand() % n);
}

static const char *ws(void)
{
    static const char *const w[] = {" ", "  ", "\t", " \t ", "\r"};
    return w[rnd(5)];
}

/* A header whose expected result is known when *valid (rows, cols,
 * entries, the size line's number and the header's length). */
static void random_header(sbuf *b, int *valid, mm_header *want, size_t *want_len)
{
    static const char *const fmt[] = {"coordinate", "Coordinate", "array", "ARRAY"};
    static const char *const field[] = {"real", "integer", "pattern", "Real"};
    static const char *const sym[] = {"general", "symmetric", "skew-symmetric", "GENERAL"};
    b->n = 0;
    *valid = 1;
    if (rnd(6) == 0)
        puts_(b, "\xEF\xBB\xBF");
    int f = (int)rnd(4), fl = (int)rnd(4), sy = (int)rnd(4);
    int array = f >= 2, pattern = fl == 2, skew = sy == 2;
    if (array && pattern)
        fl = 0, pattern = 0;
    if (skew && pattern)
        sy = 0, skew = 0;
    puts_(b, rnd(4) ? "%%MatrixMarket" : "%%matrixmarket");
    const char *words[4] = {rnd(3) ? "matrix" : "MATRIX", fmt[f], field[fl], sym[sy]};
    for (int k = 0; k < 4; k++) {
        puts_(b, ws());
        puts_(b, words[k]);
    }
    if (rnd(3) == 0)
        puts_(b, ws());
    puts_(b, rnd(4) ? "\n" : "\r\n");
    int64_t line = 1;
    int extra = (int)rnd(8);
    for (int k = 0; k < extra; k++) {
        line++;
        switch (rnd(4)) {
        case 0: /* blank, maybe with white space */
            if (rnd(2))
                puts_(b, ws());
            puts_(b, "\n");
            break;
        case 1: { /* a long comment */
            puts_(b, "%");
            unsigned n = rnd(3000);
            for (unsigned i = 0; i < n; i++)
                put(b, "abc%% \t~xyz" + rnd(10), 1);
            puts_(b, "\n");
            break;
        }
        default:
            if (rnd(2))
                puts_(b, ws());
            puts_(b, "% a comment\r\n");
        }
    }
    line++;
    int64_t n = 1 + (int64_t)rnd(100000), m = (sy == 0 || sy == 3) && !rnd(2) ? n + 7 : n;
    int64_t nnz = (int64_t)rnd(1000000);
    char sl[160];
    int bad = rnd(8) == 0;
    if (bad) {
        static const char *const broken[] = {"3 x 4", "-1 3 3", "3", "3 3 3 3", "1e3 3 3"};
        snprintf(sl, sizeof sl, "%s", broken[rnd(5)]);
        *valid = 0;
    } else if (array) {
        snprintf(sl, sizeof sl, "%lld%s%lld", (long long)n, ws(), (long long)m);
    } else {
        snprintf(sl, sizeof sl, "%lld%s%lld%s%lld", (long long)n, ws(), (long long)m, ws(),
                 (long long)nnz);
    }
    if (rnd(3) == 0)
        puts_(b, ws());
    puts_(b, sl);
    if (rnd(3) == 0)
        puts_(b, ws());
    puts_(b, "\n");
    *want_len = b->n;
    memset(want, 0, sizeof *want);
    want->layout = array ? MM_ARRAY : MM_COORDINATE;
    want->field = fl == 1 ? MM_INTEGER : fl == 2 ? MM_PATTERN : MM_REAL;
    want->symmetry = sy == 1 ? MM_SYMMETRIC : sy == 2 ? MM_SKEW_SYMMETRIC : MM_GENERAL;
    if (want->symmetry != MM_GENERAL)
        m = n;
    want->rows = n;
    want->cols = m;
    want->entries = !array                           ? nnz
                    : want->symmetry == MM_GENERAL   ? n * m
                    : want->symmetry == MM_SYMMETRIC ? n * (n + 1) / 2
                                                     : n * (n - 1) / 2;
    want->size_line = line;
    /* some entries after the header */
    puts_(b, "1 1 1\n2 2 2\n");
}

/* Feeds text[0..len) in random chunks, dropping what the scan consumed.
 * Returns the code; *hdr_end is the header's length on success. */
static int feed_chunked(const char *text, size_t len, int at_eof, mm_header *h, size_t *hdr_end,
                        cls_error *e, size_t *max_held)
{
    mm_header_scan sc;
    mm_header_scan_init(&sc);
    size_t start = 0, end = 0;
    *max_held = 0;
    for (;;) {
        size_t step = 1 + rnd(rnd(2) ? 7 : 5000);
        end = end + step > len ? len : end + step;
        if (end - start > *max_held)
            *max_held = end - start;
        size_t used = 0;
        int last = end == len && at_eof;
        int rc = mm_header_scan_feed(&sc, text + start, end - start, last, "hdr", h, &used, e);
        if (rc == CLS_OK) {
            *hdr_end = start + used;
            return rc;
        }
        if (rc != -1)
            return rc;
        CHECK(used <= end - start);
        start += used;
        if (end == len && !at_eof)
            return -1;
        if (end == len) {
            CHECK_MSG(0, "at_eof gave 'need more'");
            return -1;
        }
    }
}

static void test_random_headers(void)
{
    sbuf b = {0};
    int fails_before = check_failures;
    for (int it = 0; it < 3000 && check_failures == fails_before; it++) {
        int valid;
        mm_header want, h1, h2;
        size_t want_len, end2 = 0, held;
        random_header(&b, &valid, &want, &want_len);
        /* the whole input, and a truncation of it */
        size_t len = rnd(4) ? b.n : rnd((unsigned)b.n + 1);
        cls_error e1, e2;
        cls_error_clear(&e1);
        cls_error_clear(&e2);
        memset(&h1, 0, sizeof h1);
        memset(&h2, 0, sizeof h2);
        int at_eof = rnd(2);
        mm_header_scan sc;
        size_t end1 = 0;
        mm_header_scan_init(&sc);
        int rc1 = mm_header_scan_feed(&sc, b.p, len, at_eof, "hdr", &h1, &end1, &e1);
        int rc2 = feed_chunked(b.p, len, at_eof, &h2, &end2, &e2, &held);
        CHECK_MSG(rc1 == rc2, "it %d: one buffer %d (%s), chunked %d (%s)", it, rc1, e1.msg, rc2,
                  e2.msg);
        if (rc1 > 0 && rc2 > 0)
            CHECK_MSG(!strcmp(e1.msg, e2.msg) && e1.line == e2.line, "it %d: '%s' vs '%s'", it,
                      e1.msg, e2.msg);
        if (rc1 == CLS_OK && rc2 == CLS_OK) {
            CHECK(!memcmp(&h1, &h2, sizeof h1));
            CHECK_MSG(end1 == end2, "it %d: header ends at %zu and %zu", it, end1, end2);
        }
        if (valid && len == b.n) {
            CHECK_MSG(rc1 == CLS_OK, "it %d: valid header refused: %s", it, e1.msg);
            if (rc1 == CLS_OK) {
                CHECK_MSG(end1 == want_len, "it %d: header length %zu, expected %zu", it, end1,
                          want_len);
                CHECK(h1.layout == want.layout && h1.field == want.field &&
                      h1.symmetry == want.symmetry);
                CHECK_MSG(h1.rows == want.rows && h1.cols == want.cols &&
                              h1.entries == want.entries && h1.size_line == want.size_line,
                          "it %d: %lld %lld %lld line %lld, expected %lld %lld %lld line %lld", it,
                          (long long)h1.rows, (long long)h1.cols, (long long)h1.entries,
                          (long long)h1.size_line, (long long)want.rows, (long long)want.cols,
                          (long long)want.entries, (long long)want.size_line);
            }
        }
        if (valid && len < want_len && !at_eof)
            CHECK_MSG(rc1 == -1, "it %d: truncated header: %d", it, rc1);
    }
    free(b.p);
}

/* Inside a comment every byte is consumed; a pending size line is not
 * searched again. */
static void test_linear(void)
{
    mm_header_scan sc;
    mm_header h;
    cls_error e;
    size_t used;
    mm_header_scan_init(&sc);
    const char *banner = "%%MatrixMarket matrix coordinate real general\n%";
    CHECK(mm_header_scan_feed(&sc, banner, strlen(banner), 0, "x", &h, &used, &e) == -1);
    CHECK(used == strlen(banner));
    char chunk[4096];
    memset(chunk, '%', sizeof chunk);
    int all = 1;
    for (int k = 0; k < 1000; k++) { /* 4 MB of one comment line */
        int rc = mm_header_scan_feed(&sc, chunk, sizeof chunk, 0, "x", &h, &used, &e);
        all &= rc == -1 && used == sizeof chunk;
    }
    CHECK_MSG(all, "comment bytes not all consumed");
    CHECK(mm_header_scan_feed(&sc, "\n  10 10", 8, 0, "x", &h, &used, &e) == -1);
    CHECK_MSG(used == 3 && sc.searched == 5, "used %zu searched %zu", used, sc.searched);
    CHECK(mm_header_scan_feed(&sc, "10 10 5", 7, 0, "x", &h, &used, &e) == -1);
    CHECK(used == 0 && sc.searched == 7);
    CHECK(mm_header_scan_feed(&sc, "10 10 5\n1 1 1\n", 14, 0, "x", &h, &used, &e) == CLS_OK);
    CHECK(used == 8 && h.rows == 10 && h.entries == 5 && h.size_line == 3);
}

/* ------------------------------------------------------------------------ */
/* the limit                                                                 */

static const char *write_file(const char *name, const char *text, size_t n, int gz)
{
    const char *p = tpath(name);
    if (gz) {
        gzFile g = gzopen(p, "wb1");
        if (!g)
            exit(1);
        for (size_t off = 0; off < n;) {
            unsigned k = n - off > (1u << 28) ? (1u << 28) : (unsigned)(n - off);
            gzwrite(g, text + off, k);
            off += k;
        }
        gzclose(g);
    } else {
        FILE *f = fopen(p, "wb");
        if (!f)
            exit(1);
        fwrite(text, 1, n, f);
        fclose(f);
    }
    return p;
}

/* The expected line of the limit error: the line holding byte MM_MAX_HEADER. */
static long long limit_line(const char *t, size_t n)
{
    long long line = 1;
    size_t lim = n < MM_MAX_HEADER ? n : (size_t)MM_MAX_HEADER;
    for (size_t i = 0; i < lim; i++)
        line += t[i] == '\n';
    return line;
}

static void expect_limit(const char *what, const char *path, long long line)
{
    for (int way = 0; way < 4; way++) {
        cls_error e;
        cls_error_clear(&e);
        mm_header h;
        csr_matrix A;
        int rc;
        if (way == 0) {
            rc = mm_read_header(path, &h, &e);
        } else {
            setenv("CLSOLVE_MM_NOMAP", way == 2 ? "1" : "0", 1);
            mm_set_block_size(way == 3 ? 4096 : 0);
            rc = mm_read_csr(path, NULL, &A, &h, NULL, &e);
            if (rc == CLS_OK)
                csr_free(&A);
            mm_set_block_size(0);
            unsetenv("CLSOLVE_MM_NOMAP");
        }
        char prefix[700];
        snprintf(prefix, sizeof prefix,
                 "%s:%lld: the header (banner, comments and size line) is "
                 "longer than 16 MiB",
                 path, line);
        CHECK_MSG(rc == CLS_EINPUT && e.line == line && !strncmp(e.msg, prefix, strlen(prefix)),
                  "%s way %d: rc %d line %lld '%s'", what, way, rc, e.line, e.msg);
    }
}

static void test_limit(void)
{
    const size_t big = (size_t)MM_MAX_HEADER + (1u << 20);
    char *t = malloc(big + 64);
    if (!t)
        exit(1);
    const char *banner = "%%MatrixMarket matrix coordinate real general\n";
    size_t bl = strlen(banner);
    /* one endless comment line: refused at line 2 */
    memcpy(t, banner, bl);
    memset(t + bl, '%', big - bl);
    expect_limit("one comment line", write_file("long1.mtx", t, big, 0), 2);
    expect_limit("one comment line, gzip", write_file("long1.mtx.gz", t, big, 1), 2);
    /* many comment lines of random length; the line where the limit falls */
    size_t p = bl;
    while (p < big) {
        size_t k = 1 + rnd(200000);
        if (p + k > big)
            k = big - p;
        memset(t + p, '%', k);
        p += k;
        if (p < big)
            t[p - 1] = '\n';
    }
    long long ll = limit_line(t, big);
    expect_limit("many comment lines", write_file("long2.mtx", t, big, 0), ll);
    expect_limit("many comment lines, gzip", write_file("long2.mtx.gz", t, big, 1), ll);
    /* a header that ends just inside the limit reads */
    size_t n = (size_t)MM_MAX_HEADER - 64;
    memcpy(t, banner, bl);
    memset(t + bl, '%', n - bl);
    for (size_t i = bl + 1000; i < n; i += 1000)
        t[i] = '\n';
    t[n - 1] = '\n';
    const char *tail = "3 3 2\n1 1 1.5\n3 2 2.5\n";
    memcpy(t + n, tail, strlen(tail));
    size_t tl = n + strlen(tail);
    for (int gz = 0; gz < 2; gz++) {
        csr_matrix A;
        mm_header h;
        cls_error e;
        cls_error_clear(&e);
        int rc = mm_read_csr(write_file(gz ? "fits.mtx.gz" : "fits.mtx", t, tl, gz), NULL, &A, &h,
                             NULL, &e);
        CHECK_MSG(rc == CLS_OK, "header of 16 MiB - 64 bytes: %s", e.msg);
        if (rc == CLS_OK) {
            CHECK(A.nnz == 2 && A.nrows == 3 && h.size_line == limit_line(t, n));
            csr_free(&A);
        }
    }
    free(t);
}

static long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* The endless header of the attack: a banner, then 200 MiB of '%' in one
 * gzip stream; refused after 16 MiB with the reader's memory not growing
 * with the stream. */
static void test_endless_gzip(void)
{
    const char *path = tpath("endless.mtx.gz");
    gzFile g = gzopen(path, "wb9");
    if (!g)
        exit(1);
    gzputs(g, "%%MatrixMarket matrix coordinate real general\n");
    static char pct[1 << 20];
    memset(pct, '%', sizeof pct);
    for (int k = 0; k < 200; k++)
        gzwrite(g, pct, sizeof pct);
    gzclose(g);
    long before = maxrss_kb();
    cls_error e;
    csr_matrix A;
    mm_header h;
    int rc = mm_read_csr(path, NULL, &A, &h, NULL, &e);
    long grew = maxrss_kb() - before;
    CHECK_MSG(rc == CLS_EINPUT && e.line == 2 && strstr(e.msg, "longer than 16 MiB"),
              "endless gzip header: rc %d '%s'", rc, e.msg);
    CHECK_MSG(grew < 32 * 1024, "the reader's peak memory grew by %ld KB", grew);
    printf("endless gzip header: refused ('%s'), peak RSS +%ld KB\n", e.msg, grew);
}

int main(void)
{
    check_seed("test_mm_header");
    snprintf(tmpdir, sizeof tmpdir, "%s/test_mm_header.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_endless_gzip(); /* first: its peak-memory check */
    test_random_headers();
    test_linear();
    test_limit();
    int rc = check_done("test_mm_header");
    const char *names[] = {"long1.mtx", "long1.mtx.gz", "long2.mtx",     "long2.mtx.gz",
                           "fits.mtx",  "fits.mtx.gz",  "endless.mtx.gz"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(tpath(names[i]));
    rmdir(tmpdir);
    return rc;
}
