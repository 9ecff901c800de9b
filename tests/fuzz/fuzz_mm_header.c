/*
 * fuzz_mm_header.c: libFuzzer target for mm_parse_header_buf, the
 * incremental Matrix Market header parser the HTTP upload path calls on
 * each prefix of a body as it arrives.
 *
 * Checks, beyond ASan and UBSan:
 *  - the buffer is not NUL-terminated: it is copied to a heap block of
 *    exactly `size` bytes, so a read past its end is an ASan report;
 *  - a header that parses is within the documented limits (rows and
 *    columns 0..2^31-1, entries >= 0, a symmetric matrix square, array
 *    entries the declared shape's count, size line >= 2);
 *  - the result is monotone in the data: every prefix of the input gives
 *    either -1 ("need more") or the same return code as the whole input,
 *    with the same line for an error and the same header for success (an
 *    upload is never rejected early for something the full body fixes, nor
 *    accepted early with a header the full body contradicts);
 *  - the return value is CLS_OK, CLS_EINPUT or -1, and an error message is
 *    "NAME:LINE: what" with the line the error records.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matrices/mm.h"

static const char *const NAME = "upload.mtx";

static void die(const char *what, size_t len, int rc, const cls_error *e)
{
    fprintf(stderr, "fuzz_mm_header: %s (prefix %zu, rc %d, line %lld, '%s')\n", what, len, rc,
            e->line, e->msg);
    abort();
}

/* field by field: the struct has padding, which memcmp would compare */
static int hdr_eq(const mm_header *x, const mm_header *y)
{
    return x->layout == y->layout && x->field == y->field && x->symmetry == y->symmetry &&
           x->rows == y->rows && x->cols == y->cols && x->entries == y->entries &&
           x->size_line == y->size_line;
}

static int parse(const uint8_t *data, size_t len, mm_header *h, cls_error *e)
{
    char *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees overreads */
    if (!copy)
        abort();
    if (len)
        memcpy(copy, data, len);
    memset(h, 0, sizeof *h);
    cls_error_clear(e);
    int rc = mm_parse_header_buf(copy, len, NAME, h, e);
    free(copy);
    if (rc != CLS_OK && rc != CLS_EINPUT && rc != -1)
        die("unexpected return code", len, rc, e);
    if (rc == CLS_EINPUT) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s:%lld: ", NAME, e->line);
        if (e->line < 1 || strncmp(e->msg, prefix, strlen(prefix)) != 0)
            die("message is not NAME:LINE: what", len, rc, e);
    }
    if (rc == CLS_OK) {
        if (h->rows < 0 || h->rows > INT32_MAX || h->cols < 0 || h->cols > INT32_MAX ||
            h->entries < 0 || h->size_line < 2)
            die("header outside its limits", len, rc, e);
        if (h->symmetry != MM_GENERAL && h->rows != h->cols)
            die("non-square symmetric header", len, rc, e);
        if (h->layout == MM_ARRAY) {
            int64_t n = h->rows, want = h->symmetry == MM_GENERAL ? h->rows * h->cols
                                        : h->symmetry == MM_SKEW_SYMMETRIC
                                            ? (n > 0 ? n * (n - 1) / 2 : 0)
                                            : n * (n + 1) / 2;
            if (h->entries != want || h->field == MM_PATTERN)
                die("array header inconsistent", len, rc, e);
        }
        if (h->symmetry == MM_HERMITIAN && h->field != MM_COMPLEX)
            die("hermitian without complex", len, rc, e);
    }
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mm_header full, h;
    cls_error ef, e;
    int rc = parse(data, size, &full, &ef);
    /* prefixes: a few cut points from the data itself, plus every line end */
    size_t cuts[8];
    int nc = 0;
    if (size) {
        cuts[nc++] = size - 1;
        cuts[nc++] = size / 2;
        cuts[nc++] = (size_t)data[0] % (size + 1);
        cuts[nc++] = (size_t)data[size - 1] * 7 % (size + 1);
    }
    for (int k = 0; k < nc; k++) {
        int r = parse(data, cuts[k], &h, &e);
        if (r == -1)
            continue;
        if (r != rc || e.line != ef.line)
            die("a prefix gives a different result", cuts[k], r, &e);
        if (r == CLS_OK && !hdr_eq(&h, &full))
            die("a prefix gives a different header", cuts[k], r, &e);
    }
    for (size_t k = 0; k < size && k < 4096; k++) {
        if (data[k] != '\n')
            continue;
        int r = parse(data, k + 1, &h, &e);
        if (r != -1 && (r != rc || e.line != ef.line))
            die("a line prefix gives a different result", k + 1, r, &e);
        if (r == CLS_OK && !hdr_eq(&h, &full))
            die("a line prefix gives a different header", k + 1, r, &e);
        if (r != -1)
            break; /* decided: longer prefixes are the same */
    }
    return 0;
}
