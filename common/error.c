/*
 * error.c: formatting for cls_error (see error.h for the design).
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int cls_vfail(cls_error *err, int code, long long line, const char *fmt,
                     va_list ap)
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
