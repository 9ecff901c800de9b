/*
 * mm_header.c: the Matrix Market header (optional UTF-8 BOM, banner line,
 * comment and blank lines, size line), parsed as a resumable scan.
 *
 * The header arrives in pieces (the reader's 64 KiB reads, an upload's
 * network chunks), so the scanner keeps where it stopped: which stage
 * (banner, lines after it), the line number, whether it is inside a comment
 * line, and how far it already searched the pending line for its '\n'. Each
 * byte is looked at once, whatever the chunk sizes, so a long comment block
 * costs linear time (the old parser re-read the whole header after every
 * chunk: quadratic). Completed comment and blank lines are consumed: the
 * caller may drop them, so only the banner line or the size line is ever
 * held, never the comments.
 *
 * The limit: the whole header, comments included, must end within its
 * first MM_MAX_HEADER bytes (16 MiB, the reader's line limit). A file or
 * upload whose size line has not come by then is refused at the line where
 * the limit falls, whatever the chunking, so an upload of a banner and
 * gigabytes of '%' is refused after 16 MiB instead of growing the reader's
 * memory without bound.
 *
 * Messages are "NAME:LINE: what is wrong" (err->line set); the banner's
 * vocabulary is mmio's (NIST: Boisvert, Pozo, Remington, "The Matrix Market
 * Exchange Formats: Initial Design", 1996).
 */
#include <limits.h>
#include <stdio.h>

#include "mm_header.h"
#include "mm_lex.h"

int mm_fail_line(cls_error *err, const char *name, int64_t line, const char *what)
{
    return cls_fail_line(err, CLS_EINPUT, line, "%s:%lld: %s", name, (long long)line, what);
}

const char *mm_layout_name(mm_layout l)
{
    return l == MM_ARRAY ? "array" : "coordinate";
}

const char *mm_field_name(mm_field f)
{
    switch (f) {
    case MM_REAL: return "real";
    case MM_INTEGER: return "integer";
    case MM_PATTERN: return "pattern";
    case MM_COMPLEX: return "complex";
    }
    return "?";
}

const char *mm_symmetry_name(mm_symmetry s)
{
    switch (s) {
    case MM_GENERAL: return "general";
    case MM_SYMMETRIC: return "symmetric";
    case MM_SKEW_SYMMETRIC: return "skew-symmetric";
    case MM_HERMITIAN: return "hermitian";
    }
    return "?";
}

/* Parses a size-line field: 0 ok, 1 not a number, 2 negative, 3 too large. */
static int parse_size_field(const char *s, size_t n, int64_t *out)
{
    size_t k = 0;
    int neg = 0;
    if (k < n && (s[k] == '+' || s[k] == '-'))
        neg = s[k++] == '-';
    if (k == n)
        return 1;
    uint64_t x = 0;
    int big = 0;
    for (; k < n; k++) {
        unsigned d = (unsigned)(unsigned char)s[k] - '0';
        if (d > 9)
            return 1;
        if (x > ((uint64_t)INT64_MAX - d) / 10)
            big = 1;
        else
            x = x * 10 + d;
    }
    if (neg && (x || big))
        return 2;
    if (big)
        return 3;
    *out = (int64_t)x;
    return 0;
}

static const char *const word_kind[4] = {"object", "format", "field", "symmetry"};
static const char *const word_allowed[4] = {"matrix", "coordinate, array",
                                            "real, integer, pattern, complex",
                                            "general, symmetric, skew-symmetric, hermitian"};

/* The start of the first line as far as it has come: a BOM, then the first
 * bytes of "%%MatrixMarket". Returns 0 (fine so far; *pos past the BOM), -1
 * (too few bytes to tell) or an error. */
