/*
 * mm_lex.h: the lexical helpers the Matrix Market reader's files share
 * (mm_header.c: the banner, comments and size line; mm.c: the entry
 * section, the writer): separators, token quoting for messages, the
 * "NAME:LINE: what" failure. It sits beneath both, defined by mm_header.c
 * (the lower of the two), so neither file reaches up into the other.
 * Not part of the contract (mm.h, mm_header.h).
 */
#ifndef CLS_MATRICES_MM_LEX_H
#define CLS_MATRICES_MM_LEX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "../common/error.h"

static inline int mm_is_ws(char c) /* field separator inside a line */
{
    return c == ' ' || c == '\t' || c == '\r';
}

static inline int mm_is_end(char c) /* ends a token */
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Copies the token starting at s (at most n bytes, up to white space) into
 * out for a message: at most 40 characters, non-printables as '?'. */
static inline const char *mm_tok_str(const char *s, size_t n, char out[48])
{
    size_t k = 0;
    while (k < n && k < 40 && !mm_is_end(s[k])) {
        unsigned char c = (unsigned char)s[k];
        out[k] = (c >= 32 && c < 127) ? (char)c : '?';
        k++;
    }
    out[k] = '\0';
    if (k == 40 && k < n && !mm_is_end(s[k]))
        strcpy(out + k, "...");
    return out;
}

static inline int mm_span_ieq(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

/* CLS_EINPUT with "NAME:LINE: what" and err->line set. */
int mm_fail_line(cls_error *err, const char *name, int64_t line, const char *what);

#endif
