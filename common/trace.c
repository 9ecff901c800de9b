/*
 * trace.c: the CLSOLVE_TRACE step clock (trace.h).
 */
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>

#include "timer.h"

void cls_trace(const char *what)
{
    static int on = -1;
    static double first, last;
    if (on < 0) {
        const char *v = getenv("CLSOLVE_TRACE");
        on = v && *v && *v != '0';
    }
    if (!on)
        return;
    double now = cls_now();
    if (first == 0.0)
        first = last = now;
    fprintf(stderr, "[trace] %9.4f s (+%.4f s) %s\n", now - first, now - last, what);
    last = now;
}