static int banner_prefix(const char *buf, size_t len, int at_eof, const char *name, size_t *pos,
                         cls_error *err)
{
    static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};
    static const char banner[] = "%%MatrixMarket";
    char msg[512], t[48];
    *pos = 0;
    if (len > 0 && (unsigned char)buf[0] == 0xEF) {
        size_t m = len < 3 ? len : 3;
        if (memcmp(buf, bom, m) == 0) {
            if (m < 3)
                return at_eof ? mm_fail_line(err, name, 1, "file ends inside the banner") : -1;
            *pos = 3;
        }
    }
    size_t avail = len - *pos;
    if (avail == 0) {
        if (at_eof)
            return mm_fail_line(err, name, 1,
                                "file is empty: expected the banner %%MatrixMarket matrix ...");
        return -1;
    }
    size_t m = avail < 14 ? avail : 14;
    if (strncasecmp(buf + *pos, banner, m) != 0) {
        /* quote the whole first word, as a reader that has it all at once
           does: an upload's chunk may end inside it ('he' of 'hello'), so
           wait for its end, the quote's bound (40 and one more to tell the
           "...") or the end of the input */
        size_t k = 0;
        while (k < avail && k <= 40 && !mm_is_end(buf[*pos + k]))
            k++;
        if (!at_eof && k == avail && k <= 40)
            return -1;
        snprintf(msg, sizeof msg,
                 "missing banner: the first line must start with %%%%MatrixMarket, found '%s'",
                 mm_tok_str(buf + *pos, avail, t));
        return mm_fail_line(err, name, 1, msg);
    }
    return 0;
}

/* The banner line buf[pos..e): its five words. */
static int parse_banner(const char *buf, size_t pos, size_t e, const char *name, mm_header *out,
                        cls_error *err)
{
    char msg[512], t[48];
    const char *w[6];
    size_t wn[6];
    int nw = 0;
    for (size_t q = pos; q < e;) {
        while (q < e && mm_is_ws(buf[q]))
            q++;
        if (q >= e)
            break;
        size_t s = q;
        while (q < e && !mm_is_ws(buf[q]))
            q++;
        if (nw < 6) {
            w[nw] = buf + s;
            wn[nw] = q - s;
        }
        nw++;
    }
    if (!mm_span_ieq(w[0], wn[0], "%%MatrixMarket")) {
        snprintf(msg, sizeof msg,
                 "malformed banner: expected '%%%%MatrixMarket' followed by a space, found '%s'",
                 mm_tok_str(w[0], wn[0], t));
        return mm_fail_line(err, name, 1, msg);
    }
    int code[4] = {0, 0, 0, 0};
    for (int k = 0; k < 4; k++) {
        if (nw <= k + 1) {
            snprintf(msg, sizeof msg, "banner is missing the %s word (one of: %s)", word_kind[k],
                     word_allowed[k]);
            return mm_fail_line(err, name, 1, msg);
        }
        const char *s = w[k + 1];
        size_t n = wn[k + 1];
        int c = -1;
        switch (k) {
        case 0:
            c = mm_span_ieq(s, n, "matrix") ? 0 : -1;
            break;
        case 1:
            c = mm_span_ieq(s, n, "coordinate") ? MM_COORDINATE
                : mm_span_ieq(s, n, "array")    ? MM_ARRAY
                                                : -1;
            break;
        case 2:
            c = mm_span_ieq(s, n, "real")      ? MM_REAL
                : mm_span_ieq(s, n, "integer") ? MM_INTEGER
                : mm_span_ieq(s, n, "pattern") ? MM_PATTERN
                : mm_span_ieq(s, n, "complex") ? MM_COMPLEX
                                               : -1;
            break;
        case 3:
            c = mm_span_ieq(s, n, "general")          ? MM_GENERAL
                : mm_span_ieq(s, n, "symmetric")      ? MM_SYMMETRIC
                : mm_span_ieq(s, n, "skew-symmetric") ? MM_SKEW_SYMMETRIC
                : mm_span_ieq(s, n, "hermitian")      ? MM_HERMITIAN
                                                      : -1;
            break;
        }
        if (c < 0) {
            snprintf(msg, sizeof msg, "unknown %s '%s' in the banner (allowed: %s)", word_kind[k],
                     mm_tok_str(s, n, t), word_allowed[k]);
            return mm_fail_line(err, name, 1, msg);
        }
        code[k] = c;
    }
    if (nw > 5) {
        snprintf(msg, sizeof msg, "unexpected word '%s' after the symmetry in the banner",
                 mm_tok_str(w[5], wn[5], t));
        return mm_fail_line(err, name, 1, msg);
    }
    mm_header hd;
    memset(&hd, 0, sizeof hd);
    hd.layout = (mm_layout)code[1];
    hd.field = (mm_field)code[2];
    hd.symmetry = (mm_symmetry)code[3];
    if (hd.layout == MM_ARRAY && hd.field == MM_PATTERN)
        return mm_fail_line(err, name, 1,
                            "inconsistent banner: 'array pattern' is not allowed (an array stores "
                            "every value; use coordinate pattern)");
    if (hd.symmetry == MM_HERMITIAN && hd.field != MM_COMPLEX) {
        snprintf(msg, sizeof msg,
                 "inconsistent banner: '%s hermitian' is not allowed (hermitian needs complex)",
                 mm_field_name(hd.field));
        return mm_fail_line(err, name, 1, msg);
    }
    if (hd.symmetry == MM_SKEW_SYMMETRIC && hd.field == MM_PATTERN)
        return mm_fail_line(err, name, 1,
                            "inconsistent banner: 'pattern skew-symmetric' is not allowed (a "
                            "pattern has no values to negate)");
    *out = hd;
    return CLS_OK;
}

