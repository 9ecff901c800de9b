/*
 * error.h: the one error type every clsolve module reports through.
 *
 * A failing function returns a non-zero exit class (CLS_E*) and fills a
 * cls_error with a message a person can act on. The exit classes are the
 * command line's exit codes (DESIGN.md), so the CLI can pass a failure
 * straight through without translating it: a parse error deep in the Matrix
 * Market reader becomes exit code 3 and "FILE:LINE: what is wrong" on stderr
 * with no mapping table in between.
 */
#ifndef CLS_COMMON_ERROR_H
#define CLS_COMMON_ERROR_H

#include <stddef.h>

enum cls_exit {
    CLS_OK = 0,
    CLS_EOTHER = 1,    /* I/O, OpenCL, out of memory, anything unexpected */
    CLS_EUSAGE = 2,    /* bad command line or option */
    CLS_EINPUT = 3,    /* bad input file: message is FILE:LINE: what */
    CLS_ENOTCONV = 4,  /* solver stopped at maxiter */
    CLS_EBREAKDOWN = 5 /* not SPD, NaN/Inf */
};

typedef struct cls_error {
    int code;       /* one of enum cls_exit; CLS_OK when nothing failed */
    long long line; /* input line of a parse error, 0 when not a parse error */
    char msg[1024];
} cls_error;

/* Formats the message, records code (and line, 0 if none) and returns code,
 * so callers can write `return cls_fail(err, CLS_EINPUT, ...)`. err may be
 * NULL. */
int cls_fail(cls_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int cls_fail_line(cls_error *err, int code, long long line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void cls_error_clear(cls_error *err);
/* "a, b or c" into buf (len bytes, always terminated): the choices a
 * message names, from the table that defines them. Returns buf. */
const char *cls_list_words(char *buf, size_t len, const char *const *words, size_t n);
/* Replaces every `from` in s (cap bytes, terminated) by `to`, as far as it
 * fits: how a message loses the server's paths before a client reads it. */
void cls_str_replace_all(char *s, size_t cap, const char *from, const char *to);

/* For functions that release their resources at a `done:` label: runs call
 * and, if it failed, keeps its exit class in the caller's `rc` and jumps
 * there. */
#define CLS_TRY(call)                                                                              \
    do {                                                                                           \
        int cls_try_rc_ = (call);                                                                  \
        if (cls_try_rc_) {                                                                         \
            rc = cls_try_rc_;                                                                      \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

#endif
