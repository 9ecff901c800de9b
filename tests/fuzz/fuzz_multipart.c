/*
 * fuzz_multipart.c: libFuzzer target for the streaming multipart/form-data
 * parser (net/multipart.c) that POST /v1/jobs feeds with whatever chunks
 * libmicrohttpd hands it.
 *
 * Input: C F CONTENT-TYPE '\n' BODY
 *
 *   C   the data-chosen chunks: C >> 6 picks the largest chunk (8, 80,
 *       1000 or 70000 bytes, the last above the parser's 64 KiB window),
 *       C & 63 seeds the generator; a chunk may be empty.
 *   F   flags. Bit 0: expand the body, where 0xFF k repeats the byte before
 *       it 64 k more times, so that seeds under 4 KB reach 8 KiB part
 *       headers and more than the 64 KiB window (at most 72 KiB in all).
 *       F >= 0xC0: a callback fails, as routes_jobs.c's do on an upload
 *       error: (F >> 4) & 3 picks part_begin (0), part_end (1) or the first
 *       part_data (2, 3) of part (F >> 1) & 7.
 *   CONTENT-TYPE  the header value for multipart_init (a trailing CR
 *       dropped; a NUL ends it, as it would a C string).
 *   BODY  the request body.
 *
 * The body is parsed three times, in one chunk, byte by byte and in the
 * data-chosen chunks, and each run records a transcript: every part's
 * name, filename, content type, data (concatenated) and whether it ended,
 * the result of the feeds and of multipart_finish (code and message).
 * Checks, beyond ASan and UBSan:
 *  - the three transcripts are identical (chunking must never change what
 *    the parser reports);
 *  - callbacks come in order (data and part_end only inside a part), part
 *    data never exceeds the bytes fed so far, names are non-empty and
 *    within their documented sizes;
 *  - a failure is CLS_EINPUT with a message, or exactly what an injected
 *    callback failure returned; the parser then stays failed (feeding or
 *    finishing again fails with CLS_EINPUT);
 *  - multipart_init fails with CLS_EINPUT and a message for a type
 *    multipart_is_form refuses; a delimiter it accepts is "\r\n--" and 1
 *    to 70 bytes of boundary;
 *  - a naive reference, memmem over the whole body, walks its structure:
 *    the delimiters, the transport padding after each (at most 255 bytes)
 *    and its CRLF, the header block (up to CRLF CRLF, at most 8 KiB), the
 *    part data (the bytes up to the next delimiter). The parser must agree:
 *    every part it ends has the reference's data, an unfinished last part
 *    has all but the bytes that could still begin a delimiter; finish
 *    succeeds exactly when the reference reaches the closing delimiter; a
 *    structural error (no CRLF or "--" after a boundary, too much padding,
 *    headers over 8 KiB) is reported where the reference finds it, and
 *    only there. What the reference cannot judge is the content of a
 *    header block; an error about it must come at a complete block.
 * Violations call abort().
 */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/multipart.h"

#define FM_MAX_BODY (72 * 1024)
#define FM_INJECTED "injected callback failure"

static void fm_die(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_multipart: %s", what);
    if (detail)
        fprintf(stderr, " [%.300s]", detail);
    fputc('\n', stderr);
    abort();
}

/* --- one run: the parser fed in some chunking, and what it reported --- */

typedef struct fm_part {
    char name[128], filename[256], ctype[128];
    size_t off, len; /* its data in fm_run.data */
    int ended;
} fm_part;

typedef struct fm_run {
    fm_part *parts;
    size_t nparts, cap;
    char *data;
    size_t dlen, dcap;
    int in_part;
    size_t fed; /* body bytes handed to multipart_feed so far */
    int inject; /* 0 none, 1 part_begin, 2 part_end, 3 part_data */
    size_t inject_part;
    int injected; /* the injected failure happened */
    int feed_rc, finish_rc, after_rc;
    cls_error feed_err, finish_err;
} fm_run;

static void fm_copy(char *dst, size_t cap, const char *src, const char *what)
{
    size_t n = strlen(src);
    if (n >= cap)
        fm_die("a part_begin string is longer than documented", what);
    memcpy(dst, src, n + 1);
}