/* The size line s[0..n) (no '\n'), line `line`; completes hd. */
static int parse_size_line(const char *s, size_t n, int64_t line, const char *name, mm_header *hd,
                           cls_error *err)
{
    char msg[512], t[48];
    const char *f[3];
    size_t fn[3];
    int nf = 0;
    size_t q = 0;
    while (q < n) {
        size_t b = q;
        while (q < n && !mm_is_ws(s[q]))
            q++;
        if (nf < 3) {
            f[nf] = s + b;
            fn[nf] = q - b;
        }
        nf++;
        while (q < n && mm_is_ws(s[q]))
            q++;
    }
    int need = hd->layout == MM_COORDINATE ? 3 : 2;
    if (nf != need) {
        snprintf(msg, sizeof msg, "size line has %d field%s, but %s matrix needs %d (%s)", nf,
                 nf == 1 ? "" : "s", hd->layout == MM_COORDINATE ? "a coordinate" : "an array",
                 need, hd->layout == MM_COORDINATE ? "rows columns entries" : "rows columns");
        return mm_fail_line(err, name, line, msg);
    }
    static const char *const fname[3] = {"rows", "columns", "entries"};
    int64_t v[3] = {0, 0, 0};
    for (int k = 0; k < need; k++) {
        int rc = parse_size_field(f[k], fn[k], &v[k]);
        if (rc == 1)
            snprintf(msg, sizeof msg, "number of %s is not a number: '%s'", fname[k],
                     mm_tok_str(f[k], fn[k], t));
        else if (rc == 2)
            snprintf(msg, sizeof msg, "negative number of %s: %s", fname[k],
                     mm_tok_str(f[k], fn[k], t));
        else if (rc == 3)
            snprintf(msg, sizeof msg, "number of %s is too large: %s", fname[k],
                     mm_tok_str(f[k], fn[k], t));
        if (rc)
            return mm_fail_line(err, name, line, msg);
    }
    hd->rows = v[0];
    hd->cols = v[1];
    if (hd->cols > INT32_MAX) {
        snprintf(msg, sizeof msg, "columns beyond 2147483647 are not supported (%lld declared)",
                 (long long)hd->cols);
        return mm_fail_line(err, name, line, msg);
    }
    if (hd->rows > INT32_MAX) {
        snprintf(msg, sizeof msg, "rows beyond 2147483647 are not supported (%lld declared)",
                 (long long)hd->rows);
        return mm_fail_line(err, name, line, msg);
    }
    if (hd->symmetry != MM_GENERAL && hd->rows != hd->cols) {
        snprintf(msg, sizeof msg,
                 "a %s matrix must be square, but the size line declares %lld x %lld",
                 mm_symmetry_name(hd->symmetry), (long long)hd->rows, (long long)hd->cols);
        return mm_fail_line(err, name, line, msg);
    }
    if (hd->layout == MM_COORDINATE) {
        hd->entries = v[2];
    } else {
        int64_t r = hd->rows;
        if (hd->symmetry == MM_GENERAL)
            hd->entries = hd->rows * hd->cols;
        else if (hd->symmetry == MM_SKEW_SYMMETRIC)
            hd->entries = r > 0 ? r * (r - 1) / 2 : 0;
        else
            hd->entries = r * (r + 1) / 2;
    }
    hd->size_line = line;
    return CLS_OK;
}

void mm_header_scan_init(mm_header_scan *sc)
{
    memset(sc, 0, sizeof *sc);
}

