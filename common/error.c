/*
 * error.c: formatting for cls_error (see error.h for the design).
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int cls_vfail(cls_error *err, int code, long long line, const char *fmt, va_list ap)
{
    if (err) {
        err->code = code;
        err->line = line;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return code;
}

int cls_fail(cls_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cls_vfail(err, code, 0, fmt, ap);
    va_end(ap);
    return code;
}

int cls_fail_line(cls_error *err, int code, long long line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cls_vfail(err, code, line, fmt, ap);
    va_end(ap);
    return code;
}

void cls_error_clear(cls_error *err)
{
    if (err) {
        err->code = CLS_OK;
        err->line = 0;
        err->msg[0] = '\0';
    }
}

const char *cls_list_words(char *buf, size_t len, const char *const *words, size_t n)
{
    size_t at = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s",
                               i == 0       ? ""
                               : i + 1 == n ? " or "
                                            : ", ",
                               words[i]);
    return buf;
}

void cls_str_replace_all(char *s, size_t cap, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to);
    if (!fl)
        return;
    char *p = s;
    while ((p = strstr(p, from)) != NULL) {
        size_t rest = strlen(p + fl);
        if ((size_t)(p - s) + tl + rest + 1 > cap)
            return;
        memmove(p + tl, p + fl, rest + 1);
        memcpy(p, to, tl);
        p += tl;
    }
}