static int fm_begin(void *ctx, const char *name, const char *filename, const char *ctype,
                    cls_error *err)
{
    fm_run *r = ctx;
    if (r->in_part)
        fm_die("part_begin inside a part", name);
    if (!name || !filename || !ctype || !name[0])
        fm_die("part_begin without a name (or with NULL strings)", NULL);
    if (r->nparts == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 8;
        r->parts = realloc(r->parts, r->cap * sizeof *r->parts);
        if (!r->parts)
            abort();
    }
    fm_part *p = &r->parts[r->nparts++];
    memset(p, 0, sizeof *p);
    fm_copy(p->name, sizeof p->name, name, "name");
    fm_copy(p->filename, sizeof p->filename, filename, "filename");
    fm_copy(p->ctype, sizeof p->ctype, ctype, "content type");
    p->off = r->dlen;
    r->in_part = 1;
    if (r->inject == 1 && r->nparts - 1 == r->inject_part) {
        r->injected = 1;
        return cls_fail(err, CLS_EOTHER, FM_INJECTED);
    }
    return CLS_OK;
}

static int fm_data(void *ctx, const char *data, size_t len, cls_error *err)
{
    fm_run *r = ctx;
    if (!r->in_part)
        fm_die("part_data outside a part", NULL);
    if (r->dlen + len > r->fed)
        fm_die("more part data than bytes fed", NULL);
    if (r->inject == 3 && r->nparts - 1 == r->inject_part) {
        /* on the part's first data, which every chunking delivers (what
         * it holds does not matter: it is not recorded) */
        r->injected = 1;
        return cls_fail(err, CLS_EOTHER, FM_INJECTED);
    }
    if (r->dlen + len > r->dcap) {
        r->dcap = 2 * (r->dlen + len) + 64;
        r->data = realloc(r->data, r->dcap);
        if (!r->data)
            abort();
    }
    memcpy(r->data + r->dlen, data, len); /* ASan: all len bytes must be readable */
    r->dlen += len;
    r->parts[r->nparts - 1].len += len;
    return CLS_OK;
}

static int fm_end(void *ctx, cls_error *err)
{
    fm_run *r = ctx;
    if (!r->in_part)
        fm_die("part_end outside a part", NULL);
    r->in_part = 0;
    r->parts[r->nparts - 1].ended = 1;
    if (r->inject == 2 && r->nparts - 1 == r->inject_part) {
        r->injected = 1;
        return cls_fail(err, CLS_EOTHER, FM_INJECTED);
    }
    return CLS_OK;
}

static const multipart_callbacks fm_cb = {fm_begin, fm_data, fm_end};