int mm_header_scan_feed(mm_header_scan *sc, const char *buf, size_t len, int at_eof,
                        const char *name, mm_header *h, size_t *used, cls_error *err)
{
    *used = 0;
    if (sc->stage == 2)
        return CLS_OK;
    /* only the bytes within the limit are scanned; any beyond it mean the
     * header does not end in time */
    size_t lim = len;
    int cut = 0;
    if (sc->offset + len > MM_MAX_HEADER) {
        lim = (size_t)(MM_MAX_HEADER - sc->offset);
        cut = 1;
    }
    const int eof = at_eof && !cut;
    size_t p = 0;
    if (sc->stage == 0) {
        size_t pos;
        int rc = banner_prefix(buf, lim, eof, name, &pos, err);
        if (rc == -1)
            goto more;
        if (rc)
            return rc;
        size_t from = sc->searched > pos ? sc->searched : pos;
        const char *eol = from < lim ? memchr(buf + from, '\n', lim - from) : NULL;
        if (!eol && !eof) {
            sc->searched = lim;
            goto more;
        }
        size_t e = eol ? (size_t)(eol - buf) : lim;
        if ((rc = parse_banner(buf, pos, e, name, &sc->h, err)))
            return rc;
        sc->stage = 1;
        sc->searched = 0;
        if (!eol) /* the banner is the whole file */
            return mm_fail_line(err, name, 1, "file ends before the size line");
        p = e + 1;
        sc->line = 2;
        sc->line_started = 0;
    }
    /* stage 1: comment and blank lines, then the size line */
    for (;;) {
        if (sc->in_comment) {
            const char *nl = p < lim ? memchr(buf + p, '\n', lim - p) : NULL;
            if (!nl) {
                p = lim;
                goto more;
            }
            p = (size_t)(nl - buf) + 1;
            sc->in_comment = 0;
            sc->line_started = 0;
            sc->line++;
            continue;
        }
        if (p >= lim)
            goto more;
        size_t q = p;
        while (q < lim && mm_is_ws(buf[q]))
            q++;
        if (q == lim) { /* white space so far: consumed, the line goes on */
            sc->line_started |= q > p;
            p = q;
            goto more;
        }
        if (buf[q] == '\n') { /* a blank line */
            p = q + 1;
            sc->line_started = 0;
            sc->line++;
            continue;
        }
        if (buf[q] == '%') { /* a comment: its text is never kept */
            p = q + 1;
            sc->in_comment = 1;
            sc->line_started = 1;
            continue;
        }
        /* the size line, from its first field on */
        size_t from = sc->searched > q ? sc->searched : q;
        const char *nl = memchr(buf + from, '\n', lim - from);
        if (!nl && !eof) {
            sc->line_started = 1;
            p = q;
            sc->searched = lim;
            goto more;
        }
        size_t le = nl ? (size_t)(nl - buf) : lim;
        mm_header hd = sc->h;
        int rc = parse_size_line(buf + q, le - q, sc->line, name, &hd, err);
        if (rc)
            return rc;
        *h = hd;
        sc->h = hd;
        sc->stage = 2;
        *used = nl ? le + 1 : lim;
        sc->offset += *used;
        return CLS_OK;
    }
more:
    if (eof) {
        /* the line the file ends on: the one being scanned when it has
         * begun, else the last complete one */
        int64_t line = sc->stage == 0                                  ? 1
                       : sc->line_started || sc->in_comment || p < lim ? sc->line
                                                                       : sc->line - 1;
        return mm_fail_line(err, name, line, "file ends before the size line");
    }
    if (cut) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "the header (banner, comments and size line) is longer than %u MiB: the size "
                 "line must come within the first %u MiB of the file",
                 (unsigned)(MM_MAX_HEADER >> 20), (unsigned)(MM_MAX_HEADER >> 20));
        return mm_fail_line(err, name, sc->stage == 0 ? 1 : sc->line, msg);
    }
    *used = p;
    sc->offset += p;
    sc->searched = sc->searched > p ? sc->searched - p : 0;
    return -1;
}

int mm_parse_header_buf(const char *buf, size_t len, const char *name, mm_header *h, cls_error *err)
{
    mm_header_scan sc;
    size_t used;
    mm_header_scan_init(&sc);
    return mm_header_scan_feed(&sc, buf, len, 0, name, h, &used, err);
}
