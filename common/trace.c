/*
 * trace.c: the CLSOLVE_TRACE step clock (trace.h).
 *
 * The first line also names the clock's start on the wall clock (seconds
 * since the epoch), so a script that takes `date +%s.%N` before the process
 * and after it sees what the exec, the libraries' loading and the exit
 * cost beside the traced steps. Steps come from several threads (the
 * device's start runs beside the parse): one lock keeps lines whole and
 * the deltas in order.
 */
#include "trace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "timer.h"

static int trace_on;
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;

static void trace_read_env(void)
{
    const char *v = getenv("CLSOLVE_TRACE");
    trace_on = v && *v && *v != '0';
}

int cls_trace_on(void) /* steps come from several threads: read once, by one */
{
    pthread_once(&trace_once, trace_read_env);
    return trace_on;
}

void cls_trace(const char *what)
{
    static double first, last;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    if (!cls_trace_on())
        return;
    pthread_mutex_lock(&mu);
    double now = cls_now();
    if (first == 0.0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        first = last = now;
        fprintf(stderr, "[trace] clock starts at epoch %.6f\n",
                (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec);
    }
    fprintf(stderr, "[trace] %9.4f s (+%.4f s) %s\n", now - first, now - last, what);
    last = now;
    pthread_mutex_unlock(&mu);
}