static uint32_t fm_next(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

enum { FM_WHOLE, FM_BYTES, FM_CHOSEN };

/* Parses body in the given chunking. */
static void fm_parse(fm_run *r, const char *ct, const char *body, size_t n, int how, uint8_t c)
{
    multipart_parser *mp = malloc(sizeof *mp);
    if (!mp)
        abort();
    cls_error err;
    cls_error_clear(&err);
    if (multipart_init(mp, ct, &fm_cb, r, &err) != CLS_OK)
        fm_die("multipart_init changed its mind", ct);
    static const size_t largest[4] = {8, 80, 1000, 70000};
    size_t maxc = largest[c >> 6];
    uint32_t seed = (uint32_t)(c & 63) * 2654435761u + (uint32_t)n + 1u;
    size_t at = 0;
    int rc = CLS_OK;
    while (rc == CLS_OK && (at < n || (how == FM_WHOLE && at == 0))) {
        size_t len = how == FM_WHOLE ? n : how == FM_BYTES ? 1 : fm_next(&seed) % (maxc + 1);
        if (len > n - at)
            len = n - at;
        r->fed += len;
        if (how == FM_BYTES) {
            /* straight from the body (a block of exactly n bytes): a
             * malloc per byte would make long bodies slow to fuzz */
            rc = multipart_feed(mp, body + at, len, &err);
        } else {
            /* the chunk in a block of exactly its size: ASan sees a read
             * past it */
            char *chunk = malloc(len ? len : 1);
            if (!chunk)
                abort();
            memcpy(chunk, body + at, len);
            rc = multipart_feed(mp, chunk, len, &err);
            free(chunk);
        }
        at += len;
        if (how == FM_WHOLE)
            break;
    }
    r->feed_rc = rc;
    r->feed_err = err;
    if (rc != CLS_OK) {
        /* the parser stays failed */
        cls_error e2;
        cls_error_clear(&e2);
        r->after_rc = multipart_feed(mp, "x", 1, &e2);
        if (r->after_rc != CLS_EINPUT || !e2.msg[0])
            fm_die("feeding a failed parser does not fail", e2.msg);
        cls_error_clear(&e2);
        r->finish_rc = multipart_finish(mp, &e2);
        if (r->finish_rc != CLS_EINPUT || !e2.msg[0])
            fm_die("finishing a failed parser does not fail", e2.msg);
        r->finish_err = e2;
    } else {
        cls_error_clear(&err);
        r->finish_rc = multipart_finish(mp, &err);
        r->finish_err = err;
        if (r->finish_rc != CLS_OK && (r->finish_rc != CLS_EINPUT || !err.msg[0]))
            fm_die("multipart_finish failed without CLS_EINPUT and a message", err.msg);
        if (r->finish_rc == CLS_OK && r->in_part)
            fm_die("multipart_finish accepts a body whose last part has not ended", NULL);
    }
    if (rc != CLS_OK) {
        if (r->injected) {
            if (rc != CLS_EOTHER || strcmp(err.msg, FM_INJECTED) != 0)
                fm_die("a callback's failure was not passed on", err.msg);
        } else if (rc != CLS_EINPUT || err.code != CLS_EINPUT || !err.msg[0]) {
            fm_die("a parse error is not CLS_EINPUT with a message", err.msg);
        }
    } else if (r->injected) {
        fm_die("a callback failed and the parser went on", NULL);
    }
    free(mp);
}

static void fm_same(const fm_run *a, const fm_run *b, const char *how)
{
    if (a->nparts != b->nparts)
        fm_die("the chunking changed the number of parts", how);
    for (size_t i = 0; i < a->nparts; i++) {
        const fm_part *x = &a->parts[i], *y = &b->parts[i];
        if (strcmp(x->name, y->name) || strcmp(x->filename, y->filename) ||
            strcmp(x->ctype, y->ctype) || x->ended != y->ended || x->len != y->len ||
            (x->len && memcmp(a->data + x->off, b->data + y->off, x->len) != 0))
            fm_die("the chunking changed a part", how);
    }
    if (a->feed_rc != b->feed_rc || strcmp(a->feed_err.msg, b->feed_err.msg) != 0)
        fm_die("the chunking changed the result of the feeds", b->feed_err.msg);
    if (a->finish_rc != b->finish_rc || strcmp(a->finish_err.msg, b->finish_err.msg) != 0)
        fm_die("the chunking changed the result of multipart_finish", b->finish_err.msg);
}

/* --- the naive reference: memmem over the whole body --- */

typedef struct fm_ref_part {
    size_t doff, dlen; /* data, in the body with its virtual leading CRLF */
    int ended;
} fm_ref_part;

enum { FM_REF_CLOSED, FM_REF_OPEN, FM_REF_BAD };

typedef struct fm_ref {
    int status;
    const char *bad; /* the structural error, for FM_REF_BAD */
    size_t nheaders; /* complete header blocks reached */
    fm_ref_part *parts;
    size_t nparts;
} fm_ref;

static void fm_ref_walk(fm_ref *f, const char *b, size_t m, const char *delim, size_t dl)
{
    memset(f, 0, sizeof *f);
    f->parts = malloc((m / dl + 2) * sizeof *f->parts); /* a part needs a delimiter */
    if (!f->parts)
        abort();
    f->status = FM_REF_OPEN;
    const char *hit = memmem(b, m, delim, dl);
    if (!hit)
        return; /* all preamble */
    size_t p = (size_t)(hit - b) + dl;
    for (;;) {
        /* after a delimiter: "--", or padding and CRLF */
        if (m - p < 2)
            return;
        if (b[p] == '-' && b[p + 1] == '-') {
            f->status = FM_REF_CLOSED;
            return;
        }
        size_t k = 0;
        while (p + k < m && (b[p + k] == ' ' || b[p + k] == '\t'))
            k++;
        if (k >= 256) {
            f->status = FM_REF_BAD;
            f->bad = "multipart body: too much padding after a boundary";
            return;
        }
        if (p + k + 2 > m)
            return;
        if (b[p + k] != '\r' || b[p + k + 1] != '\n') {
            f->status = FM_REF_BAD;
            f->bad = "multipart body: a boundary is not followed by CRLF or --";
            return;
        }
        p += k + 2;
        /* the header block: empty (a CRLF at once) or up to CRLF CRLF */
        size_t skip;
        if (m - p >= 2 && b[p] == '\r' && b[p + 1] == '\n') {
            skip = 2;
        } else {
            /* too long: the block ends past 8 KiB, or it has not ended
             * within 8 KiB + 4 bytes, where one of 8 KiB would have */
            const char *e = memmem(b + p, m - p, "\r\n\r\n", 4);
            size_t hl = e ? (size_t)(e - (b + p)) : 0;
            if (e ? hl > MULTIPART_HEADERS_MAX : m - p >= MULTIPART_HEADERS_MAX + 4) {
                f->status = FM_REF_BAD;
                f->bad = "multipart body: part headers longer than 8 KiB";
                return;
            }
            if (!e)
                return;
            skip = hl + 4;
        }
        f->nheaders++;
        p += skip;
        /* the data, up to the next delimiter */
        fm_ref_part *rp = &f->parts[f->nparts++];
        rp->doff = p;
        rp->ended = 0;
        hit = memmem(b + p, m - p, delim, dl);
        if (!hit) {
            /* all but what could still begin a delimiter */
            rp->dlen = m - p >= dl - 1 ? m - p - (dl - 1) : 0;
            return;
        }
        rp->dlen = (size_t)(hit - (b + p));
        rp->ended = 1;
        p = (size_t)(hit - b) + dl;
    }
}

static int fm_structural(const char *msg)
{
    return strstr(msg, "padding") || strstr(msg, "not followed by") ||
           strstr(msg, "headers longer");
}

/* The parser's run (identical in all chunkings) against the reference. */
static void fm_check_ref(const fm_run *r, const fm_ref *f, const char *b)
{
    if (r->nparts > f->nheaders)
        fm_die("a part began where the reference has no header block", NULL);
    for (size_t i = 0; i < r->nparts; i++) {
        const fm_part *x = &r->parts[i];
        if (r->injected && i + 1 == r->nparts)
            break; /* the part whose callback failed */
        if (i >= f->nparts)
            fm_die("a part the reference does not have", x->name);
        const fm_ref_part *y = &f->parts[i];
        if (x->ended != y->ended && !(r->feed_rc && i + 1 == r->nparts))
            fm_die("a part ended (or not) unlike the reference", x->name);
        if (x->ended || !r->feed_rc) {
            if (x->len != y->dlen || (x->len && memcmp(r->data + x->off, b + y->doff, x->len) != 0))
                fm_die("part data differ from the bytes between headers and delimiter", x->name);
        }
    }
    if (r->injected)
        return;
    if (r->feed_rc == CLS_OK) {
        if (f->status == FM_REF_BAD)
            fm_die("the parser took a body whose structure is wrong", f->bad);
        if ((r->finish_rc == CLS_OK) != (f->status == FM_REF_CLOSED))
            fm_die(r->finish_rc ? "finish failed on a closed body"
                                : "finish succeeded without the closing delimiter",
                   NULL);
        if (r->nparts != f->nparts)
            fm_die("the parser and the reference count different parts", NULL);
        return;
    }
    const char *msg = r->feed_err.msg;
    if (fm_structural(msg)) {
        if (f->status != FM_REF_BAD || strcmp(msg, f->bad) != 0)
            fm_die("a structural error the reference does not see", msg);
        if (r->nparts != f->nparts)
            fm_die("a structural error at another part than the reference's", msg);
    } else if (r->nparts >= f->nheaders) {
        fm_die("a header error without a complete header block", msg);
    }
}

/* --- the input --- */

/* Expands 0xFF k into 64 k more copies of the byte before it. */
static char *fm_expand(const uint8_t *in, size_t n, size_t *outn)
{
    size_t cap = n + 1, len = 0;
    char *out = malloc(cap);
    if (!out)
        abort();
    for (size_t i = 0; i < n; i++) {
        if (in[i] == 0xFF && i + 1 < n && len > 0) {
            size_t rep = (size_t)in[++i] * 64;
            if (len + rep > FM_MAX_BODY)
                rep = len < FM_MAX_BODY ? FM_MAX_BODY - len : 0;
            if (len + rep + (n - i) > cap) {
                cap = len + rep + (n - i) + 1;
                out = realloc(out, cap);
                if (!out)
                    abort();
            }
            memset(out + len, out[len - 1], rep);
            len += rep;
            continue;
        }
        out[len++] = (char)in[i];
    }
    *outn = len;
    out = realloc(out, len ? len : 1); /* exactly the body: ASan sees a read past it */
    if (!out)
        abort();
    return out;
}

static void fm_run_free(fm_run *r)
{
    free(r->parts);
    free(r->data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t c = data[0], flags = data[1];
    const uint8_t *rest = data + 2;
    size_t rn = size - 2;
    const uint8_t *nl = memchr(rest, '\n', rn);
    size_t ctn = nl ? (size_t)(nl - rest) : rn;
    char *ct = malloc(ctn + 1); /* a C string, as libmicrohttpd gives the header */
    if (!ct)
        abort();
    memcpy(ct, rest, ctn);
    ct[ctn] = '\0';
    size_t l = strlen(ct);
    if (l && ct[l - 1] == '\r')
        ct[l - 1] = '\0';

    /* multipart_init on its own: refusals and the delimiter it builds */
    multipart_parser *mp = malloc(sizeof *mp);
    if (!mp)
        abort();
    cls_error err;
    cls_error_clear(&err);
    fm_run probe = {0};
    int rc = multipart_init(mp, ct, &fm_cb, &probe, &err);
    if (rc != CLS_OK) {
        if (rc != CLS_EINPUT || err.code != CLS_EINPUT || !err.msg[0])
            fm_die("multipart_init failed without CLS_EINPUT and a message", err.msg);
        free(mp);
        free(ct);
        return 0;
    }
    if (!multipart_is_form(ct) || multipart_is_form(NULL))
        fm_die("multipart_init took a type multipart_is_form refuses", ct);
    if (mp->dlen < 5 || mp->dlen > 74 || memcmp(mp->delim, "\r\n--", 4) != 0)
        fm_die("a delimiter that is not CRLF--boundary of 1 to 70 bytes", ct);
    char delim[80];
    size_t dl = mp->dlen;
    memcpy(delim, mp->delim, dl);
    free(mp);

    size_t n;
    char *body;
    if (flags & 1) {
        body = fm_expand(nl ? nl + 1 : rest + rn, nl ? rn - ctn - 1 : 0, &n);
    } else {
        n = nl ? rn - ctn - 1 : 0;
        body = malloc(n ? n : 1);
        if (!body)
            abort();
        if (n)
            memcpy(body, nl + 1, n);
    }

    fm_run runs[3];
    memset(runs, 0, sizeof runs);
    for (int k = 0; k < 3; k++) {
        if (flags >= 0xC0) {
            int which = (flags >> 4) & 3;
            runs[k].inject = which == 0 ? 1 : which == 1 ? 2 : 3;
            runs[k].inject_part = (flags >> 1) & 7;
        }
        fm_parse(&runs[k], ct, body, n, k, c);
    }
    fm_same(&runs[0], &runs[1], "byte by byte");
    fm_same(&runs[0], &runs[2], "in data-chosen chunks");

    /* the reference sees the body with the parser's virtual leading CRLF */
    char *vb = malloc(n + 2);
    if (!vb)
        abort();
    vb[0] = '\r';
    vb[1] = '\n';
    memcpy(vb + 2, body, n);
    fm_ref f;
    fm_ref_walk(&f, vb, n + 2, delim, dl);
    fm_check_ref(&runs[0], &f, vb);

    free(f.parts);
    free(vb);
    for (int k = 0; k < 3; k++)
        fm_run_free(&runs[k]);
    free(body);
    free(ct);
    return 0;
}
